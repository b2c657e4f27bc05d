"""Training the token verifier (knockcam.detect.verify): ``knockcam train --verify``.

Renders synthetic scenes with their empty-board frames (training seeds only), runs both detectors
on them, cuts the verifier's patches (photo and empty frame) around every candidate -- each model
candidate down to ``model.support_conf`` and each reference-frame token -- and labels it by the
render's truth: the side of the true token whose base (or, lying down, whose body) is within
``positive_mm``, else "none" when none is within ``negative_mm`` (between the two: left out, a
near miss is neither). Trains with knockcam.detect.patch_train, exports OUT/verify.onnx and measures
it on scenes from other seeds. Recipe: data/detect.yaml ``verify.train``.

``knockcam train --verify-alone`` (``train_alone``) trains the verifier of a photo alone
(models/verify_alone.onnx) the same way on photos rendered without their empty frames, at the learned
model's candidates (``photo_examples``). Recipe: data/detect.yaml ``verify_alone.train``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.detect.patch_train import (candidates_in_photo, candidates_in_render, export, fit, gather, need_torch,
                                         network_batches, plan)
from knockcam.detect.verify import ALONE_FILE, NONE
from knockcam.sides import SIDES

AMBIGUOUS = -1  # a candidate between positive_mm and negative_mm of a true token: not learned from


def scene_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """One render's (patches: photo and empty frame side by side, lean, label, candidate score, 1 when
    the model's candidate is under ``model.conf``): labels are side indices, NONE or AMBIGUOUS."""
    image, reference, calibration, candidates, truth = candidates_in_render(board, seed, cfg, model)
    return _labelled([image, reference], calibration, board, candidates, truth, geometry, model, "verify")


def photo_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """As ``scene_examples`` for the verifier of a photo alone (no empty-board frame): the photo's patches
    at the learned model's candidates (down to ``model.support_conf``)."""
    image, calibration, candidates, truth = candidates_in_photo(board, seed, cfg, model)
    return _labelled([image], calibration, board, candidates, truth, geometry, model, "verify_alone")


def _labelled(frames: list[np.ndarray], calibration, board: Board, candidates, truth, geometry: dict, model,
              section: str) -> tuple[np.ndarray, ...]:
    """(patches of ``frames`` side by side, lean, label, score, weak) of ``candidates``, labelled by the
    nearest true token (SECTION.train's positive_mm and negative_mm)."""
    from knockcam.detect.patch import around

    recipe = settings.load("detect")[section]["train"]
    size = int(geometry["size_px"])
    if not candidates:
        return (np.zeros((0, size, size, 3 * len(frames)), np.uint8), np.zeros(0), np.zeros(0, np.int64),
                np.zeros(0), np.zeros(0))
    xy = np.array([t.xy_mm for t in candidates], np.float64)
    side, dist = nearest_true(xy, truth)
    label = np.where(dist <= float(recipe["positive_mm"]), side,
                     np.where(dist > float(recipe["negative_mm"]), NONE, AMBIGUOUS))
    cut, lean = around(frames, calibration, board, xy, geometry)
    weak = np.array([t.source == "model" and t.confidence < model.conf for t in candidates], np.float64)
    return cut, lean, label.astype(np.int64), np.array([t.confidence for t in candidates]), weak


def nearest_true(xy: np.ndarray, truth, owners: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """For each point (N, 2): the side index of the nearest true token (with ``owners``, its index in
    ``truth``) and the distance (mm) to its base, or for one lying down to the nearest point of its
    body (knockcam.bench.match's rule)."""
    if not truth:
        return np.full(len(xy), NONE), np.full(len(xy), np.inf)
    a = np.array([t.xy_mm for t in truth], np.float64)
    ends = np.array([t.lies_to_mm if t.lies_to_mm is not None else t.xy_mm for t in truth], np.float64)
    axis = ends - a
    length2 = np.maximum(np.sum(axis * axis, axis=1), 1e-12)
    along = np.clip(np.einsum("tk,tfk->tf", axis, xy[None, :, :] - a[:, None, :]) / length2[:, None], 0.0, 1.0)
    nearest = a[:, None, :] + along[:, :, None] * axis[:, None, :]
    d = np.hypot(nearest[..., 0] - xy[None, :, 0], nearest[..., 1] - xy[None, :, 1])
    owner = d.argmin(axis=0)
    found = owner if owners else np.array([SIDES.index(truth[i].side) for i in owner])
    return found, d[owner, np.arange(len(xy))]


def measure(path: Path, cut: np.ndarray, lean: np.ndarray, label: np.ndarray, weak: np.ndarray,
            section: str = "verify") -> dict:
    """The exported verifier (onnxruntime, as at run time) on held-out candidates at detect.yaml SECTION's
    thresholds: weak candidates kept (real tokens / none), the others dropped, and the side it gives
    real tokens."""
    from knockcam.detect.verify import TokenVerifier

    cfg = settings.load("detect")[section]
    verifier = TokenVerifier(path)
    p = np.concatenate([verifier.probabilities(x) for x in network_batches(cut, lean)]) if len(cut) \
        else np.zeros((0, NONE + 1))
    present = 1.0 - p[:, NONE]
    real, none, is_weak = label < NONE, label == NONE, weak > 0.5
    keep, drop = present >= float(cfg["keep_weak_above"]), present < float(cfg["drop_below"])
    return {"candidates": int(len(label)), "real": int(real.sum()), "none": int(none.sum()),
            "weak_real": int((is_weak & real).sum()), "weak_real_kept": int((is_weak & real & keep).sum()),
            "weak_none": int((is_weak & none).sum()), "weak_none_kept": int((is_weak & none & keep).sum()),
            "strong_real_dropped": int((~is_weak & real & drop).sum()), "strong_real": int((~is_weak & real).sum()),
            "strong_none_dropped": int((~is_weak & none & drop).sum()), "strong_none": int((~is_weak & none).sum()),
            "side_right": float(np.mean(p[real, :NONE].argmax(axis=1) == label[real])) if real.any() else None}


def train(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
          epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print) -> dict:
    """Render, train, export OUT/verify.onnx and measure it on held-out renders; returns the measurement."""
    return _train("verify", scene_examples, "verify.onnx", board, out, scenes, val_scenes, epochs, workers, log,
                  "with empty-board frames")


def train_alone(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
                epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print) -> dict:
    """Render, train the verifier of a photo alone (detect.yaml verify_alone.train), export it to
    OUT/verify_alone.onnx and measure it on held-out renders."""
    return _train("verify_alone", photo_examples, ALONE_FILE, board, out, scenes, val_scenes, epochs, workers, log,
                  "without empty-board frames")


def _train(section: str, examples, file: str, board: Board, out: Path, scenes, val_scenes, epochs, workers: int,
           log: Callable[[str], None], frames: str) -> dict:
    """Render SECTION.train's scenes, learn from ``examples`` of them, export to OUT/``file`` and measure on
    the held-out renders."""
    need_torch()
    from knockcam.synth.scene import config

    recipe, geometry, seeds, val_seeds = plan(section, scenes, val_scenes, epochs)
    log(f"rendering {len(seeds)} training scenes (seeds {seeds[0]}..{seeds[-1]}, {frames}) and running the detectors")
    cut, lean, label, _, _ = gather(examples, board, seeds, config(), geometry, workers)
    log(f"rendering {len(val_seeds)} held-out scenes (seeds {val_seeds[0]}..{val_seeds[-1]})")
    cut_v, lean_v, label_v, _, weak_v = gather(examples, board, val_seeds, config(), geometry, workers)
    known = label != AMBIGUOUS
    log(f"{int(known.sum())} training candidates ({int((label == NONE).sum())} no token; "
        f"{int((~known).sum())} near misses left out)")
    net = fit(cut[known], lean[known], label[known], recipe, outputs=NONE + 1, log=log)
    path = export(net, geometry, Path(out) / file, channels=cut.shape[-1] + 1)
    known_v = label_v != AMBIGUOUS
    result = measure(path, cut_v[known_v], lean_v[known_v], label_v[known_v], weak_v[known_v], section)
    result.update(model=str(path), scenes=len(seeds), val_scenes=len(val_seeds), epochs=int(recipe["epochs"]))
    return result
