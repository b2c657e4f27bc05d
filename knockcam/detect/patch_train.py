"""Training the small patch networks (knockcam.detect.fallen, knockcam.detect.verify,
knockcam.detect.refine): rendering scenes in worker processes, the network, the training loop and the
ONNX export they share.

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
    from knockcam.detect import load_model
    from knockcam.workers import process_pool

    if load_model() is None:
        raise KnockcamError("the patch networks learn on the token model's detections: train or "
                            "restore models/tokens.onnx first")
    jobs = [(examples, board, s, cfg, geometry) for s in seeds]
    parts = []
    with process_pool("spawn", workers) as pool:
        for n, part in enumerate(pool.imap(_gather_one, jobs, chunksize=4)):
            parts.append(part)
            if progress:
                progress(n + 1)
    return tuple(np.concatenate(column) for column in zip(*parts))


def network_batches(cut: np.ndarray, lean: np.ndarray, size: int = 512):
    """``network_input`` of held-out patches and their lean, ``size`` rows at a time (a held-out set's
    network input at once would take gigabytes)."""
    from knockcam.detect.patch import network_input

    for i in range(0, len(cut), size):
        yield network_input(cut[i:i + size], lean[i:i + size])


def candidates_in_render(board: Board, seed: int, cfg: dict, model):
    """Render ``seed`` (index 0) with its empty-board frame and run both detectors on it: (photo, empty
    frame, true calibration, every candidate -- the model's down to ``model.support_conf`` and the
    reference frame's tokens --, the true tokens (knockcam.bench.TrueToken))."""
    import cv2

    from knockcam.bench import true_tokens
    from knockcam.detect.reference import look
    from knockcam.synth.scene import make_photo

    jpeg, truth, rendered, ref_jpeg = make_photo(board, seed, 0, cfg, reference=True)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    reference = cv2.imdecode(np.frombuffer(ref_jpeg, np.uint8), cv2.IMREAD_COLOR)
    calibration = rendered.spec.calibration(board)
    found = model.detect(image, calibration, board, conf=min(model.support_conf, model.conf))
    found += list(look(image, reference, calibration, board).tokens)
    return image, reference, calibration, found, true_tokens(truth, board)


def candidates_in_photo(board: Board, seed: int, cfg: dict, model):
    """Render ``seed`` (index 0) as a photo alone (no empty-board frame) and run the learned model on it:
    (photo, true calibration, the model's candidates down to ``model.support_conf``, the true tokens)."""
    import cv2

    from knockcam.bench import true_tokens
    from knockcam.synth.scene import make_photo

    jpeg, truth, rendered = make_photo(board, seed, 0, cfg)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    calibration = rendered.spec.calibration(board)
    found = model.detect(image, calibration, board, conf=min(model.support_conf, model.conf))
    return image, calibration, found, true_tokens(truth, board)


def plan(section: str, scenes: int | None, val_scenes: int | None, epochs: int | None,
         member: dict | None = None) -> tuple[dict, dict, range, range]:
    """detect.yaml SECTION.train's recipe (``epochs`` overriding it, and ``member``'s entries: one of the
    recipe's ``members``), SECTION.patch's geometry (empty when it has none), and the training and held-out seeds (``scenes`` /
    ``val_scenes`` of them, the recipe's when None); KnockcamError unless both are training seeds
    (>= 100000) and the two ranges apart."""
    from knockcam import settings

    cfg = settings.load("detect")[section]
    recipe = {**cfg["train"], **(member or {})}
    if epochs is not None:
        recipe["epochs"] = epochs
    scenes = int(recipe["scenes"] if scenes is None else scenes)
    val_scenes = int(recipe["val_scenes"] if val_scenes is None else val_scenes)
    geometry = {k: cfg["patch"][k] for k in ("size_px", "mm_per_px", "behind_mm")} if "patch" in cfg else {}
    if "scene_seed" not in recipe:
        raise KnockcamError(f"{section}.train trains several networks (members): say which")
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
        log: Callable[[str], None] = print, offsets: dict | None = None):
    """Train ``network`` on (N, S, S, C) uint8 patches and their figures' lean (N,) (knockcam.detect.patch:
    the network sees ``network_input`` of them, built a batch at a time).

    ``outputs`` 1: 0/1 labels, binary cross-entropy with the positives weighted up to balance the
    classes; more: class indices, cross-entropy. With ``offsets`` ({"scale_mm", "mm_per_px"}), ``y``
    is (N, 2) where the true base lies from each patch's centre (mm ahead, mm to the right) and the
    network has 4 outputs: that offset / scale_mm and the size of the error it leaves on each axis
    (smooth L1 both; the second does not move the offset).
    AdamW with a one-cycle learning rate; augmented with mirror images (across the camera's
    direction), light changes (every colour channel alike, and the second frame's a little apart when
    there are two: the light changes between the shots) and a few px of shift (the detectors'
    placement error; offsets move with the patch, ``shifted_offsets``)."""
    import torch
    import torch.nn as nn

    from knockcam.detect.patch import network_input

    torch.manual_seed(int(recipe["seed"]))
    gen = np.random.default_rng(int(recipe["seed"]))
    colour = patches.shape[-1]
    if offsets is not None:
        outputs = 4
    net = network(patches.shape[1], colour + 1, outputs)
    if offsets is not None:
        yt = torch.from_numpy(np.asarray(y, np.float32))
        loss_fn = _offset_loss(float(offsets["scale_mm"]))
    elif outputs == 1:
        yt = torch.from_numpy(np.asarray(y, np.float32))
        positive = float(yt.sum())
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor((len(yt) - positive) / max(positive, 1.0)))
    else:
        yt = torch.from_numpy(np.asarray(y, np.int64))
        loss_fn = nn.CrossEntropyLoss()
    shift = int(recipe["shift_px"])

    def batch_loss(idx):
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
        yb = yt[torch.from_numpy(idx)]
        if offsets is not None:
            yb = torch.from_numpy(shifted_offsets(yb.numpy(), flip.numpy(), dy, dx, float(offsets["mm_per_px"])))
        out = net(xb)
        return loss_fn(out.view(-1) if outputs == 1 else out, yb)

    return train_loop(net, recipe, len(patches), gen, batch_loss, log)


def train_loop(net, recipe: dict, examples: int, gen: np.random.Generator, batch_loss, log: Callable[[str], None]):
    """Train ``net`` for ``recipe``'s epochs over ``examples`` shuffled by ``gen``, in batches of ``recipe``'s
    batch, each batch's loss given by ``batch_loss(indices)``: AdamW (``recipe``'s lr and weight_decay) and a
    one-cycle learning rate, the way every network knockcam trains itself learns. Returns it in eval mode."""
    import torch

    batch, epochs = int(recipe["batch"]), int(recipe["epochs"])
    opt = torch.optim.AdamW(net.parameters(), float(recipe["lr"]), weight_decay=float(recipe["weight_decay"]))
    steps = epochs * ((examples + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, float(recipe["lr"]), total_steps=steps)
    t0 = time.time()
    for epoch in range(epochs):
        order = gen.permutation(examples)
        total = 0.0
        for i in range(0, examples, batch):
            idx = order[i:i + batch]
            loss = batch_loss(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(idx)
        log(f"epoch {epoch + 1}/{epochs}: loss {total / examples:.4f} ({time.time() - t0:.0f} s)")
    return net.eval()


def shifted_offsets(y: np.ndarray, flip: np.ndarray, dy: int, dx: int, mm_per_px: float) -> np.ndarray:
    """Where the true base lies from the patch centre (N, 2: mm ahead, mm right) once patches are
    mirrored left-right where ``flip`` and then rolled ``dy`` px down and ``dx`` px right (as in ``fit``):
    down is towards the camera, so the base comes ``dy`` px nearer; the mirror turns right into left."""
    out = np.array(y, np.float32, copy=True)
    out[flip, 1] *= -1
    out[:, 0] -= dy * mm_per_px
    out[:, 1] += dx * mm_per_px
    return out


def _offset_loss(scale_mm: float):
    """Smooth L1 on the offset (in units of ``scale_mm``) plus, for the other two outputs, smooth L1 to
    the size of the error the offset leaves on each axis (detached: it does not move the offset)."""
    import torch.nn.functional as F

    def loss(out, y_mm):
        y = y_mm / scale_mm
        mean = out[:, :2]
        return F.smooth_l1_loss(mean, y) + F.smooth_l1_loss(out[:, 2:4], (y - mean.detach()).abs())

    return loss


def export(net, geometry: dict, path: Path, channels: int = 4) -> Path:
    """Write the network to ONNX (fixed patch size, any batch) with its patch geometry in the metadata."""
    import torch

    size = int(geometry["size_px"])
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, channels, size, size), str(path), input_names=["patch"],
                      output_names=["logit"], dynamic_axes={"patch": {0: "n"}, "logit": {0: "n"}},
                      opset_version=17, dynamo=False)
    return describe(path, "patch", geometry)


def describe(path: Path, key: str, value: dict) -> Path:
    """Store ``value`` (JSON) under ``key`` in the ONNX file's metadata, replacing what was there."""
    import onnx

    proto = onnx.load(str(path))
    kept = [(p.key, p.value) for p in proto.metadata_props if p.key != key]
    del proto.metadata_props[:]
    for k, v in kept + [(key, json.dumps(value))]:
        entry = proto.metadata_props.add()
        entry.key, entry.value = k, v
    onnx.save(proto, str(path))
    return path


def need_torch() -> None:
    """KnockcamError unless the [train] extra is installed."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise KnockcamError("training needs the optional extra: pip install 'knockcam[train]'")
