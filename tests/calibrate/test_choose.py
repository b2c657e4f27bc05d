"""calibrate(): the method follows from what is given; failures say what to do."""

from pathlib import Path

import numpy as np
import pytest

from knockcam.calibrate import calibrate
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import board_corners_mm, corner_errors_mm
from knockcam.errors import KnockcamError


def test_corners_as_text_or_array(scene, board):
    corners = scene.truth.mm_to_px(board_corners_mm(board))
    text = " ".join(f"{x:.3f},{y:.3f}" for x, y in corners)
    for given in (corners, text):
        cal = calibrate(scene.image, board, corners=given)
        assert cal.method == "corners" and corner_errors_mm(cal, scene.truth, board).max() < 0.01


def test_calibration_file_is_used_as_is_and_checked_for_size(tmp_path, scene, board):
    path = tmp_path / "c.yaml"
    scene.truth.with_error(0.5, "test").save(path, board.size_mm)
    cal = calibrate(scene.image, board, calibration_file=path)
    assert np.allclose(cal.homography, scene.truth.homography, atol=1e-6)
    with pytest.raises(KnockcamError, match="is for 1280x720"):
        calibrate(scene.image[:100], board, calibration_file=path)


def test_nothing_given_uses_markers_when_in_view(marker_scene, board):
    cal = calibrate(marker_scene.image, board)
    assert cal.method == "markers"
    assert corner_errors_mm(cal, marker_scene.truth, board).max() < 1.0


def test_nothing_given_and_no_board_says_what_to_do(board):
    blank = np.full((480, 640, 3), 128, np.uint8)
    with pytest.raises(KnockcamError, match="give --corners or lay the marker sheet"):
        calibrate(blank, board)


def test_error_over_the_limit_stops(scene, board):
    corners = scene.truth.mm_to_px(board_corners_mm(board))
    with pytest.raises(KnockcamError, match="over the 0.01 mm limit"):
        calibrate(scene.image, board, corners=corners, max_error_mm=0.01)


def test_reference_pair_accepts_a_calibration_file(tmp_path, scene, board):
    from knockcam.calibrate.scene import make_scene

    ref = make_scene(board, 77, art_seed=scene.art_seed, tokens=0)
    path = tmp_path / "ref.yaml"
    ref.truth.save(path)
    cal = calibrate(scene.image, board, reference=(ref.image, path))
    assert cal.method == "reference" and corner_errors_mm(cal, scene.truth, board).max() <= 3.0
    assert isinstance(cal, Calibration)


def test_a_blurred_photo_refused_for_its_error_is_told_to_be_retaken(board):
    """defocus fixture: the board is placed 5-6 mm off and refused; its printed lines are 8 px wide,
    so the message says the photo is blurred. A sharp photo refused (lens_distortion, its lens not
    given: 4.4 mm estimated) is not told that."""
    import cv2

    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    with pytest.raises(KnockcamError, match=r"over the 3 mm limit \(auto\): the photo is blurred .* retake it"):
        calibrate(cv2.imread(str(scenes / "defocus.jpg")), board)
    with pytest.raises(KnockcamError, match="over the 3 mm limit") as refused:
        calibrate(cv2.imread(str(scenes / "lens_distortion.jpg")), board)
    assert "blurred" not in str(refused.value)
