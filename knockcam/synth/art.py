"""Printed board art drawn from the board file, in a randomised print style.

The art is a top-down raster (knockcam.board.topdown convention: far end at the top) that the
scene warps through the camera. Styles vary colours, fonts, line weights, wear and fold creases
so that a detector trained on them does not learn one printing.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam.board.layout import Board, Space
from knockcam.board.topdown import TopDown

# BGR property colours, near the printed Monopoly colours; each style jitters them.
SET_BGR = {
    "brown": (40, 70, 120), "light_blue": (235, 205, 150), "pink": (150, 60, 215), "orange": (30, 145, 245),
    "red": (40, 30, 215), "yellow": (30, 225, 250), "green": (60, 160, 30), "dark_blue": (150, 60, 20),
}
FONTS = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX, cv2.FONT_HERSHEY_COMPLEX, cv2.FONT_HERSHEY_TRIPLEX,
         cv2.FONT_HERSHEY_PLAIN, cv2.FONT_HERSHEY_COMPLEX_SMALL)
PAPERS = ((236, 240, 242), (214, 232, 238), (222, 236, 222), (240, 236, 226), (205, 225, 205), (230, 230, 230),
          (200, 228, 240), (238, 244, 250))
SPECIAL_TEXT = {"chance": ("CHANCE", "?"), "railroad": ("RAILROAD", "M200"), "house": ("HOUSE", "M100"),
                "luxury_tax": ("LUXURY", "TAX"), "free_parking": ("FREE", "PARKING"), "go_to_jail": ("GO TO", "JAIL")}


@dataclass(frozen=True)
class BoardArt:
    """The printed face: a BGR raster and the TopDown that maps board mm to its pixels."""

    image: np.ndarray
    view: TopDown


def _jitter(rng: np.random.Generator, bgr, amount: float) -> tuple[int, int, int]:
    c = np.asarray(bgr, dtype=np.float64) + rng.normal(0, amount, 3)
    return tuple(int(v) for v in np.clip(c, 0, 255))


def render_board_art(board: Board, rng: np.random.Generator, px_per_mm: float = 1.6,
                     crease_p: float = 0.35) -> BoardArt:
    """Draw the board in a random print style; deterministic for a given generator state."""
    view = TopDown(board, px_per_mm=px_per_mm, margin_mm=0.0)
    w, h = view.size
    style = _PrintStyle.drawn(rng)
    img = np.empty((h, w, 3), np.uint8)
    img[:] = style.paper
    _draw_go_area(img, board, view, rng, style)
    for space in board.spaces:
        _draw_space(img, space, view, rng, style)
    thickness = max(1, int(round(style.line_mm * px_per_mm)))
    for space in board.spaces:
        cv2.polylines(img, [np.round(view.to_px(space.polygon)).astype(np.int32)], True, style.ink, thickness,
                      cv2.LINE_AA)
    # the board's rim
    rim = max(1, int(px_per_mm * rng.uniform(2, 7)))
    cv2.rectangle(img, (0, 0), (w - 1, h - 1), _jitter(rng, (40, 40, 160) if rng.random() < 0.5 else style.ink, 30),
                  rim)
    img = _wear(img, rng, px_per_mm, crease_p)
    return BoardArt(image=img, view=view)


@dataclass(frozen=True)
class _PrintStyle:
    """One printing of the board: paper and ink colours, font, line weight, colour bands, special spaces' fills."""

    paper: tuple[int, int, int]
    ink: tuple[int, int, int]
    font: int
    line_mm: float
    set_bgr: dict
    band_frac: float  # a property's colour band, as a share of its height ...
    band_at_top: bool  # ... at its far end (else its near end)
    special_fill: dict

    @classmethod
    def drawn(cls, rng: np.random.Generator) -> "_PrintStyle":
        paper = _jitter(rng, PAPERS[rng.integers(len(PAPERS))], 8)
        ink = _jitter(rng, (30, 30, 30) if rng.random() < 0.8 else (90, 40, 20), 15)
        font = int(FONTS[rng.integers(len(FONTS))]) | (cv2.FONT_ITALIC if rng.random() < 0.15 else 0)
        line_mm = rng.uniform(0.8, 2.6)
        set_bgr = {k: _jitter(rng, v, 14) for k, v in SET_BGR.items()}
        band_frac = rng.uniform(0.16, 0.3)
        band_at_top = rng.random() < 0.8
        special_fill = {kind: _jitter(rng, paper, 18) for kind in SPECIAL_TEXT}
        if rng.random() < 0.5:
            special_fill["go_to_jail"] = _jitter(rng, (60, 120, 230), 20)
            special_fill["free_parking"] = _jitter(rng, (90, 200, 230), 20)
            special_fill["chance"] = _jitter(rng, (40, 150, 240), 20)
        return cls(paper, ink, font, line_mm, set_bgr, band_frac, band_at_top, special_fill)


def _draw_go_area(img: np.ndarray, board: Board, view: TopDown, rng: np.random.Generator, style: _PrintStyle) -> None:
    """The GO! area: a bold band, arrows up the board and the line tokens are slid from behind."""
    h, w = img.shape[:2]
    s = view.px_per_mm
    go_colour = _jitter(rng, (50, 50, 200) if rng.random() < 0.6 else (40, 140, 40), 25)
    go_y = view.to_px([(0, board.go_line_y_mm)])[0, 1]
    first_row = min(min(p[1] for p in sp.polygon) for sp in board.spaces)
    row_y = view.to_px([(0, first_row)])[0, 1]
    if rng.random() < 0.7:
        tint = tuple(int(0.75 * p + 0.25 * g) for p, g in zip(style.paper, go_colour))
        cv2.rectangle(img, (0, int(go_y)), (w, h), tint, -1)
    go_scale = s * rng.uniform(1.6, 2.6)
    text = "GO!"
    (tw, th), _ = cv2.getTextSize(text, style.font, go_scale, max(1, int(s * 3)))
    cx = int(w / 2 + rng.normal(0, w * 0.05))
    cy = int((go_y + h) / 2 + th / 2)
    cv2.putText(img, text, (cx - tw // 2, cy), style.font, go_scale, go_colour, max(1, int(s * 3)), cv2.LINE_AA)
    cv2.line(img, (0, int(go_y)), (w, int(go_y)), go_colour, max(1, int(s * rng.uniform(2, 5))), cv2.LINE_AA)
    # arrows pointing up the board between the GO! line and the first row
    for ax in np.linspace(w * 0.2, w * 0.8, int(rng.integers(1, 4))):
        a0 = (int(ax), int(go_y - s * 20))
        a1 = (int(ax), int(max(row_y + s * 25, go_y - s * 120)))
        cv2.arrowedLine(img, a0, a1, go_colour, max(1, int(s * 4)), cv2.LINE_AA, tipLength=0.3)


def _draw_space(img: np.ndarray, space: Space, view: TopDown, rng: np.random.Generator, style: _PrintStyle) -> None:
    """One space's face: a property's paper, colour band, name and value; a special space's fill and words."""
    s = view.px_per_mm
    pts = view.to_px(space.polygon)
    ipts = np.round(pts).astype(np.int32)
    x0, y0 = pts.min(axis=0)
    x1, y1 = pts.max(axis=0)
    sw, sh = x1 - x0, y1 - y0
    if space.kind == "property":
        cv2.fillPoly(img, [ipts], _jitter(rng, style.paper, 4))
        bh = sh * style.band_frac
        by0, by1 = (y0, y0 + bh) if style.band_at_top else (y1 - bh, y1)
        cv2.rectangle(img, (int(x0), int(by0)), (int(x1), int(by1)), style.set_bgr[space.color_set], -1)
        words = space.name.upper().split()
        lines = [" ".join(words[:-1]), words[-1]] if len(words) > 1 else words
        lines = [ln for ln in lines if ln] + [f"M{space.value}"]
        top = (by1 if style.band_at_top else y0) + sh * 0.08
        bottom = (y1 if style.band_at_top else by0) - sh * 0.06
    else:
        cv2.fillPoly(img, [ipts], style.special_fill[space.kind])
        lines = list(SPECIAL_TEXT[space.kind])
        top, bottom = y0 + sh * 0.12, y1 - sh * 0.12
    _text_block(img, lines, (x0 + sw * 0.06, top, x1 - sw * 0.06, bottom), style.font, style.ink, s)
    if space.kind == "chance" and rng.random() < 0.7:
        c = (int((x0 + x1) / 2), int((y0 + y1) / 2))
        cv2.circle(img, c, int(min(sw, sh) * 0.18), _jitter(rng, (40, 140, 240), 20), max(1, int(s * 1.5)), cv2.LINE_AA)


def _text_block(img, lines, box, font, ink, s):
    """Centre a few lines of text inside box (x0, y0, x1, y1), shrinking to fit."""
    x0, y0, x1, y1 = box
    bw, bh = x1 - x0, y1 - y0
    if bw <= 2 or bh <= 2 or not lines:
        return
    thick = max(1, int(round(s * 0.9)))
    sizes = [cv2.getTextSize(ln, font, 1.0, thick)[0] for ln in lines]
    line_h = max(sz[1] for sz in sizes) * 1.6
    scale = min(bw / max(sz[0] for sz in sizes), bh / (line_h * len(lines)), s * 0.45)
    if scale * line_h < 4:
        return
    cy = y0 + (bh - scale * line_h * len(lines)) / 2
    for ln, sz in zip(lines, sizes):
        cy += scale * line_h
        cv2.putText(img, ln, (int(x0 + (bw - sz[0] * scale) / 2), int(cy - scale * line_h * 0.25)), font, scale,
                    ink, thick, cv2.LINE_AA)


def _wear(img: np.ndarray, rng: np.random.Generator, s: float, crease_p: float) -> np.ndarray:
    """Print wear: gentle uneven fading, scuffs and, now and then, a fold crease across the board."""
    h, w = img.shape[:2]
    for _ in range(int(rng.integers(0, 14))):  # scuffs
        p0 = rng.uniform((0, 0), (w, h))
        p1 = p0 + rng.normal(0, s * 12, 2)
        shade = int(rng.uniform(150, 250))
        cv2.line(img, tuple(int(v) for v in p0), tuple(int(v) for v in p1), (shade,) * 3, 1, cv2.LINE_AA)
    field = np.ones((max(2, h // 90), max(2, w // 90)), np.float32)
    field += rng.uniform(0, 0.05) * rng.normal(0, 1, field.shape).astype(np.float32)
    field = cv2.resize(field, (w // 4, h // 4), interpolation=cv2.INTER_CUBIC)
    if rng.random() < crease_p:  # fold crease across the board (in the middle, where a board folds)
        y = rng.uniform(0.35, 0.65) * h / 4
        band = np.exp(-((np.arange(h // 4) - y) / max(s * 0.6, 0.6)) ** 2).astype(np.float32)
        field *= (1 - rng.uniform(0.08, 0.25) * band)[:, None]
    field = cv2.resize(field, (w, h), interpolation=cv2.INTER_LINEAR)
    return cv2.multiply(img, cv2.merge([field, field, field]), dtype=cv2.CV_8U)
