"""The live check each round: has the camera moved since calibration? Re-register or say so."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import (
    Calibration,
    resize_matrix,
    working_copy,
    working_size,
)
from knockcam.calibrate.quality import board_corners_mm
from knockcam.errors import KnockcamError


@dataclass(frozen=True)
class MotionCheck:
    """How far the board's corners moved (mm on the board), and the calibration to use now."""

    moved: bool
    shift_mm: float
    calibration: Calibration
    note: str


class CameraWatch:
    """Keeps the frame the calibration was made on and compares each new frame with it (ORB + MAGSAC)."""

    def __init__(self, frame: np.ndarray, calibration: Calibration, board: Board):
        cfg = settings.load("calibrate")["motion"]
        self.board = board
        self.calibration = calibration
        self.limit = float(cfg["moved_mm"])
        self.orb = cv2.ORB_create(int(cfg["features"]))
        self.kp, self.desc = self._features(frame)

    def _features(self, frame):
        gray = frame if frame.ndim == 2 else cv2.cvtColor(frame[..., :3], cv2.COLOR_BGR2GRAY)
        kps, desc = self.orb.detectAndCompute(gray, None)
        return np.array([k.pt for k in kps]) if kps else np.zeros((0, 2)), desc

    def check(self, frame: np.ndarray) -> MotionCheck:
        """Compare a new frame with the calibration frame; a moved camera gets a re-registered calibration."""
        g, why = self.motion(frame)
        if g is None:
            return MotionCheck(True, float("inf"), self.calibration, why)
        new = self.calibration.moved(g, method=self.calibration.method + "+tracked")
        shift = self.shift_mm(g)
        if shift <= self.limit:
            return MotionCheck(False, shift, self.calibration, "camera still")
        return MotionCheck(True, shift, new, f"camera moved {shift:.1f} mm at the board corners: re-registered")

    def motion(self, frame: np.ndarray) -> tuple[np.ndarray | None, str]:
        """The homography carrying the calibration frame onto ``frame`` (undistorted pixels), by features;
        None and why when the two views cannot be matched."""
        kp, desc = self._features(frame)
        if desc is None or self.desc is None or len(kp) < 20:
            return None, "camera moved or view blocked: too few features"
        matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(self.desc, desc)
        if len(matches) < 20:
            return None, "camera moved or view blocked: run calibrate again"
        # the motion between undistorted pixels, where the calibration's homography lives (a lens
        # bends a bumped camera's motion: in the photo as taken it is no homography)
        src = self._undistorted(self.kp[[m.queryIdx for m in matches]])
        dst = self._undistorted(kp[[m.trainIdx for m in matches]])
        g, inl = cv2.findHomography(src, dst, cv2.USAC_MAGSAC, 2.0)
        if g is None or inl is None or inl.sum() < 15:
            return None, "camera moved a lot: run calibrate again"
        return g / g[2, 2], ""

    def shift_mm(self, g: np.ndarray) -> float:
        """How far the camera moving by ``g`` moves the board's corners (board mm, the worst corner)."""
        corners = board_corners_mm(self.board)
        moved = self.calibration.moved(g)
        return float(np.linalg.norm(self.calibration.px_to_mm(moved.mm_to_px(corners)) - corners, axis=1).max())

    def _undistorted(self, points: np.ndarray) -> np.ndarray:
        k, d = self.calibration.camera_matrix, self.calibration.dist_coeffs
        if k is None or d is None:
            return points
        return cv2.undistortPoints(points.reshape(-1, 1, 2).astype(np.float64), k, d, P=k).reshape(-1, 2)


def refine_shift(reference: np.ndarray, image: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Sub-pixel refinement (ECC) of the reference -> image homography found from features: the
    reference-frame detector compares the two pixel by pixel, so a tenth of a pixel shows at printed edges."""
    a = cv2.cvtColor(reference, cv2.COLOR_BGR2GRAY).astype(np.float32)
    b = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    warp = np.linalg.inv(g).astype(np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 50, 1e-5)
    try:
        _, warp = cv2.findTransformECC(b, a, warp, cv2.MOTION_HOMOGRAPHY, criteria, None, 5)
    except cv2.error:  # no convergence: keep the feature estimate
        return g
    out = np.linalg.inv(warp.astype(np.float64))
    if not np.isfinite(out).all() or np.abs(out / out[2, 2] - g).max() > 5.0:
        return g
    return out / out[2, 2]


def carried(reference: np.ndarray, g: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The empty-board frame ``reference`` as the camera sees the board after moving by ``g`` (reference pixels
    -> new pixels), ``size`` (width, height): the reference-frame detector compares the two pixel by pixel."""
    return cv2.warpPerspective(reference, g, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


class FrameOnto:
    """How the empty-board frame ``reference`` lies on photos from the same camera (``__call__``): the
    homography carrying the frame onto a photo and how far it moves the board's corners (board mm). Found by
    features and refined to sub-pixel (``refine_shift``) when they move the corners more than
    ``motion.moved_mm`` (data/calibrate.yaml); under that, the identity and 0. KnockcamError when the two
    cannot be matched. The frame's features are found once, for every photo of ``image_size`` through
    ``calibration``. A phone-size pair is matched at the working size (``working_copy``), where the
    reference-frame detector's 1 px/mm raster needs no finer: three fixtures' pairs at 4032x2268, moved 36 px,
    took 0.3-0.5 s and were placed within 1.8 px of the move at full size (matched at full size: 2.9-7.5 s,
    within 1.1 px)."""

    def __init__(self, reference: np.ndarray, image_size: tuple[int, int], calibration: Calibration, board: Board):
        size = (int(image_size[0]), int(image_size[1]))
        work = working_size(size)
        self.to_work = resize_matrix(size, work)
        if work != size:
            reference = cv2.resize(reference, work, interpolation=cv2.INTER_AREA)
            calibration = calibration.resized(work)
        self.reference = reference
        self.watch = CameraWatch(reference, calibration, board)

    def __call__(self, image: np.ndarray) -> tuple[np.ndarray, float]:
        small = working_copy(image)
        g, why = self.watch.motion(small)
        if g is None:
            raise KnockcamError(f"the empty-board frame does not show the board as the photo does ({why.split(':')[0]}): "
                                "take both from the same place, or score without --reference")
        if self.watch.shift_mm(g) <= self.watch.limit:
            return np.eye(3), 0.0
        g = refine_shift(self.reference, small, g)
        full = np.linalg.inv(self.to_work) @ g @ self.to_work
        return full / full[2, 2], self.watch.shift_mm(g)
