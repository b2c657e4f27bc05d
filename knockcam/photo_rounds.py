"""A game file's rounds scored from photos: each round that names a ``photo`` gets its tokens from
``knockcam score``'s pipeline, with a person's ``calls`` and ``add`` as on its command line; the rules
engine then plays the game as if they had been typed. Kept apart so the engine stays free of vision.

A round ``{photo: round2.jpg, calls: {5: chance, 7: none}, add: [red=boardwalk]}`` becomes
``{tokens: [{side, space}, ...]}``; photo paths are relative to the game file. An optional top-level
``camera: {reference: EMPTY_IMAGE, calibration: FILE}`` gives every photo the same empty-board frame or
calibration (a fixed camera); without it each photo's board is found on its own.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from knockcam.assign import ADDED, CLOSE_CALL, EXTRA_TOKEN, HUMAN_CALL, NOT_A_TOKEN, doubt_words
from knockcam.errors import KnockcamError
from knockcam.pipeline import EntryRefused, ScoreOptions, Scorer, placements, unseen
from knockcam.rules.parse import ROUND_FIELDS

PHOTO_FIELDS = ("photo", "calls", "add")  # what a round scored from a photo has instead of tokens
CAMERA_FIELDS = ("reference", "calibration")


def photo_rounds(data: dict, game_file: Path, board_file: str | None, where: str) -> tuple[dict, dict[int, dict]]:
    """The game file with every photo round's tokens found in its photo, and for each such round (by index)
    the photo and what a person should look at: close calls, tokens not seen, tokens left out."""
    data = dict(data)
    camera = data.pop("camera", None) or {}
    if not isinstance(camera, dict) or set(camera) - set(CAMERA_FIELDS):
        raise KnockcamError(f"{where}: camera: a mapping with {' and/or '.join(CAMERA_FIELDS)} (paths beside the "
                            "game file)")
    base = game_file.resolve().parent
    fixed = {key: str(base / value) for key, value in camera.items()}
    order = tuple(data.get("order") or ())
    rounds, seen = [], {}
    photos = [(i, item) for i, item in enumerate(data.get("rounds") or []) if isinstance(item, dict) and "photo" in item]
    try:  # one camera: its board, frame and calibration are read, and the frame's board found, once for all rounds
        camera_scorer = Scorer(ScoreOptions(board=board_file, **fixed))
    except KnockcamError as exc:  # the board file or the camera's files
        raise KnockcamError(f"{where}: {exc}") from None
    scorers = {}
    for i, item in photos:  # every photo round is checked before the first is scored, which takes seconds
        at = f"{where}: rounds[{i}]"
        _check_photo_round(item, at, base)
        try:
            scorers[i] = camera_scorer.for_round(_calls(item.get("calls"), at), _added(item.get("add"), at))
        except EntryRefused as exc:
            raise KnockcamError(f"{at}.{_entry(exc)}") from None
        except KnockcamError as exc:  # a token called twice
            raise KnockcamError(f"{at}.calls: {exc}") from None
    _check_game(data, camera_scorer.board, where)
    for i, item in enumerate(data.get("rounds") or []):
        if i not in scorers:
            rounds.append(item)
            continue
        at = f"{where}: rounds[{i}]"
        try:
            scored = scorers[i].score(base / str(item["photo"]))
        except EntryRefused as exc:  # a call of a token number the photo does not show
            raise KnockcamError(f"{at}.{_entry(exc)}") from None
        except KnockcamError as exc:
            raise KnockcamError(f"{at}.photo {item['photo']}: {exc}{_in_a_game_file(str(exc))}") from None
        tokens, notes = _tokens_and_notes(scored, order)
        rest = {key: value for key, value in item.items() if key not in PHOTO_FIELDS}
        rounds.append({**rest, "tokens": tokens})
        seen[i] = {"photo": str(item["photo"]), "calibration": scored.calibration.method, "notes": notes}
    data["rounds"] = rounds
    return data, seen


def _check_game(data: dict, board, where: str) -> None:
    """KnockcamError for what the game file gets wrong outside its photos (an unknown field, a bad order or
    event), told before the first photo is scored, not after them all: its rounds as the rules engine reads
    them, each photo round with no tokens yet."""
    from knockcam.rules.parse import parse_game, parse_play

    shaped = dict(data)
    shaped["rounds"] = [{**{k: v for k, v in item.items() if k not in PHOTO_FIELDS}, "tokens": []}
                        if isinstance(item, dict) and "photo" in item else item for item in data.get("rounds") or []]
    for i, item in enumerate(parse_game(shaped, where)["rounds"]):
        parse_play(item, board, f"{where}: rounds[{i}]")


def _tokens_and_notes(scored, order: tuple[str, ...]) -> tuple[list[dict], list[str]]:
    """A scored photo's tokens as a round's ``{side, space}`` list (as ``knockcam score`` gives them to the
    engine), and what a person should look at, by the numbers ``knockcam score`` shows."""
    given, left_out = placements(scored.positions, scored.board, order)
    notes = []
    for n, p in enumerate(scored.positions, 1):
        if HUMAN_CALL in p.flags:  # said back, so a call left from another run of the photo shows
            notes.append(f"#{n} {p.side}: {'not a token' if NOT_A_TOKEN in p.flags else p.space or p.state}, a "
                         f"human's call (the camera's: {p.runner_up})")
        elif ADDED in p.flags:
            notes.append(f"#{n} {p.side}: {p.space}, added by hand")
        elif p.ambiguous and EXTRA_TOKEN not in p.flags and p.side in order:
            if CLOSE_CALL in p.flags:
                notes.append(f"#{n} {p.side} is a close call, scored as {p.space or p.state} (or {p.runner_up}): "
                             f"look, and settle it with calls: {{{n}: SPACE}}")
            else:
                notes.append(f"#{n} {p.side} is in doubt ({doubt_words(p)}), scored as {p.space or p.state}: look, "
                             f"and settle it with calls: {{{n}: SPACE}}, or {{{n}: none}} if there is no token")
    notes += [f"#{i + 1} {scored.positions[i].side} left out: {why}" for i, why in left_out
              if NOT_A_TOKEN not in scored.positions[i].flags]
    missing = ", ".join(f"{side} {k}" for side, k in unseen(scored.tokens, order).items())
    if missing:
        notes.append(f"not in the photo: {missing}, counted as out; add one seen on the board with add: "
                     "[SIDE=SPACE]")
    return [{"side": t.side, "space": t.space} for t in given], notes


def _in_a_game_file(said: str) -> str:
    """Where advice to give a command-line option goes in a game file: a calibration file (which is what
    --corners or an accepted --max-error make, through 'knockcam calibrate') and the empty-board frame, once."""
    if not re.search(r"--(corners|calibration|reference|max-error)\b", said):
        return ""
    return (" (in a game file these go once, at its top, as camera: {calibration: FILE, reference: IMAGE}; "
            "'knockcam calibrate PHOTO --corners ...' or '--max-error MM' writes the calibration file)")


def _entry(exc: EntryRefused) -> str:
    """A refused call or added token as the game file gives it: ``calls: {5: chance}`` or ``add: [red=go]``."""
    entry = f"calls {{{exc.key}: {exc.value}}}" if exc.flag == "call" else f"add [{exc.key}={exc.value}]"
    return f"{entry}: {exc.detail}"


def _check_photo_round(item: dict, at: str, base: Path) -> None:
    """KnockcamError naming what a photo round cannot have: tokens too, a photo that is no path or not there
    (``base``: the game file's folder), a field the round does not take (a camera's entries say where they go)."""
    if "tokens" in item:
        raise KnockcamError(f"{at}: give its tokens or a photo, not both")
    if not isinstance(item["photo"], str):
        raise KnockcamError(f"{at}.photo: a photo's path beside the game file, not {item['photo']!r}")
    if not (base / item["photo"]).is_file():
        raise KnockcamError(f"{at}.photo: {item['photo']} not found beside the game file, in {base}",
                            "photo paths are relative to the game file's folder")
    allowed = PHOTO_FIELDS + tuple(key for key in ROUND_FIELDS if key != "tokens")
    for key in item:
        if key in CAMERA_FIELDS:
            raise KnockcamError(f"{at}.{key}: one camera's {key} serves every photo: give it once, at the top of the "
                                f"game file, as camera: {{{key}: ...}}")
        if key not in allowed:
            raise KnockcamError(f"{at}.{key}: unknown field of a photo round (expected one of {', '.join(allowed)})")


def _calls(calls: Any, at: str) -> tuple[tuple[int, str], ...]:
    """``calls: {5: chance}`` -> ((5, "chance"),)."""
    if calls is None:
        return ()
    if not isinstance(calls, dict) or not all(str(n).isdigit() and isinstance(w, str) for n, w in calls.items()):
        raise KnockcamError(f"{at}.calls: a mapping of token number to where it rests, e.g. {{5: chance, 7: none}}")
    return tuple((int(n), w) for n, w in calls.items())


def _added(added: Any, at: str) -> tuple[tuple[str, str], ...]:
    """``add: [red=boardwalk]`` -> (("red", "boardwalk"),)."""
    if added is None:
        return ()
    pairs = [str(a).partition("=") for a in added] if isinstance(added, list) else None
    if pairs is None or not all(side.strip() and where.strip() for side, _, where in pairs):
        raise KnockcamError(f"{at}.add: a list of SIDE=SPACE, e.g. [red=boardwalk]")
    return tuple((side.strip().lower(), where.strip()) for side, _, where in pairs)
