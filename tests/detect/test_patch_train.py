"""What the patch networks' training shares: the plan of a run from its recipe."""

import numpy as np
import pytest

from knockcam.detect.patch_train import plan, shifted_offsets
from knockcam.errors import KnockcamError
from knockcam.settings import load


def _member(section, k):
    """The k-th of SECTION.train.members without its file name (None: a section with one network)."""
    if k is None:
        return None
    return {key: v for key, v in load("detect")[section]["train"]["members"][k].items() if key != "file"}


@pytest.mark.parametrize("section, k", [("fallen", None), ("verify", None), ("refine", 0), ("refine", 1)])
def test_a_plan_takes_the_recipe_and_keeps_training_and_held_out_seeds_apart(section, k):
    recipe, geometry, seeds, val_seeds = plan(section, 12, None, 3, _member(section, k))
    assert recipe["epochs"] == 3 and len(seeds) == 12 and len(val_seeds) == recipe["val_scenes"]
    assert min(seeds) >= 100_000 and min(val_seeds) >= 100_000 and not set(seeds) & set(val_seeds)
    assert set(geometry) == {"size_px", "mm_per_px", "behind_mm"}
    with pytest.raises(KnockcamError, match=f"{section}.train seeds"):
        plan(section, 50_000, None, None, _member(section, k))  # so many renders that the training seeds run into the held-out ones


def test_each_base_refiner_learns_on_its_own_renders_from_its_own_start():
    plans = [plan("refine", None, None, None, _member("refine", k)) for k in range(2)]
    (one, _, seeds_one, val_one), (two, _, seeds_two, val_two) = plans
    assert not set(seeds_one) & set(seeds_two) and one["seed"] != two["seed"]
    assert val_one == val_two  # measured on the same held-out renders


def test_an_offset_moves_with_its_patch_when_mirrored_and_shifted():
    step, behind, size = 1.25, 30.0, 64

    def offset_of(row, col):  # knockcam.detect.patch: row 63 is behind_mm towards the camera, columns centred
        return ((size - 1 - row) * step - behind, (col - (size - 1) / 2.0) * step)

    cut = np.zeros((2, size, size), np.float32)
    cut[0, 37, 34] = cut[1, 20, 45] = 1.0  # where each true base is
    y = np.array([offset_of(37, 34), offset_of(20, 45)], np.float32)
    flip, dy, dx = np.array([True, False]), 2, -1
    moved = cut.copy()
    moved[flip] = moved[flip][:, :, ::-1]
    moved = np.roll(moved, (dy, dx), axis=(1, 2))  # as torch.roll in fit
    for k in range(2):
        row, col = np.argwhere(moved[k] == 1.0)[0]
        assert np.allclose(shifted_offsets(y, flip, dy, dx, step)[k], offset_of(row, col))
