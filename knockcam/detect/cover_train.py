"""Training the cover network (knockcam.detect.cover): ``knockcam train --cover``.

Renders synthetic photos (training seeds only, with more hands and cups than the benchmark's photos),
sees each board from above as the network will, and labels every cell with the share of it a hand or a
cup hides from the camera (the render's own mask of their pixels, seen from above the same way). Trains a
small fully-convolutional network on them, exports OUT/cover.onnx and measures it on renders of other
seeds. Recipe: data/detect.yaml ``cover.train``. Torch is imported inside the functions that need it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.detect.cover import FILE, STRIDE, covered_areas, network_input, top_down
from knockcam.detect.patch_train import describe, gather, need_torch, plan, train_loop

SECTION = "cover"


def scene_example(board: Board, seed: int, cfg: dict, geometry: dict, model=None) -> tuple[np.ndarray, ...]:
    """One render's (top-down photo (1, H, W, 3) uint8, covered share of each network cell (1, H/4, W/4)
    float32). ``cfg``: synth settings; ``geometry``: {"mm_per_px"}; ``model`` is not used (the workers of
    patch_train.gather pass it)."""
    from knockcam.synth.scene import make_photo

    jpeg, _, rendered = make_photo(board, seed, 0, cfg)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    calibration = rendered.spec.calibration(board)
    mm = float(geometry["mm_per_px"])
    raster = top_down(image, calibration, board, mm)
    covered = top_down(rendered.covered.astype(np.float32), calibration, board, mm)
    rows, cols = covered.shape
    share = cv2.resize(covered, (cols // STRIDE, rows // STRIDE), interpolation=cv2.INTER_AREA)
    return raster[None], share[None].astype(np.float32)


def network():
    """Six 3x3 conv blocks (3 -> 16 -> 24 -> 24 -> 48 -> 48 -> 48; the second and fourth halve the raster,
    the last two dilated 2 and 4 to see a hand's size), then a 1x1 conv to one logit per cell."""
    import torch.nn as nn

    def block(i, o, stride=1, dilation=1):
        return [nn.Conv2d(i, o, 3, stride=stride, padding=dilation, dilation=dilation, bias=False),
                nn.BatchNorm2d(o), nn.ReLU()]

    return nn.Sequential(*block(3, 16), *block(16, 24, 2), *block(24, 24), *block(24, 48, 2),
                         *block(48, 48, dilation=2), *block(48, 48, dilation=4), nn.Conv2d(48, 1, 1))


def fit(rasters: np.ndarray, share: np.ndarray, recipe: dict, log: Callable[[str], None] = print):
    """Train ``network`` on top-down rasters (N, H, W, 3) and the covered share of each cell (N, H/4, W/4):
    binary cross-entropy on the share, covered cells weighted up to balance the classes. AdamW with a
    one-cycle learning rate; augmented with mirror images (left-right, and ends swapped) and light changes
    (every colour channel alike, plus a little per channel)."""
    import torch
    import torch.nn as nn

    torch.manual_seed(int(recipe["seed"]))
    gen = np.random.default_rng(int(recipe["seed"]))
    net = network()
    y_all = torch.from_numpy(share[:, None])
    positive = float((share >= 0.5).mean())
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(min(20.0, (1 - positive) / max(positive, 1e-6))))

    def batch_loss(idx):
        xb = torch.from_numpy(network_input(rasters[idx]))
        yb = y_all[torch.from_numpy(idx)].clone()
        if gen.random() < 0.5:
            xb, yb = xb.flip(3), yb.flip(3)
        if gen.random() < 0.5:
            xb, yb = xb.flip(2), yb.flip(2)
        gain = torch.from_numpy(gen.uniform(0.7, 1.3, (len(xb), 1, 1, 1)).astype(np.float32))
        tint = torch.from_numpy(gen.uniform(0.93, 1.07, (len(xb), 3, 1, 1)).astype(np.float32))
        return loss_fn(net((xb * gain * tint).clamp(0, 1)), yb)

    return train_loop(net, recipe, len(rasters), gen, batch_loss, log)


def export(net, mm_per_px: float, path: Path) -> Path:
    """Write the network to ONNX (any board raster size and batch) with its top-down scale in the metadata."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(net, torch.zeros(1, 3, 184, 80), str(path), input_names=["board"], output_names=["logit"],
                      dynamic_axes={"board": {0: "n", 2: "h", 3: "w"}, "logit": {0: "n", 2: "h", 3: "w"}},
                      opset_version=17, dynamo=False)
    return describe(path, "cover", {"mm_per_px": mm_per_px})


def measure(chance: np.ndarray, share: np.ndarray, board: Board, mm_per_px: float) -> dict:
    """Held-out figures at cover.covered_above: cells (covered: half or more of the cell hidden) caught and
    wrongly marked, and renders with a covered area reported, among those with a hand or a cup on the board
    (at least cover.min_area_mm2 of it hidden) and those with none."""
    cfg = settings.load("detect")["cover"]
    bar = float(cfg["covered_above"])
    truth = share >= 0.5
    marked = chance >= bar
    cell_mm2 = (STRIDE * mm_per_px) ** 2
    hidden_mm2 = share.reshape(len(share), -1).sum(axis=1) * cell_mm2
    with_cover = hidden_mm2 >= float(cfg["min_area_mm2"])
    reported = np.array([bool(covered_areas(c, board, mm_per_px)) for c in chance])
    return {"cells": int(truth.size), "covered_cells": int(truth.sum()),
            "covered_caught": float((marked & truth).sum() / max(1, truth.sum())),
            "clear_marked": float((marked & ~truth).sum() / max(1, (~truth).sum())),
            "renders_with_cover": int(with_cover.sum()),
            "reported_with_cover": int((reported & with_cover).sum()),
            "renders_without": int((~with_cover).sum()),
            "reported_without": int((reported & ~with_cover).sum())}


def train(board: Board, out: Path, scenes: int | None = None, epochs: int | None = None, workers: int = 2,
          log: Callable[[str], None] = print) -> dict:
    """Render, train, export OUT/cover.onnx and measure it on the held-out renders: the result dict."""
    need_torch()
    recipe, _, seeds, val_seeds = plan(SECTION, scenes, None, epochs)
    synth = settings.load("synth")
    cfg = {**synth, "occluders": {**synth["occluders"], **recipe["occluders"]}}
    geometry = {"mm_per_px": float(recipe["mm_per_px"])}
    t0 = time.time()
    rasters, share = gather(scene_example, board, seeds, cfg, geometry, workers,
                            progress=lambda n: n % 500 == 0 and log(f"rendered {n}/{len(seeds)}"))
    val_rasters, val_share = gather(scene_example, board, val_seeds, cfg, geometry, workers)
    log(f"{len(rasters)} training and {len(val_rasters)} held-out renders in {time.time() - t0:.0f} s; "
        f"{(share >= 0.5).mean():.2%} of cells covered")
    net = fit(rasters, share, recipe, log)
    path = export(net, geometry["mm_per_px"], Path(out) / FILE)
    import torch

    with torch.no_grad():
        logits = np.concatenate([net(torch.from_numpy(network_input(val_rasters[i:i + 64]))).numpy()
                                 for i in range(0, len(val_rasters), 64)])[:, 0]
    result = measure(1.0 / (1.0 + np.exp(-logits)), val_share, board, geometry["mm_per_px"])
    return {"model": str(path), "scenes": len(seeds), "val_scenes": len(val_seeds),
            "seconds": round(time.time() - t0, 1), **result}
