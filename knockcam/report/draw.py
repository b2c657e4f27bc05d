"""Drawing helpers the evidence and explain pictures share: side colours, marks, text boxes, rectified views.

Everything that is placed by board millimetres goes through a ``to_px`` function (mm -> pixels of
the picture being drawn), so the same mark means the same board point in the photo, the rectified
view and a zoom.
"""

from __future__ import annotations

from typing import Callable

import cv2
import numpy as np

from knockcam.board.drawing import densify  # noqa: F401  (re-exported for the evidence drawing)
from knockcam.board.layout import Board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration

FONT = cv2.FONT_HERSHEY_SIMPLEX
MONO = cv2.FONT_HERSHEY_PLAIN
# BGR, as the plastic looks; ink is the colour text on that side's marks is written in.
SIDE_BGR = {"red": (40, 40, 215), "yellow": (0, 210, 250), "green": (60, 165, 35), "blue": (215, 110, 20)}
SIDE_INK = {"red": (255, 255, 255), "yellow": (0, 0, 0), "green": (255, 255, 255), "blue": (255, 255, 255)}
CLOSE = (255, 0, 255)  # magenta: a close call, a human's decision
PAPER = (250, 250, 250)
INK = (25, 25, 25)
MUTED = (110, 110, 110)

ToPx = Callable[[np.ndarray], np.ndarray]


def side_bgr(side: str) -> tuple[int, int, int]:
    return SIDE_BGR.get(side, (200, 200, 200))


def side_ink(side: str) -> tuple[int, int, int]:
    return SIDE_INK.get(side, (0, 0, 0))


def circle_mm(center, radius_mm: float, n: int = 48) -> np.ndarray:
    """A circle in board millimetres as (n, 2) points."""
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.column_stack([center[0] + radius_mm * np.cos(t), center[1] + radius_mm * np.sin(t)])


def as_int(points_px) -> np.ndarray:
    """Integer pixels for OpenCV's drawing calls; points far outside any picture (a wild calibration) are clamped."""
    pts = np.nan_to_num(np.asarray(points_px, dtype=np.float64).reshape(-1, 2), nan=-1e5, posinf=1e5, neginf=-1e5)
    return np.round(np.clip(pts, -1e5, 1e5)).astype(np.int32)


def fill_alpha(image: np.ndarray, polygons_px: list[np.ndarray], color, alpha: float) -> None:
    """Blend ``color`` into ``image`` inside the polygons (in place)."""
    if not polygons_px:
        return
    overlay = image.copy()
    cv2.fillPoly(overlay, [as_int(p) for p in polygons_px], color, cv2.LINE_AA)
    cv2.addWeighted(overlay, alpha, image, 1 - alpha, 0, dst=image)


def polyline(image: np.ndarray, points_px, color, thickness: int, closed: bool = True, halo: int = 0) -> None:
    """A polyline, optionally with a dark halo under it so it reads on any background."""
    pts = as_int(points_px)
    if halo:
        cv2.polylines(image, [pts], closed, (0, 0, 0), thickness + 2 * halo, cv2.LINE_AA)
    cv2.polylines(image, [pts], closed, color, thickness, cv2.LINE_AA)


def dashed(image: np.ndarray, points_px, color, thickness: int, dash: float = 10.0, gap: float = 7.0,
           closed: bool = True, halo: int = 0) -> None:
    """A dashed polyline: dashes of ``dash`` px separated by ``gap`` px, measured along the line."""
    pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 2)
    if closed:
        pts = np.vstack([pts, pts[:1]])
    seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
    along = np.concatenate([[0.0], np.cumsum(seg)])
    total = along[-1]
    if total <= 0:
        return
    period = dash + gap
    starts = np.arange(0.0, total, period)
    for s in starts:
        e = min(s + dash, total)
        ts = np.concatenate([[s], along[(along > s) & (along < e)], [e]])
        piece = np.column_stack([np.interp(ts, along, pts[:, 0]), np.interp(ts, along, pts[:, 1])])
        if halo:
            cv2.polylines(image, [as_int(piece)], False, (0, 0, 0), thickness + 2 * halo, cv2.LINE_AA)
        cv2.polylines(image, [as_int(piece)], False, color, thickness, cv2.LINE_AA)


def text_size(text: str, scale: float, thickness: int = 1, font=FONT) -> tuple[int, int, int]:
    (w, h), base = cv2.getTextSize(text, font, scale, thickness)
    return w, h, base


def label(image: np.ndarray, text: str, org, scale: float, color=(255, 255, 255), bg=(0, 0, 0),
          thickness: int = 1, pad: int = 3, anchor: str = "left", border=None) -> tuple[int, int, int, int]:
    """Text on a filled box at ``org`` (left-middle, or centre with anchor='center'); returns the box."""
    w, h, base = text_size(text, scale, thickness)
    x, y = int(round(org[0])), int(round(org[1]))
    if anchor == "center":
        x -= w // 2
    x0, y0 = x - pad, y - h // 2 - pad
    x1, y1 = x + w + pad, y + h // 2 + base + pad - 1
    H, W = image.shape[:2]
    dx = max(0, -x0) - max(0, x1 - (W - 1))
    dy = max(0, -y0) - max(0, y1 - (H - 1))
    x0, x1, x, y0, y1, y = x0 + dx, x1 + dx, x + dx, y0 + dy, y1 + dy, y + dy
    cv2.rectangle(image, (x0, y0), (x1, y1), bg, -1)
    if border is not None:
        cv2.rectangle(image, (x0, y0), (x1, y1), border, 1)
    cv2.putText(image, text, (x, y + h // 2), FONT, scale, color, thickness, cv2.LINE_AA)
    return x0, y0, x1, y1


def fitted(text: str, width: int, scale: float, thickness: int = 1, font=FONT) -> float:
    """``scale``, or the smaller one at which ``text`` is at most ``width`` px wide (a font's width does not
    shrink quite in step with its scale, so it is measured again)."""
    while scale > 0.2 and text_size(text, scale, thickness, font)[0] > width:
        scale *= min(0.97, width / text_size(text, scale, thickness, font)[0])
    return scale


def shortened(text: str, width: int, scale: float, thickness: int = 1, font=FONT) -> str:
    """``text``, or its start and end with ".." between, at most ``width`` px wide at ``scale`` (a file name
    keeps its beginning and its extension)."""
    for keep in range(len(text), 1, -1):
        short = text if keep == len(text) else text[:(keep + 1) // 2] + ".." + text[len(text) - keep // 2:]
        if text_size(short, scale, thickness, font)[0] <= width:
            return short
    return ".."


def fit_words(text: str, width: int, scale: float, thickness: int = 1, font=FONT) -> str:
    """``text``, at most ``width`` px wide at ``scale``: the words before its first number (a space's name) are
    cut short, the number and what follows it kept ("vs North Carolina Av.. 29%"); cut at the end only when
    that is not enough."""
    def fits(words: str) -> bool:
        return text_size(words, scale, thickness, font)[0] <= width

    if fits(text):
        return text
    words = text.split(" ")
    first_number = next((i for i, w in enumerate(words) if any(c.isdigit() for c in w)), len(words) - 1)
    head, tail = " ".join(words[:first_number]), " ".join(words[first_number:])
    while head and not fits(f"{head}.. {tail}"):
        head = head[:-1].rstrip()
    short = f"{head}.. {tail}" if head else tail
    while not fits(short) and len(short) > 2:
        short = short[:-3] + ".."
    return short


def put(image: np.ndarray, text: str, org, scale: float, color=INK, thickness: int = 1, font=FONT) -> int:
    """Plain text with its baseline-left at ``org``; returns the text width."""
    cv2.putText(image, text, (int(org[0]), int(org[1])), font, scale, color, thickness, cv2.LINE_AA)
    return text_size(text, scale, thickness, font)[0]


def mono_block(image: np.ndarray, lines: list[str], origin, char_w: int, line_h: int, scale: float,
               color=INK, thickness: int = 1, colours: dict[int, dict[int, tuple]] | None = None) -> int:
    """Draw lines of monospaced text (character by character on a fixed grid); returns the y after the block.

    ``colours[line][column]`` recolours single characters (used to tint side names).
    """
    x0, y = int(origin[0]), int(origin[1])
    for li, line in enumerate(lines):
        y += line_h
        tint = (colours or {}).get(li, {})
        for ci, ch in enumerate(line):
            if ch == " ":
                continue
            cw = text_size(ch, scale, thickness, MONO)[0]
            cv2.putText(image, ch, (x0 + ci * char_w + (char_w - cw) // 2, y), MONO, scale, tint.get(ci, color),
                        thickness, cv2.LINE_AA)
    return y


# --- rectified views --------------------------------------------------------------------------
def rectify(image: np.ndarray, calibration: Calibration, view: TopDown) -> np.ndarray:
    """The photo resampled onto a top-down raster (lens model included): what the board looks like from above."""
    width, height = view.size
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    mm = view.to_mm(np.column_stack([u.ravel(), v.ravel()]))
    return remap_mm(image, calibration, mm, (height, width))


def rectify_window(image: np.ndarray, calibration: Calibration, center_mm, half_mm: float,
                   px_per_mm: float) -> tuple[np.ndarray, ToPx]:
    """A square top-down close-up of the photo around ``center_mm``, and its mm -> pixel mapping."""
    size = int(round(2 * half_mm * px_per_mm))
    cx, cy = float(center_mm[0]), float(center_mm[1])
    x0, y1 = cx - half_mm, cy + half_mm

    def to_px(points_mm) -> np.ndarray:
        p = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
        return np.column_stack([(p[:, 0] - x0) * px_per_mm, (y1 - p[:, 1]) * px_per_mm])

    u, v = np.meshgrid(np.arange(size, dtype=np.float64) + 0.5, np.arange(size, dtype=np.float64) + 0.5)
    mm = np.column_stack([x0 + u.ravel() / px_per_mm, y1 - v.ravel() / px_per_mm])
    return remap_mm(image, calibration, mm, (size, size)), to_px


def remap_mm(image: np.ndarray, calibration: Calibration, points_mm: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Sample the photo at board points (row-major over ``shape``); outside the photo is dark grey."""
    px = calibration.mm_to_px(points_mm).astype(np.float32)
    map_x = px[:, 0].reshape(shape)
    map_y = px[:, 1].reshape(shape)
    return cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(45, 45, 45))


def view_to_px(view: TopDown, scale: float = 1.0, offset=(0.0, 0.0)) -> ToPx:
    """mm -> pixels of a TopDown raster drawn at ``scale`` with its corner at ``offset``."""
    def to_px(points_mm) -> np.ndarray:
        return view.to_px(points_mm) * scale + np.asarray(offset, dtype=np.float64)
    return to_px


def photo_to_px(calibration: Calibration, scale: float = 1.0, offset=(0.0, 0.0)) -> ToPx:
    """mm -> pixels of the photo drawn at ``scale`` with its corner at ``offset``."""
    def to_px(points_mm) -> np.ndarray:
        return calibration.mm_to_px(points_mm) * scale + np.asarray(offset, dtype=np.float64)
    return to_px


def board_outline(board: Board) -> np.ndarray:
    w, length = board.size_mm
    return np.array([(0.0, 0.0), (w, 0.0), (w, length), (0.0, length)])
