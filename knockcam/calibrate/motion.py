"""The live check each round: has the camera moved since calibration? Re-register or say so."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import board_corners_mm


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
        kp, desc = self._features(frame)
        if desc is None or self.desc is None or len(kp) < 20:
            return MotionCheck(True, float("inf"), self.calibration, "camera moved or view blocked: too few features")
        matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(self.desc, desc)
        if len(matches) < 20:
            return MotionCheck(True, float("inf"), self.calibration, "camera moved or view blocked: run calibrate again")
        # the motion between undistorted pixels, where the calibration's homography lives (a lens
        # bends a bumped camera's motion: in the photo as taken it is no homography)
        src = self._undistorted(self.kp[[m.queryIdx for m in matches]])
        dst = self._undistorted(kp[[m.trainIdx for m in matches]])
        g, inl = cv2.findHomography(src, dst, cv2.USAC_MAGSAC, 2.0)
        if g is None or inl is None or inl.sum() < 15:
            return MotionCheck(True, float("inf"), self.calibration, "camera moved a lot: run calibrate again")
        new = self.calibration.moved(g, method=self.calibration.method + "+tracked")
        corners = board_corners_mm(self.board)
        shift = float(np.linalg.norm(self.calibration.px_to_mm(new.mm_to_px(corners)) - corners, axis=1).max())
        if shift <= self.limit:
            return MotionCheck(False, shift, self.calibration, "camera still")
        return MotionCheck(True, shift, new, f"camera moved {shift:.1f} mm at the board corners: re-registered")

    def _undistorted(self, points: np.ndarray) -> np.ndarray:
        k, d = self.calibration.camera_matrix, self.calibration.dist_coeffs
        if k is None or d is None:
            return points
        return cv2.undistortPoints(points.reshape(-1, 1, 2).astype(np.float64), k, d, P=k).reshape(-1, 2)
