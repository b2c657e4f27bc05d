"""Four given corners: parsed, checked for order, and turned into a homography with an honest estimate."""

import pytest

from knockcam.calibrate.corners import calibrate_corners, parse_corners
from knockcam.calibrate.quality import board_corners_mm, corner_errors_mm, corner_uncertainty_mm
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
    assert 0 < cal.error_mm < 3 and cal.error_source.startswith("estimate")


def test_mirrored_or_scrambled_corners_are_refused(scene, board):
    corners = scene.truth.mm_to_px(board_corners_mm(board))
    with pytest.raises(KnockcamError, match="mirrored"):
        calibrate_corners(corners[::-1], board, scene.truth.image_size)
    with pytest.raises(KnockcamError, match="convex"):
        calibrate_corners(corners[[0, 2, 1, 3]], board, scene.truth.image_size)


def test_error_estimate_grows_with_corner_uncertainty(scene, board):
    small = corner_uncertainty_mm(scene.truth.homography, board, 0.5)
    large = corner_uncertainty_mm(scene.truth.homography, board, 3.0)
    assert large == pytest.approx(6 * small, rel=0.25)
