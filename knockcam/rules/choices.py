"""E3 for one side as a function of where the tokens are, and the engine's choices that maximise it (E2, E3c).

Kept apart from the round so the Railroad search can score every candidate placement the same way
the round itself is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Iterable, Sequence

from knockcam.board.layout import Board, Space
from knockcam.rules.money import LUXURY_TAX


@dataclass(frozen=True)
class E3Outcome:
    """One side's E3: property cash (E3a), set bonuses (E3b), House (E3c), Luxury Tax due and paid (E3d)."""

    property_cash: int
    bonuses: tuple[tuple[str, int], ...]
    house: Space | None
    tax_due: int
    tax_paid: int

    @property
    def net(self) -> int:
        return self.property_cash + sum(b for _, b in self.bonuses) + (self.house.value if self.house else 0) \
            - self.tax_paid


def owners(board: Board, positions: Sequence[Sequence[Any]], rank: dict[str, int]) -> dict[str, str]:
    """E3a: each occupied property's payee, the side highest in turn order among those with a token on it."""
    kinds = {space.id: space.kind for space in board.spaces}
    out: dict[str, str] = {}
    for side, space in positions:
        if space is not None and kinds[space] == "property":
            if space not in out or rank[side] < rank[out[space]]:
                out[space] = side
    return out


def unoccupied(board: Board, positions: Sequence[Sequence[Any]]) -> tuple[Space, ...]:
    """E2: the properties no token of any side is on, in board-file order."""
    taken = {space for _, space in positions if space is not None}
    return tuple(p for p in board.properties if p.id not in taken)


def house_pick(collected: Sequence[Space], given: str | None) -> Space | None:
    """E3c: the given property if collected for, else the highest value (ties: board-file order)."""
    best = None
    for prop in collected:
        if prop.id == given:
            return prop
        if best is None or prop.value > best.value:
            best = prop
    return best


def collect(board: Board, collected: Iterable[Space], has_house: bool, has_lux: bool, cash_now: int,
            given_house: str | None) -> E3Outcome:
    """E3a-E3d for one side that collects for ``collected`` holding ``cash_now`` when its E3 starts."""
    collected = tuple(collected)
    ids = {p.id for p in collected}
    property_cash = sum(p.value for p in collected)
    bonuses = []
    for color_set, bonus in board.set_bonus.items():
        members = board.color_set(color_set)
        if members and all(p.id in ids for p in members):
            bonuses.append((color_set, bonus))
    house = house_pick(collected, given_house) if has_house else None
    gains = property_cash + sum(b for _, b in bonuses) + (house.value if house else 0)
    tax_due = LUXURY_TAX * len(collected) if has_lux else 0
    return E3Outcome(property_cash=property_cash, bonuses=tuple(bonuses), house=house, tax_due=tax_due,
                     tax_paid=min(tax_due, cash_now + gains))


def rank_moves(board: Board, side: str, positions: Sequence[Sequence[Any]], slots: Sequence[int],
               rank: dict[str, int], cash_now: int, given_house: str | None,
               limit: int | None) -> list[tuple[tuple[str, ...], int]]:
    """E2 Decision: every way to move the side's Railroad tokens at ``slots`` to unoccupied properties, best first.

    Worth is the side's cash from E3 with the board as it is at that moment. Ties: higher printed value
    (total, then the values from the highest), then board-file order. Several tokens of one side are
    placed jointly, so the side's best pair (e.g. completing a set) is found, not a greedy first move.
    """
    by_id = {space.id: space for space in board.spaces}
    mine = [by_id[s] for t, s in positions if t == side and s is not None]
    has_house = any(s.kind == "house" for s in mine)
    has_lux = any(s.kind == "luxury_tax" for s in mine)
    owned = owners(board, positions, rank)
    base = frozenset(pid for pid, who in owned.items() if who == side)
    free = unoccupied(board, positions)
    k = min(len(slots), len(free))
    sets = [(frozenset(p.id for p in board.color_set(c)), bonus) for c, bonus in board.set_bonus.items()
            if board.color_set(c)]
    base_cash = sum(by_id[pid].value for pid in base)
    scored = []
    for combo in combinations(free, k):
        # The same sums as collect(), unrolled: this loop runs thousands of times for four Railroad tokens.
        ids = base.union(p.id for p in combo)
        gains = base_cash + sum(p.value for p in combo)
        gains += sum(bonus for members, bonus in sets if members <= ids)
        if has_house and ids:
            gains += by_id[given_house].value if given_house in ids else max(by_id[pid].value for pid in ids)
        worth = gains - (min(LUXURY_TAX * len(ids), cash_now + gains) if has_lux else 0)
        values = sorted((p.value for p in combo), reverse=True)
        scored.append(((-worth, -sum(values), tuple(-v for v in values)), tuple(p.id for p in combo), worth))
    scored.sort(key=lambda item: item[0])  # stable: combinations come in board-file order
    out = [(combo, worth) for _, combo, worth in scored]
    return out if limit is None else out[:limit]
