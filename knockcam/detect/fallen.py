"""Tokens lying on their side: RULES.md S3 stands one back up "where it fell", where its base is.

Both detectors place a token by its base. A token lying down shows its body instead, and they report
it as a standing one 15-25 mm from where its base was, often sure of it. This stage looks again at
each detected token: the photo around it is resampled onto the board, turned so that "up" in the
patch points away from the camera (knockcam.detect.patch: a standing figure always leans that way, by
an amount the camera's height fixes, given to the classifier as a fourth channel; a lying one points
anywhere), and
a small convolutional network (models/fallen.onnx, run with onnxruntime) says how likely it lies
down. Tokens at or above the threshold are marked ``fallen``; knockcam.assign gives them a wider
uncertainty (assign.yaml ``fallen_sigma_mm``), so near a line they are close calls. Tokens it half
believes lie down (from ``maybe_above``) are marked ``maybe_fallen``: not moved, but as uncertain.
With an empty-board frame, a second classifier (models/fallen_pair.onnx) also sees the empty frame's
patch, so the board art under a token is not mistaken for part of it: it marks fewer standing tokens.

Where is it stood back up? The detectors report a lying token on its body, often near its top (a
median 12 mm from its base on tuning renders). ``place_fallen`` moves each token marked fallen to where a second network
(models/fallen_base.onnx, on the same patch) places the base: the point S3 stands it up on. It is
less sure than a standing token's base, but the space knockcam proposes is the right one more often.
Once stood up, two reports of one lying token (its base and its top) land on one spot: one stays
(``one_report_each``).

``knockcam train --fallen``, ``--fallen-pair`` and ``--fallen-base`` train the networks on synthetic
renders (knockcam.detect.fallen_train); settings in data/detect.yaml ``fallen``, ``fallen_pair`` and
``fallen_base``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.combine import near
from knockcam.detect.patch import PatchClassifier, PhotoPair, configured_path, load_once
from knockcam.detect.refine import BaseRefiner
from knockcam.detect.tokens import Token, seen_by
from knockcam.errors import KnockcamError


def default_path() -> Path:
    """data/detect.yaml fallen.path, else the shipped models/fallen.onnx."""
    return configured_path("fallen", "fallen.onnx")


class FallenClassifier(PatchClassifier):
    """models/fallen.onnx: how likely each token lies down, from the photo's patch."""

    what = "the fallen-token classifier"
    remedy = " (retrain it with 'knockcam train --fallen')"
    section = "fallen"  # data/detect.yaml: its threshold

    @property
    def threshold(self) -> float:
        """P(lying) at which a token is marked fallen."""
        return float(settings.load("detect")[self.section]["threshold"])

    @property
    def maybe_above(self) -> float:
        """P(lying) from which, under ``threshold``, a token is marked ``maybe_fallen``."""
        return float(settings.load("detect")[self.section]["maybe_above"])

    def probability(self, x: np.ndarray) -> np.ndarray:
        """P(lying down) for each row of ``network_input``."""
        if not len(x):
            return np.zeros(0)
        logits = self.logits(x).reshape(-1)
        return 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -30, 30)))


class FallenPairClassifier(FallenClassifier):
    """models/fallen_pair.onnx: how likely each token lies down, from the photo's patch and the empty frame's."""

    what = "the fallen-token classifier for photo pairs"
    remedy = " (retrain it with 'knockcam train --fallen-pair')"
    section = "fallen_pair"


def _input(xy_mm, image: np.ndarray, calibration: Calibration, board: Board, net: PatchClassifier,
           pair: PhotoPair | None) -> np.ndarray:
    """``net``'s input at ``xy_mm``: the photo's and the empty frame's patches and the lean for a network
    that sees the empty frame (which needs ``pair`` with its empty frame); else the photo's patch and the
    lean, from ``pair``'s kept patches when there is one (the last look cuts the same), else cut from ``image``."""
    pair = pair if pair is not None else PhotoPair(image, None, calibration, board)
    if net.sees_empty_frame:
        if pair.reference is None:
            raise KnockcamError(f"{net.what} {net.path} needs the empty-board frame")
        return pair.network_input(xy_mm, net.geometry)
    return pair.photo_and_lean(xy_mm, net.geometry)


def load(path: str | Path | None = None) -> FallenClassifier | None:
    """The shipped network (None when it has not been trained), kept for the next call."""
    return load_once(FallenClassifier, Path(path) if path is not None else default_path())


def pair_path() -> Path:
    """data/detect.yaml fallen_pair.path, else the shipped models/fallen_pair.onnx."""
    return configured_path("fallen_pair", "fallen_pair.onnx")


def load_pair(path: str | Path | None = None) -> FallenPairClassifier | None:
    """The shipped classifier for photo pairs (None when it has not been trained), kept for the next call."""
    return load_once(FallenPairClassifier, Path(path) if path is not None else pair_path())


def mark_fallen(tokens: list[Token], image: np.ndarray, calibration: Calibration, board: Board,
                classifier: FallenClassifier | None, pair: PhotoPair | None = None) -> list[Token]:
    """``tokens`` with those the classifier finds lying down marked ``fallen`` (at its ``threshold``), and those
    it half believes lie down (from ``maybe_above``) marked ``maybe_fallen``: a lying token it misses is placed
    on its body, 8-18 mm from its base (on tuning renders), so near a line its call is as close as a lying token's.
    With ``pair`` (the photo and its empty frame), the patches are taken from the ones it keeps: the last
    look (knockcam.detect.verify) is at the same bases. A classifier that sees the empty frame
    (FallenPairClassifier) needs ``pair``."""
    if classifier is None or not tokens:
        return list(tokens)
    x = _input([t.xy_mm for t in tokens], image, calibration, board, classifier, pair)
    p, threshold, maybe = classifier.probability(x), classifier.threshold, classifier.maybe_above
    return [replace(t, fallen=True) if pk >= threshold else replace(t, maybe_fallen=True) if pk >= maybe else t
            for t, pk in zip(tokens, p)]


class FallenPlacer(BaseRefiner):
    """models/fallen_base.onnx: for a token lying down, where its base lies from the point it was found
    (mm ahead, away from the camera, and mm to the right), in the fallen network's patch."""

    what = "the fallen-token placer"
    remedy = " (retrain it with 'knockcam train --fallen-base')"


class FallenPairPlacer(FallenPlacer):
    """models/fallen_base_pair.onnx: the placer that sees the empty frame's patch too (used with one)."""

    what = "the fallen-token placer for photo pairs"
    remedy = " (retrain it with 'knockcam train --fallen-base-pair')"


def placer_path() -> Path:
    """data/detect.yaml fallen_base.path, else the shipped models/fallen_base.onnx."""
    return configured_path("fallen_base", "fallen_base.onnx")


def load_placer(path: str | Path | None = None) -> FallenPlacer | None:
    """The shipped placer (None when it has not been trained), kept for the next call."""
    return load_once(FallenPlacer, Path(path) if path is not None else placer_path())


def pair_placer_path() -> Path:
    """data/detect.yaml fallen_base_pair.path, else models/fallen_base_pair.onnx."""
    return configured_path("fallen_base_pair", "fallen_base_pair.onnx")


def load_pair_placer(path: str | Path | None = None) -> FallenPairPlacer | None:
    """The placer for photo pairs (None when it has not been trained), kept for the next call."""
    return load_once(FallenPairPlacer, Path(path) if path is not None else pair_placer_path())


def place_fallen(tokens: list[Token], image: np.ndarray, calibration: Calibration, board: Board,
                 placer: FallenPlacer | None, pair: PhotoPair | None = None) -> list[Token]:
    """``tokens`` with those marked fallen moved to where ``placer`` puts their base (RULES.md S3: where
    a lying token is stood back up); a move longer than ``fallen_base.max_move_mm`` is not made. The
    others are returned as they are. ``pair``: as for ``mark_fallen`` (FallenPairPlacer needs it)."""
    lying = [k for k, t in enumerate(tokens) if t.fallen]
    if placer is None or not lying:
        return list(tokens)
    xy = np.array([tokens[k].xy_mm for k in lying], np.float64)
    moved, distance, _ = placer.placed(_input(xy, image, calibration, board, placer, pair), xy, calibration)
    px = calibration.mm_to_px(moved)
    limit = float(settings.load("detect")["fallen_base"]["max_move_mm"])
    out = list(tokens)
    for i, k in enumerate(lying):
        if distance[i] <= limit:
            out[k] = replace(tokens[k], xy_mm=(float(moved[i, 0]), float(moved[i, 1])),
                             xy_px=(float(px[i, 0]), float(px[i, 1])))
    return one_report_each(out, float(settings.load("detect")["fallen_base"]["stood_apart_mm"]))


def one_report_each(tokens: list[Token], apart_mm: float) -> list[Token]:
    """``tokens`` less the second reports of a lying token: once stood up, a lying token within
    ``apart_mm`` of a surer token (of any side: more detectors saw it, then a greater confidence) is
    that token reported twice (at its base and its top, or in two colours), and is dropped. A lying
    token's base disc stands on its rim, outside any standing token's base, so no two tokens stand
    up that close (base discs are 25 mm across)."""
    order = sorted(range(len(tokens)), key=lambda k: (seen_by(tokens[k]), tokens[k].confidence), reverse=True)
    kept: list[int] = []
    for k in order:
        t = tokens[k]
        if not near(t.xy_mm, [tokens[j].xy_mm for j in kept if t.fallen or tokens[j].fallen], apart_mm):
            kept.append(k)
    return [tokens[k] for k in sorted(kept)]
