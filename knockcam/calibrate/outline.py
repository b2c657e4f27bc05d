"""Where the board may be in a photo: long straight lines -> quadrilaterals of the board's shape ->
each scored, in its four orientations, against the board file's printed grid.

Long straight lines (Hough on all edges, and on the edges along the border of the region whose
colours are not the table's) are combined into quadrilaterals whose true aspect ratio, estimated
with the focal length recovered from the quadrilateral itself, matches the board's. Each is tested
in its four orientations against the printed grid (space edges warped top-down); the best ones
are where knockcam.calibrate.auto starts placing the board.
"""

from __future__ import annotations

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.calibration import unscaled_px
from knockcam.calibrate.quality import board_corners_mm
from knockcam.errors import KnockcamError

# raised as KnockcamError(*NOT_FOUND): the reason, and what to do
NOT_FOUND = ("board not found", "give --corners or lay the marker sheet (calibration/README.md)")


def candidate_outlines(colour: np.ndarray, board: Board, scale: float,
                       cfg: dict) -> tuple[list[np.ndarray], list[np.ndarray], float, float]:
    """Quadrilaterals that may be the board (full-resolution pixels, the likeliest first), those that may be the
    part of it in view where one side is the photo's edge (a board the photo cuts: the board runs on past it),
    the best one's printed-grid score and the best other orientation's: KnockcamError when there is none."""
    h, w = colour.shape[:2]
    small = cv2.resize(colour, (int(round(w * scale)), int(round(h * scale))), interpolation=cv2.INTER_AREA) \
        if scale < 1 else colour.copy()
    aspect = board.size_mm[1] / board.size_mm[0]
    mask = _board_mask(small)
    quads, cut = _candidate_quads(small, mask, aspect, cfg)
    quads += _region_quads(mask, aspect, cfg)
    grad = _gradient(small)
    least = float(cfg.get("min_grid_score", 1.15))
    cut_scored = [(sc, q) for sc, _, q in _scored(grad, cut, board, cfg) if sc >= least]
    cut_seeds = _distinct([q for _, q in cut_scored], int(cfg["cut_seeds"]))
    cut_seeds = [unscaled_px(q, scale) for q in cut_seeds]  # work pixels -> full-resolution pixels
    scored = _scored(grad, quads, board, cfg)
    if not scored or scored[0][0] < least:
        if not cut_seeds:
            raise KnockcamError(*NOT_FOUND)
        return cut_seeds[:1], cut_seeds, cut_scored[0][0], 0.0
    best_score, _, best = scored[0]
    runner = next((sc for sc, _, q in scored[1:] if np.abs(q - best).max() > 0.1 * _size(best)), 0.0)
    # the printed grid fixes orientation and roughly where; the physical edge is the outermost of
    # the nearby candidates (a frame printed just inside the edge makes a second, smaller one)
    near = [q for sc, _, q in scored if np.abs(q - best).max() < 0.03 * _size(best) and sc > 0.7 * best_score]
    # the grid registration also starts from the best-scoring quadrilaterals themselves
    seeds = _distinct([max(near, key=_area)] + [q for _, _, q in scored], int(cfg["grid_seeds"]) + 1)
    seeds = [unscaled_px(q, scale) for q in seeds]
    return seeds, cut_seeds, float(best_score), float(runner)


def _distinct(quads: list[np.ndarray], n: int) -> list[np.ndarray]:
    """The first ``n`` of ``quads`` that each lie more than 2 px (at some corner) from every one before."""
    out: list[np.ndarray] = []
    for q in quads:
        if len(out) >= n:
            break
        if all(np.abs(q - s).max() > 2.0 for s in out):
            out.append(q)
    return out


def _scored(grad: np.ndarray, quads: list[np.ndarray], board: Board, cfg: dict) -> list[tuple[float, int, np.ndarray]]:
    """Each of ``quads`` in each of its four orientations with its printed-grid score, the best first."""
    scored = []
    for quad in quads:
        raw = [_grid_score(grad, np.roll(quad, -rot, axis=0), board) for rot in range(4)]
        for rot in range(4):
            # the print must fit this way round clearly better than turned half-way: a texture
            # that happens to line up with the grid fits both ways about equally
            score = raw[rot] * min(raw[rot] / max(raw[(rot + 2) % 4], 1e-6), 3.0) ** float(cfg.get("flip_weight", 0.5))
            scored.append((score, rot, np.roll(quad, -rot, axis=0)))
    scored.sort(key=lambda t: -t[0])
    return scored


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


def _crossings(lines: np.ndarray, image_size: tuple[int, int],
               reach: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where every two (rho, theta) lines cross, as (x, y) tables [a, b], and whether that lies near the
    image (within ``reach`` of its size outside it: a board's corner cut off by the photo's edge); parallel
    lines cross far away."""
    w, h = image_size
    rho, th = lines[:, 0], lines[:, 1]
    det = np.cos(th)[:, None] * np.sin(th)[None, :] - np.sin(th)[:, None] * np.cos(th)[None, :]
    det = np.where(np.abs(det) < 1e-9, 1e-9, det)
    cx = (rho[:, None] * np.sin(th)[None, :] - rho[None, :] * np.sin(th)[:, None]) / det
    cy = (np.cos(th)[:, None] * rho[None, :] - np.cos(th)[None, :] * rho[:, None]) / det
    near = (cx > -reach * w) & (cx < (1 + reach) * w) & (cy > -reach * h) & (cy < (1 + reach) * h)
    return cx, cy, near


def square_to_quad(quads: np.ndarray) -> np.ndarray:
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
    hom = square_to_quad(np.asarray(quads, np.float64) - centre)
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
    on_edge = cv2.distanceTransform(255 - edges, cv2.DIST_L2, 3) <= 1.5  # within 1.5 px of an edge pixel
    n, per_direction = int(cfg["max_lines"]), int(cfg["max_lines_per_direction"])
    band = int(cfg["mask_band_px"])
    kernel = np.ones((2 * band + 1, 2 * band + 1), np.uint8)
    rim = cv2.dilate(mask, kernel) & ~cv2.erode(mask, kernel)
    lines = _hough_lines(edges, n, per_direction, int(cfg.get("outermost_bands", 0)))
    for line in _hough_lines(edges & rim, n, per_direction):
        if not any(_same_line(line, other, 3.0, np.radians(1.5)) for other in lines):
            lines = np.vstack([lines, line[None]]) if len(lines) else line[None]
    if len(lines) < 3:
        return [], []
    # the photo's own four edges may close a board the photo cuts: one side of a quadrilateral, counted as an
    # edge wherever it runs (a quarter pixel inside the photo, so that every sample along one lies in it)
    n_found = len(lines)
    lines = np.vstack([lines, [[0.25, 0.0], [w - 1.25, 0.0], [0.25, np.pi / 2], [h - 1.25, np.pi / 2]]])
    theta = lines[:, 1]
    ii, jj = np.triu_indices(len(lines), 1)
    dtheta = np.abs((theta[ii] - theta[jj] + np.pi / 2) % np.pi - np.pi / 2)
    keep = dtheta < np.radians(float(cfg.get("max_opposite_angle_deg", 85)))  # steep views converge a lot
    ii, jj = ii[keep], jj[keep]
    # a quadrilateral's four corners must all lie near the image (one may lie past its edge: a board the photo cuts)
    cx, cy, near = _crossings(lines, (w, h), float(cfg["corner_reach"]))
    # two pairs of sides (i, j) and (k, m) make one when k and m each cross both i and j near the
    # image, along an edge-supported stretch (checked again exactly below; this only prunes)
    side_ok = _supported_stretches(near[ii] & near[jj], ii, jj, lines, cx, cy, on_edge,
                                   _MIN_SIDE_SUPPORT - _PRUNING_SLACK, np.arange(len(lines)) >= n_found)
    pairs_ok = side_ok[:, ii] & side_ok[:, jj]  # [p, q]: both lines of pair q are good sides between pair p's
    pa, pb = np.nonzero(np.triu(pairs_ok & pairs_ok.T, 1))
    mean_dir = np.angle(np.exp(2j * theta[ii]) + np.exp(2j * theta[jj])) / 2
    # up to a few million such pairs of pairs (a checkered table): looked at a slice at a time (here and for
    # their sides' support), whose arrays stay under a few MB; hundreds of MB at once, fetched fresh from the
    # system each time, took most of the search's time (12 fixtures and 20 renders: 256 -> 84 s, same answers)
    borders = (ii[pa] >= n_found).astype(int) + (jj[pa] >= n_found) + (ii[pb] >= n_found) + (jj[pb] >= n_found)
    pa, pb = pa[borders <= 1], pb[borders <= 1]
    shaped = [_board_shaped(pa[s:s + _SLICE], pb[s:s + _SLICE], ii, jj, mean_dir, cx, cy, (w, h), aspect, cfg,
                            n_found) for s in range(0, len(pa), _SLICE)]
    if not shaped or not sum(len(q) for q, _, _, _ in shaped):
        return [], []
    quads, fit, area, cut = (np.concatenate(parts) for parts in zip(*shaped))
    support = np.concatenate([_side_support(q, np.roll(q, -1, axis=1), on_edge, c[:, None])
                              for q, c in zip(np.array_split(quads, range(_SLICE, len(quads), _SLICE)),
                                              np.array_split(cut, range(_SLICE, len(quads), _SLICE)))])  # (N, 4)
    # edge support first, then the true shape, then size: the board is the largest such quad
    score = support.mean(axis=1) + 0.5 * support.min(axis=1) - 2.0 * fit + 0.5 * area / (w * h)
    good = support.min(axis=1) >= _MIN_SIDE_SUPPORT
    return (_best_distinct(quads[good & ~cut], score[good & ~cut], int(cfg.get("max_candidates", 120))),
            _best_distinct(quads[good & cut], score[good & cut], int(cfg["cut_candidates"])))


def _best_distinct(quads: np.ndarray, score: np.ndarray, limit: int) -> list[np.ndarray]:
    """Up to ``limit`` of ``quads``, the best ``score`` first, none the same as one before it in any of its
    four rotations (every corner within 3 px)."""
    quads = quads[np.argsort(-score, kind="stable")]
    rolled = np.stack([np.roll(quads, rr, axis=1) for rr in range(4)], axis=1)  # (N, 4, 4, 2)
    kept: list[int] = []
    for idx in range(len(quads)):
        if kept:
            d = np.abs(rolled[kept] - quads[idx][None, None]).max(axis=(2, 3)).min(axis=1)
            if d.min() <= 3:
                continue
        kept.append(idx)
        if len(kept) >= limit:
            break
    return [quads[i] for i in kept]


def _board_shaped(pa: np.ndarray, pb: np.ndarray, ii: np.ndarray, jj: np.ndarray, mean_dir: np.ndarray,
                  cx: np.ndarray, cy: np.ndarray, image_size: tuple[int, int], aspect: float,
                  cfg: dict, n_found: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of the quadrilaterals made of line pairs ``pa`` and ``pb`` (pair p: lines ii[p] and jj[p], of mean
    direction mean_dir[p]; corners where the lines cross: ``cx``, ``cy``), those of four distinct lines whose
    pairs are not near parallel, convex, large enough and of about the board's shape: their corners (N, 4, 2,
    anticlockwise on screen), how far each is from the board's shape (|log| of the aspect ratios) and its
    area in pixels."""
    w, h = image_size
    ddir = np.abs((mean_dir[pa] - mean_dir[pb] + np.pi / 2) % np.pi - np.pi / 2)
    ok = ddir > np.radians(float(cfg.get("min_pair_angle_deg", 15)))
    pa, pb = pa[ok], pb[ok]
    i, j, k, m = ii[pa], jj[pa], ii[pb], jj[pb]
    ok = (i != k) & (i != m) & (j != k) & (j != m)
    i, j, k, m = i[ok], j[ok], k[ok], m[ok]
    cut = (i >= n_found) | (j >= n_found) | (k >= n_found) | (m >= n_found)
    # one array per corner (x and y): the shape tests run on every candidate, and the (N, 4, 2) corners
    # are built only for those that pass them (12 fixtures and tuning renders: the same quadrilaterals)
    n = cx.shape[1]
    at = [a * n + b for a, b in ((i, k), (k, j), (j, m), (m, i))]  # where in cx, cy each corner lies
    x = [cx.ravel().take(f) for f in at]
    y = [cy.ravel().take(f) for f in at]
    ex = [x[(t + 1) % 4] - x[t] for t in range(4)]
    ey = [y[(t + 1) % 4] - y[t] for t in range(4)]
    crossz = [ex[t] * ey[(t + 1) % 4] - ey[t] * ex[(t + 1) % 4] for t in range(4)]
    convex = (crossz[0] > 0) & (crossz[1] > 0) & (crossz[2] > 0) & (crossz[3] > 0) \
        | (crossz[0] < 0) & (crossz[1] < 0) & (crossz[2] < 0) & (crossz[3] < 0)
    flip = crossz[0][convex] > 0  # make every quad anticlockwise on screen (negative z in image coordinates)
    x = [np.where(flip, x[3 - t][convex], x[t][convex]) for t in range(4)]
    y = [np.where(flip, y[3 - t][convex], y[t][convex]) for t in range(4)]
    terms = [x[t] * y[(t + 1) % 4] - x[(t + 1) % 4] * y[t] for t in range(4)]
    area = 0.5 * np.abs(((terms[0] + terms[1]) + terms[2]) + terms[3])
    large = area >= float(cfg["min_area_frac"]) * w * h
    quads = np.stack([np.stack([x[t][large], y[t][large]], axis=-1) for t in range(4)], axis=1)  # (N, 4, 2)
    area, cut = area[large], cut[convex][large]
    r = quad_aspects(quads, (w, h))
    r = np.maximum(r, 1 / r)
    fit = np.abs(np.log(r / aspect))
    tol = float(cfg["aspect_tolerance"])
    fit = np.where(cut, np.maximum(fit - float(cfg["cut_aspect_tolerance"]) + tol, 0.0), fit)
    sel = fit <= tol
    return quads[sel], fit[sel], area[sel], cut[sel]


_SLICE = 4096  # quadrilaterals (pairs of line pairs) looked at together by _board_shaped and _side_support
_MIN_SIDE_SUPPORT = 0.25  # share of a quadrilateral side's samples in the photo on an edge pixel (every side) ...
_MIN_INSIDE = 0.5  # ... with at least this share of them in the photo (a side the photo's edge cuts off)
_PRUNING_SLACK = 0.125  # the running-sum share fell at most 0.1 below the 40-sample one (300 random edge images)
_INSIDE_SLACK = 0.05  # ... and its share in the photo, counted every step px, below the 40 samples' (3000 images)


def _side_support(a: np.ndarray, b: np.ndarray, on_edge: np.ndarray, framed: bool | np.ndarray = False) -> np.ndarray:
    """Share of 40 samples between points ``a`` and ``b`` (..., 2) that lie on ``on_edge`` (a bool image:
    within 1.5 px of an edge pixel), among those in the image; 0 when under ``_MIN_INSIDE`` of them are.
    ``framed`` (shaped as ``a[..., 0]``, or one for all): the photo's own edge counts as an edge too."""
    h, w = on_edge.shape
    t = np.linspace(0.05, 0.95, 40)
    d = b - a
    x = a[..., None, 0] + t * d[..., None, 0]
    y = a[..., None, 1] + t * d[..., None, 1]
    inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    xi = np.clip(np.rint(x), 0, w - 1).astype(np.intp)
    yi = np.clip(np.rint(y), 0, h - 1).astype(np.intp)
    n_in = inside.sum(axis=-1)
    on = on_edge.ravel()[yi * w + xi] | (np.asarray(framed)[..., None]
                                         & ((xi == 0) | (xi == w - 1) | (yi == 0) | (yi == h - 1)))
    share = (on & inside).sum(axis=-1) / np.maximum(n_in, 1)
    return np.where(n_in >= _MIN_INSIDE * inside.shape[-1], share, 0.0)


def _supported_stretches(crosses: np.ndarray, ii: np.ndarray, jj: np.ndarray, lines: np.ndarray, cx: np.ndarray,
                         cy: np.ndarray, on_edge: np.ndarray, min_support: float, framing: np.ndarray | None = None,
                         step: float = 0.5) -> np.ndarray:
    """[p, k]: line k crosses both lines of pair p near the image and is edge-supported between them (where
    it runs in the image, as ``_side_support``; ``framing``: the lines that are the photo's own edges, on an
    edge wherever they run).

    Each line's edge pixels are counted once along its whole length (a running sum every ``step``
    px), so the share on any stretch is a difference of two sums: this prunes millions of
    quadrilaterals cheaply before the exact test (``_side_support``).
    """
    h, w = on_edge.shape
    reach = float(np.hypot(w, h)) + 1.0
    u = np.arange(-reach, reach, step)
    rho, th = lines[:, 0], lines[:, 1]
    foot = np.column_stack([rho * np.cos(th), rho * np.sin(th)])
    along = np.column_stack([-np.sin(th), np.cos(th)])
    x = foot[:, None, 0] + u[None] * along[:, None, 0]
    y = foot[:, None, 1] + u[None] * along[:, None, 1]
    inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    on = inside & on_edge[np.clip(np.round(y).astype(int), 0, h - 1), np.clip(np.round(x).astype(int), 0, w - 1)]
    if framing is not None:
        on |= inside & framing[:, None]
    running = np.concatenate([np.zeros((len(lines), 1)), np.cumsum(on, axis=1)], axis=1)
    running_in = np.concatenate([np.zeros((len(lines), 1)), np.cumsum(inside, axis=1)], axis=1)
    p, k = np.nonzero(crosses)

    def position(a):  # index along line k of its crossing with line a
        return ((cx[k, a] - foot[k, 0]) * along[k, 0] + (cy[k, a] - foot[k, 1]) * along[k, 1] + reach) / step

    ua, ub = position(ii[p]), position(jj[p])
    lo, hi = np.minimum(ua, ub), np.maximum(ua, ub)
    lo, hi = lo + 0.05 * (hi - lo), hi - 0.05 * (hi - lo)
    a = np.clip(np.round(lo).astype(int), 0, len(u))
    b = np.clip(np.round(hi).astype(int), 0, len(u))
    n_in = running_in[k, b] - running_in[k, a]
    share = np.where(n_in >= (_MIN_INSIDE - _INSIDE_SLACK) * (b - a),
                     (running[k, b] - running[k, a]) / np.maximum(n_in, 1), 0.0)
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
    dist = None  # each pixel's Lab distance to the nearest table colour, in that colour's spreads
    for centre, scale in zip(centres, spread + 4.0):
        apart = lab - centre
        apart = np.sqrt(np.add.reduce(apart * apart, axis=2)) / scale
        dist = apart if dist is None else np.minimum(dist, apart)
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


def _template(board: Board, ppm: float) -> tuple[tuple[int, int], np.ndarray, np.ndarray]:
    """The printed grid top-down at ``ppm`` pixels per mm: (its size, width x height; the flat indices of
    its space-edge pixels; those of the board's pixels clear of every edge by a pixel)."""
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
        clear = inside.astype(bool) & ~cv2.dilate(lines, np.ones((3, 3), np.uint8)).astype(bool)
        _TEMPLATES[key] = (size, np.flatnonzero(lines), np.flatnonzero(clear))
    return _TEMPLATES[key]


def _grid_score(grad: np.ndarray, quad: np.ndarray, board: Board, ppm: float = 0.5) -> float:
    """How much more edge there is on the board file's space edges than elsewhere on the board."""
    size, on_lines, clear = _template(board, ppm)
    w_mm, l_mm = board.size_mm
    src = board_corners_mm(board)
    topdown = np.column_stack([src[:, 0] * ppm, (l_mm - src[:, 1]) * ppm])
    hom = cv2.getPerspectiveTransform(quad.astype(np.float32), topdown.astype(np.float32))
    warped = cv2.warpPerspective(grad, hom, size, flags=cv2.INTER_LINEAR).ravel()
    on = warped[on_lines].mean()
    off = warped[clear].mean()
    return float(on / (off + 1.0))
