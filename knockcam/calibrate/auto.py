"""Automatic calibration: find the board's outline and which end is GO!, with no help.

Long straight lines are combined into quadrilaterals of the board's shape, each tested in its four
orientations against the board file's printed grid (knockcam.calibrate.outline); the winner's
sides are refined to sub-pixel accuracy by fitting lines to edge profiles across each side (on a
side whose edge face the camera sees, the top surface's edge is the one a board thickness inside
the table's; knockcam.calibrate.edges). Finally the printed grid is registered from there
(knockcam.calibrate.grid): when most of its lines are found, the grid places the corners (with the
board's hump, when its lines show that it does not lie flat) and the reported error is how much
they depend on which lines were seen; when not, the outline is kept and its reported error is how
far the grid disagrees. Among registrations that fit nearly as well, the board's edges decide: one
they put clearly further away is neither chosen nor counted as a rival. A board placed at the photo's
edge, or within a row of spaces of it, may run past it: registrations stretched or moved past the edge
are tried too (knockcam.calibrate.cut).
When the lens is not known, its radial distortion is read off the same printed lines (straight on
the board, bent by the lens) and, where it clearly matters, the photo is undistorted and the board
found again.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration, Hump, resize_matrix, working_copy
from knockcam.calibrate.cut import closed_by_the_edge, near_edge, past_the_edge, shifted
from knockcam.calibrate.edges import edge_width_px, line_fit_error_mm, refine_sides, side_face_px, up_px
from knockcam.calibrate.grid import (LensFit, corner_spread_mm, fit_grid, fit_grid_bowed, fit_lens, hump_mm,
                                     printed_line_width_px, ridge_image)
from knockcam.calibrate.outline import NOT_FOUND, candidate_outlines
from knockcam.calibrate.quality import (board_corners_mm, board_corners_px, board_errors_mm, corner_errors_mm,
                                        corner_uncertainty_mm, error_limit, homography_from_points, plausible_quad)
from knockcam.calibrate.sharpen import blur_readings, sharpened
from knockcam.errors import KnockcamError


@dataclass(frozen=True)
class Outline:
    """The board's four corners in pixels (near-left, near-right, far-right, far-left) and how sure we are."""

    corners_px: np.ndarray
    grid_score: float  # printed-grid match of the chosen orientation
    runner_up: float  # the best other orientation's
    edge_points: int  # edge samples behind the sub-pixel fit
    error_mm: float  # estimated error (mm) at the worst corner
    placed_by: str = "edges"  # "grid" when the printed grid's registration placed the corners
    grid_fit: float = 0.0  # share of printed-grid samples found on a printed line (0..1)
    bow_mm: tuple[float, float] = (0.0, 0.0)  # hump fitted along the board and across it (0 when flat)
    # where the best-fitting registration of the printed grid put the corners, when the grid did not
    # confirm the outline (None otherwise): a lens bends the board's edges away from its printed lines
    registered_px: np.ndarray | None = None


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
        seeds, cut_seeds, best_score, runner = candidate_outlines(colour, board, scale, cfg)
    else:
        start = np.asarray(start_px, np.float64).reshape(4, 2)
        why = plausible_quad(start, (w, h))
        if why is not None:  # nothing to start from (a damaged file's corners): no edge search on them
            raise KnockcamError(f"the corners to start from outline no board in this photo ({why})")
        seeds, cut_seeds, best_score, runner = [start], [], 0.0, 0.0
    return _place(colour, board, seeds, best_score, runner, scale, cfg, cut_seeds)


def _place(colour: np.ndarray, board: Board, seeds: list[np.ndarray], best_score: float, runner: float,
           scale: float, cfg: dict, cut_seeds: list[np.ndarray] = ()) -> Outline:
    """The board placed from the first of ``seeds`` (its edges refined, then the printed grid
    registered from it and from the other seeds, and from ``cut_seeds``: the part of a board in view, one side
    the photo's edge, placed by its three other sides), with its estimated error."""
    h, w = colour.shape[:2]
    quad = seeds[0]
    try:
        edge_corners, n_points, line_fits = refine_sides(colour, quad, cfg, first_radius=max(4.0, 2.5 / scale), board=board)
    except KnockcamError:  # no clean edge on some side (an occluder, a table of the board's colour)
        edge_corners, n_points, line_fits = quad, 0, None
    hom = homography_from_points(board_corners_mm(board), edge_corners)
    fits, line_fits = _registrations(colour, board, hom, seeds, line_fits, cfg, cut_seeds)
    fit, gray = _chosen(fits, hom, line_fits, board, cfg)
    if fit.score < float(cfg["grid_min_score"]):
        if line_fits is None:  # neither the printed grid nor the board's edges
            raise KnockcamError(*NOT_FOUND)
        # the grid does not confirm the outline: the outline alone is no better than the distance
        # to where the grid's registration went (a wrong quadrilateral, or an edge the grid disputes)
        err = max(_edge_error_mm(line_fits, edge_corners, board, (w, h), cfg),
                  _corner_apart_mm(hom, fit.homography, board))
        best_fit = max(fits, key=lambda f: f[0].score)[0]
        return Outline(corners_px=edge_corners, grid_score=float(best_score), runner_up=float(runner),
                       edge_points=n_points, error_mm=err, placed_by="edges", grid_fit=float(fit.score),
                       registered_px=board_corners_px(best_fit.homography, board))
    # another registration that fits about as well but puts the corners elsewhere is a doubt
    floor = max(float(cfg["grid_rival_score"]), fit.score - float(cfg["grid_rival_margin"]))
    rivals = [(f, img) for f, img in fits
              if f.score >= floor and _corner_apart_mm(fit.homography, f.homography, board) > 0.5
              and not _edges_reject(f, fit, hom, line_fits, board, cfg)]
    placed, bow, err = _placed_by_grid(colour, gray, fit, rivals, board, cfg)
    return Outline(corners_px=board_corners_px(placed, board), grid_score=float(best_score),
                   runner_up=float(runner), edge_points=n_points, error_mm=err, placed_by="grid",
                   grid_fit=float(fit.score), bow_mm=bow)


def _registrations(colour: np.ndarray, board: Board, hom: np.ndarray, seeds: list[np.ndarray], line_fits,
                   cfg: dict, cut_seeds: list[np.ndarray]) -> tuple[list, object]:
    """The printed grid registered from the refined outline (``hom``) and from the rough quadrilaterals
    (``seeds``: the registration can settle on a wrong nearby line), each on two renderings of the photo: grey,
    and the brightest channel, where ink stays dark but a coloured band beside a printed line turns light so
    that the line stays visible. With them, registrations of a board cut by the photo's edge and a row along
    (``_cut_by_the_edge``, ``_a_row_along``). Returns (fit, image) pairs and the side lines to judge them by."""
    mm = board_corners_mm(board)
    starts = [(hom, tuple(float(r) for r in cfg["grid_radii"]))]
    starts += [(homography_from_points(mm, q), tuple(float(r) for r in cfg["grid_search_radii"])) for q in seeds]
    images = (cv2.cvtColor(colour, cv2.COLOR_BGR2GRAY), np.ascontiguousarray(colour.max(axis=2)))
    ridges = [ridge_image(img.astype(np.float32), 1.0) for img in images]  # as fit_grid smooths them, once
    fits = [(fit_grid(img, h0, board, radii=radii, bow=False, ridge=ridge), img)
            for img, ridge in zip(images, ridges) for h0, radii in starts]
    # a board cut by the photo's edge is looked for from the best registration, and again from a row along it
    # when that fits clearly better (cut tuning renders 4247/30 and 4247/28 need one each)
    fits, line_fits = _cut_by_the_edge(fits, images[0], ridges[0], hom, line_fits, board, cfg, cut_seeds)
    along = _a_row_along(fits, images, ridges, board, tuple(float(r) for r in cfg["grid_radii"]),
                         float(cfg["grid_rival_margin"]))
    if along:
        fits, line_fits = _cut_by_the_edge(fits + along, images[0], ridges[0], hom, line_fits, board, cfg)
    return fits, line_fits


def _chosen(fits: list, hom: np.ndarray, line_fits, board: Board, cfg: dict) -> tuple:
    """The best-fitting registration (and its image), unless the board's edges (``line_fits``, the refined
    outline ``hom``) put it several mm away while another fits about as well and agrees with them (motion
    blur: the lines along the blur fit one line off)."""
    fit, gray = max(fits, key=lambda f: f[0].score)
    if line_fits is not None:
        close = [(f, img) for f, img in fits if f.score >= fit.score - float(cfg["edge_choice_margin"])]
        nearest = min(close, key=lambda f: _corner_apart_mm(hom, f[0].homography, board))
        if _edges_reject(fit, nearest[0], hom, line_fits, board, cfg):
            fit, gray = nearest
    return fit, gray


def _placed_by_grid(colour: np.ndarray, gray: np.ndarray, fit, rivals: list, board: Board,
                    cfg: dict) -> tuple[np.ndarray, tuple[float, float], float]:
    """The board as the printed grid places it from ``fit`` (registered on ``gray``): its homography, its hump
    (along, across mm) and the estimated error at its worst corner (mm)."""
    h, w = colour.shape[:2]
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
        # a hump no board has is the printed lines bending for another reason (a wrong registration, a lens):
        # the corners may be off by as much (cut tuning render 4248/0: a 21.7 mm hump, the board 5.9 mm off
        # while estimated 1.6 mm)
        # ... unless it moves the board's face in the photo less than auto.hump_unseen_mm: then only that far. Seen
        # from nearly overhead a hump barely moves the face, and the fit reads its height loosely (detection tuning
        # scene 57042: an 18 mm hump fitted to a flat board 1.9 degrees off overhead, moving the face 1.7 mm, the
        # board 1.3 mm off)
        height = _hump_height_mm(bow)
        bow_terms, hump_error = bent.bow, 0.0
        if height > float(cfg["max_hump_mm"]):
            moves = _hump_moves_mm(bow, placed, board, (w, h))
            hump_error = moves if moves < float(cfg["hump_unseen_mm"]) else height
    else:
        placed, bow = fit.homography, (0.0, 0.0)
        others = [f.homography for f, _ in rivals]
        bow_terms, hump_error = None, float(cfg["hump_factor"]) * hump
    spread = corner_spread_mm(gray, placed, board, segment_mm=float(cfg["grid_spread_segment_mm"]), bow=bow_terms)
    err = max(_spread_error_mm(spread, _lines_width_px(colour, placed, board, bow), cfg), hump_error)
    # the estimate at the worst corner: how much the corners depend on which printed lines were
    # seen (scaled: it misses what biases every line alike, and more so in a blurred photo), a hump
    # too low to fit (it still skews a flat fit a little) or too high for a board, never less than the line-position
    # ambiguity, and never less than how far the rival registrations put the corners
    err = max([err, corner_uncertainty_mm(placed, board, float(cfg["grid_ambiguity_px"]), samples=100)]
              + [_corner_apart_mm(placed, other, board) for other in others])
    return placed, bow, err


def _a_row_along(fits: list, images, ridges, board: Board, radii, margin: float) -> list:
    """The best registration so far moved a row of spaces along the board, either way, and registered again;
    kept only when one fits the printed lines better by ``margin`` at least, with more samples on a line too
    (else they would only sway which fit the board's edges choose). The rows repeat along the board, so the
    grid can settle a whole row off where the outline found was a row off too (a table's stripe taken for the
    board's near edge, a printed line across it for its far edge: tuning render 4244/101 placed 85 mm off at
    71% of its samples on a line, a row along 97%)."""
    best, img = max(fits, key=lambda f: f[0].score)
    ridge = next(r for i, r in zip(images, ridges) if i is img)
    pitch = row_pitch_mm(board)
    if pitch <= 0:
        return []
    along = [(fit_grid(img, shifted(best.homography, 1, d), board, radii=radii, bow=False, ridge=ridge), img)
             for d in (pitch, -pitch)]
    # better in share and in count: moved a row out of the photo, fewer samples in view can raise the share alone
    better = [f for f, _ in along if f.score >= best.score + margin and f.inliers > best.inliers]
    return along if better else []


def row_pitch_mm(board: Board) -> float:
    """How far apart the board's rows of spaces lie along it: the commonest step between their edges across
    (0 for a board with no rows)."""
    ys = np.unique(np.round([y for space in board.spaces for _, y in space.polygon], 1))
    steps = np.round(np.diff(ys))
    values, counts = np.unique(steps[steps > 5], return_counts=True)
    return float(values[np.argmax(counts)]) if len(values) else 0.0


def _cut_by_the_edge(fits: list, gray: np.ndarray, ridge: np.ndarray, edge_hom: np.ndarray, line_fits, board: Board,
                     cfg: dict, closed: list[np.ndarray] = ()):
    """(``fits``, ``line_fits``) as they are; or, when registrations from the ``closed`` quadrilaterals (one side
    the photo's edge) or, the board placed, grown a row (auto.cut_reach_mm), reaching the photo's edge, from it
    stretched or moved past that edge (knockcam.calibrate.cut) fit the printed lines clearly better, those
    registrations added and the board's edges set aside (None):
    the edges in view are not all the board's, so they neither choose a registration nor rule one out as a
    rival. ``ridge``: ``gray`` as the grid registration smooths it."""
    best = max(fits, key=lambda f: f[0].score)[0]
    placed = best.homography if best.score >= float(cfg["grid_min_score"]) else edge_hom
    to_win = max(float(cfg["cut_min_share"]), best.score + float(cfg["cut_margin"]))
    size = (gray.shape[1], gray.shape[0])
    if to_win > 1.0:
        return fits, line_fits  # nothing can fit that much better
    past = [f for quad in closed for f in closed_by_the_edge(gray, quad, board, cfg, ridge)]
    if near_edge(placed, board, size, float(cfg["cut_margin_frac"]), float(cfg["cut_reach_mm"])):
        past += past_the_edge(gray, placed, board, cfg, ridge)
    if not past or max(f.score for f in past) < to_win:
        return fits, line_fits
    return fits + [(f, gray) for f in past], None


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
    scatter = line_fit_error_mm(line_fits, board)
    return float(np.hypot(scatter, corner_uncertainty_mm(hom, board, ambiguity, samples=100, worst_corner=True)))


def _corner_apart_mm(h1: np.ndarray, h2: np.ndarray, board: Board) -> float:
    """The largest distance (board mm) between where two homographies put the board's corners: each
    corner imaged by ``h1`` and read back by ``h2``."""
    corners = board_corners_mm(board)
    px = cv2.perspectiveTransform(corners.reshape(-1, 1, 2), h1)
    back = cv2.perspectiveTransform(px, np.linalg.inv(h2)).reshape(-1, 2)
    return float(np.linalg.norm(back - corners, axis=1).max())


def _lines_width_px(image: np.ndarray, homography: np.ndarray, board: Board,
                    hump: tuple[float, float] = (0.0, 0.0), lens: LensFit | None = None) -> float:
    """How wide the printed lines look where ``homography`` (board mm -> undistorted pixels), the
    board's ``hump`` (along, across mm) and, when ``image`` is the photo as taken, the ``lens`` fitted
    on it put them. The hump counts: left out, the lens_distortion fixture's 7.5 mm hump moves its
    lines off the profiles' centres, and its sharp lines (4.5 px) measure 7.5 px."""
    size = (image.shape[1], image.shape[0])
    seen = Calibration(method="auto", image_size=size, homography=homography, hump=_hump(hump, homography, board, size),
                       camera_matrix=None if lens is None else lens.camera_matrix,
                       dist_coeffs=None if lens is None else lens.dist_coeffs)
    return printed_line_width_px(image, seen, board)


def _hump(bow_mm: tuple[float, float], homography: np.ndarray, board: Board,
          image_size: tuple[int, int]) -> Hump | None:
    """The Hump of a fitted (along, across) mm, seen by the camera ``homography`` implies; None when flat."""
    if not any(bow_mm):
        return None
    return Hump(float(bow_mm[0]), float(bow_mm[1]), tuple(board.size_mm),
                tuple(float(v) for v in up_px(homography, board, image_size)))


def _hump_moves_mm(bow_mm: tuple[float, float], homography: np.ndarray, board: Board,
                   image_size: tuple[int, int]) -> float:
    """How far (board mm, the most over the board) a fitted hump moves the board's face in the photo from
    where the same board seen flat would be."""
    humped = Calibration(method="auto", image_size=image_size, homography=homography,
                         hump=_hump(bow_mm, homography, board, image_size))
    return float(board_errors_mm(replace(humped, hump=None), humped, board).max())


def _spread_error_mm(spread_mm: float, width_px: float, cfg: dict) -> float:
    """The error a grid placement is estimated to have from how far its corners move over resamples
    of the printed lines (``spread_mm``, pieces ``grid_spread_segment_mm`` long): scaled by
    ``grid_spread_factor``, since it misses what biases every line alike, and by (width / sharp)^2
    when the printed lines look ``width_px`` wide, wider than ``grid_spread_sharp_px``: a blurred
    line is pulled further by a coloured band beside it.

    The spread alone under-reads blurred photos most: on tuning renders (seed 3005, 0-239, lens not
    given) the worst corner's error was 2.3 x the spread (80 mm pieces) at the median and 5.1 x at the
    90th percentile where the lines were under 3.6 px wide, against 7.5 x and 19 x where they were
    over 5.6 px. Pieces of 250 mm follow it closer (1.4 x and 3.0 x in sharp photos). The fixed 6 x
    spread over 80 mm pieces kept 11 boards more than 3 mm off and refused 38 good ones on tuning
    renders 3005 and 3006 (0-239 each); this rule kept 3 and refused 31 (docs/calibration-measured.md,
    "How sure it is").
    """
    blur = max(1.0, width_px / float(cfg["grid_spread_sharp_px"])) ** 2 if np.isfinite(width_px) else float("inf")
    return float(cfg["grid_spread_factor"]) * spread_mm * blur


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


def photo_light(image: np.ndarray) -> float:
    """How bright the photo's brightest parts are (0-255): the 99th percentile of the brightest channel,
    every 4th pixel. The board's paper, in a photo of the board: where it is, is not known yet."""
    return float(np.percentile(image[::4, ::4].max(axis=2) if image.ndim == 3 else image[::4, ::4], 99))


def photo_white(image: np.ndarray) -> np.ndarray:
    """The photo's white as it sees it (B, G, R): each channel's 98th percentile, every 4th pixel. Its
    brightest parts: the board's paper and the glare of the light, whose colour a white balance removes."""
    return np.percentile(image[::4, ::4].reshape(-1, 3), 98, axis=0)


def evened(image: np.ndarray) -> np.ndarray:
    """``image`` as the edge and line searches need it: white-balanced (``photo_white`` made grey) when its
    cast is over ``photo.cast_above``, and brightened until its brightest parts reach ``photo.light_target``
    when they are under ``photo.dim_below`` (calibrate.yaml). The searches count contrast in grey levels and
    Lab: in an underexposed photo the printed lines barely show, under a lamp's warm light the blue
    channel holds half the contrast."""
    from knockcam.exposure import scaled, white_balanced

    cfg = settings.load("calibrate")["photo"]
    if image.ndim == 3:
        image = white_balanced(image, photo_white(image), float(cfg["cast_above"]))
    light = photo_light(image)
    if light >= float(cfg["dim_below"]) or light <= 0:
        return image
    return scaled(image, float(cfg["light_target"]) / light)


def _calibrate_auto(image: np.ndarray, board: Board, camera_matrix, dist_coeffs,
                    start_px: np.ndarray | None = None) -> Calibration:
    """``calibrate_auto`` on a photo at its working size: the board found in the photo as it is and,
    when that is refused and the photo looks blurred (its printed lines wider than a sharp photo's),
    in the photo sharpened. A sharp photo is not sharpened: a blur read off it is noise."""
    image = evened(image)
    cal = _calibrate_photo(image, board, camera_matrix, dist_coeffs, start_px)
    quality = settings.load("calibrate")["quality"]
    if (cal.error_mm > error_limit()
            and printed_line_width_px(image, cal, board) > float(quality["sharp_line_px"])):
        sharper = _found_sharpened(image, board, camera_matrix, dist_coeffs, start_px, cal)
        if sharper is not None:
            cal = sharper
    return _with_edge_blur(image, cal, board)


def _with_edge_blur(image: np.ndarray, cal: Calibration, board: Board) -> Calibration:
    """``cal``, and where its board was placed by its edges alone (the printed grid did not confirm it) and
    those edges look wider than a sharp photo's (``edge_width_px``), its estimate with a share of the excess
    width counted as more corner uncertainty: a blurred edge's peak merges with the printed lines and the
    edge face beside it and lies between them (calibrate.yaml auto.edge_sharp_px says what was measured).
    Counted on the answer only: a refused blurred board is still compared with the sharpened photo's by
    its own estimate (``_found_sharpened``), which then keeps the sharpened board honest (the
    cup_cards_banknotes fixture's empty-board frame: sharpened, 12.6 mm off and estimated 2.4 mm alone)."""
    if cal.grid_share is not None:
        return cal
    cfg = settings.load("calibrate")["auto"]
    if cal.camera_matrix is not None and cal.dist_coeffs is not None:  # the board was placed in the photo undistorted
        image = cv2.undistort(image, cal.camera_matrix, cal.dist_coeffs)
    width = float(edge_width_px(image, board_corners_px(cal.homography, board)).max())
    sharp = float(cfg["edge_sharp_px"])
    if width <= sharp:
        return cal
    more_px = float(cfg["edge_blur_factor"]) * (width - sharp)
    blur_mm = corner_uncertainty_mm(cal.homography, board, more_px, samples=100, worst_corner=True)
    return replace(cal, error_mm=float(np.hypot(cal.error_mm, blur_mm)),
                   error_source=f"{cal.error_source}; its edges look {width:.0f} px wide (a sharp photo's at most "
                                f"{sharp:g} px): {more_px:.1f} px more of corner uncertainty")


def _calibrate_photo(image: np.ndarray, board: Board, camera_matrix, dist_coeffs,
                     start_px: np.ndarray | None = None, min_grid_share: float = 0.0) -> Calibration:
    """The board found in ``image`` as it is: through the lens when it is given, else with the lens
    read off the printed lines when that places the board better (calibrate_auto) and the printed grid
    placed it with at least ``min_grid_share`` of its samples on a line."""
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
        refused = outline.error_mm > error_limit()
        # the bands' pull check only where no corners were given: from the user's corners its check on fresh
        # photos failed (docs/calibration-measured.md, "A lens the bands' pull moves is not read")
        lens = fit_lens_from_grid(image, outline, board, refused, pull_check=start_px is None) if trusted else None
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
            most = float(settings.load("calibrate")["auto"]["max_hump_mm"])
            found = [o for o in (through_lens, placed_with_lens(lens, outline, board, image))
                     if o is not None and _hump_height_mm(o.bow_mm) <= most and o.grid_fit >= min_grid_share]
            best = min(found, key=lambda o: o.error_mm) if found else None
            if best is not None and best.error_mm < outline.error_mm:
                outline = best
                image, camera_matrix, dist_coeffs = undistorted, lens.camera_matrix, lens.dist_coeffs
                lens_note = (f"; lens distortion read off the printed lines (k1 {lens.dist_coeffs[0]:+.3f} "
                             f"+/- {lens.k1_sigma:.3f} at a nominal focal length of {lens.camera_matrix[0, 0]:.0f} px)")
    hom = homography_from_points(board_corners_mm(board), outline.corners_px)
    size = (image.shape[1], image.shape[0])
    hump = _hump(outline.bow_mm, hom, board, size)  # when the printed lines showed one: tokens rest on it
    return Calibration(method="auto", image_size=size, homography=hom, camera_matrix=camera_matrix,
                       dist_coeffs=dist_coeffs, error_mm=outline.error_mm,
                       error_source=_error_source(outline) + lens_note, hump=hump,
                       grid_share=float(outline.grid_fit) if outline.placed_by == "grid" else None)


def _found_sharpened(image: np.ndarray, board: Board, camera_matrix, dist_coeffs, start_px: np.ndarray | None,
                     blurred: Calibration) -> Calibration | None:
    """The board found again (``_calibrate_photo``: the lens read off the printed lines again when it
    is not given) in ``image`` sharpened for each blur read off it (knockcam.calibrate.sharpen), the
    one with the lowest estimated error when that is below ``blurred``'s (the board found in the photo
    as it is); None when none is.

    A blurred photo's printed lines are wide and faint, and those across a motion blur vanish: the grid
    then settles several mm off (tuning renders 3005, 0-239: of the 43 photos with a motion blur or a
    defocus, 28 were refused, 22 of them over 3 mm off). Undone with the true blur, 18 of 19 such photos
    tried were placed within 3 mm. A blur read wrong leaves ghosts of the printed lines beside
    them, on which the grid can settle confidently. So a sharpened board counts only when the printed
    grid placed it with most of its lines crisp again (calibrate.yaml sharpen.min_grid_share) and with a
    hump a board can have (auto.max_hump_mm: a hump fitted to ghost lines absorbs their bend), and it is
    estimated at least as far off as it lies outside the blurred board's own estimate (the truth should
    lie within it). The lens is read again on the sharpened photo: read off blurred lines it is a poor
    one (tuning renders 3005 + 3006: sharpened boards kept 4.3, 4.6 and 9.3 mm off came within 2.1 mm).
    docs/calibration-measured.md has the figures ("A blurred photo")."""
    crisp = float(settings.load("calibrate")["sharpen"]["min_grid_share"])
    most = float(settings.load("calibrate")["auto"]["max_hump_mm"])
    best: Calibration | None = None

    def search(blur) -> Calibration | None:
        try:
            return _calibrate_photo(sharpened(image, blur), board, camera_matrix, dist_coeffs, start_px, crisp)
        except KnockcamError:
            return None

    # each reading's search in a thread of its own, then judged in the readings' order: the same answer as one
    # after another, sooner (2 cores, 2026-12-06: the cup_cards_banknotes, defocus and glare_crease_bowed fixtures
    # 7.1 -> 5.4 s, 6.0 -> 4.7 s and 7.6 -> 6.2 s)
    readings = blur_readings(image)
    with ThreadPoolExecutor(max_workers=2) as pool:
        searched = list(pool.map(search, readings))
    for blur, found in zip(readings, searched):
        if found is None:
            continue
        if found.grid_share is None or found.grid_share < crisp or _hump_height_mm(_bow_mm(found)) > most:
            continue
        note = f"; found in the photo sharpened for {blur.describe()} read off it"
        # how far the two boards' corners lie apart, less the blurred board's own estimate
        outside = float(corner_errors_mm(blurred, found, board).max()) - blurred.error_mm
        if outside > found.error_mm:
            note += (f", {outside:.1f} mm outside where the blurred photo put the board within its own estimate "
                     f"({blurred.error_mm:.1f} mm)")
        found = replace(found, error_mm=max(found.error_mm, outside), error_source=found.error_source + note)
        if found.error_mm < (best.error_mm if best is not None else blurred.error_mm):
            best = found
    return best


def _hump_height_mm(bow_mm: tuple[float, float]) -> float:
    """The highest (or deepest) a fitted hump (along, across mm) rises; checked against auto.max_hump_mm
    wherever a board found through a guess (a lens, a blur read off the lines) is judged."""
    return max(abs(float(v)) for v in bow_mm)


def _bow_mm(calibration: Calibration) -> tuple[float, float]:
    """The calibration's hump as (along, across) mm, as Outline.bow_mm has it; (0, 0) when flat."""
    hump = calibration.hump
    return (0.0, 0.0) if hump is None else (hump.along_mm, hump.across_mm)


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


def fit_lens_from_grid(image: np.ndarray, outline: Outline, board: Board, refused: bool = False,
                       pull_check: bool = True) -> LensFit | None:
    """The lens distortion the printed lines show around ``outline`` (found in a photo whose lens is
    unknown), fitted with the board's hump, which bends the lines too; None when it is too small to
    matter or too uncertain (calibrate.yaml auto.lens_*). Whether it is used is calibrate_auto's
    call: the lines alone are a poor judge (photos with no distortion still show k1 at 5-13
    standard errors, and a real mild lens lowers the lines' RMS offset by only 1-5%).

    Around an outline that would be ``refused`` (estimated over quality.max_error_mm) a less certain
    lens is tried too (auto.lens_refused_min_z); the estimate of the board found through it still decides
    (the glare_crease_bowed fixture: its lens read right at 3.95 standard errors, the board 1.04 mm off
    through it instead of 7.2). docs/calibration-measured.md has what it changed on held-out renders
    ("A less certain lens around a board that would be refused").

    With ``pull_check``, a lens that moves once the coloured bands' pull is fitted too is not read
    (auto.lens_pull_max_move)."""
    cfg = settings.load("calibrate")["auto"]
    if not cfg.get("lens_fit", True):
        return None
    size = (image.shape[1], image.shape[0])
    # around an outline only its edges placed (the user's corners: see _calibrate_photo), the fit starts
    # where the printed grid fitted best: from the bent edges it settles on a weaker lens
    start = outline.corners_px if outline.registered_px is None else outline.registered_px
    hom = homography_from_points(board_corners_mm(board), start)
    gray = cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_BGR2GRAY) if image.ndim == 3 else image

    def up(h):
        return up_px(h, board, size)

    lens = fit_lens(gray, hom, board, up=up, segment_mm=float(cfg["grid_spread_segment_mm"]))
    min_z = float(cfg["lens_refused_min_z" if refused else "lens_min_z"])
    if lens.shift_px < float(cfg["lens_min_shift_px"]) or abs(float(lens.dist_coeffs[0])) < min_z * lens.k1_sigma:
        return None
    if not pull_check:
        return lens
    # the coloured bands beside the printed lines pull where they are found, and a barrel lens can take that
    # up: a lens that moves when their pull is fitted too was read off the bands, not the lens
    pulled = fit_lens(gray, hom, board, up=up, segment_mm=float(cfg["grid_spread_segment_mm"]), pull=True,
                      iterations=int(cfg["lens_pull_iterations"]))
    if abs(float(pulled.dist_coeffs[0]) - float(lens.dist_coeffs[0])) > float(cfg["lens_pull_max_move"]):
        return None
    return lens


def placed_with_lens(lens: LensFit, outline: Outline, board: Board, image: np.ndarray) -> Outline | None:
    """The board where the lens fit placed it (``lens``: fitted on the photo's own pixels, printed lines
    and lens together), None when too few of the printed grid's samples sit on a line there.

    Finding the board again in the undistorted photo registers the grid on resampled pixels, where
    the thin printed lines blur: on the lens_distortion fixture 43% of the samples sit on a line
    there (the grid then does not confirm the outline, and the edges alone put it 21 mm off) against
    59% in the lens fit, whose corners are within 2.8 mm. The error is estimated as for a grid
    placement (find_outline), from the lens fit's own corner spread and how wide the printed lines
    look in ``image`` (the photo the lens was fitted on) where it puts them."""
    cfg = settings.load("calibrate")["auto"]
    if lens.score < float(cfg["grid_min_score"]):
        return None
    placed = lens.homography
    err = _spread_error_mm(lens.spread_mm, _lines_width_px(image, placed, board, lens.hump, lens), cfg)
    err = max(err, corner_uncertainty_mm(placed, board, float(cfg["grid_ambiguity_px"]), samples=100))
    corners = board_corners_px(placed, board)
    return Outline(corners_px=corners, grid_score=outline.grid_score, runner_up=outline.runner_up,
                   edge_points=outline.edge_points, error_mm=err, placed_by="grid", grid_fit=float(lens.score),
                   bow_mm=tuple(float(v) for v in lens.hump))


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
                f"the printed lines (x (line width / {cfg['grid_spread_sharp_px']} px)^2 where they look wider), "
                f"{cfg['hump_factor']} x any hump too low to fit, the height of one over {cfg['max_hump_mm']} mm "
                f"(no board's; how far it moves the board in the photo when under {cfg['hump_unseen_mm']} mm), "
                f"{cfg['grid_ambiguity_px']} px "
                f"per corner, and how far another registration that fits about as well puts them (worst corner)")
    return (f"estimate: scatter of {outline.edge_points} edge points about the four fitted sides, plus "
            f"{cfg['edge_ambiguity_px']} px of edge ambiguity per corner and half a board thickness of any edge face "
            f"in view (worst corner); the printed grid "
            f"did not confirm it ({outline.grid_fit:.0%} of its samples on a printed line)")
