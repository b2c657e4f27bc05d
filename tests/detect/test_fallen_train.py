"""Training the fallen-token networks: their examples come labelled from the renders' truth."""

import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.detect import load_model
from knockcam.detect.fallen_train import (balanced, pair_examples, pair_placement_examples, placement_examples,
                                          scene_examples)
from knockcam.settings import load
from knockcam.synth.scene import merge
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


@needs_model
def test_the_placer_learns_where_a_lying_tokens_base_is_from_candidates_on_its_body():
    from knockcam.detect.patch import directions
    from knockcam.detect.patch_train import candidates_in_render
    from knockcam.detect.reference import viewpoint

    recipe = load("detect")["fallen_base"]["train"]
    cfg = merge(config(), {"tokens": {"fallen_p": 0.5, "side_present_p": 1.0, "per_side_min": 2}})
    cut, lean, offsets, lying = placement_examples(BOARD, 280_007, cfg, GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 3) and cut.dtype == np.uint8
    assert len(cut) == len(lean) == len(offsets) == len(lying) and lying.sum() >= 2 and (lying == 0).sum() >= 2
    distance = np.hypot(*offsets.T)
    assert np.all(distance[lying == 0] <= recipe["near_mm"]) and np.median(distance[lying == 1]) > 5
    # the same render: each candidate plus its offset (in the patch's frame) is a true base of the right kind
    _, _, calibration, candidates, truth = candidates_in_render(BOARD, 280_007, cfg, load_model())
    seen = [t for t in truth if t.visible >= recipe["min_visible"]]
    kept = []
    for p in np.array([t.xy_mm for t in candidates]):
        body = [np.hypot(*(p - _nearest_on_body(p, t))) for t in seen]
        k = int(np.argmin(body))
        near = recipe["lying_near_mm"] if seen[k].fallen else recipe["near_mm"]
        if body[k] <= near:
            kept.append((p, seen[k].xy_mm, seen[k].fallen))
    assert len(kept) == len(cut)
    start = np.array([k[0] for k in kept])
    away, across = directions(start, viewpoint(calibration).nadir_mm)
    landed = start + offsets[:, :1] * away + offsets[:, 1:] * across
    assert np.allclose(landed, [k[1] for k in kept], atol=1e-3)
    assert np.array_equal(lying, [float(k[2]) for k in kept])
    # the placer for photo pairs learns the same offsets, from the photo's and the empty frame's patches
    cut2, lean2, offsets2, lying2 = pair_placement_examples(BOARD, 280_007, cfg, GEOMETRY, load_model())
    assert cut2.shape[1:] == (64, 64, 6) and np.array_equal(cut2[..., :3], cut)
    assert np.array_equal(offsets2, offsets) and np.array_equal(lying2, lying) and np.array_equal(lean2, lean)


def _nearest_on_body(p, token):
    """The nearest point to ``p`` of a true token: its base, or for one lying down its body's axis."""
    a = np.asarray(token.xy_mm, np.float64)
    b = np.asarray(token.lies_to_mm if token.lies_to_mm is not None else token.xy_mm, np.float64)
    axis = b - a
    t = np.clip(np.dot(p - a, axis) / max(np.dot(axis, axis), 1e-12), 0.0, 1.0)
    return a + t * axis


def test_the_placer_learns_on_every_lying_example_and_as_many_standing_ones_drawn_at_random():
    lying = np.array([0, 1, 0, 0, 1, 0, 0, 0, 1, 0], np.float64)
    rows = balanced(lying, 1.0, seed=0)
    assert set(np.where(lying == 1)[0]) <= set(rows) and len(rows) == 6 and list(rows) == sorted(rows)
    assert np.array_equal(rows, balanced(lying, 1.0, seed=0))
    assert len(balanced(lying, 0.5, seed=0)) == 4 and len(balanced(lying, 9.0, seed=0)) == 10


@needs_model
def test_the_pair_classifier_learns_on_candidates_near_a_true_token_labelled_by_it():
    """Both frames' patches side by side, each candidate within near_mm of a true base or lying body,
    lying exactly when the nearest true token lies."""
    from knockcam.detect.patch_train import candidates_in_render

    near = load("detect")["fallen_pair"]["train"]["near_mm"]
    cfg = merge(config(), {"tokens": {"fallen_p": 0.5, "side_present_p": 1.0, "per_side_min": 2}})
    cut, lean, lying = pair_examples(BOARD, 260_011, cfg, GEOMETRY, load_model())
    assert cut.shape[1:] == (64, 64, 6) and cut.dtype == np.uint8
    assert len(cut) == len(lean) == len(lying) and lying.sum() >= 2 and (lying == 0).sum() >= 2
    # the empty frame's half shows no token where the photo's does
    assert np.mean(np.abs(cut[..., :3].astype(int) - cut[..., 3:].astype(int))) > 5
    _, _, _, candidates, truth = candidates_in_render(BOARD, 260_011, cfg, load_model())
    kept = []
    for p in np.array([t.xy_mm for t in candidates]):
        body = [np.hypot(*(p - _nearest_on_body(p, t))) for t in truth]
        k = int(np.argmin(body))
        if body[k] <= near:
            kept.append(float(truth[k].fallen))
    assert kept == list(lying)
