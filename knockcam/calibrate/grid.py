"""Registration to the printed grid: the homography that puts the board file's space outlines on the
printed lines in the photo, to a fraction of a pixel.

Every print style draws the same lines at the same board millimetres (only colours, weights and
fonts differ), so the line *positions* are a template that fits any art. Samples along every space
edge (and the GO! line) are projected with the current homography; across each, the photo's
profile is searched for the printed line (a dark ridge); the homography is then moved to minimise
the robust sum of those across-line offsets (Gauss-Newton on point-to-line distances).

``bow=True`` also fits a smooth hump along the board (zero at both ends, where the corners are),
for boards that do not lie flat. It is off in the automatic method: measured on the fixtures it
did not make the corners better (the bowed fixture is still placed by its outline).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam.board.layout import Board

_TEMPLATES: dict = {}


@dataclass(frozen=True)
class GridFit:
    """The fitted homography (board mm -> pixels of the image searched) and how well the grid fits."""

    homography: np.ndarray
    inliers: int  # samples whose printed line was found within ``inlier_px`` of the fitted position
    samples: int  # samples inside the image
    rms_px: float  # RMS across-line offset of the inliers
    corner_sigma_px: np.ndarray  # (4,) standard error of each corner's position (px), from the fit's covariance
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


def _ridge_image(gray: np.ndarray, sigma: float) -> np.ndarray:
    return cv2.GaussianBlur(gray, (0, 0), sigma) if sigma > 0 else gray


def fit_grid(gray: np.ndarray, homography: np.ndarray, board: Board, radii=(8.0, 4.0, 2.0),
             bow: bool = True, inlier_px: float = 1.0, blur: float = 1.0, iterations: int = 3,
             min_contrast: float = 3.0, gap: float = 1.5) -> GridFit:
    """Refine ``homography`` (board mm -> pixels of ``gray``) on the printed grid; see the module doc."""
    pts_mm, nrm_mm = template(board)
    w_mm, l_mm = board.size_mm
    scale = np.diag([1 / l_mm, 1 / l_mm, 1.0])  # normalised board coordinates: better conditioned
    pn = np.column_stack([pts_mm / l_mm, np.ones(len(pts_mm))])
    s1, s2 = _bow_shape(pts_mm, board)
    hn = np.asarray(homography, np.float64) @ np.linalg.inv(scale)
    hn = hn / hn[2, 2]
    bowv = np.zeros(6)
    img = _ridge_image(gray.astype(np.float32), blur)
    h_img, w_img = img.shape[:2]
    ahead = np.column_stack([(pts_mm + 0.5 * nrm_mm) / l_mm, np.ones(len(pts_mm))])
    def measure(radius):
        """Across-line offsets of the printed line from where the model puts it, at every sample."""
        q, _ = _project(hn, bowv, pn, s1, s2)
        q2, _ = _project(hn, bowv, ahead, s1, s2)
        nimg = q2 - q
        nimg /= np.maximum(np.linalg.norm(nimg, axis=1, keepdims=True), 1e-9)
        step = 0.5
        offs = np.arange(-radius, radius + step / 2, step, dtype=np.float32)
        xs = (q[:, None, 0] + offs[None] * nimg[:, None, 0]).astype(np.float32)
        ys = (q[:, None, 1] + offs[None] * nimg[:, None, 1]).astype(np.float32)
        inside = (xs.min(1) >= 1) & (xs.max(1) <= w_img - 2) & (ys.min(1) >= 1) & (ys.max(1) <= h_img - 2)
        prof = cv2.remap(img, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        # a thin dark line: darker than both sides ``gap`` px away (a ridge), strongest in the window
        g = int(round(gap / step))
        padded = np.pad(prof, ((0, 0), (g, g)), mode="edge")
        resp = np.minimum(padded[:, :-2 * g], padded[:, 2 * g:]) - prof
        k = np.argmax(resp[:, 1:-1], axis=1) + 1
        rows = np.arange(len(prof))
        y0, y1, y2 = resp[rows, k - 1], resp[rows, k], resp[rows, k + 1]
        den = y0 - 2 * y1 + y2
        sub = np.where(den < -1e-6, 0.5 * (y0 - y2) / np.minimum(den, -1e-6), 0.0)
        found = offs[k] + np.clip(sub, -0.5, 0.5) * step
        contrast = y1
        ok = inside & (contrast >= min_contrast) & (k > 1) & (k < len(offs) - 2)
        return found, ok, nimg, inside

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
        return GridFit(hom_mm, int(good.sum()), int(inside.sum()), float("inf"), np.full(4, np.inf), bowv)
    rms = float(np.sqrt(np.mean(found[good] ** 2)))
    jac = _jacobian(hn, bowv, pn[good], s1[good], s2[good], nimg[good], bow)
    sigma_c = _corner_sigma(hn, jac, rms, board, l_mm)
    return GridFit(hom_mm, int(good.sum()), int(inside.sum()), rms, sigma_c, bowv)


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


def _corner_sigma(hn, jac, rms, board, l_mm) -> np.ndarray:
    """Standard error (px) of each board corner's position implied by the fit's covariance."""
    if len(jac) < 16:
        return np.full(4, np.inf)
    cov = np.linalg.pinv(jac.T @ jac) * rms**2
    cov = cov[:8, :8]
    w, l = board.size_mm
    out = []
    for x, y in [(0, 0), (w, 0), (w, l), (0, l)]:
        p = np.array([x / l_mm, y / l_mm, 1.0])
        hp = hn @ p
        u, v, ww = hp[0] / hp[2], hp[1] / hp[2], hp[2]
        ju = np.array([p[0] / ww, p[1] / ww, 1 / ww, 0, 0, 0, -u * p[0] / ww, -u * p[1] / ww])
        jv = np.array([0, 0, 0, p[0] / ww, p[1] / ww, 1 / ww, -v * p[0] / ww, -v * p[1] / ww])
        out.append(np.sqrt(max(ju @ cov @ ju + jv @ cov @ jv, 0.0)))
    return np.array(out)
