"""Tokens lying on their side: RULES.md S3 stands one back up "where it fell", so its place is the players' call.

Both detectors place a token by its base. A token lying down shows its body instead, and they report
it as a standing one 15-25 mm from where its base was, often sure of it. This stage looks again at
each detected token: the photo around it is resampled onto the board, turned so that "up" in the
patch points away from the camera (knockcam.detect.patch: a standing figure always leans that way, by
an amount the camera's height fixes, given to the classifier as a fourth channel; a lying one points
anywhere), and
a small convolutional network (models/fallen.onnx, run with onnxruntime) says how likely it lies
down. Tokens at or above the threshold are marked ``fallen`` and knockcam.assign leaves them to a human.

``knockcam train --fallen`` trains the network on synthetic renders (knockcam.detect.fallen_train);
settings in data/detect.yaml ``fallen``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.patch import PatchClassifier, PhotoPair, around, configured_path, load_once, network_input
from knockcam.detect.tokens import Token


def default_path() -> Path:
    """data/detect.yaml fallen.path, else the shipped models/fallen.onnx."""
    return configured_path("fallen", "fallen.onnx")


def sample(image: np.ndarray, calibration: Calibration, board: Board, xy_mm, geometry: dict) -> np.ndarray:
    """The network's input for tokens at ``xy_mm`` in ``image``."""
    return network_input(*around(image, calibration, board, xy_mm, geometry))


class FallenClassifier(PatchClassifier):
    """models/fallen.onnx: how likely each token lies down."""

    what = "the fallen-token classifier"
    remedy = " (retrain it with 'knockcam train --fallen')"

    def probability(self, x: np.ndarray) -> np.ndarray:
        """P(lying down) for each row of ``network_input``."""
        if not len(x):
            return np.zeros(0)
        logits = self.logits(x).reshape(-1)
        return 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -30, 30)))


def load(path: str | Path | None = None) -> FallenClassifier | None:
    """The shipped network (None when it has not been trained), kept for the next call."""
    return load_once(FallenClassifier, Path(path) if path is not None else default_path())


def mark_fallen(tokens: list[Token], image: np.ndarray, calibration: Calibration, board: Board,
                classifier: FallenClassifier | None, pair: PhotoPair | None = None) -> list[Token]:
    """``tokens`` with those the classifier finds lying down marked ``fallen`` (data/detect.yaml fallen.threshold).
    With ``pair`` (the photo and its empty frame), the patches are taken from the ones it keeps: the last
    look (knockcam.detect.verify) is at the same bases."""
    if classifier is None or not tokens:
        return list(tokens)
    threshold = float(settings.load("detect")["fallen"]["threshold"])
    xy = [t.xy_mm for t in tokens]
    if pair is not None:
        x = pair.network_input(xy, classifier.geometry)[:, PhotoPair.PHOTO_AND_LEAN]
    else:
        x = sample(image, calibration, board, xy, classifier.geometry)
    p = classifier.probability(x)
    return [replace(t, fallen=True) if pk >= threshold else t for t, pk in zip(tokens, p)]
