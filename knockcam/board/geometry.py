"""Where a token base rests: exact disc-on-polygon coverage of every space, and the S3 verdict.

A token's base is a disc (the board's ``token.base_diameter_mm``). Its area inside a simple
polygon is the sum, over the polygon's edges, of the signed area of disc ∩ triangle(centre,
edge) -- exact, for convex and non-convex outlines alike. Everything is vectorised over
tokens x spaces x edges, so 16 tokens on a 30-space board take well under a millisecond.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from knockcam.board.layout import Board
from knockcam.errors import KnockcamError

ON_SPACE, NO_SPACE, OFF_BOARD = "on_space", "no_space", "off_board"

_MARGIN_STEPS = 8  # coarse samples along the search ray before bisection


@dataclass(frozen=True)
class Resting:
    """One token's S3 verdict: the category its base covers most, the runner-up and the margin."""

    state: str  # on_space | no_space | off_board
    space_id: str | None  # the winning space, None unless state == on_space
    share: float  # fraction of the base on the winning category
    runner_up: str  # a space id, "no_space" or "off_board"
    runner_up_share: float
    margin_mm: float  # how far the base centre can move before the winner changes


@dataclass(frozen=True, eq=False)
class Coverage:
    """Coverage of N token bases on a board's S spaces, with the per-token S3 verdict.

    ``fractions[i, j]`` is the share of base ``i`` on ``space_ids[j]``; with ``off_board`` and
    ``no_space`` each row sums to 1. Categories are space ids plus "no_space" and "off_board";
    the winner is the category with the largest share (ties go to the earlier category: spaces
    in board-file order, then no_space, then off_board).
    """

    space_ids: tuple[str, ...]
    centers_mm: np.ndarray  # (N, 2)
    fractions: np.ndarray  # (N, S)
    off_board: np.ndarray  # (N,)
    no_space: np.ndarray  # (N,)
    state: tuple[str, ...]
    space_id: tuple[str | None, ...]
    share: np.ndarray  # (N,) winner's share
    runner_up: tuple[str, ...]
    runner_up_share: np.ndarray  # (N,)
    margin_mm: np.ndarray  # (N,), NaN when not computed

    def __len__(self) -> int:
        return len(self.state)

    def __getitem__(self, i: int) -> Resting:
        return Resting(self.state[i], self.space_id[i], float(self.share[i]), self.runner_up[i],
                       float(self.runner_up_share[i]), float(self.margin_mm[i]))

    def __iter__(self) -> Iterator[Resting]:
        return (self[i] for i in range(len(self)))

    def of(self, i: int, category: str) -> float:
        """Share of base ``i`` on one category (a space id, "no_space" or "off_board")."""
        if category == NO_SPACE:
            return float(self.no_space[i])
        if category == OFF_BOARD:
            return float(self.off_board[i])
        return float(self.fractions[i, self.space_ids.index(category)])


@dataclass(frozen=True, eq=False)
class _Outlines:
    """The board's polygons as padded edge arrays: spaces first, the board rectangle, then an empty one."""

    starts: np.ndarray  # (P + 1, E, 2) edge start points; padding edges are zero-length
    ends: np.ndarray  # (P + 1, E, 2) edge end points
    orientation: np.ndarray  # (P + 1,) +1 counter-clockwise, -1 clockwise
    bounds: np.ndarray  # (P, 4) xmin, ymin, xmax, ymax

    @property
    def count(self) -> int:
        """Real polygons (spaces + board); index ``count`` is the empty padding polygon."""
        return len(self.bounds)


_CACHE: dict[int, tuple[Board, _Outlines]] = {}


def _outlines(board: Board) -> _Outlines:
    hit = _CACHE.get(id(board))
    if hit is not None and hit[0] is board:
        return hit[1]
    width, length = board.size_mm
    polys = [np.asarray(s.polygon, dtype=np.float64) for s in board.spaces]
    polys.append(np.array([[0, 0], [width, 0], [width, length], [0, length]], dtype=np.float64))
    n_edges = max(len(p) for p in polys)
    starts = np.zeros((len(polys) + 1, n_edges, 2))
    ends = np.zeros((len(polys) + 1, n_edges, 2))
    orientation = np.ones(len(polys) + 1)
    for k, poly in enumerate(polys):
        m = len(poly)
        starts[k, :m] = poly
        ends[k, :m] = np.roll(poly, -1, axis=0)
        starts[k, m:] = ends[k, m:] = poly[0]
        shoelace = np.sum(poly[:, 0] * np.roll(poly[:, 1], -1) - np.roll(poly[:, 0], -1) * poly[:, 1])
        orientation[k] = 1.0 if shoelace >= 0 else -1.0
    bounds = np.array([[p[:, 0].min(), p[:, 1].min(), p[:, 0].max(), p[:, 1].max()] for p in polys])
    out = _Outlines(starts, ends, orientation, bounds)
    if len(_CACHE) > 16:
        _CACHE.clear()
    _CACHE[id(board)] = (board, out)
    return out


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]


def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1]


def _unit(u: np.ndarray) -> np.ndarray:
    norm = np.sqrt(_dot(u, u))[..., None]
    return np.divide(u, norm, out=np.zeros_like(u), where=norm > 0)


def _touching(outlines: _Outlines, centers: np.ndarray, radius: float) -> np.ndarray:
    """(N, K) indices of the polygons whose bounding box meets each disc's; padded with the empty one."""
    lo = centers - radius
    hi = centers + radius
    b = outlines.bounds
    near = ((lo[:, None, 0] <= b[None, :, 2]) & (hi[:, None, 0] >= b[None, :, 0])
            & (lo[:, None, 1] <= b[None, :, 3]) & (hi[:, None, 1] >= b[None, :, 1]))
    k = max(int(near.sum(axis=1).max(initial=0)), 1)
    order = np.argsort(~near, axis=1, kind="stable")[:, :k]
    return np.where(np.take_along_axis(near, order, axis=1), order, outlines.count)


def _disc_polygon_areas(centers: np.ndarray, outlines: _Outlines, radius: float,
                       gradient: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Exact area (N, P) of each disc inside each polygon and, optionally, its gradient (N, P, 2).

    Per edge (a, b), disc ∩ triangle(c, a, b) splits at the edge's crossings with the circle into
    sector, triangle, sector. The area's gradient in the centre is the integral of the outward
    normal over the arcs of the circle inside the polygon, i.e. over the same sectors. Only the
    polygons whose bounding box meets the disc's are evaluated (the rest cover nothing).
    """
    n = len(centers)
    idx = _touching(outlines, centers, radius)  # (N, K)
    c = centers[:, None, None, :]
    p = outlines.starts[idx] - c  # (N, K, E, 2)
    q = outlines.ends[idx] - c
    d = q - p
    a = _dot(d, d)
    b = _dot(p, d)
    # Where the edge's line misses the circle both cut points fall together on the segment, the
    # triangle piece vanishes and the two sectors add up to the whole edge's sector.
    root = np.sqrt(np.maximum(b * b - a * (_dot(p, p) - radius * radius), 0.0))
    a_safe = np.where(a > 0, a, 1.0)
    t1 = np.clip((-b - root) / a_safe, 0.0, 1.0)[..., None]
    t2 = np.clip((-b + root) / a_safe, 0.0, 1.0)[..., None]
    p1 = p + t1 * d
    p2 = p + t2 * d
    r2 = radius * radius
    part = (0.5 * r2 * np.arctan2(_cross(p, p1), _dot(p, p1))
            + 0.5 * _cross(p1, p2)
            + 0.5 * r2 * np.arctan2(_cross(p2, q), _dot(p2, q)))
    sign = outlines.orientation[idx]
    area = np.zeros((n, outlines.count + 1))
    rows = np.arange(n)[:, None]
    area[rows, idx] = part.sum(axis=2) * sign
    grad = None
    if gradient:
        arcs = 0.0
        for u, v in ((p, p1), (p2, q)):
            uu, vv = _unit(u), _unit(v)
            arcs = arcs + np.stack([vv[..., 1] - uu[..., 1], uu[..., 0] - vv[..., 0]], axis=-1)
        grad = np.zeros((n, outlines.count + 1, 2))
        grad[rows, idx] = radius * arcs.sum(axis=2) * sign[..., None]
        grad = grad[:, :-1]
    return area[:, :-1], grad


def _shares(board: Board, centers: np.ndarray, radius: float, gradient: bool = False):
    """Category shares (N, S+2): spaces, then no_space, then off_board; optionally gradients."""
    outlines = _outlines(board)
    area, grad = _disc_polygon_areas(centers, outlines, radius, gradient)
    disc_area = np.pi * radius * radius
    spaces = area[:, :-1] / disc_area
    on_board = area[:, -1] / disc_area
    no_space = on_board - spaces.sum(axis=1)
    off = 1.0 - on_board
    shares = np.concatenate([spaces, no_space[:, None], off[:, None]], axis=1)
    shares = np.where(shares < 1e-12, 0.0, np.minimum(shares, 1.0))  # rounding noise only
    if not gradient:
        return shares, None
    g = grad / disc_area
    g_no = g[:, -1] - g[:, :-1].sum(axis=1)
    grads = np.concatenate([g[:, :-1], g_no[:, None], -g[:, -1:]], axis=1)
    return shares, grads


def _lead(shares: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Winner's share minus the best other category's share: the winner holds while > 0."""
    rows = np.arange(len(shares))
    others = shares.copy()
    others[rows, winner] = -np.inf
    return shares[rows, winner] - others.max(axis=1)


def _rival(shares: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Index of the best category other than the winner."""
    others = shares.copy()
    others[np.arange(len(shares)), winner] = -np.inf
    return others.argmax(axis=1)


def _nearest_boundary(board: Board, centers: np.ndarray, winner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distance (N,) and unit direction (N, 2) from each centre to the nearest edge of its winner's region."""
    outlines = _outlines(board)
    n_spaces = len(board.spaces)
    starts = outlines.starts[:outlines.count]
    p = centers[:, None, None, :] - starts[None]
    d = outlines.ends[:outlines.count] - starts  # (P, E, 2)
    dd = _dot(d, d)
    t = np.clip(np.divide(_dot(p, d[None]), dd[None], out=np.zeros(p.shape[:-1]), where=dd[None] > 0), 0, 1)
    nearest = starts[None] + t[..., None] * d[None]  # (N, P, E, 2)
    dist = np.sqrt(_dot(nearest - centers[:, None, None, :], nearest - centers[:, None, None, :]))
    # Which polygons bound each winner's region: its own space; the board edge for off_board;
    # every space and the board edge for no_space.
    relevant = np.zeros((len(centers), n_spaces + 1), dtype=bool)
    is_space = winner < n_spaces
    relevant[np.flatnonzero(is_space), winner[is_space]] = True
    relevant[~is_space, -1] = True
    relevant[winner == n_spaces, :] = True
    dist = np.where(relevant[..., None], dist, np.inf).reshape(len(centers), -1)
    best = dist.argmin(axis=1)
    rows = np.arange(len(centers))
    point = nearest.reshape(len(centers), -1, 2)[rows, best]
    return dist[rows, best], _unit(point - centers)


def _margins(board: Board, centers: np.ndarray, radius: float, winner: np.ndarray,
             shares: np.ndarray, grads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How far each centre can move before the winner changes, and the category it changes to (see ``coverage``)."""
    n = len(centers)
    rows = np.arange(n)
    lead0 = _lead(shares, winner)
    dist, toward = _nearest_boundary(board, centers, winner)
    # Candidate rays: steepest descent of the winner's lead over each of its two best rivals, and
    # straight towards the nearest edge of the winner's region.
    ranked = np.argsort(-shares, axis=1, kind="stable")
    rivals = np.where(ranked[:, :1] == winner[:, None], ranked[:, 1:3], ranked[:, :2])
    slopes = [grads[rows, winner] - grads[rows, rivals[:, 0]], grads[rows, winner] - grads[rows, rivals[:, 1]]]
    directions = []
    for g in slopes:
        g_norm = np.sqrt(_dot(g, g))
        directions.append(np.where((g_norm > 1e-9)[:, None], -g / np.maximum(g_norm, 1e-300)[:, None], toward))
    directions.append(toward)
    n_dirs = len(directions)
    stacked = np.stack(directions, axis=1)  # (N, D, 2)
    # Search each distinct ray once (a base wholly on one category has a single one).
    distinct = np.ones((n, n_dirs), dtype=bool)
    for k in range(1, n_dirs):
        for j in range(k):
            distinct[:, k] &= _dot(stacked[:, k], stacked[:, j]) < 1 - 1e-9
    token, which = np.nonzero(distinct)
    direction = stacked[token, which]  # (M, 2)
    origin = centers[token]
    who = winner[token]
    start_lead = lead0[token]
    m = len(origin)
    ray = np.arange(m)
    # The base stays wholly inside its region until the centre has moved dist - radius.
    t_min = np.maximum(dist - radius, 0.0)[token]
    t_max = (dist + 2.0 * radius)[token]
    # Samples along each ray bracket the first change of winner; samples inside that bracket
    # narrow it to 1/64 of the first span, and the lead, smooth at that scale, is interpolated.
    found = np.zeros(m, dtype=bool)
    lo, f_lo, hi, f_hi = t_min, np.where(t_min > 0, 1.0, start_lead), t_max, np.zeros(m)
    next_rival = np.full(m, -1)
    fractions = np.arange(1, _MARGIN_STEPS + 1) / _MARGIN_STEPS
    for stage in range(2):
        t = lo[:, None] + (hi - lo)[:, None] * fractions[None, :]  # (M, K)
        probes = origin[:, None, :] + t[..., None] * direction[:, None, :]
        probe_shares, _ = _shares(board, probes.reshape(-1, 2), radius)
        lead = _lead(probe_shares, np.repeat(who, _MARGIN_STEPS)).reshape(m, _MARGIN_STEPS)
        rival = _rival(probe_shares, np.repeat(who, _MARGIN_STEPS)).reshape(m, _MARGIN_STEPS)
        changed = lead <= 0
        hit = changed.any(axis=1)
        if stage == 0:
            found = hit
        first = np.where(hit, changed.argmax(axis=1), 0)
        before = np.maximum(first - 1, 0)
        keep = found & hit
        lo, f_lo = (np.where(keep & (first > 0), t[ray, before], lo),
                    np.where(keep & (first > 0), lead[ray, before], f_lo))
        hi, f_hi = np.where(keep, t[ray, first], hi), np.where(keep, lead[ray, first], f_hi)
        next_rival = np.where(keep, rival[ray, first], next_rival)
    span = f_lo - f_hi
    hi = np.where(span > 0, lo + (hi - lo) * f_lo / np.where(span > 0, span, 1.0), hi)
    crossing = np.full((n, n_dirs), np.inf)
    crossing[token, which] = np.where(found, hi, np.inf)
    crossed_to = np.full((n, n_dirs), -1)
    crossed_to[token, which] = next_rival
    best = crossing.argmin(axis=1)
    any_found = np.isfinite(crossing[rows, best])
    margin = np.where(lead0 <= 0, 0.0, np.where(any_found, crossing[rows, best], dist))
    return margin, np.where(any_found, crossed_to[rows, best], -1)


def coverage(board: Board, centers_mm, base_diameter_mm: float | None = None, margins: bool = True) -> Coverage:
    """Shares of N token bases (discs at ``centers_mm``) on every space, no space and off the board.

    Shares are exact (analytic circle ∩ polygon). ``margin_mm`` is the distance the centre can
    move before the winner changes. It is searched along up to three rays -- the steepest descent
    of the winner's lead over each of its two best rivals, and straight towards the nearest edge
    of the winner's region (where a slope is flat, the base wholly on one category, that ray
    stands in) -- bracketed by 8 samples, narrowed by 8 more and interpolated (about 0.01 mm); the
    shortest crossing wins. Beside a straight shared edge the rays include the edge's normal, so
    the margin is exact; near corners, where the decision boundary curves, it is the shortest
    crossing along those rays: never less than the true distance and, measured against a
    120-direction brute force, within 1 mm of it (tests/board/test_geometry.py). A runner-up
    with no share at all is replaced by the category the base would cross into.
    ``margins=False`` skips the search (``margin_mm`` is NaN) for bulk use.
    """
    centers = np.asarray(centers_mm, dtype=np.float64)
    if centers.size == 0:
        centers = centers.reshape(0, 2)
    elif centers.shape == (2,):
        centers = centers.reshape(1, 2)
    if centers.ndim != 2 or centers.shape[1] != 2 or not np.isfinite(centers).all():
        raise KnockcamError(f"token centres must be finite (N, 2) board millimetres, not shape {centers.shape}")
    diameter = board.token.base_diameter_mm if base_diameter_mm is None else float(base_diameter_mm)
    if not diameter > 0:
        raise KnockcamError(f"token base diameter must be positive, not {diameter} mm (board {board.source or board.name})")
    radius = diameter / 2.0
    ids = tuple(s.id for s in board.spaces)
    categories = ids + (NO_SPACE, OFF_BOARD)
    n_spaces = len(ids)
    shares, grads = _shares(board, centers, radius, gradient=margins and len(centers) > 0)
    rows = np.arange(len(centers))
    winner = shares.argmax(axis=1) if len(centers) else np.zeros(0, dtype=int)
    runner = _rival(shares, winner) if len(centers) else np.zeros(0, dtype=int)
    if margins and len(centers):
        margin, crossed = _margins(board, centers, radius, winner, shares, grads)
        # Where nothing else is under the base, the runner-up is what the base would cross into.
        runner = np.where((shares[rows, runner] <= 0) & (crossed >= 0), crossed, runner)
    else:
        margin = np.full(len(centers), np.nan)
    state = tuple(ON_SPACE if w < n_spaces else categories[w] for w in winner)
    return Coverage(
        space_ids=ids,
        centers_mm=centers,
        fractions=shares[:, :n_spaces],
        off_board=shares[:, -1],
        no_space=shares[:, -2],
        state=state,
        space_id=tuple(ids[w] if w < n_spaces else None for w in winner),
        share=shares[rows, winner],
        runner_up=tuple(categories[k] for k in runner),
        runner_up_share=shares[rows, runner],
        margin_mm=margin,
    )
