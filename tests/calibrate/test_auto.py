"""The automatic method: the true shape of a seen rectangle, and the board found in photos it never saw."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from knockcam.calibrate.auto import calibrate_auto, quad_aspect
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import corner_errors_mm
from knockcam.calibrate.scene import make_scene
from knockcam.errors import KnockcamError

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_quad_aspect_recovers_the_true_aspect_from_any_camera(seed, board):
    from knockcam.calibrate.scene import look_at_homography

    rng = np.random.default_rng(seed)
    hom = None
    while hom is None:
        hom = look_at_homography(board, rng, (1280, 720), (5, 60))
    w, l = board.size_mm
    quad = cv2.perspectiveTransform(np.array([[[0, 0]], [[w, 0]], [[w, l]], [[0, l]]], np.float64), hom).reshape(-1, 2)
    assert quad_aspect(quad, (1280, 720)) == pytest.approx(w / l, rel=0.03)


@pytest.mark.parametrize("seed", [2, 6])
def test_board_found_on_unseen_art_within_targets(board, seed):
    scene = make_scene(board, seed, art_seed=3000 + seed)
    cal = calibrate_auto(scene.image, board)
    err = corner_errors_mm(cal, scene.truth, board)
    assert np.median(err) <= 1.0 and err.max() <= 3.0
    assert cal.method == "auto" and cal.error_source.startswith("estimate")


def test_no_board_is_a_clear_error(board):
    table = (np.random.default_rng(1).random((720, 1280, 3)) * 60 + 100).astype(np.uint8)
    with pytest.raises(KnockcamError, match="board not found"):
        calibrate_auto(table, board)


@pytest.mark.skipif(not (SCENES / "overhead.json").exists(), reason="synth fixtures not generated")
def test_overhead_fixture_corners_within_a_few_millimetres(board):
    truth = json.loads((SCENES / "overhead.json").read_text())["calibration"]
    k, d = np.array(truth["camera_matrix"]), np.array(truth["dist_coeffs"])
    t = Calibration("truth", tuple(truth["image_size"]), np.array(truth["homography"]), k, d)
    cal = calibrate_auto(cv2.imread(str(SCENES / "overhead.jpg")), board, k, d)
    err = corner_errors_mm(cal, t, board)
    # measured (bench/calibration.md): about 2 mm on these renders; the 1 mm target is not met yet
    assert err.max() <= 4.0
