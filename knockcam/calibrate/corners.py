"""Calibration from four corners the user gives (typed or clicked), in near-left, near-right, far-right, far-left order."""

from __future__ import annotations

import re

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import board_corners_mm, corner_uncertainty_mm, homography_from_points, plausible
from knockcam.errors import KnockcamError

ORDER = "near-left, near-right, far-right, far-left"


def parse_corners(text: str) -> np.ndarray:
    """'x,y x,y x,y x,y' (pixels) -> (4, 2) array; KnockcamError saying the expected form otherwise."""
    numbers = re.findall(r"[-+]?\d+(?:\.\d+)?", text or "")
    pairs = [p for p in re.split(r"[\s;]+", (text or "").strip()) if p]
    if len(numbers) != 8 or len(pairs) not in (4, 8):
        raise KnockcamError(f"--corners needs four x,y pixel pairs ({ORDER}), e.g. \"102,655 1180,640 "
                            f"930,80 310,85\"; got {text!r}")
    return np.array([float(v) for v in numbers]).reshape(4, 2)


def calibrate_corners(corners_px, board: Board, image_size: tuple[int, int], method: str = "corners",
                      camera_matrix=None, dist_coeffs=None) -> Calibration:
    """The homography through the four board corners; its error is an estimate, not a residual.

    Corners are in the photo as taken; with a lens model they are undistorted first.
    """
    pts = np.asarray(corners_px, dtype=np.float64).reshape(-1, 2)
    if pts.shape != (4, 2) or not np.isfinite(pts).all():
        raise KnockcamError(f"four corners are needed ({ORDER})")
    w, h = image_size
    if (pts[:, 0] < -0.5 * w).any() or (pts[:, 0] > 1.5 * w).any() or (pts[:, 1] < -0.5 * h).any() \
            or (pts[:, 1] > 1.5 * h).any():
        raise KnockcamError(f"corners {pts.round(1).tolist()} lie far outside the {w}x{h} image")
    if camera_matrix is not None and dist_coeffs is not None:
        import cv2

        pts = cv2.undistortPoints(pts.reshape(-1, 1, 2), camera_matrix, dist_coeffs, P=camera_matrix).reshape(-1, 2)
    hom = homography_from_points(board_corners_mm(board), pts)
    why = plausible(hom, board, image_size)
    if why:
        raise KnockcamError(f"these corners do not make a board: {why}")
    sigma = float(settings.load("calibrate")["corners"]["sigma_px"])
    err = corner_uncertainty_mm(hom, board, sigma)
    return Calibration(method=method, image_size=(int(w), int(h)), homography=hom, camera_matrix=camera_matrix,
                       dist_coeffs=dist_coeffs, error_mm=err,
                       error_source=f"estimate: RMS over the board if each corner is off by {sigma:g} px (1 sigma)")
