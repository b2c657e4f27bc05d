"""How good a calibration is, in board millimetres: residuals, uncertainty estimates, and the gate.

Pixel errors mean nothing to a player; a token is in or out of a space by millimetres, so every
figure here is turned into millimetres on the board.
"""

from __future__ import annotations

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError


def _apply(h: np.ndarray, pts) -> np.ndarray:
    pts = np.asarray(pts, dtype=np.float64).reshape(-1, 2)
    homog = np.hstack([pts, np.ones((len(pts), 1))]) @ np.asarray(h, dtype=np.float64).T
    return homog[:, :2] / homog[:, 2:3]


def board_corners_mm(board: Board) -> np.ndarray:
    """Near-left, near-right, far-right, far-left in board millimetres."""
    w, l = board.size_mm
    return np.array([(0.0, 0.0), (w, 0.0), (w, l), (0.0, l)])


def board_corners_px(homography: np.ndarray, board: Board) -> np.ndarray:
    """Where ``homography`` (board mm -> pixels) puts the board's corners, in board_corners_mm's order."""
    return cv2.perspectiveTransform(board_corners_mm(board).reshape(-1, 1, 2), homography).reshape(-1, 2)


def board_grid_mm(board: Board, step_mm: float | None = None) -> np.ndarray:
    """Points covering the whole board (corners included) every ``step_mm``."""
    step = float(step_mm or settings.load("calibrate")["quality"]["grid_step_mm"])
    w, l = board.size_mm
    xs = np.linspace(0.0, w, max(2, int(round(w / step)) + 1))
    ys = np.linspace(0.0, l, max(2, int(round(l / step)) + 1))
    gx, gy = np.meshgrid(xs, ys)
    return np.column_stack([gx.ravel(), gy.ravel()])


def residual_mm(homography: np.ndarray, points_mm, points_px) -> tuple[float, float]:
    """(RMS, worst) distance in mm between known board points and their pixels mapped back to the board."""
    back = _apply(np.linalg.inv(homography), points_px)
    d = np.linalg.norm(back - np.asarray(points_mm, dtype=np.float64).reshape(-1, 2), axis=1)
    return float(np.sqrt(np.mean(d**2))), float(d.max())


def corner_uncertainty_mm(homography: np.ndarray, board: Board, sigma_px: float, samples: int = 200,
                          seed: int = 0, worst_corner: bool = False) -> float:
    """RMS error over the board (mm) when the four corners are each off by N(0, sigma_px) pixels; with
    ``worst_corner``, the RMS over those draws of the error at the worst board corner instead.

    An estimate for four-point methods, which have no redundant points to measure a residual with.
    """
    corners_mm = board_corners_mm(board)
    corners_px = _apply(homography, corners_mm)
    points = corners_mm if worst_corner else board_grid_mm(board)
    points_px = _apply(homography, points)
    rng = np.random.default_rng(seed)
    sq = []
    for _ in range(samples):
        noisy = corners_px + rng.normal(0.0, sigma_px, corners_px.shape)
        h = homography_from_points(corners_mm, noisy)
        d = np.linalg.norm(_apply(np.linalg.inv(h), points_px) - points, axis=1)
        sq.append(np.max(d) ** 2 if worst_corner else np.mean(d**2))
    return float(np.sqrt(np.mean(sq)))


def homography_from_points(points_mm, points_px) -> np.ndarray:
    """Least-squares homography board mm -> pixels (normalised DLT, exact for four points)."""
    src = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
    dst = np.asarray(points_px, dtype=np.float64).reshape(-1, 2)
    if len(src) < 4:
        raise KnockcamError("a homography needs at least 4 points")
    h, _ = cv2.findHomography(src, dst, 0)
    if h is None or not np.isfinite(h).all() or abs(np.linalg.det(h)) < 1e-15:
        raise KnockcamError("the points do not form a board: no homography (are three of them on one line?)")
    return h / h[2, 2]


def plausible(homography: np.ndarray, board: Board, image_size: tuple[int, int]) -> str | None:
    """None when the board maps to a convex, non-degenerate, mostly visible quadrilateral; else why not."""
    homog = np.hstack([board_corners_mm(board), np.ones((4, 1))]) @ np.asarray(homography, np.float64).T
    with np.errstate(all="ignore"):
        why = plausible_quad(homog[:, :2] / homog[:, 2:3], image_size)
    if why is None and not (np.all(homog[:, 2] > 0) or np.all(homog[:, 2] < 0)):
        return "the board would reach past the horizon"
    return why


def plausible_quad(quad: np.ndarray, image_size: tuple[int, int]) -> str | None:
    """``plausible`` for the board's four corners in the image (pixels: near-left, near-right, far-right,
    far-left)."""
    quad = np.asarray(quad, np.float64).reshape(4, 2)
    if not np.isfinite(quad).all():
        return "the corners are not finite"
    # seen from above (not mirrored), near-left, near-right, far-right, far-left run anticlockwise
    # on screen, which is a negative cross product in image coordinates (y down)
    cross = []
    for i in range(4):
        a, b, c = quad[i], quad[(i + 1) % 4], quad[(i + 2) % 4]
        cross.append((b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]))
    cross = np.array(cross)
    if not (np.all(cross < 0) or np.all(cross > 0)):
        return "the corners do not form a convex quadrilateral (order: near-left, near-right, far-right, far-left)"
    if np.all(cross > 0):
        return ("the corners are mirrored: give them as near-left, near-right, far-right, far-left "
                "(or, if the photo itself is mirrored, turn off the camera's mirroring)")
    w, h = image_size
    area = 0.5 * abs(np.dot(quad[:, 0], np.roll(quad[:, 1], 1)) - np.dot(quad[:, 1], np.roll(quad[:, 0], 1)))
    if area < 0.002 * w * h:
        return "the board would be tiny in the image"
    shortest = float(np.min(np.hypot(*(quad - np.roll(quad, -1, axis=0)).T)))
    if shortest < 0.005 * min(w, h):  # an edited file's corners on top of each other: no camera sees a board so
        return f"a side of the board would be {shortest:.1f} px long"
    centre = quad.mean(axis=0)
    if not (-0.5 * w < centre[0] < 1.5 * w and -0.5 * h < centre[1] < 1.5 * h):
        return "the board would lie outside the image"
    return None


class Refused(KnockcamError):
    """A calibration found but refused for its estimated error; it is kept (``calibration``) as evidence of
    where the board is, within that error (``agrees``)."""

    def __init__(self, reason: str, what_to_do: str, calibration: Calibration):
        super().__init__(reason, what_to_do)
        self.calibration = calibration


class Blurred(Refused):
    """A refusal of a board found in a blurred photo (choose's ``_refuse_if_blurred``): the focus is what to
    mend first, not the camera's distance (live mode says to focus the camera)."""


def error_limit(max_error_mm: float | None = None) -> float:
    """The largest calibration error allowed (mm): ``max_error_mm`` as given (--max-error), else calibrate.yaml's."""
    return float(max_error_mm if max_error_mm is not None else settings.load("calibrate")["quality"]["max_error_mm"])


def check(calibration: Calibration, max_error_mm: float | None = None, what_to_do: str = "",
          because: str = "", refusal: type[Refused] = Refused) -> Calibration:
    """The calibration, or ``refusal`` (a ``Refused``) when its error is larger than allowed (``because``: why,
    when known, as part of the reason)."""
    limit = error_limit(max_error_mm)
    if calibration.error_mm is not None and not calibration.error_mm <= limit:
        hint = what_to_do or "retake the photo with the whole board in view, or give --corners or lay the marker sheet"
        if np.isfinite(calibration.error_mm):
            reason = (f"calibration error {_shown_over(calibration.error_mm, limit)} mm is over the {limit:g} mm limit "
                      f"({calibration.method})")
        else:  # the estimate has nothing to go on (a board a few pixels across, a degenerate outline)
            reason = f"calibration error too large to estimate ({calibration.method})"
        raise refusal(f"{reason}: {because}" if because else reason, hint, calibration)
    return calibration


def _shown_over(value: float, limit: float) -> str:
    """``value`` (above ``limit``) with one decimal, or as many more as it takes to read above the limit: an
    estimate of 3.002 mm is not "3.0 mm over the 3 mm limit"."""
    for digits in range(1, 7):
        if round(value, digits) > limit:
            return f"{value:.{digits}f}"
    return f"{value:.6f}"


def agrees(calibration: Calibration, refused: Calibration | None, board: Board) -> bool:
    """Whether ``calibration`` puts every board corner within ``refused``'s own estimated error of where
    ``refused`` puts it: a calibration refused for its error still says the board lies within that error of
    it, and one of the same camera in the same place that contradicts it is not trusted either (None: the
    board was not found at all, nothing to contradict). Tuning renders (empty-board frames refused, the
    photo's calibration accepted, seeds 34650-34843): of 8 photos, the 2 over 3 mm off lay 5.9 and 6.1 mm from
    the frame's board (estimated 3.8 and 3.5 mm); the 5 within 3 mm whose frame was found 0.3-7.6 mm from it,
    each within the frame's estimate (3.4-13.2 mm)."""
    if refused is None or refused.error_mm is None:
        return True
    return bool(corner_errors_mm(calibration, refused, board).max() <= refused.error_mm)


def corner_errors_mm(estimate: Calibration, truth: Calibration, board: Board) -> np.ndarray:
    """Distance (mm, on the board) between where each true corner is and where the estimate puts it."""
    corners = board_corners_mm(board)
    return np.linalg.norm(estimate.px_to_mm(truth.mm_to_px(corners)) - corners, axis=1)


def board_errors_mm(estimate: Calibration, truth: Calibration, board: Board) -> np.ndarray:
    """The same over a grid of points covering the board."""
    grid = board_grid_mm(board)
    return np.linalg.norm(estimate.px_to_mm(truth.mm_to_px(grid)) - grid, axis=1)
