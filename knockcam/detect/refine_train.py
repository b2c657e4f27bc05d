"""Training the base refiner (knockcam.detect.refine): ``knockcam train --refine``.

Renders synthetic scenes with their empty-board frames (training seeds only), runs both detectors on
them (knockcam.detect.patch_train.candidates_in_render) and cuts the verifier's patches around every
candidate within ``near_mm`` of a standing true token at least ``min_visible`` in view; each one's
target is where that token's true base lies from it, in the patch's frame. Trains with
knockcam.detect.patch_train (smooth L1 on the offset and on the error it expects to leave), exports
it, then measures it on renders of other seeds: the base error before and after, and the factor
from its expected error to a token's sigma (assign's convention: ambiguity.p90_sigmas sigma is the 90th
percentile of the error), which it stores in the network's metadata.
Recipe: data/detect.yaml ``refine.train``; each of its ``members`` (models/refine.onnx,
models/refine_2.onnx: asked together at run time) is that recipe on its own renders and initialisation.

``knockcam train --refine-alone`` (``train_alone``) trains the refiner of a photo alone
(models/refine_alone.onnx) the same way on photos rendered without their empty frames: the photo's
patch at the learned model's candidates (``photo_examples``). Recipe: data/detect.yaml ``refine_alone.train``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.detect.patch import around, directions
from knockcam.detect.refine import ALONE_FILE
from knockcam.detect.patch_train import (candidates_in_photo, candidates_in_render, describe, export, fit, gather,
                                         need_torch, network_batches, plan)
from knockcam.errors import KnockcamError


def scene_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """One render's (patches: photo and empty frame side by side, lean, (N, 2) offsets of the true base
    in mm ahead and right of each candidate) for the candidates near a standing, visible token."""
    image, reference, calibration, candidates, truth = candidates_in_render(board, seed, cfg, model)
    return _near_standing([image, reference], calibration, board, candidates, truth, geometry, "refine")


def photo_examples(board: Board, seed: int, cfg: dict, geometry: dict, model) -> tuple[np.ndarray, ...]:
    """As ``scene_examples`` for the refiner of a photo alone (no empty-board frame): the photo's patches
    at the model's candidates (down to ``model.support_conf``, so that each token is met a few mm apart)."""
    image, calibration, candidates, truth = candidates_in_photo(board, seed, cfg, model)
    return _near_standing([image], calibration, board, candidates, truth, geometry, "refine_alone")


def _near_standing(frames: list[np.ndarray], calibration, board: Board, candidates, truth, geometry: dict,
                   section: str) -> tuple[np.ndarray, ...]:
    """(patches of ``frames`` side by side, lean, offsets of the true base) for the ``candidates`` within
    SECTION.train.near_mm of a standing true token at least min_visible in view."""
    from knockcam.detect.reference import viewpoint

    recipe = settings.load("detect")[section]["train"]
    standing = [t for t in truth if not t.fallen and t.visible >= float(recipe["min_visible"])]
    size = int(geometry["size_px"])
    none = np.zeros((0, size, size, 3 * len(frames)), np.uint8), np.zeros(0), np.zeros((0, 2), np.float32)
    if not candidates or not standing:
        return none
    xy = np.array([t.xy_mm for t in candidates], np.float64)
    true_xy = np.array([t.xy_mm for t in standing], np.float64)
    gap = true_xy[None, :, :] - xy[:, None, :]
    dist = np.hypot(gap[..., 0], gap[..., 1])
    owner = dist.argmin(axis=1)
    keep = dist[np.arange(len(xy)), owner] <= float(recipe["near_mm"])
    if not keep.any():
        return none
    xy, to_base = xy[keep], gap[np.where(keep)[0], owner[keep]]
    away, across = directions(xy, viewpoint(calibration).nadir_mm)
    offsets = np.stack([np.sum(to_base * away, axis=1), np.sum(to_base * across, axis=1)], axis=1)
    cut, lean = around(frames, calibration, board, xy, geometry)
    return cut, lean, offsets.astype(np.float32)


def measure(path: Path, cut: np.ndarray, lean: np.ndarray, offsets: np.ndarray, section: str = "refine") -> dict:
    """The exported refiner (onnxruntime, as at run time) on held-out candidates: the base error (mm)
    before and after, and ``sigma_per_scale``, the factor that makes ambiguity.p90_sigmas times a token's
    sigma the 90th percentile of the error left."""
    from knockcam.detect.refine import BaseRefiner

    net = BaseRefiner(path)
    parts = [net.offsets(x) for x in network_batches(cut, lean)]
    move = np.concatenate([p[0] for p in parts])
    expected = np.hypot(*np.concatenate([p[1] for p in parts]).T)
    before = np.hypot(offsets[:, 0], offsets[:, 1])
    after = np.hypot(*(offsets - move).T)
    sigmas = float(settings.load("assign")["ambiguity"]["p90_sigmas"])
    per_scale = float(np.percentile(after / expected, 90) / sigmas)
    sigma = per_scale * expected
    limit = float(settings.load("detect")[section]["max_move_mm"])
    return {"candidates": int(len(offsets)),
            "error_mm_before": spread(before), "error_mm_after": spread(after),
            "sigma_per_scale": round(per_scale, 4),
            "sigma_mm": spread(sigma),
            "beyond_2sigma": round(float(np.mean(after > 2 * sigma)), 4),
            "moved_too_far": int(np.sum(np.hypot(*move.T) > limit))}


def spread(values: np.ndarray) -> dict:
    return {q: round(float(np.percentile(values, p)), 3) for q, p in (("median", 50), ("p90", 90), ("p99", 99))}


def members() -> list[dict]:
    """The shipped networks' recipes (detect.yaml refine.train.members): file, first render seed, initialisation."""
    return list(settings.load("detect")["refine"]["train"]["members"])


def train(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
          epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print, member: int = 1) -> dict:
    """Render, train the ``member``-th network of refine.train.members (from 1), export it to OUT/its file,
    measure it on held-out renders and store its sigma factor; returns the measurement."""
    recipes = members()
    if not 1 <= member <= len(recipes):
        raise KnockcamError(f"--member must be 1..{len(recipes)} (detect.yaml refine.train.members), not {member}")
    chosen = recipes[member - 1]
    result = _train("refine", scene_examples, str(chosen["file"]), {k: v for k, v in chosen.items() if k != "file"},
                    board, out, scenes, val_scenes, epochs, workers, log, "with empty-board frames")
    result.update(member=member)
    return result


def train_alone(board: Board, out: Path, scenes: int | None = None, val_scenes: int | None = None,
                epochs: int | None = None, workers: int = 2, log: Callable[[str], None] = print) -> dict:
    """Render, train the refiner of a photo alone (detect.yaml refine_alone.train), export it to
    OUT/refine_alone.onnx, measure it on held-out renders and store its sigma factor."""
    return _train("refine_alone", photo_examples, ALONE_FILE, None, board, out, scenes, val_scenes, epochs,
                  workers, log, "without empty-board frames")


def _train(section: str, examples, file: str, member: dict | None, board: Board, out: Path, scenes, val_scenes,
           epochs, workers: int, log: Callable[[str], None], frames: str) -> dict:
    """Render SECTION.train's scenes, learn from ``examples`` of them, export to OUT/``file`` and measure
    on the held-out renders (``member``: one of refine.train.members' entries over the recipe)."""
    need_torch()
    from knockcam.synth.scene import config

    recipe, geometry, seeds, val_seeds = plan(section, scenes, val_scenes, epochs, member)
    log(f"rendering {len(seeds)} training scenes (seeds {seeds[0]}..{seeds[-1]}, {frames}) and running the detectors")
    cut, lean, offsets = gather(examples, board, seeds, config(), geometry, workers)
    log(f"rendering {len(val_seeds)} held-out scenes (seeds {val_seeds[0]}..{val_seeds[-1]})")
    cut_v, lean_v, offsets_v = gather(examples, board, val_seeds, config(), geometry, workers)
    log(f"{len(cut)} training candidates near a standing token, base error median "
        f"{np.median(np.hypot(*offsets.T)):.2f} mm")
    scale = {"scale_mm": float(recipe["offset_scale_mm"]), "mm_per_px": float(geometry["mm_per_px"])}
    net = fit(cut, lean, offsets, recipe, log=log, offsets=scale)
    path = export(net, geometry, Path(out) / file, channels=cut.shape[-1] + 1)
    describe(path, "refine", {"scale_mm": scale["scale_mm"], "sigma_per_scale": 1.0})
    result = measure(path, cut_v, lean_v, offsets_v, section)
    describe(path, "refine", {"scale_mm": scale["scale_mm"], "sigma_per_scale": result["sigma_per_scale"]})
    result.update(model=str(path), scenes=len(seeds), val_scenes=len(val_seeds), epochs=int(recipe["epochs"]))
    return result
