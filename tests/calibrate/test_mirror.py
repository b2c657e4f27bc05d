"""A mirrored photo (a selfie camera, a mirrored webcam view) is refused, not scored with left and right swapped."""

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam import settings
from knockcam.calibrate import calibrate
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.mirror import Mirrored, check_not_mirrored, mirror_evidence

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
LIMIT = float(settings.load("calibrate")["mirror"]["min_evidence"])


def _shipped():
    """Every fixture photo and empty-board frame, with its scene's true calibration."""
    for truth in sorted(SCENES.glob("*.json")):
        cal = Calibration.from_dict(json.loads(truth.read_text())["calibration"])
        for photo in (truth.with_suffix(".jpg"), truth.with_name(truth.stem + "_ref.jpg")):
            if photo.exists():
                yield photo, cal


def _mirrored(image: np.ndarray, cal: Calibration, board) -> tuple[np.ndarray, Calibration]:
    """The photo flipped left-right, and the calibration the automatic method finds in it: the flipped
    board's corners taken as they come (its left and right swapped). The lens flips too: its centre
    moves across and the tangential term along x changes sign; the hump is symmetric across the board."""
    width = image.shape[1]
    flip_px = np.array([[-1.0, 0, width - 1], [0, 1, 0], [0, 0, 1]])
    flip_mm = np.array([[-1.0, 0, board.size_mm[0]], [0, 1, 0], [0, 0, 1]])
    lens = {}
    if cal.camera_matrix is not None:
        dist = np.array(cal.dist_coeffs, np.float64).ravel()
        dist[3] = -dist[3]
        lens = {"camera_matrix": flip_px @ np.asarray(cal.camera_matrix) @ np.diag([-1.0, 1, 1]),
                "dist_coeffs": dist}
    flipped = replace(cal, homography=np.asarray(cal.homography) @ flip_mm).moved(flip_px, **lens)
    return cv2.flip(image, 1), flipped


def test_every_shipped_photo_and_frame_reads_as_placed_and_its_mirror_image_as_mirrored(board):
    seen = 0
    for photo, cal in _shipped():
        image = cv2.imread(str(photo))
        assert mirror_evidence(image, cal, board) > LIMIT, photo.name
        assert mirror_evidence(*_mirrored(image, cal, board), board) < -LIMIT, photo.name
        seen += 1
    assert seen >= 20


def test_a_board_without_colour_sets_is_not_called_mirrored(board):
    """No set colours to read (the art grey): nothing says mirrored, so the calibration stands."""
    photo, cal = next(_shipped())
    grey = cv2.cvtColor(cv2.cvtColor(cv2.imread(str(photo)), cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    assert abs(mirror_evidence(grey, cal, board)) < 1.0
    assert check_not_mirrored(grey, cal, board) is cal


def test_the_automatic_method_refuses_a_mirrored_photo(board):
    image = cv2.flip(cv2.imread(str(SCENES / "overhead.jpg")), 1)
    with pytest.raises(Mirrored, match="mirrored.*turn off the camera's mirroring"):
        calibrate(image, board)


def test_a_mirrored_photo_whose_board_is_refused_just_over_the_limit_is_named_mirrored(board):
    """The oblique_60 fixture flipped: its board is placed 3.4 mm over the 3 mm limit, and the colours say why."""
    image = cv2.flip(cv2.imread(str(SCENES / "oblique_60.jpg")), 1)
    with pytest.raises(Mirrored, match="mirrored.*turn off the camera's mirroring"):
        calibrate(image, board)


def test_a_board_found_in_the_wrong_place_is_refused_for_its_error_not_called_mirrored(board):
    """Tuning render 3933 as taken: the automatic method places a board 10.5 mm over the limit in the wrong place,
    where its colour sets agree mirrored by chance; only a board placed near the limit is judged by its colours."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.quality import Refused
    from knockcam.calibrate.scene import make_scene

    image = make_scene(board, 3933).image
    placed = calibrate_auto(image, board)
    assert placed.error_mm > 6 and mirror_evidence(image, placed, board) < -LIMIT  # the case this guards
    with pytest.raises(Refused, match="calibration error .* is over the 3 mm limit") as refused:
        calibrate(image, board)
    assert not isinstance(refused.value, Mirrored)
