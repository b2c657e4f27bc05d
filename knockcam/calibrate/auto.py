"""Automatic calibration: find the board's outline and which end is GO!, with no help.

Long straight lines (Hough on all edges, and on the edges along the border of the region whose
colours are not the table's) are combined into quadrilaterals whose true aspect ratio, estimated
with the focal length recovered from the quadrilateral itself, matches the board's. Each is tested
in its four orientations against the board file's printed grid (space edges warped top-down); the
winner's sides are refined to sub-pixel accuracy by fitting lines to edge profiles across each side
(on a side whose edge face the camera sees, the top surface's edge is the one a board thickness
inside the table's). Finally the printed grid is registered from there (knockcam.calibrate.grid):
when most of its lines are found, the grid places the corners (with the board's hump, when its
lines show that it does not lie flat) and the reported error is how much they depend on which
lines were seen; when not, the outline is kept and its reported error is how far the grid
disagrees. Among registrations that fit nearly as well, the board's edges decide: one they put
clearly further away is neither chosen nor counted as a rival. When the lens is not known, its
radial distortion is read off the same printed lines (straight on the board, bent by the lens) and,
where it clearly matters, the photo is undistorted and the board found again.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration, Hump, resize_matrix, working_copy
from knockcam.calibrate.grid import (LensFit, corner_spread_mm, fit_grid, fit_grid_bowed, fit_lens, hump_mm,
                                     printed_line_width_px)
from knockcam.calibrate.quality import board_corners_mm, corner_uncertainty_mm, homography_from_points
from knockcam.errors import KnockcamError

NOT_FOUND = "board not found: give --corners or lay the marker sheet (calibration/README.md)"


@dataclass(frozen=True)
class Outline:
    """The board's four corners in pixels (near-left, near-right, far-right, far-left) and how sure we are."""

    corners_px: np.ndarray
    grid_score: float  # printed-grid match of the chosen orientation
    runner_up: float  # the best other orientation's
    edge_points: int  # edge samples behind the sub-pixel fit
    error_mm: float  # estimated error (mm): at the worst corner when placed by the grid, else RMS over the board
    placed_by: str = "edges"  # "grid" when the printed grid's registration placed the corners
    grid_fit: float = 0.0  # share of printed-grid samples found on a printed line (0..1)
    edge_corners_px: np.ndarray | None = None  # the outline's own corners, before the grid
    bow_mm: tuple[float, float] = (0.0, 0.0)  # hump fitted along the board and across it (0 when flat)


def find_outline(image: np.ndarray, board: Board, start_px: np.ndarray | None = None) -> Outline:
    """The board's outline in this photo (undistorted pixels), or KnockcamError when there is none.
    ``start_px``: four corners given by the user (near-left, near-right, far-right, far-left) to
    start from instead of searching the photo for the board."""
    cfg = settings.load("calibrate")["auto"]
    if image is None or image.ndim < 2 or min(image.shape[:2]) < 32:
        raise KnockcamError("not an image to calibrate on (empty or tiny)")
    colour = image if image.ndim == 3 else cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    colour = colour[..., :3]
    h, w = colour.shape[:2]
    scale = min(1.0, float(cfg["work_px"]) / max(w, h))
    if start_px is None:
        seeds, best_score, runner = _search(colour, board, scale, cfg)
    else:
        seeds, best_score, runner = [np.asarray(start_px, np.float64).reshape(4, 2)], 0.0, 0.0
    return _place(colour, board, seeds, best_score, runner, scale, cfg)


def _search(colour: np.ndarray, board: Board, scale: float, cfg: dict) -> tuple[list[np.ndarray], float, float]:
    """Quadrilaterals that may be the board (full-resolution pixels, the likeliest first), the best
    one's printed-grid score and the best other orientation's: KnockcamError when there is none."""
    h, w = colour.shape[:2]
    small = cv2.resize(colour, (int(round(w * scale)), int(round(h * scale))), interpolation=cv2.INTER_AREA) \
        if scale < 1 else colour.copy()
    aspect = board.size_mm[1] / board.size_mm[0]
    mask = _board_mask(small)
    quads = _candidate_quads(small, mask, aspect, cfg) + _region_quads(mask, aspect, cfg)
    if not quads:
        raise KnockcamError(NOT_FOUND)
    grad = _gradient(small)
    scored = []
    for quad in quads:
        raw = [_grid_score(grad, np.roll(quad, -rot, axis=0), board) for rot in range(4)]
        for rot in range(4):
            # the print must fit this way round clearly better than turned half-way: a texture
            # that happens to line up with the grid fits both ways about equally
            score = raw[rot] * min(raw[rot] / max(raw[(rot + 2) % 4], 1e-6), 3.0) ** float(cfg.get("flip_weight", 0.5))
            scored.append((score, rot, np.roll(quad, -rot, axis=0)))
    scored.sort(key=lambda t: -t[0])
    best_score, _, best = scored[0]
    runner = next((sc for sc, _, q in scored[1:] if np.abs(q - best).max() > 0.1 * _size(best)), 0.0)
    if best_score < float(cfg.get("min_grid_score", 1.15)):
        raise KnockcamError(NOT_FOUND)
    # the printed grid fixes orientation and roughly where; the physical edge is the outermost of
    # the nearby candidates (a frame printed just inside the edge makes a second, smaller one)
    near = [q for sc, _, q in scored if np.abs(q - best).max() < 0.03 * _size(best) and sc > 0.7 * best_score]
    # the grid registration also starts from the best-scoring quadrilaterals themselves
    seeds = [max(near, key=_area)]
    for _, _, q in scored:
        if len(seeds) > int(cfg["grid_seeds"]):
            break
        if min(np.abs(q - s).max() for s in seeds) > 2.0:
            seeds.append(q)
    seeds = [q / scale + (0.5 / scale - 0.5) for q in seeds]  # work pixel centres -> full-resolution pixels
    return seeds, float(best_score), float(runner)


def _place(colour: np.ndarray, board: Board, seeds: list[np.ndarray], best_score: float, runner: float,
           scale: float, cfg: dict) -> Outline:
    """The board placed from the first of ``seeds`` (its edges refined, then the printed grid
    registered from it and from the other seeds), with its estimated error."""
    h, w = colour.shape[:2]
    quad = seeds[0]
    mm = board_corners_mm(board)
    try:
        edge_corners, n_points, line_fits = _refine(colour, quad, cfg, first_radius=max(4.0, 2.5 / scale), board=board)
    except KnockcamError:  # no clean edge on some side (an occluder, a table of the board's colour)
        edge_corners, n_points, line_fits = quad, 0, None
    hom = homography_from_points(mm, edge_corners)
    # the printed grid, registered from the refined outline and from the rough quadrilaterals (the
    # registration can settle on a wrong nearby line), each on two renderings of the photo: grey,
    # and the brightest channel, where ink stays dark but a coloured band beside a printed line
    # turns light so that the line stays visible; the best-fitting registration is kept
    starts = [(hom, tuple(float(r) for r in cfg["grid_radii"]))]
    starts += [(homography_from_points(mm, q), tuple(float(r) for r in cfg["grid_search_radii"])) for q in seeds]
    images = (cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY), np.ascontiguousarray(colour.max(axis=2)))
    fits = [(fit_grid(img, h0, board, radii=radii, bow=False), img) for img in images for h0, radii in starts]
    fit, gray = max(fits, key=lambda f: f[0].score)
    if line_fits is not None:
        # a registration that fits about as well and that the board's own edges agree with is preferred
        # over one they put several mm away (motion blur: the lines along the blur fit one line off)
        close = [(f, img) for f, img in fits if f.score >= fit.score - float(cfg["edge_choice_margin"])]
        nearest = min(close, key=lambda f: _corner_apart_mm(hom, f[0].homography, board))
        if _edges_reject(fit, nearest[0], hom, line_fits, board, cfg):
            fit, gray = nearest
    if fit.score < float(cfg["grid_min_score"]):
        if line_fits is None:  # neither the printed grid nor the board's edges
            raise KnockcamError(NOT_FOUND)
        # the grid does not confirm the outline: the outline alone is no better than the distance
        # to where the grid's registration went (a wrong quadrilateral, or an edge the grid disputes)
        err = max(_edge_error_mm(line_fits, edge_corners, board, (w, h), cfg),
                  _corner_apart_mm(hom, fit.homography, board))
        return Outline(corners_px=edge_corners, grid_score=float(best_score), runner_up=float(runner),
                       edge_points=n_points, error_mm=err, placed_by="edges", grid_fit=float(fit.score),
                       edge_corners_px=edge_corners)
    # another registration that fits about as well but puts the corners elsewhere is a doubt
    floor = max(float(cfg["grid_rival_score"]), fit.score - float(cfg["grid_rival_margin"]))
    rivals = [(f, img) for f, img in fits
              if f.score >= floor and _corner_apart_mm(fit.homography, f.homography, board) > 0.5
              and not _edges_reject(f, fit, hom, line_fits, board, cfg)]
    # a board that does not lie flat bends its printed lines (a hump along it, zero at the corners)
    # and no flat fit follows them: when the lines show a hump, it is fitted too
    hump = hump_mm(gray, fit.homography, board)
    if hump >= float(cfg["bow_min_mm"]):
        def up(homography):
            return up_px(homography, board, (w, h))

        radii = tuple(float(r) for r in cfg["bow_radii"])
        bent, bow = fit_grid_bowed(gray, fit.homography, board, up, radii=radii)
        placed = bent.homography
        others = [fit_grid_bowed(img, f.homography, board, up, radii=radii)[0].homography for f, img in rivals]
        err = float(cfg["grid_spread_factor"]) * corner_spread_mm(gray, placed, board, bow=bent.bow)
    else:
        placed, bow = fit.homography, (0.0, 0.0)
        others = [f.homography for f, _ in rivals]
        err = max(float(cfg["grid_spread_factor"]) * corner_spread_mm(gray, placed, board),
                  float(cfg["hump_factor"]) * hump)
    # the estimate at the worst corner: how much the corners depend on which printed lines were
    # seen (scaled: it misses what biases every line alike), a hump too low to fit (it still skews
    # a flat fit a little), never less than the line-position ambiguity, and never less than how
    # far the rival registrations put the corners
    err = max([err, corner_uncertainty_mm(placed, board, float(cfg["grid_ambiguity_px"]), samples=100)]
              + [_corner_apart_mm(placed, other, board) for other in others])
    corners = cv2.perspectiveTransform(mm.reshape(-1, 1, 2), placed).reshape(-1, 2)
    return Outline(corners_px=corners, grid_score=float(best_score), runner_up=float(runner),
                   edge_points=n_points, error_mm=err, placed_by="grid", grid_fit=float(fit.score),
                   edge_corners_px=edge_corners, bow_mm=bow)


def _edges_reject(other, chosen, edge_hom: np.ndarray, line_fits, board: Board, cfg: dict) -> bool:
    """Whether the board's fitted edges put ``other``'s corners clearly further away than ``chosen``'s."""
    if line_fits is None:
        return False
    return (_corner_apart_mm(edge_hom, other.homography, board)
            > _corner_apart_mm(edge_hom, chosen.homography, board) + float(cfg["edge_reject_mm"]))


def _edge_error_mm(line_fits, corners: np.ndarray, board: Board, image_size: tuple[int, int], cfg: dict) -> float:
    """Estimated error (board mm, at the worst corner, as for a grid placement) of an outline placed by
    its edges alone.

    The sides' fit scatter, plus what is systematic: which of several close edges (board
    thickness, a border printed at the edge, shadow) is the top surface's, counted as corner
    uncertainty; a visible edge face adds up to half the thickness range's width of that face.
    Counted over the whole board instead (RMS), the estimate was 0.45-0.65 of this one: on tuning
    renders (bench seeds 21700-21999, empty-board frames) 3 of the 7 boards the edges placed were
    kept at 2.2-2.5 mm while 3.2, 3.4 and 28 mm off; none of the 15 edge placements in those frames
    and in the photos of seeds 21700-21899 was within 3 mm, and at the worst corner every one is
    estimated over 3 mm.
    """
    hom = homography_from_points(board_corners_mm(board), corners)
    face = side_face_px(corners, board, image_size)
    ambiguity = float(np.hypot(float(cfg["edge_ambiguity_px"]), face.max() * float(cfg["thickness_mm"][1]) / 2))
    scatter = _line_fit_error_mm(line_fits, board)
    return float(np.hypot(scatter, corner_uncertainty_mm(hom, board, ambiguity, samples=100, worst_corner=True)))


def _corner_apart_mm(h1: np.ndarray, h2: np.ndarray, board: Board) -> float:
    """The largest distance (board mm) between where two homographies put the board's corners."""
    return float(_moved_mm(board_corners_mm(board), h1, h2).max())


def _moved_mm(points_mm: np.ndarray, h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
    """How far (board mm) each board point lands when imaged by ``h1`` and read back by ``h2``."""
    px = cv2.perspectiveTransform(points_mm.reshape(-1, 1, 2), h1)
    back = cv2.perspectiveTransform(px, np.linalg.inv(h2)).reshape(-1, 2)
    return np.linalg.norm(back - points_mm, axis=1)


def calibrate_auto(image: np.ndarray, board: Board, camera_matrix=None, dist_coeffs=None,
                   start_px: np.ndarray | None = None) -> Calibration:
    """A Calibration from the board outline found automatically: lens distortion removed first if
    known, else read off the printed lines (``fit_lens_from_grid``) and kept when the board found
    through it is estimated to be placed better than without it.

    On tuning renders (seed 3000, 0-199) choosing by the estimate instead of by how much better the
    lens fits the lines took boards over 3 mm from 32 to 22 of 198, bad boards kept from 11 to 4 and
    good boards refused from 17 to 13: a mild lens (k1 and k2 a few hundredths) hardly bends the
    printed lines in the middle of the photo, but moves a corner near the photo's edge by 3-6 mm.

    ``start_px``: the board's corners as the user gave them (in the photo as taken), to start from
    instead of searching for the board (knockcam.calibrate.corners snaps them to the printed lines)."""
    if image is None or not hasattr(image, "ndim") or image.ndim < 2:
        raise KnockcamError("not an image to calibrate on")
    small = working_copy(image)
    if small is image:
        return _calibrate_auto(image, board, camera_matrix, dist_coeffs, start_px)
    full, work = (image.shape[1], image.shape[0]), (small.shape[1], small.shape[0])
    to_work = resize_matrix(full, work)
    if camera_matrix is not None:
        camera_matrix = to_work @ np.asarray(camera_matrix, np.float64)
    if start_px is not None:
        start_px = cv2.perspectiveTransform(np.asarray(start_px, np.float64).reshape(-1, 1, 2), to_work).reshape(-1, 2)
    cal = _calibrate_auto(small, board, camera_matrix, dist_coeffs, start_px)
    return cal.resized(full, error_source=f"{cal.error_source}; found on the photo scaled down to {work[0]}x{work[1]}")


def _calibrate_auto(image: np.ndarray, board: Board, camera_matrix, dist_coeffs,
                    start_px: np.ndarray | None = None) -> Calibration:
    """``calibrate_auto`` on a photo at its working size."""
    lens_note = ""
    if camera_matrix is not None and dist_coeffs is not None:
        image = cv2.undistort(image, camera_matrix, dist_coeffs)
        outline = find_outline(image, board, _undistorted(start_px, camera_matrix, dist_coeffs))
    else:
        outline = find_outline(image, board, start_px)
        # a lens is read off the printed lines only around a board whose place is trusted: placed by the
        # grid, or started from the corners the user gave. Around edges the grid did not confirm, the
        # lines barely found bend any way (tuning render 3001/149: 12% of the samples on a line, k1
        # +0.36, and the board found through that lens 10 mm off while estimated within 3 mm)
        trusted = outline.placed_by == "grid" or start_px is not None
        lens = fit_lens_from_grid(image, outline, board) if trusted else None
        if lens is not None:
            undistorted = cv2.undistort(image, lens.camera_matrix, lens.dist_coeffs)
            try:
                through_lens = find_outline(undistorted, board,
                                            _undistorted(start_px, lens.camera_matrix, lens.dist_coeffs))
            except KnockcamError:  # the board is not found again once undistorted
                through_lens = None
            # the board found again in the undistorted photo, or where the lens fit itself placed it
            # ... unless a hump no board has came with it: the lens and the hump bend the printed lines
            # alike, and one fitted in place of the other (tuning render 3001/153: a 2 mm hump read as k1
            # -0.54 with a 25 mm dip, the board 4.8 mm off while estimated 2.6 mm)
            most = float(settings.load("calibrate")["auto"]["lens_max_hump_mm"])
            found = [o for o in (through_lens, placed_with_lens(lens, outline, board))
                     if o is not None and max(abs(v) for v in o.bow_mm) <= most]
            best = min(found, key=lambda o: o.error_mm) if found else None
            if best is not None and best.error_mm < outline.error_mm:
                outline = best
                image, camera_matrix, dist_coeffs = undistorted, lens.camera_matrix, lens.dist_coeffs
                lens_note = (f"; lens distortion read off the printed lines (k1 {lens.dist_coeffs[0]:+.3f} "
                             f"+/- {lens.k1_sigma:.3f} at a nominal focal length of {lens.camera_matrix[0, 0]:.0f} px)")
    hom = homography_from_points(board_corners_mm(board), outline.corners_px)
    size = (image.shape[1], image.shape[0])
    hump = None
    if any(outline.bow_mm):  # the printed lines showed a hump and it was fitted: tokens rest on it
        hump = Hump(float(outline.bow_mm[0]), float(outline.bow_mm[1]), tuple(board.size_mm),
                    tuple(float(v) for v in up_px(hom, board, size)))
    return Calibration(method="auto", image_size=size, homography=hom, camera_matrix=camera_matrix,
                       dist_coeffs=dist_coeffs, error_mm=outline.error_mm,
                       error_source=_error_source(outline) + lens_note, hump=hump,
                       grid_share=round(float(outline.grid_fit), 2) if outline.placed_by == "grid" else None)


def _undistorted(points_px: np.ndarray | None, camera_matrix, dist_coeffs) -> np.ndarray | None:
    """Pixels of the photo as taken -> the same points in the photo undistorted by this lens."""
    if points_px is None:
        return None
    pts = np.asarray(points_px, np.float64).reshape(-1, 1, 2)
    return cv2.undistortPoints(pts, camera_matrix, dist_coeffs, P=camera_matrix).reshape(-1, 2)


def blurred_lines_px(image: np.ndarray, calibration: Calibration, board: Board) -> float | None:
    """How wide the printed lines look where ``calibration`` puts them, at the size the photo is
    searched at (grid.printed_line_width_px), when that is wider than calibrate.yaml
    quality.blurred_line_px (a blurred photo); None when the photo is sharp."""
    small = working_copy(image)
    if small is not image:
        calibration = calibration.resized((small.shape[1], small.shape[0]))
    width = printed_line_width_px(small, calibration, board)
    return width if width > float(settings.load("calibrate")["quality"]["blurred_line_px"]) else None


def fit_lens_from_grid(image: np.ndarray, outline: Outline, board: Board) -> LensFit | None:
    """The lens distortion the printed lines show around ``outline`` (found in a photo whose lens is
    unknown), fitted with the board's hump, which bends the lines too; None when it is too small to
    matter or too uncertain (calibrate.yaml auto.lens_*). Whether it is used is calibrate_auto's
    call: the lines alone are a poor judge (photos with no distortion still show k1 at 5-13
    standard errors, and a real mild lens lowers the lines' RMS offset by only 1-5%)."""
    cfg = settings.load("calibrate")["auto"]
    if not cfg.get("lens_fit", True):
        return None
    size = (image.shape[1], image.shape[0])
    hom = homography_from_points(board_corners_mm(board), outline.corners_px)
    gray = cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image

    def up(h):
        return up_px(h, board, size)

    lens = fit_lens(gray, hom, board, up=up)
    if (lens.shift_px < float(cfg["lens_min_shift_px"])
            or abs(float(lens.dist_coeffs[0])) < float(cfg["lens_min_z"]) * lens.k1_sigma):
        return None
    return lens


def placed_with_lens(lens: LensFit, outline: Outline, board: Board) -> Outline | None:
    """The board where the lens fit placed it (``lens``: fitted on the photo's own pixels, printed lines
    and lens together), None when too few of the printed grid's samples sit on a line there.

    Finding the board again in the undistorted photo registers the grid on resampled pixels, where
    the thin printed lines blur: on the lens_distortion fixture 43% of the samples sit on a line
    there (the grid then does not confirm the outline, and the edges alone put it 21 mm off) against
    59% in the lens fit, whose corners are within 2.8 mm. The error is estimated as for a grid
    placement (find_outline), from the lens fit's own corner spread."""
    cfg = settings.load("calibrate")["auto"]
    if lens.score < float(cfg["grid_min_score"]):
        return None
    placed = lens.homography
    err = float(cfg["grid_spread_factor"]) * lens.spread_mm
    err = max(err, corner_uncertainty_mm(placed, board, float(cfg["grid_ambiguity_px"]), samples=100))
    corners = cv2.perspectiveTransform(board_corners_mm(board).reshape(-1, 1, 2), placed).reshape(-1, 2)
    return Outline(corners_px=corners, grid_score=outline.grid_score, runner_up=outline.runner_up,
                   edge_points=outline.edge_points, error_mm=err, placed_by="grid", grid_fit=float(lens.score),
                   edge_corners_px=None, bow_mm=tuple(float(v) for v in lens.hump))


def snap_to_grid(image: np.ndarray, board: Board, corners_px, camera_matrix=None,
                 dist_coeffs=None) -> Calibration | None:
    """The board placed by the printed grid, starting from four corners the user gave (photo pixels,
    near-left, near-right, far-right, far-left) instead of a searched outline: the same registration,
    lens, hump and error estimate as the automatic method. None when the printed grid does not
    confirm the corners (a blurred photo, a board hidden under things)."""
    try:
        cal = calibrate_auto(image, board, camera_matrix, dist_coeffs, start_px=np.asarray(corners_px, np.float64))
    except KnockcamError:
        return None
    return cal if cal.grid_share is not None else None


def _error_source(outline: Outline) -> str:
    cfg = settings.load("calibrate")["auto"]
    if outline.placed_by == "grid":
        bowed = (f"with the board's hump fitted ({outline.bow_mm[0]:.1f} mm along, {outline.bow_mm[1]:.1f} mm across); "
                 if any(outline.bow_mm) else "")
        return (f"estimate: placed by the printed grid ({outline.grid_fit:.0%} of its samples on a printed line); "
                f"{bowed}the largest of {cfg['grid_spread_factor']} x how far the corners move over resamples of "
                f"the printed lines, {cfg['hump_factor']} x any hump too low to fit, {cfg['grid_ambiguity_px']} px "
                f"per corner, and how far another registration that fits about as well puts them (worst corner)")
    return (f"estimate: scatter of {outline.edge_points} edge points about the four fitted sides, plus "
            f"{cfg['edge_ambiguity_px']} px of edge ambiguity per corner and half a board thickness of any edge face "
            f"in view (worst corner); the printed grid "
            f"did not confirm it ({outline.grid_fit:.0%} of its samples on a printed line)")


def _size(quad: np.ndarray) -> float:
    return float(np.linalg.norm(quad[2] - quad[0]))


def _area(quad: np.ndarray) -> float:
    x, y = quad[:, 0], quad[:, 1]
    return float(0.5 * abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


# --- candidates ----------------------------------------------------------------------------

def _edges(small: np.ndarray) -> np.ndarray:
    """Canny edges of each Lab channel, thresholds from that channel's own gradient statistics."""
    lab = cv2.cvtColor(cv2.GaussianBlur(small, (5, 5), 0), cv2.COLOR_BGR2Lab)
    edges = np.zeros(small.shape[:2], np.uint8)
    for c in range(3):
        ch = lab[..., c]
        gx = cv2.Sobel(ch, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(ch, cv2.CV_32F, 0, 1, ksize=3)
        mag = np.sqrt(gx * gx + gy * gy)
        hi = max(30.0 if c == 0 else 40.0, float(np.percentile(mag, 92)))
        edges |= cv2.Canny(ch, 0.4 * hi, hi, L2gradient=True)
    return edges


def _hough_lines(edges: np.ndarray, n: int, per_direction: int, outermost: int = 0) -> np.ndarray:
    """Up to ``n`` distinct straight lines (rho, theta), each re-fitted to the edge pixels near it.

    Suppression is tight on purpose: a board's edge often runs a few pixels from a printed line.
    At most ``per_direction`` lines per 10-degree direction band: otherwise the board's long sides
    and the printed lines along them take every place and its short ends are never tried. Then, in
    the ``outermost`` most crowded bands, the two outermost lines Hough found there are added too:
    a board's side is the last of its printed lines' family, and a short, soft one (the far end of
    an oblique view) gathers fewer votes than the printed lines it parallels.
    """
    found = cv2.HoughLines(edges, 1, np.pi / 360, threshold=int(0.08 * min(edges.shape)))
    if found is None:
        return np.zeros((0, 2))
    ys, xs = np.nonzero(edges)
    pix = np.column_stack([xs, ys]).astype(np.float64)
    lines: list[tuple[float, float]] = []
    per_band = np.zeros(18, int)
    considered = found[:n * 40, 0, :]
    bands = (np.degrees(considered[:, 1]) % 180 // 10).astype(int)

    def add(rho: float, theta: float) -> None:
        if any(_same_line((rho, theta), other, 3.0, np.radians(1.5)) for other in lines):
            return
        lines.append(_refit_line(pix, rho, theta))

    for (rho, theta), band in zip(considered, bands):
        if per_band[band] >= per_direction:
            continue
        before = len(lines)
        add(float(rho), float(theta))
        if len(lines) > before:
            per_band[band] += 1
            if len(lines) >= n:
                break
    if outermost:
        h, w = edges.shape
        for band in np.argsort(-per_band, kind="stable")[:outermost]:
            if per_band[band] < 2:
                break
            sel = considered[bands == band]
            offset = sel[:, 0] - ((w - 1) / 2 * np.cos(sel[:, 1]) + (h - 1) / 2 * np.sin(sel[:, 1]))
            for k in (int(np.argmin(offset)), int(np.argmax(offset))):
                add(float(sel[k, 0]), float(sel[k, 1]))
    return np.array(lines)


def _refit_line(pix: np.ndarray, rho: float, theta: float) -> tuple[float, float]:
    """The line (rho, theta) re-fitted to the edge pixels within 2 px of it, unless that turns it more than 3 degrees."""
    nrm = np.array([np.cos(theta), np.sin(theta)])
    near = pix[np.abs(pix @ nrm - rho) <= 2.0]
    if len(near) >= 20:
        c = near.mean(axis=0)
        _, _, vt = np.linalg.svd(near - c, full_matrices=False)
        nrm2 = np.array([-vt[0][1], vt[0][0]])
        if abs(nrm2 @ nrm) > np.cos(np.radians(3)):
            nrm = nrm2 if nrm2 @ nrm > 0 else -nrm2
            rho, theta = float(c @ nrm), float(np.arctan2(nrm[1], nrm[0]))
    return float(rho), float(theta)


def _same_line(l1, l2, drho: float, dtheta: float) -> bool:
    (r1, t1), (r2, t2) = l1, l2
    d = (t1 - t2) % (2 * np.pi)
    if min(d, 2 * np.pi - d) < dtheta:
        return abs(r1 - r2) < drho
    d = (t1 - t2 + np.pi) % (2 * np.pi)
    if min(d, 2 * np.pi - d) < dtheta:
        return abs(r1 + r2) < drho
    return False


def _crossings(lines: np.ndarray, image_size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where every two (rho, theta) lines cross, as (x, y) tables [a, b], and whether that lies near the
    image (within 5% of its size outside it); parallel lines cross far away."""
    w, h = image_size
    rho, th = lines[:, 0], lines[:, 1]
    det = np.cos(th)[:, None] * np.sin(th)[None, :] - np.sin(th)[:, None] * np.cos(th)[None, :]
    det = np.where(np.abs(det) < 1e-9, 1e-9, det)
    cx = (rho[:, None] * np.sin(th)[None, :] - rho[None, :] * np.sin(th)[:, None]) / det
    cy = (np.cos(th)[:, None] * rho[None, :] - np.cos(th)[None, :] * rho[:, None]) / det
    near = (cx > -0.05 * w) & (cx < 1.05 * w) & (cy > -0.05 * h) & (cy < 1.05 * h)
    return cx, cy, near


def _square_to_quad(quads: np.ndarray) -> np.ndarray:
    """(N, 3, 3) homographies taking the unit square's corners to each quad's (Heckbert's closed form)."""
    x, y = quads[..., 0], quads[..., 1]
    dx1, dx2, dx3 = x[:, 1] - x[:, 2], x[:, 3] - x[:, 2], x[:, 0] - x[:, 1] + x[:, 2] - x[:, 3]
    dy1, dy2, dy3 = y[:, 1] - y[:, 2], y[:, 3] - y[:, 2], y[:, 0] - y[:, 1] + y[:, 2] - y[:, 3]
    den = dx1 * dy2 - dx2 * dy1
    den = np.where(np.abs(den) < 1e-12, 1e-12, den)
    g = (dx3 * dy2 - dx2 * dy3) / den
    h = (dx1 * dy3 - dx3 * dy1) / den
    hom = np.zeros((len(quads), 3, 3))
    hom[:, 0] = np.column_stack([x[:, 1] - x[:, 0] + g * x[:, 1], x[:, 3] - x[:, 0] + h * x[:, 3], x[:, 0]])
    hom[:, 1] = np.column_stack([y[:, 1] - y[:, 0] + g * y[:, 1], y[:, 3] - y[:, 0] + h * y[:, 3], y[:, 0]])
    hom[:, 2] = np.column_stack([g, h, np.ones(len(quads))])
    return hom


def quad_aspects(quads: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
    """True length ratios |side 0-1| / |side 1-2| of the rectangles seen as ``quads`` (N, 4, 2).

    The focal length is recovered from each rectangle's right angles (principal point at the image
    centre); a near-frontal view, where that fails, falls back to a typical focal length.
    """
    w, h = image_size
    centre = np.array([(w - 1) / 2, (h - 1) / 2])
    hom = _square_to_quad(np.asarray(quads, np.float64) - centre)
    a1, a2 = hom[:, 0, 0], hom[:, 0, 1]
    b1, b2 = hom[:, 1, 0], hom[:, 1, 1]
    c1, c2 = hom[:, 2, 0], hom[:, 2, 1]
    big = max(w, h) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        f2 = -(a1 * a2 + b1 * b2) / (c1 * c2)
    f2 = np.where(np.isfinite(f2) & (f2 > 0.09 * big) & (f2 < 25 * big), f2, big)
    s1 = (a1 * a1 + b1 * b1) / f2 + c1 * c1
    s2 = (a2 * a2 + b2 * b2) / f2 + c2 * c2
    return np.sqrt(s1 / s2)


def quad_aspect(quad: np.ndarray, image_size: tuple[int, int]) -> float:
    """True length ratio |side 0-1| / |side 1-2| of one rectangle seen as ``quad``."""
    return float(quad_aspects(np.asarray(quad, np.float64)[None], image_size)[0])


def _candidate_quads(small: np.ndarray, mask: np.ndarray, aspect: float, cfg: dict) -> list[np.ndarray]:
    """Plausible board quadrilaterals (work pixels, anticlockwise on screen), best edge support first.

    Lines come from all edges and, separately, from the edges along the border of the not-table
    ``mask``: there neither a textured table nor the printed lines inside the board crowd out
    the board's own sides.
    """
    h, w = small.shape[:2]
    edges = _edges(small)
    dist = cv2.distanceTransform(255 - edges, cv2.DIST_L2, 3)
    n, per_direction = int(cfg["max_lines"]), int(cfg["max_lines_per_direction"])
    band = int(cfg["mask_band_px"])
    kernel = np.ones((2 * band + 1, 2 * band + 1), np.uint8)
    rim = cv2.dilate(mask, kernel) & ~cv2.erode(mask, kernel)
    lines = _hough_lines(edges, n, per_direction, int(cfg.get("outermost_bands", 0)))
    for line in _hough_lines(edges & rim, n, per_direction):
        if not any(_same_line(line, other, 3.0, np.radians(1.5)) for other in lines):
            lines = np.vstack([lines, line[None]]) if len(lines) else line[None]
    if len(lines) < 4:
        return []
    theta = lines[:, 1]
    ii, jj = np.triu_indices(len(lines), 1)
    dtheta = np.abs((theta[ii] - theta[jj] + np.pi / 2) % np.pi - np.pi / 2)
    keep = dtheta < np.radians(float(cfg.get("max_opposite_angle_deg", 85)))  # steep views converge a lot
    ii, jj = ii[keep], jj[keep]
    # a quadrilateral's four corners must all lie near the image
    cx, cy, near = _crossings(lines, (w, h))
    # two pairs of sides (i, j) and (k, m) make one when k and m each cross both i and j near the
    # image, along an edge-supported stretch (checked again exactly below; this only prunes)
    side_ok = _supported_stretches(near[ii] & near[jj], ii, jj, lines, cx, cy, dist,
                                   _MIN_SIDE_SUPPORT - _PRUNING_SLACK)
    pairs_ok = side_ok[:, ii] & side_ok[:, jj]  # [p, q]: both lines of pair q are good sides between pair p's
    pa, pb = np.nonzero(np.triu(pairs_ok & pairs_ok.T, 1))
    mean_dir = np.angle(np.exp(2j * theta[ii]) + np.exp(2j * theta[jj])) / 2
    ddir = np.abs((mean_dir[pa] - mean_dir[pb] + np.pi / 2) % np.pi - np.pi / 2)
    ok = ddir > np.radians(float(cfg.get("min_pair_angle_deg", 15)))
    pa, pb = pa[ok], pb[ok]
    i, j, k, m = ii[pa], jj[pa], ii[pb], jj[pb]
    ok = (i != k) & (i != m) & (j != k) & (j != m)
    i, j, k, m = i[ok], j[ok], k[ok], m[ok]
    if len(i) == 0:
        return []
    quads = np.stack([np.stack([cx[a, b], cy[a, b]], axis=-1) for a, b in ((i, k), (k, j), (j, m), (m, i))],
                     axis=1)  # (N, 4, 2)
    e = np.roll(quads, -1, axis=1) - quads
    crossz = e[:, :, 0] * np.roll(e, -1, axis=1)[:, :, 1] - e[:, :, 1] * np.roll(e, -1, axis=1)[:, :, 0]
    convex = (crossz > 0).all(axis=1) | (crossz < 0).all(axis=1)
    quads, crossz = quads[convex], crossz[convex]
    flip = crossz[:, 0] > 0  # make every quad anticlockwise on screen (negative z in image coordinates)
    quads[flip] = quads[flip][:, ::-1]
    x, y = quads[..., 0], quads[..., 1]
    area = 0.5 * np.abs((x * np.roll(y, -1, 1) - np.roll(x, -1, 1) * y).sum(axis=1))
    quads = quads[area >= float(cfg["min_area_frac"]) * w * h]
    if len(quads) == 0:
        return []
    r = quad_aspects(quads, (w, h))
    r = np.maximum(r, 1 / r)
    fit = np.abs(np.log(r / aspect))
    sel = fit <= float(cfg["aspect_tolerance"])
    quads, fit, area = quads[sel], fit[sel], area[area >= float(cfg["min_area_frac"]) * w * h][sel]
    if len(quads) == 0:
        return []
    support = _side_support(quads, np.roll(quads, -1, axis=1), dist)  # (N, 4)
    # edge support first, then the true shape, then size: the board is the largest such quad
    score = support.mean(axis=1) + 0.5 * support.min(axis=1) - 2.0 * fit + 0.5 * area / (w * h)
    good = support.min(axis=1) >= _MIN_SIDE_SUPPORT
    quads, score = quads[good], score[good]
    order = np.argsort(-score, kind="stable")
    quads = quads[order]
    # the same quadrilateral in any of its four rotations: every corner within 3 px
    rolled = np.stack([np.roll(quads, rr, axis=1) for rr in range(4)], axis=1)  # (N, 4, 4, 2)
    kept: list[int] = []
    limit = int(cfg.get("max_candidates", 120))
    for idx in range(len(quads)):
        if kept:
            d = np.abs(rolled[kept] - quads[idx][None, None]).max(axis=(2, 3)).min(axis=1)
            if d.min() <= 3:
                continue
        kept.append(idx)
        if len(kept) >= limit:
            break
    return [quads[i] for i in kept]


_MIN_SIDE_SUPPORT = 0.25  # share of a quadrilateral side's samples on an edge pixel (every side)
_PRUNING_SLACK = 0.125  # the running-sum share fell at most 0.1 below the 40-sample one (300 random edge images)


def _side_support(a: np.ndarray, b: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Share of 40 samples between points ``a`` and ``b`` (..., 2) that lie on an edge pixel (1.5 px)."""
    h, w = dist.shape
    t = np.linspace(0.05, 0.95, 40)
    s = a[..., None, :] + t[:, None] * (b - a)[..., None, :]
    xi = np.clip(np.round(s[..., 0]).astype(int), 0, w - 1)
    yi = np.clip(np.round(s[..., 1]).astype(int), 0, h - 1)
    inside = (s[..., 0] >= 0) & (s[..., 0] < w) & (s[..., 1] >= 0) & (s[..., 1] < h)
    return ((dist[yi, xi] <= 1.5) & inside).mean(axis=-1)


def _supported_stretches(crosses: np.ndarray, ii: np.ndarray, jj: np.ndarray, lines: np.ndarray, cx: np.ndarray,
                         cy: np.ndarray, dist: np.ndarray, min_support: float, step: float = 0.5) -> np.ndarray:
    """[p, k]: line k crosses both lines of pair p near the image and is edge-supported between them.

    Each line's edge pixels are counted once along its whole length (a running sum every ``step``
    px), so the share on any stretch is a difference of two sums: this prunes millions of
    quadrilaterals cheaply before the exact test (``_side_support``).
    """
    h, w = dist.shape
    reach = float(np.hypot(w, h)) + 1.0
    u = np.arange(-reach, reach, step)
    rho, th = lines[:, 0], lines[:, 1]
    foot = np.column_stack([rho * np.cos(th), rho * np.sin(th)])
    along = np.column_stack([-np.sin(th), np.cos(th)])
    x = foot[:, None, 0] + u[None] * along[:, None, 0]
    y = foot[:, None, 1] + u[None] * along[:, None, 1]
    inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    on = inside & (dist[np.clip(np.round(y).astype(int), 0, h - 1), np.clip(np.round(x).astype(int), 0, w - 1)] <= 1.5)
    running = np.concatenate([np.zeros((len(lines), 1)), np.cumsum(on, axis=1)], axis=1)
    p, k = np.nonzero(crosses)

    def position(a):  # index along line k of its crossing with line a
        return ((cx[k, a] - foot[k, 0]) * along[k, 0] + (cy[k, a] - foot[k, 1]) * along[k, 1] + reach) / step

    ua, ub = position(ii[p]), position(jj[p])
    lo, hi = np.minimum(ua, ub), np.maximum(ua, ub)
    lo, hi = lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo)
    a = np.clip(np.round(lo).astype(int), 0, len(u))
    b = np.clip(np.round(hi).astype(int), 0, len(u))
    share = (running[k, b] - running[k, a]) / np.maximum(b - a, 1)
    out = np.zeros_like(crosses)
    out[p, k] = share >= min_support
    return out


def _board_mask(small: np.ndarray) -> np.ndarray:
    """Where the image is not table (uint8 0/255): the table's colours are learnt from the image
    border (k-means in Lab), everything far from all of them is a candidate board region."""
    h, w = small.shape[:2]
    lab = cv2.cvtColor(cv2.GaussianBlur(small, (0, 0), 2.0), cv2.COLOR_BGR2Lab).astype(np.float32)
    b = max(4, int(0.03 * min(h, w)))
    border = np.concatenate([lab[:b].reshape(-1, 3), lab[-b:].reshape(-1, 3), lab[:, :b].reshape(-1, 3),
                             lab[:, -b:].reshape(-1, 3)])
    k = 4
    crit = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 20, 1.0)
    sample = border[:: max(1, len(border) // 20000)]
    cv2.setRNGSeed(0)  # k-means++ draws from OpenCV's RNG: the same photo must always give the same answer
    _, labels, centres = cv2.kmeans(sample, k, None, crit, 2, cv2.KMEANS_PP_CENTERS)
    spread = np.array([np.sqrt(np.mean(np.sum((sample[labels.ravel() == i] - centres[i]) ** 2, axis=1)) + 1e-6)
                       if np.any(labels.ravel() == i) else 1e6 for i in range(k)])
    dist = np.min(np.linalg.norm(lab[:, :, None, :] - centres[None, None], axis=3) / (spread + 4.0), axis=2)
    img8 = np.clip(dist * 40, 0, 255).astype(np.uint8)
    _, mask = cv2.threshold(img8, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    size = max(3, int(0.012 * min(h, w)) | 1)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((size, size), np.uint8))
    return cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3 * size, 3 * size), np.uint8))


def _region_quads(mask: np.ndarray, aspect: float, cfg: dict) -> list[np.ndarray]:
    """Quadrilaterals around the largest not-table regions of ``mask``."""
    h, w = mask.shape[:2]
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    out = []
    for c in sorted(contours, key=cv2.contourArea, reverse=True)[:4]:
        if cv2.contourArea(c) < float(cfg["min_area_frac"]) * w * h:
            break
        try:
            quad = cv2.approxPolyN(cv2.convexHull(c), 4).reshape(-1, 2).astype(np.float64)
        except cv2.error:
            continue
        if len(quad) != 4:
            continue
        x, y = quad[:, 0], quad[:, 1]
        if 0.5 * (np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))) > 0:
            quad = quad[::-1].copy()  # anticlockwise on screen
        r = quad_aspect(quad, (w, h))
        if abs(np.log(max(r, 1 / r) / aspect)) <= float(cfg["aspect_tolerance"]) * 2:
            out.append(quad)
    return out


# --- orientation and choice ----------------------------------------------------------------

def _gradient(small: np.ndarray) -> np.ndarray:
    lab = cv2.cvtColor(small, cv2.COLOR_BGR2Lab).astype(np.float32)
    mag = np.zeros(small.shape[:2], np.float32)
    for c in range(3):
        gx = cv2.Sobel(lab[..., c], cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(lab[..., c], cv2.CV_32F, 0, 1, ksize=3)
        mag += gx * gx + gy * gy
    return np.sqrt(mag)


_TEMPLATES: dict = {}
_PEAK = settings.load("calibrate")["auto"].get("edge_peak", "outermost")
_PEAK_FRAC = float(settings.load("calibrate")["auto"].get("edge_peak_fraction", 0.5))


def _template(board: Board, ppm: float) -> tuple[np.ndarray, np.ndarray]:
    """The printed grid top-down: a mask of space edges, and a mask of the board inside."""
    key = (board.source, board.size_mm, len(board.spaces), ppm)
    if key not in _TEMPLATES:
        w_mm, l_mm = board.size_mm
        size = (int(round(w_mm * ppm)), int(round(l_mm * ppm)))
        lines = np.zeros(size[::-1], np.uint8)
        for space in board.spaces:
            poly = np.array([(x * ppm, (l_mm - y) * ppm) for x, y in space.polygon], np.float64)
            cv2.polylines(lines, [np.round(poly * 4).astype(np.int32)], True, 1, 1, shift=2)
        inside = np.zeros_like(lines)
        m = int(round(6 * ppm))
        inside[m:-m, m:-m] = 1
        lines &= inside
        _TEMPLATES[key] = (lines.astype(bool), inside.astype(bool))
    return _TEMPLATES[key]


def _grid_score(grad: np.ndarray, quad: np.ndarray, board: Board, ppm: float = 0.5) -> float:
    """How much more edge there is on the board file's space edges than elsewhere on the board."""
    lines, inside = _template(board, ppm)
    w_mm, l_mm = board.size_mm
    src = board_corners_mm(board)
    topdown = np.column_stack([src[:, 0] * ppm, (l_mm - src[:, 1]) * ppm])
    hom = cv2.getPerspectiveTransform(quad.astype(np.float32), topdown.astype(np.float32))
    warped = cv2.warpPerspective(grad, hom, lines.shape[::-1], flags=cv2.INTER_LINEAR)
    on = warped[lines].mean()
    off = warped[inside & ~cv2.dilate(lines.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)].mean()
    return float(on / (off + 1.0))


# --- sub-pixel refinement ------------------------------------------------------------------

def side_face_px(corners: np.ndarray, board: Board, image_size: tuple[int, int]) -> np.ndarray:
    """Per side (near, right, far, left): how far (px) the board's top edge lies inside the silhouette
    per millimetre of board thickness; 0 for sides whose edge face the camera cannot see.

    The camera is recovered from the quadrilateral (focal length from its right angles, principal
    point at the image centre); going 1 mm down from the top edge moves outward on a visible side.
    """
    w, h = image_size
    hom = homography_from_points(board_corners_mm(board), corners)
    shift = np.array([[1, 0, -(w - 1) / 2], [0, 1, -(h - 1) / 2], [0, 0, 1.0]])
    centred = shift @ hom
    c3 = shift @ up_px(hom, board, image_size)  # image (homogeneous, centred) of a 1 mm step up
    wmm, lmm = board.size_mm
    mm = board_corners_mm(board)
    out = np.zeros(4)
    for a in range(4):
        mid = (mm[a] + mm[(a + 1) % 4]) / 2
        top = centred @ np.array([mid[0], mid[1], 1.0])
        down = top - c3
        p0, p1 = top[:2] / top[2], down[:2] / down[2]
        e = corners[(a + 1) % 4] - corners[a]
        nrm = np.array([-e[1], e[0]]) / max(np.linalg.norm(e), 1e-9)  # outward (anticlockwise quad)
        out[a] = max(0.0, float((p1 - p0) @ nrm))
    return out


def up_px(homography: np.ndarray, board: Board, image_size: tuple[int, int]) -> np.ndarray:
    """The image (homogeneous, on the scale of ``homography`` with its last term 1) of a 1 mm step
    up from the board, for the camera recovered from the homography (focal length from the
    board's right angles, principal point at the image centre)."""
    w, h = image_size
    hom = np.asarray(homography, np.float64) / homography[2, 2]
    shift = np.array([[1, 0, -(w - 1) / 2], [0, 1, -(h - 1) / 2], [0, 0, 1.0]])
    corners = cv2.perspectiveTransform(board_corners_mm(board).reshape(-1, 1, 2), hom).reshape(-1, 2)
    f = _focal(corners, image_size)
    kinv = np.diag([1 / f, 1 / f, 1.0])
    b = kinv @ shift @ hom
    s = 1.0 / np.linalg.norm(b[:, 0])
    if b[2, 2] * s < 0:
        s = -s
    r3 = np.cross(b[:, 0] * s, b[:, 1] * s)
    if -(r3 @ (b[:, 2] * s)) < 0:  # the camera is above the board: up is the side it sits on
        r3 = -r3
    return np.linalg.inv(shift) @ np.linalg.inv(kinv) @ r3 / s


def _focal(corners: np.ndarray, image_size: tuple[int, int]) -> float:
    w, h = image_size
    centre = np.array([(w - 1) / 2, (h - 1) / 2])
    hom = _square_to_quad(np.asarray(corners, np.float64)[None] - centre)[0]
    a1, a2, b1, b2, c1, c2 = hom[0, 0], hom[0, 1], hom[1, 0], hom[1, 1], hom[2, 0], hom[2, 1]
    big = max(w, h) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        f2 = -(a1 * a2 + b1 * b2) / (c1 * c2)
    if not np.isfinite(f2) or not 0.09 * big < f2 < 25 * big:
        f2 = float(max(w, h)) ** 2 * 0.8
    return float(np.sqrt(f2))


def _refine(colour: np.ndarray, corners: np.ndarray, cfg: dict, first_radius: float, board: Board | None = None):
    """Fit each side to sub-pixel edge positions; corners are the fitted lines' intersections."""
    img = cv2.GaussianBlur(colour, (0, 0), 0.7).astype(np.float32)
    fits = None
    n_total = 0
    last = float(cfg["refine_search_px"])
    size = (colour.shape[1], colour.shape[0])
    for radius in (max(first_radius, last), max(last, first_radius / 2), last):
        face = side_face_px(corners, board, size) if board is not None else np.zeros(4)
        fits = []
        for a in range(4):
            fits.append(_fit_side(img, corners[a], corners[(a + 1) % 4], radius, int(cfg["edge_samples"]),
                                  face_px_per_mm=float(face[a]), cfg=cfg))
        if any(f is None for f in fits):
            raise KnockcamError(NOT_FOUND)
        new = np.array([_line_intersection(fits[(a - 1) % 4], fits[a]) for a in range(4)])
        if not np.isfinite(new).all() or np.abs(new - corners).max() > 4 * radius + 5:
            raise KnockcamError(NOT_FOUND)
        corners = new
        n_total = sum(f[3] for f in fits)
    return corners, n_total, fits


def _fit_side(img: np.ndarray, p: np.ndarray, q: np.ndarray, radius: float, samples: int,
              face_px_per_mm: float = 0.0, cfg: dict | None = None):
    """A robust line through the strongest-edge positions on profiles across side p-q.

    Returns (point, unit direction, residual std, number of points, spread along the side) or None.
    """
    h, w = img.shape[:2]
    d = q - p
    length = np.linalg.norm(d)
    if length < 10:
        return None
    u = d / length
    nrm = np.array([-u[1], u[0]])  # outward for an anticlockwise-on-screen quad (image y down)
    t = np.linspace(0.06, 0.94, samples)
    step = 0.25
    if face_px_per_mm > 0:  # see both the table's edge and the top surface's, a thickness apart
        radius = max(radius, float((cfg or {}).get("thickness_mm", (1.0, 7.0))[1]) * face_px_per_mm + 1.5)
    offs = np.arange(-radius, radius + step / 2, step)
    base = p[None, :] + t[:, None] * d[None, :]
    xs = (base[:, None, 0] + offs[None, :] * nrm[0]).astype(np.float32)
    ys = (base[:, None, 1] + offs[None, :] * nrm[1]).astype(np.float32)
    prof = cv2.remap(img, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)  # (samples, m, 3)
    deriv = np.gradient(prof, step, axis=1)
    mag = np.sqrt((deriv**2).sum(axis=2))
    valid = (xs.min(1) >= 1) & (xs.max(1) <= w - 2) & (ys.min(1) >= 1) & (ys.max(1) <= h - 2)
    valid &= mag.max(axis=1) >= 6.0
    if valid.sum() < max(8, samples // 5):
        return None
    # which edge across the side is the board's: decided on the profile averaged along the side,
    # where a faint but straight edge (board against a table of nearly its colour) stands out
    avg = np.median(mag[valid], axis=0)
    inner = np.flatnonzero((avg[1:-1] >= avg[:-2]) & (avg[1:-1] > avg[2:])) + 1
    if len(inner) == 0:
        return None
    top = avg[inner].max()
    strong = inner[avg[inner] >= _PEAK_FRAC * top]
    if _PEAK == "outermost":
        chosen = strong[-1]
        # a visible edge face (board thickness) puts the table's edge outside the top surface's:
        # then the top edge is the next peak in, if it lies a plausible thickness away
        if face_px_per_mm > 0 and len(strong) >= 2:
            lo_mm, hi_mm = (cfg or {}).get("thickness_mm", (1.0, 7.0))
            gap = (offs[strong[-1]] - offs[strong[-2]])
            if lo_mm * face_px_per_mm * 0.6 <= gap <= hi_mm * face_px_per_mm * 1.3 + 0.5:
                chosen = strong[-2]
    elif _PEAK == "innermost":
        chosen = strong[0]
    else:
        chosen = inner[int(np.argmax(avg[inner]))]
    window = int(round(1.0 / step))
    lo, hi = max(1, chosen - window), min(len(offs) - 2, chosen + window)
    pts = []
    for i in np.flatnonzero(valid):
        m = mag[i]
        k = lo + int(np.argmax(m[lo:hi + 1]))
        if k <= 0 or k >= len(offs) - 1:
            continue
        y0, y1, y2 = m[k - 1], m[k], m[k + 1]
        den = y0 - 2 * y1 + y2
        sub = float(np.clip(0.5 * (y0 - y2) / den, -0.5, 0.5)) if abs(den) > 1e-9 else 0.0
        pts.append(base[i] + (offs[k] + sub * step) * nrm)
    if len(pts) < max(8, samples // 5):
        return None
    pts = np.array(pts)
    keep = np.ones(len(pts), bool)
    for _ in range(4):
        c = pts[keep].mean(axis=0)
        _, _, vt = np.linalg.svd(pts[keep] - c, full_matrices=False)
        direction = vt[0]
        normal = np.array([-direction[1], direction[0]])
        res = (pts - c) @ normal
        mad = np.median(np.abs(res[keep] - np.median(res[keep])))
        new_keep = np.abs(res) <= max(0.6, 3.5 * 1.4826 * mad)
        if new_keep.sum() < max(8, samples // 5):
            return None
        if (new_keep == keep).all():
            break
        keep = new_keep
    c = pts[keep].mean(axis=0)
    _, _, vt = np.linalg.svd(pts[keep] - c, full_matrices=False)
    direction = vt[0]
    normal = np.array([-direction[1], direction[0]])
    sigma = float(np.std((pts[keep] - c) @ normal))
    spread = float(np.std((pts[keep] - c) @ direction))
    return c, direction, sigma, int(keep.sum()), spread


def _line_intersection(f1, f2) -> np.ndarray:
    c1, d1 = f1[0], f1[1]
    c2, d2 = f2[0], f2[1]
    a = np.column_stack([d1, -d2])
    if abs(np.linalg.det(a)) < 1e-9:
        return np.array([np.nan, np.nan])
    s = np.linalg.solve(a, c2 - c1)
    return c1 + s[0] * d1


def _line_fit_error_mm(fits, board: Board, samples: int = 100) -> float:
    """Error at the worst board corner (mm, RMS over draws) implied by the sides' fit scatter (offset and
    angle standard errors)."""
    corners0 = np.array([_line_intersection(fits[(a - 1) % 4], fits[a]) for a in range(4)])
    mm = board_corners_mm(board)
    rng = np.random.default_rng(0)
    sq = []
    for _ in range(samples):
        moved = []
        for c, d, sigma, n, spread in fits:
            normal = np.array([-d[1], d[0]])
            se_off = sigma / np.sqrt(n)
            se_ang = sigma / (np.sqrt(n) * max(spread, 1.0))
            ang = rng.normal(0, se_ang)
            rot = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
            moved.append((c + rng.normal(0, se_off) * normal, rot @ d))
        corners = np.array([_line_intersection(moved[(a - 1) % 4], moved[a]) for a in range(4)])
        hom = homography_from_points(mm, corners)
        back = cv2.perspectiveTransform(corners0.reshape(-1, 1, 2), np.linalg.inv(hom)).reshape(-1, 2)
        sq.append(np.max(np.sum((back - mm) ** 2, axis=1)))
    return float(np.sqrt(np.mean(sq)))
