"""A game log told as it happened (``knockcam replay``): each round's slides, knocks, questions and answers,
corrections and camera trouble, each with the saved frame that shows it, so a dispute after the game is
settled by looking at the right picture."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from knockcam.board.layout import Board
from knockcam.report.evidence import space_name

RESLIDE_WHY = {"chance": "Chance, E1", "jail": "out of jail, S4", "off_board": "off the board, S2 variant"}
ANSWERED_ON = {"page": " (answered on the game's page)", "timeout": " (no answer in time: the default)",
               "file": " (from the answers file)", "default": " (not in the answers file: the default)"}


@dataclass(frozen=True)
class Happening:
    """One thing that happened: in which round (0: before the first), the log line, when (local clock time the
    log wrote it, HH:MM:SS), what, and the saved frame that shows it (relative to the log's folder; None when no
    frame was saved yet)."""

    round: int
    seq: int
    time: str
    text: str
    evidence: str | None

    def to_dict(self) -> dict:
        return {"round": self.round, "seq": self.seq, "time": self.time, "text": self.text, "evidence": self.evidence}


def story(entries: list[dict], board: Board) -> list[Happening]:
    """The log's entries (knockcam.live.log.read_log) as happenings, in the order they were written. Each event
    is shown by the frame it names, else by the last frame observed before it: the one the game acted on."""
    out: list[Happening] = []
    number, frame, asked = 0, None, {}
    for line, e in enumerate(entries):
        kind = e.get("kind")
        try:
            if kind == "round_start":
                number = int(e["round"])
            elif kind == "observation":
                frame = _frame(e, frame)
            elif kind == "question":
                asked[str(e["key"])] = str(e.get("text", e["key"]))
            text = _words(e, board, asked)
            if text is not None:
                out.append(Happening(int(e.get("round", number)), int(e.get("seq", line)), _clock(e), text,
                                     _frame(e, frame)))
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError):  # a damaged line: said, not skipped
            out.append(Happening(number, line, _clock(e), f"line {line} of the log ({kind!r}) is damaged: it cannot "
                                 "be read", frame))
    return out


def _clock(e: dict) -> str:
    """The entry's time on this computer's clock, HH:MM:SS (the log keeps UTC); "" when the line has none."""
    try:
        return dt.datetime.fromisoformat(e["t"]).astimezone().strftime("%H:%M:%S")
    except (KeyError, TypeError, ValueError):
        return ""


def _frame(e: dict, last: str | None) -> str | None:
    """The frame an entry names, else the last one observed."""
    named = e.get("evidence")
    return named if isinstance(named, str) and named else last


def _where(board: Board, space: str | None, state: str | None) -> str:
    """Where a log entry puts a token, in words (state 'out': knocked or slid off the board)."""
    return space_name(board, "off_board" if state in ("out", "off_board") else space)


def _words(e: dict, board: Board, asked: dict) -> str | None:
    """What one log entry says, in the table's words (None: nothing to tell a referee)."""
    kind, side = e.get("kind"), e.get("side")
    if kind == "slide":
        return f"{side} slid: {_where(board, e.get('space'), e.get('state'))}" + (
            " (out of turn, or an earlier slide was not seen)" if e.get("out_of_turn") else "")
    if kind == "reslide":
        return (f"{side} slid again ({RESLIDE_WHY.get(e.get('why'), e.get('why'))}): "
                f"{_where(board, e.get('space'), e.get('state'))}")
    if kind == "knock":
        before = _where(board, e.get("before"), None)
        if e.get("state") == "out":
            return f"{side}'s token on {before} knocked off (S2)"
        return f"{side}'s token moved from {before} to {_where(board, e.get('after'), e.get('state'))}"
    if kind == "jail":
        return (f"{side} paid M100 into the pot to slide again from jail (S4)" if e.get("paid")
                else f"{side}'s token stays in jail to the end of the round (S4)")
    if kind == "railroad":
        to = " and ".join(space_name(board, p) for p in e.get("to", []))
        chose = "as suggested" if e.get("by") == "suggested" else \
            f"the player's choice; suggested {' and '.join(space_name(board, p) for p in e.get('suggested', []))}"
        return f"E2: {side} moved the Railroad token to {to} ({chose})"
    if kind == "answer":
        return f"asked: {asked.get(e['key'], e['key'])} -> {e.get('answer')}{ANSWERED_ON.get(e.get('on'), '')}"
    if kind == "override":
        before, after = e.get("before") or {}, e.get("after") or {}
        return (f"fixed by hand: token {int(e['token']) + 1} ({side}) "
                f"{_where(board, before.get('space'), before.get('state'))} -> "
                f"{_where(board, after.get('space'), after.get('state'))}")
    if kind == "covered":
        return f"{side}'s token on {_where(board, e.get('space'), None)} covered: kept where it was"
    if kind == "seen_again":
        return f"{side}'s token seen again on {_where(board, e.get('space'), None)}"
    if kind == "extra_token":
        return f"an extra {e.get('colour')} token on the board (not counted)"
    if kind == "reslide_granted":
        return f"{side} may slide the token that went off the board again (S2 variant, {e.get('variant')})"
    if kind == "cleared":
        return "the board was cleared before every token was slid: scored as it was"
    if kind == "request":
        return "a review of the positions was asked for"
    if kind == "camera":
        return f"camera: {e.get('trouble')}: {e.get('message')}"
    if kind == "round":
        return f"round {e.get('round')} scored on this frame"
    return None
