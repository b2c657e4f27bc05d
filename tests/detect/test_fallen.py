"""The fallen-token classifier: its patch geometry, its input, and the shipped network on the fixtures."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect import Token, detect
from knockcam.detect import fallen
from knockcam.errors import KnockcamError

BOARD = load_board()
SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
needs_classifier = pytest.mark.skipif(not fallen.default_path().is_file(), reason="models/fallen.onnx not trained yet")


def scene(name):
    truth = json.loads((SCENES / f"{name}.json").read_text())
    return cv2.imread(str(SCENES / truth["image"])), Calibration.from_dict(truth["calibration"]), truth


def test_without_a_classifier_tokens_are_left_as_they_are():
    image, cal, _ = scene("overhead")
    tokens = [Token("red", (100.0, 300.0), 0.9)]
    assert fallen.mark_fallen(tokens, image, cal, BOARD, None) == tokens


def test_a_damaged_classifier_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "fallen.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(KnockcamError, match="retrain it with 'knockcam train --fallen'"):
        fallen.FallenClassifier(bad)


@needs_classifier
def test_the_photo_pairs_kept_patches_give_the_same_chances_as_a_fresh_cut():
    """The last look and the fallen network share the photo's patches (PhotoPair): same input, same marks."""
    from knockcam.detect.patch import PhotoPair

    image, cal, truth = scene("off_board_and_fallen")
    classifier = fallen.load()
    xy = [tuple(t["xy_mm"]) for t in truth["tokens"]]
    pair = PhotoPair(image, cv2.imread(str(SCENES / "off_board_and_fallen_ref.jpg")), cal, BOARD)
    kept = pair.network_input(xy, classifier.geometry)[:, PhotoPair.PHOTO_AND_LEAN]
    fresh = fallen.sample(image, cal, BOARD, xy, classifier.geometry)
    assert np.array_equal(kept, fresh)
    tokens = [Token("red", p, 0.9) for p in xy]
    assert fallen.mark_fallen(tokens, image, cal, BOARD, classifier, pair) == \
        fallen.mark_fallen(tokens, image, cal, BOARD, classifier)


def _marked(name):
    image, cal, truth = scene(name)
    found = detect(image, cal, BOARD).tokens
    marks = []
    for t in truth["tokens"]:
        if t["state"] == "off_board" or t["visible"] < 0.5:
            continue
        ends = [t["xy_mm"], t["lies_to_mm"] or t["xy_mm"]]
        near = [k for k in found if min(np.hypot(k.xy_mm[0] - e[0], k.xy_mm[1] - e[1]) for e in ends) < 20]
        marks.append((t["fallen"], any(k.fallen for k in near)))
    return marks


@needs_classifier
def test_the_shipped_classifier_marks_the_lying_tokens_of_the_fixtures():
    marks = _marked("off_board_and_fallen") + _marked("all_16_tokens")
    lying = [m for f, m in marks if f]
    assert len(lying) >= 2 and all(lying)


@needs_classifier
@pytest.mark.parametrize("name", ["overhead", "oblique_60", "touching_and_lines"])
def test_the_shipped_classifier_leaves_standing_tokens_standing(name):
    marks = _marked(name)
    assert marks and not any(m for f, m in marks if not f)
