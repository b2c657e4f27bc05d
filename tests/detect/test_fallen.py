"""The fallen-token classifier: its patch geometry, its input, and the shipped network on the fixtures."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect import Token, detect
from knockcam.detect import fallen
from knockcam.detect.reference import viewpoint
from knockcam.errors import KnockcamError

BOARD = load_board()
SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
GEOMETRY = {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
needs_classifier = pytest.mark.skipif(not fallen.default_path().is_file(), reason="models/fallen.onnx not trained yet")


def scene(name):
    truth = json.loads((SCENES / f"{name}.json").read_text())
    return cv2.imread(str(SCENES / truth["image"])), Calibration.from_dict(truth["calibration"]), truth


def bilinear(image, xy):
    return cv2.getRectSubPix(image, (1, 1), (float(xy[0]), float(xy[1])))[0, 0].astype(float)


@pytest.mark.parametrize("name", ["oblique_60", "lens_distortion"])
def test_the_patch_has_the_base_behind_its_middle_and_looks_away_from_the_camera(name):
    image, cal, _ = scene(name)
    xy = np.array([210.0, 480.0])
    nadir = viewpoint(cal).nadir_mm
    patch = fallen.patches(image, cal, [xy], nadir, GEOMETRY)[0]
    assert patch.shape == (64, 64, 3)
    away = (xy - nadir) / np.linalg.norm(xy - nadir)
    across = np.array([away[1], -away[0]])
    for row, col in [(39, 31), (39, 10), (15, 31), (60, 50)]:  # row 39 is the base: (63 - 39) * 1.25 = 30 mm
        mm = xy + ((63 - row) * 1.25 - 30.0) * away + (col - 31.5) * 1.25 * across
        assert np.allclose(patch[row, col], bilinear(image, cal.mm_to_px([mm])[0]), atol=2.0), (row, col)


def test_a_standing_figure_leans_more_far_from_the_camera_and_none_below_it():
    lean = fallen.lean_mm([[0.0, 0.0], [300.0, 400.0]], np.array([0.0, 0.0, 1028.0]), 28.0)
    assert lean[0] == pytest.approx(0.0)
    assert lean[1] == pytest.approx(500.0 * 28.0 / 1000.0)  # similar triangles: distance * h / (H - h)


def test_the_network_input_is_the_colour_and_a_lean_channel():
    batch = np.full((2, 64, 64, 3), 255, np.uint8)
    x = fallen.network_input(batch, np.array([0.0, 15.0]))
    assert x.shape == (2, 4, 64, 64) and x.dtype == np.float32
    assert np.allclose(x[:, :3], 1.0)
    assert np.allclose(x[0, 3], 0.0) and np.allclose(x[1, 3], 15.0 / fallen.LEAN_SCALE_MM)


def test_without_a_classifier_tokens_are_left_as_they_are():
    image, cal, _ = scene("overhead")
    tokens = [Token("red", (100.0, 300.0), 0.9)]
    assert fallen.mark_fallen(tokens, image, cal, BOARD, None) == tokens


def test_a_damaged_classifier_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "fallen.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(KnockcamError, match="retrain it with 'knockcam train --fallen'"):
        fallen.FallenClassifier(bad)


def _marked(name):
    image, cal, truth = scene(name)
    found = detect(image, cal, BOARD).tokens
    marks = []
    for t in truth["tokens"]:
        if t["state"] == "off_board" or t["visible"] < 0.5:
            continue
        ends = [t["xy_mm"], t["lies_to_mm"] or t["xy_mm"]]
        near = [k for k in found if min(np.hypot(k.xy_mm[0] - e[0], k.xy_mm[1] - e[1]) for e in ends) < 20]
        marks.append((t["fallen"], any(k.fallen for k in near)))
    return marks


@needs_classifier
def test_the_shipped_classifier_marks_the_lying_tokens_of_the_fixtures():
    marks = _marked("off_board_and_fallen") + _marked("all_16_tokens")
    lying = [m for f, m in marks if f]
    assert len(lying) >= 2 and all(lying)


@needs_classifier
@pytest.mark.parametrize("name", ["overhead", "oblique_60", "touching_and_lines"])
def test_the_shipped_classifier_leaves_standing_tokens_standing(name):
    marks = _marked(name)
    assert marks and not any(m for f, m in marks if not f)
