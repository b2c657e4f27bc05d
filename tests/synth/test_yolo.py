"""The detector's dataset: canonical images with one box per visible token, centred on its base."""

from pathlib import Path

import numpy as np
import yaml

from knockcam import settings
from knockcam.board.layout import load_board
from knockcam.cli import main
from knockcam.detect.canonical import canonical_view
from knockcam.sides import SIDES
from knockcam.synth.scene import config, make_photo
from knockcam.synth.yolo import canonical_sample, label_lines

BOARD = load_board()


def test_labels_sit_on_base_centres_within_the_calibration_jitter():
    cfg = config()["yolo"]
    view = canonical_view(BOARD)
    checked = 0
    for index in range(3):
        jpeg, truth, rendered = make_photo(BOARD, 21, index)
        canon, labels, extra = canonical_sample(jpeg, rendered, BOARD, np.random.default_rng(index), cfg)
        assert canon.shape[1::-1] == view.size
        assert max(np.hypot(*o) for o in extra["corner_jitter_px"]) <= cfg["corner_jitter_px"][1] + 1e-9
        expected = [t for t in rendered.tokens if t.visible >= cfg["min_visible"]]
        inside = []
        for t in expected:
            u, v = view.to_px([t.xy_mm])[0]
            if 2 <= u < view.size[0] - 2 and 2 <= v < view.size[1] - 2:
                inside.append((SIDES.index(t.side), u, v))
        assert len(labels) >= len(inside)
        for cls, u, v in inside:  # each in-view token has a label of its side within a few canonical px
            d = [np.hypot(u - lu, v - lv) for lc, lu, lv in labels if lc == cls]
            assert d and min(d) < 3.0
            checked += 1
    assert checked > 0


def test_label_lines_are_normalised():
    box = settings.load("detect")["canonical"]["label_box_mm"] * settings.load("detect")["canonical"]["px_per_mm"]
    text = label_lines([(2, 104.0, 207.0)], (208, 414), box)
    cls, cx, cy, w, h = text.split()
    assert cls == "2" and float(cx) == 0.5 and float(cy) == 0.5
    assert abs(float(w) * 208 - box) < 1e-3 and abs(float(h) * 414 - box) < 1e-3


def test_cli_writes_a_dataset(tmp_path: Path):
    out = tmp_path / "ds"
    assert main(["synth", str(out), "--count", "3", "--seed", "2", "--yolo"]) == 0
    data = yaml.safe_load((out / "data.yaml").read_text())
    assert data["names"] == dict(enumerate(SIDES))
    images = sorted((out / "images").rglob("*.jpg"))
    labels = sorted((out / "labels").rglob("*.txt"))
    assert len(images) == len(labels) == 3
    assert (out / "images" / "val").iterdir()
    for lab in labels:
        for line in lab.read_text().splitlines():
            cls, *vals = line.split()
            assert 0 <= int(cls) < len(SIDES)
            assert all(0 <= float(x) <= 1 for x in vals)


def test_cli_stills_and_bad_input(tmp_path: Path, capsys):
    assert main(["synth", str(tmp_path / "st"), "--count", "1", "--seed", "9", "--json"]) == 0
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == [
        "scene_s9_00000.jpg", "scene_s9_00000.json", "scene_s9_00000_ref.jpg"]
    assert main(["synth", str(tmp_path / "x"), "--count", "0"]) == 2
    assert "--count" in capsys.readouterr().err
    assert main(["synth", str(tmp_path / "x"), "--seed", "-1"]) == 2
    assert "--seed must be 0 or more" in capsys.readouterr().err and not (tmp_path / "x").exists()
    assert main(["synth", str(tmp_path / "x"), "--board", str(tmp_path / "nope.yaml")]) == 2
