"""The board's sides to a fraction of a pixel: edge profiles across each side of a rough outline,
a line fitted to each, the corners where they cross.

On a side whose edge face the camera sees, the top surface's edge is the one a board thickness
inside the table's (``side_face_px``); ``up_px`` is the image of a step up from the board, for the
camera recovered from the outline itself.
"""

from __future__ import annotations

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.outline import NOT_FOUND, square_to_quad
from knockcam.calibrate.quality import board_corners_mm, board_corners_px, homography_from_points
from knockcam.errors import KnockcamError


_PEAK = settings.load("calibrate")["auto"].get("edge_peak", "outermost")
_PEAK_FRAC = float(settings.load("calibrate")["auto"].get("edge_peak_fraction", 0.5))


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
    corners = board_corners_px(hom, board)
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
    hom = square_to_quad(np.asarray(corners, np.float64)[None] - centre)[0]
    a1, a2, b1, b2, c1, c2 = hom[0, 0], hom[0, 1], hom[1, 0], hom[1, 1], hom[2, 0], hom[2, 1]
    big = max(w, h) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        f2 = -(a1 * a2 + b1 * b2) / (c1 * c2)
    if not np.isfinite(f2) or not 0.09 * big < f2 < 25 * big:
        f2 = float(max(w, h)) ** 2 * 0.8
    return float(np.sqrt(f2))


def refine_sides(colour: np.ndarray, corners: np.ndarray, cfg: dict, first_radius: float, board: Board | None = None):
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
            raise KnockcamError(*NOT_FOUND)
        new = np.array([_line_intersection(fits[(a - 1) % 4], fits[a]) for a in range(4)])
        if not np.isfinite(new).all() or np.abs(new - corners).max() > 4 * radius + 5:
            raise KnockcamError(*NOT_FOUND)
        corners = new
        n_total = sum(f[3] for f in fits)
    return corners, n_total, fits


def _fit_side(img: np.ndarray, p: np.ndarray, q: np.ndarray, radius: float, samples: int,
              face_px_per_mm: float = 0.0, cfg: dict | None = None):
    """A robust line through the strongest-edge positions on profiles across side p-q.

    Returns (point, unit direction, residual std, number of points, spread along the side) or None.
    """
    d = q - p
    length = np.linalg.norm(d)
    if length < 10:
        return None
    u = d / length
    nrm = np.array([-u[1], u[0]])  # outward for an anticlockwise-on-screen quad (image y down)
    step = 0.25
    if face_px_per_mm > 0:  # see both the table's edge and the top surface's, a thickness apart
        radius = max(radius, float((cfg or {}).get("thickness_mm", (1.0, 7.0))[1]) * face_px_per_mm + 1.5)
    offs = np.arange(-radius, radius + step / 2, step)
    base = p[None, :] + np.linspace(0.06, 0.94, samples)[:, None] * d[None, :]
    mag, valid = _edge_profiles(img, base, offs, nrm, step)
    fewest = max(8, samples // 5)
    if valid.sum() < fewest:
        return None
    chosen = _board_edge(np.median(mag[valid], axis=0), offs, face_px_per_mm, cfg)
    if chosen is None:
        return None
    pts = _edge_points(mag, valid, base, offs, nrm, chosen, step)
    if len(pts) < fewest:
        return None
    return _robust_line(np.array(pts), fewest)


def _edge_profiles(img: np.ndarray, base: np.ndarray, offs: np.ndarray, nrm: np.ndarray,
                   step: float) -> tuple[np.ndarray, np.ndarray]:
    """The colour gradient's magnitude along profiles across the side (one per point of ``base``, at
    ``offs`` px along ``nrm``, ``step`` px apart), and which profiles count: inside the image and with an
    edge on them."""
    h, w = img.shape[:2]
    xs = (base[:, None, 0] + offs[None, :] * nrm[0]).astype(np.float32)
    ys = (base[:, None, 1] + offs[None, :] * nrm[1]).astype(np.float32)
    prof = cv2.remap(img, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)  # (samples, m, 3)
    deriv = np.gradient(prof, step, axis=1)
    mag = np.sqrt((deriv**2).sum(axis=2))
    valid = (xs.min(1) >= 1) & (xs.max(1) <= w - 2) & (ys.min(1) >= 1) & (ys.max(1) <= h - 2)
    valid &= mag.max(axis=1) >= 6.0
    return mag, valid


def _board_edge(avg: np.ndarray, offs: np.ndarray, face_px_per_mm: float, cfg: dict | None) -> int | None:
    """Which edge across the side is the board's (an index of ``offs``), decided on the profile averaged along
    the side (``avg``), where a faint but straight edge (board against a table of nearly its colour) stands
    out; None where the profile has no peak."""
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
        return chosen
    if _PEAK == "innermost":
        return strong[0]
    return inner[int(np.argmax(avg[inner]))]


def _edge_points(mag: np.ndarray, valid: np.ndarray, base: np.ndarray, offs: np.ndarray, nrm: np.ndarray,
                 chosen: int, step: float) -> list[np.ndarray]:
    """On each valid profile, the strongest gradient within a pixel of the board's edge (``chosen``), placed
    to a fraction of a step by a parabola through it and its neighbours: points (px) along the edge."""
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
    return pts


def _robust_line(pts: np.ndarray, fewest: int):
    """A line through ``pts`` (px), points over 3.5 robust sigmas off it (at least 0.6 px) left out until that
    settles: (point, unit direction, residual std, points kept, spread along it), or None when fewer than
    ``fewest`` points are kept."""
    keep = np.ones(len(pts), bool)
    for _ in range(4):
        c = pts[keep].mean(axis=0)
        _, _, vt = np.linalg.svd(pts[keep] - c, full_matrices=False)
        direction = vt[0]
        normal = np.array([-direction[1], direction[0]])
        res = (pts - c) @ normal
        mad = np.median(np.abs(res[keep] - np.median(res[keep])))
        new_keep = np.abs(res) <= max(0.6, 3.5 * 1.4826 * mad)
        if new_keep.sum() < fewest:
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


def edge_width_px(colour: np.ndarray, corners: np.ndarray, radius: float = 15.0, samples: int = 60) -> np.ndarray:
    """Per side (near, right, far, left): how wide (px) the board's edge looks across the side through
    ``corners``: the width at half height of the colour gradient's peak there, the profiles averaged
    along the side; at most 2 x ``radius`` where it never falls to half (a checkered cloth beside the board).
    A sharp photo's edge is 2-3.5 px wide; a blurred one's wider, and its peak has merged with the printed
    lines and the board's edge face beside it, so where it lies says less."""
    img = cv2.GaussianBlur(colour, (0, 0), 0.7).astype(np.float32)  # as refine_sides looks at it
    step = 0.25
    offs = np.arange(-radius, radius + step / 2, step)
    centre, near = len(offs) // 2, int(round(1.5 / step))
    widths = np.zeros(4)
    for a in range(4):
        p, q = corners[a], corners[(a + 1) % 4]
        d = q - p
        nrm = np.array([-d[1], d[0]]) / max(float(np.linalg.norm(d)), 1e-9)
        base = p[None, :] + np.linspace(0.1, 0.9, samples)[:, None] * d[None, :]
        xs = (base[:, None, 0] + offs[None, :] * nrm[0]).astype(np.float32)
        ys = (base[:, None, 1] + offs[None, :] * nrm[1]).astype(np.float32)
        prof = cv2.remap(img, xs, ys, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        avg = np.median(np.sqrt((np.gradient(prof, step, axis=1) ** 2).sum(axis=2)), axis=0)
        k = centre - near + int(np.argmax(avg[centre - near:centre + near + 1]))  # the fitted edge's peak
        above = avg >= avg[k] / 2
        lo = k - (int(np.argmin(above[k::-1])) if not above[:k + 1].all() else k)
        hi = k + (int(np.argmin(above[k:])) if not above[k:].all() else len(offs) - 1 - k)
        widths[a] = (hi - lo) * step
    return widths


def _line_intersection(f1, f2) -> np.ndarray:
    c1, d1 = f1[0], f1[1]
    c2, d2 = f2[0], f2[1]
    a = np.column_stack([d1, -d2])
    if abs(np.linalg.det(a)) < 1e-9:
        return np.array([np.nan, np.nan])
    s = np.linalg.solve(a, c2 - c1)
    return c1 + s[0] * d1


def line_fit_error_mm(fits, board: Board, samples: int = 100) -> float:
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
