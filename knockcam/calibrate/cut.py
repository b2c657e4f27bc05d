"""A board cut by the photo's edge (a photo taken too close): the printed grid registered with the board
stretched past that edge.

The outline search sees only the part of the board in view, and the printed grid registered from it can
settle on the whole board squeezed into that part (its spaces repeat along the board, so many of them
still land on a printed line), or on the board moved a row of spaces along itself, one end on the table.
Here the placed board is stretched along and across itself, anchored at the side opposite, also turned
end for end, and moved along and across itself; the starts that put the most printed lines on a line
are registered, and those whose board then runs past the photo's edge are returned. The automatic
method lets one win only where it fits the printed lines clearly better (knockcam.calibrate.auto).
"""

from __future__ import annotations

import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.grid import GridFit, fit_grid, shares_on_lines
from knockcam.calibrate.quality import board_corners_mm, board_corners_px, homography_from_points


def near_edge(homography: np.ndarray, board: Board, image_size: tuple[int, int], margin_frac: float,
              reach_mm: float = 0.0) -> bool:
    """Whether a corner of the board, grown ``reach_mm`` on every side, lies within ``margin_frac`` of the
    photo's long side of its edge, or past it."""
    return _inside_by_px(grown(homography, board, reach_mm), board, image_size) < margin_frac * max(image_size)


def grown(homography: np.ndarray, board: Board, reach_mm: float) -> np.ndarray:
    """``homography`` with the board grown ``reach_mm`` past each of its four sides (as far as the photo
    shows, a registration a row or a column of spaces off could have put the board that much further)."""
    w, l = board.size_mm
    p = np.array([[(w + 2 * reach_mm) / w, 0.0, -reach_mm], [0.0, (l + 2 * reach_mm) / l, -reach_mm], [0.0, 0.0, 1.0]])
    return homography @ p


def runs_past_edge(homography: np.ndarray, board: Board, image_size: tuple[int, int]) -> bool:
    """Whether a board corner lies outside the photo."""
    return _inside_by_px(homography, board, image_size) < 0


def _inside_by_px(homography: np.ndarray, board: Board, image_size: tuple[int, int]) -> float:
    """How far the board corner nearest the photo's edge lies inside it (negative: outside)."""
    w, h = image_size
    px = board_corners_px(homography, board)
    return float(np.min([px[:, 0], w - 1 - px[:, 0], px[:, 1], h - 1 - px[:, 1]]))


def stretched(homography: np.ndarray, board: Board, axis: int, from_far: bool, factor: float) -> np.ndarray:
    """``homography`` with the board stretched ``factor`` times along ``axis`` (0 across, 1 along), the side
    at 0 kept in place, or with ``from_far`` the side at the board's far edge."""
    p = np.eye(3)
    p[axis, axis] = factor
    if from_far:
        p[axis, 2] = board.size_mm[axis] * (1 - factor)
    return homography @ p


def shifted(homography: np.ndarray, axis: int, shift_mm: float) -> np.ndarray:
    """``homography`` with the board moved ``shift_mm`` along ``axis`` (0 across, 1 along)."""
    p = np.eye(3)
    p[axis, 2] = shift_mm
    return homography @ p


def turned(homography: np.ndarray, board: Board) -> np.ndarray:
    """``homography`` with the board turned end for end (near-left becomes far-right)."""
    w, l = board.size_mm
    return homography @ np.array([[-1.0, 0.0, w], [0.0, -1.0, l], [0.0, 0.0, 1.0]])


def past_the_edge(gray: np.ndarray, homography: np.ndarray, board: Board, cfg: dict,
                  ridge: np.ndarray) -> list[GridFit]:
    """Registrations of the printed grid that run past the photo's edge, started from ``homography`` (board
    mm -> pixels of ``gray``) stretched by the factors ``cfg`` gives (``cut_stretch``: least, most; steps of
    1%), turned end for end and stretched, and moved along and across itself (``cut_shift_mm``: least, most,
    step). ``ridge``: ``gray`` as ``ridge_image`` smooths it for the grid (the caller has made it already)."""
    size = (gray.shape[1], gray.shape[0])
    least, most = (float(v) for v in cfg["cut_stretch"])
    factors = np.exp(np.arange(np.log(least), np.log(most), 0.01))
    first, last, step = (float(v) for v in cfg["cut_shift_mm"])
    shifts = np.arange(first, last + step / 2, step)
    starts = []
    for axis in (0, 1):
        for base in (homography, turned(homography, board)):
            for from_far in (False, True):
                starts += _best_starts(ridge, [stretched(base, board, axis, from_far, f) for f in factors], board, cfg)
        for sign in (-1.0, 1.0):
            starts += _best_starts(ridge, [shifted(homography, axis, sign * d) for d in shifts], board, cfg)
    return [f for f in _registered(gray, starts, board, cfg, ridge) if runs_past_edge(f.homography, board, size)]


def closed_by_the_edge(gray: np.ndarray, quad: np.ndarray, board: Board, cfg: dict,
                       ridge: np.ndarray) -> list[GridFit]:
    """Registrations of the printed grid started from ``quad`` (pixels of ``gray``, in the board's corner
    order), the part of the board in view, one of whose sides is the photo's edge: the two corners on that
    edge are slid along the sides that meet them, to and past the edge (``cut_slide``: least, most share of
    those sides, in steps of ``cut_slide_step``), and the starts that put the most printed lines on a line
    are registered. The photo's edge seldom runs where the board's end does, nor parallel to it, so the
    board is placed by its other three sides and the printed grid. Empty when no side of ``quad`` runs
    along the photo's edge."""
    h, w = gray.shape[:2]
    k = _side_on_the_edge(quad, (w, h))
    if k is None:
        return []
    least, most = (float(v) for v in cfg["cut_slide"])
    slides = np.exp(np.arange(np.log(least), np.log(most), float(cfg["cut_slide_step"])))
    a, b = k, (k + 1) % 4  # the corners on the edge, each slid along the side from its other neighbour
    pa, pb = quad[(k - 1) % 4], quad[(k + 2) % 4]
    mm = board_corners_mm(board)
    tried = []
    for fa in slides:
        for fb in slides:
            q = quad.copy()
            q[a] = pa + fa * (quad[a] - pa)
            q[b] = pb + fb * (quad[b] - pb)
            tried.append(homography_from_points(mm, q))
    return _registered(gray, _best_starts(ridge, tried, board, cfg), board, cfg, ridge)


def _best_starts(ridge: np.ndarray, tried: list[np.ndarray], board: Board, cfg: dict) -> list[np.ndarray]:
    """The ``cut_starts`` of ``tried`` (homographies) that put the most printed-grid samples on a line: all
    ranked on every ``cut_rank_every``-th sample first, the best ``cut_shortlist`` of them on every sample."""
    every, shortlist = int(cfg["cut_rank_every"]), int(cfg["cut_shortlist"])
    if every > 1 and len(tried) > shortlist:
        rough = shares_on_lines(ridge, tried, board, every=every)
        tried = [tried[i] for i in np.sort(np.argsort(rough)[::-1][:shortlist])]
    shares = shares_on_lines(ridge, tried, board)
    return [tried[i] for i in np.argsort(shares)[::-1][:int(cfg["cut_starts"])]]


def _registered(gray: np.ndarray, starts: list[np.ndarray], board: Board, cfg: dict,
                ridge: np.ndarray) -> list[GridFit]:
    """The printed grid registered (flat, ``grid_search_radii``) from each of ``starts``; those that fit."""
    radii = tuple(float(r) for r in cfg["grid_search_radii"])
    fits = [fit_grid(gray, h0, board, radii=radii, bow=False, ridge=ridge) for h0 in starts]
    return [f for f in fits if np.isfinite(f.rms_px)]


def _side_on_the_edge(quad: np.ndarray, image_size: tuple[int, int], within_px: float = 2.0) -> int | None:
    """The side (k: corners k and k + 1) of ``quad`` that runs along one of the photo's edges, if any."""
    w, h = image_size
    for k in range(4):
        ends = quad[[k, (k + 1) % 4]]
        for axis, at in ((0, 0.0), (0, w - 1.0), (1, 0.0), (1, h - 1.0)):
            if np.all(np.abs(ends[:, axis] - at) <= within_px):
                return k
    return None
