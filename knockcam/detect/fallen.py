"""Tokens lying on their side: RULES.md S3 stands one back up "where it fell", so its place is the players' call.

Both detectors place a token by its base. A token lying down shows its body instead, and they report
it as a standing one 15-25 mm from where its base was, often sure of it. This stage looks again at
each detected token: the photo around it is resampled onto the board, turned so that "up" in the
patch points away from the camera (a standing figure always leans that way, by an amount the
camera's height fixes, given to the classifier as a fourth channel; a lying one points anywhere), and
a small convolutional network (models/fallen.onnx, run with onnxruntime) says how likely it lies
down. Tokens at or above the threshold are marked ``fallen`` and knockcam.assign leaves them to a human.

``knockcam train --fallen`` trains the network on synthetic renders (knockcam.detect.fallen_train);
settings in data/detect.yaml ``fallen``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError

LEAN_SCALE_MM = 30.0  # the lean channel is lean_mm / this


def default_path() -> Path:
    """data/detect.yaml fallen.path, else the shipped models/fallen.onnx."""
    from knockcam.detect.model import shipped

    configured = settings.load("detect")["fallen"].get("path")
    return Path(configured) if configured else shipped("fallen.onnx")


def patches(image: np.ndarray, calibration: Calibration, xy_mm, nadir_mm, geometry: dict,
            grid_px: int = 8) -> np.ndarray:
    """(N, S, S, 3) patches of the photo on the board around each base centre ``xy_mm`` (N, 2), ``size_px``
    pixels of ``mm_per_px``: ``behind_mm`` towards the camera's foot (``nadir_mm``) at the bottom, the
    rest of the side away from it above. Where each patch pixel lies in the photo (lens and hump
    included, Calibration.mm_to_px) is computed every ``grid_px`` pixels and interpolated between."""
    size, step, behind = int(geometry["size_px"]), float(geometry["mm_per_px"]), float(geometry["behind_mm"])
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    n = len(xy)
    away = xy - np.asarray(nadir_mm, np.float64)[None, :]
    norm = np.linalg.norm(away, axis=1, keepdims=True)
    away = np.where(norm > 1.0, away / np.maximum(norm, 1e-9), np.array([[0.0, 1.0]]))
    across = np.stack([away[:, 1], -away[:, 0]], axis=1)
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
    out = cv2.remap(image, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    return out.reshape(n, size, size, 3)


def lean_mm(xy_mm, center_mm, height_mm: float) -> np.ndarray:
    """How far from its base a standing token's top appears on the board, seen from a camera at
    ``center_mm`` (x, y, height): farther from the camera's foot, and lower cameras, lean more."""
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    cam_h = max(float(center_mm[2]), 3 * height_mm)
    return np.linalg.norm(xy - np.asarray(center_mm[:2])[None, :], axis=1) * height_mm / (cam_h - height_mm)


def network_input(batch: np.ndarray, lean: np.ndarray) -> np.ndarray:
    """(N, 4, S, S) float32: the patches' BGR in 0..1 and the lean (mm / LEAN_SCALE_MM) as a constant channel."""
    batch = np.asarray(batch)
    x = batch.astype(np.float32).transpose(0, 3, 1, 2) / 255.0
    k = np.broadcast_to((np.asarray(lean, np.float32) / LEAN_SCALE_MM)[:, None, None, None],
                        (len(batch), 1) + batch.shape[1:3])
    return np.ascontiguousarray(np.concatenate([x, k], axis=1))


def sample(image: np.ndarray, calibration: Calibration, board: Board, xy_mm, geometry: dict) -> np.ndarray:
    """The network's input for tokens at ``xy_mm`` in ``image``."""
    from knockcam.detect.reference import viewpoint

    vp = viewpoint(calibration)
    xy = np.asarray(xy_mm, np.float64).reshape(-1, 2)
    return network_input(patches(image, calibration, xy, vp.nadir_mm, geometry),
                         lean_mm(xy, vp.center_mm, board.token.height_mm))


class FallenClassifier:
    """The ONNX network and the patch geometry it was trained with (stored in its metadata)."""

    def __init__(self, path: str | Path):
        from knockcam.detect.model import cpu_session

        self.path = Path(path)
        remedy = " (retrain it with 'knockcam train --fallen')"
        # a few patches a photo: threads that spin-wait between runs cost more CPU than the network itself
        self.session = cpu_session(self.path, "the fallen-token classifier", spin=False, remedy=remedy)
        patch = self.session.get_modelmeta().custom_metadata_map.get("patch")
        if patch is None:
            raise KnockcamError(f"cannot load the fallen-token classifier {self.path}: it does not say what "
                                f"patch it was trained on{remedy}")
        self.geometry = json.loads(patch)
        self.input_name = self.session.get_inputs()[0].name

    def probability(self, x: np.ndarray) -> np.ndarray:
        """P(lying down) for each row of ``network_input``."""
        if not len(x):
            return np.zeros(0)
        logits = self.session.run(None, {self.input_name: np.asarray(x, np.float32)})[0].reshape(-1)
        return 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -30, 30)))


_LOADED: dict[str, FallenClassifier] = {}


def load(path: str | Path | None = None) -> FallenClassifier | None:
    """The shipped classifier (None when it has not been trained), kept for the next call."""
    path = Path(path) if path is not None else default_path()
    if not path.is_file():
        return None
    key = str(path.resolve())
    if key not in _LOADED:
        _LOADED[key] = FallenClassifier(path)
    return _LOADED[key]


def mark_fallen(tokens: list[Token], image: np.ndarray, calibration: Calibration, board: Board,
                classifier: FallenClassifier | None) -> list[Token]:
    """``tokens`` with those the classifier finds lying down marked ``fallen`` (data/detect.yaml fallen.threshold)."""
    if classifier is None or not tokens:
        return list(tokens)
    threshold = float(settings.load("detect")["fallen"]["threshold"])
    p = classifier.probability(sample(image, calibration, board, [t.xy_mm for t in tokens], classifier.geometry))
    return [replace(t, fallen=True) if pk >= threshold else t for t, pk in zip(tokens, p)]
