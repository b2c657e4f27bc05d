"""The detector's training set: scenes warped to the canonical view, one box per token base centre.

Each photo is warped with its TRUE calibration perturbed by a small random corner error, so the
detector learns to find bases in views as slightly misregistered as real calibrations make them.
Boxes are squares of ``label_box_mm`` centred on the base centre as it appears in the warped view
(keypoints as objects: the box centre is the base centre). Class = index in knockcam.sides.SIDES.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.canonical import warp_to_canonical
from knockcam.sides import SIDES
from knockcam.synth.output import write_bytes, write_json, write_text
from knockcam.synth.scene import Rendered, make_photo


def perturbed_calibration(truth: Calibration, board: Board, rng: np.random.Generator,
                          jitter_px: tuple[float, float]) -> tuple[Calibration, np.ndarray]:
    """The true calibration with each board corner moved by up to ``jitter_px[1]`` pixels."""
    w, l = board.size_mm
    corners_mm = np.array([[0, 0], [w, 0], [w, l], [0, l]], dtype=np.float64)
    und = cv2.perspectiveTransform(corners_mm.reshape(-1, 1, 2), truth.homography).reshape(-1, 2)
    mag = rng.uniform(jitter_px[0], jitter_px[1], 4)
    ang = rng.uniform(0, 2 * np.pi, 4)
    offsets = np.stack([mag * np.cos(ang), mag * np.sin(ang)], axis=1)
    h = cv2.getPerspectiveTransform(corners_mm.astype(np.float32), (und + offsets).astype(np.float32))
    return replace(truth, method="truth+jitter", homography=h.astype(np.float64)), offsets


def canonical_sample(jpeg: bytes, rendered: Rendered, board: Board, rng: np.random.Generator,
                     cfg: dict) -> tuple[np.ndarray, list[tuple[int, float, float]], dict]:
    """Canonical image, labels (class, u, v in canonical px) and what was done, for one photo."""
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    truth_cal = rendered.spec.camera.calibration()
    cal, offsets = perturbed_calibration(truth_cal, board, rng, tuple(cfg["corner_jitter_px"]))
    canon, view = warp_to_canonical(image, cal, board)
    cw, ch = view.size
    labels = []
    for tok in rendered.tokens:
        if tok.visible < cfg["min_visible"]:
            continue
        und = cv2.perspectiveTransform(np.array([[tok.xy_mm]], np.float64), truth_cal.homography)
        seen_mm = cv2.perspectiveTransform(und, np.linalg.inv(cal.homography)).reshape(2)
        u, v = view.to_px(seen_mm)[0]
        if 0 <= u < cw and 0 <= v < ch:
            labels.append((SIDES.index(tok.side), float(u), float(v)))
    return canon, labels, {"corner_jitter_px": offsets.round(3).tolist()}


def label_lines(labels, size: tuple[int, int], box_px: float) -> str:
    """Ultralytics detection labels: class cx cy w h, normalised to the image.

    ``u, v`` are raster pixels (pixel i's centre at i). Ultralytics' flip augmentation maps a label
    at u/w to (w - u)/w, one pixel beyond the flipped raster's w - 1 - u; the shipped model learned
    that pixel on images that look flipped (GO! at the top), which the runtime never shows it."""
    w, h = size
    return "".join(f"{c} {u / w:.6f} {v / h:.6f} {box_px / w:.6f} {box_px / h:.6f}\n" for c, u, v in labels)


def split_of(index: int, val_fraction: float) -> str:
    every = max(2, int(round(1 / val_fraction))) if val_fraction > 0 else 0
    return "val" if every and index % every == 0 else "train"


def write_sample(out: Path, board: Board, seed: int, index: int, synth_cfg: dict) -> int:
    """Render scene ``index`` and write its canonical image, labels and truth; returns the label count."""
    ycfg = synth_cfg["yolo"]
    jpeg, truth, rendered = make_photo(board, seed, index, synth_cfg)
    rng = np.random.default_rng([seed, index, 1])
    canon, labels, extra = canonical_sample(jpeg, rendered, board, rng, ycfg)
    dcfg = settings.load("detect")["canonical"]
    box_px = float(dcfg["label_box_mm"]) * float(dcfg["px_per_mm"])
    split = split_of(index, float(ycfg["val_fraction"]))
    name = f"s{seed}_{index:06d}"
    ok, buf = cv2.imencode(".jpg", canon, [int(cv2.IMWRITE_JPEG_QUALITY), 95])
    write_bytes(out / "images" / split / f"{name}.jpg", buf.tobytes())
    write_text(out / "labels" / split / f"{name}.txt", label_lines(labels, (canon.shape[1], canon.shape[0]), box_px))
    truth["yolo"] = {**extra, "split": split, "labels": [[c, round(u, 3), round(v, 3)] for c, u, v in labels]}
    write_json(out / "truth" / f"{name}.json", truth)
    return len(labels)


def prepare(out: Path) -> None:
    for sub in ("images/train", "images/val", "labels/train", "labels/val", "truth"):
        (out / sub).mkdir(parents=True, exist_ok=True)


def write_data_yaml(out: Path) -> Path:
    lines = [f"path: {out.resolve()}", "train: images/train", "val: images/val", "names:"]
    lines += [f"  {i}: {name}" for i, name in enumerate(SIDES)]
    path = out / "data.yaml"
    write_text(path, "\n".join(lines) + "\n")
    return path
