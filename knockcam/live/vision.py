"""One still frame -> the tokens at rest (``Still``): the detectors (knockcam.detect) then the spaces (knockcam.assign).

The live mode has an empty-board frame of the very camera in use (taken when the board is clear), so
the reference-frame detector always runs, and the parts of the board a hand or a cup covers are
reported with the tokens; the learned model joins in when its weights exist.
"""

from __future__ import annotations

import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.live.frames import Frame
from knockcam.live.tracker import Still, seen_from_positions


class StillDetector:
    """Callable ``Frame -> Still`` for one calibration and one empty-board reference frame."""

    def __init__(self, board: Board, calibration: Calibration, reference: np.ndarray | None, model="auto"):
        self.board = board
        self.calibration = calibration
        self.reference = reference
        self.model = model

    def __call__(self, frame: Frame) -> Still:
        from knockcam.assign import assign
        from knockcam.detect import detect

        found = detect(frame.image, self.calibration, self.board, reference=self.reference, model=self.model)
        tokens = found.tokens
        # left out here: a weak model score the empty-board frame does not confirm, and a token only the
        # model sees where the reference frame of this very camera shows none (model_only), or neither
        # detector reports (verifier_only, found beside another token by the second look): the board
        # is seen again after every slide, and a phantom would be taken for a slide or keep the board
        # from ever looking clear; a token missed this way is asked about (the tracker's questions).
        # One the second look confirmed (source verified, knockcam.detect.verify) is kept
        kept = [t for t in tokens if not (t.unsure and t.source in ("model", "model_only"))
                and (self.reference is None or t.source not in ("model_only", "verifier_only"))]
        positions = tuple(assign(kept, self.board))
        return Still(seen_from_positions(positions), covered=tuple(found.hidden), positions=positions)
