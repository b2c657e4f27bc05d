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
