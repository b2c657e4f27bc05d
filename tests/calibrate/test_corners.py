"""Four given corners: parsed, checked for order, turned into a homography with an honest estimate,
and snapped to the photo's printed lines."""

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.corners import calibrate_corners, corners_text, orders, parse_corners, snap
from knockcam.calibrate.quality import board_corners_mm, board_errors_mm, corner_errors_mm, corner_uncertainty_mm
from knockcam.errors import KnockcamError


def test_parse_corners_accepts_the_documented_form():
    pts = parse_corners("102,655 1180,640.5 930,80 310,85")
    assert pts.shape == (4, 2) and pts[1, 1] == 640.5


@pytest.mark.parametrize("text", ["", "1,2 3,4 5,6", "a,b c,d e,f g,h", "1,2 3,4 5,6 7,8 9,10"])
def test_parse_corners_rejects_anything_else(text):
    with pytest.raises(KnockcamError, match="four x,y"):
        parse_corners(text)


def test_true_corners_give_the_true_calibration(scene, board):
    corners = scene.truth.mm_to_px(board_corners_mm(board))
    cal = calibrate_corners(corners, board, scene.truth.image_size)
    assert corner_errors_mm(cal, scene.truth, board).max() < 1e-3
    assert 0 < cal.error_mm < 6 and cal.error_source.startswith("estimate: at the worst corner")


def test_the_estimate_is_what_corners_a_click_off_are_off_at_the_worst_corner(scene, board):
    """Corners 1.5 px off (the click error the estimate assumes) put the worst corner about the estimate away;
    counted over the whole board, the estimate was 0.6 of that and kept boards over 3 mm off."""
    corners = scene.truth.mm_to_px(board_corners_mm(board))
    rng = np.random.default_rng(5)
    ratios = []
    for _ in range(40):
        cal = calibrate_corners(corners + rng.normal(0, 1.5, (4, 2)), board, scene.truth.image_size)
        ratios.append(corner_errors_mm(cal, scene.truth, board).max() / cal.error_mm)
    assert 0.6 < np.median(ratios) < 1.25


def test_mirrored_or_scrambled_corners_are_refused(scene, board):
    corners = scene.truth.mm_to_px(board_corners_mm(board))
    with pytest.raises(KnockcamError, match="mirrored"):
        calibrate_corners(corners[::-1], board, scene.truth.image_size)
    with pytest.raises(KnockcamError, match="convex"):
        calibrate_corners(corners[[0, 2, 1, 3]], board, scene.truth.image_size)


def test_orders_are_the_four_turns_that_run_like_a_board_seen_from_above(scene, board):
    """Whatever order four corners come in (turned, mirrored, crossed), the board's own order is one of
    the four turns offered, and every turn runs the way a board seen from above does."""
    from knockcam.calibrate.quality import plausible

    corners = scene.truth.mm_to_px(board_corners_mm(board))
    for given in (corners, corners[::-1], np.roll(corners, 2, axis=0), corners[[0, 2, 1, 3]]):
        turns = orders(given)
        assert len(turns) == 4 and sum(np.array_equal(t, corners) for t in turns) == 1
        for turn in turns:
            hom = cv2.findHomography(board_corners_mm(board), turn)[0]
            assert "mirrored" not in (plausible(hom, board, scene.truth.image_size) or "")
    inside = np.array([[0.0, 0], [100, 0], [50, 80], [50, 20]])  # the last point inside the others' triangle
    assert orders(inside) == [] and orders(corners[:3]) == []


def test_corners_text_is_what_parse_corners_reads():
    corners = np.array([[963.705, 168.653], [771.614, 14.589], [416.0, 452.385], [608.861, 608.368]])
    assert corners_text(corners) == "963.7,168.7 771.6,14.6 416,452.4 608.9,608.4"
    assert np.abs(parse_corners(corners_text(corners)) - corners).max() <= 0.05 + 1e-9


def test_error_estimate_grows_with_corner_uncertainty(scene, board):
    small = corner_uncertainty_mm(scene.truth.homography, board, 0.5)
    large = corner_uncertainty_mm(scene.truth.homography, board, 3.0)
    assert large == pytest.approx(6 * small, rel=0.25)


# --- snapped to the printed lines -------------------------------------------------------------
SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"


def _fixture(name):
    truth = Calibration.from_dict(json.loads((SCENES / f"{name}.json").read_text())["calibration"])
    return cv2.imread(str(SCENES / f"{name}.jpg")), truth


def _off_by(truth, board, px, seed=0):
    return truth.corners_px(board.size_mm) + np.random.default_rng(seed).normal(0, px, (4, 2))


def test_corners_a_few_pixels_off_are_snapped_to_the_printed_lines(board):
    """Four points 3 px off put this tilted board 6 mm off somewhere on its face, while their own
    estimate says 3 mm; registered to the printed lines from there, it is within 1 mm."""
    image, truth = _fixture("touching_and_lines")
    given = calibrate_corners(_off_by(truth, board, 3.0), board, truth.image_size)
    snapped = snap(image, given, board)
    assert board_errors_mm(given, truth, board).max() > 5.0
    assert board_errors_mm(snapped, truth, board).max() < 1.0
    assert snapped.method == "corners" and snapped.error_source.startswith("the given corners snapped to the printed")
    assert snapped.error_mm < 3.0


def test_clicked_corners_keep_their_method_and_a_given_lens_is_used(board):
    image, truth = _fixture("lens_distortion")
    given = calibrate_corners(_off_by(truth, board, 1.5), board, truth.image_size, "click",
                              truth.camera_matrix, truth.dist_coeffs)
    snapped = snap(image, given, board)
    assert snapped.method == "click" and snapped.dist_coeffs is not None
    assert board_errors_mm(snapped, truth, board).max() < board_errors_mm(given, truth, board).max()
    assert board_errors_mm(snapped, truth, board).max() < 2.0


@pytest.mark.parametrize("px", [0.0, 1.5])
def test_corners_of_a_photo_through_an_unknown_lens_snap_with_the_lens_read_off_the_lines(board, px):
    """A wide lens bends the board's edges, so the edges the corners start from disagree with the
    printed grid, which then does not confirm them; the lens read off the lines from where the grid
    fitted best places the board (from the bent edges it read a weaker lens, 15 mm off)."""
    image, truth = _fixture("lens_distortion")
    snapped = snap(image, calibrate_corners(_off_by(truth, board, px, seed=1), board, truth.image_size), board)
    assert snapped.error_source.startswith("the given corners snapped to the printed lines")
    assert snapped.dist_coeffs is not None and snapped.dist_coeffs[0] < -0.3  # the truth: -0.35 at 1280 px
    assert board_errors_mm(snapped, truth, board).max() < 3.0


def test_corners_the_printed_lines_do_not_confirm_are_kept_as_given(board):
    _, truth = _fixture("touching_and_lines")
    blank = np.full((truth.image_size[1], truth.image_size[0], 3), 128, np.uint8)
    given = calibrate_corners(_off_by(truth, board, 1.5), board, truth.image_size)
    kept = snap(blank, given, board)
    assert np.allclose(kept.homography, given.homography) and kept.error_mm == given.error_mm
    assert kept.error_source.endswith("the printed lines did not confirm the corners")


def test_lines_matched_far_from_the_given_corners_are_not_used(board, monkeypatch):
    """A registration one printed line off moves the corners by a whole space: no click is that far off."""
    from knockcam.calibrate import auto

    image, truth = _fixture("touching_and_lines")
    given = calibrate_corners(_off_by(truth, board, 1.5), board, truth.image_size)
    shifted = np.array([[1.0, 0, 60.0], [0, 1.0, 0], [0, 0, 1.0]]) @ given.homography
    monkeypatch.setattr(auto, "snap_to_grid", lambda *a, **k: replace(given, homography=shifted, error_mm=0.5))
    kept = snap(image, given, board)
    assert np.allclose(kept.homography, given.homography) and kept.error_mm == given.error_mm
    assert "matched 60 px away" in kept.error_source and kept.error_source.endswith("used as given")


def test_snapping_can_be_turned_off(board, monkeypatch):
    from knockcam import settings as knockcam_settings

    monkeypatch.setitem(knockcam_settings.load("calibrate")["corners"], "snap", False)
    image, truth = _fixture("touching_and_lines")
    given = calibrate_corners(_off_by(truth, board, 3.0), board, truth.image_size)
    assert snap(image, given, board) is given


def test_score_with_corners_uses_the_snapped_board(board):
    """The one entry point (calibrate(corners=...)) that knockcam score and calibrate use snaps too."""
    from knockcam.calibrate import calibrate

    image, truth = _fixture("all_16_tokens")
    cal = calibrate(image, board, corners=_off_by(truth, board, 3.0))
    assert cal.method == "corners" and board_errors_mm(cal, truth, board).max() < 1.5


def test_the_worst_corner_estimate_exceeds_the_board_average(scene, board):
    # the corners lie at the board's ends, where a corner's error is largest; over the board it averages down
    over_board = corner_uncertainty_mm(scene.truth.homography, board, 1.5)
    at_corner = corner_uncertainty_mm(scene.truth.homography, board, 1.5, worst_corner=True)
    assert at_corner > 1.2 * over_board
