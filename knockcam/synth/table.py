"""Tables under the board: wood, laminate, cloth and stone textures in the board's plane.

The texture lives in board millimetres so that the camera's perspective foreshortens it the way a
real table recedes; the scene warps it through the same camera as the board.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

KINDS = ("wood", "laminate", "cloth", "stone", "dark")


@dataclass(frozen=True)
class Table:
    """A table texture covering [x0, x0 + w/s] x [y0, y0 + h/s] mm of the plane, ``s`` px per mm."""

    image: np.ndarray
    origin_mm: tuple[float, float]
    px_per_mm: float
    kind: str

    @property
    def px_to_mm(self) -> np.ndarray:
        s = self.px_per_mm
        return np.array([[1 / s, 0, self.origin_mm[0]], [0, 1 / s, self.origin_mm[1]], [0, 0, 1.0]])


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, int], cells: int) -> np.ndarray:
    h, w = shape
    small = rng.normal(0, 1, (max(2, h * cells // max(h, w)), max(2, w * cells // max(h, w)))).astype(np.float32)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)


BANK_SIZE = 40  # distinct tables; each is cached once made (they are slow to draw)


def random_table(rng: np.random.Generator, board_size_mm: tuple[float, float]) -> Table:
    """One of BANK_SIZE tables, chosen by the generator, shifted and turned at random under the board."""
    key = int(rng.integers(BANK_SIZE))
    base = _table(key, (float(board_size_mm[0]), float(board_size_mm[1])))
    return base


@lru_cache(maxsize=BANK_SIZE)
def _table(key: int, board_size_mm: tuple[float, float]) -> Table:
    return make_table(np.random.default_rng([7919, key]), board_size_mm)


def make_table(rng: np.random.Generator, board_size_mm: tuple[float, float], reach_mm: float = 2600.0,
               px_per_mm: float = 0.22) -> Table:
    """A random table texture reaching ``reach_mm`` beyond the board on every side."""
    width, length = board_size_mm
    w = int((width + 2 * reach_mm) * px_per_mm)
    h = int((length + 2 * reach_mm) * px_per_mm)
    kind = KINDS[rng.choice(len(KINDS), p=[0.4, 0.2, 0.2, 0.1, 0.1])]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)

    def along(angle: float) -> np.ndarray:
        """Distance (px) across stripes that run at ``angle``."""
        return yy * np.float32(np.cos(angle)) - xx * np.float32(np.sin(angle))

    def tinted(base, field: np.ndarray) -> np.ndarray:
        return cv2.merge([field * np.float32(c) for c in base])

    if kind == "wood":
        base = (rng.uniform(40, 110), rng.uniform(80, 150), rng.uniform(120, 210))
        v = along(rng.uniform(0, np.pi))
        warp = _smooth_noise(rng, (h, w), 12) * np.float32(rng.uniform(3, 12))
        grain = np.sin((v + warp) * np.float32(rng.uniform(0.25, 0.9)))
        plank_w = np.float32(rng.uniform(90, 220) * px_per_mm)
        plank = np.floor(v / plank_w)
        tint = (np.sin(plank * np.float32(12.9898)) * np.float32(43758.5453)) % np.float32(1.0)
        field = 1 + np.float32(rng.uniform(0.05, 0.2) * 0.5) * grain + np.float32(0.12) * (tint - np.float32(0.5))
        gap = (v / plank_w) % np.float32(1.0) < np.float32(1.2) / plank_w
        field[gap] *= np.float32(0.65)
        img = tinted(base, field)
    elif kind == "laminate" or kind == "dark":
        base = rng.uniform(15, 70, 3) if kind == "dark" else rng.uniform(60, 235, 3)
        img = tinted(base, 1 + np.float32(0.06) * _smooth_noise(rng, (h, w), 8))
    elif kind == "cloth":
        c1 = rng.uniform(40, 240, 3)
        c2 = np.clip(c1 * rng.uniform(0.4, 1.3, 3), 0, 255)
        period = np.float32(rng.uniform(15, 60) * px_per_mm)
        angle = rng.uniform(0, np.pi)
        v = along(angle)
        u = along(angle - np.pi / 2)
        if rng.random() < 0.5:
            m = ((np.floor(u / period) + np.floor(v / period)) % 2).astype(np.float32)
        else:
            m = np.float32(0.5) + np.float32(0.5) * np.sin(u * (np.float32(np.pi) / period))
        m = cv2.GaussianBlur(m, (0, 0), 0.8)
        img = tinted(c1, 1 - m) + tinted(c2, m)
    else:  # stone
        base = rng.uniform(120, 230, 3)
        veins = np.abs(_smooth_noise(rng, (h, w), 20) + 0.5 * _smooth_noise(rng, (h, w), 60))
        img = tinted(base, 1 - np.float32(0.3) * np.exp(-veins * np.float32(6)))
    grain_noise = rng.standard_normal((h, w), dtype=np.float32) * np.float32(rng.uniform(1, 6))
    img = cv2.add(img, cv2.merge([grain_noise] * 3), dtype=cv2.CV_8U)
    return Table(image=img, origin_mm=(-reach_mm, -reach_mm), px_per_mm=px_per_mm, kind=str(kind))
