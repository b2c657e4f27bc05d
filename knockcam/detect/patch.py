"""Patches of the photo on the board around candidate token bases, for the small networks that look
again at each token (knockcam.detect.fallen, knockcam.detect.verify, knockcam.detect.refine).

A patch is the board resampled around a base, turned so that "up" points away from the camera: a
standing figure always leans that way, by an amount the camera's height fixes (``lean_mm``), which
the networks get as an extra constant channel (``network_input``).
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError

LEAN_SCALE_MM = 30.0  # the lean channel is lean_mm / this
REMAP_ROWS = 32766  # cv2.remap takes maps and images under SHRT_MAX (32767) rows


def patches(image, calibration: Calibration, xy_mm, nadir_mm, geometry: dict, grid_px: int = 8) -> np.ndarray:
    """(N, S, S, 3) patches of the photo on the board around each base centre ``xy_mm`` (N, 2), ``size_px``
    pixels of ``mm_per_px``: ``behind_mm`` towards the camera's foot (``nadir_mm``) at the bottom, the
    rest of the side away from it above. Where each patch pixel lies in the photo (lens and hump
    included, Calibration.mm_to_px) is computed every ``grid_px`` pixels and interpolated between.
    ``image`` may be a list of frames from the same camera: their patches side by side, (N, S, S, 3k)."""
    size, step, behind = int(geometry["size_px"]), float(geometry["mm_per_px"]), float(geometry["behind_mm"])
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    n = len(xy)
    most = REMAP_ROWS // size  # the patches are cut stacked in one map: that many fit
    if n > most:
        return np.concatenate([patches(image, calibration, xy[i:i + most], nadir_mm, geometry, grid_px)
                               for i in range(0, n, most)])
    away, across = directions(xy, nadir_mm)
    knots = np.arange(0, size + grid_px, grid_px, dtype=np.float64)  # coarse rows / columns, past the last pixel
    j, i = np.meshgrid(knots, knots)
    ahead = (size - 1 - i) * step - behind  # mm away from the camera; the bottom row is -behind
    side = (j - (size - 1) / 2.0) * step
    pts = (xy[:, None, None, :] + ahead[None, :, :, None] * away[:, None, None, :]
           + side[None, :, :, None] * across[:, None, None, :])
    k = len(knots)
    coarse = calibration.mm_to_px(pts.reshape(-1, 2)).astype(np.float32).reshape(n * k, k, 2)
    fine_x, fine_y = np.meshgrid(np.arange(size, dtype=np.float32) / grid_px, np.arange(size, dtype=np.float32) / grid_px)
    fine_y = (fine_y[None, :, :] + (np.arange(n, dtype=np.float32) * k)[:, None, None]).reshape(n * size, size)
    fine_x = np.tile(fine_x, (n, 1))
    map_x = cv2.remap(coarse[..., 0], fine_x, fine_y, cv2.INTER_LINEAR)
    map_y = cv2.remap(coarse[..., 1], fine_x, fine_y, cv2.INTER_LINEAR)
    frames = [cv2.remap(img, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).reshape(n, size, size, -1)
              for img in (image if isinstance(image, (list, tuple)) else [image])]
    return np.concatenate(frames, axis=3)


def directions(xy_mm, nadir_mm) -> tuple[np.ndarray, np.ndarray]:
    """(N, 2) unit vectors on the board at each point: away from the camera's foot (a patch's "up") and
    across it (a patch's "right"); straight under the camera, +y is taken as away."""
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    away = xy - np.asarray(nadir_mm, np.float64)[None, :]
    norm = np.linalg.norm(away, axis=1, keepdims=True)
    away = np.where(norm > 1.0, away / np.maximum(norm, 1e-9), np.array([[0.0, 1.0]]))
    return away, np.stack([away[:, 1], -away[:, 0]], axis=1)


def lean_mm(xy_mm, center_mm, height_mm: float) -> np.ndarray:
    """How far from its base a standing token's top appears on the board, seen from a camera at
    ``center_mm`` (x, y, height): farther from the camera's foot, and lower cameras, lean more."""
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    cam_h = max(float(center_mm[2]), 3 * height_mm)
    return np.linalg.norm(xy - np.asarray(center_mm[:2])[None, :], axis=1) * height_mm / (cam_h - height_mm)


def network_input(batch: np.ndarray, lean: np.ndarray) -> np.ndarray:
    """(N, C + 1, S, S) float32: the patches' channels in 0..1 and the lean (mm / LEAN_SCALE_MM) as a constant channel."""
    batch = np.asarray(batch)
    x = batch.astype(np.float32).transpose(0, 3, 1, 2) / 255.0
    k = np.broadcast_to((np.asarray(lean, np.float32) / LEAN_SCALE_MM)[:, None, None, None],
                        (len(batch), 1) + batch.shape[1:3])
    return np.ascontiguousarray(np.concatenate([x, k], axis=1))


def around(image, calibration: Calibration, board: Board, xy_mm, geometry: dict) -> tuple[np.ndarray, np.ndarray]:
    """``patches`` of ``image`` (a frame or a list of them) at base centres ``xy_mm`` and the lean of a
    standing figure at each (mm), seen from the camera ``calibration`` implies."""
    from knockcam.detect.reference import viewpoint

    vp = viewpoint(calibration)
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    return patches(image, calibration, xy, vp.nadir_mm, geometry), lean_mm(xy, vp.center_mm, board.token.height_mm)


class PhotoPair:
    """A photo, its empty-board frame (None for a photo alone) and their calibration, as the networks that
    look again at the found bases see them (knockcam.detect.verify, knockcam.detect.refine,
    knockcam.detect.fallen): the network input at each base is cut once and kept, since they look at the
    same bases with the same patch."""

    PHOTO_AND_LEAN = [0, 1, 2, 6]  # network_input's channels without the empty frame's: what the fallen network sees

    def __init__(self, image: np.ndarray, reference: np.ndarray | None, calibration: Calibration, board: Board):
        self.image, self.reference, self.calibration, self.board = image, reference, calibration, board
        self._rows: dict[tuple, np.ndarray] = {}

    def network_input(self, xy_mm, geometry: dict) -> np.ndarray:
        """(N, 7, S, S) float32 for bases at ``xy_mm``: the photo's patch and the empty frame's (BGR in 0..1
        each) and the figure's lean (``network_input``); (N, 4, S, S) for a photo alone. Only bases not cut
        before with ``geometry`` are cut."""
        shape = json.dumps(geometry, sort_keys=True)
        keys = [(shape, float(x), float(y)) for x, y in np.asarray(xy_mm, np.float64).reshape(-1, 2)]
        new = list(dict.fromkeys(k for k in keys if k not in self._rows))
        frames = [self.image] if self.reference is None else [self.image, self.reference]
        if new:
            cut = network_input(*around(frames, self.calibration, self.board, [k[1:] for k in new], geometry))
            self._rows.update(zip(new, cut))
        if not keys:
            size = int(geometry["size_px"])
            return np.zeros((0, 3 * len(frames) + 1, size, size), np.float32)
        return np.stack([self._rows[k] for k in keys])

    def photo_and_lean(self, xy_mm, geometry: dict) -> np.ndarray:
        """``network_input`` without the empty frame's channels: what a network of the photo alone sees."""
        x = self.network_input(xy_mm, geometry)
        return x if self.reference is None else x[:, self.PHOTO_AND_LEAN]


class PatchClassifier:
    """An ONNX network on ``network_input`` rows and the patch geometry it was trained with (stored in its
    metadata under "patch"). Subclasses name ``what`` it is and the ``remedy`` when it cannot be loaded."""

    what = "the patch classifier"
    remedy = ""

    def __init__(self, path: str | Path):
        from knockcam.detect.model import cpu_session

        self.path = Path(path)
        # a few patches a photo: threads that spin-wait between runs cost more CPU than the network itself
        self.session = cpu_session(self.path, self.what, spin=False, remedy=self.remedy)
        patch = self.session.get_modelmeta().custom_metadata_map.get("patch")
        if patch is None:
            raise KnockcamError(f"cannot load {self.what} {self.path}: it does not say what "
                                f"patch it was trained on{self.remedy}")
        self.geometry = json.loads(patch)
        self.input_name = self.session.get_inputs()[0].name

    @property
    def sees_empty_frame(self) -> bool:
        """Whether the network takes the empty frame's patch too (PhotoPair.network_input: 7 channels, not 4)."""
        return self.session.get_inputs()[0].shape[1] == 7

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The network's raw output for each row of ``x``."""
        return self.session.run(None, {self.input_name: np.asarray(x, np.float32)})[0]


def configured_path(section: str, filename: str) -> Path:
    """data/detect.yaml SECTION.path, else the shipped models/FILENAME."""
    from knockcam import settings
    from knockcam.detect.model import shipped

    configured = settings.load("detect")[section].get("path")
    return Path(configured) if configured else shipped(filename)


_LOADED: dict[tuple[type, str], PatchClassifier] = {}


def load_once(kind: type, path: Path):
    """A ``kind`` network (a class built from a path: a PatchClassifier, cover.CoverNet) from ``path``, None
    when there is no such file (not trained yet); kept for the next call."""
    if not path.is_file():
        return None
    key = (kind, str(path.resolve()))
    if key not in _LOADED:
        _LOADED[key] = kind(path)
    return _LOADED[key]


def load_photo_alone(kind: type, path: Path, train_flag: str):
    """``load_once`` for a network of a photo alone (no empty-board frame): one trained on photo pairs is
    refused, saying which ``knockcam train`` flag trains the right one."""
    net = load_once(kind, path)
    if net is not None and net.sees_empty_frame:
        raise KnockcamError(f"{net.what} {net.path} needs an empty-board frame: {net.what} of a photo alone is "
                            f"trained with 'knockcam train {train_flag}'")
    return net
