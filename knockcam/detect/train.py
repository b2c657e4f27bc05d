"""Training and export of the token model with ultralytics (``knockcam train`` only; needs the [train] extra).

Data: a canonical-view YOLO dataset from ``knockcam synth OUT --yolo`` (images/, labels/, data.yaml):
each label is a square of ``label_box_mm`` centred on a token's base centre, class = side index.
Recipe: detect.yaml's ``train`` section, from scratch, rectangular batches at the canonical size.
The runtime (knockcam.detect.model) reads the exported ONNX with onnxruntime; only this module
imports ultralytics, and only inside the functions that need it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import yaml

from knockcam import settings
from knockcam.board.layout import Board, load_board
from knockcam.detect.canonical import canonical_view
from knockcam.detect.model import TokenModel, input_hw_for
from knockcam.errors import KnockcamError
from knockcam.files import write_atomic
from knockcam.sides import SIDES

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
MAX_MODEL_BYTES = 15 * 1024 * 1024


def _ultralytics():
    """Import ultralytics offline (no weight or font downloads), or say how to install it."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    try:
        import ultralytics  # noqa: F401
        from ultralytics import YOLO
    except ImportError:
        raise KnockcamError("training needs ultralytics: pip install 'knockcam[train]' "
                            "(the runtime itself never needs it)") from None
    return YOLO


def dataset_images(dataset: Path) -> list[Path]:
    """Every image of a YOLO dataset directory (images/ with labels/ beside it), sorted."""
    dataset = Path(dataset)
    images_dir = dataset / "images"
    if not images_dir.is_dir():
        raise KnockcamError(f"{dataset}: no images/ folder; make a dataset with 'knockcam synth OUT --yolo'")
    images = sorted(p for p in images_dir.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        raise KnockcamError(f"{images_dir}: no images found ({', '.join(IMAGE_SUFFIXES)})")
    return images


def label_path(image: Path) -> Path:
    """The YOLO label file of an image: the same path with images/ -> labels/ and .txt."""
    parts = list(image.parts)
    index = len(parts) - 1 - parts[::-1].index("images")
    parts[index] = "labels"
    return Path(*parts).with_suffix(".txt")


def _check_names(dataset: Path) -> None:
    """A dataset's own data.yaml, when present, must name the classes in SIDES order."""
    meta = dataset / "data.yaml"
    if not meta.is_file():
        return
    try:
        data = yaml.safe_load(meta.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise KnockcamError(f"{meta}: not valid YAML: {' '.join(str(exc).split())}") from None
    names = data.get("names")
    if names is None:
        return
    listed = [names[k] for k in sorted(names)] if isinstance(names, dict) else list(names)
    if [str(n) for n in listed] != list(SIDES):
        raise KnockcamError(f"{meta}: classes {listed} are not the sides in order {list(SIDES)}")


def prepare_dataset(dataset: Path, work_dir: Path, val_fraction: float = 0.1, val_max: int = 150,
                    box_size: tuple[float, float] | None = None) -> Path:
    """Write the training copy of ``dataset`` under ``work_dir`` and its ultralytics data.yaml.

    Images are linked, not copied; labels are copied, with every box resized to ``box_size``
    (width, height as fractions of the image, YOLO style) when given: the box centre is the base centre, its size is
    a training choice (detect.yaml train.label_box_mm). The train/val split is by a hash of each
    file name, so it is stable whatever the order or count of files.
    """
    dataset = Path(dataset).resolve()
    _check_names(dataset)
    images = dataset_images(dataset)
    if not any(label_path(p).is_file() for p in images):
        raise KnockcamError(f"{dataset}: no labels/ files beside the images; make it with 'knockcam synth OUT --yolo'")
    if work_dir.exists():
        shutil.rmtree(work_dir)
    (work_dir / "images").mkdir(parents=True)
    (work_dir / "labels").mkdir(parents=True)
    linked = []
    for image in images:
        flat = "__".join(image.relative_to(dataset / "images").parts)
        target = work_dir / "images" / flat
        target.symlink_to(image)
        source = label_path(image)
        rows = source.read_text(encoding="utf-8").splitlines() if source.is_file() else []
        (work_dir / "labels" / Path(flat).with_suffix(".txt")).write_text(
            "".join(_resize_label(row, box_size, source) for row in rows if row.strip()), encoding="utf-8")
        linked.append(target)
    keyed = sorted(linked, key=lambda p: hashlib.sha1(p.name.encode()).hexdigest())
    n_val = min(val_max, max(1, int(round(len(linked) * val_fraction)))) if len(linked) > 1 else 0
    val, train = keyed[:n_val], keyed[n_val:]
    if not train:
        raise KnockcamError(f"{dataset}: only {len(images)} image(s); training needs at least 2")
    write_atomic(work_dir / "train.txt", "".join(f"{p}\n" for p in sorted(train)))
    write_atomic(work_dir / "val.txt", "".join(f"{p}\n" for p in sorted(val or train[:1])))
    data = {"path": str(work_dir.resolve()), "train": str((work_dir / "train.txt").resolve()),
            "val": str((work_dir / "val.txt").resolve()), "names": dict(enumerate(SIDES))}
    path = work_dir / "data.yaml"
    write_atomic(path, yaml.safe_dump(data, sort_keys=False))
    return path


def _resize_label(row: str, box_size: tuple[float, float] | None, source: Path) -> str:
    """One YOLO label row, its box resized (about the same centre) to ``box_size`` when given."""
    parts = row.split()
    try:
        cls, cx, cy, w, h = int(parts[0]), *map(float, parts[1:5])
    except (ValueError, IndexError):
        raise KnockcamError(f"{source}: bad label row {row!r} (want: class cx cy w h)") from None
    if not 0 <= cls < len(SIDES):
        raise KnockcamError(f"{source}: class {cls} is not a side index 0..{len(SIDES) - 1}")
    if box_size is not None:
        w, h = box_size
    return f"{cls} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}\n"


@dataclass(frozen=True)
class TrainResult:
    """Where a training run left its outputs."""

    run_dir: Path
    weights: Path  # best.pt (or last.pt when no validation ran)
    onnx: Path
    seconds: float


def train(dataset: Path | None, *, epochs: int | None = None, imgsz: int | None = None,
          out: Path = Path("models"), runs: Path = Path("runs"), name: str = "tokens",
          resume: bool = False, batch: int | None = None, workers: int | None = None,
          hours: float | None = None, board: Board | None = None, init: Path | None = None,
          device: str = "cpu") -> TrainResult:
    """Train the token model on a canonical YOLO dataset (or resume), then export ONNX to ``out``.

    From scratch by default; ``init`` (a .pt checkpoint such as models/last.pt) starts from its
    weights instead: a fresh run with a short warm-up, for fine-tuning on a new dataset.

    ``hours`` fits the run to a wall-clock budget instead of ``epochs``: ultralytics times the first
    epoch, then sets the epoch count (and the learning-rate schedule) to end on time.
    ``device`` is "cpu" or CUDA GPU numbers ("0"): the same recipe either way, full precision (no AMP).
    """
    if init is not None and not Path(init).is_file():
        raise KnockcamError(f"--weights {init}: no such file (models/last.pt is the shipped checkpoint)")
    YOLO = _ultralytics()
    _check_device(device)
    recipe = settings.load("detect")["train"]
    view = canonical_view(board or load_board())
    input_hw = input_hw_for(view)
    imgsz = int(imgsz or max(input_hw))
    run_dir = (Path(runs) / name).resolve()
    started = time.monotonic()
    if resume:
        last = run_dir / "weights" / "last.pt"
        if not last.is_file():
            raise KnockcamError(f"nothing to resume: {last} does not exist (train without --resume first)")
        YOLO(str(last)).train(resume=True)
    else:
        if dataset is None:
            raise KnockcamError("give a DATASET_DIR to train on (or --resume a stopped run)")
        box_mm = recipe.get("label_box_mm")
        box_size = None if box_mm is None else (float(box_mm) * view.px_per_mm / view.size[0],
                                                float(box_mm) * view.px_per_mm / view.size[1])
        data_yaml = prepare_dataset(Path(dataset), run_dir.parent / f"{name}-data",
                                    float(recipe["val_fraction"]), int(recipe["val_max"]), box_size)
        model = YOLO(str(init if init is not None else recipe["model"]))
        batch = int(batch or recipe["batch"])
        model.train(
            data=str(data_yaml), epochs=int(epochs or recipe["epochs"]), imgsz=imgsz, batch=batch,
            nbs=int(recipe.get("nbs", batch)), optimizer=str(recipe.get("optimizer", "auto")),
            **({"lr0": float(recipe["lr0"])} if "lr0" in recipe else {}), workers=int(recipe["workers"] if workers is None else workers),
            device=device, rect=True, cache=True, amp=False, plots=False, patience=1000,
            project=str(run_dir.parent), name=name, exist_ok=True, seed=int(recipe["seed"]),
            close_mosaic=0, pretrained=init is not None, verbose=True,
            **({"warmup_epochs": float(recipe.get("finetune_warmup_epochs", 0.5))} if init is not None else {}),
            **({"time": float(hours)} if hours else {}),
            **dict(recipe.get("augment", {})),
        )
    weights = run_dir / "weights" / "best.pt"
    if not weights.is_file():
        weights = run_dir / "weights" / "last.pt"
    if not weights.is_file():
        raise KnockcamError(f"training wrote no weights under {run_dir / 'weights'}")
    onnx = export_onnx(weights, Path(out), input_hw)
    return TrainResult(run_dir=run_dir, weights=weights, onnx=onnx, seconds=time.monotonic() - started)


def _check_device(device: str) -> None:
    """A GPU asked for (``--device 0``) must be one torch sees here, before any data is prepared."""
    if device == "cpu":
        return
    import torch  # training only: ultralytics brings it

    count = torch.cuda.device_count()
    if max(int(d) for d in device.split(",")) >= count:
        here = "no CUDA GPU" if count == 0 else f"{count} CUDA GPU(s), numbered from 0"
        raise KnockcamError(f"--device {device}: torch sees {here} on this machine; train with --device cpu")


def export_onnx(weights: Path, out_dir: Path, input_hw: tuple[int, int]) -> Path:
    """Export ``weights`` to ``out_dir``/tokens.onnx at the fixed input (height, width), atomically."""
    YOLO = _ultralytics()
    weights = Path(weights)
    if not weights.is_file():
        raise KnockcamError(f"weights not found: {weights}")
    exported = Path(YOLO(str(weights)).export(format="onnx", imgsz=list(input_hw), simplify=False,
                                              dynamic=False, half=False, nms=False, device="cpu"))
    size = exported.stat().st_size
    if size > MAX_MODEL_BYTES:
        raise KnockcamError(f"{exported} is {size / 2**20:.1f} MB, over the 15 MB limit for models/: use a smaller model")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "tokens.onnx"
    tmp = out_dir / "tokens.onnx.tmp"
    shutil.copyfile(exported, tmp)
    TokenModel(tmp)  # refuse to install a file the runtime cannot load
    tmp.replace(target)
    return target


# --- held-out evaluation (runtime model only, no ultralytics) -----------------------------------

@dataclass(frozen=True)
class Evaluation:
    """Held-out metrics of a token model on a canonical dataset (true calibration)."""

    images: int
    tokens: int  # ground-truth tokens
    detections: int
    matched: int  # detections within match_mm of a true base centre (any side)
    side_correct: int  # matched with the right side
    recall: float  # matched / tokens
    precision: float  # matched / detections
    side_accuracy: float  # side_correct / matched
    token_accuracy: float  # side_correct / tokens: found at the right place with the right side
    error_mm_median: float
    error_mm_p95: float
    error_mm_max: float
    scenes_exact: float  # share of images with every token found, right side, no extra detection
    confusions: dict  # "true->predicted": count, side errors only
    ms_median: float  # model time per canonical image (letterbox + onnxruntime + decode), after load
    ms_p95: float
    match_mm: float
    # per score band of detect.yaml's model.sigma_by_score: {"score_min", "tokens", "median_mm", "p90_mm",
    # "sigma_mm"}, where sigma_mm = p90 / assign's p90_sigmas: a token's sigma as every detector gives it
    error_by_score: list = field(default_factory=list)


def _truth(image: Path, view) -> tuple[np.ndarray, np.ndarray]:
    """Ground-truth base centres (board mm) and classes from an image's YOLO label file."""
    path = label_path(image)
    rows = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) >= 5:
                rows.append([float(v) for v in parts[:5]])
    if not rows:
        return np.zeros((0, 2)), np.zeros(0, dtype=int)
    arr = np.asarray(rows)
    width, height = view.size
    px = np.column_stack([arr[:, 1] * width, arr[:, 2] * height])
    return view.to_mm(px), arr[:, 0].astype(int)


def _match(truth: np.ndarray, pred: np.ndarray, radius: float) -> list[tuple[int, int, float]]:
    """Greedy one-to-one matching of predicted to true points, nearest first, within ``radius``."""
    if not len(truth) or not len(pred):
        return []
    dist = np.linalg.norm(truth[:, None, :] - pred[None, :, :], axis=2)
    pairs = []
    used_t, used_p = set(), set()
    for flat in np.argsort(dist, axis=None):
        t, p = np.unravel_index(flat, dist.shape)
        if dist[t, p] > radius:
            break
        if t in used_t or p in used_p:
            continue
        used_t.add(t)
        used_p.add(p)
        pairs.append((int(t), int(p), float(dist[t, p])))
    return pairs


def evaluate(model_path: Path | None, dataset: Path, limit: int | None = None, board: Board | None = None,
             match_mm: float | None = None, conf: float | None = None) -> Evaluation:
    """Measure a token model on a held-out canonical YOLO dataset: side, position, recall, precision, speed."""
    import cv2

    board = board or load_board()
    view = canonical_view(board)
    model = TokenModel(model_path, conf=conf)
    radius = float(match_mm if match_mm is not None else board.token.base_diameter_mm / 2)
    images = dataset_images(Path(dataset))[: limit or None]
    n_tokens = n_det = n_match = n_side = exact = 0
    errors, scores, times = [], [], []
    confusions: dict[str, int] = {}
    model.detect_canonical(np.full((view.size[1], view.size[0], 3), 114, np.uint8), view)  # warm-up
    for path in images:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise KnockcamError(f"cannot read image {path}")
        truth_mm, truth_cls = _truth(path, view)
        t0 = time.perf_counter()
        tokens = model.detect_canonical(image, view)
        times.append((time.perf_counter() - t0) * 1000)
        pred_mm = np.array([t.xy_mm for t in tokens]).reshape(-1, 2)
        pairs = _match(truth_mm, pred_mm, radius)
        n_tokens += len(truth_mm)
        n_det += len(tokens)
        n_match += len(pairs)
        right = 0
        for t, p, d in pairs:
            errors.append(d)
            scores.append(tokens[p].confidence)
            want, got = SIDES[truth_cls[t]], tokens[p].side
            if want == got:
                right += 1
            else:
                key = f"{want}->{got}"
                confusions[key] = confusions.get(key, 0) + 1
        n_side += right
        exact += int(right == len(truth_mm) == len(tokens))
    err = np.asarray(errors) if errors else np.asarray([np.nan])
    ms = np.asarray(times)
    return Evaluation(
        images=len(images), tokens=n_tokens, detections=n_det, matched=n_match, side_correct=n_side,
        recall=n_match / max(n_tokens, 1), precision=n_match / max(n_det, 1),
        side_accuracy=n_side / max(n_match, 1), token_accuracy=n_side / max(n_tokens, 1),
        error_mm_median=float(np.median(err)), error_mm_p95=float(np.percentile(err, 95)),
        error_mm_max=float(np.max(err)), scenes_exact=exact / max(len(images), 1),
        confusions=dict(sorted(confusions.items())), ms_median=float(np.median(ms)),
        ms_p95=float(np.percentile(ms, 95)), match_mm=radius,
        error_by_score=_error_by_score(np.asarray(errors), np.asarray(scores), model.sigma_by_score),
    )


def _error_by_score(errors: np.ndarray, scores: np.ndarray, table) -> list[dict]:
    """Base error of matched tokens in each score band of ``table`` (knockcam.detect.model.sigma_table)."""
    sigmas = float(settings.load("assign")["ambiguity"]["p90_sigmas"])
    out, upper = [], np.inf
    for lowest, _ in table:
        err = errors[(scores >= lowest) & (scores < upper)]
        upper = lowest
        p90 = float(np.percentile(err, 90)) if len(err) else None
        out.append({"score_min": lowest, "tokens": int(len(err)),
                    "median_mm": float(np.median(err)) if len(err) else None, "p90_mm": p90,
                    "sigma_mm": None if p90 is None else round(p90 / sigmas, 2)})
    return out


def evaluation_json(evaluation: Evaluation) -> str:
    """The evaluation as JSON; a figure that could not be measured (no match at all) is null."""
    data = {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in asdict(evaluation).items()}
    return json.dumps(data, indent=2)
