"""Training the base refiner: candidates near a standing token, each with where its true base lies."""

import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.detect import load_model
from knockcam.detect.patch_train import candidates_in_render
from knockcam.detect.refine_train import photo_examples, scene_examples
from knockcam.settings import load
from knockcam.synth.scene import config

BOARD = load_board()
GEOMETRY = {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
RECIPE = load("detect")["refine"]["train"]
needs_model = pytest.mark.skipif(load_model() is None, reason="models/tokens.onnx not trained yet")


@needs_model
def test_each_candidate_learns_where_the_base_of_the_standing_token_beside_it_is():
    cut, lean, offsets = scene_examples(BOARD, 240_011, config(), GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 6) and cut.dtype == np.uint8
    assert len(cut) == len(lean) == len(offsets) >= 4
    distance = np.hypot(offsets[:, 0], offsets[:, 1])
    assert np.all(distance <= RECIPE["near_mm"]) and np.median(distance) < 3.0
    # the same render: every kept candidate plus its offset (in the patch's frame) is a true standing base
    _, _, calibration, candidates, truth = candidates_in_render(BOARD, 240_011, config(), load_model())
    from knockcam.detect.patch import directions
    from knockcam.detect.reference import viewpoint

    standing = np.array([t.xy_mm for t in truth if not t.fallen and t.visible >= RECIPE["min_visible"]])
    xy = np.array([t.xy_mm for t in candidates])
    near = np.min(np.hypot(*(xy[:, None, :] - standing[None, :, :]).transpose(2, 0, 1)), axis=1) <= RECIPE["near_mm"]
    away, across = directions(xy[near], viewpoint(calibration).nadir_mm)
    bases = xy[near] + offsets[:, :1] * away + offsets[:, 1:] * across
    assert np.allclose(np.min(np.hypot(*(bases[:, None, :] - standing[None, :, :]).transpose(2, 0, 1)), axis=1), 0.0,
                       atol=1e-3)


@needs_model
def test_the_refiner_of_a_photo_alone_learns_on_the_photos_patch_at_the_models_candidates():
    recipe = load("detect")["refine_alone"]["train"]
    cut, lean, offsets = photo_examples(BOARD, 310_011, config(), GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 3) and cut.dtype == np.uint8  # the photo only: no empty frame
    assert len(cut) == len(lean) == len(offsets) >= 4
    distance = np.hypot(offsets[:, 0], offsets[:, 1])
    assert np.all(distance <= recipe["near_mm"]) and np.median(distance) < 3.0
