"""Ground truth on the board: which space a token's base mostly covers (RULES.md S3), and by how much.

The verdict comes from knockcam.board.geometry (exact circle-polygon areas); a dense-sampling
estimate is kept here as an independent check for the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from knockcam.board.layout import Board


@dataclass(frozen=True)
class Resting:
    """Where a base rests (RULES.md S3): the space id (None: no space), the winner's share, every
    space's share, the margin in mm, the state (on_space | no_space | off_board) and the runner-up."""

    space: str | None
    coverage: float
    coverages: dict[str, float]
    margin_mm: float | None
    state: str
    runner_up: str
    runner_up_share: float


@lru_cache(maxsize=4)
def _disc_samples(step: float = 0.01) -> np.ndarray:
    """A square grid of points inside the unit disc, each standing for an equal area."""
    g = np.arange(-1 + step / 2, 1, step)
    xx, yy = np.meshgrid(g, g)
    pts = np.stack([xx.ravel(), yy.ravel()], axis=1)
    return pts[(pts ** 2).sum(axis=1) <= 1.0]


def inside_polygon(points: np.ndarray, polygon) -> np.ndarray:
    """Even-odd point-in-polygon test, vectorised over (N, 2) points."""
    poly = np.asarray(polygon, dtype=np.float64)
    x, y = points[:, 0:1], points[:, 1:2]
    x0, y0 = poly[:, 0][None, :], poly[:, 1][None, :]
    x1, y1 = np.roll(poly[:, 0], -1)[None, :], np.roll(poly[:, 1], -1)[None, :]
    crosses = (y0 > y) != (y1 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        xint = x0 + (y - y0) * (x1 - x0) / (y1 - y0)
    return (np.count_nonzero(crosses & (x < xint), axis=1) % 2) == 1


def sampled_coverages(board: Board, xy_mm, base_diameter_mm: float | None = None) -> dict[str, float]:
    """Share of the base on each space by dense sampling: an independent check of the exact geometry."""
    d = board.token.base_diameter_mm if base_diameter_mm is None else base_diameter_mm
    pts = _disc_samples() * (d / 2) + np.asarray(xy_mm, dtype=np.float64)[None, :]
    out: dict[str, float] = {}
    for space in board.spaces:
        frac = float(np.count_nonzero(inside_polygon(pts, space.polygon))) / len(pts)
        if frac > 0:
            out[space.id] = frac
    return out


def resting_all(board: Board, centers_mm) -> list[Resting]:
    """The S3 verdict for many base centres at once, from knockcam.board.geometry (exact)."""
    from knockcam.board.geometry import coverage

    centers = np.asarray(centers_mm, dtype=np.float64).reshape(-1, 2)
    if not len(centers):
        return []
    cov = coverage(board, centers)
    out = []
    for i in range(len(centers)):
        fr = cov.fractions[i]
        shares = {sid: float(np.floor(fr[j] * 1e4) / 1e4) for j, sid in enumerate(cov.space_ids) if fr[j] > 0}
        shares = {k: v for k, v in shares.items() if v > 0}  # floored: rounded shares still sum to <= 1
        r = cov[i]
        margin = None if not np.isfinite(r.margin_mm) else round(float(r.margin_mm), 3)
        out.append(Resting(space=r.space_id, coverage=float(np.floor(r.share * 1e4) / 1e4), coverages=shares,
                           margin_mm=margin, state=r.state, runner_up=r.runner_up,
                           runner_up_share=round(float(r.runner_up_share), 4)))
    return out


def resting(board: Board, xy_mm) -> Resting:
    """The S3 verdict for one base centre."""
    return resting_all(board, [xy_mm])[0]
