"""The committed renders (tests/calibrate/renders/) are knockcam.synth's, as the tests that read them say."""

import json
from pathlib import Path

import cv2
import pytest

from knockcam.synth.scene import make_photo

COMMITTED = sorted((Path(__file__).parent / "renders").glob("*.jpg"))  # what conftest.committed_render reads


def _seed_index(path):
    seed, index = path.stem.split("_")
    return int(seed), int(index)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_the_truth_is_the_renderers(board, path):
    # the camera, the board's pose and its lens do not depend on how OpenCV draws: checked on any version
    _, truth, _ = make_photo(board, *_seed_index(path))
    assert json.loads(path.with_suffix(".json").read_text()) == json.loads(json.dumps(truth["calibration"]))


@pytest.mark.skipif(not cv2.__version__.startswith("5.0."), reason="rendered with OpenCV 5.0, which draws text "
                    "as these were drawn")
@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_the_photo_is_the_renderers_on_opencv_5_0(board, path):
    jpeg, _, _ = make_photo(board, *_seed_index(path))
    assert jpeg == path.read_bytes()


def test_every_committed_render_has_its_truth():
    assert len(COMMITTED) == 3 and all(p.with_suffix(".json").exists() for p in COMMITTED)
