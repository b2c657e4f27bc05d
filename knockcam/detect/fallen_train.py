"""Training the fallen-token networks (knockcam.detect.fallen): ``knockcam train --fallen`` and
``knockcam train --fallen-base``.

Both render synthetic scenes with many tokens lying down (training seeds only) and train a small
network with torch (knockcam.detect.patch_train; the [train] extra: the runtime never imports it),
export it to ONNX with its patch geometry and measure it on scenes from other seeds.

- The classifier (``train``) learns on the shipped token model's detections that belong to a true
  token, labelled lying or standing by the render's truth. Recipe: data/detect.yaml ``fallen.train``.
- The classifier for photo pairs (``train(empty_frame=True)``) learns on the photo's and the empty frame's patches
  at both detectors' candidates (knockcam.detect.patch_train.candidates_in_render) near a true token,
  labelled by that token. Recipe: data/detect.yaml ``fallen_pair.train``.
- The placer (``train_placer``) learns on both detectors' candidates (with the empty frame, as
  knockcam.detect.patch_train.candidates_in_render finds them) near a lying token's body where that
  token's base lies, and near a standing token's base where that base is (a standing token marked
  fallen must stay put), as many of those as lying ones. Recipe: data/detect.yaml ``fallen_base.train``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.detect.patch_train import (candidates_in_render, describe, export, fit, gather, need_torch,
                                         network_batches, plan)


def scene_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """One render's (patches, lean, lying 0/1, model score) for the model's detections of true tokens
    (knockcam.detect.patch.around)."""
    import cv2

    from knockcam.assign import assign
    from knockcam.bench import match, true_tokens
    from knockcam.detect.patch import around
    from knockcam.synth.scene import make_photo

    jpeg, truth, rendered = make_photo(board, seed, 0, cfg)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    calibration = rendered.spec.calibration(board)
    found = model.detect(image, calibration, board)
    empty = (np.zeros((0, geometry["size_px"], geometry["size_px"], 3), np.uint8), np.zeros(0), np.zeros(0), np.zeros(0))
    if not found:
        return empty
    truths = true_tokens(truth, board)
    owner = {j: i for i, j in match(assign(found, board), truths).items()}
    keep = [j for j in range(len(found)) if j in owner]
    if not keep:
        return empty
    cut, lean = around(image, calibration, board, [found[j].xy_mm for j in keep], geometry)
    return (cut, lean, np.array([float(truths[owner[j]].fallen) for j in keep]),
            np.array([found[j].confidence for j in keep]))


def measure(path: Path, cut: np.ndarray, lean: np.ndarray, y: np.ndarray, threshold: float) -> dict:
    """The exported classifier (onnxruntime, as at run time) on held-out examples: share of lying tokens
    caught, share of standing ones marked, at ``threshold``; and the threshold for 1% / 2% marked."""
    from knockcam.detect.fallen import FallenClassifier

    net = FallenClassifier(path)
    p = np.concatenate([net.probability(x) for x in network_batches(cut, lean)]) if len(cut) else np.zeros(0)
    lying, standing = p[y > 0.5], p[y < 0.5]
    out = {"lying": int(len(lying)), "standing": int(len(standing)), "threshold": threshold,
           "lying_caught": float(np.mean(lying >= threshold)) if len(lying) else None,
           "standing_marked": float(np.mean(standing >= threshold)) if len(standing) else None}
    for share in (0.01, 0.02):
        if len(standing):
            t = float(np.quantile(standing, 1 - share))
            out[f"threshold_{int(share * 100)}pct"] = round(t, 4)
            out[f"lying_caught_{int(share * 100)}pct"] = float(np.mean(lying >= t)) if len(lying) else None
    return out


def _examples(section: str, examples, board: Board, scenes: int | None, val_scenes: int | None, epochs: int | None,
              workers: int, log: Callable[[str], None], doing: str) -> tuple:
    """detect.yaml SECTION's recipe, patch geometry, training and held-out seeds (patch_train.plan), and
    ``examples`` of the renders of each, made with the recipe's ``fallen_p`` (many more lying tokens
    than in play). KnockcamError without the [train] extra."""
    need_torch()
    from knockcam.synth.scene import config, merge

    recipe, geometry, seeds, val_seeds = plan(section, scenes, val_scenes, epochs)
    synth_cfg = merge(config(), {"tokens": {"fallen_p": float(recipe["fallen_p"])}})
    log(f"rendering {len(seeds)} training scenes (seeds {seeds[0]}..{seeds[-1]}){doing}")
    train_part = gather(examples, board, seeds, synth_cfg, geometry, workers)
    log(f"rendering {len(val_seeds)} held-out scenes (seeds {val_seeds[0]}..{val_seeds[-1]})")
    return recipe, geometry, seeds, val_seeds, train_part, gather(examples, board, val_seeds, synth_cfg, geometry, workers)


def train(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
          epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print,
          empty_frame: bool = False) -> dict:
    """Render, train, export OUT/fallen.onnx (with ``empty_frame``, the classifier for photo pairs:
    OUT/fallen_pair.onnx) and measure it on held-out renders; returns the measurement."""
    section = "fallen_pair" if empty_frame else "fallen"
    recipe, geometry, seeds, val_seeds, train_part, val_part = _examples(
        section, pair_examples if empty_frame else scene_examples, board, scenes, val_scenes, epochs, workers, log,
        " and running both detectors" if empty_frame else "")
    (cut, lean, y), (cut_v, lean_v, yv) = train_part[:3], val_part[:3]
    log(f"{len(y)} training examples ({int(y.sum())} lying), {len(yv)} held out ({int(yv.sum())} lying)")
    net = fit(cut, lean, y, recipe, log=log)
    path = export(net, geometry, Path(out) / f"{section}.onnx", channels=7 if empty_frame else 4)
    result = measure(path, cut_v, lean_v, yv, float(settings.load("detect")[section]["threshold"]))
    result.update(model=str(path), scenes=len(seeds), val_scenes=len(val_seeds), epochs=int(recipe["epochs"]))
    return result


def pair_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """One render's (photo and empty-frame patches side by side, lean, lying 0/1) for both detectors'
    candidates within ``fallen_pair.train.near_mm`` of a true token's base or, for one lying down, of its
    body, labelled by that token."""
    from knockcam.detect.patch import around
    from knockcam.detect.verify_train import nearest_true

    near = float(settings.load("detect")["fallen_pair"]["train"]["near_mm"])
    image, reference, calibration, candidates, truth = candidates_in_render(board, seed, cfg, model)
    size = int(geometry["size_px"])
    none = (np.zeros((0, size, size, 6), np.uint8), np.zeros(0), np.zeros(0))
    if not candidates or not truth:
        return none
    xy = np.array([t.xy_mm for t in candidates], np.float64)
    owner, distance = nearest_true(xy, truth, owners=True)
    keep = distance <= near
    if not keep.any():
        return none
    cut, lean = around([image, reference], calibration, board, xy[keep], geometry)
    return cut, lean, np.array([float(truth[i].fallen) for i in owner[keep]])


def placement_examples(board: Board, seed: int, cfg: dict, geometry: dict, model,
                       empty_frame: bool = False) -> tuple[np.ndarray, ...]:
    """One render's (photo patches, lean, (N, 2) offsets of the true base in mm ahead and right of each
    candidate, 1 for a lying token's candidate) for the candidates within ``lying_near_mm`` of a lying
    token's body or ``near_mm`` of a standing token's base, of tokens at least ``min_visible`` in view.
    With ``empty_frame``, the photo's and the empty frame's patches side by side."""
    from knockcam.detect.patch import around, directions
    from knockcam.detect.reference import viewpoint
    from knockcam.detect.verify_train import nearest_true

    recipe = settings.load("detect")["fallen_base"]["train"]
    image, reference, calibration, candidates, truth = candidates_in_render(board, seed, cfg, model)
    truth = [t for t in truth if t.visible >= float(recipe["min_visible"])]
    size = int(geometry["size_px"])
    none = (np.zeros((0, size, size, 6 if empty_frame else 3), np.uint8), np.zeros(0), np.zeros((0, 2), np.float32),
            np.zeros(0))
    if not candidates or not truth:
        return none
    xy = np.array([t.xy_mm for t in candidates], np.float64)
    owner, distance = nearest_true(xy, truth, owners=True)
    lying = np.array([truth[i].fallen for i in owner])
    keep = distance <= np.where(lying, float(recipe["lying_near_mm"]), float(recipe["near_mm"]))
    if not keep.any():
        return none
    xy, owner, lying = xy[keep], owner[keep], lying[keep]
    to_base = np.array([truth[i].xy_mm for i in owner], np.float64) - xy
    away, across = directions(xy, viewpoint(calibration).nadir_mm)
    offsets = np.stack([np.sum(to_base * away, axis=1), np.sum(to_base * across, axis=1)], axis=1)
    cut, lean = around([image, reference] if empty_frame else image, calibration, board, xy, geometry)
    return cut, lean, offsets.astype(np.float32), lying.astype(np.float64)


def pair_placement_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """``placement_examples`` with the empty frame's patches too (the placer for photo pairs)."""
    return placement_examples(board, seed, cfg, geometry, model, empty_frame=True)


def balanced(lying: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Indices of every lying example and of ``share`` as many standing ones, drawn at random (``seed``)."""
    rng = np.random.default_rng(seed)
    lying = np.asarray(lying) > 0.5
    standing = np.where(~lying)[0]
    standing = rng.choice(standing, min(len(standing), int(share * lying.sum())), replace=False)
    return np.sort(np.concatenate([np.where(lying)[0], standing]))


def measure_placer(path: Path, cut: np.ndarray, lean: np.ndarray, offsets: np.ndarray, lying: np.ndarray) -> dict:
    """The exported placer (onnxruntime, as at run time) on held-out candidates: the base error (mm)
    before and after, for lying tokens' candidates and for standing ones'."""
    from knockcam.detect.fallen import FallenPlacer
    from knockcam.detect.refine_train import spread

    net = FallenPlacer(path)
    move = np.concatenate([net.offsets(x)[0] for x in network_batches(cut, lean)]) if len(cut) else np.zeros((0, 2))
    before, after = np.hypot(*offsets.T), np.hypot(*(offsets - move).T)
    out = {}
    for name, rows in (("lying", lying > 0.5), ("standing", lying < 0.5)):
        out[name] = {"candidates": int(rows.sum()), "error_mm_before": spread(before[rows]),
                     "error_mm_after": spread(after[rows])}
    return out


def train_placer(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
                 epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print,
                 empty_frame: bool = False) -> dict:
    """Render, train, export OUT/fallen_base.onnx (with ``empty_frame``, the placer for photo pairs:
    OUT/fallen_base_pair.onnx) and measure it on held-out renders; returns the measurement."""
    section = "fallen_base_pair" if empty_frame else "fallen_base"
    recipe, geometry, seeds, val_seeds, (cut, lean, offsets, lying), (cut_v, lean_v, offsets_v, lying_v) = _examples(
        section, pair_placement_examples if empty_frame else placement_examples, board, scenes, val_scenes, epochs,
        workers, log, " and running both detectors")
    rows = balanced(lying, float(recipe["standing_share"]), int(recipe["seed"]))
    log(f"{len(cut)} candidates, {int(lying.sum())} of a lying token; learning on {len(rows)}")
    scale = {"scale_mm": float(recipe["offset_scale_mm"]), "mm_per_px": float(geometry["mm_per_px"])}
    net = fit(cut[rows], lean[rows], offsets[rows], recipe, log=log, offsets=scale)
    path = export(net, geometry, Path(out) / f"{section}.onnx", channels=7 if empty_frame else 4)
    describe(path, "refine", {"scale_mm": scale["scale_mm"], "sigma_per_scale": 1.0})
    result = measure_placer(path, cut_v, lean_v, offsets_v, lying_v)
    result.update(model=str(path), scenes=len(seeds), val_scenes=len(val_seeds), epochs=int(recipe["epochs"]))
    return result
