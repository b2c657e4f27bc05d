"""Training the small patch networks (knockcam.detect.fallen, knockcam.detect.verify): rendering scenes
in worker processes, the network, the training loop and the ONNX export they share.

Torch is imported inside the functions that need it (the [train] extra; the runtime never imports it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from knockcam.board.layout import Board
from knockcam.errors import KnockcamError

# examples(board, seed, cfg, geometry, model) -> a tuple of arrays, one row per example
Examples = Callable[..., tuple]


def _gather_one(job):
    examples, board, seed, cfg, geometry = job
    from knockcam.detect import load_model

    return examples(board, seed, cfg, geometry, load_model())


def gather(examples: Examples, board: Board, seeds: range, cfg: dict, geometry: dict, workers: int = 2,
           progress: Callable[[int], None] | None = None) -> tuple:
    """``examples`` of the renders of ``seeds`` (index 0 each), in ``workers`` processes, concatenated.
    ``examples`` must be a module-level function (the workers import it)."""
    from multiprocessing import get_context

    from knockcam.detect import load_model

    if load_model() is None:
        raise KnockcamError("the patch networks learn on the token model's detections: train or "
                            "restore models/tokens.onnx first")
    jobs = [(examples, board, s, cfg, geometry) for s in seeds]
    parts = []
    with get_context("spawn").Pool(workers) as pool:
        for n, part in enumerate(pool.imap(_gather_one, jobs, chunksize=4)):
            parts.append(part)
            if progress:
                progress(n + 1)
    return tuple(np.concatenate(column) for column in zip(*parts))


def plan(section: str, scenes: int | None, val_scenes: int | None, epochs: int | None) -> tuple[dict, dict, range, range]:
    """detect.yaml SECTION.train's recipe (``epochs`` overriding it), SECTION.patch's geometry, and the
    training and held-out seeds (``scenes`` / ``val_scenes`` of them, the recipe's when None);
    KnockcamError unless both are training seeds (>= 100000) and the two ranges apart."""
    from knockcam import settings

    cfg = settings.load("detect")[section]
    recipe = dict(cfg["train"])
    if epochs is not None:
        recipe["epochs"] = epochs
    scenes = int(recipe["scenes"] if scenes is None else scenes)
    val_scenes = int(recipe["val_scenes"] if val_scenes is None else val_scenes)
    geometry = {k: cfg["patch"][k] for k in ("size_px", "mm_per_px", "behind_mm")}
    first, val_first = int(recipe["scene_seed"]), int(recipe["val_scene_seed"])
    if first < 100_000 or val_first < 100_000 or abs(val_first - first) < max(scenes, val_scenes):
        raise KnockcamError(f"{section}.train seeds must be training seeds (>= 100000) and the two ranges apart")
    return recipe, geometry, range(first, first + scenes), range(val_first, val_first + val_scenes)


def network(size_px: int, channels: int = 4, outputs: int = 1):
    """Four 3x3 conv blocks (``channels`` -> 16 -> 32 -> 48 -> 64, each halving the patch), then two
    dense layers to ``outputs`` logits."""
    import torch.nn as nn

    def block(i, o):
        return [nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2)]

    side = size_px // 16
    return nn.Sequential(*block(channels, 16), *block(16, 32), *block(32, 48), *block(48, 64), nn.Flatten(),
                         nn.Linear(64 * side * side, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, outputs))


def fit(patches: np.ndarray, lean: np.ndarray, y: np.ndarray, recipe: dict, outputs: int = 1,
        log: Callable[[str], None] = print):
    """Train ``network`` on (N, S, S, C) uint8 patches and their figures' lean (N,) (knockcam.detect.patch:
    the network sees ``network_input`` of them, built a batch at a time).

    ``outputs`` 1: 0/1 labels, binary cross-entropy with the positives weighted up to balance the
    classes; more: class indices, cross-entropy. AdamW with a one-cycle learning rate; augmented with
    mirror images (across the camera's direction), light changes (every colour channel alike, and the
    second frame's a little apart when there are two: the light changes between the shots) and a few
    px of shift (the detectors' placement error)."""
    import torch
    import torch.nn as nn

    from knockcam.detect.patch import network_input

    torch.manual_seed(int(recipe["seed"]))
    gen = np.random.default_rng(int(recipe["seed"]))
    colour = patches.shape[-1]
    net = network(patches.shape[1], colour + 1, outputs)
    batch, epochs = int(recipe["batch"]), int(recipe["epochs"])
    opt = torch.optim.AdamW(net.parameters(), float(recipe["lr"]), weight_decay=float(recipe["weight_decay"]))
    steps = epochs * ((len(patches) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, float(recipe["lr"]), total_steps=steps)
    if outputs == 1:
        yt = torch.from_numpy(np.asarray(y, np.float32))
        positive = float(yt.sum())
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(yt) - positive) / max(positive, 1.0)))
    else:
        yt = torch.from_numpy(np.asarray(y, np.int64))
        loss_fn = nn.CrossEntropyLoss()
    shift = int(recipe["shift_px"])
    t0 = time.time()
    for epoch in range(epochs):
        order = gen.permutation(len(patches))
        total = 0.0
        for i in range(0, len(patches), batch):
            idx = order[i:i + batch]
            xb = torch.from_numpy(network_input(patches[idx], lean[idx]))
            flip = torch.from_numpy(gen.random(len(xb)) < 0.5)
            xb[flip] = xb[flip].flip(3)
            gain = torch.from_numpy(gen.uniform(0.75, 1.25, (len(xb), 1, 1, 1)).astype(np.float32))
            offset = torch.from_numpy(gen.uniform(-0.05, 0.05, (len(xb), 1, 1, 1)).astype(np.float32))
            xb[:, :colour] = (xb[:, :colour] * gain + offset).clamp(0, 1)
            if colour > 3:
                apart = torch.from_numpy(gen.uniform(0.9, 1.1, (len(xb), 1, 1, 1)).astype(np.float32))
                xb[:, 3:colour] = (xb[:, 3:colour] * apart).clamp(0, 1)
            dy, dx = (int(v) for v in gen.integers(-shift, shift + 1, 2))
            xb = torch.roll(xb, shifts=(dy, dx), dims=(2, 3))
            out = net(xb)
            loss = loss_fn(out.view(-1) if outputs == 1 else out, yt[torch.from_numpy(idx)])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        log(f"epoch {epoch + 1}/{epochs}: loss {total / len(patches):.4f} ({time.time() - t0:.0f} s)")
    return net.eval()


def export(net, geometry: dict, path: Path, channels: int = 4) -> Path:
    """Write the network to ONNX (fixed patch size, any batch) with its patch geometry in the metadata."""
    import onnx
    import torch

    size = int(geometry["size_px"])
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, channels, size, size), str(path), input_names=["patch"],
                      output_names=["logit"], dynamic_axes={"patch": {0: "n"}, "logit": {0: "n"}},
                      opset_version=17, dynamo=False)
    proto = onnx.load(str(path))
    entry = proto.metadata_props.add()
    entry.key, entry.value = "patch", json.dumps(geometry)
    onnx.save(proto, str(path))
    return path


def need_torch() -> None:
    """KnockcamError unless the [train] extra is installed."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise KnockcamError("training needs the optional extra: pip install 'knockcam[train]'")
