"""Builders for the rules-engine tests (a uniquely named module: other test folders have a conftest too)."""

from __future__ import annotations

from knockcam.board.layout import board_from_dict
from knockcam.rules import RoundInput, SlideEvent, TokenPlacement


def build(order, tokens, *, pot=500, cash=None, events=(), railroad=None, house=None, unit=50, variant=None):
    """A RoundInput from (side, space) pairs and (side, kind) events."""
    return RoundInput(order=tuple(order), pot=pot, cash=dict(cash or {}),
                      tokens=tuple(TokenPlacement(s, p) for s, p in tokens),
                      events=tuple(SlideEvent(s, k) for s, k in events),
                      railroad_choice={s: tuple(v) for s, v in (railroad or {}).items()},
                      house_choice=dict(house or {}), money_unit=unit, reslide_off_board=variant)


def entries(result, rule, side=None, kind="money"):
    return [e for e in result.ledger if e.rule == rule and e.kind == kind and (side is None or e.side == side)]


def small_board(**overrides):
    """A tiny custom board (one property per set given, every special kind once), for edge cases."""
    props = overrides.get("properties", [("cheap", "brown", 50), ("dear", "brown", 400), ("lone", "dark_blue", 300)])
    kinds = ["railroad", "chance", "house", "luxury_tax", "free_parking", "go_to_jail"]
    spaces = []
    for i, (sid, color, value) in enumerate(props):
        spaces.append({"id": sid, "kind": "property", "color_set": color, "value": value,
                       "polygon": [[10, 305 + 60 * i], [390, 305 + 60 * i], [390, 365 + 60 * i], [10, 365 + 60 * i]]})
    for j, kind in enumerate(kinds):
        y = 305 + 60 * (len(props) + j)
        spaces.append({"id": kind, "kind": kind, "polygon": [[10, y], [390, y], [390, y + 60], [10, y + 60]]})
    bonus = overrides.get("set_bonus", {"brown": 400, "dark_blue": 2000})
    return board_from_dict({"name": "small test board", "size_mm": [400, 915], "go_line_y_mm": 150,
                            "token": {"base_diameter_mm": 25, "height_mm": 28}, "set_bonus": bonus,
                            "spaces": spaces}, source="<small test board>")
