"""Motion gating at camera rate: wait while something moves over the board, act once it is still.

Each frame is shrunk to a small gray image (``motion.work_width_px``), blurred, and compared with the
previous one inside a mask of the board and a margin around it (what happens elsewhere on the table
does not matter). Thresholds count changed pixels in units of one token's base as the camera sees it,
so one token sliding is motion and one new token at rest is a change, however far the camera is. The board is *still* after ``still_s`` seconds without motion; a still board is
worth a detection only if it differs from the last one detected. Motion at the near end of the board
(where every slide starts) is remembered, so a slide that ends off the board is not missed.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration


@dataclass(frozen=True)
class Gate:
    """What the gate says about one frame."""

    moving: bool  # something moved since the previous frame
    settled: bool  # the board has just become still and differs from the last detection: detect now
    launched: bool  # (when settled) motion was seen at the near end since the last detection


def _polygon_px(calibration: Calibration, pts_mm, scale: float) -> np.ndarray:
    px = calibration.mm_to_px(np.asarray(pts_mm, dtype=np.float64)) * scale
    return np.round(px).astype(np.int32)


def _outline_mm(board: Board, margin: float, y_max: float | None = None, n: int = 12) -> np.ndarray:
    """The board's rectangle grown by ``margin`` (optionally cut at ``y_max``), sampled densely so that
    lens distortion bends its edges correctly."""
    w, length = board.size_mm
    x0, x1, y0 = -margin, w + margin, -margin
    y1 = length + margin if y_max is None else y_max
    t = np.linspace(0.0, 1.0, n, endpoint=False)
    edges = [np.column_stack([x0 + (x1 - x0) * t, np.full(n, y0)]),
             np.column_stack([np.full(n, x1), y0 + (y1 - y0) * t]),
             np.column_stack([x1 - (x1 - x0) * t, np.full(n, y1)]),
             np.column_stack([np.full(n, x0), y1 - (y1 - y0) * t])]
    return np.vstack(edges)


def small_gray(image: np.ndarray, width: int, blur: int) -> np.ndarray:
    """The frame as the gate sees it: gray, ``width`` pixels wide, box-blurred."""
    h, w = image.shape[:2]
    height = max(1, int(round(h * width / w)))
    small = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    if small.ndim == 3:
        small = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    if blur > 1:
        small = cv2.blur(small, (blur, blur))
    return small


def token_area_px(calibration: Calibration, board: Board, scale: float) -> float:
    """Area of a token's base in the gate's small image where it looks smallest (the end farthest away):
    the unit of every motion threshold, so a single token is never below them, whatever the camera."""
    w, length = board.size_mm
    d = board.token.base_diameter_mm
    sizes = []
    for y in (20.0, length - 20.0):
        a, b = calibration.mm_to_px([(w / 2 - d / 2, y), (w / 2 + d / 2, y)])
        sizes.append(float(np.hypot(*(b - a))) * scale)
    return max(1.0, float(np.pi / 4 * min(sizes) ** 2))


class MotionGate:
    """Per-frame motion test on the board area; ``update(image, t)`` returns a ``Gate``."""

    def __init__(self, calibration: Calibration, board: Board, image_size: tuple[int, int], cfg: dict | None = None):
        self.cfg = cfg or settings.load("live")["motion"]
        self.width = int(self.cfg["work_width_px"])
        w, h = image_size
        self.scale = self.width / float(w)
        self.size = (self.width, max(1, int(round(h * self.scale))))
        self.mask = self._mask(calibration, board, _outline_mm(board, float(self.cfg["board_margin_mm"])))
        launch_y = board.go_line_y_mm + float(self.cfg["launch_zone_mm"])
        self.launch = self._mask(calibration, board, _outline_mm(board, float(self.cfg["board_margin_mm"]),
                                                                 y_max=launch_y))
        self.token_px = token_area_px(calibration, board, self.scale)
        self.threshold = int(self.cfg["pixel_threshold"])
        self.blur = int(self.cfg["blur_px"])
        self.prev: np.ndarray | None = None
        self.last_detected: np.ndarray | None = None
        self.last_motion_t: float | None = None
        self.launched = False
        self.done_since_motion = False  # a detection was already made in this still spell
        self._rim = None  # (the reference frame, its small gray, the rim band), cached

    def _mask(self, calibration: Calibration, board: Board, outline_mm: np.ndarray) -> np.ndarray:
        mask = np.zeros((self.size[1], self.size[0]), np.uint8)
        cv2.fillPoly(mask, [_polygon_px(calibration, outline_mm, self.scale)], 1)
        return mask.astype(bool)

    def update(self, image: np.ndarray, t: float) -> Gate:
        small = small_gray(image, self.width, self.blur)
        if small.shape[::-1] != self.size:
            small = cv2.resize(small, self.size, interpolation=cv2.INTER_AREA)
        moving = False
        if self.prev is not None:
            changed = cv2.absdiff(small, self.prev) > self.threshold
            n_changed = int(np.count_nonzero(changed & self.mask))
            moving = n_changed >= float(self.cfg["moving_tokens"]) * self.token_px
            if moving:
                n_launch = int(np.count_nonzero(changed & self.launch))
                if n_launch >= float(self.cfg["launch_tokens"]) * self.token_px:
                    self.launched = True
        self.prev = small
        if moving or self.last_motion_t is None:
            if moving:
                self.done_since_motion = False
            self.last_motion_t = t if moving or self.last_motion_t is None else self.last_motion_t
        settled = False
        launched = False
        if not moving and not self.done_since_motion and t - self.last_motion_t >= float(self.cfg["still_s"]):
            self.done_since_motion = True
            if self.last_detected is None or self._differs(small, self.last_detected):
                settled = True
                launched = self.launched
        return Gate(moving=moving, settled=settled, launched=launched)

    def _differs(self, a: np.ndarray, b: np.ndarray) -> bool:
        changed = cv2.absdiff(a, b) > self.threshold
        return int(np.count_nonzero(changed & self.mask)) >= float(self.cfg["changed_tokens"]) * self.token_px

    def detected(self) -> None:
        """The current still frame was detected: later still frames are compared with it."""
        self.last_detected = self.prev
        self.launched = False

    def rim_change(self, image: np.ndarray, reference: np.ndarray, calibration: Calibration, board: Board) -> float:
        """Share of a band around the board's edge that differs from the reference frame: a moved camera
        shifts the edge everywhere, a hand or a token only in places."""
        a = small_gray(image, self.width, self.blur)
        if self._rim is None or self._rim[0] is not reference:
            outer = self._mask(calibration, board, _outline_mm(board, 15.0))
            inner = self._mask(calibration, board, _outline_mm(board, -15.0))
            self._rim = (reference, small_gray(reference, self.width, self.blur), outer & ~inner)
        _, b, band = self._rim
        n = max(1, int(np.count_nonzero(band)))
        return float(np.count_nonzero((cv2.absdiff(a, b) > self.threshold) & band)) / n
