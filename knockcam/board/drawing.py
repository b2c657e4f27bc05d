"""Pictures of the board: a top-down drawing (evidence, overlays, `knockcam board --png`) and the
layout's outlines projected into a photo (`knockcam board check`).

The top-down drawing uses knockcam.board.topdown.TopDown, so a pixel means the same board point
here as in the rectified evidence view and the detector's canonical input.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cv2
import numpy as np

from knockcam.board.layout import Board, Space
from knockcam.board.topdown import TopDown

if TYPE_CHECKING:
    from knockcam.calibrate.calibration import Calibration

# BGR fills, in the game's colours.
SET_COLORS = {
    "brown": (40, 70, 130),
    "light_blue": (235, 205, 150),
    "pink": (150, 60, 215),
    "orange": (30, 140, 245),
    "red": (40, 40, 210),
    "yellow": (40, 215, 245),
    "green": (70, 150, 40),
    "dark_blue": (140, 60, 20),
}
KIND_COLORS = {
    "railroad": (150, 150, 150),
    "chance": (120, 200, 250),
    "house": (120, 200, 120),
    "luxury_tax": (200, 190, 180),
    "free_parking": (110, 110, 230),
    "go_to_jail": (70, 120, 230),
}
BOARD_COLOR = (222, 238, 230)  # the board's pale green-white
TABLE_COLOR = (60, 60, 60)
INK = (20, 20, 20)
FONT = cv2.FONT_HERSHEY_SIMPLEX


def _tint(color, amount: float) -> tuple[int, int, int]:
    """``color`` mixed with white: 0 keeps it, 1 is white."""
    return tuple(int(round(c + (255 - c) * amount)) for c in color)


def space_label(space: Space) -> list[str]:
    """The words printed on a space: its name and, for a property, its value."""
    lines = [space.name]
    if space.kind == "property":
        lines.append(f"M{space.value}")
    return lines


def draw_board(board: Board, px_per_mm: float, margin_mm: float = 0.0) -> np.ndarray:
    """The board seen from above as a BGR image: spaces filled by colour set or kind, names, values, GO! line."""
    view = TopDown(board, px_per_mm, margin_mm)
    width, height = view.size
    image = np.full((height, width, 3), TABLE_COLOR, dtype=np.uint8)
    bw, bl = board.size_mm
    outline = _px(view, [(0, 0), (bw, 0), (bw, bl), (0, bl)])
    cv2.fillPoly(image, [outline], BOARD_COLOR, cv2.LINE_AA)
    line = max(1, int(round(px_per_mm * 0.6)))

    for space in board.spaces:
        poly = _px(view, space.polygon)
        if space.kind == "property":
            base = SET_COLORS[space.color_set]
            cv2.fillPoly(image, [poly], _tint(base, 0.6), cv2.LINE_AA)
            _band(image, poly, base, fraction=0.22)
        else:
            cv2.fillPoly(image, [poly], _tint(KIND_COLORS[space.kind], 0.35), cv2.LINE_AA)
        cv2.polylines(image, [poly], True, INK, line, cv2.LINE_AA)

    # One text size for the board (a quarter of the spaces would fit larger), smaller only where needed.
    boxes = [(_px(view, s.polygon), space_label(s), s.kind == "property") for s in board.spaces]
    fits = [_fit(poly, lines, band) for poly, lines, band in boxes]
    common = float(np.percentile([f[0] for f in fits], 25))
    for (poly, lines, band), fit in zip(boxes, fits):
        _label(image, poly, lines, band, max_scale=min(fit[0], common))

    # The GO! line, and the word GO! in the launch area behind it.
    y = board.go_line_y_mm
    a, b = _px(view, [(0, y), (bw, y)])
    cv2.line(image, tuple(int(v) for v in a), tuple(int(v) for v in b), (30, 30, 200), max(2, 2 * line), cv2.LINE_AA)
    go_box = _px(view, [(0, max(0.0, y - 0.3 * y)), (bw, max(0.0, y - 0.3 * y)), (bw, y), (0, y)])
    _label(image, go_box, ["GO!"], False, color=(30, 30, 200), max_scale=2.0 * px_per_mm)
    cv2.polylines(image, [outline], True, INK, line, cv2.LINE_AA)
    return image


def _px(view: TopDown, points_mm) -> np.ndarray:
    return np.round(view.to_px(points_mm)).astype(np.int32)


def _band(image: np.ndarray, poly: np.ndarray, color, fraction: float) -> None:
    """Paint the far-end strip of a property (its colour bar) with the set's full colour."""
    x0, y0, w, h = cv2.boundingRect(poly)
    mask = np.zeros(image.shape[:2], dtype=np.uint8)
    cv2.fillPoly(mask, [poly], 255)
    band_h = max(1, int(round(h * fraction)))
    mask[:y0] = 0
    mask[y0 + band_h:] = 0
    image[mask > 0] = color


def _fit(poly: np.ndarray, lines: list[str], below_band: bool, max_scale: float = 1.2):
    """The largest text layout of ``lines`` that fits the polygon's box: (scale, thickness, lines, box)."""
    x0, y0, w, h = cv2.boundingRect(poly)
    top = y0 + (int(h * 0.22) if below_band else 0)
    avail_w, avail_h = 0.9 * w, 0.9 * (y0 + h - top)
    scale = min(max_scale, 1.2 * max(w, 1) / 80)
    while True:
        thick = 1 if scale < 0.6 else 2
        wrapped = [piece for text in lines for piece in _wrap(text, scale, thick, avail_w)]
        sizes = [cv2.getTextSize(t, FONT, scale, thick)[0] for t in wrapped]
        gap = max(2, int(6 * scale))
        total_h = sum(s[1] for s in sizes) + gap * (len(sizes) - 1)
        fits = max(s[0] for s in sizes) <= avail_w and total_h <= avail_h
        if fits or scale < 0.25:
            return scale, thick, wrapped, sizes, gap, total_h, top, (x0, y0, w, h)
        scale *= 0.92


def _label(image: np.ndarray, poly: np.ndarray, lines: list[str], below_band: bool,
           color=INK, max_scale: float = 1.2) -> None:
    """Write ``lines`` as large as fits inside the polygon's box (up to ``max_scale``), wrapped, centred."""
    scale, thick, wrapped, sizes, gap, total_h, top, (x0, y0, w, h) = _fit(poly, lines, below_band, max_scale)
    y = top + (y0 + h - top - total_h) / 2
    cx = x0 + w / 2
    for text, (tw, th) in zip(wrapped, sizes):
        y += th
        cv2.putText(image, text, (int(round(cx - tw / 2)), int(round(y))), FONT, scale, color, thick, cv2.LINE_AA)
        y += gap


def _wrap(text: str, scale: float, thick: int, width: float) -> list[str]:
    words, lines = text.split(), []
    for word in words:
        if lines and cv2.getTextSize(lines[-1] + " " + word, FONT, scale, thick)[0][0] <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def draw_layout_overlay(image: np.ndarray, calibration: "Calibration", board: Board,
                        color=(0, 255, 255), thickness: int = 2, labels: bool = True) -> np.ndarray:
    """A copy of ``image`` with every space outline, the board edge and the GO! line projected into it.

    Edges are drawn through points every few millimetres so a lens model's curvature shows.
    """
    out = image.copy()
    if out.ndim == 2:
        out = cv2.cvtColor(out, cv2.COLOR_GRAY2BGR)
    bw, bl = board.size_mm
    outlines = [((0, 0), (bw, 0), (bw, bl), (0, bl))] + [s.polygon for s in board.spaces]
    for k, polygon in enumerate(outlines):
        pts = calibration.mm_to_px(densify(polygon, step_mm=5.0))
        cv2.polylines(out, [np.round(pts).astype(np.int32)], True, (255, 255, 255) if k == 0 else color,
                      thickness + (1 if k == 0 else 0), cv2.LINE_AA)
    go = calibration.mm_to_px(densify([(0, board.go_line_y_mm), (bw, board.go_line_y_mm)], 5.0, closed=False))
    cv2.polylines(out, [np.round(go).astype(np.int32)], False, (0, 0, 255), thickness, cv2.LINE_AA)
    if labels:
        scale = max(0.4, min(out.shape[:2]) / 1500)
        for space in board.spaces:
            cx, cy = calibration.mm_to_px([_centroid(space.polygon)])[0]
            text = space.name if len(space.name) <= 12 else "".join(w[0] for w in space.name.split())
            (tw, th), _ = cv2.getTextSize(text, FONT, scale, 1)
            org = (int(cx - tw / 2), int(cy + th / 2))
            cv2.putText(out, text, org, FONT, scale, (0, 0, 0), 3, cv2.LINE_AA)
            cv2.putText(out, text, org, FONT, scale, color, 1, cv2.LINE_AA)
    return out


def densify(polygon, step_mm: float = 4.0, closed: bool = True) -> np.ndarray:
    """Points every ``step_mm`` along a polygon's edges, so its image under a lens model curves as it should."""
    pts = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    starts = pts if closed else pts[:-1]
    ends = np.roll(pts, -1, axis=0) if closed else pts[1:]
    out = []
    for a, b in zip(starts, ends):
        n = max(1, int(np.ceil(np.linalg.norm(b - a) / step_mm)))
        out.extend(a + (b - a) * t for t in np.arange(n) / n)
    if not closed:
        out.append(pts[-1])
    return np.array(out)


def _centroid(polygon) -> tuple[float, float]:
    pts = np.asarray(polygon, dtype=np.float64)
    x, y = pts[:, 0], pts[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cross = x * yn - xn * y
    area = cross.sum() / 2
    if abs(area) < 1e-9:
        return float(x.mean()), float(y.mean())
    return float(((x + xn) * cross).sum() / (6 * area)), float(((y + yn) * cross).sum() / (6 * area))
