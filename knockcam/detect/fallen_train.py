"""Training the fallen-token classifier (knockcam.detect.fallen): ``knockcam train --fallen``.

Renders synthetic scenes with many tokens lying down (training seeds only), runs the shipped token
model on them, cuts the classifier's patch around every detection that belongs to a true token
(labelled lying or standing by the render's truth), trains a small network with torch (the [train]
extra; the runtime never imports it), exports it to ONNX with its patch geometry, and measures it
on scenes from other seeds. Recipe: data/detect.yaml ``fallen.train``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.errors import KnockcamError


def scene_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One render's (network input, lying 0/1, model score) for the model's detections of true tokens."""
    import cv2

    from knockcam.assign import assign
    from knockcam.bench import match, true_tokens
    from knockcam.detect.fallen import sample
    from knockcam.synth.scene import make_photo

    jpeg, truth, rendered = make_photo(board, seed, 0, cfg)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    calibration = rendered.spec.calibration(board)
    found = model.detect(image, calibration, board)
    empty = (np.zeros((0, 4, geometry["size_px"], geometry["size_px"]), np.float32), np.zeros(0), np.zeros(0))
    if not found:
        return empty
    truths = true_tokens(truth, board)
    owner = {j: i for i, j in match(assign(found, board), truths).items()}
    keep = [j for j in range(len(found)) if j in owner]
    if not keep:
        return empty
    x = sample(image, calibration, board, [found[j].xy_mm for j in keep], geometry)
    return (x, np.array([float(truths[owner[j]].fallen) for j in keep]),
            np.array([found[j].confidence for j in keep]))


def _gather_one(job):
    board, seed, cfg, geometry = job
    from knockcam.detect import load_model

    return scene_examples(board, seed, cfg, geometry, load_model())


def gather(board: Board, seeds: range, cfg: dict, geometry: dict, workers: int = 2,
           progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Examples from the renders of ``seeds`` (index 0 each), ``workers`` processes."""
    from multiprocessing import get_context

    from knockcam.detect import load_model

    if load_model() is None:
        raise KnockcamError("the fallen-token classifier learns on the token model's detections: train or "
                            "restore models/tokens.onnx first")
    jobs = [(board, s, cfg, geometry) for s in seeds]
    parts = []
    with get_context("spawn").Pool(workers) as pool:
        for n, part in enumerate(pool.imap(_gather_one, jobs, chunksize=4)):
            parts.append(part)
            if progress:
                progress(n + 1)
    xs, ys, scores = zip(*parts)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(scores)


def network(size_px: int):
    """Four 3x3 conv blocks (4 -> 16 -> 32 -> 48 -> 64 channels, each halving the patch), then two dense layers."""
    import torch.nn as nn

    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2)]

    side = size_px // 16
    return nn.Sequential(*block(4, 16), *block(16, 32), *block(32, 48), *block(48, 64), nn.Flatten(),
                         nn.Linear(64 * side * side, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))


def fit(x: np.ndarray, y: np.ndarray, recipe: dict, log: Callable[[str], None] = print):
    """Train the network on (N, 4, S, S) inputs and 0/1 labels: AdamW, one-cycle learning rate, lying
    tokens weighted up to balance the classes; mirror images (across the camera's direction), light
    changes and a few px of shift (the detectors' placement error) as augmentation."""
    import torch
    import torch.nn as nn

    torch.manual_seed(int(recipe["seed"]))
    gen = np.random.default_rng(int(recipe["seed"]))
    net = network(x.shape[-1])
    xt = torch.from_numpy(np.ascontiguousarray(x, np.float32))
    yt = torch.from_numpy(np.asarray(y, np.float32))
    batch, epochs = int(recipe["batch"]), int(recipe["epochs"])
    opt = torch.optim.AdamW(net.parameters(), float(recipe["lr"]), weight_decay=float(recipe["weight_decay"]))
    steps = epochs * ((len(xt) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, float(recipe["lr"]), total_steps=steps)
    lying = float(yt.sum())
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(yt) - lying) / max(lying, 1.0)))
    shift = int(recipe["shift_px"])
    t0 = time.time()
    for epoch in range(epochs):
        order = torch.from_numpy(gen.permutation(len(xt)))
        total = 0.0
        for i in range(0, len(xt), batch):
            idx = order[i:i + batch]
            xb = xt[idx].clone()
            flip = torch.from_numpy(gen.random(len(xb)) < 0.5)
            xb[flip] = xb[flip].flip(3)
            gain = torch.from_numpy(gen.uniform(0.75, 1.25, (len(xb), 1, 1, 1)).astype(np.float32))
            offset = torch.from_numpy(gen.uniform(-0.05, 0.05, (len(xb), 1, 1, 1)).astype(np.float32))
            xb[:, :3] = (xb[:, :3] * gain + offset).clamp(0, 1)
            dy, dx = (int(v) for v in gen.integers(-shift, shift + 1, 2))
            xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            loss = loss_fn(net(xb).view(-1), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        log(f"epoch {epoch + 1}/{epochs}: loss {total / len(xt):.4f} ({time.time() - t0:.0f} s)")
    return net.eval()


def export(net, geometry: dict, path: Path) -> Path:
    """Write the network to ONNX (fixed patch size, any batch) with its patch geometry in the metadata."""
    import onnx
    import torch

    size = int(geometry["size_px"])
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, 4, size, size), str(path), input_names=["patch"], output_names=["logit"],
                      dynamic_axes={"patch": {0: "n"}, "logit": {0: "n"}}, opset_version=17, dynamo=False)
    proto = onnx.load(str(path))
    entry = proto.metadata_props.add()
    entry.key, entry.value = "patch", json.dumps(geometry)
    onnx.save(proto, str(path))
    return path


def measure(path: Path, x: np.ndarray, y: np.ndarray, threshold: float) -> dict:
    """The exported classifier (onnxruntime, as at run time) on held-out examples: share of lying tokens
    caught, share of standing ones marked, at ``threshold``; and the threshold for 1% / 2% marked."""
    from knockcam.detect.fallen import FallenClassifier

    p = FallenClassifier(path).probability(x)
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
    try:
        import torch  # noqa: F401
    except ImportError:
        raise KnockcamError("training needs the optional extra: pip install 'knockcam[train]'") from None
    from knockcam.synth.fixtures import merge
    from knockcam.synth.scene import config

    cfg = settings.load("detect")["fallen"]
    recipe = dict(cfg["train"])
    if epochs is not None:
        recipe["epochs"] = epochs
    scenes = int(recipe["scenes"] if scenes is None else scenes)
    val_scenes = int(recipe["val_scenes"] if val_scenes is None else val_scenes)
    geometry = {k: cfg["patch"][k] for k in ("size_px", "mm_per_px", "behind_mm")}
    synth_cfg = merge(config(), {"tokens": {"fallen_p": float(recipe["fallen_p"])}})
    first, val_first = int(recipe["scene_seed"]), int(recipe["val_scene_seed"])
    if first < 100_000 or val_first < 100_000 or abs(val_first - first) < max(scenes, val_scenes):
        raise KnockcamError("fallen.train seeds must be training seeds (>= 100000) and the two ranges apart")
    log(f"rendering {scenes} training scenes (seeds {first}..{first + scenes - 1})")
    x, y, _ = gather(board, range(first, first + scenes), synth_cfg, geometry, workers)
    log(f"rendering {val_scenes} held-out scenes (seeds {val_first}..{val_first + val_scenes - 1})")
    xv, yv, _ = gather(board, range(val_first, val_first + val_scenes), synth_cfg, geometry, workers)
    log(f"{len(y)} training examples ({int(y.sum())} lying), {len(yv)} held out ({int(yv.sum())} lying)")
    net = fit(x, y, recipe, log)
    path = export(net, geometry, Path(out) / "fallen.onnx")
    result = measure(path, xv, yv, float(cfg["threshold"]))
    result.update(model=str(path), scenes=scenes, val_scenes=val_scenes, epochs=int(recipe["epochs"]))
    return result
