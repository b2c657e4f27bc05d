"""Is the photo a mirror image of the board? A selfie camera or a mirrored webcam view flips it left-right.

A camera above the board never sees it mirrored, so the automatic method tries the board's four
turns but not its mirror image. The printed grid is almost symmetric left-right, so in a mirrored
photo it places the board well but with left and right swapped: every token lands on its mirror
space (Mediterranean for Connecticut) without a flag. The property colours tell the two apart: the
spaces of a colour set share a colour, and mirrored they do not (Baltic's mirror is Vermont, light
blue; Indiana's is a House space). Each space's colour is the mean a*b* (Lab) of its most colourful
pixels, the set's band wherever the art prints it, so the lighting's brightness does not count.
"""

from __future__ import annotations

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError


class Mirrored(KnockcamError):
    """The photo is a mirror image: no later frame of the same camera will be better."""

    def __init__(self):
        super().__init__("the photo is mirrored (the board's colour sets line up only when it is flipped left to right)",
                         "turn off the camera's mirroring (a selfie camera or a mirrored webcam view) or flip the "
                         "photo back")


_MASKS: dict = {}


def _space_masks(board: Board, cfg: dict) -> tuple[TopDown, list[list[tuple[np.ndarray, np.ndarray]]]]:
    """The top-down raster, and per colour set, each space's (as placed, mirrored) pixel mask, inset from its edges."""
    ppm = float(cfg["px_per_mm"])
    key = (board.source, board.size_mm, len(board.spaces), ppm, float(cfg["inset_mm"]))
    if key not in _MASKS:
        view = TopDown(board, ppm, 0.0)
        inset = max(1, round(float(cfg["inset_mm"]) * ppm))
        kernel = np.ones((2 * inset + 1, 2 * inset + 1), np.uint8)
        width = board.size_mm[0]

        def mask(polygon: np.ndarray) -> np.ndarray:
            m = np.zeros(view.size[::-1], np.uint8)
            cv2.fillPoly(m, [np.round(view.to_px(polygon) * 4).astype(np.int32)], 1, shift=2)
            return cv2.erode(m, kernel).astype(bool)

        sets: dict[str, list] = {}
        for space in board.spaces:
            if space.color_set:
                poly = np.array(space.polygon, np.float64)
                flipped = np.column_stack([width - poly[:, 0], poly[:, 1]])
                sets.setdefault(space.color_set, []).append((mask(poly), mask(flipped)))
        _MASKS[key] = (view, [members for members in sets.values() if len(members) > 1])
    return _MASKS[key]


def mirror_evidence(image: np.ndarray, calibration: Calibration, board: Board) -> float:
    """How much better the colour sets agree as placed than mirrored left-right (summed a*b* distances):
    clearly negative when the photo is a mirror image; near 0 when the art shows no set colours."""
    cfg = settings.load("calibrate")["mirror"]
    view, sets = _space_masks(board, cfg)
    top, seen = calibration.top_down(image, view)
    ab = cv2.cvtColor(top.astype(np.float32) / 255.0, cv2.COLOR_BGR2Lab)[..., 1:]
    chroma = np.hypot(ab[..., 0], ab[..., 1])
    colourful = float(cfg["colourful_share"])
    least = int(cfg["min_px"])

    def colour(mask: np.ndarray) -> np.ndarray | None:
        inside = mask & seen
        if np.count_nonzero(inside) < least:
            return None
        c = chroma[inside]
        return ab[inside][c >= np.quantile(c, 1.0 - colourful)].mean(axis=0)

    def spread(colours: list[np.ndarray]) -> float:
        return float(np.mean([np.linalg.norm(a - b) for i, a in enumerate(colours) for b in colours[i + 1:]]))

    evidence = 0.0
    for members in sets:
        pairs = [(colour(placed), colour(flipped)) for placed, flipped in members]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]  # seen both ways
        if len(pairs) > 1:
            evidence += spread([b for _, b in pairs]) - spread([a for a, _ in pairs])
    return evidence


def check_not_mirrored(image: np.ndarray, calibration: Calibration, board: Board) -> Calibration:
    """The calibration, or ``Mirrored`` when the colour sets say the photo is mirrored (calibrate.yaml mirror)."""
    if mirror_evidence(image, calibration, board) < -float(settings.load("calibrate")["mirror"]["min_evidence"]):
        raise Mirrored()
    return calibration
