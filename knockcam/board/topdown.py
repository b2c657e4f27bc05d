"""A top-down raster of the board: board millimetres <-> pixels of a rectified image.

One definition serves drawing, the rectified evidence view and the detector's canonical input,
so a point means the same pixel everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from knockcam.board.layout import Board


@dataclass(frozen=True)
class TopDown:
    """Board seen from straight above at ``px_per_mm``, with ``margin_mm`` of table around it.

    The far end of the board is at the top of the image (a player's view from GO!), so
    pixel (u, v) = ((x + margin) * s, (length + margin - y) * s).
    """

    board: Board
    px_per_mm: float = 1.0
    margin_mm: float = 0.0

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        width, length = self.board.size_mm
        return (int(round((width + 2 * self.margin_mm) * self.px_per_mm)),
                int(round((length + 2 * self.margin_mm) * self.px_per_mm)))

    @property
    def mm_to_px(self) -> np.ndarray:
        """3x3 homography from board millimetres to raster pixels."""
        s, m = self.px_per_mm, self.margin_mm
        length = self.board.size_mm[1]
        return np.array([[s, 0.0, m * s], [0.0, -s, (length + m) * s], [0.0, 0.0, 1.0]])

    def to_px(self, points_mm) -> np.ndarray:
        """(N, 2) board millimetres -> (N, 2) raster pixels."""
        pts = np.asarray(points_mm, dtype=np.float64).reshape(-1, 2)
        return _apply(self.mm_to_px, pts)

    def to_mm(self, points_px) -> np.ndarray:
        """(N, 2) raster pixels -> (N, 2) board millimetres."""
        pts = np.asarray(points_px, dtype=np.float64).reshape(-1, 2)
        return _apply(np.linalg.inv(self.mm_to_px), pts)


def _apply(h: np.ndarray, pts: np.ndarray) -> np.ndarray:
    homog = np.hstack([pts, np.ones((len(pts), 1))]) @ h.T
    return homog[:, :2] / homog[:, 2:3]
