"""Training the fallen-token classifier (knockcam.detect.fallen): ``knockcam train --fallen``.

Renders synthetic scenes with many tokens lying down (training seeds only), runs the shipped token
model on them, cuts the classifier's patch around every detection that belongs to a true token
(labelled lying or standing by the render's truth), trains a small network with torch (knockcam.detect.patch_train;
the [train] extra: the runtime never imports it), exports it to ONNX with its patch geometry, and measures it
on scenes from other seeds. Recipe: data/detect.yaml ``fallen.train``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.detect.patch_train import export, fit, gather, need_torch, plan


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
    from knockcam.detect.patch import network_input

    p = FallenClassifier(path).probability(network_input(cut, lean))
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


def train(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
          epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print) -> dict:
    """Render, train, export OUT/fallen.onnx and measure it on held-out renders; returns the measurement."""
    need_torch()
    from knockcam.synth.fixtures import merge
    from knockcam.synth.scene import config

    recipe, geometry, seeds, val_seeds = plan("fallen", scenes, val_scenes, epochs)
    synth_cfg = merge(config(), {"tokens": {"fallen_p": float(recipe["fallen_p"])}})
    log(f"rendering {len(seeds)} training scenes (seeds {seeds[0]}..{seeds[-1]})")
    cut, lean, y, _ = gather(scene_examples, board, seeds, synth_cfg, geometry, workers)
    log(f"rendering {len(val_seeds)} held-out scenes (seeds {val_seeds[0]}..{val_seeds[-1]})")
    cut_v, lean_v, yv, _ = gather(scene_examples, board, val_seeds, synth_cfg, geometry, workers)
    log(f"{len(y)} training examples ({int(y.sum())} lying), {len(yv)} held out ({int(yv.sum())} lying)")
    net = fit(cut, lean, y, recipe, log=log)
    path = export(net, geometry, Path(out) / "fallen.onnx")
    result = measure(path, cut_v, lean_v, yv, float(settings.load("detect")["fallen"]["threshold"]))
    result.update(model=str(path), scenes=len(seeds), val_scenes=len(val_seeds), epochs=int(recipe["epochs"]))
    return result
