"""Training the token verifier: candidates from both detectors, labelled by the render's truth."""

import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.detect import load_model
from knockcam.detect.verify_train import AMBIGUOUS, NONE, photo_examples, scene_examples
from knockcam.synth.scene import config

BOARD = load_board()
GEOMETRY = {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
needs_model = pytest.mark.skipif(load_model() is None, reason="models/tokens.onnx not trained yet")


@needs_model
def test_candidates_carry_both_frames_and_a_label_from_the_truth():
    cut, lean, label, score, weak = scene_examples(BOARD, 220_007, config(), GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 6) and cut.dtype == np.uint8
    assert len(cut) == len(lean) == len(label) == len(score) == len(weak) > 0
    assert set(np.unique(label)) <= {AMBIGUOUS, 0, 1, 2, 3, NONE}
    assert np.sum((label >= 0) & (label < NONE)) >= 2  # real tokens, seen by both detectors at least
    assert np.all(score[weak > 0] < load_model().conf)


@needs_model
def test_the_verifier_of_a_photo_alone_learns_on_the_photos_patch_at_the_models_candidates():
    cut, lean, label, score, weak = photo_examples(BOARD, 330_007, config(), GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 3) and cut.dtype == np.uint8  # the photo only: no empty frame
    assert len(cut) == len(lean) == len(label) == len(score) == len(weak) > 0
    assert set(np.unique(label)) <= {AMBIGUOUS, 0, 1, 2, 3, NONE}
    assert np.sum((label >= 0) & (label < NONE)) >= 2
    assert np.all(score >= load_model().support_conf) and np.all(score[weak > 0] < load_model().conf)
