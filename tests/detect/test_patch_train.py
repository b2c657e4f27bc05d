"""What the patch networks' training shares: the plan of a run from its recipe."""

import pytest

from knockcam.detect.patch_train import plan
from knockcam.errors import KnockcamError


@pytest.mark.parametrize("section", ["fallen", "verify"])
def test_a_plan_takes_the_recipe_and_keeps_training_and_held_out_seeds_apart(section):
    recipe, geometry, seeds, val_seeds = plan(section, 12, None, 3)
    assert recipe["epochs"] == 3 and len(seeds) == 12 and len(val_seeds) == recipe["val_scenes"]
    assert min(seeds) >= 100_000 and min(val_seeds) >= 100_000 and not set(seeds) & set(val_seeds)
    assert set(geometry) == {"size_px", "mm_per_px", "behind_mm"}
    with pytest.raises(KnockcamError, match=f"{section}.train seeds"):
        plan(section, 50_000, None, None)  # so many renders that the training seeds run into the held-out ones
