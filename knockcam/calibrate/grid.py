"""Registration to the printed grid: the homography that puts the board file's space outlines on the
printed lines in the photo, to a fraction of a pixel.

Every print style draws the same lines at the same board millimetres (only colours, weights and
fonts differ), so the line *positions* are a template that fits any art. Samples along every space
edge (and the GO! line) are projected with the current homography; across each, the photo's
profile is searched for the printed line (a dark ridge); the homography is then moved to minimise
the robust sum of those across-line offsets (Gauss-Newton on point-to-line distances).

``bow=True`` also fits a free smooth hump along the board (zero at both ends, where the corners
are); with six free terms it is poorly held by the lines (the near end has only the GO! line),
so the automatic method uses ``fit_grid_bowed`` instead: the same hump shape, seen in the
direction "up" that the camera implies, with two unknowns (its height along and across).
``hump_mm`` measures how much such a hump the lines show under a flat fit, and
``corner_spread_mm`` how much the corners depend on which lines were seen (both feed the
automatic method's error estimate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.quality import board_corners_px

_TEMPLATES: dict = {}


@dataclass(frozen=True)
class GridFit:
    """The fitted homography (board mm -> pixels of the image searched) and how well the grid fits."""

    homography: np.ndarray
    inliers: int  # samples whose printed line was found within ``inlier_px`` of the fitted position
    samples: int  # samples inside the image
    rms_px: float  # RMS across-line offset of the inliers
    bow: np.ndarray  # (6,) hump terms (homogeneous), zeros when not fitted

    @property
    def score(self) -> float:
        return self.inliers / max(self.samples, 1)


def template(board: Board, step_mm: float = 6.0, end_gap_mm: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """Sample points on the printed lines (board mm) and the unit normal to the line at each.

    Shared edges are taken once; ends are kept ``end_gap_mm`` clear of where lines meet.
    """
    key = (board.source, board.size_mm, len(board.spaces), step_mm, end_gap_mm)
    if key in _TEMPLATES:
        return _TEMPLATES[key]
    segs: dict = {}
    for space in board.spaces:
        poly = np.asarray(space.polygon, np.float64)
        for i in range(len(poly)):
            a, b = tuple(np.round(poly[i], 3)), tuple(np.round(poly[(i + 1) % len(poly)], 3))
            segs[tuple(sorted((a, b)))] = None
    w, _ = board.size_mm
    go = float(getattr(board, "go_line_y_mm", 0) or 0)
    if go > 0:
        segs[((0.0, go), (w, go))] = None
    pts, nrm = [], []
    for a, b in segs:
        a, b = np.array(a), np.array(b)
        d = b - a
        length = float(np.linalg.norm(d))
        if length <= 2 * end_gap_mm + 1:
            continue
        u = d / length
        n = int(np.floor((length - 2 * end_gap_mm) / step_mm)) + 1
        t = np.linspace(end_gap_mm, length - end_gap_mm, max(n, 2))
        pts.append(a[None] + t[:, None] * u[None])
        nrm.append(np.repeat(np.array([[-u[1], u[0]]]), len(t), axis=0))
    pts, nrm = np.concatenate(pts), np.concatenate(nrm)
    # collinear edges that overlap (a long edge against two short ones) would count twice: along
    # each line keep samples at least half a step apart
    lines: dict = {}
    for i, (p, n) in enumerate(zip(pts, nrm)):
        offset = float(np.round(p @ n, 2))
        direction = (round(abs(float(n[0])), 6), round(abs(float(n[1])), 6))
        along = float(p @ np.array([-n[1], n[0]])) * (1 if n[0] >= 0 and n[1] >= 0 else -1)
        lines.setdefault((direction, abs(offset)), []).append((along, i))
    keep = []
    for samples in lines.values():
        last = -np.inf
        for along, i in sorted(samples):
            if along - last >= step_mm / 2:
                keep.append(i)
                last = along
    keep.sort()
    out = (pts[keep], nrm[keep])
    _TEMPLATES[key] = out
    return out


def _bow_shape(pts_mm: np.ndarray, board: Board) -> tuple[np.ndarray, np.ndarray]:
    w, l = board.size_mm
    u = np.clip(pts_mm[:, 0] / w, 0, 1)
    v = np.clip(pts_mm[:, 1] / l, 0, 1)
    s1 = np.sin(np.pi * v)
    return s1, s1 * np.sin(np.pi * u)


def _project(hn: np.ndarray, bow: np.ndarray, pn: np.ndarray, s1: np.ndarray, s2: np.ndarray):
    """Homogeneous projection of normalised board points with the hump terms; (px (N, 2), homog (N, 3))."""
    hom = pn @ hn.T + s1[:, None] * bow[None, :3] + s2[:, None] * bow[None, 3:]
    return hom[:, :2] / hom[:, 2:3], hom


class _Samples(NamedTuple):
    """The printed grid's samples in the fit's normalised coordinates (board mm / board length:
    better conditioned), and ``homography`` as ``hn`` on those coordinates with its last term 1."""

    pts_mm: np.ndarray  # (N, 2) samples on the printed lines
    nrm_mm: np.ndarray  # (N, 2) their unit normals
    scale: np.ndarray  # board mm -> normalised
    hn: np.ndarray
    h22: float  # what hn was divided by
    pn: np.ndarray  # (N, 3) homogeneous normalised samples
    ahead: np.ndarray  # (N, 3) the same, half a mm across their line
    s1: np.ndarray  # hump shapes at the samples (_bow_shape)
    s2: np.ndarray


def _samples(homography: np.ndarray, board: Board) -> _Samples:
    pts_mm, nrm_mm = template(board)
    l_mm = board.size_mm[1]
    scale, hn, h22 = _normalised(homography, l_mm)
    pn = np.column_stack([pts_mm / l_mm, np.ones(len(pts_mm))])
    ahead = np.column_stack([(pts_mm + 0.5 * nrm_mm) / l_mm, np.ones(len(pts_mm))])
    s1, s2 = _bow_shape(pts_mm, board)
    return _Samples(pts_mm, nrm_mm, scale, hn, h22, pn, ahead, s1, s2)


def _normalised(homography: np.ndarray, l_mm: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(board mm -> normalised scale, ``homography`` on normalised coordinates with its last term 1, what it
    was divided by)."""
    scale = np.diag([1 / l_mm, 1 / l_mm, 1.0])
    hn = np.asarray(homography, np.float64) @ np.linalg.inv(scale)
    h22 = float(hn[2, 2])
    return scale, hn / h22, h22


def ridge_image(gray: np.ndarray, sigma: float) -> np.ndarray:
    """The photo as the printed lines are searched in: lightly smoothed."""
    return cv2.GaussianBlur(gray, (0, 0), sigma) if sigma > 0 else gray


def fit_grid(gray: np.ndarray, homography: np.ndarray, board: Board, radii=(8.0, 4.0, 2.0),
             bow: bool = True, inlier_px: float = 1.0, blur: float = 1.0, iterations: int = 3,
             min_contrast: float = 3.0, gap: float = 1.5, ridge: np.ndarray | None = None) -> GridFit:
    """Refine ``homography`` (board mm -> pixels of ``gray``) on the printed grid; see the module doc.
    ``ridge``: ``gray`` as ``ridge_image`` smooths it for ``blur``, when the caller registers many starts on it."""
    pts_mm, nrm_mm, scale, hn, _, pn, ahead, s1, s2 = _samples(homography, board)
    bowv = np.zeros(6)
    img = ridge_image(gray.astype(np.float32), blur) if ridge is None else ridge

    def measure(radius):
        return _measure(img, hn, bowv, pn, ahead, s1, s2, radius, min_contrast, gap)

    for stage, radius in enumerate(radii):
        use_bow = bow and stage == len(radii) - 1
        for _ in range(iterations):
            found, ok, nimg, _ = measure(radius)
            if ok.sum() < 30:
                break
            res = found[ok]
            mad = float(np.median(np.abs(res - np.median(res)))) * 1.4826
            c = max(3.0 * mad, 0.75 if stage == len(radii) - 1 else radius / 3)
            wts = np.clip(1 - (res / (2.5 * c)) ** 2, 0, None) ** 2  # Tukey
            jac = _jacobian(hn, bowv, pn[ok], s1[ok], s2[ok], nimg[ok], use_bow)
            sw = np.sqrt(wts)
            a = jac * sw[:, None]
            reg = np.zeros(jac.shape[1])
            if use_bow:
                reg[8:] = 1e-3 * np.trace(a[:, :8].T @ a[:, :8]) / 8
            delta = np.linalg.solve(a.T @ a + np.diag(reg) + 1e-12 * np.eye(len(reg)), a.T @ (res * sw))
            hn = hn + np.append(delta[:8], 0.0).reshape(3, 3)
            hn = hn / hn[2, 2]
            if use_bow:
                bowv = bowv + delta[8:]
            if np.abs(delta[:8]).max() < 1e-6:
                break
    hom_mm = hn @ scale
    hom_mm = hom_mm / hom_mm[2, 2]
    # how well the fitted model sits on the printed lines: offsets measured once more about it
    found, ok, nimg, inside = measure(max(2.0, radii[-1]))
    good = ok & (np.abs(found) <= inlier_px)
    if good.sum() < 16:
        return GridFit(hom_mm, int(good.sum()), int(inside.sum()), float("inf"), bowv)
    rms = float(np.sqrt(np.mean(found[good] ** 2)))
    return GridFit(hom_mm, int(good.sum()), int(inside.sum()), rms, bowv)


def shares_on_lines(ridge: np.ndarray, homographies: list[np.ndarray], board: Board, radius: float = 3.0,
                    inlier_px: float = 1.0, every: int = 1) -> np.ndarray:
    """For each of ``homographies``, the share of the printed grid's samples in view that lie within
    ``inlier_px`` of a printed line where it puts them, without moving it (``ridge``: the photo as
    ``fit_grid`` searches it): a quick ranking of many starting points. ``every``: only every so many
    samples are looked at (a rougher share, sooner). The samples of many are searched
    in one pass, in chunks under OpenCV's remap limit of 32767 rows (each sample's search is a row of its
    own: the same answers as one at a time, with less of numpy's overhead per call)."""
    sm = _samples(np.eye(3), board)
    pn, ahead, s1, s2 = sm.pn[::every], sm.ahead[::every], sm.s1[::every], sm.s2[::every]
    zeros, n = np.zeros(6), len(pn)
    pn_ahead, s1_twice, s2_twice = np.vstack([pn, ahead]), np.tile(s1, 2), np.tile(s2, 2)
    per_pass = max(1, 32000 // n)
    shares = []
    for first in range(0, len(homographies), per_pass):
        chunk = homographies[first:first + per_pass]
        # each start's samples and the points half a mm across their lines, projected together
        both = [_project(_normalised(h, board.size_mm[1])[1], zeros, pn_ahead, s1_twice, s2_twice)[0] for h in chunk]
        q = np.concatenate([b[:n] for b in both])
        q2 = np.concatenate([b[n:] for b in both])
        found, ok, _, inside = _search(ridge, q, q2, radius, 3.0, 1.5)
        on_line = (ok & (np.abs(found) <= inlier_px)).reshape(len(chunk), -1).sum(axis=1)
        in_view = inside.reshape(len(chunk), -1).sum(axis=1)
        shares.extend(on_line / np.maximum(in_view, 1))
    return np.asarray(shares, np.float64)


def _measure(img, hn, bowv, pn, ahead, s1, s2, radius, min_contrast, gap):
    """Across-line offsets (px) of the printed line from where the model puts it, at every sample:
    (offsets, whether a line was found, unit across-line directions in the image, inside the image)."""
    q, _ = _project(hn, bowv, pn, s1, s2)
    q2, _ = _project(hn, bowv, ahead, s1, s2)
    return _search(img, q, q2, radius, min_contrast, gap)


PULL_REACH_PX = 3.0  # a found line's lopsidedness: the profile this far ahead of it minus as far behind it ...
PULL_CLIP = 5.0  # ... over the line's depth, clipped to +/- this


def _search(img, q, q2, radius, min_contrast, gap, lopsided: bool = False):
    """``_measure`` for samples the model puts at pixels ``q``, with ``q2`` a little across their line;
    with ``lopsided`` also how lopsided each found line's surroundings are (PULL_REACH_PX, PULL_CLIP): a
    coloured band or a border printed beside a line pulls where it is found."""
    h_img, w_img = img.shape[:2]
    nimg = q2 - q
    nimg /= np.maximum(np.linalg.norm(nimg, axis=1, keepdims=True), 1e-9)
    step = 0.5
    offs = np.arange(-radius, radius + step / 2, step, dtype=np.float32)
    xs = (q[:, None, 0] + offs[None] * nimg[:, None, 0]).astype(np.float32)
    ys = (q[:, None, 1] + offs[None] * nimg[:, None, 1]).astype(np.float32)
    ends_x, ends_y = xs[:, [0, -1]], ys[:, [0, -1]]  # a profile is straight: it is furthest out at its ends
    inside = ((ends_x.min(1) >= 1) & (ends_x.max(1) <= w_img - 2)
              & (ends_y.min(1) >= 1) & (ends_y.max(1) <= h_img - 2))
    prof = cv2.remap(img, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    # a thin dark line: darker than both sides ``gap`` px away (a ridge, not a step), strongest in
    # the window; it is then placed at the peak of the symmetric response (mean of both sides minus
    # the centre): the darker side that the test above keeps would pull it towards a coloured band
    # or a border printed beside the line
    g = int(round(gap / step))
    column = np.arange(len(offs))  # each side's value, the profile's end repeated past it
    before, after = prof[:, np.maximum(column - g, 0)], prof[:, np.minimum(column + g, len(offs) - 1)]
    ridge = np.minimum(before, after) - prof
    k = np.argmax(ridge[:, 1:-1], axis=1) + 1
    rows = np.arange(len(prof))
    contrast = ridge[rows, k]
    centre = 0.5 * (before + after) - prof
    near = np.stack([centre[rows, np.clip(k + d, 1, len(offs) - 2)] for d in (-1, 0, 1)], axis=1)
    k = np.clip(k + np.argmax(near, axis=1) - 1, 1, len(offs) - 2)
    y0, y1, y2 = centre[rows, k - 1], centre[rows, k], centre[rows, k + 1]
    den = y0 - 2 * y1 + y2
    sub = np.where(den < -1e-6, 0.5 * (y0 - y2) / np.minimum(den, -1e-6), 0.0)
    found = offs[k] + np.clip(sub, -0.5, 0.5) * step
    ok = inside & (contrast >= min_contrast) & (k > 1) & (k < len(offs) - 2)
    if not lopsided:
        return found, ok, nimg, inside
    reach = int(round(PULL_REACH_PX / step))
    ahead, behind = (prof[rows, np.clip(k + d, 0, len(offs) - 1)] for d in (reach, -reach))
    return found, ok, nimg, inside, np.clip((ahead - behind) / np.maximum(contrast, 1e-6), -PULL_CLIP, PULL_CLIP)


def _jacobian(hn, bowv, pn, s1, s2, nimg, use_bow) -> np.ndarray:
    """Derivative of each sample's across-line position with respect to h00..h21 (and the hump terms)."""
    _, hom = _project(hn, bowv, pn, s1, s2)
    qx, qy, ww = hom[:, 0] / hom[:, 2], hom[:, 1] / hom[:, 2], hom[:, 2]
    nx, ny = nimg[:, 0], nimg[:, 1]
    along = nx * qx + ny * qy
    basis = [pn[:, 0], pn[:, 1], np.ones(len(pn))]
    cols = [nx * b / ww for b in basis] + [ny * b / ww for b in basis] + [-along * b / ww for b in basis[:2]]
    if use_bow:
        for s in (s1, s2):
            cols += [nx * s / ww, ny * s / ww, -along * s / ww]
    return np.column_stack(cols)


def _offsets_at(gray: np.ndarray, homography: np.ndarray, board: Board, radius: float, inlier_px: float,
                bow: np.ndarray | None = None):
    """The printed lines' offsets from where ``homography`` (and the hump terms ``bow`` of a
    bowed fit, if given) puts them, at the samples where a line was found within ``inlier_px``:
    (samples mm, their normals, offsets px, across-line directions, derivative of each offset
    with respect to the normalised homography's eight terms, normalised homography)."""
    pts_mm, nrm_mm, _, hn, h22, pn, ahead, s1, s2 = _samples(homography, board)
    bowv = np.zeros(6) if bow is None else np.asarray(bow, np.float64) / h22
    img = ridge_image(gray.astype(np.float32), 1.0)
    found, ok, nimg, _ = _measure(img, hn, bowv, pn, ahead, s1, s2, radius, 3.0, 1.5)
    good = ok & (np.abs(found) <= inlier_px)
    jac = _jacobian(hn, bowv, pn[good], s1[good], s2[good], nimg[good], False)
    return pts_mm[good], nrm_mm[good], found[good], nimg[good], jac, hn


def corner_spread_mm(gray: np.ndarray, homography: np.ndarray, board: Board, radius: float = 2.0,
                     inlier_px: float = 1.0, segment_mm: float = 80.0, resamples: int = 40, seed: int = 0,
                     bow: np.ndarray | None = None) -> float:
    """How much the board's corners depend on which printed lines were seen (board mm, RMS of the
    worst corner over bootstrap resamples of line pieces ``segment_mm`` long).

    A line mis-read along one piece (a coloured band beside it, a token, glare) moves the fit
    when that piece is left out or counted twice; the corners lie outside the printed lines, so
    such a doubt grows on the way to them. ``bow``: the hump terms of a bowed fit (GridFit.bow).
    """
    pts, nrm, res, _, jac, hn = _offsets_at(gray, homography, board, radius, inlier_px, bow)
    return _spread(pts, nrm, res, jac, hn, board, segment_mm, resamples, seed)


def _spread(pts, nrm, res, jac, hn, board: Board, segment_mm: float = 80.0, resamples: int = 40,
            seed: int = 0) -> float:
    """corner_spread_mm's bootstrap, from the printed lines' offsets ``res`` at samples ``pts`` (board
    mm, line normals ``nrm``) and their derivatives ``jac`` by the normalised homography ``hn``."""
    if len(res) < 16:
        return float("inf")
    w_mm, l_mm = board.size_mm
    along = np.where(np.abs(nrm[:, 0]) > 0.5, pts[:, 1], pts[:, 0])
    offset = np.where(np.abs(nrm[:, 0]) > 0.5, pts[:, 0], pts[:, 1])
    key = np.round(np.abs(nrm[:, 0])) * 1e6 + np.round(offset) * 1e2 + np.floor(along / segment_mm)
    _, piece = np.unique(key, return_inverse=True)
    n_pieces = piece.max() + 1
    corners = np.array([[0, 0, 1], [w_mm / l_mm, 0, 1], [w_mm / l_mm, 1, 1], [0, 1, 1.0]])
    h_inv = np.linalg.inv(hn)
    rng = np.random.default_rng(seed)
    worst = []
    for _ in range(resamples):
        wts = np.sqrt(np.bincount(rng.integers(0, n_pieces, n_pieces), minlength=n_pieces)[piece])
        delta = np.linalg.lstsq(jac * wts[:, None], res * wts, rcond=None)[0]
        px = corners @ (hn + np.append(delta, 0.0).reshape(3, 3)).T
        back = (px / px[:, 2:3]) @ h_inv.T
        back = back[:, :2] / back[:, 2:3]
        worst.append(np.max(np.linalg.norm(back - corners[:, :2], axis=1)) * l_mm)
    return float(np.sqrt(np.mean(np.square(worst))))


def hump_mm(gray: np.ndarray, homography: np.ndarray, board: Board, radius: float = 2.0,
            inlier_px: float = 1.0) -> float:
    """How far (board mm, at the board's middle) the printed lines sit from where a flat board puts
    them, in the shape of a hump along the board (zero at both ends).

    A board that does not lie flat bends its printed lines in that shape, and no homography can
    follow it: the flat fit then misplaces the corners. The hump is fitted together with a small
    change of the homography, so that what a homography can explain does not count.
    """
    pts, _, res, nimg, jac, _ = _offsets_at(gray, homography, board, radius, inlier_px)
    if len(res) < 30:
        return float("inf")
    w_mm, l_mm = board.size_mm
    s1, s2 = _bow_shape(pts, board)
    a = np.hstack([jac, (s1[:, None] * nimg), (s2[:, None] * nimg)])
    sol = np.linalg.lstsq(a, res, rcond=None)[0]
    centre = np.array([[w_mm / 2, l_mm / 2], [w_mm / 2 + 1, l_mm / 2], [w_mm / 2, l_mm / 2 + 1]])
    px = cv2.perspectiveTransform(centre.reshape(-1, 1, 2), np.asarray(homography, np.float64)).reshape(-1, 2)
    px_per_mm = 0.5 * (np.linalg.norm(px[1] - px[0]) + np.linalg.norm(px[2] - px[0]))
    return float(np.hypot(sol[8], sol[9]) / px_per_mm)


def fit_grid_bowed(gray: np.ndarray, homography: np.ndarray, board: Board, up, radii=(3.0, 2.0, 2.0),
                   iterations: int = 4, inlier_px: float = 1.0) -> tuple[GridFit, tuple[float, float]]:
    """Refine ``homography`` on the printed grid of a board that may not lie flat: a hump of
    ``by`` mm along it and ``bx`` mm more across it (zero at the corners), seen as a step up.

    ``up(homography)`` gives the image (homogeneous, same scale as the homography with its last
    term 1) of a 1 mm step up from the board, from the camera the homography implies: the hump
    then has two unknowns only, which the printed lines determine well, unlike a free hump.
    Returns the fit (its homography is the flat board plane's) and (by, bx) in mm.
    """
    bent = _fit_bent(gray, homography, board, up, False, radii, iterations, inlier_px, tol=1e-6)
    fit = GridFit(bent.homography, int(bent.good.sum()), bent.inside, bent.rms_px, bent.bow)
    return fit, bent.hump


HUMP_SEARCH_MM = (2.0, 4.0, 6.0, 8.0, 10.0)  # fit_lift's coarse search of a hump along the board


class Lift(NamedTuple):
    """How far the printed lines lie above a homography's plane, along the camera's "up" (``fit_lift``)."""

    mm: float  # at the board's corners
    se_mm: float  # its standard error, from the lines' scatter
    samples: int  # printed-line samples that measured it
    hump: tuple[float, float]  # (along, across) mm more between the corners, as ``fit_grid_bowed``'s


def fit_lift(gray: np.ndarray, homography: np.ndarray, up, board: Board, search_mm=(-3.0, 15.0),
             radii=(4.0, 3.0, 2.0), iterations: int = 4, min_samples: int = 60, hump: bool = True,
             height_mm: float | None = None) -> Lift | None:
    """How far above the plane of ``homography`` (board mm -> pixels of ``gray``) the printed lines lie:
    the board's face above the table, where the marker cards lie. A point p of the face is at
    ``homography`` p + (t + hump(p)) ``up`` (``up`` as for ``fit_grid_bowed``, the image of a 1 mm step
    up; the hump is ``fit_grid_bowed``'s, zero at the corners): three unknowns. The lift in ``search_mm``
    that puts the most samples on a printed line, dark or light (0.5 mm steps, the board flat), starts
    Gauss-Newton on their across-line offsets with Tukey weights, as ``fit_grid``; None when fewer than
    ``min_samples`` are found. ``hump=False``: the face flat, the lift the only unknown. ``height_mm``: the
    lift held there, the hump the only unknowns (its standard error is then 0: it was not measured)."""
    sm = _samples(homography, board)
    upn = np.asarray(up, np.float64) / sm.h22
    step = np.outer(upn, [0.0, 0.0, 1.0])  # 1 mm of lift, on hn's scale
    plain = gray.astype(np.float32)

    def measure(img, x, radius):
        bow = np.concatenate([x[1] * upn, x[2] * upn])
        return _measure(img, sm.hn + x[0] * step, bow, sm.pn, sm.ahead, sm.s1, sm.s2, radius, 3.0, 1.5)

    def on_lines(img, lift, along=0.0):
        found, ok, _, _ = measure(img, np.array([lift, along, 0.0]), radii[-1])
        return int((ok & (np.abs(found) <= 1.0)).sum())

    held = np.array([height_mm is not None, not hump, not hump])  # parameters kept at their start
    if height_mm is not None:
        search_mm = (height_mm, height_mm)
    starts = [(on_lines(img, t), float(t), img) for img in (ridge_image(plain, 1.0), ridge_image(255 - plain, 1.0))
              for t in np.arange(search_mm[0], search_mm[1] + 0.25, 0.5)]
    best, lift, img = max(starts, key=lambda s: s[0])
    along = 0.0
    if hump:  # a humped board's middle lines sit higher than its corners': search the hump too, coarsely
        humped = [(on_lines(img, t, b), float(t), float(b)) for t in np.arange(search_mm[0], search_mm[1] + 0.5, 1.0)
                  for b in HUMP_SEARCH_MM]
        if max(humped)[0] > best:
            best, lift, along = max(humped)
    if best < min_samples:
        return None
    x = np.array([lift, along, 0.0])
    jac = res = wts = np.zeros(0)
    sigma = 0.0
    for stage, radius in enumerate(radii):
        for _ in range(iterations):
            found, ok, nimg, _ = measure(img, x, radius)
            if ok.sum() < min_samples:
                return None
            q0 = _project(sm.hn + x[0] * step, np.concatenate([x[1] * upn, x[2] * upn]), sm.pn[ok], sm.s1[ok],
                          sm.s2[ok])[0]
            moved = _project(sm.hn + (x[0] + 1) * step, np.concatenate([x[1] * upn, x[2] * upn]), sm.pn[ok],
                             sm.s1[ok], sm.s2[ok])[0] - q0  # where 1 mm more of height moves each sample
            d = np.sum(moved * nimg[ok], axis=1)  # ... across its line
            jac = np.column_stack([d, d * sm.s1[ok], d * sm.s2[ok]]) * ~held
            res = found[ok]
            sigma = float(np.median(np.abs(res - np.median(res)))) * 1.4826
            c = max(3.0 * sigma, 0.75 if stage == len(radii) - 1 else radius / 3)
            wts = np.clip(1 - (res / (2.5 * c)) ** 2, 0, None) ** 2
            a = jac * np.sqrt(wts)[:, None]
            info = a.T @ a + np.diag(held.astype(float))  # the held terms stay where they started
            if np.linalg.cond(info) > 1e12:
                return None
            delta = np.linalg.solve(info, a.T @ (res * np.sqrt(wts)))
            x = x + delta
            if np.abs(delta).max() < 1e-3:
                break
    a = jac * np.sqrt(wts)[:, None]
    se = 0.0 if held[0] else max(sigma, 0.05) * np.sqrt(np.linalg.inv(a.T @ a + np.diag(held.astype(float)))[0, 0])
    return Lift(float(x[0]), float(se), int((wts > 0).sum()), (float(x[1]), float(x[2])))


@dataclass(frozen=True)
class LensFit:
    """Radial lens distortion read off the printed lines, with the homography (and hump) fitted alongside it."""

    homography: np.ndarray  # board mm -> undistorted pixels (the Calibration convention)
    camera_matrix: np.ndarray  # nominal focal length max(width, height), principal point at the centre
    dist_coeffs: np.ndarray  # (5,) OpenCV k1 k2 p1 p2 k3; only k1 is fitted
    hump: tuple[float, float]  # (along, across) mm, as fit_grid_bowed; zeros unless ``up`` was given
    score: float  # share of the printed-grid samples found within inlier_px of where the fit puts them
    rms_px: float  # RMS across-line offset of those
    k1_sigma: float  # standard error of k1
    shift_px: float  # largest distance the lens moves a board corner (how much it matters here)
    spread_mm: float  # corner_spread_mm of the corners on the photo's own pixels, the lens and the hump held


def nominal_camera(image_size: tuple[int, int]) -> np.ndarray:
    """A camera matrix for a lens whose focal length is not known: focal length max(width, height),
    principal point at the centre. For a lens fitted to it only the distortion's shape in the image
    matters, and that is the same for any focal length chosen."""
    w, h = image_size
    f = float(max(w, h))
    return np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])


def _distort(q: np.ndarray, k1: float, cam: np.ndarray):
    """Undistorted pixels -> distorted (radial k1); also u (normalised about the centre) and r^2."""
    c, f = cam[:2, 2], cam[0, 0]
    u = (q - c) / f
    r2 = np.sum(u * u, axis=1)
    return c + f * u * (1 + k1 * r2)[:, None], u, r2


def fit_lens(gray: np.ndarray, homography: np.ndarray, board: Board, up=None, lens: bool = True,
             radii=(3.0, 2.0, 2.0), iterations: int = 4, inlier_px: float = 1.0,
             segment_mm: float = 80.0, pull: bool = False) -> LensFit:
    """Fit radial distortion k1 together with the homography on the printed grid of a photo whose
    lens is unknown (``homography``: board mm -> pixels of ``gray``); with ``up`` (see
    fit_grid_bowed) the board's hump too, which bends the lines in another shape. ``lens=False``
    fits the same without the lens (to compare: how much the lens explains).

    The printed lines are straight on the board; a lens bends them about the image centre, which no
    homography can follow (plumb-line calibration, with the board's own lines as the plumb lines).
    ``segment_mm``: the line pieces of its corner spread (corner_spread_mm). ``pull``: one more unknown,
    how far a line is found off per unit of how lopsided its surroundings are (_search), taken off every
    offset: a far end pulled one way by its coloured bands is what a barrel lens can take up.
    """
    bent = _fit_bent(gray, homography, board, up, lens, radii, iterations, inlier_px, tol=1e-7, segment_mm=segment_mm,
                     pull=pull)
    corners = board_corners_px(bent.homography, board)
    shift = float(np.max(np.linalg.norm(_distort(corners, bent.k1, bent.camera)[0] - corners, axis=1)))
    return LensFit(bent.homography, bent.camera, np.array([bent.k1, 0.0, 0.0, 0.0, 0.0]), bent.hump,
                   float(bent.good.sum()) / max(bent.inside, 1), bent.rms_px, bent.k1_sigma, shift,
                   bent.spread_mm)


class _Bent(NamedTuple):
    """What ``_fit_bent`` found: the flat plane's homography (board mm -> undistorted pixels), the
    hump, the lens, and how the printed lines sit about them at the end."""

    homography: np.ndarray
    hump: tuple[float, float]
    bow: np.ndarray  # (6,) the hump terms of the homogeneous projection (see _project)
    k1: float
    camera: np.ndarray
    good: np.ndarray  # samples whose line was found within inlier_px
    inside: int  # samples inside the image
    rms_px: float
    k1_sigma: float
    spread_mm: float  # with a lens: corner_spread_mm of this fit (the lens and the hump held); else nan


def _fit_bent(gray, homography, board, up, lens, radii, iterations, inlier_px, tol, segment_mm: float = 80.0,
              pull: bool = False) -> _Bent:
    """Gauss-Newton on the printed lines' across-line offsets (square root of Tukey's weights): the
    homography, with ``up`` the hump too (see fit_grid_bowed), with ``lens`` radial k1 about the
    image centre of a nominal camera, with ``pull`` the bands' pull (see fit_lens)."""
    fit = _BentFit(gray, homography, board, up, lens, pull)
    for radius in radii:
        for _ in range(iterations):
            if not fit.iterate(radius, tol):
                break
    return fit.result(inlier_px, segment_mm)


class _BentFit:
    """One ``_fit_bent`` under way: what it refines (the homography on normalised board points ``hn``, the hump,
    the lens's k1, the bands' pull in px) and its last step's Jacobian, residuals and weights (for k1_sigma)."""

    def __init__(self, gray, homography, board, up, lens, pull) -> None:
        h_img, w_img = gray.shape[:2]
        self.cam = nominal_camera((w_img, h_img))
        self.pts_mm, self.nrm_mm, self.scale, self.hn, _, self.pn, self.ahead, self.s1, self.s2 = _samples(homography,
                                                                                                           board)
        self.img = ridge_image(gray.astype(np.float32), 1.0)
        self.board, self.up, self.lens, self.pull = board, up, lens, pull
        self.k1, self.hump, self.pull_px = 0.0, np.zeros(2), 0.0
        self.jac = self.res = self.wts = None

    def _hump_terms(self):
        """(hump terms, image of a step up) for the current homography, zeros without ``up``."""
        if self.up is None:
            return np.zeros(6), np.zeros(3)
        h_mm = self.hn @ self.scale
        step = self.up(h_mm / h_mm[2, 2]) / h_mm[2, 2]
        return np.concatenate([self.hump[0] * step, self.hump[1] * step]), step

    def measure(self, radius):
        """The printed lines searched for within ``radius`` px of where the fit puts them, and the fit's terms."""
        bowv, step = self._hump_terms()
        qu, hom = _project(self.hn, bowv, self.pn, self.s1, self.s2)
        q2u = _project(self.hn, bowv, self.ahead, self.s1, self.s2)[0]
        if not self.lens:  # no lens: undistorted pixels are the photo's
            return _search(self.img, qu, q2u, radius, 3.0, 1.5, lopsided=True), (bowv, step, qu, hom, None, None)
        q, u, r2 = _distort(qu, self.k1, self.cam)
        return (_search(self.img, q, _distort(q2u, self.k1, self.cam)[0], radius, 3.0, 1.5, lopsided=True),
                (bowv, step, qu, hom, u, r2))

    def iterate(self, radius: float, tol: float) -> bool:
        """One Gauss-Newton step at search ``radius``; False when too few lines were found, or it has converged."""
        (found, ok, nimg, _, lopsided), (bowv, step, _, hom, u, r2) = self.measure(radius)
        if ok.sum() < 30:
            return False
        res = found[ok] - self.pull_px * lopsided[ok]
        mad = float(np.median(np.abs(res - np.median(res)))) * 1.4826
        wts = np.clip(1 - (res / (2.5 * max(3.0 * mad, 0.75))) ** 2, 0, None)  # square root of Tukey's
        jac = self._columns(ok, nimg, bowv, step, hom, u, r2, lopsided)
        delta = np.linalg.lstsq(jac * wts[:, None], res * wts, rcond=None)[0]
        self.jac, self.res, self.wts = jac, res, wts
        hn = self.hn + np.append(delta[:8], 0.0).reshape(3, 3)
        self.hn = hn / hn[2, 2]
        if self.up is not None:
            self.hump += delta[8:10]
        if self.pull:
            self.pull_px += float(delta[-2 if self.lens else -1])
        if self.lens:
            self.k1 += float(delta[-1])
        return not np.abs(delta).max() < tol

    def _columns(self, ok, nimg, bowv, step, hom, u, r2, lopsided) -> np.ndarray:
        """The Jacobian of the found lines' offsets: the homography's 8 terms, then the hump's 2, the pull, k1."""
        n = nimg[ok]
        if self.lens:  # the across-line direction pulled back through the lens (its derivative is symmetric)
            uo, r2o = u[ok], r2[ok]
            n_flat = (1 + self.k1 * r2o)[:, None] * n + 2 * self.k1 * uo * np.sum(n * uo, axis=1, keepdims=True)
        else:
            n_flat = n
        cols = [_jacobian(self.hn, bowv, self.pn[ok], self.s1[ok], self.s2[ok], n_flat, False)]
        if self.up is not None:
            along = np.sum(n_flat * (hom[ok, :2] / hom[ok, 2:3]), axis=1)
            d_up = (n_flat @ step[:2] - along * step[2]) / hom[ok, 2]
            cols += [(self.s1[ok] * d_up)[:, None], (self.s2[ok] * d_up)[:, None]]
        if self.pull:
            cols.append(lopsided[ok][:, None])
        if self.lens:  # last: k1_sigma below reads its variance
            cols.append((self.cam[0, 0] * np.sum(n * uo, axis=1) * r2o)[:, None])
        return np.hstack(cols)

    def result(self, inlier_px: float, segment_mm: float) -> _Bent:
        """The fit as it stands, its lines searched for once more within 2 px."""
        (found, ok, nimg, inside, _), (bowv, _, _, _, u, r2) = self.measure(2.0)
        good = ok & (np.abs(found) <= inlier_px)
        rms = float(np.sqrt(np.mean(found[good] ** 2))) if good.any() else float("inf")
        spread = float("nan")  # a flat or bowed fit's caller measures it itself (corner_spread_mm)
        k1 = self.k1
        if self.lens:  # the across-line directions pulled back through the lens, as in the fit
            n = nimg[good]
            n = (1 + k1 * r2[good])[:, None] * n + 2 * k1 * u[good] * np.sum(n * u[good], axis=1, keepdims=True)
            spread = _spread(self.pts_mm[good], self.nrm_mm[good], found[good],
                             _jacobian(self.hn, bowv, self.pn[good], self.s1[good], self.s2[good], n, False), self.hn,
                             self.board, segment_mm)
        k1_sigma = float("inf")
        jac, res, wts = self.jac, self.res, self.wts
        if self.lens and jac is not None and len(res) > 16:
            a = jac * wts[:, None]
            dof = max(float(np.sum(wts > 0)) - jac.shape[1], 1.0)
            k1_sigma = float(np.sqrt(max(np.linalg.pinv(a.T @ a)[-1, -1], 0.0) * np.sum((wts * res) ** 2) / dof))
        h_mm = self.hn @ self.scale
        return _Bent(h_mm / h_mm[2, 2], (float(self.hump[0]), float(self.hump[1])), bowv, k1, self.cam, good,
                     int(inside.sum()), rms, k1_sigma, spread)


def printed_line_width_px(image: np.ndarray, calibration, board: Board, radius: float = 14.0) -> float:
    """How wide the printed lines look where ``calibration`` puts them (px, half-depth width of their
    median profile, the wider of the two line directions): a measure of blur that the board's own art
    makes independent of the table. Sharp photos show 2-5 px; motion blur or defocus up to 12 (tuning
    renders, bench seeds 3000-3199); inf when no line shows at all. Taken on the brightest channel,
    where a coloured band beside a line stays light."""
    bright = np.ascontiguousarray(image.max(axis=2) if image.ndim == 3 else image).astype(np.float32)
    pts, nrm = template(board)
    q = calibration.mm_to_px(pts)
    n = calibration.mm_to_px(pts + 0.5 * nrm) - q
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)
    step = 0.5
    offs = np.arange(-radius, radius + step / 2, step, dtype=np.float32)
    xs = (q[:, None, 0] + offs[None] * n[:, None, 0]).astype(np.float32)
    ys = (q[:, None, 1] + offs[None] * n[:, None, 1]).astype(np.float32)
    h, w = bright.shape
    inside = (xs.min(1) >= 1) & (xs.max(1) <= w - 2) & (ys.min(1) >= 1) & (ys.max(1) <= h - 2)
    prof = cv2.remap(bright, xs, ys, cv2.INTER_LINEAR)
    centre, window, half = len(offs) // 2, int(4 / step), int(10 / step)
    widths = []
    across_x = np.abs(nrm[:, 1]) > 0.5  # lines along the board's width, then those along its length
    for chosen in (across_x & inside, ~across_x & inside):
        if chosen.sum() < 20:
            continue
        p = prof[chosen]
        # each profile centred on its darkest point near where the line should be, then the median
        k = centre - window + np.argmin(p[:, centre - window:centre + window + 1], axis=1)
        m = np.median(np.stack([row[c - half:c + half + 1] for row, c in zip(p, k)]), axis=0)
        level = np.median(np.concatenate([m[:4], m[-4:]]))
        depth = level - m[half]
        if depth <= 1.0:
            widths.append(float("inf"))
            continue
        dark = m <= level - depth / 2
        lo = hi = half
        while lo > 0 and dark[lo - 1]:
            lo -= 1
        while hi < len(m) - 1 and dark[hi + 1]:
            hi += 1
        widths.append((hi - lo + 1) * step)
    return max(widths) if widths else float("nan")
