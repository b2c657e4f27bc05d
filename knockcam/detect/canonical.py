"""The detector's canonical input: the board warped top-down at a fixed scale (settings: detect.yaml)."""

from __future__ import annotations

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration


def canonical_view(board: Board) -> TopDown:
    cfg = settings.load("detect")["canonical"]
    return TopDown(board, px_per_mm=float(cfg["px_per_mm"]), margin_mm=float(cfg["margin_mm"]))


def warp_to_canonical(image: np.ndarray, calibration: Calibration, board: Board) -> tuple[np.ndarray, TopDown]:
    """The photo resampled into the canonical top-down view (lens distortion removed first). On a
    board that does not lie flat, each canonical pixel samples the photo where that point of the
    humped face is seen, so what rests on the face lands where it is on the board."""
    view = canonical_view(board)
    if calibration.hump is not None:
        w, h = view.size
        v, u = np.mgrid[0:h, 0:w].astype(np.float64)
        px = calibration.mm_to_px(view.to_mm(np.column_stack([u.ravel(), v.ravel()]))).astype(np.float32)
        canon = cv2.remap(image, px[:, 0].reshape(h, w), px[:, 1].reshape(h, w), cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=(114, 114, 114))
        return canon, view
    if calibration.camera_matrix is not None and calibration.dist_coeffs is not None:
        image = cv2.undistort(image, calibration.camera_matrix, calibration.dist_coeffs)
    px_to_canon = view.mm_to_px @ np.linalg.inv(calibration.homography)
    canon = cv2.warpPerspective(image, px_to_canon, view.size, flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=(114, 114, 114))
    return canon, view
