"""The learned token detector at run time: an ONNX model on the canonical top-down view, via onnxruntime.

The model (trained by ``knockcam train``, see models/MODEL_CARD.md) sees the board warped top-down,
where every token has the same size, and predicts one small box per token centred on its *base*
(keypoints-as-objects), class = side. Box centres map back to board millimetres through the same
``TopDown`` raster that made the image. Never imports torch or ultralytics.
"""

from __future__ import annotations

import ast
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError
from knockcam.sides import SIDES

PAD_VALUE = 114  # ultralytics' letterbox grey, the colour the model saw around every training image


def sigma_table(cfg: dict) -> tuple[tuple[float, float], ...]:
    """detect.yaml's ``model.sigma_by_score`` as (lowest score, sigma mm) rows, highest score first."""
    rows = tuple(sorted(((float(a), float(b)) for a, b in cfg.get("sigma_by_score") or ()), reverse=True))
    if not rows or rows[-1][0] > 0 or any(b <= 0 for _, b in rows):
        raise KnockcamError("detect.yaml model.sigma_by_score needs positive sigmas and a row for score 0")
    return rows


def sigma_for(table: tuple[tuple[float, float], ...], score: float) -> float:
    """The base-centre uncertainty (mm) of a model token with this score: its band's row of ``table``."""
    return next(sigma for lowest, sigma in table if score >= lowest)


def default_model_path() -> Path:
    """Where the shipped weights live: $KNOCKCAM_MODEL, else detect.yaml's model.path, else models/tokens.onnx
    of this checkout (an editable install), else the copy a regular install put under <prefix>/share."""
    env = os.environ.get("KNOCKCAM_MODEL")
    if env:
        return Path(env)
    configured = settings.load("detect").get("model", {}).get("path")
    if configured:
        return Path(configured)
    return shipped("tokens.onnx")


def shipped(name: str) -> Path:
    """A file of models/: this checkout's (an editable install), else the copy a regular install put
    under <prefix>/share/knockcam/models."""
    checkout = Path(__file__).resolve().parents[2] / "models" / name
    installed = Path(sys.prefix) / "share" / "knockcam" / "models" / name
    return installed if installed.is_file() and not checkout.is_file() else checkout


@dataclass(frozen=True)
class Letterbox:
    """How an image was fitted into the model input: scaled by ``gain``, then padded by ``pad`` (left, top)."""

    gain: float
    pad: tuple[float, float]

    def to_image(self, points_input) -> np.ndarray:
        """(N, 2) model-input pixels -> (N, 2) pixels of the original image."""
        pts = np.asarray(points_input, dtype=np.float64).reshape(-1, 2)
        return (pts - np.asarray(self.pad)) / self.gain

    def to_input(self, points_image) -> np.ndarray:
        """(N, 2) original-image pixels -> (N, 2) model-input pixels."""
        pts = np.asarray(points_image, dtype=np.float64).reshape(-1, 2)
        return pts * self.gain + np.asarray(self.pad)


def letterbox(image: np.ndarray, input_hw: tuple[int, int]) -> tuple[np.ndarray, Letterbox]:
    """Fit ``image`` (H, W, C) into ``input_hw`` keeping its aspect, centred, padded with grey.

    Same arithmetic as ultralytics' LetterBox(auto=False): gain = min(H_in / h, W_in / w) with the
    width and the height each used once (ultralytics' ONNX example uses the height twice, wrong
    for non-square frames).
    """
    import cv2

    h, w = image.shape[:2]
    in_h, in_w = input_hw
    gain = min(in_h / h, in_w / w)
    new_w, new_h = int(round(w * gain)), int(round(h * gain))
    if (new_w, new_h) != (w, h):
        image = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    dw, dh = (in_w - new_w) / 2, (in_h - new_h) / 2
    top, bottom = int(round(dh - 0.1)), int(round(dh + 0.1))
    left, right = int(round(dw - 0.1)), int(round(dw + 0.1))
    if top or bottom or left or right:
        image = cv2.copyMakeBorder(image, top, bottom, left, right, cv2.BORDER_CONSTANT,
                                   value=(PAD_VALUE, PAD_VALUE, PAD_VALUE))
    return image, Letterbox(gain=gain, pad=(float(left), float(top)))


@dataclass(frozen=True)
class Detections:
    """Raw model detections in model-input pixels: box centres (N, 2), sizes (N, 2), scores (N,), classes (N,)."""

    centres: np.ndarray
    sizes: np.ndarray
    scores: np.ndarray
    classes: np.ndarray

    def __len__(self) -> int:
        return len(self.scores)

    def take(self, index) -> "Detections":
        return Detections(self.centres[index], self.sizes[index], self.scores[index], self.classes[index])


def nms(boxes_xyxy: np.ndarray, scores: np.ndarray, iou: float) -> np.ndarray:
    """Indices kept by greedy non-maximum suppression, best score first."""
    order = np.argsort(-scores, kind="stable")
    x1, y1, x2, y2 = boxes_xyxy.T
    area = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        iw = np.clip(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0, None)
        ih = np.clip(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0, None)
        inter = iw * ih
        union = area[i] + area[rest] - inter
        overlap = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
        order = rest[overlap <= iou]
    return np.asarray(keep, dtype=np.int64)


def decode(output: np.ndarray, num_classes: int, conf: float, iou: float, max_det: int = 32,
           agnostic: bool = True) -> Detections:
    """Turn one raw model output into detections.

    Two layouts are understood: the classic head ``(1, 4 + nc, N)`` (cx, cy, w, h, then per-class
    scores, no objectness; needs NMS) and an end-to-end export ``(1, M, 6)`` (x1, y1, x2, y2,
    score, class; already suppressed). ``agnostic`` suppresses across sides: two bases cannot
    overlap, so overlapping boxes of different sides are one token the model is unsure about.
    """
    out = np.asarray(output, dtype=np.float32)
    if out.ndim == 3:
        out = out[0]
    if out.ndim != 2:
        raise KnockcamError(f"token model output has shape {np.shape(output)}; expected (1, {4 + num_classes}, N) "
                            "or (1, M, 6): re-export it with 'knockcam train'")
    if out.shape[0] == 4 + num_classes:  # classic head, anchors along axis 1
        pred = out.T
        class_scores = pred[:, 4:]
        classes = class_scores.argmax(axis=1)
        scores = class_scores[np.arange(len(pred)), classes]
        keep = scores > conf
        pred, scores, classes = pred[keep], scores[keep], classes[keep]
        centres, sizes = pred[:, 0:2].astype(np.float64), pred[:, 2:4].astype(np.float64)
        if len(scores):
            xyxy = np.hstack([centres - sizes / 2, centres + sizes / 2])
            if agnostic:
                kept = nms(xyxy, scores, iou)
            else:  # per side: offset each class far apart so boxes of different sides never overlap
                offset = classes[:, None].astype(np.float64) * 1e5
                kept = nms(xyxy + offset, scores, iou)
            kept = kept[:max_det]
            centres, sizes, scores, classes = centres[kept], sizes[kept], scores[kept], classes[kept]
    elif out.shape[1] == 6:  # end-to-end export
        pred = out[out[:, 4] > conf][:max_det]
        centres = ((pred[:, 0:2] + pred[:, 2:4]) / 2).astype(np.float64)
        sizes = (pred[:, 2:4] - pred[:, 0:2]).astype(np.float64)
        scores, classes = pred[:, 4], pred[:, 5].round().astype(np.int64)
    else:
        raise KnockcamError(f"token model output has shape {np.shape(output)}, which matches neither a "
                            f"{num_classes}-class detect head nor an end-to-end export")
    order = np.argsort(-scores, kind="stable")
    return Detections(centres[order].reshape(-1, 2), sizes[order].reshape(-1, 2),
                      scores[order].astype(np.float64), classes[order].astype(np.int64))


def cpu_session(path: Path, what: str, threads: int = 0, spin: bool = True, remedy: str = ""):
    """An onnxruntime session on the CPU (``threads`` intra-op threads, 0: one per core; ``spin``: let them
    spin-wait between runs), or KnockcamError naming ``what`` could not be loaded (and ``remedy``)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if not spin:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own types for corrupt files
        raise KnockcamError(f"cannot load {what} {path}: {' '.join(str(exc).split())[:200]}{remedy}") from None


class TokenModel:
    """The ONNX token detector, loaded once; ``detect`` takes a photo, ``detect_canonical`` a warped view."""

    def __init__(self, path: str | Path | None = None, *, conf: float | None = None, iou: float | None = None,
                 threads: int | None = None):
        cfg = settings.load("detect").get("model", {})
        self.path = Path(path) if path is not None else default_model_path()
        if not self.path.is_file():
            raise KnockcamError(f"token model not found: {self.path} (train one with 'knockcam train DATASET' "
                                "or set KNOCKCAM_MODEL to a tokens.onnx)")
        self.conf = float(cfg.get("conf", 0.25) if conf is None else conf)
        self.sure_conf = max(self.conf, float(cfg.get("sure_conf", self.conf)))
        self.sure_conf_alone = max(self.sure_conf, float(cfg.get("sure_conf_alone", self.sure_conf)))
        self.iou = float(cfg.get("iou", 0.3) if iou is None else iou)
        self.max_det = int(cfg.get("max_det", 32))
        self.agnostic = bool(cfg.get("agnostic_nms", True))
        self.sigma_by_score = sigma_table(cfg)
        self.support_conf = float(cfg.get("support_conf", self.conf))
        self.session = cpu_session(self.path, "token model", threads=int(cfg.get("threads", 0) if threads is None
                                                                         else threads))
        model_input = self.session.get_inputs()[0]
        self.input_name = model_input.name
        shape = model_input.shape
        if len(shape) != 4 or not all(isinstance(v, int) for v in shape[2:]):
            raise KnockcamError(f"token model {self.path} has input shape {shape}; export it with a fixed "
                                "(height, width), as 'knockcam train' does")
        self.input_hw = (int(shape[2]), int(shape[3]))
        meta = self.session.get_modelmeta().custom_metadata_map
        self.names = _class_names(meta.get("names"), self.path)

    def predict(self, image_bgr: np.ndarray, conf: float | None = None) -> tuple[Detections, Letterbox]:
        """Raw detections scoring above ``conf`` (default: the model's threshold) for one BGR image, in
        model-input pixels, and the letterbox to undo them."""
        image = _as_bgr(image_bgr)
        boxed, box = letterbox(image, self.input_hw)
        blob = boxed[:, :, ::-1].transpose(2, 0, 1)[None].astype(np.float32) / 255.0  # BGR -> RGB, NCHW
        output = self.session.run(None, {self.input_name: np.ascontiguousarray(blob)})[0]
        threshold = self.conf if conf is None else float(conf)
        return decode(output, len(self.names), threshold, self.iou, self.max_det, self.agnostic), box

    def detect_canonical(self, canonical_bgr: np.ndarray, view: TopDown, conf: float | None = None) -> list[Token]:
        """Tokens in a canonical top-down image made with ``view``; positions in board millimetres.
        ``conf`` lowers (or raises) the score threshold for this call."""
        height, width = np.asarray(canonical_bgr).shape[:2]
        if (width, height) != view.size:
            raise KnockcamError(f"canonical image is {width}x{height} px but the view is {view.size[0]}x"
                                f"{view.size[1]} px: make it with knockcam.detect.canonical.warp_to_canonical")
        found, box = self.predict(canonical_bgr, conf)
        if not len(found):
            return []
        xy_mm = view.to_mm(box.to_image(found.centres))
        return [Token(side=self.names[int(c)], xy_mm=(float(x), float(y)), confidence=float(s),
                      sigma_mm=sigma_for(self.sigma_by_score, s), source="model", unsure=bool(s < self.sure_conf))
                for (x, y), s, c in zip(xy_mm, found.scores, found.classes)]

    def detect(self, image_bgr: np.ndarray, calibration: Calibration, board: Board,
               conf: float | None = None) -> list[Token]:
        """Tokens in a photo of the board: warp to the canonical view, detect, map back to image pixels too."""
        from dataclasses import replace

        from knockcam.detect.canonical import warp_to_canonical

        canonical, view = warp_to_canonical(_as_bgr(image_bgr), calibration, board)
        tokens = self.detect_canonical(canonical, view, conf)
        if not tokens:
            return []
        xy_px = calibration.mm_to_px([t.xy_mm for t in tokens])
        return [replace(t, xy_px=(float(u), float(v))) for t, (u, v) in zip(tokens, xy_px)]


def _as_bgr(image: np.ndarray) -> np.ndarray:
    """A 3-channel uint8 image, or a KnockcamError saying what was wrong with it."""
    import cv2

    if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or image.size == 0:
        raise KnockcamError("token detector needs an image array (H, W, 3); got "
                            f"{getattr(image, 'shape', type(image).__name__)}")
    if image.dtype != np.uint8:
        raise KnockcamError(f"token detector needs an 8-bit image, got {image.dtype}")
    if image.ndim == 2:
        return cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    if image.shape[2] == 4:
        return cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    if image.shape[2] != 3:
        raise KnockcamError(f"token detector needs 1, 3 or 4 channels, got {image.shape[2]}")
    return image


def _class_names(raw: str | None, path: Path) -> tuple[str, ...]:
    """The sides in class order, read from the ONNX metadata ultralytics writes (a dict literal)."""
    if not raw:
        return SIDES
    try:
        parsed = ast.literal_eval(raw)
        names = tuple(str(parsed[i]) for i in sorted(parsed)) if isinstance(parsed, dict) else tuple(map(str, parsed))
    except (ValueError, SyntaxError, TypeError, KeyError):
        raise KnockcamError(f"token model {path}: unreadable class names {raw[:80]!r}") from None
    unknown = [n for n in names if n not in SIDES]
    if unknown:
        raise KnockcamError(f"token model {path} has classes {', '.join(unknown)} that are not sides "
                            f"({', '.join(SIDES)}): it is not a knockcam token model")
    return names


def input_hw_for(view: TopDown, stride: int = 32) -> tuple[int, int]:
    """The model input (height, width) for a canonical view: its size rounded up to the network stride."""
    width, height = view.size
    return (int(math.ceil(height / stride) * stride), int(math.ceil(width / stride) * stride))
