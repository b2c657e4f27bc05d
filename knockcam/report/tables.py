"""The round and the standings as rich tables: shared by the terminal commands and the evidence picture."""

from __future__ import annotations

WIDE_COLUMNS = 110  # below this many terminal columns the payout table is one block of lines per side


def _m(amount: int, sign: bool = False) -> str:
    return f"{amount:+,d}" if sign else f"{amount:,d}"


def _payments(s, names: dict) -> list[tuple[str, str, str]]:
    """One side's round as (rule, what, cash) rows, in the order of RULES.md E1-E4."""
    rows = []
    if s.fees:
        rows.append(("fees", "", _m(-s.fees, True)))
    if s.properties:
        rows.append(("E3a", ", ".join(names[p] for p in s.properties), _m(s.property_cash, True)))
    if s.set_bonuses:
        rows.append(("E3b", ", ".join(c.replace("_", " ") for c in s.set_bonuses) + " set", _m(s.set_bonus, True)))
    if s.house_space:
        rows.append(("E3c", f"House doubles {names[s.house_space]}", _m(s.house, True)))
    if s.tax:
        rows.append(("E3d", "Luxury Tax", _m(-s.tax, True)))
    if s.free_parking:
        rows.append(("E4", "Free Parking", _m(s.free_parking, True)))
    return rows


def round_tables(result, board, title: str = "Round", width: int | None = None) -> list:
    """The round as rich renderables: the sides' payouts, the pot line, the ledger.

    Wide (``width`` None or at least WIDE_COLUMNS): a row per side, a column per rule. Narrower: a
    block of lines per side (rule, what, cash), so no space name is cut short on an 80-column terminal."""
    from rich.table import Table
    from rich.text import Text

    names = {space.id: space.name for space in board.spaces}
    sides = Table(title=f"{title}: turn order {', '.join(result.order)}", title_justify="left")
    if width is None or width >= WIDE_COLUMNS:
        # (header, rule, whether the cell names what was paid for as well as the cash)
        columns = (("Fees", "fees", False), ("Properties E3a", "E3a", True), ("Sets E3b", "E3b", True),
                   ("House E3c", "E3c", True), ("Tax E3d", "E3d", False), ("Free Park. E4", "E4", False))
        sides.add_column("Side")
        sides.add_column("Before", justify="right")
        for header, _, named in columns:
            sides.add_column(header, justify="left" if named else "right")
        sides.add_column("After", justify="right")
        for side, s in result.per_side.items():
            paid = {rule: (what, cash) for rule, what, cash in _payments(s, names)}
            cells = [("-" if rule not in paid else f"{paid[rule][0]} ({paid[rule][1]})" if named else paid[rule][1])
                     for _, rule, named in columns]
            sides.add_row(side, _m(s.cash_before), *cells, Text(f"{s.cash_after:,d} ({s.delta:+,d})", style="bold"))
    else:
        for header, justify in (("Side", "left"), ("Rule", "left"), ("What", "left"), ("Cash", "right")):
            sides.add_column(header, justify=justify)
        for side, s in result.per_side.items():
            sides.add_row(side, "", "before", _m(s.cash_before))
            for rule, what, cash in _payments(s, names):
                sides.add_row("", rule, what, cash)
            sides.add_row("", "", Text("after", style="bold"), Text(f"{s.cash_after:,d} ({s.delta:+,d})", style="bold"),
                          end_section=True)
    refill = f", N2 refill +{result.refill:,d}" if result.refill else ""
    pot = Text(f"Pot: M{result.pot_before:,d} before, M{result.pot_after:,d} after{refill}. "
               f"Next round's order (N3): {', '.join(result.next_order)}.")
    ledger = Table(title="Ledger", title_justify="left")
    for header in ("Rule", "Side", "Cash", "Pot", "Reason"):
        ledger.add_column(header, justify="right" if header in ("Cash", "Pot") else "left")
    for e in result.ledger:
        style = "dim" if e.kind == "note" else ("yellow" if e.kind == "refused" else
                                                 ("cyan" if e.kind == "choice" else None))
        ledger.add_row(e.rule, e.side or ("bank" if e.rule == "N2" else "-"), _m(e.amount, True) if e.amount else "",
                       _m(e.pot, True) if e.pot else "", e.reason, style=style)
    return [sides, pot, ledger]


def standings_table(game, standings: list[dict]):
    """The W1 standings as a rich table."""
    from rich.table import Table

    state = "final" if game.over else f"after {game.round_number} of {game.rounds_total} rounds"
    table = Table(title=f"Standings (W1, {state})", title_justify="left")
    for header in ("Place", "Side", "Cash"):
        table.add_column(header, justify="right" if header != "Side" else "left")
    for s in standings:
        table.add_row(str(s["place"]), s["side"], f"{s['cash']:,d}")
    return table
