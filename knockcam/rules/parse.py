"""Round and game files (JSON or YAML) into engine inputs, with one-line errors naming the field and rule id."""

from __future__ import annotations

from pathlib import Path
from typing import Any


from knockcam.board.layout import Board
from knockcam.errors import KnockcamError
from knockcam.files import parse_json_or_yaml, read_text
from knockcam.rules.money import DEFAULT_MONEY_UNIT, POT_START
from knockcam.rules.round import RoundInput, SlideEvent, TokenPlacement, validate_round

ROUND_FIELDS = ("order", "pot", "money_unit", "cash", "tokens", "events", "railroad_choice", "house_choice",
                "reslide_off_board", "notes")
PLAY_FIELDS = ("tokens", "events", "railroad_choice", "house_choice", "notes")  # what a game's round may add
GAME_FIELDS = ("order", "pot", "money_unit", "cash", "reslide_off_board", "rounds", "state",
               "pending_events", "notes")


def load_file(path: str | Path) -> Any:
    """Parse a JSON or YAML file (JSON for ``.json``, YAML otherwise); KnockcamError if unreadable or malformed."""
    return parse_json_or_yaml(read_text(path, "round or game file", "give a round or game file, JSON or YAML"), path)


def _bad(where: str, fld: str, message: str, rule: str | None = None) -> KnockcamError:
    return KnockcamError(f"{where}: {fld}: {message}" + (f" ({rule})" if rule else ""))


def _mapping(value: Any, where: str, fld: str, what: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(where, fld, f"must be a mapping {what}, not {type(value).__name__}")
    return value


def _list(value: Any, where: str, fld: str, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad(where, fld, f"must be a list {what}, not {type(value).__name__}")
    return value


def _check_fields(data: dict, allowed: tuple[str, ...], where: str, prefix: str = "") -> None:
    for key in data:
        if key not in allowed:
            raise _bad(where, f"{prefix}{key}", f"unknown field (expected one of {', '.join(allowed)})")


def parse_order(value: Any, where: str, fld: str = "order") -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise _bad(where, fld, f"must be a list of sides, first to last, not {value!r}", "R6")
    return tuple(value)


def parse_events(value: Any, where: str, fld: str) -> tuple[SlideEvent, ...]:
    """A list of slide events ``{side, kind}`` (shapes only; the round or game checks sides and kinds)."""
    events = []
    for i, item in enumerate(_list(value, where, fld, "of {side, kind}")):
        at = f"{fld}[{i}]"
        if not isinstance(item, dict) or "side" not in item or "kind" not in item:
            raise _bad(where, at, "must be a mapping with side and kind (jail_fee or reslide_fee)")
        if not isinstance(item["kind"], str):
            raise _bad(where, f"{at}.kind", f"must be jail_fee or reslide_fee, not {item['kind']!r}", "S2")
        events.append(SlideEvent(side=item["side"], kind=item["kind"]))
    return tuple(events)


def _space(board: Board, value: Any) -> Any:
    """A space as a person may write it: its id, or its printed name in any case ("Park Place"); anything
    else is left as it is, for validate_round to refuse with the nearest ids."""
    if not isinstance(value, str):
        return value
    try:
        return board.space_id(value)
    except KnockcamError:
        return value


def parse_play(data: dict, board: Board, where: str, prefix: str = "") -> dict[str, Any]:
    """The per-round fields: tokens, events, railroad_choice, house_choice (shapes only; a space given by its
    printed name becomes its id)."""
    tokens = []
    for i, item in enumerate(_list(data.get("tokens"), where, f"{prefix}tokens", "of {side, space}")):
        fld = f"{prefix}tokens[{i}]"
        if not isinstance(item, dict):
            raise _bad(where, fld, "must be a mapping with side and space")
        if "side" not in item:
            raise _bad(where, f"{fld}.side", "missing")
        if "space" not in item:
            raise _bad(where, f"{fld}.space", "missing (a space id, or null for off the board / in jail / not seen)")
        space = item["space"]
        if space is not None and not isinstance(space, str):
            raise _bad(where, f"{fld}.space", f"must be a space id or null, not {space!r}")
        tokens.append(TokenPlacement(side=item["side"], space=_space(board, space)))
    events = parse_events(data.get("events"), where, f"{prefix}events")
    railroad = {}
    for side, picks in _mapping(data.get("railroad_choice"), where, f"{prefix}railroad_choice",
                                "of side to property ids").items():
        if isinstance(picks, str) or picks is None:
            picks = [picks]
        if not isinstance(picks, list) or not all(p is None or isinstance(p, str) for p in picks):
            raise _bad(where, f"{prefix}railroad_choice.{side}", f"must be a list of property ids, not {picks!r}",
                       "E2")
        railroad[side] = tuple(_space(board, p) for p in picks)
    house = {}
    for side, pick in _mapping(data.get("house_choice"), where, f"{prefix}house_choice",
                               "of side to a property id").items():
        if pick is None:
            continue
        if not isinstance(pick, str):
            raise _bad(where, f"{prefix}house_choice.{side}", f"must be a property id, not {pick!r}", "E3c")
        house[side] = _space(board, pick)
    return {"tokens": tuple(tokens), "events": tuple(events), "railroad_choice": railroad, "house_choice": house}


def parse_round(data: Any, board: Board, where: str = "round") -> RoundInput:
    """A round mapping (see docs/rules-engine.md) into a validated RoundInput."""
    if not isinstance(data, dict):
        raise KnockcamError(f"{where}: a round is a mapping with order, pot, tokens (and optional cash, events, ...)")
    _check_fields(data, ROUND_FIELDS, where)
    if "order" not in data:
        raise _bad(where, "order", "missing (the turn order, first side first)", "R6")
    if "pot" not in data:
        raise _bad(where, "pot", "missing (the Free Parking pot before the round)", "R4")
    if "tokens" not in data:
        raise _bad(where, "tokens", "missing (each token's side and space)")
    cash = _mapping(data.get("cash"), where, "cash", "of side to M")
    ri = RoundInput(order=parse_order(data["order"], where), pot=data["pot"], cash=dict(cash),
                    money_unit=data.get("money_unit", DEFAULT_MONEY_UNIT),
                    reslide_off_board=data.get("reslide_off_board"), **parse_play(data, board, where))
    validate_round(ri, board, where)
    return ri


def parse_game(data: Any, where: str = "game") -> dict[str, Any]:
    """A game mapping's settings and round list (shapes only; the Game validates the rest)."""
    if not isinstance(data, dict):
        raise KnockcamError(f"{where}: a game is a mapping with order and rounds (and optional pot, cash, ...)")
    if "rounds" not in data and "tokens" in data:  # one round's file: the other verb reads it
        raise KnockcamError(f"{where}: this is one round (tokens, no rounds): score it with 'knockcam round', or "
                            "list it under rounds: for a game")
    _check_fields(data, GAME_FIELDS, where)
    if "order" not in data:
        raise _bad(where, "order", "missing (round 1's turn order)", "R6")
    rounds = _list(data.get("rounds"), where, "rounds", "of rounds")
    for i, item in enumerate(rounds):
        if not isinstance(item, dict):
            raise _bad(where, f"rounds[{i}]", "must be a mapping with tokens (and optional events, choices)")
        _check_fields(item, ROUND_FIELDS, where, f"rounds[{i}].")
    return {"order": parse_order(data["order"], where), "pot": data.get("pot", POT_START),
            "money_unit": data.get("money_unit", DEFAULT_MONEY_UNIT),
            "cash": dict(_mapping(data.get("cash"), where, "cash", "of side to M")),
            "reslide_off_board": data.get("reslide_off_board", "none"), "rounds": rounds,
            "state": data.get("state"),
            "pending_events": parse_events(data.get("pending_events"), where, "pending_events")}
