"""Small synthetic photos of a board with known truth, for calibration tests and its benchmark.

A randomly styled board print is warped by a real pinhole camera (random height, tilt, turn and
focal length) onto a textured table with distractors, tokens, uneven light and noise. The full
renderer lives in ``knockcam.synth``; this one exists so calibration can be measured on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import board_corners_mm

SET_COLOURS = {  # BGR
    "brown": (40, 70, 120), "light_blue": (235, 206, 135), "pink": (180, 105, 255), "orange": (0, 140, 255),
    "red": (40, 40, 220), "yellow": (0, 220, 250), "green": (60, 160, 40), "dark_blue": (140, 40, 20),
}


@dataclass(frozen=True)
class Scene:
    """A rendered photo and the calibration that truly made it."""

    image: np.ndarray
    truth: Calibration
    art_seed: int
    camera_seed: int


def draw_art(board: Board, px_per_mm: float, seed: int) -> np.ndarray:
    """A board print in a random style: the whole board, far end at the top (TopDown convention)."""
    try:  # the board engineer's drawing, when it exists, is one style among others
        from knockcam.board.drawing import draw_board  # type: ignore

        if seed % 3 == 2:
            art = draw_board(board, px_per_mm, 0.0)
            if isinstance(art, np.ndarray) and art.ndim == 3:
                return art[..., :3].copy()
    except Exception:  # noqa: BLE001 - any problem there: use our own styles
        pass
    rng = np.random.default_rng(seed)
    w_mm, l_mm = board.size_mm
    w, h = int(round(w_mm * px_per_mm)), int(round(l_mm * px_per_mm))
    base = rng.integers(20, 236, 3)
    art = np.empty((h, w, 3), np.uint8)
    art[:] = base
    s = px_per_mm

    def px(x, y):
        return int(round(x * s)), int(round((l_mm - y) * s))

    line = tuple(int(v) for v in (rng.integers(0, 60, 3) if rng.random() < 0.6 else rng.integers(200, 256, 3)))
    thick = max(1, int(round(rng.uniform(0.8, 3.0) * s)))
    jitter = rng.integers(-30, 31, 3)
    for space in board.spaces:
        poly = np.array([px(x, y) for x, y in space.polygon], np.int32)
        if space.color_set:
            colour = np.clip(np.array(SET_COLOURS[space.color_set]) + jitter, 0, 255)
        else:
            colour = np.clip(base + rng.integers(-60, 61, 3), 0, 255)
        cv2.fillPoly(art, [poly], tuple(int(v) for v in colour))
        if rng.random() < 0.7:  # a pale inner panel with "text"
            x0, y0 = poly.min(axis=0)
            x1, y1 = poly.max(axis=0)
            inset = int(0.18 * (x1 - x0))
            panel = tuple(int(v) for v in np.clip(np.array(colour) + 90, 0, 255))
            cv2.rectangle(art, (x0 + inset, y0 + inset), (x1 - inset, y1 - inset), panel, -1)
            cv2.putText(art, str(space.value or space.kind[:4]), (x0 + inset, (y0 + y1) // 2),
                        cv2.FONT_HERSHEY_SIMPLEX, 0.25 * s, line, max(1, thick // 2), cv2.LINE_AA)
        cv2.polylines(art, [poly], True, line, thick, cv2.LINE_AA)
    # the launch area: GO! text, the go line, maybe an arrow
    gy = board.go_line_y_mm
    cv2.line(art, px(0, gy), px(w_mm, gy), line, thick, cv2.LINE_AA)
    cv2.putText(art, "GO!", px(w_mm * rng.uniform(0.2, 0.45), gy * rng.uniform(0.3, 0.6)),
                cv2.FONT_HERSHEY_DUPLEX, rng.uniform(1.0, 2.0) * s, line, 2 * thick, cv2.LINE_AA)
    if rng.random() < 0.5:
        cv2.arrowedLine(art, px(w_mm / 2, gy + 20), px(w_mm / 2, 280), line, thick, cv2.LINE_AA, tipLength=0.2)
    if rng.random() < 0.6:  # a printed frame just inside the edge
        inset = rng.uniform(2, 8)
        cv2.rectangle(art, px(inset, inset), px(w_mm - inset, l_mm - inset), line, thick, cv2.LINE_AA)
    return art


def table_texture(size: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """A table: base colour, low-frequency stain, wood grain, and a few sheets of paper or mats."""
    w, h = size
    colour = rng.integers(30, 226, 3).astype(np.float32)
    low = cv2.resize(rng.normal(0, 1, (8, 12)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    y = np.arange(h, dtype=np.float32)[:, None]
    x = np.arange(w, dtype=np.float32)[None, :]
    a = rng.uniform(0, np.pi)
    grain = np.sin((x * np.cos(a) + y * np.sin(a)) / rng.uniform(3, 12) + 3 * low)
    img = colour[None, None, :] + (18 * low + rng.uniform(0, 14) * grain)[..., None]
    img += rng.normal(0, 4, (h, w, 1)).astype(np.float32)
    img = np.clip(img, 0, 255).astype(np.uint8)
    for _ in range(int(rng.integers(0, 4))):
        c = rng.uniform([0, 0], [w, h])
        rect = (tuple(c), tuple(rng.uniform(0.08, 0.3, 2) * min(w, h) * 2), float(rng.uniform(0, 180)))
        box = cv2.boxPoints(rect).astype(np.int32)
        cv2.fillPoly(img, [box], tuple(int(v) for v in rng.integers(0, 256, 3)), cv2.LINE_AA)
    return img


def look_at_homography(board: Board, rng: np.random.Generator, size: tuple[int, int],
                       tilt_deg: tuple[float, float] = (0, 50), around_mm: float = 0.0) -> np.ndarray | None:
    """A pinhole camera looking at the board: homography board mm -> pixels, or None if it leaves the frame."""
    view = look_at(board, rng, size, tilt_deg, around_mm)
    return None if view is None else view[0]


def look_at(board: Board, rng: np.random.Generator, size: tuple[int, int], tilt_deg: tuple[float, float] = (0, 50),
            around_mm: float = 0.0) -> tuple[np.ndarray, np.ndarray] | None:
    """``look_at_homography``'s camera as (homography, up): ``up`` is the image of a 1 mm step up from the
    board's face, on the homography's scale (a point ``z`` mm above board point p is at H p + z up)."""
    w, h = size
    bw, bl = board.size_mm
    f = rng.uniform(0.7, 1.3) * max(w, h)
    tilt = np.radians(rng.uniform(*tilt_deg))
    azim = rng.uniform(0, 2 * np.pi)
    target = np.array([bw / 2, bl / 2, 0.0]) + np.append(rng.normal(0, 40, 2), 0)
    dist = f * bl / rng.uniform(0.55, 0.95) / max(w, h)
    cam = target + dist * np.array([np.sin(tilt) * np.cos(azim), np.sin(tilt) * np.sin(azim), np.cos(tilt)])
    z = (target - cam) / np.linalg.norm(target - cam)
    roll = rng.uniform(0, 2 * np.pi) if rng.random() < 0.5 else rng.normal(0, 0.3) + (np.pi / 2) * rng.integers(0, 4)
    up = np.array([np.sin(roll), np.cos(roll), 0.0])
    if abs(np.dot(up, z)) > 0.95:
        up = np.array([1.0, 0.0, 0.0])
    y = -(up - np.dot(up, z) * z)
    y /= np.linalg.norm(y)
    x = np.cross(y, z)
    r = np.vstack([x, y, z])
    k = np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1]])
    hom = k @ np.column_stack([r[:, 0], r[:, 1], -r @ cam])
    up = k @ r[:, 2] / hom[2, 2]
    hom /= hom[2, 2]
    a = around_mm
    corners = cv2.perspectiveTransform(np.array([[[-a, -a]], [[bw + a, -a]], [[bw + a, bl + a]], [[-a, bl + a]]],
                                                np.float64), hom)
    corners = corners.reshape(-1, 2)
    margin = 0.03 * min(w, h)
    if (corners < margin).any() or (corners[:, 0] > w - 1 - margin).any() or (corners[:, 1] > h - 1 - margin).any():
        return None
    return hom, up


def make_scene(board: Board, camera_seed: int, art_seed: int | None = None, size: tuple[int, int] = (1280, 720),
               tokens: int = 6, tilt_deg: tuple[float, float] = (0, 50), background: np.ndarray | None = None,
               markers: bool = False, thickness_mm: float = 0.0) -> Scene:
    """One photo of the board: ``art_seed`` picks the print, ``camera_seed`` the camera, table and light.
    ``thickness_mm``: the board's face lies this far above the table, where the marker cards lie (its
    sides are drawn where they show)."""
    art_seed = camera_seed if art_seed is None else art_seed
    rng = np.random.default_rng(10_000 + camera_seed)
    for _ in range(200):
        view = look_at(board, rng, size, tilt_deg, around_mm=90.0 if markers else 0.0)
        if view is not None:
            hom, up = view
            break
    else:
        raise RuntimeError("no camera found that sees the whole board")
    w, h = size
    ss = 2  # supersample, then area-average: edges are anti-aliased like a real sensor's
    art_ppm = 2.0
    art = draw_art(board, art_ppm, art_seed)
    bw, bl = board.size_mm
    mm_to_art = np.array([[art_ppm, 0, -0.5], [0, -art_ppm, bl * art_ppm - 0.5], [0, 0, 1]])
    final_to_ss = np.array([[ss, 0, (ss - 1) / 2], [0, ss, (ss - 1) / 2], [0, 0, 1]])
    art_to_ss = final_to_ss @ hom @ np.linalg.inv(mm_to_art)
    big = (w * ss, h * ss)
    table = background if background is not None else table_texture(big, rng)
    table = cv2.resize(table, big) if table.shape[1::-1] != big else table
    on_table = hom - thickness_mm * np.outer(up, [0, 0, 1])  # board mm -> pixels, in the table's plane
    if thickness_mm > 0:  # the board's sides, where they show below its face, in a dark colour
        quads = [cv2.perspectiveTransform(board_corners_mm(board).reshape(-1, 1, 2), final_to_ss @ h).reshape(-1, 2)
                 for h in (hom, on_table)]
        hull = cv2.convexHull(np.vstack(quads).astype(np.float32)).astype(np.int32)
        side = tuple(int(v) for v in rng.integers(15, 90, 3))
        table = table.copy()
        cv2.fillPoly(table, [hull], side, cv2.LINE_AA)
    if markers:  # the marker sheet's cards, laid on the table at the board's corners
        from knockcam.calibrate.markers import CARD_MM, card_image, marker_corners_mm

        table = table.copy()
        cppm = 4.0
        for marker_id, quad in marker_corners_mm(board).items():
            card = cv2.cvtColor(card_image(marker_id, cppm), cv2.COLOR_GRAY2BGR)
            cx, cy = quad.mean(axis=0)
            x0, ytop = cx - CARD_MM / 2, cy + CARD_MM / 2
            card_to_mm = np.array([[1 / cppm, 0, x0 + 0.5 / cppm], [0, -1 / cppm, ytop - 0.5 / cppm], [0, 0, 1]])
            to_ss = final_to_ss @ on_table @ card_to_mm
            wc = cv2.warpPerspective(card, to_ss, big, flags=cv2.INTER_LINEAR)
            mc = cv2.warpPerspective(np.ones(card.shape[:2], np.float32), to_ss, big, flags=cv2.INTER_LINEAR)[..., None]
            table = (wc * mc + table * (1 - mc)).astype(np.uint8)
    warped = cv2.warpPerspective(art, art_to_ss, big, flags=cv2.INTER_LINEAR)
    mask = cv2.warpPerspective(np.ones(art.shape[:2], np.float32), art_to_ss, big, flags=cv2.INTER_LINEAR)[..., None]
    img = warped.astype(np.float32) * mask + table.astype(np.float32) * (1 - mask)
    # tokens: coloured discs with a dark rim, some at the board's edge
    mm_to_ss = final_to_ss @ hom
    for _ in range(tokens):
        p = rng.uniform([0, 150], [bw, bl])
        if rng.random() < 0.3:
            p[0] = rng.choice([0.0, bw]) + rng.normal(0, 5)
        centre = cv2.perspectiveTransform(p.reshape(1, 1, 2), mm_to_ss).reshape(2)
        edge = cv2.perspectiveTransform((p + [12.5, 0]).reshape(1, 1, 2), mm_to_ss).reshape(2)
        r = int(np.linalg.norm(edge - centre))
        colour = [(40, 40, 200), (40, 200, 230), (60, 170, 40), (200, 90, 30)][int(rng.integers(0, 4))]
        cv2.circle(img, tuple(int(v) for v in centre), r, (20, 20, 20), -1, cv2.LINE_AA)
        cv2.circle(img, tuple(int(v) for v in centre), int(r * 0.85), colour, -1, cv2.LINE_AA)
    img = cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)
    light = cv2.resize(rng.normal(0, 1, (3, 4)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    img = img * (1.0 + 0.12 * light[..., None]) * rng.uniform(0.75, 1.15)
    img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.3, 0.9))
    img = img + rng.normal(0, rng.uniform(1, 4), img.shape)
    img = np.clip(img, 0, 255).astype(np.uint8)
    truth = Calibration(method="truth", image_size=(w, h), homography=hom, error_mm=0.0)
    return Scene(image=img, truth=truth, art_seed=art_seed, camera_seed=camera_seed)
