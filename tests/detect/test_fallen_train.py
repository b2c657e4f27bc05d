"""Training the fallen-token classifier: its examples come labelled from the renders' truth."""

import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.detect import load_model
from knockcam.detect.fallen_train import scene_examples
from knockcam.synth.fixtures import merge
from knockcam.synth.scene import config

BOARD = load_board()
GEOMETRY = {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
needs_model = pytest.mark.skipif(load_model() is None, reason="models/tokens.onnx not trained yet")


@needs_model
@pytest.mark.parametrize("fallen_p", [0.0, 1.0])
def test_examples_are_labelled_by_the_render_truth(fallen_p):
    cfg = merge(config(), {"tokens": {"fallen_p": fallen_p, "side_present_p": 1.0, "per_side_min": 2},
                           "occluders": {"hand_p": 0.0, "cup_p": 0.0, "card_p": 0.0, "banknote_p": 0.0}})
    cut, lean, y, scores = scene_examples(BOARD, 200_123, cfg, GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 3) and cut.dtype == np.uint8
    assert len(cut) == len(lean) == len(y) == len(scores) >= 4 and np.all(lean >= 0)
    assert np.all(y == fallen_p)


def test_the_network_takes_a_batch_of_patches_and_gives_one_logit_each():
    torch = pytest.importorskip("torch")
    from knockcam.detect.patch_train import network

    out = network(64)(torch.zeros(3, 4, 64, 64))
    assert tuple(out.shape) == (3, 1)


def test_train_fallen_explains_bad_arguments_and_a_missing_extra(capsys):
    import importlib.util

    from knockcam.cli import main

    assert main(["train", "--fallen", "--scenes", "3"]) == 2
    assert "--scenes must be at least 10" in capsys.readouterr().err
    if importlib.util.find_spec("torch") is None:
        assert main(["train", "--fallen", "--scenes", "10"]) == 2
        assert "pip install 'knockcam[train]'" in capsys.readouterr().err
