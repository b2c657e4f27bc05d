"""The reference-frame detector: tokens are what changed since an empty-board frame from the same camera.

Both frames are warped top-down (board millimetres) and the light change between them is removed.
A pixel changed when its colour left the direction of the reference's colour (a shadow only scales
it); plastic-coloured changes (red, yellow, green, blue, hue after white balance on the paper; pale
where the board was much less saturated) and large changes form the token mask. Where the reference
is clipped its colour is unknown: only large changes count there. A standing token's figure leans
away from the camera in the warp, but its base disc lies on the board and every ray to it hits the
token first: the base is the disc of the board's base diameter that fits in the blob at the end
nearest the camera's nadir (the board point under the camera, recovered from the homography),
refined by a circle fit to the half-contrast rim on that side. Bases are taken nearest-first, so
touching tokens split.
Changes that no found token explains and that are too big for one (a hand, a cup, a card) are
reported as hidden areas: a token under them may not be seen, so a human must look there.
Independent of the board art. Known blind spot: a token on a printed area of its own colour
(a blue token on a dark-blue band) barely differs from the empty board there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import Detection, HiddenArea, Token, hidden_area
from knockcam.errors import KnockcamError
from knockcam.sides import SIDES

SOURCE = "reference"


# --- the camera ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Viewpoint:
    """Where the camera is over the board: its centre in board mm (z = height) and how it was found."""

    center_mm: np.ndarray  # (3,) x, y, height above the board face
    focal_px: float
    estimated_focal: bool  # False when the homography could not fix f (near-overhead) and a default was used

    @property
    def nadir_mm(self) -> np.ndarray:
        return self.center_mm[:2]

    @property
    def height_mm(self) -> float:
        return float(self.center_mm[2])


def viewpoint(calibration: Calibration) -> Viewpoint:
    """The camera centre from the homography: K from the lens model, or f from the orthogonality constraints.

    With K = [[f, 0, cx], [0, f, cy], [0, 0, 1]] (principal point at the image centre when the lens
    is not calibrated), K^-1 H = s [r1 r2 t]: r1 . r2 = 0 and |r1| = |r2| give two equations in 1/f^2.
    Near overhead both vanish and f is unknown; the nadir (what matters most) stays well defined.
    """
    h = np.asarray(calibration.homography, dtype=np.float64)
    w_img, h_img = calibration.image_size
    estimated = True
    if calibration.camera_matrix is not None:
        k = np.asarray(calibration.camera_matrix, dtype=np.float64)
        f = float(k[0, 0])
    else:
        cx, cy = w_img / 2.0, h_img / 2.0
        a = np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1.0]]) @ h
        a = a / np.linalg.norm(a[:, :2])
        (a1, b1, c1), (a2, b2, c2) = a[:, 0], a[:, 1]
        p = np.array([a1 * a2 + b1 * b2, a1 * a1 + b1 * b1 - a2 * a2 - b2 * b2])
        q = np.array([c1 * c2, c1 * c1 - c2 * c2])
        denom = float(p @ p)
        inv_f2 = -float(p @ q) / denom if denom > 0 else -1.0
        f = 1.0 / np.sqrt(inv_f2) if inv_f2 > 0 else np.inf
        lo, hi = 0.3 * w_img, 6.0 * w_img
        if not (lo <= f <= hi):
            f, estimated = 1.1 * w_img, False  # about a 50 degree lens: a phone or webcam
        k = np.array([[f, 0, cx], [0, f, cy], [0, 0, 1.0]])
    m = np.linalg.inv(k) @ h
    scale = 2.0 / (np.linalg.norm(m[:, 0]) + np.linalg.norm(m[:, 1]))
    m = m * scale
    if m[2, 2] < 0:  # the board origin must be in front of the camera
        m = -m
    r1, r2, t = m[:, 0], m[:, 1], m[:, 2]
    rot = np.column_stack([r1, r2, np.cross(r1, r2)])
    u, _, vt = np.linalg.svd(rot)
    rot = u @ vt
    center = -rot.T @ t
    center[2] = abs(center[2])
    return Viewpoint(center_mm=center, focal_px=float(f), estimated_focal=estimated)


# --- the top-down warp -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Warp:
    """Maps from the top-down working raster to the photo, shared by the photo and its reference."""

    view: TopDown
    map_x: np.ndarray
    map_y: np.ndarray
    valid: np.ndarray  # bool, the raster pixel falls inside the photo

    def apply(self, image: np.ndarray) -> np.ndarray:
        return cv2.remap(image, self.map_x, self.map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def make_warp(calibration: Calibration, board: Board, cfg: dict | None = None) -> Warp:
    """The photo -> top-down remap for this calibration (lens distortion included), on a coarse grid."""
    cfg = cfg or settings.load("reference")
    wcfg = cfg["warp"]
    view = TopDown(board, px_per_mm=float(wcfg["px_per_mm"]), margin_mm=float(wcfg["margin_mm"]))
    map_x, map_y = calibration.view_maps(view, int(wcfg["grid_px"]))
    iw, ih = calibration.image_size
    valid = (map_x >= 0) & (map_y >= 0) & (map_x <= iw - 1) & (map_y <= ih - 1)
    return Warp(view=view, map_x=map_x, map_y=map_y, valid=valid)


# --- light and colour ------------------------------------------------------------------------
def match_light(image: np.ndarray, reference: np.ndarray, valid: np.ndarray, cfg: dict) -> np.ndarray:
    """The reference as it would look under the photo's light (float32 BGR): a smooth per-channel gain field.

    Exposure, white balance and uneven light change between the two shots; each multiplies the
    reference locally. The gain is the ratio of block means, median-filtered over neighbouring
    blocks so that tokens, hands and shadows (a minority of any neighbourhood) do not pull it,
    then interpolated back to every pixel.
    """
    lcfg = cfg["light"]
    block = int(lcfg["block_px"])
    h, w = image.shape[:2]
    small = (max(1, w // block), max(1, h // block))
    a = cv2.resize(image, small, interpolation=cv2.INTER_AREA).astype(np.float32)
    b = cv2.resize(reference, small, interpolation=cv2.INTER_AREA).astype(np.float32)
    ok = cv2.resize(valid.astype(np.uint8), small, interpolation=cv2.INTER_NEAREST) > 0
    gain = np.log(a + 8.0) - np.log(b + 8.0)
    clipped = (a.max(axis=2) > 250) | (b.max(axis=2) > 250)
    usable = ok & ~clipped
    if usable.sum() < 10:
        usable = ok
    fallback = np.median(gain[usable], axis=0) if usable.any() else np.zeros(3, np.float32)
    gain[~usable] = fallback
    for _ in range(int(lcfg["median_passes"])):
        gain = cv2.medianBlur(gain, 5)
    gain = cv2.GaussianBlur(gain, (0, 0), 1.0)
    field = cv2.resize(gain, (w, h), interpolation=cv2.INTER_LINEAR)
    out = reference.astype(np.float32)  # (reference + 8) * exp(field) - 8, in place: 3 rasters fewer
    out += 8.0
    out *= np.exp(field, out=field)
    out -= 8.0
    return np.clip(out, 0, 255, out=out)


def paper_gains(matched_ref: np.ndarray, board_mask: np.ndarray) -> np.ndarray:
    """Per-channel gains that make the board's paper (its brightest common colour) neutral grey."""
    pix = matched_ref[::3, ::3][board_mask[::3, ::3]]
    if len(pix) < 100:
        return np.ones(3, np.float32)
    lum = pix.sum(axis=1)
    bright = pix[lum >= np.percentile(lum, 70)]
    paper = np.median(bright, axis=0)
    paper = np.maximum(paper, 1.0)
    return (paper.mean() / paper).astype(np.float32)


_LEVELS = np.arange(256, dtype=np.uint8).astype(np.float32)
_HUE_OF = _LEVELS * (360.0 / 256.0)  # OpenCV's full-range hue byte -> degrees
_SHARE_OF = _LEVELS / 255.0  # saturation or value byte -> 0..1


def _hsv_bytes(image: np.ndarray, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hue, saturation and value bytes after white balance on the paper (_HUE_OF and _SHARE_OF read them)."""
    table = np.clip(_LEVELS[:, None] * np.asarray(gains, np.float32)[None, :], 0, 255).astype(np.uint8)
    balanced = cv2.LUT(image, table.reshape(256, 1, 3))
    return cv2.split(cv2.cvtColor(balanced, cv2.COLOR_BGR2HSV_FULL))


def colour_classes(image: np.ndarray, gains: np.ndarray, cfg: dict, reference: np.ndarray | None = None,
                   measured: np.ndarray | None = None) -> np.ndarray:
    """Per-pixel plastic colour: index into SIDES, or -1 (not a plastic colour).

    With the light-matched ``reference``, a pale plastic counts too where the photo is much more
    saturated than the board was: washed-out plastic on paper, which a shadow (a scale: the same
    saturation) or the paper itself never is. Only where the reference's colour was ``measured``
    (see ``measured_colour``): a clipped reference looks less saturated than the board is.
    Hue, saturation and value are bytes, so every test is a table lookup.
    """
    ccfg = cfg["colour"]
    hue8, sat8, val8 = _hsv_bytes(image, gains)
    side_of_hue = np.full(256, -1, np.int8)  # the hue ranges do not overlap
    least_saturation = np.full(256, 255, np.uint8)  # the smallest saturation byte of a plastic, by hue byte
    for index, side in enumerate(SIDES):
        inside = np.zeros(256, bool)
        for lo, hi in ccfg["hues"][side]:
            inside |= (_HUE_OF >= lo) & (_HUE_OF < hi)
        side_of_hue[inside] = index
        least_saturation[inside] = np.argmax(_SHARE_OF >= float(ccfg["min_saturation"][side]))
    lit = val8 >= np.argmax(_SHARE_OF >= float(ccfg["min_value"]))
    keep = lit & (sat8 >= cv2.LUT(hue8, least_saturation))
    out = cv2.LUT(hue8, side_of_hue.view(np.uint8)).view(np.int8)
    if reference is not None:
        # the board's saturation is needed only where the photo is pale-plastic coloured: computed there alone
        pale_sat = (_SHARE_OF >= float(ccfg["washed_saturation"])) & (_SHARE_OF < max(ccfg["min_saturation"].values()))
        maybe = cv2.LUT(sat8, pale_sat.astype(np.uint8)).view(bool) & lit & ~keep & (out >= 0)
        if measured is not None:
            maybe &= measured
        ys, xs = np.nonzero(maybe)
        keep[ys, xs] = _SHARE_OF[sat8[ys, xs]] - _saturation(reference[ys, xs], gains) >= float(ccfg["washed_rise"])
    out[~keep] = -1
    return out


def _saturation(pixels: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """HSV saturation (0..1) of (N, 3) BGR pixels after white balance on the paper, as ``_hsv_bytes`` reads."""
    b, g, r = (np.floor(np.clip(pixels[:, i].astype(np.float32) * gains[i], 0, 255)) for i in range(3))
    top, bottom = np.maximum(np.maximum(b, g), r), np.minimum(np.minimum(b, g), r)
    return np.round(255 * (top - bottom) / np.maximum(top, 1)) / 255.0


def measured_colour(reference: np.ndarray, cfg: dict) -> np.ndarray:
    """Where the reference frame's colour is known: no channel near 255 (clipped, the true colour is unknown)."""
    b, g, r = cv2.split(reference)
    return cv2.max(cv2.max(b, g), r) < float(cfg["colour"]["clipped_dn"])


_BAND_ROWS = 32  # changed_pixels' band: 32 rows of the 1 px/mm raster, 60 kB a temporary


def changed_pixels(image: np.ndarray, matched_ref: np.ndarray, cfg: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixels that differ from the reference by more than a shadow would: a new colour, or much brighter.

    A shadow scales the reference's colour vector (A = k B); plastic replaces it. The part of the
    photo's colour vector orthogonal to the reference's (in DN) measures the replacement and is
    blind to shadows and to the light field's remaining error in brightness. Returns (changed:
    a clear colour change or brightening; strong: a change no clipped or glared shadow makes; the
    orthogonal residual in DN). Worked a band of rows at a time, so that its dozen temporary rasters
    stay in the processor's cache (11 -> 9 ms a photo, measured 2026-12-05; the same pixels).
    """
    ch = cfg["change"]
    residual_dn, residual_share = float(ch["residual_dn"]), float(ch["residual_share"])
    strong_share, brighter_by = float(ch["strong_share"]), 1.0 + float(ch["brighter"])
    changed = np.empty(image.shape[:2], bool)
    strong = np.empty(image.shape[:2], bool)
    residual = np.empty(image.shape[:2], np.float32)
    for top in range(0, image.shape[0], _BAND_ROWS):
        rows = slice(top, top + _BAND_ROWS)
        a0, a1, a2 = cv2.split(image[rows].astype(np.float32))
        b0, b1, b2 = cv2.split(matched_ref[rows] + 4.0)  # + 4 keeps a black reference pixel's direction defined
        k = (a0 * b0 + a1 * b1 + a2 * b2) / (b0 * b0 + b1 * b1 + b2 * b2)
        p0, p1, p2 = a0 - k * b0, a1 - k * b1, a2 - k * b2
        off = cv2.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
        ratio = (a0 + a1 + a2 + 15.0) / (b0 + b1 + b2 + 3.0)
        share = off / (cv2.sqrt(a0 * a0 + a1 * a1 + a2 * a2) + 1.0)
        coloured = (off > residual_dn) & (share > residual_share)
        brighter = ratio > brighter_by
        changed[rows] = coloured | brighter
        strong[rows] = (coloured & (share > strong_share)) | brighter
        residual[rows] = off
    return changed, strong, residual


def token_mask(changed: np.ndarray, strong: np.ndarray, classes: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Token pixels: strong changes, and changes to a plastic colour where the reference's colour was measured.

    Against a clipped reference (a bright print's saturated channel) the colour direction is wrong,
    so a small change there is noise or a shadow as often as plastic; on seeds 3000-3099 such
    changes were a third of the mask's pixels just outside the tokens.
    """
    return strong | (changed & (classes >= 0) & measured)


# --- tokens ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Blob:
    """One found base in the working raster (pixels) with what the detector knows about it."""

    center_px: tuple[float, float]
    side_votes: tuple[float, ...]  # weight per side in SIDES
    fitted: bool  # the front of the base was fitted (else: the coarse disc fit)
    fallen: bool
    rim_rms_px: float = 0.0  # how far the rim points stray from the fitted circle (non-round: shadow, blur, occlusion)
    stray_beside: bool = False  # plastic no found token explains lies beside it: this may be no token (or two)


def detect_reference(image: np.ndarray, reference: np.ndarray, calibration: Calibration,
                     board: Board) -> list[Token]:
    """Tokens in ``image`` by difference with ``reference`` (the empty board, same camera): base centres in mm."""
    return list(look(image, reference, calibration, board).tokens)


def look(image: np.ndarray, reference: np.ndarray, calibration: Calibration, board: Board) -> Detection:
    """The tokens in ``image`` (see detect_reference) and the parts of the board that something
    else covers (see hidden_areas), from one comparison with the empty-board frame."""
    _check_pair(image, reference, calibration)
    cfg = settings.load("reference")
    warp = make_warp(calibration, board, cfg)
    view = warp.view
    a = cv2.blur(warp.apply(image), (3, 3))
    b = cv2.blur(warp.apply(reference), (3, 3))
    valid = warp.valid
    matched = match_light(a, b, valid, cfg)
    board_mask = _board_mask(view, valid)
    gains = paper_gains(matched, board_mask)
    measured = measured_colour(b, cfg)
    classes = colour_classes(a, gains, cfg, matched, measured)
    changed, strong, residual = changed_pixels(a, matched, cfg)
    mask = _clean(token_mask(changed, strong, classes, measured) & valid)
    vp = viewpoint(calibration)
    blobs = find_bases(mask, classes, residual, view, vp, board, cfg)
    sigma0 = float(cfg["token"]["sigma_mm"])
    tokens = []
    for blob in blobs:
        votes = np.asarray(blob.side_votes)
        xy = view.to_mm([blob.center_px])[0]
        if not in_reach(xy, board, cfg):
            continue  # centred off the board: off the board either way (S2), and the table is not our business
        total = float(votes.sum())
        if total <= 0:
            continue
        side_i = int(votes.argmax())
        purity = float(votes[side_i] / total)
        if blob.fallen:
            sigma = float(cfg["token"]["fallen_sigma_mm"])
        else:
            sigma = (float(np.hypot(sigma0, float(cfg["token"]["rim_rms_gain"]) * blob.rim_rms_px / view.px_per_mm))
                     if blob.fitted else float(cfg["token"]["loose_sigma_mm"]))
        px = calibration.mm_to_px([xy])[0]
        confidence = purity * (0.95 if blob.fitted else 0.7) * (0.6 if blob.fallen else 1.0)
        tokens.append(Token(side=SIDES[side_i], xy_mm=(float(xy[0]), float(xy[1])), confidence=round(confidence, 4),
                            sigma_mm=round(sigma, 3), xy_px=(float(px[0]), float(px[1])), source=SOURCE,
                            fallen=blob.fallen, unsure=blob.stray_beside))
    explained = _silhouettes([b for b in blobs if b.fitted], view, vp, board)
    hidden = hidden_areas(changed & board_mask, strong & board_mask, explained, view, cfg)
    board_share = float((changed & board_mask).sum() / max(1, int(board_mask.sum())))
    return Detection(tokens=tuple(tokens), hidden=hidden,
                     difference=Difference(view=view, changed=changed & valid, board_share=board_share))


@dataclass(frozen=True)
class Difference:
    """Where the photo differs from the empty board, top-down (shadows do not count). Lets
    knockcam.detect.combine check the learned model's tokens that this detector did not find."""

    view: TopDown
    changed: np.ndarray  # bool raster of view: the photo differs from the empty board here
    board_share: float = 0.0  # the share of the board in view that differs (most of it: not this board's frame)

    def changed_share(self, xy_mm: tuple[float, float], radius_mm: float) -> float | None:
        """The share of the disc of ``radius_mm`` about board point ``xy_mm`` that changed (None off
        the raster: nothing known there)."""
        c = self.view.to_px([xy_mm])[0]
        cx, cy = int(round(c[0])), int(round(c[1]))
        r = max(1, int(round(radius_mm * self.view.px_per_mm)))
        h, w = self.changed.shape
        x0, y0, x1, y1 = max(cx - r, 0), max(cy - r, 0), min(cx + r + 1, w), min(cy + r + 1, h)
        if x0 >= x1 or y0 >= y1:
            return None
        disc = np.zeros((y1 - y0, x1 - x0), np.uint8)  # only the disc's window: the raster is the whole board
        cv2.circle(disc, (cx - x0, cy - y0), r, 1, -1)
        inside = disc.astype(bool)
        return float(self.changed[y0:y1, x0:x1][inside].mean()) if inside.any() else None


def _silhouettes(blobs: list[Blob], view: TopDown, vp: Viewpoint, board: Board) -> np.ndarray:
    """Where the found tokens' figures lie on the working raster (a fallen one: a disc twice the base)."""
    radius = board.token.base_diameter_mm / 2.0 * view.px_per_mm
    nadir = view.to_px([vp.nadir_mm])[0]
    lean = _lean(vp, board)
    out = np.zeros((view.size[1], view.size[0]), np.uint8)
    for blob in blobs:
        centre = np.asarray(blob.center_px, np.float64)
        cv2.fillConvexPoly(out, _envelope(centre, nadir, radius * (2.0 if blob.fallen else 1.0), lean), 1)
    return out.astype(bool)


def hidden_areas(changed: np.ndarray, strong: np.ndarray, explained: np.ndarray, view: TopDown,
                 cfg: dict) -> tuple[HiddenArea, ...]:
    """Parts of the board that changed since the empty frame where no found token stands: a hand, a
    cup, a card; a token under one may not be seen at all, so the human must look there.

    Hysteresis on the change: an area is the changed pixels (gaps closed) outside the fitted tokens'
    figures (a token sitting under a hand is not fitted, so it does not explain the hand away),
    large enough for several tokens, and partly *strong* change (a new colour): a light change
    between the two frames is changed but rarely strong. Seeds 3000-3199: an area in 28 of the 32
    photos with a hand, 19 of 30 with a cup, and in 10 of the 118 with nothing but tokens (a
    token cluster the detector left unexplained, a colour cast between the frames).
    """
    hcfg = cfg["hidden"]
    s = view.px_per_mm
    close = max(3, int(round(float(hcfg["close_mm"]) * s)) | 1)
    m = cv2.morphologyEx(changed.astype(np.uint8), cv2.MORPH_CLOSE,
                         cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (close, close)))
    apart = max(1, int(round(float(hcfg["token_margin_mm"]) * s)))
    m &= 1 - cv2.dilate(explained.astype(np.uint8), np.ones((2 * apart + 1, 2 * apart + 1), np.uint8))
    m = cv2.morphologyEx(m, cv2.MORPH_OPEN, np.ones((5, 5), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(m, connectivity=8)
    areas = []
    for i in range(1, n):
        area = stats[i, cv2.CC_STAT_AREA] / (s * s)
        if area < float(hcfg["min_area_mm2"]):
            continue
        comp = labels == i
        if np.count_nonzero(comp & strong) < float(hcfg["min_strong_share"]) * stats[i, cv2.CC_STAT_AREA]:
            continue
        areas.append(hidden_area(comp, view))
    return tuple(areas)


def in_reach(xy_mm, board: Board, cfg: dict | None = None) -> bool:
    """Whether this detector reports a base centred at ``xy_mm``: on the board or within token.outside_mm of it.

    Further out it never reports a token, so its silence there is no evidence against another detector's."""
    cfg = cfg or settings.load("reference")
    edge = float(cfg["token"]["outside_mm"])
    width, length = board.size_mm
    return bool(-edge <= xy_mm[0] <= width + edge and -edge <= xy_mm[1] <= length + edge)


def _check_pair(image, reference, calibration: Calibration) -> None:
    for name, img in (("photo", image), ("reference frame", reference)):
        if not isinstance(img, np.ndarray) or img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
            raise KnockcamError(f"the {name} must be an 8-bit colour image (got {getattr(img, 'shape', type(img))})")
    if image.shape != reference.shape:
        raise KnockcamError(f"the reference frame is {reference.shape[1]}x{reference.shape[0]} but the photo is "
                            f"{image.shape[1]}x{image.shape[0]}: take the empty-board frame with the same camera")
    w, h = calibration.image_size
    if (image.shape[1], image.shape[0]) != (int(w), int(h)):
        raise KnockcamError(f"the photo is {image.shape[1]}x{image.shape[0]} but the calibration is for {w}x{h}: "
                            "calibrate this camera again")


def _board_mask(view: TopDown, valid: np.ndarray) -> np.ndarray:
    w, length = view.board.size_mm
    corners = view.to_px([(0, 0), (w, 0), (w, length), (0, length)])
    m = np.zeros(valid.shape, np.uint8)
    cv2.fillConvexPoly(m, np.round(corners).astype(np.int32), 1)
    return (m > 0) & valid


def _clean(mask: np.ndarray) -> np.ndarray:
    """Close small gaps (highlights, text under thin parts), fill holes, drop specks."""
    m = mask.astype(np.uint8)
    m = cv2.morphologyEx(m, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
    m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))
    # fill holes: background not reachable from outside the raster is inside a token
    padded = np.pad(m, 1)
    reach = padded.copy()
    cv2.floodFill(reach, None, (0, 0), 1)
    m |= (reach[1:-1, 1:-1] == 0).astype(np.uint8)
    return m.astype(bool)


def _lean(vp: Viewpoint, board: Board) -> float:
    """How much longer than its base's distance from the nadir a standing token's top reaches on the board
    (the camera at least three token heights up)."""
    height = max(vp.height_mm, board.token.height_mm * 3)
    return board.token.height_mm / (height - board.token.height_mm)


def _unit_circle(count: int) -> np.ndarray:
    """``count`` points evenly around the unit circle, (count, 2)."""
    angles = np.linspace(0, 2 * np.pi, count, endpoint=False)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


_RING = _unit_circle(24)  # _envelope's polygon, made once: it is drawn about 40 times a photo


def _envelope(center_px: np.ndarray, nadir_px: np.ndarray, radius_px: float, lean: float) -> np.ndarray:
    """Polygon (px) covering a standing token: its base disc swept up to its top, projected to the board."""
    top_c = nadir_px + (center_px - nadir_px) * (1.0 + lean)
    pts = np.vstack([center_px + radius_px * _RING, top_c + radius_px * (1.0 + lean) * _RING])
    return cv2.convexHull(np.round(pts).astype(np.int32))


@dataclass(frozen=True)
class _BaseDisc:
    """A token's base disc in the working raster (px) and the tests a disc found in a blob must pass
    (reference.yaml token): what every blob's search shares."""

    radius: float
    tol: float  # the disc must fit in the blob within this
    excl: float  # no second candidate this close to a found base
    lean: float  # _lean: how far past its base a standing token's top reaches
    ring_px: int  # the ring just outside a token's silhouette that must mostly show the board
    min_area_share: float
    min_new: float
    min_plastic: float
    max_surrounded: float
    screen: float
    doubt_surrounded: float
    stray_share: float
    area: float  # the disc's
    r_px: int  # its radius drawn
    ring_kernel: np.ndarray  # what widens a silhouette by ring_px

    @classmethod
    def of(cls, board: Board, view: TopDown, vp: Viewpoint, cfg: dict) -> "_BaseDisc":
        tcfg = cfg["token"]
        s = view.px_per_mm
        radius = board.token.base_diameter_mm / 2.0 * s
        ring_px = max(2, int(round(float(tcfg["ring_mm"]) * s)))
        return cls(radius=radius, tol=float(tcfg["tolerance_mm"]) * s,
                   excl=float(tcfg["exclusion_mm"]) * s, lean=_lean(vp, board), ring_px=ring_px,
                   min_area_share=float(tcfg["min_area_share"]), min_new=float(tcfg["min_new_share"]),
                   min_plastic=float(tcfg["min_plastic_share"]), max_surrounded=float(tcfg["max_surrounded"]),
                   screen=float(tcfg["screen_margin"]), doubt_surrounded=float(tcfg["doubt_surrounded"]),
                   stray_share=float(tcfg["stray_share"]), area=np.pi * radius * radius, r_px=int(round(radius)),
                   ring_kernel=cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * ring_px + 1, 2 * ring_px + 1)))

    @property
    def pad(self) -> int:
        """How far around a blob its window reaches: a disc and its ring at the blob's edge."""
        return int(np.ceil(self.radius)) + 2 + self.ring_px

    def passes(self, new: float, plastic: float, surrounded: float, margin: float = 0.0) -> bool:
        """Whether a disc adds enough new pixels, is plastic enough and stands alone enough (within ``margin``)."""
        return (new >= self.min_new - margin and plastic >= self.min_plastic - margin
                and surrounded <= self.max_surrounded + margin)


class _Judged(NamedTuple):
    """A base disc tried at one centre: its share of new pixels (of a disc), of plastic, how surrounded it
    is, and the window it was worked in with the disc's and the standing token's masks there."""

    new: float
    plastic: float
    surrounded: float
    win: tuple[slice, slice]
    disc: np.ndarray
    env: np.ndarray


class _BlobSearch:
    """The bases in one blob of the token mask, worked in a window around the blob (``origin``: its
    top-left corner in the raster): upright bases nearest the camera first, then the plastic they
    leave unexplained."""

    def __init__(self, shape: _BaseDisc, comp: np.ndarray, cls: np.ndarray, res: np.ndarray,
                 origin: np.ndarray, nadir_px: np.ndarray):
        self.shape, self.comp, self.cls, self.res, self.origin = shape, comp, cls, res, origin
        self.nadir = nadir_px - origin
        self.explained = np.zeros_like(comp)  # the found tokens' figures
        self.trusted = np.zeros_like(comp)  # ... of those that stand alone

    def judge(self, c: np.ndarray) -> _Judged:
        """A base disc at c, worked in a window around the token it would be (``_Judged``)."""
        shape, r_px, ring_px = self.shape, self.shape.r_px, self.shape.ring_px
        cxy = np.array([int(round(c[0])), int(round(c[1]))])
        hull = _envelope(c, self.nadir, shape.radius, shape.lean)
        lo = np.minimum(hull.reshape(-1, 2).min(axis=0), cxy - r_px) - ring_px - 1
        hi = np.maximum(hull.reshape(-1, 2).max(axis=0), cxy + r_px) + ring_px + 2
        wx0, wy0 = max(int(lo[0]), 0), max(int(lo[1]), 0)
        win = (slice(wy0, max(int(hi[1]), wy0)), slice(wx0, max(int(hi[0]), wx0)))
        comp_w, explained_w = self.comp[win], self.explained[win]
        disc = np.zeros_like(comp_w)
        cv2.circle(disc, (int(cxy[0]) - wx0, int(cxy[1]) - wy0), r_px, 1, -1)
        new = float(np.count_nonzero(disc & comp_w & (1 - explained_w))) / shape.area
        disc_px = disc.astype(bool)
        plastic = float(np.count_nonzero(self.cls[win][disc_px] >= 0)) / max(1, np.count_nonzero(disc_px))
        env = np.zeros_like(comp_w)
        cv2.fillConvexPoly(env, hull - np.array([wx0, wy0], hull.dtype), 1)
        # A token stands alone: just outside its silhouette the board shows, or tokens that stood
        # alone themselves. One inside a wider changed area (glare, a hand, a card) is surrounded
        # by it: not a token we can trust, or none at all.
        ring = cv2.dilate(env, shape.ring_kernel) & (1 - env) & (1 - self.trusted[win])
        surrounded = float(np.count_nonzero(ring & comp_w)) / max(1, int(np.count_nonzero(ring)))
        return _Judged(new, plastic, surrounded, win, disc, env)

    def bases(self) -> list[tuple[np.ndarray, Blob]]:
        """Every pixel where a base disc fits is a candidate, nearest the camera's nadir first; a candidate
        that passes becomes a base (its front rim fitted) and rules out those near it. Each base with its
        centre in the window."""
        shape = self.shape
        ys, xs = np.nonzero(cv2.distanceTransform(self.comp, cv2.DIST_L2, 5) >= shape.radius - shape.tol)
        cand = np.stack([xs, ys], axis=1).astype(np.float64)
        rho = np.hypot(cand[:, 0] - self.nadir[0], cand[:, 1] - self.nadir[1]) if len(cand) else np.zeros(0)
        alive = np.ones(len(cand), bool)
        found: list[tuple[np.ndarray, Blob]] = []
        for k in np.argsort(rho, kind="stable"):
            if not alive[k]:
                continue
            p0 = cand[k]
            u = p0 - self.nadir
            nu = np.linalg.norm(u)
            u = u / nu if nu > 1e-6 else np.array([0.0, 1.0])
            coarse = p0 + shape.tol * u
            # The rim fit is most of this detector's time; a disc that fails by a wide margin at the
            # coarse centre does not pass a few pixels away, so it is not fitted at all.
            judged = self.judge(coarse)
            hopeful = shape.passes(judged.new, judged.plastic, judged.surrounded,
                                   margin=shape.screen)
            if hopeful:
                centre, fitted, rms = _fit_front(self.res, coarse, u, shape.radius)
                judged = self.judge(centre)
            if not (hopeful and shape.passes(judged.new, judged.plastic, judged.surrounded)):
                # never a centre left from another candidate
                alive &= np.hypot(cand[:, 0] - p0[0], cand[:, 1] - p0[1]) >= 0.5 * shape.radius
                continue
            if judged.surrounded > shape.doubt_surrounded:
                fitted = False
            else:
                self.trusted[judged.win] |= judged.env
            alive &= np.hypot(cand[:, 0] - centre[0], cand[:, 1] - centre[1]) >= shape.excl
            win = judged.win
            own = judged.env & self.comp[win] & (1 - self.explained[win])
            votes = _votes(self.cls[win], own.astype(bool), judged.disc.astype(bool))
            self.explained[win] |= judged.env
            found.append((centre, Blob(center_px=(float(centre[0] + self.origin[0]), float(centre[1] + self.origin[1])),
                                       side_votes=votes, fitted=fitted, fallen=False, rim_rms_px=rms)))
        return found

    def with_stray(self, found: list[tuple[np.ndarray, Blob]]) -> list[Blob]:
        """``found``'s bases (this blob's, ``bases``) and the plastic they do not explain. Away from all of
        them: a token lying on its side (no upright base fits it), or something else (a card, a shadow;
        combine vetoes those the model does not confirm). Beside a found base: that base is in doubt (``stray_beside``;
        combine vetoes it too unless the model sees a token there), but it is not a fallen token. Calling
        such bases fallen flagged 3.3% more tokens on held-out seeds 3000-3199 (model + reference), and on
        seeds 3000-3059 all 20 were standing, none of the 17 tokens really lying down."""
        shape, (x0, y0) = self.shape, self.origin
        stray = (self.comp & (1 - self.explained)).astype(bool) & (self.cls >= 0)
        stray_area = int(np.count_nonzero(stray))
        blobs = [b for _, b in found]
        if stray_area < shape.stray_share * shape.area:
            return blobs
        ys, xs = np.nonzero(stray)
        centroid = np.array([xs.mean(), ys.mean()])

        near = [i for i, (c, _) in enumerate(found) if np.hypot(*(c - centroid)) < 2.5 * shape.radius]
        if near:
            nearest = min(near, key=lambda i: np.hypot(blobs[i].center_px[0] - x0 - centroid[0],
                                                       blobs[i].center_px[1] - y0 - centroid[1]))
            blobs[nearest] = replace(blobs[nearest], stray_beside=True)
        elif stray_area >= shape.area:
            blobs.append(Blob(center_px=(float(centroid[0] + x0), float(centroid[1] + y0)),
                              side_votes=_votes(self.cls, stray, stray), fitted=False, fallen=True))
        return blobs


def find_bases(mask: np.ndarray, classes: np.ndarray, residual: np.ndarray, view: TopDown, vp: Viewpoint,
               board: Board, cfg: dict) -> list[Blob]:
    """Base discs inside the token mask, nearest the camera first, blob by blob; each with colour votes (see
    module doc)."""
    shape = _BaseDisc.of(board, view, vp, cfg)
    nadir = view.to_px([vp.nadir_mm])[0]
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    pad, (hh, ww) = shape.pad, mask.shape
    blobs: list[Blob] = []
    for i in range(1, n):
        x, y, bw, bh, area = stats[i]
        if area < shape.min_area_share * shape.area:
            continue
        x0, y0 = max(x - pad, 0), max(y - pad, 0)
        x1, y1 = min(x + bw + pad, ww), min(y + bh + pad, hh)
        search = _BlobSearch(shape, (labels[y0:y1, x0:x1] == i).astype(np.uint8), classes[y0:y1, x0:x1],
                             np.ascontiguousarray(residual[y0:y1, x0:x1]),  # _bilinear indexes it flat
                             np.array([x0, y0], np.float64), nadir)
        blobs += search.with_stray(search.bases())
    return blobs


def _votes(cls: np.ndarray, region: np.ndarray, disc: np.ndarray) -> tuple[float, ...]:
    """Colour votes: every pixel of the token's own region, the base disc counted twice (least occluded)."""
    votes = []
    for index in range(len(SIDES)):
        hit = cls == index
        votes.append(float(np.count_nonzero(hit & region) + np.count_nonzero(hit & disc)))
    return tuple(votes)


def _bilinear(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    h, w = img.shape
    x = np.clip(x, 0, w - 1.001)
    y = np.clip(y, 0, h - 1.001)
    x0 = x.astype(np.intp)
    y0 = y.astype(np.intp)
    fx, fy = x - x0, y - y0
    flat = img.ravel()
    at = y0 * w + x0
    return ((flat[at] * (1 - fx) + flat[at + 1] * fx) * (1 - fy)
            + (flat[at + w] * (1 - fx) + flat[at + w + 1] * fx) * fy)


@dataclass(frozen=True)
class _Rays:
    """The rays along which a base's front rim is sought: fixed by the direction to the camera and the radius."""

    dx: np.ndarray
    dy: np.ndarray
    radii: np.ndarray
    inside: np.ndarray  # columns on the plastic (radii up to 0.8 of the base's)
    outside: np.ndarray  # columns on the board (4 px and more past the rim)
    start: int  # the first column where the rim may lie (0.6 of the radius)


def _rays(u: np.ndarray, radius: float, count: int = 31) -> _Rays:
    back = np.arctan2(-u[1], -u[0])
    ang = back + np.linspace(-np.radians(80), np.radians(80), count)
    radii = np.arange(0.35 * radius, radius + 8.0, 0.5)
    return _Rays(dx=np.cos(ang), dy=np.sin(ang), radii=radii, inside=np.nonzero(radii <= 0.8 * radius)[0],
                 outside=np.nonzero(radii >= radius + 4.0)[0], start=int(np.searchsorted(radii, 0.6 * radius)))


def _row_median(values: np.ndarray) -> np.ndarray:
    """np.median along rows, without its overhead (this runs thousands of times a photo)."""
    n = values.shape[1]
    half = n // 2
    if n % 2:
        return np.partition(values, half, axis=1)[:, half]
    part = np.partition(values, (half - 1, half), axis=1)
    return (part[:, half - 1] + part[:, half]) / 2.0


def _front_edges(res: np.ndarray, centre: np.ndarray, rays: _Rays) -> np.ndarray:
    """Sub-pixel points of the base's rim on the side facing the camera: half-contrast crossings along rays.

    Along each ray from the (coarse) centre the change strength falls from the plastic's level to
    the board's; the rim is where it crosses half-way. Blur and soft shadows move a fixed
    threshold's edge, not the half-way point.
    """
    dx, dy, radii = rays.dx, rays.dy, rays.radii
    prof = _bilinear(res, centre[0] + np.outer(dx, radii), centre[1] + np.outer(dy, radii))
    inside = _row_median(prof[:, rays.inside])
    outside = _row_median(prof[:, rays.outside])
    half = 0.5 * (outside + inside)
    below = prof[:, rays.start:] < half[:, None]
    j = rays.start + np.argmax(below, axis=1)  # the first sample under half-way along each ray
    keep = (inside - outside >= 12.0) & below.any(axis=1) & (j > 0)
    k = np.nonzero(keep)[0]
    j = j[k]
    r0, r1, v0, v1 = radii[j - 1], radii[j], prof[k, j - 1], prof[k, j]
    same = v0 == v1
    r = np.where(same, r1, r0 + (v0 - half[k]) / np.where(same, 1.0, v0 - v1) * (r1 - r0))
    return np.column_stack([centre[0] + dx[k] * r, centre[1] + dy[k] * r])


def _fit_front(res: np.ndarray, centre: np.ndarray, u: np.ndarray, radius: float) -> tuple[np.ndarray, bool, float]:
    """Refine a base centre on the blob's rim facing the camera: a circle of the base's radius through it.

    The front of the blob is the base's rim on the board (the figure leans the other way), so a
    circle through it is the base. Huber-weighted Gauss-Newton, re-sampling the rim from each new
    centre. Returns the centre, whether the fit held, and the rim points' RMS distance (px) from
    the circle (a round, clean rim is near 0; shadows, blur and occlusion raise it).
    """
    rays = _rays(u, radius)
    cx, cy = float(centre[0]), float(centre[1])
    rms = 0.0
    for _round in range(3):
        pts = _front_edges(res, np.array([cx, cy]), rays)
        if len(pts) < 8:
            return centre, False, 0.0
        px, py = pts[:, 0].copy(), pts[:, 1].copy()
        for _ in range(8):
            dx, dy = px - cx, py - cy
            r = np.hypot(dx, dy)
            resid = r - radius
            w = 1.0 / np.maximum(1.0, np.abs(resid))
            # the Jacobian of r - radius in the centre is -(dx, dy) / r; its sign cancels in the step
            safe = np.maximum(r, 1e-6)
            jx, jy = dx / safe, dy / safe
            wx, wy = w * jx, w * jy
            a11, a12, a22 = float(wx @ jx), float(wx @ jy), float(wy @ jy)
            spread = math.hypot(0.5 * (a11 - a22), a12)  # eigenvalues of the symmetric 2x2: mid +- spread
            mid = 0.5 * (a11 + a22)
            if mid - spread <= 0 or mid + spread > 1e6 * (mid - spread):  # singular or condition number > 1e6
                return centre, False, 0.0
            g0, g1 = float(wx @ resid), float(wy @ resid)
            det = a11 * a22 - a12 * a12
            sx, sy = (a22 * g0 - a12 * g1) / det, (a11 * g1 - a12 * g0) / det
            cx, cy = cx + sx, cy + sy
            if math.hypot(sx, sy) < 0.01:
                break
        rms = float(np.sqrt(np.mean((np.hypot(px - cx, py - cy) - radius) ** 2)))
    c = np.array([cx, cy])
    if np.hypot(*(c - centre)) > 0.5 * radius:
        return centre, False, 0.0
    return c, True, rms
