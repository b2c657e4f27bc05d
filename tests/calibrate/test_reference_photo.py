"""A calibrated reference photo registers another photo of the same board from another camera."""

import numpy as np
import pytest

from knockcam.calibrate.quality import corner_errors_mm
from knockcam.calibrate.reference import calibrate_reference
from knockcam.calibrate.scene import make_scene
from knockcam.errors import KnockcamError


def test_reference_registration_is_within_targets(scene, board):
    ref = make_scene(board, 104, art_seed=scene.art_seed, tokens=0)
    cal = calibrate_reference(scene.image, ref.image, ref.truth, board)
    err = corner_errors_mm(cal, scene.truth, board)
    assert np.median(err) <= 1.0 and err.max() <= 3.0
    assert cal.method == "reference" and cal.error_source.startswith("residual")


def test_a_photo_of_something_else_is_refused(scene, board):
    other = (np.random.default_rng(0).random(scene.image.shape) * 255).astype(np.uint8)
    with pytest.raises(KnockcamError, match="not recognised|features"):
        calibrate_reference(other, scene.image, scene.truth, board)


def test_a_phone_size_photo_registers_to_a_webcam_size_reference(scene, board):
    """The first feature match runs on the photo scaled down to calibrate.yaml photo.max_px (SIFT on
    12 MP takes seconds); its keypoints come back in the big photo's pixels, so the board lands as well."""
    import cv2

    from knockcam.calibrate.reference import _features

    ref = make_scene(board, 104, art_seed=scene.art_seed, tokens=0)
    size = (scene.image.shape[1] * 3, scene.image.shape[0] * 3)
    big = cv2.resize(scene.image, size, interpolation=cv2.INTER_CUBIC)
    small_pts, _ = _features(cv2.cvtColor(scene.image, cv2.COLOR_BGR2GRAY), None, 200)
    big_pts, _ = _features(cv2.cvtColor(big, cv2.COLOR_BGR2GRAY), None, 200, scaled=True)
    expected = (small_pts + 0.5) * 3 - 0.5  # the same features, in the big photo's pixels
    nearest = np.linalg.norm(big_pts[:, None] - expected[None], axis=2).min(axis=1)
    assert big_pts[:, 0].max() > scene.image.shape[1] and np.median(nearest) < 1.0
    cal = calibrate_reference(big, ref.image, ref.truth, board)
    assert cal.image_size == size
    err = corner_errors_mm(cal, scene.truth.resized(size), board)
    assert np.median(err) <= 1.0 and err.max() <= 3.0
