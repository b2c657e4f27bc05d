"""Where exactly each base touches the board: a patch network places it again, more precisely.

A token's space is decided by its base centre (RULES.md S3), and most close calls are tokens whose
base the detectors place a millimetre off. Both detectors work from coarse evidence (the model on a
0.4 px/mm top-down view, the reference detector on the base's rim); this stage cuts the photo and the
empty-board frame around each found base (the verifier's patch, knockcam.detect.verify) and a small
convolutional network (onnxruntime) says where in the patch the true base is, and how far off that
may still be (the error it expects on each axis, which becomes the token's ``sigma_mm`` through the
factor its trainer measured, so a close call is still flagged where the network is unsure). Two
such networks are shipped (models/refine.onnx, models/refine_2.onnx: one recipe, different renders)
and asked together (``RefinerEnsemble``): the mean of their answers places bases better than either.

The network's sigma is kept at least a share of the detectors' own (``refine.keep_detector_sigma``):
where they disagreed about a base by several mm, or the model scored it weakly, the refined base is
better but still less sure than the network alone can tell from its patch.

A base the network would move further than ``refine.max_move_mm`` is left where it was: the network
learnt on bases found within a few mm of a standing token; such a move is a token it does not know
(lying down, mostly hidden, or none at all). ``knockcam train --refine`` trains the networks on
synthetic renders (knockcam.detect.refine_train); settings in data/detect.yaml ``refine``.

A photo alone (no empty-board frame) has its own refiner (models/refine_alone.onnx, ``load_alone``):
the same network on the photo's patch only, trained at the learned model's tokens
(``knockcam train --refine-alone``); settings in data/detect.yaml ``refine_alone``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.detect.patch import (PatchClassifier, PhotoPair, configured_path, directions, load_once,
                                   load_photo_alone)
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError

MIN_SCALE = 0.02  # the network's expected error, in its offset unit, is taken as at least this
ALONE_FILE = "refine_alone.onnx"  # the refiner of a photo alone, in models/


def default_paths() -> list[Path]:
    """data/detect.yaml refine.paths, else the shipped networks: refine.train.members' files in models/."""
    from knockcam.detect.model import shipped

    cfg = settings.load("detect")["refine"]
    if cfg.get("paths"):
        return [Path(p) for p in cfg["paths"]]
    return [shipped(str(m["file"])) for m in cfg["train"]["members"]]


class Placing:
    """What places a base from a patch: ``offsets`` (its network's answer) and ``sigma_per_scale`` (the factor
    from the error it expects to a token's sigma), the geometry of its patch."""

    geometry: dict
    sigma_per_scale: float

    def offsets(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def placed(self, x: np.ndarray, xy_mm: np.ndarray, calibration) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For bases found at ``xy_mm`` (N, 2) and their rows ``x`` of ``PhotoPair.network_input``: where the
        network puts them (N, 2 board mm), how far that moves each (mm) and the error it expects (N, 2)."""
        from knockcam.detect.reference import viewpoint

        move, expected = self.offsets(x)
        away, across = directions(xy_mm, viewpoint(calibration).nadir_mm)
        return xy_mm + move[:, :1] * away + move[:, 1:] * across, np.hypot(move[:, 0], move[:, 1]), expected

    def sigma_mm(self, expected: np.ndarray) -> np.ndarray:
        """A token's 1-sigma position error from the error the network expects on each axis (N, 2), by
        assign's convention: ambiguity.p90_sigmas times it is the 90th percentile of the base error, as its
        trainer measured on held-out renders."""
        return self.sigma_per_scale * np.hypot(expected[:, 0], expected[:, 1])


class BaseRefiner(Placing, PatchClassifier):
    """models/refine.onnx: per found base, where the true base lies from it in the patch (mm ahead,
    away from the camera, and mm to the right) and how far off that may still be."""

    what = "the base refiner"
    remedy = " (retrain it with 'knockcam train --refine')"

    def __init__(self, path: str | Path):
        super().__init__(path)
        meta = self.session.get_modelmeta().custom_metadata_map.get("refine")
        if meta is None:
            raise KnockcamError(f"cannot load {self.what} {self.path}: it does not say its offset scale "
                                f"and sigma factor{self.remedy}")
        meta = json.loads(meta)
        self.scale_mm = float(meta["scale_mm"])
        self.sigma_per_scale = float(meta["sigma_per_scale"])

    def offsets(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For rows of ``PhotoPair.network_input``: (N, 2) offsets of the true base (mm ahead, mm right) and (N, 2)
        the size of the error they leave on each axis (mm), as the network expects it."""
        if not len(x):
            return np.zeros((0, 2)), np.zeros((0, 2))
        out = self.logits(x).reshape(len(x), 4).astype(np.float64)
        return out[:, :2] * self.scale_mm, np.maximum(out[:, 2:], MIN_SCALE) * self.scale_mm


class RefinerEnsemble(Placing):
    """Several base refiners trained alike on different renders, asked together: the mean of their offsets
    and of the errors they expect. Each one's error is partly its own, so the mean places bases better
    than either (models/MODEL_CARD.md); its sigma factor is the mean of theirs, which the mean's smaller
    error makes a little cautious."""

    def __init__(self, members: list[BaseRefiner]):
        if len({json.dumps(m.geometry, sort_keys=True) for m in members}) != 1:
            raise KnockcamError("the base refiners " + ", ".join(str(m.path) for m in members)
                                + " were trained on different patches: retrain them with 'knockcam train --refine'")
        self.members = list(members)
        self.geometry = self.members[0].geometry
        self.sigma_per_scale = float(np.mean([m.sigma_per_scale for m in self.members]))

    def offsets(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        answers = [m.offsets(x) for m in self.members]
        return np.mean([a[0] for a in answers], axis=0), np.mean([a[1] for a in answers], axis=0)


def load(paths: str | Path | list[str | Path] | None = None) -> Placing | None:
    """The refiner at ``paths`` (a file, or several asked together; default ``default_paths``): those of them
    that exist (None when none has been trained), each network kept for the next call."""
    paths = default_paths() if paths is None else [paths] if isinstance(paths, (str, Path)) else paths
    found = [net for net in (load_once(BaseRefiner, Path(p)) for p in paths) if net is not None]
    if len(found) <= 1:
        return found[0] if found else None
    return RefinerEnsemble(found)


def alone_path() -> Path:
    """data/detect.yaml refine_alone.path, else the shipped models/refine_alone.onnx."""
    return configured_path("refine_alone", ALONE_FILE)


def load_alone(path: str | Path | None = None) -> BaseRefiner | None:
    """The refiner of a photo alone (``alone_path`` unless given; None when it has not been trained), kept
    for the next call."""
    return load_photo_alone(BaseRefiner, Path(path) if path is not None else alone_path(), "--refine-alone")


def refine_bases(tokens: list[Token], pair: PhotoPair, refiner: Placing | None, section: str = "refine") -> list[Token]:
    """``tokens`` with each base moved to where the network places it and its ``sigma_mm`` the network's,
    but at least ``keep_detector_sigma`` of the detectors' (data/detect.yaml SECTION: ``refine``, or
    ``refine_alone`` for the refiner of a photo alone); those it would move too far are left as they were."""
    if refiner is None or not tokens:
        return list(tokens)
    cfg = settings.load("detect")[section]
    limit, keep = float(cfg["max_move_mm"]), float(cfg["keep_detector_sigma"])
    xy = np.array([t.xy_mm for t in tokens], np.float64)
    moved, distance, expected = refiner.placed(pair.network_input(xy, refiner.geometry), xy, pair.calibration)
    sigma = refiner.sigma_mm(expected)
    px = pair.calibration.mm_to_px(moved)
    out = []
    for k, t in enumerate(tokens):
        if distance[k] > limit:
            out.append(t)
            continue
        out.append(replace(t, xy_mm=(float(moved[k, 0]), float(moved[k, 1])),
                           sigma_mm=round(max(float(sigma[k]), keep * t.sigma_mm), 3),
                           xy_px=(float(px[k, 0]), float(px[k, 1]))))
    return out
