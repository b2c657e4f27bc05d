"""Training-data helpers of knockcam train (no ultralytics needed): dataset split, label boxes, matching."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from knockcam.detect import train as training
from knockcam.errors import KnockcamError
from knockcam.sides import SIDES


def make_dataset(root, n=20, nested=True, names=SIDES):
    for i in range(n):
        split = ("val" if i % 10 == 0 else "train") if nested else ""
        img = root / "images" / split / f"s7_{i:04d}.jpg"
        lab = root / "labels" / split / f"s7_{i:04d}.txt"
        img.parent.mkdir(parents=True, exist_ok=True)
        lab.parent.mkdir(parents=True, exist_ok=True)
        img.write_bytes(b"jpeg")
        lab.write_text(f"{i % 4} 0.5 0.25 0.048 0.024\n2 0.1 0.9 0.048 0.024\n")
    (root / "data.yaml").write_text(yaml.safe_dump({"path": str(root), "names": dict(enumerate(names))}))
    return root


def test_prepare_dataset_links_images_resizes_boxes_and_splits_stably(tmp_path):
    data = make_dataset(tmp_path / "ds")
    meta = training.prepare_dataset(data, tmp_path / "work", val_fraction=0.25, val_max=3, box_size=(0.1, 0.05))
    cfg = yaml.safe_load(meta.read_text())
    assert cfg["names"] == dict(enumerate(SIDES))
    train = (tmp_path / "work" / "train.txt").read_text().split()
    val = (tmp_path / "work" / "val.txt").read_text().split()
    assert len(val) == 3 and len(train) == 17 and not set(train) & set(val)
    for path in train + val:
        image = tmp_path / "work" / "images" / path.rsplit("/", 1)[1]
        assert image.is_symlink() and image.resolve().is_file()
        rows = [r.split() for r in training.label_path(image).read_text().splitlines()]
        assert [r[3:] for r in rows] == [["0.100000", "0.050000"]] * 2
        assert rows[1][:3] == ["2", "0.100000", "0.900000"]  # centre kept
    again = training.prepare_dataset(data, tmp_path / "work", val_fraction=0.25, val_max=3, box_size=None)
    assert (tmp_path / "work" / "val.txt").read_text().split() == val  # same split on a rerun
    first = training.label_path(tmp_path / "work" / "images" / val[0].rsplit("/", 1)[1]).read_text()
    assert "0.048000 0.024000" in first  # box_size=None keeps the dataset's boxes
    assert again == meta


def test_prepare_dataset_refuses_other_class_orders_and_bad_rows(tmp_path):
    with pytest.raises(KnockcamError, match="not the sides in order"):
        training.prepare_dataset(make_dataset(tmp_path / "a", names=("blue", "red", "green", "yellow")),
                                 tmp_path / "wa")
    bad = make_dataset(tmp_path / "b", nested=False)
    (bad / "labels" / "s7_0003.txt").write_text("7 0.5 0.5 0.1 0.1\n")
    with pytest.raises(KnockcamError, match="class 7 is not a side"):
        training.prepare_dataset(bad, tmp_path / "wb")
    (bad / "labels" / "s7_0003.txt").write_text("red 0.5 0.5\n")
    with pytest.raises(KnockcamError, match="bad label row"):
        training.prepare_dataset(bad, tmp_path / "wb")
    with pytest.raises(KnockcamError, match="no images/ folder"):
        training.prepare_dataset(tmp_path / "missing", tmp_path / "wc")


def test_match_pairs_nearest_first_one_to_one_within_radius():
    truth = np.array([[0.0, 0.0], [30.0, 0.0], [100.0, 100.0]])
    pred = np.array([[29.0, 0.0], [1.0, 1.0], [2.0, 0.0], [300.0, 0.0]])
    pairs = training._match(truth, pred, radius=12.5)
    assert sorted((t, p) for t, p, _ in pairs) == [(0, 1), (1, 0)] or \
        sorted((t, p) for t, p, _ in pairs) == [(0, 2), (1, 0)]
    assert all(d <= 12.5 for _, _, d in pairs)
    assert training._match(truth, np.zeros((0, 2)), 12.5) == []


def test_evaluation_json_writes_unmeasurable_figures_as_null():
    ev = training.Evaluation(images=1, tokens=2, detections=0, matched=0, side_correct=0, recall=0.0,
                             precision=0.0, side_accuracy=0.0, token_accuracy=0.0, error_mm_median=float("nan"),
                             error_mm_p95=float("nan"), error_mm_max=float("nan"), scenes_exact=0.0,
                             confusions={}, ms_median=5.0, ms_p95=6.0, match_mm=12.5)
    data = json.loads(training.evaluation_json(ev))
    assert data["error_mm_median"] is None and data["ms_median"] == 5.0


def test_error_by_score_gives_each_band_the_sigma_whose_p90_sigmas_multiple_is_its_p90():
    errors = np.array([0.5] * 9 + [2.5] + [1.0] * 9 + [5.0] + [9.0])
    scores = np.array([0.95] * 10 + [0.85] * 10 + [0.3])
    bands = training._error_by_score(errors, scores, ((0.9, 1.0), (0.5, 2.0), (0.0, 4.0)))
    assert [b["tokens"] for b in bands] == [10, 10, 1]
    assert bands[0]["median_mm"] == 0.5 and bands[0]["p90_mm"] == pytest.approx(0.7)  # 2.5 is the top 10%
    assert bands[0]["sigma_mm"] == pytest.approx(0.7 / 2.5, abs=0.01)  # assign.yaml: p90_sigmas 2.5
    assert bands[2]["p90_mm"] == 9.0
    empty = training._error_by_score(np.array([]), np.array([]), ((0.0, 1.0),))
    assert empty == [{"score_min": 0.0, "tokens": 0, "median_mm": None, "p90_mm": None, "sigma_mm": None}]


def test_train_command_explains_bad_arguments(tmp_path, capsys):
    from knockcam.cli import main

    assert main(["train", str(tmp_path), "--epochs", "0"]) == 2
    assert "--epochs must be at least 1" in capsys.readouterr().err
    assert main(["train", str(tmp_path), "--imgsz", "100"]) == 2
    assert "multiple of 32" in capsys.readouterr().err
    assert main(["train", "--evaluate", str(tmp_path / "m.onnx")]) == 2
    assert "needs a DATASET_DIR" in capsys.readouterr().err
    assert main(["train", "--evaluate", str(tmp_path / "m.onnx"), str(tmp_path)]) == 2
    assert "token model not found" in capsys.readouterr().err
    assert main(["train", str(tmp_path / "nowhere")]) == 2
    assert "dataset folder not found" in capsys.readouterr().err
    assert main(["train", str(tmp_path), "--weights", str(tmp_path / "init.pt"), "--resume"]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["train", str(tmp_path), "--weights", str(tmp_path / "init.pt")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["train", str(tmp_path), "--device", "cuda:0"]) == 2
    assert "--device must be cpu or GPU numbers" in capsys.readouterr().err
    for other in (["--fallen"], ["--cover"], ["--evaluate", str(tmp_path / "m.onnx")]):
        assert main(["train", str(tmp_path), "--device", "0", *other]) == 2
        assert "--device 0 trains the token model only" in capsys.readouterr().err


def test_a_gpu_torch_does_not_see_is_refused_before_training(tmp_path, monkeypatch):
    """--device 0 on a machine with no CUDA GPU: one line saying so, not ultralytics' traceback mid-run."""
    import sys
    import types

    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda: 1))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(training, "_ultralytics", lambda: None)
    with pytest.raises(KnockcamError, match="--device 1: torch sees 1 CUDA GPU"):
        training.train(tmp_path, device="1")
    torch.cuda.device_count = lambda: 0
    with pytest.raises(KnockcamError, match="--device 0: torch sees no CUDA GPU on this machine; train with "
                                            "--device cpu"):
        training.train(tmp_path, device="0")
