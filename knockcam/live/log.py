"""The game log: one JSON object per line, appended and flushed to disk (fsync) before anything is acted on.

A game is rebuilt from its log by feeding its ``observation`` lines (what the camera saw when the
board was still) and ``answer`` lines (what the players said) to a fresh tracker, in order; every
other line (slides, jail, round scores, camera trouble) is a record for people. Evidence frames are
JPEG files in ``LOG.d/`` next to the log.

Each line ends with a ``check``: a hash of the line and of the check before it, so a line changed,
removed or moved after it was written (a damaged disk, a hand edit) is named when the log is read.
It is not a signature: whoever edits the log on purpose can compute the checks again.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from knockcam.errors import KnockcamError
from knockcam.files import file_in_the_way, read_text, replace_atomically

# the game log's format, written in its start line; a later one is refused, not misread. 2: each line ends
# with its check (format 1, before 2026-12-03, has none; such a log is read without them)
LOG_FORMAT = 2
# what to do when a game stops before it is over; the command line puts the log's path for LOG
RESUME_LATER = "resume later with 'knockcam live --resume LOG'"
_CHECK = re.compile(r',"check":"([0-9a-f]{16})"\}$')


def _check(before: str, body: str) -> str:
    """The check of a line whose text without it is ``body``, after a line whose check was ``before``."""
    return hashlib.sha256(f"{before}\n{body}".encode("utf-8")).hexdigest()[:16]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class GameLog:
    """Append-only JSON-lines file. ``append`` returns only once the line is on disk."""

    def __init__(self, path: str | Path, *, fsync: bool = True):
        self.path = Path(path)
        self.fsync = fsync
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _drop_torn_tail(self.path)
            lines = _read_lines(self.path) if self.path.exists() else []
            self.seq = len(lines)
            found = _CHECK.search(lines[-1][1]) if lines else None
            self.last_check = found.group(1) if found else ""
            self.handle = open(self.path, "a", encoding="utf-8")
        except OSError as exc:
            blocker = file_in_the_way(self.path)
            why = f"{blocker} is a file, not a folder" if blocker is not None else exc.strerror or exc
            raise KnockcamError(f"cannot write game log {self.path}: {why}",
                                "give --log a file in a folder you can write (to resume a game, copy its log there "
                                "first)") from None

    @property
    def evidence_dir(self) -> Path:
        d = self.path.with_name(self.path.name + ".d")
        d.mkdir(parents=True, exist_ok=True)
        return d

    def append(self, kind: str, **data: Any) -> dict:
        entry = {"seq": self.seq, "t": _now(), "kind": kind, **data}
        body = json.dumps(entry, separators=(",", ":"), default=_jsonable)
        check = _check(self.last_check, body)
        line = f'{body[:-1]},"check":"{check}"}}'
        try:
            self.handle.write(line + "\n")
            self.handle.flush()
            if self.fsync:
                os.fsync(self.handle.fileno())
        except OSError as exc:
            raise self._stopped(exc) from None
        self.seq += 1
        self.last_check = check
        return entry

    def _stopped(self, exc: OSError) -> KnockcamError:
        """The game cannot go on unrecorded: what failed, and how to go on once it is mended. The lines written
        so far hold the game up to here (a torn last one is dropped on --resume, as after a crash)."""
        return KnockcamError(f"cannot write game log {self.path}: {exc.strerror or exc}",
                             f"make room on the disk, then continue with 'knockcam live --resume {self.path}'")

    def save_frame(self, name: str, image, quality: int = 85) -> str:
        """Write an evidence frame atomically; returns its path relative to the log's folder."""
        import cv2

        ok, buf = cv2.imencode(".jpg", image, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
        if not ok:
            raise KnockcamError(f"cannot encode evidence frame {name}")
        return self.save_bytes(name, buf.tobytes())

    def frame_name(self, name: str) -> str:
        """The path (relative to the log's folder) that ``save_frame(name, ...)`` writes."""
        return str((self.evidence_dir / name).relative_to(self.path.parent))

    def save_bytes(self, name: str, data: bytes) -> str:
        """Write an evidence file atomically (flushed to the disk like the log's lines); returns its path
        relative to the log's folder."""
        try:
            path = self.evidence_dir / name
            replace_atomically(path, data, fsync=self.fsync)
        except OSError as exc:
            raise self._stopped(exc) from None
        return str(path.relative_to(self.path.parent))

    def close(self) -> None:
        self.handle.close()


def check_new(path: Path) -> None:
    """KnockcamError when a new game cannot be logged at ``path``: a folder, or a game's log already there
    (never overwritten: it is continued with --resume)."""
    if path.is_dir():
        raise KnockcamError(f"game log {path} is a folder: give a file, e.g. --log {path / 'game.jsonl'}")
    if path.exists() and path.stat().st_size > 0:
        raise KnockcamError(f"game log {path} already exists: continue it with --resume {path}, or give a new --log")


def _jsonable(value: Any):
    try:
        import numpy as np

        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return value.tolist()
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    if isinstance(value, (tuple, set)):
        return list(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


def _drop_torn_tail(path: Path) -> None:
    """A crash mid-write can leave a last line without its newline: it was never acted on, drop it."""
    if not path.exists():
        return
    data = path.read_bytes()
    if not data or data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1
    with open(path, "r+b") as f:
        f.truncate(cut)


def read_log(path: str | Path) -> list[dict]:
    """Every complete line of a game log (without its check); a torn last line (crash mid-write) is ignored.
    A line whose check does not follow from the lines before it is refused, named by number and kind."""
    lines = _read_lines(path)
    entries = [entry for _, _, entry in lines]
    if entries and entries[0].get("kind") != "start":
        raise KnockcamError(f"{path}: not a knockcam game log (it must begin with a 'start' line)")
    written = entries[0].get("format", 1) if entries else LOG_FORMAT
    if not isinstance(written, int) or written > LOG_FORMAT:
        raise KnockcamError(f"{path}: a game log of format {written!r}, written by a newer knockcam (this one reads "
                            f"format {LOG_FORMAT}): update knockcam to read it")
    if written >= 2:
        before = ""
        for number, line, entry in lines:
            found = _CHECK.search(line)
            if found is None or _check(before, line[:found.start()] + "}") != found.group(1):
                raise KnockcamError(f"{path}: line {number} ({entry.get('kind')}) was changed after it was written, "
                                    "or a line before it removed (its check does not follow)",
                                    f"the game holds up to line {number - 1}: to go on from there, copy the log and "
                                    f"delete line {number} and the lines after it, or restore the log from a copy")
            before = found.group(1)
    for entry in entries:
        entry.pop("check", None)
    return entries


def _read_lines(path: str | Path) -> list[tuple[int, str, dict]]:
    """(line number, text, entry) of every complete, non-empty line; KnockcamError for one that is no entry."""
    text = read_text(path, "game log")
    complete = text.split("\n")[:-1]  # whatever follows the last newline is torn or empty
    lines = []
    for number, line in enumerate(complete, start=1):
        line = line.rstrip("\r")  # a log moved through a tool that ends lines the Windows way
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            raise KnockcamError(f"{path}: line {number} is not JSON: the log is damaged") from None
        if not isinstance(entry, dict) or "kind" not in entry:
            raise KnockcamError(f"{path}: line {number} is not a game-log entry")
        lines.append((number, line, entry))
    return lines


def read_game_log(path: str | Path) -> list[dict]:
    """``read_log`` of a log a game is to be rebuilt from (resumed or replayed): a one-line KnockcamError when
    it holds no game, as a crash while a game was starting leaves it (empty, or its first line cut off)."""
    entries = read_log(path)
    if not entries:
        raise KnockcamError(f"{path}: no game was started in this log (it is empty or its first line is cut off): "
                            "nothing to resume or replay; start a new game with another --log, or delete this file")
    start = entries[0]
    order, board, source = start.get("order"), start.get("board"), start.get("source", {})
    if not (isinstance(order, list) and all(isinstance(side, str) for side in order)
            and (board is None or isinstance(board, str)) and isinstance(source, dict)):
        raise KnockcamError(f"{path}: line 1 (start) is damaged: its order, board or source is not what knockcam "
                            "writes", "restore the log from a copy: a game cannot be rebuilt without its start")
    return entries
