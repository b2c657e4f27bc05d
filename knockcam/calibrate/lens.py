"""Optional lens calibration from photos of a printed ChArUco board (``knockcam calibrate camera``)."""

from __future__ import annotations

import cv2
import numpy as np

from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError

# The printable ChArUco board: 7 x 5 squares of 30 mm, 22 mm markers, DICT_5X5_100 (fits A4 landscape).
SQUARES = (7, 5)
SQUARE_MM = 30.0
MARKER_MM = 22.0
DICT = cv2.aruco.DICT_5X5_100


def charuco_board():
    return cv2.aruco.CharucoBoard(SQUARES, SQUARE_MM, MARKER_MM, cv2.aruco.getPredefinedDictionary(DICT))


def charuco_image(dpi: int = 300) -> np.ndarray:
    """The ChArUco board at true size for printing."""
    ppm = dpi / 25.4
    size = (int(round(SQUARES[0] * SQUARE_MM * ppm)), int(round(SQUARES[1] * SQUARE_MM * ppm)))
    return charuco_board().generateImage(size, marginSize=0, borderBits=1)


def calibrate_lens(images: list[np.ndarray]) -> Calibration:
    """Camera matrix and distortion from several ChArUco photos; error_mm is unused (pixel RMS in error_source)."""
    board = charuco_board()
    detector = cv2.aruco.CharucoDetector(board)
    obj_all, img_all = [], []
    size = None
    for image in images:
        gray = image if image.ndim == 2 else cv2.cvtColor(image[..., :3], cv2.COLOR_BGR2GRAY)
        if size is None:
            size = gray.shape[::-1]
        elif gray.shape[::-1] != size:
            raise KnockcamError("camera calibration photos must all be the same size (one camera, one setting)")
        corners, ids, _, _ = detector.detectBoard(gray)
        if ids is None or len(ids) < 6:
            continue
        obj, img = board.matchImagePoints(corners, ids)
        if obj is not None and len(obj) >= 6 and not any(np.array_equal(img, seen) for seen in img_all):
            obj_all.append(obj)  # (the same photo given twice is one view: it tells nothing more of the lens)
            img_all.append(img)
    if len(obj_all) < 3:
        raise KnockcamError(f"camera: the ChArUco board was found in {len(obj_all)} different photo(s); need at "
                            f"least 3 (print calibration/charuco.png, photograph it at different angles)")
    rms, k, d, _, _ = cv2.calibrateCamera(obj_all, img_all, size, None, None)
    return Calibration(method="lens", image_size=tuple(int(v) for v in size), homography=np.eye(3), camera_matrix=k,
                       dist_coeffs=d.ravel(), error_mm=None,
                       error_source=f"lens only: reprojection RMS {rms:.2f} px over {len(obj_all)} photos")
