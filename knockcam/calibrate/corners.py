"""Calibration from four corners the user gives (typed or clicked), in near-left, near-right, far-right, far-left order.

Corners typed or clicked are a few pixels off, and four points cannot show a lens or a board that
does not lie flat; so the photo's printed lines are then registered from them (``snap``), as the
automatic method does from the outline it finds. On 100 tuning renders (knockcam.synth seeds
3000-3099, lens not given) with the true corners plus 1.5 px of noise, the worst point on the board
was 5.1 mm off at the median with the corners alone, and 49 of the 51 calibrations their estimate
kept were over 3 mm; snapped, 0.86 mm at the median and 5 bad boards among 89 kept (with 4 px of
noise: 13.0 mm and 51 of 51 bad, against 1.0 mm and 6 of 84)."""

from __future__ import annotations

import re
from dataclasses import replace

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


def orders(corners_px) -> list[np.ndarray]:
    """The four points in each order that could be a board's near-left, near-right, far-right, far-left
    seen from above (anticlockwise on screen: four turns), or none when they are not the corners of a
    convex quadrilateral. Corners typed or clicked in another order are one of these."""
    pts = np.asarray(corners_px, dtype=np.float64).reshape(-1, 2)
    if pts.shape != (4, 2) or not np.isfinite(pts).all():
        return []
    centre = pts.mean(axis=0)
    # with y down, the angle about the centre grows clockwise on screen: the board's order runs back
    ring = pts[np.argsort(np.arctan2(pts[:, 1] - centre[1], pts[:, 0] - centre[0]))][::-1]
    edge = np.roll(ring, -1, axis=0) - ring
    cross = edge[:, 0] * np.roll(edge, -1, axis=0)[:, 1] - edge[:, 1] * np.roll(edge, -1, axis=0)[:, 0]
    if not (cross < 0).all():  # one point inside the others' triangle, or three on a line
        return []
    return [np.roll(ring, -turn, axis=0) for turn in range(4)]


def corners_text(corners_px) -> str:
    """Four corners in --corners' form, to a tenth of a pixel."""
    return " ".join(f"{round(float(x), 1):g},{round(float(y), 1):g}"
                    for x, y in np.asarray(corners_px, np.float64).reshape(4, 2))


def calibrate_corners(corners_px, board: Board, image_size: tuple[int, int], method: str = "corners",
                      camera_matrix=None, dist_coeffs=None) -> Calibration:
    """The homography through the four board corners; its error is an estimate, not a residual.

    Corners are in the photo as taken; with a lens model they are undistorted first. The estimate is at
    the board's worst corner, as every method's error is (the limit and the tokens' uncertainty read it
    so). Counted over the whole board instead, on tuning renders (knockcam.synth seed 3191, 0-149, true
    corners + 1.5 px of noise) the true worst corner was 1.63 x the estimate at the median and 50 of the
    64 boards kept were over 3 mm off; at the worst corner, 0.95 x, and 2 of 3 kept (with 3 px of
    noise, 1.85 x: a click that far off is not what the estimate assumes).
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
    err = corner_uncertainty_mm(hom, board, sigma, samples=100, worst_corner=True)
    return Calibration(method=method, image_size=(int(w), int(h)), homography=hom, camera_matrix=camera_matrix,
                       dist_coeffs=dist_coeffs, error_mm=err,
                       error_source=f"estimate: at the worst corner if each corner is off by {sigma:g} px (1 sigma)")


def snap(image: np.ndarray, corners: Calibration, board: Board) -> Calibration:
    """``corners`` (from calibrate_corners) moved onto the photo's printed lines when they confirm
    them (knockcam.calibrate.auto.snap_to_grid): its method stays, its error is the registration's
    estimate. Otherwise (or when that would move a corner further than calibrate.yaml
    corners.snap_max_px) ``corners`` as given, saying why. calibrate.yaml corners.snap turns it off."""
    cfg = settings.load("calibrate")["corners"]
    if not cfg["snap"]:
        return corners
    from knockcam.calibrate.auto import snap_to_grid

    given = corners.corners_px(board.size_mm)  # in the photo as taken (through the lens, if one is given)
    placed = snap_to_grid(image, board, given, corners.camera_matrix, corners.dist_coeffs)
    if placed is None:
        return replace(corners, error_source=f"{corners.error_source}; the printed lines did not confirm the corners")
    # a registration on the wrong printed line moves a corner by a whole space (50 px and more in a
    # 1280 px photo); a typed or clicked corner is never that far off
    limit = float(cfg["snap_max_px"]) * max(corners.image_size) / 1280.0
    moved = float(np.max(np.hypot(*(placed.corners_px(board.size_mm) - given).T)))
    if moved > limit:
        return replace(corners, error_source=f"{corners.error_source}; the printed lines matched {moved:.0f} px away, "
                                             "further than given corners are off, so the corners are used as given")
    return replace(placed, method=corners.method,
                   error_source=f"the given corners snapped to the printed lines: {placed.error_source}")
