"""What covers the board (a hand, a cup), seen in the photo itself: the parts where a token may not be seen.

With an empty-board frame the reference detector finds them by difference
(knockcam.detect.reference.hidden_areas); a photo alone has no such frame, and the difference misses
some hands and cups. So a small fully-convolutional network (models/cover.onnx, ``knockcam train
--cover``: knockcam.detect.cover_train) looks at the board seen from straight above and gives, for
each cell of a coarse raster, the chance that something other than a token hides the board there.
Covered areas large enough to hide a token are reported as HiddenArea, like the reference detector's
(``detect`` reports both): a token missed under one is sent to a human, not silently lost.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import HiddenArea, hidden_area
from knockcam.errors import KnockcamError

FILE = "cover.onnx"  # in models/
STRIDE = 4  # the network's output cell is this many input pixels on a side
REMEDY = ": retrain it with 'knockcam train --cover'"


def top_down(image: np.ndarray, calibration: Calibration, board: Board, mm_per_px: float) -> np.ndarray:
    """The board seen from straight above at ``mm_per_px`` (the far end at the top; lens and hump
    included): resampled at 1 mm, then averaged down, and padded at the bottom and right to a multiple of
    STRIDE pixels. ``image`` may be any photo-sized raster (the renders' covered mask too)."""
    view = TopDown(board, px_per_mm=1.0)
    map_x, map_y = calibration.view_maps(view)
    fine = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    w, h = view.size
    size = (max(1, round(w / mm_per_px)), max(1, round(h / mm_per_px)))
    raster = cv2.resize(fine, size, interpolation=cv2.INTER_AREA)
    rows, cols = raster.shape[:2]
    return cv2.copyMakeBorder(raster, 0, -rows % STRIDE, 0, -cols % STRIDE, cv2.BORDER_REPLICATE)


def network_input(rasters: np.ndarray) -> np.ndarray:
    """(N, 3, H, W) float32 in 0..1 from (N, H, W, 3) uint8 top-down rasters."""
    return np.ascontiguousarray(np.asarray(rasters).astype(np.float32).transpose(0, 3, 1, 2) / 255.0)


class CoverNet:
    """The ONNX network and the top-down scale it was trained at (its metadata's "cover")."""

    what = "the cover network"

    def __init__(self, path: str | Path):
        from knockcam.detect.model import cpu_session

        self.path = Path(path)
        self.session = cpu_session(self.path, self.what, spin=False, remedy=REMEDY)
        meta = self.session.get_modelmeta().custom_metadata_map.get("cover")
        if meta is None:
            raise KnockcamError(f"cannot load {self.what} {self.path}: it does not say what top-down scale it "
                                f"was trained at{REMEDY}")
        self.mm_per_px = float(json.loads(meta)["mm_per_px"])
        self.input_name = self.session.get_inputs()[0].name

    def chance(self, image: np.ndarray, calibration: Calibration, board: Board) -> np.ndarray:
        """(rows, columns) chance that the board is covered, per cell of STRIDE x ``mm_per_px`` mm (row 0 at
        the far end, as TopDown)."""
        x = network_input(top_down(image, calibration, board, self.mm_per_px)[None])
        logit = self.session.run(None, {self.input_name: x})[0][0, 0]
        return 1.0 / (1.0 + np.exp(-logit))


def path() -> Path:
    """data/detect.yaml cover.path, else the shipped models/cover.onnx."""
    from knockcam.detect.patch import configured_path

    return configured_path("cover", FILE)


def load(where: str | Path | None = None) -> CoverNet | None:
    """The cover network (the shipped one unless ``where``), None when it has not been trained; kept for
    the next call."""
    from knockcam.detect.patch import load_once

    return load_once(CoverNet, Path(where) if where is not None else path())


def covered_areas(chance: np.ndarray, board: Board, mm_per_px: float) -> tuple[HiddenArea, ...]:
    """The areas where ``chance`` (a CoverNet.chance raster) is at least cover.covered_above, each at least
    cover.min_area_mm2 (data/detect.yaml), outlined on the board at 1 mm."""
    cfg = settings.load("detect")["cover"]
    view = TopDown(board, px_per_mm=1.0)
    w, h = view.size
    cell_mm = STRIDE * mm_per_px
    # the chance of each cell, read at every mm of the board (cell centres at (i + 0.5) * cell_mm)
    xs = (np.arange(w, dtype=np.float32) + 0.5) / cell_mm - 0.5
    ys = (np.arange(h, dtype=np.float32) + 0.5) / cell_mm - 0.5
    mx, my = np.meshgrid(xs, ys)
    fine = cv2.remap(chance.astype(np.float32), mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    mask = (fine >= float(cfg["covered_above"])).astype(np.uint8)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return tuple(hidden_area(labels == i, view) for i in range(1, n)
                 if stats[i, cv2.CC_STAT_AREA] >= float(cfg["min_area_mm2"]))


def hidden_in_photo(image: np.ndarray, calibration: Calibration, board: Board,
                    net: CoverNet | None) -> tuple[HiddenArea, ...]:
    """The parts of the board a hand or a cup covers, seen in the photo (none without the network)."""
    if net is None:
        return ()
    return covered_areas(net.chance(image, calibration, board), board, net.mm_per_px)
