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
    """The photo resampled into the canonical top-down view. With a lens or a hump, each canonical
    pixel samples the photo where that point of the board's face is seen (one resampling, and
    nothing lost: undistorting the whole photo first cut off what a barrel lens pushes past its
    frame); on a humped board what rests on the face lands where it is on the board."""
    view = canonical_view(board)
    grey = (114, 114, 114)
    if calibration.hump is not None or (calibration.camera_matrix is not None and calibration.dist_coeffs is not None):
        map_x, map_y = calibration.view_maps(view, int(settings.load("detect")["canonical"]["map_grid_px"]))
        canon = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=grey)
        return canon, view
    px_to_canon = view.mm_to_px @ np.linalg.inv(calibration.homography)
    canon = cv2.warpPerspective(image, px_to_canon, view.size, flags=cv2.INTER_LINEAR,
                                borderMode=cv2.BORDER_CONSTANT, borderValue=grey)
    return canon, view
