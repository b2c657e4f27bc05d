"""``knockcam round ROUND.json``: score one round from a file and show who gets paid, with the ledger."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("round", help="score one round from a round file (JSON or YAML)",
                                   description="Score one round of Monopoly Knockout exactly per RULES.md: "
                                               "cash change per side, the pot, and a ledger citing rule ids.")
    parser.add_argument("file", metavar="ROUND", help="round file, JSON or YAML (see docs/rules-engine.md)")
    parser.add_argument("--board", metavar="FILE", default=None, help="board file (default: the shipped board)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.board import load_board
    from knockcam.rules import load_file, parse_round, score_round

    board = load_board(args.board)
    where = Path(args.file).name
    result = score_round(parse_round(load_file(args.file), board, where), board, where)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        from rich.console import Console

        console = Console()
        for renderable in round_tables(result, board):
            console.print(renderable)
    return 0


def _m(amount: int, sign: bool = False) -> str:
    return f"{amount:+,d}" if sign else f"{amount:,d}"


def round_tables(result, board, title: str = "Round") -> list:
    """The round as rich renderables: a row per side, then the pot line, then the ledger."""
    from rich.table import Table
    from rich.text import Text

    names = {space.id: space.name for space in board.spaces}
    sides = Table(title=f"{title}: turn order {', '.join(result.order)}", title_justify="left")
    for header in ("Side", "Before", "Fees", "Properties E3a", "Sets E3b", "House E3c", "Tax E3d",
                   "Free Park. E4", "After"):
        sides.add_column(header, justify="left" if header.startswith(("Side", "Prop", "Sets", "House")) else "right")
    for side, s in result.per_side.items():
        props = ", ".join(names[p] for p in s.properties) or "-"
        bonus = ", ".join(c.replace("_", " ") for c in s.set_bonuses)
        sides.add_row(side, _m(s.cash_before), _m(-s.fees, True) if s.fees else "-",
                      f"{props} (+{s.property_cash:,d})" if s.properties else "-",
                      f"{bonus} (+{s.set_bonus:,d})" if s.set_bonuses else "-",
                      f"{names[s.house_space]} (+{s.house:,d})" if s.house_space else "-",
                      _m(-s.tax, True) if s.tax else "-",
                      _m(s.free_parking, True) if s.free_parking else "-",
                      Text(f"{s.cash_after:,d} ({s.delta:+,d})", style="bold"))
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
