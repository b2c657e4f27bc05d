"""A command's child processes and whether they still run, read in /proc (Linux): for the tests that a
command's worker processes end with it; and a Ctrl-C sent to the test's own process."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

HAS_PROC = Path("/proc/self/stat").exists()


def _stat(pid: int | str) -> list[str]:
    """Process ``pid``'s /proc stat fields after its name: state, parent, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def children_of(pid: int, marker: bytes = b"") -> list[int]:
    """The processes whose parent is ``pid`` (with ``marker`` in their command line, when given)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int(_stat(entry.name)[1])
                cmdline = (entry / "cmdline").read_bytes()
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid and marker in cmdline:
                found.append(int(entry.name))
    return found


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return _stat(pid)[0] != "Z"
    except (OSError, IndexError):
        return False


def still_running(pids: list[int], within_s: float) -> list[int]:
    """Those of ``pids`` still running after waiting up to ``within_s`` for them all to end."""
    deadline = time.monotonic() + within_s
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if running(pid)]


def press_ctrl_c() -> None:
    """Ctrl-C (SIGINT) to this process, and the moment Python needs to run its handler (between two steps of the
    main thread): whatever the handler does (sets a flag, raises KeyboardInterrupt) has happened on return."""
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
