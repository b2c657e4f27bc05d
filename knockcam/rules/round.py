"""One round of Monopoly Knockout scored from where the tokens ended: RULES.md S2-S4, E1-E4 and N1-N3.

Positions in (after E1: Chance re-slides are physical), cash out, with a ledger naming the rule id of
every coin moved. Pure Python: the board's kinds, values and colour sets come from the Board.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from knockcam.board.layout import Board, Space
from knockcam.errors import KnockcamError
from knockcam.rules import choices
from knockcam.rules.ledger import LedgerEntry, money, note, signed
from knockcam.rules.money import DEFAULT_MONEY_UNIT, JAIL_FEE, LUXURY_TAX, POT_REFILL, POT_START, RESLIDE_FEE
from knockcam.sides import SIDES, TOKENS_PER_SIDE

MIN_SIDES, MAX_SIDES = 2, 4  # R1
RESLIDE_VARIANTS = ("none", "free", "paid")  # S2
EVENT_KINDS = {"jail_fee": ("S4", JAIL_FEE, "jail fee"), "reslide_fee": ("S2", RESLIDE_FEE, "paid re-slide")}


@dataclass(frozen=True)
class TokenPlacement:
    """Where one token of a side rests after E1: a space id, or None (off the board, in jail, not seen)."""

    side: str
    space: str | None


@dataclass(frozen=True)
class SlideEvent:
    """A payment during the sliding phase: ``jail_fee`` (S4) or ``reslide_fee`` (S2, variant ``paid``)."""

    side: str
    kind: str


@dataclass(frozen=True)
class RoundInput:
    """A round as data: turn order, pot, cash before, token positions, sliding-phase payments, choices.

    ``railroad_choice[side]`` lists property ids for that side's Railroad tokens in the order they move
    (None: the engine chooses); ``house_choice[side]`` is the property whose value the House doubles.
    ``reslide_off_board`` is the S2 variant; None: not said, which is the rules' default, ``none`` (a game's
    rounds take the game's).
    """

    order: tuple[str, ...]
    pot: int = POT_START
    cash: Mapping[str, int] = field(default_factory=dict)
    tokens: tuple[TokenPlacement, ...] = ()
    events: tuple[SlideEvent, ...] = ()
    railroad_choice: Mapping[str, tuple[str | None, ...]] = field(default_factory=dict)
    house_choice: Mapping[str, str] = field(default_factory=dict)
    money_unit: int = DEFAULT_MONEY_UNIT
    reslide_off_board: str | None = None

    def cash_of(self, side: str) -> int:
        return int(self.cash.get(side, 0))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "order": list(self.order), "pot": self.pot, "money_unit": self.money_unit,
            "cash": {side: self.cash_of(side) for side in self.order},
            "tokens": [{"side": t.side, "space": t.space} for t in self.tokens],
            "events": [{"side": e.side, "kind": e.kind} for e in self.events],
            "railroad_choice": {side: list(v) for side, v in self.railroad_choice.items()},
            "house_choice": dict(self.house_choice),
        }
        if self.reslide_off_board is not None:
            out["reslide_off_board"] = self.reslide_off_board
        return out


@dataclass(frozen=True)
class SideSummary:
    """One side's round in figures: what the table shows in a row."""

    side: str
    cash_before: int
    fees: int                      # S2/S4 payments into the pot (positive = paid)
    properties: tuple[str, ...]    # E3a: property ids collected for, board order
    property_cash: int
    set_bonuses: tuple[str, ...]   # E3b: colour sets completed
    set_bonus: int
    house_space: str | None        # E3c: the property collected again
    house: int
    tax: int                       # E3d: paid into the pot (positive = paid)
    free_parking: int              # E4
    delta: int
    cash_after: int

    def to_dict(self) -> dict[str, Any]:
        return {"cash_before": self.cash_before, "fees": self.fees, "properties": list(self.properties),
                "property_cash": self.property_cash, "set_bonuses": list(self.set_bonuses),
                "set_bonus": self.set_bonus, "house_space": self.house_space, "house": self.house,
                "tax": self.tax, "free_parking": self.free_parking, "delta": self.delta,
                "cash_after": self.cash_after}


@dataclass(frozen=True)
class RoundResult:
    """The scored round: each side's change and cash after, the pot (N2 refill included), the ledger."""

    order: tuple[str, ...]
    next_order: tuple[str, ...]
    money_unit: int
    pot_before: int
    pot_after: int
    refill: int
    cash_before: Mapping[str, int]
    delta: Mapping[str, int]
    cash: Mapping[str, int]
    free_parking: Mapping[str, int]
    per_side: Mapping[str, SideSummary]
    tokens: tuple[TokenPlacement, ...]  # after E2 (jailed tokens: space None)
    ledger: tuple[LedgerEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": list(self.order), "next_order": list(self.next_order), "money_unit": self.money_unit,
            "pot_before": self.pot_before, "pot_after": self.pot_after, "refill": self.refill,
            "cash_before": dict(self.cash_before), "delta": dict(self.delta), "cash": dict(self.cash),
            "free_parking": dict(self.free_parking),
            "per_side": {side: s.to_dict() for side, s in self.per_side.items()},
            "tokens": [{"side": t.side, "space": t.space} for t in self.tokens],
            "ledger": [entry.to_dict() for entry in self.ledger],
        }


def rotate(order: tuple[str, ...]) -> tuple[str, ...]:
    """R6/N3: the first side moves to the bottom, the others move up one place."""
    return tuple(order[1:]) + tuple(order[:1])


def _bad(where: str, fld: str, message: str, rule: str | None = None) -> KnockcamError:
    suffix = f" ({rule})" if rule else ""
    return KnockcamError(f"{where}: {fld}: {message}{suffix}")


def _unknown_space(space: Any, board: Board) -> str:
    """A space id the board lacks, with the nearest ids when it looks mistyped."""
    hint = board.did_you_mean(str(space))
    return f"unknown space id {space!r} on board {board.name!r}" + (f": {hint}" if hint else "")


def _is_money(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_round(ri: RoundInput, board: Board, where: str = "round") -> None:
    """Raise KnockcamError naming the field (and rule id) of the first thing wrong with a round."""
    _check_order(ri, where)
    _check_money(ri, where)
    _check_tokens(ri, board, where)
    _check_events(ri, where)
    _check_choices(ri, board, where)


def _check_order(ri: RoundInput, where: str) -> None:
    """R1: two to four sides, each known and listed once."""
    if not (MIN_SIDES <= len(ri.order) <= MAX_SIDES):
        raise _bad(where, "order", f"a game has {MIN_SIDES} to {MAX_SIDES} sides, not {len(ri.order)}", "R1")
    seen: set[str] = set()
    for i, side in enumerate(ri.order):
        if side not in SIDES:
            raise _bad(where, f"order[{i}]", f"unknown side {side!r} (one of {', '.join(SIDES)})", "R1")
        if side in seen:
            raise _bad(where, f"order[{i}]", f"side {side!r} listed twice", "R1")
        seen.add(side)


def _side_in_order(ri: RoundInput, side: Any, fld: str, where: str) -> None:
    """R1: a side a field names is a known side, and one playing this round."""
    if side not in SIDES:
        raise _bad(where, fld, f"unknown side {side!r} (one of {', '.join(SIDES)})", "R1")
    if side not in ri.order:
        raise _bad(where, fld, f"side {side!r} is not in the turn order {list(ri.order)}", "R1")


def _check_money(ri: RoundInput, where: str) -> None:
    """R3, R4, S2: the pot, the money unit, each side's cash and the re-slide variant."""
    if not _is_money(ri.pot) or ri.pot < 0:
        raise _bad(where, "pot", f"must be a whole number of M, at least 0, not {ri.pot!r}", "R4")
    if not _is_money(ri.money_unit) or ri.money_unit <= 0:
        raise _bad(where, "money_unit", f"must be a whole number of M above 0, not {ri.money_unit!r}", "R3")
    for side, amount in ri.cash.items():
        _side_in_order(ri, side, f"cash.{side}", where)
        if not _is_money(amount) or amount < 0:
            raise _bad(where, f"cash.{side}", f"must be a whole number of M, at least 0, not {amount!r}", "R3")
    if ri.reslide_off_board not in (None, *RESLIDE_VARIANTS):
        raise _bad(where, "reslide_off_board", f"one of {', '.join(RESLIDE_VARIANTS)}, not {ri.reslide_off_board!r}",
                   "S2")


def _check_tokens(ri: RoundInput, board: Board, where: str) -> None:
    """R2: each token's side plays, its space is on the board, at most TOKENS_PER_SIDE a side."""
    count: Counter[str] = Counter()
    for i, token in enumerate(ri.tokens):
        _side_in_order(ri, token.side, f"tokens[{i}].side", where)
        if token.space is not None and not board.has_space(token.space):
            raise _bad(where, f"tokens[{i}].space", _unknown_space(token.space, board))
        count[token.side] += 1
        if count[token.side] > TOKENS_PER_SIDE:
            raise _bad(where, "tokens", f"side {token.side!r} has more than {TOKENS_PER_SIDE} tokens", "R2")


def _check_events(ri: RoundInput, where: str) -> None:
    """S2: each event's side plays and its kind is known; a paid re-slide needs the 'paid' variant."""
    for i, event in enumerate(ri.events):
        _side_in_order(ri, event.side, f"events[{i}].side", where)
        if event.kind not in EVENT_KINDS:
            raise _bad(where, f"events[{i}].kind", f"one of {', '.join(EVENT_KINDS)}, not {event.kind!r}", "S2")
        if event.kind == "reslide_fee" and ri.reslide_off_board != "paid":
            said = (f"not {ri.reslide_off_board!r}" if ri.reslide_off_board is not None else
                    "and the round does not say it (the default is none): add reslide_off_board: paid")
            raise _bad(where, f"events[{i}].kind", f"a paid re-slide needs reslide_off_board 'paid', {said}", "S2")


def _check_choices(ri: RoundInput, board: Board, where: str) -> None:
    """E2, E3c: a Railroad's choices and a House's choice name properties, one a token there may make."""
    on_kind = _tokens_on_kind(ri, board)
    for side, picks in ri.railroad_choice.items():
        _side_in_order(ri, side, f"railroad_choice.{side}", where)
        n_railroad = on_kind[side].get("railroad", 0)
        if len(picks) > n_railroad:
            raise _bad(where, f"railroad_choice.{side}",
                       f"{len(picks)} choice(s) but {side} has {n_railroad} token(s) on a Railroad", "E2")
        named = [p for p in picks if p is not None]
        for j, pick in enumerate(picks):
            fld = f"railroad_choice.{side}[{j}]"
            if pick is None:
                continue
            if not board.has_space(pick):
                raise _bad(where, fld, _unknown_space(pick, board), "E2")
            if board.space(pick).kind != "property":
                raise _bad(where, fld, f"{pick!r} is a {board.space(pick).kind}, not a property", "E2")
        if len(set(named)) != len(named):
            raise _bad(where, f"railroad_choice.{side}", "the same property chosen twice", "E2")
    for side, pick in ri.house_choice.items():
        fld = f"house_choice.{side}"
        _side_in_order(ri, side, fld, where)
        if not isinstance(pick, str) or not board.has_space(pick):
            raise _bad(where, fld, _unknown_space(pick, board), "E3c")
        if board.space(pick).kind != "property":
            raise _bad(where, fld, f"{pick!r} is a {board.space(pick).kind}, not a property", "E3c")
        if on_kind[side].get("house", 0) == 0:
            raise _bad(where, fld, f"{side} has no token on a House space", "E3c")


def _tokens_on_kind(ri: RoundInput, board: Board) -> dict[str, Counter]:
    kinds = {space.id: space.kind for space in board.spaces}
    out: dict[str, Counter] = {side: Counter() for side in ri.order}
    for token in ri.tokens:
        if token.space is not None and token.side in out:
            out[token.side][kinds.get(token.space)] += 1
    return out


def score_round(ri: RoundInput, board: Board, where: str = "round") -> RoundResult:
    """Score one round exactly per RULES.md; KnockcamError (field, rule id) for bad input or choices.

    The rulebook's steps in its order: sliding-phase payments (S2, S4), the tokens' positions (S4, E1, S2),
    Railroads (E2), collect and pay side by side in turn order (E3), Free Parking (E4), the bank's refill (N2)."""
    validate_round(ri, board, where)
    order = tuple(ri.order)
    rank = {side: i for i, side in enumerate(order)}
    cash_before = {side: ri.cash_of(side) for side in order}
    cash = dict(cash_before)
    ledger: list[LedgerEntry] = []

    fees = _slide_payments(ri, cash, ledger)
    pot = ri.pot + sum(fees.values())
    positions = _positions(ri, board, rank, ledger)
    for side in order:
        _railroad(side, ri, board, positions, rank, cash[side], ledger, where)
    owners = choices.owners(board, positions, rank)
    e3 = {side: _collect_and_pay(side, ri, board, positions, owners, cash, ledger, where) for side in order}
    pot += sum(paid.tax_paid for _, paid in e3.values())
    free_parking, pot = _free_parking(ri, board, positions, pot, cash, ledger)

    # N2: an empty pot is refilled by the bank. (N1: tokens return; N3: rotate the order.)
    refill = 0
    if pot == 0:
        refill = POT_REFILL
        pot += refill
        ledger.append(money("N2", None, 0, refill, f"N2 +{refill} the bank refills the empty pot"))

    per_side = {}
    for side in order:
        collected, paid = e3[side]
        per_side[side] = SideSummary(side=side, cash_before=cash_before[side], fees=fees[side],
                                     properties=tuple(p.id for p in collected), property_cash=paid.property_cash,
                                     set_bonuses=tuple(c for c, _ in paid.bonuses),
                                     set_bonus=sum(b for _, b in paid.bonuses),
                                     house_space=paid.house.id if paid.house else None,
                                     house=paid.house.value if paid.house else 0, tax=paid.tax_paid,
                                     free_parking=free_parking[side], delta=cash[side] - cash_before[side],
                                     cash_after=cash[side])
    return RoundResult(
        order=order, next_order=rotate(order), money_unit=ri.money_unit, pot_before=ri.pot, pot_after=pot,
        refill=refill, cash_before=cash_before, delta={side: cash[side] - cash_before[side] for side in order},
        cash=dict(cash), free_parking=free_parking, per_side=per_side,
        tokens=tuple(TokenPlacement(side, space) for side, space in positions), ledger=tuple(ledger))


def _slide_payments(ri: RoundInput, cash: dict[str, int], ledger: list[LedgerEntry]) -> dict[str, int]:
    """S2/S4: the sliding phase's payments into the pot (taken from ``cash``), refused when the side cannot
    pay at that moment; what each side paid."""
    fees = {side: 0 for side in ri.order}
    for event in ri.events:
        rule, fee, what = EVENT_KINDS[event.kind]
        if cash[event.side] >= fee:
            cash[event.side] -= fee
            fees[event.side] += fee
            ledger.append(money(rule, event.side, -fee, fee, f"{rule} {signed(-fee)} {what} into the pot"))
        else:
            why = "S4: only a side that holds it may pay" if rule == "S4" else "a side never goes below M0, E3d"
            ledger.append(note(rule, event.side, f"{rule} refused: {event.side} holds M{cash[event.side]}, "
                               f"a {what} costs M{fee} ({why}); the token stays out", kind="refused"))
    return fees


def _positions(ri: RoundInput, board: Board, rank: dict[str, int], ledger: list[LedgerEntry]) -> list[list[Any]]:
    """The tokens as [side, space id or None], side by side in turn order (input order within a side). S4: a
    token on Go to Jail is jailed; E1: Chance scores nothing; S2: a token off the board scores nothing."""
    ordered = sorted(ri.tokens, key=lambda t: rank[t.side])  # stable: input order within a side
    positions: list[list[Any]] = []
    for token in ordered:
        space = board.space(token.space) if token.space is not None else None
        if space is None:
            pass  # counted below, one note per side
        elif space.kind == "go_to_jail":
            ledger.append(note("S4", token.side, f"S4 a token on {space.name} is jailed and scores nothing",
                               space.id))
            space = None
        elif space.kind == "chance":
            ledger.append(note("E1", token.side, f"E1 a token still on {space.name} after E1 scores nothing", space.id))
        positions.append([token.side, space.id if space is not None else None])

    for side in ri.order:
        out = sum(1 for t in ordered if t.side == side and t.space is None)
        if out:
            ledger.append(note("S2", side, f"S2 {out} token{'s' if out > 1 else ''} off the board, in jail or not "
                               "seen: scores nothing"))
    return positions


def _collect_and_pay(side: str, ri: RoundInput, board: Board, positions: list[list[Any]], owners: dict[str, str],
                     cash: dict[str, int], ledger: list[LedgerEntry],
                     where: str) -> tuple[tuple[Space, ...], choices.E3Outcome]:
    """E3 for one side: collect for its properties (E3a), set bonuses (E3b), the House (E3c), Luxury Tax
    (E3d); its ``cash`` changed by the net, the ledger told why. The properties collected for, and the sums."""
    spaces_of_side = [board.space(s) for t, s in positions if t == side and s is not None]
    has_house = any(s.kind == "house" for s in spaces_of_side)
    has_lux = any(s.kind == "luxury_tax" for s in spaces_of_side)
    collected = tuple(p for p in board.properties if owners.get(p.id) == side)
    given = ri.house_choice.get(side)
    if given is not None and given not in {p.id for p in collected}:
        raise _bad(where, f"house_choice.{side}", f"{side} did not collect for {board.space(given).name} in E3a",
                   "E3c")
    e3 = choices.collect(board, collected, has_house, has_lux, cash[side], given)
    # E3a
    for prop in collected:
        ledger.append(money("E3a", side, prop.value, 0, f"E3a {signed(prop.value)} {prop.name}", prop.id))
    counted = Counter(s.id for s in spaces_of_side if s.kind == "property")
    for prop in board.properties:
        if counted[prop.id] and owners.get(prop.id) != side:
            ledger.append(note("E3a", side, f"E3a {prop.name} pays {owners[prop.id]}, higher in turn order",
                               prop.id))
        elif counted[prop.id] > 1:
            ledger.append(note("E3a", side, f"E3a {counted[prop.id]} {side} tokens on {prop.name}: it pays once",
                               prop.id))
    # E3b
    for color_set, bonus in e3.bonuses:
        ledger.append(money("E3b", side, bonus, 0, f"E3b {signed(bonus)} {color_set.replace('_', ' ')} set bonus"))
    # E3c
    if e3.house is not None:
        chosen = e3.house
        alternatives = tuple((p.id, p.value) for p in collected if p.id != chosen.id)
        by = "player" if given is not None else "engine"
        ledger.append(LedgerEntry(
            rule="E3c", kind="choice", side=side, amount=0, pot=0, space=chosen.id, chose=(chosen.id,), by=by,
            worth=chosen.value, alternatives=alternatives,
            reason=(f"E3c {side} {'chose' if by == 'player' else 'engine chose (highest value)'}: House "
                    f"doubles {chosen.name} (+{chosen.value})"
                    + (f"; alternatives {', '.join(f'{a} +{v}' for a, v in alternatives)}" if alternatives else ""))))
        ledger.append(money("E3c", side, chosen.value, 0, f"E3c {signed(chosen.value)} House on {chosen.name}",
                            chosen.id))
    elif has_house:
        ledger.append(note("E3c", side, "E3c House token but no property collected for: the House pays nothing"))
    # E3d
    if has_lux and collected:
        reason = f"E3d {signed(-e3.tax_paid)} Luxury Tax: {len(collected)} propert{'y' if len(collected) == 1 else 'ies'} x M{LUXURY_TAX} into the pot"
        if e3.tax_paid < e3.tax_due:
            reason += f" (owes M{e3.tax_due}, holds M{e3.tax_paid}: pays what it holds, never below M0)"
        ledger.append(money("E3d", side, -e3.tax_paid, e3.tax_paid, reason))
    elif has_lux:
        ledger.append(note("E3d", side, "E3d Luxury Tax token but no property collected for: pays nothing"))
    cash[side] += e3.net
    return collected, e3


def _free_parking(ri: RoundInput, board: Board, positions: list[list[Any]], pot: int, cash: dict[str, int],
                  ledger: list[LedgerEntry]) -> tuple[dict[str, int], int]:
    """E4: the side(s) with the most tokens on Free Parking take the pot, split in whole money units; what
    each side took (added to ``cash``) and the pot left."""
    free_parking = {side: 0 for side in ri.order}
    fp_count = Counter(side for side, s in positions if s is not None and board.space(s).kind == "free_parking")
    most = max(fp_count.values(), default=0)
    if most < 1:
        ledger.append(note("E4", None, f"E4 no token on Free Parking: the pot (M{pot}) stays"))
        return free_parking, pot
    winners = [side for side in ri.order if fp_count[side] == most]
    if len(winners) == 1:
        share = pot
    else:
        share = (pot // (len(winners) * ri.money_unit)) * ri.money_unit
    for side in winners:
        tie = f"{len(winners)} sides tied, " if len(winners) > 1 else ""
        ledger.append(money("E4", side, share, -share,
                            f"E4 {signed(share)} Free Parking ({tie}{most} token{'s' if most > 1 else ''} each)"
                            if len(winners) > 1 else
                            f"E4 {signed(share)} Free Parking ({most} token{'s' if most > 1 else ''}, the most)"))
        free_parking[side] = share
        cash[side] += share
        pot -= share
    if len(winners) > 1 and pot:
        ledger.append(note("E4", None, f"E4 M{pot} cannot be split evenly in M{ri.money_unit}s: it stays in the pot"))
    return free_parking, pot


def _railroad(side: str, ri: RoundInput, board: Board, positions: list[list[Any]], rank: dict[str, int],
              cash_now: int, ledger: list[LedgerEntry], where: str) -> None:
    """E2 for one side: its Railroad tokens move, one after the other, to unoccupied properties."""
    kinds = {space.id: space.kind for space in board.spaces}
    mine = [i for i, (t, s) in enumerate(positions) if t == side and s is not None and kinds[s] == "railroad"]
    if not mine:
        return
    picks = list(ri.railroad_choice.get(side, ()))
    picks += [None] * (len(mine) - len(picks))
    given_house = ri.house_choice.get(side)
    engine_slots = []
    for j, (index, pick) in enumerate(zip(mine, picks)):
        if pick is None:
            engine_slots.append(index)
            continue
        free = choices.unoccupied(board, positions)
        if pick not in {p.id for p in free}:
            raise _bad(where, f"railroad_choice.{side}[{j}]",
                       f"{board.space(pick).name} is occupied when {side} moves (choose an unoccupied property)", "E2")
        options = choices.rank_moves(board, side, positions, [index], rank, cash_now, given_house, limit=None)
        worth = next(w for combo, w in options if combo == (pick,))
        alternatives = tuple(("+".join(c), w) for c, w in options if c != (pick,))
        positions[index][1] = pick
        ledger.append(LedgerEntry(
            rule="E2", kind="choice", side=side, amount=0, pot=0, space=pick, chose=(pick,), by="player", worth=worth,
            alternatives=alternatives,
            reason=f"E2 {side} moved a Railroad token to {board.space(pick).name} (E3 worth {worth:+d} to {side})"))
    if not engine_slots:
        return
    free = choices.unoccupied(board, positions)
    movable = engine_slots[:len(free)]
    for index in engine_slots[len(free):]:
        ledger.append(note("E2", side, "E2 no unoccupied property: the Railroad token stays and scores nothing"))
    if not movable:
        return
    options = choices.rank_moves(board, side, positions, movable, rank, cash_now, given_house, limit=6)
    best, worth = options[0]
    for index, pick in zip(movable, best):
        positions[index][1] = pick
    alternatives = tuple(("+".join(c), w) for c, w in options[1:])
    names = " and ".join(board.space(p).name for p in best)
    alt_text = "; ".join(f"{label} {w:+d}" for label, w in alternatives)
    ledger.append(LedgerEntry(
        rule="E2", kind="choice", side=side, amount=0, pot=0, space=best[0] if len(best) == 1 else None, chose=best,
        by="engine", worth=worth, alternatives=alternatives,
        reason=(f"E2 engine chose for {side}: Railroad token{'s' if len(best) > 1 else ''} to {names} "
                f"(E3 worth {worth:+d} to {side})" + (f"; next best: {alt_text}" if alt_text else ""))))
