"""Automatic calibrations kept on disk, for photos calibrated before by the same calibration code.

The detection benchmark spends most of its time finding the board in each held-out photo (1-3 s a photo),
although a change to the detectors changes none of those answers. ``knockcam bench --calibration-cache DIR``
keeps each answer here, under a key made of the photo's pixels, the board, the error limit and a fingerprint
of everything the automatic calibration reads (its code, the board code, calibrate.yaml, the OpenCV and numpy
versions): a change to any of them makes new keys, so a kept answer is only reused where finding it again
would give the same answer. Calibrations are kept exactly (JSON floats round-trip), not rounded as a
calibration file is.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.files import write_atomic

# What the automatic calibration reads, besides the photo and the board: every module of these packages but
# NOT_READ, these modules, these settings files (tests/calibrate/test_cache.py checks that calibrating loads
# nothing else)
PACKAGES = ("knockcam.board", "knockcam.calibrate")
NOT_READ = ("knockcam.calibrate.bench", "knockcam.calibrate.cache", "knockcam.calibrate.scene")  # the calibration
# benchmark, its scenes and this cache: editing them changes no calibration
MODULES = ("knockcam", "knockcam.data", "knockcam.errors", "knockcam.exposure", "knockcam.files", "knockcam.seeds",
           "knockcam.settings", "knockcam.sides", "knockcam.workers")
SETTINGS = ("calibrate",)


@lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A hash of what the automatic calibration reads besides the photo and the board (``PACKAGES`` but
    ``NOT_READ``, ``MODULES``, ``SETTINGS``, the OpenCV and numpy versions): equal fingerprints find equal
    calibrations. Read once a process, near when its code was imported (a file edited later is not the code
    it runs)."""
    from importlib import resources

    import cv2

    root = Path(importlib.util.find_spec("knockcam").origin).parent
    files = [Path(importlib.util.find_spec(m).origin) for m in MODULES]
    skipped = {Path(importlib.util.find_spec(m).origin) for m in NOT_READ}
    for package in PACKAGES:
        files += sorted(set(Path(importlib.util.find_spec(package).origin).parent.rglob("*.py")) - skipped)
    files += [resources.files("knockcam.data").joinpath(f"{name}.yaml") for name in SETTINGS]
    digest = hashlib.sha256(f"opencv {cv2.__version__} numpy {np.__version__}".encode())
    for path in files:
        name = Path(str(path)).relative_to(root).as_posix()  # the same in every checkout
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class CalibrationCache:
    """Automatic calibrations kept in ``folder`` (made if missing), one small JSON file each."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.code = code_fingerprint()

    def key(self, image: np.ndarray, board: Board, max_error_mm: float) -> str:
        """The key of ``image``'s automatic calibration on ``board`` up to ``max_error_mm`` with this code."""
        board = replace(board, source="")  # the same board read from another file (another checkout's) is the same
        digest = hashlib.sha256(f"{self.code} {image.shape} {image.dtype} {max_error_mm!r} {board!r}".encode())
        digest.update(np.ascontiguousarray(image).tobytes())
        return digest.hexdigest()

    def get(self, key: str) -> tuple[Calibration | None, float | None] | None:
        """The kept answer under ``key`` (the calibration, or None where the board was not found, and how long
        finding it took in ms, None where it was refused), or None when none is kept or the file kept is not one
        (a disk filled mid-way, an edit): then it is found again."""
        try:
            data = json.loads((self.folder / f"{key}.json").read_text(encoding="utf-8"))
            found, took = data["calibration"], data["ms"]
            return (None if found is None else Calibration.from_dict(found)), (None if took is None else float(took))
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: str, calibration: Calibration | None, ms: float | None) -> None:
        """Keep ``calibration`` (None: the board was not found) and its time under ``key`` (written atomically:
        two workers may write the same answer)."""
        found = None if calibration is None else calibration.to_dict(exact=True)
        write_atomic(self.folder / f"{key}.json", json.dumps({"calibration": found, "ms": ms}).encode("utf-8"))

