"""Lens calibration from ChArUco photos recovers the focal length of the camera that took them."""

import cv2
import numpy as np
import pytest

from knockcam.calibrate.lens import SQUARE_MM, SQUARES, calibrate_lens, charuco_image
from knockcam.errors import KnockcamError


def _view(board_img, k, rvec, tvec, size):
    ppm = board_img.shape[1] / (SQUARES[0] * SQUARE_MM)
    r, _ = cv2.Rodrigues(np.array(rvec, float))
    h = k @ np.column_stack([r[:, 0], r[:, 1], np.array(tvec, float)])
    to_mm = np.array([[1 / ppm, 0, 0], [0, 1 / ppm, 0], [0, 0, 1]])
    img = cv2.warpPerspective(board_img, h @ to_mm, size, borderValue=200)
    return cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)


def test_focal_length_recovered_from_synthetic_views():
    board_img = charuco_image(100)
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    poses = [((0.3, 0, 0), (-100, -70, 500)), ((0, 0.35, 0.1), (-110, -60, 520)), ((-0.3, 0.2, 0), (-90, -80, 480)),
             ((0.2, -0.3, -0.1), (-100, -75, 540)), ((0.1, 0.1, 0.3), (-95, -90, 500))]
    images = [_view(board_img, k, r, t, (1280, 720)) for r, t in poses]
    cal = calibrate_lens(images)
    assert cal.camera_matrix[0, 0] == pytest.approx(900, rel=0.03)


def test_too_few_views_is_a_clear_error():
    with pytest.raises(KnockcamError, match="at least 3"):
        calibrate_lens([np.zeros((100, 100, 3), np.uint8)])


def test_the_same_photo_given_three_times_is_one_view():
    board_img = charuco_image(100)
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    image = _view(board_img, k, (0.3, 0, 0), (-100, -70, 500), (1280, 720))
    with pytest.raises(KnockcamError, match="found in 1 different photo"):
        calibrate_lens([image, image.copy(), image])
