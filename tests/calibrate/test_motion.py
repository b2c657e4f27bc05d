"""The round-by-round check: a still camera passes; a moved one is measured and re-registered."""

import cv2
import numpy as np

from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.motion import CameraWatch
from knockcam.calibrate.quality import corner_errors_mm


def test_still_camera_then_moved_camera(scene, board):
    watch = CameraWatch(scene.image, scene.truth, board)
    same = watch.check(scene.image)
    assert not same.moved and same.shift_mm < 0.5
    shift = np.array([[1, 0, 14.0], [0, 1, -9.0]])
    moved_img = cv2.warpAffine(scene.image, shift, scene.image.shape[1::-1], borderMode=cv2.BORDER_REFLECT)
    result = watch.check(moved_img)
    assert result.moved and result.shift_mm > 2.0
    truth_moved = Calibration("truth", scene.truth.image_size, np.vstack([shift, [0, 0, 1]]) @ scene.truth.homography)
    assert corner_errors_mm(result.calibration, truth_moved, board).max() < 1.5
