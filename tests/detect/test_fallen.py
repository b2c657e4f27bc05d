"""The fallen-token networks: the classifier's input and marks, the placer's moves, and the shipped
networks on the fixtures."""

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
from knockcam.settings import load

BOARD = load_board()
SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
needs_classifier = pytest.mark.skipif(not fallen.default_path().is_file(), reason="models/fallen.onnx not trained yet")
needs_pair = pytest.mark.skipif(fallen.load_pair() is None, reason="models/fallen_pair.onnx not trained yet")
needs_placer = pytest.mark.skipif(fallen.load_placer() is None, reason="models/fallen_base.onnx not trained yet")
needs_pair_placer = pytest.mark.skipif(fallen.load_pair_placer() is None,
                                       reason="models/fallen_base_pair.onnx not trained yet")


def scene(name):
    truth = json.loads((SCENES / f"{name}.json").read_text())
    return cv2.imread(str(SCENES / truth["image"])), Calibration.from_dict(truth["calibration"]), truth


def test_without_a_classifier_tokens_are_left_as_they_are():
    image, cal, _ = scene("overhead")
    tokens = [Token("red", (100.0, 300.0), 0.9)]
    assert fallen.mark_fallen(tokens, image, cal, BOARD, None) == tokens


@pytest.mark.parametrize("kind, flag", [(fallen.FallenClassifier, "--fallen"),
                                        (fallen.FallenPairClassifier, "--fallen-pair"),
                                        (fallen.FallenPlacer, "--fallen-base"),
                                        (fallen.FallenPairPlacer, "--fallen-base-pair")])
def test_a_damaged_network_file_is_a_clear_error(tmp_path, kind, flag):
    bad = tmp_path / "network.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(KnockcamError, match=f"retrain it with 'knockcam train {flag}'"):
        kind(bad)


@needs_classifier
def test_the_photo_pairs_kept_patches_give_the_same_chances_as_a_fresh_cut():
    """The last look and the fallen network share the photo's patches (PhotoPair): same input, same marks."""
    from knockcam.detect.patch import PhotoPair, around, network_input

    image, cal, truth = scene("off_board_and_fallen")
    classifier = fallen.load()
    xy = [tuple(t["xy_mm"]) for t in truth["tokens"]]
    pair = PhotoPair(image, cv2.imread(str(SCENES / "off_board_and_fallen_ref.jpg")), cal, BOARD)
    kept = pair.network_input(xy, classifier.geometry)[:, PhotoPair.PHOTO_AND_LEAN]
    fresh = network_input(*around(image, cal, BOARD, xy, classifier.geometry))
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


class Sure(fallen.FallenPairClassifier):
    """A classifier for photo pairs that gives each token the chance it is told, in order."""

    def __init__(self, chances):
        self.path, self.geometry = Path("sure.onnx"), {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
        self.chances = np.array(chances, np.float64)
        self.seen = []

    sees_empty_frame = True

    def probability(self, x):
        self.seen.append(x)
        return self.chances[:len(x)]


def test_the_pair_classifier_sees_both_frames_and_marks_at_its_own_threshold():
    from knockcam.detect.patch import PhotoPair

    image, cal, _ = scene("oblique_60")
    pair = PhotoPair(image, cv2.imread(str(SCENES / "oblique_60_ref.jpg")), cal, BOARD)
    threshold = load("detect")["fallen_pair"]["threshold"]
    tokens = [Token("red", (200.0, 500.0), 0.9), Token("blue", (120.0, 350.0), 0.8)]
    sure = Sure([threshold, threshold - 0.01])
    out = fallen.mark_fallen(tokens, image, cal, BOARD, sure, pair)
    assert [t.fallen for t in out] == [True, False]
    assert np.array_equal(sure.seen[0], pair.network_input([t.xy_mm for t in tokens], sure.geometry))
    assert sure.seen[0].shape == (2, 7, 64, 64)
    with pytest.raises(KnockcamError, match="needs the empty-board frame"):
        fallen.mark_fallen(tokens, image, cal, BOARD, sure)


@pytest.mark.parametrize("section", ["fallen", "fallen_pair"])
def test_a_token_half_believed_lying_is_marked_maybe_fallen_from_its_own_bar(section):
    from knockcam.detect.patch import PhotoPair

    image, cal, _ = scene("oblique_60")
    pair = PhotoPair(image, cv2.imread(str(SCENES / "oblique_60_ref.jpg")), cal, BOARD)
    cfg = load("detect")[section]
    assert 0 < cfg["maybe_above"] < cfg["threshold"]
    classifier = Sure([cfg["maybe_above"], cfg["maybe_above"] - 0.01, cfg["threshold"], cfg["threshold"] - 0.01])
    classifier.section = section
    tokens = [Token("red", (200.0, 500.0), 0.9), Token("blue", (120.0, 350.0), 0.8),
              Token("green", (300.0, 700.0), 0.9), Token("yellow", (250.0, 600.0), 0.9)]
    out = fallen.mark_fallen(tokens, image, cal, BOARD, classifier, pair)
    assert [(t.fallen, t.maybe_fallen) for t in out] == [(False, True), (False, False), (True, False), (False, True)]
    assert [t.xy_mm for t in out] == [t.xy_mm for t in tokens]  # marking moves nothing: place_fallen does


def test_with_an_empty_frame_detect_asks_the_pair_classifier(monkeypatch):
    image, cal, _ = scene("overhead")
    reference = cv2.imread(str(SCENES / "overhead_ref.jpg"))
    sure = Sure([1.0] * 64)
    monkeypatch.setattr(fallen, "load_pair", lambda: sure)
    found = detect(image, cal, BOARD, reference=reference).tokens
    assert sure.seen and found and all(t.fallen for t in found)
    sure.seen.clear()
    detect(image, cal, BOARD).tokens  # no empty frame: the photo-only classifier
    assert not sure.seen


@needs_pair
def test_the_shipped_pair_classifier_marks_lying_tokens_and_leaves_standing_ones():
    """The fixtures (renders it did not learn on) with their empty frames: each lying token's base
    and body middle are marked, and the standing tokens' bases are not."""
    from knockcam.detect.patch import PhotoPair

    classifier = fallen.load_pair()
    marks = {True: [], False: []}
    for name in ["off_board_and_fallen", "all_16_tokens", "overhead", "oblique_60", "touching_and_lines"]:
        image, cal, truth = scene(name)
        pair = PhotoPair(image, cv2.imread(str(SCENES / f"{name}_ref.jpg")), cal, BOARD)
        for t in truth["tokens"]:
            if t["state"] == "off_board" or t["visible"] < 0.5:
                continue
            base = np.array(t["xy_mm"])
            at = [base] if not t["fallen"] else [base, base + 0.5 * (np.array(t["lies_to_mm"]) - base)]
            out = fallen.mark_fallen([Token(t["side"], tuple(p), 0.9) for p in at], image, cal, BOARD, classifier, pair)
            marks[t["fallen"]] += [k.fallen for k in out]
    assert len(marks[True]) >= 4 and np.mean(marks[True]) >= 0.75
    assert len(marks[False]) >= 30 and not any(marks[False])


class Told(fallen.FallenPlacer):
    """A placer that answers what it is told: one (mm ahead, mm right) per lying token, in order."""

    sees_empty_frame = False

    def __init__(self, answers):
        self.path, self.geometry = Path("told.onnx"), {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
        self.answers = np.array(answers, np.float64)
        self.seen = []

    def offsets(self, x):
        self.seen.append(x)
        return self.answers[:len(x), :2], np.ones((len(x), 2))


def test_only_tokens_marked_fallen_move_and_they_move_in_the_patch_frame():
    from knockcam.detect.patch import PhotoPair, directions
    from knockcam.detect.reference import viewpoint

    image, cal, _ = scene("oblique_60")
    tokens = [Token("red", (200.0, 500.0), 0.9, fallen=True, sigma_mm=2.0, source="both"),
              Token("blue", (120.0, 350.0), 0.8), Token("green", (90.0, 250.0), 0.7, fallen=True)]
    told = Told([[12.0, 0.0], [0.0, -9.0]])
    out = fallen.place_fallen(tokens, image, cal, BOARD, told)
    away, across = directions([tokens[0].xy_mm, tokens[2].xy_mm], viewpoint(cal).nadir_mm)
    assert np.allclose(out[0].xy_mm, np.array(tokens[0].xy_mm) + 12.0 * away[0])
    assert np.allclose(out[2].xy_mm, np.array(tokens[2].xy_mm) - 9.0 * across[1])
    assert out[1] == tokens[1]
    assert np.allclose(out[0].xy_px, cal.mm_to_px([out[0].xy_mm])[0])  # the evidence marks where it stands up
    assert (out[0].side, out[0].source, out[0].sigma_mm, out[0].fallen) == ("red", "both", 2.0, True)
    assert told.seen[0].shape == (2, 4, 64, 64)  # the photo only (and the lean): it runs without an empty frame
    pair = PhotoPair(image, cv2.imread(str(SCENES / "oblique_60_ref.jpg")), cal, BOARD)
    assert fallen.place_fallen(tokens, image, cal, BOARD, told, pair) == out
    assert np.array_equal(told.seen[1], told.seen[0])


class ToldPair(Told):
    """A placer for photo pairs that answers what it is told."""

    sees_empty_frame = True


def test_a_placer_for_photo_pairs_sees_both_frames_and_with_the_empty_frame_detect_uses_it(monkeypatch):
    from knockcam.detect.patch import PhotoPair

    image, cal, _ = scene("oblique_60")
    reference = cv2.imread(str(SCENES / "oblique_60_ref.jpg"))
    pair = PhotoPair(image, reference, cal, BOARD)
    tokens = [Token("red", (200.0, 500.0), 0.9, fallen=True)]
    told = ToldPair([[5.0, 0.0]])
    fallen.place_fallen(tokens, image, cal, BOARD, told, pair)
    assert np.array_equal(told.seen[0], pair.network_input([tokens[0].xy_mm], told.geometry))
    with pytest.raises(KnockcamError, match="needs the empty-board frame"):
        fallen.place_fallen(tokens, image, cal, BOARD, told)
    told = ToldPair([[0.0, 0.0]] * 64)
    monkeypatch.setattr(fallen, "load_pair_placer", lambda: told)
    monkeypatch.setattr(fallen, "load_pair", lambda: Sure([1.0] * 64))  # every token marked lying
    assert detect(image, cal, BOARD, reference=reference).tokens and told.seen
    told.seen.clear()
    detect(image, cal, BOARD)  # no empty frame: the photo-only placer
    assert not told.seen


def test_without_a_placer_or_a_lying_token_nothing_moves():
    image, cal, _ = scene("overhead")
    tokens = [Token("red", (100.0, 300.0), 0.9, fallen=True), Token("blue", (150.0, 300.0), 0.9)]
    assert fallen.place_fallen(tokens, image, cal, BOARD, None) == tokens
    told = Told([])
    assert fallen.place_fallen(tokens[1:], image, cal, BOARD, told) == tokens[1:] and not told.seen


def test_a_move_longer_than_a_lying_figure_is_not_made():
    image, cal, _ = scene("overhead")
    limit = load("detect")["fallen_base"]["max_move_mm"]
    tokens = [Token("red", (100.0, 300.0), 0.9, fallen=True), Token("blue", (180.0, 300.0), 0.9, fallen=True)]
    out = fallen.place_fallen(tokens, image, cal, BOARD, Told([[limit * 0.8, limit * 0.8], [limit * 0.6, 0.0]]))
    assert out[0] == tokens[0] and out[1] != tokens[1]


def test_a_lying_token_stood_up_on_a_surer_one_is_that_token_reported_twice():
    apart = load("detect")["fallen_base"]["stood_apart_mm"]
    base = Token("blue", (200.0, 300.0), 0.6, source="both")
    top = Token("red", (200.0 + 0.7 * apart, 300.0), 0.95, fallen=True, source="model_only")  # surer: seen by fewer
    beside = Token("green", (200.0, 300.0 + 1.1 * apart), 0.9, fallen=True, source="both")
    assert fallen.one_report_each([top, base, beside], apart) == [base, beside]
    # of two reports both detectors saw, the more confident stays; two standing tokens are not this rule's
    twice = Token("blue", (200.0 + 0.5 * apart, 300.0), 0.7, fallen=True, source="both")
    assert fallen.one_report_each([base, twice], apart) == [twice]
    standing = Token("blue", (200.0 + 0.5 * apart, 300.0), 0.7, source="both")
    assert fallen.one_report_each([base, standing], apart) == [base, standing]


def test_two_reports_of_a_lying_token_stood_up_on_one_spot_leave_one():
    # the detectors report a lying token at its base and at its top; the placer stands both up at the base
    image, cal, _ = scene("overhead")
    tokens = [Token("red", (100.0, 300.0), 0.9, fallen=True, source="both"),
              Token("red", (100.0, 320.0), 0.5, fallen=True, source="model_only")]
    from knockcam.detect.patch import directions
    from knockcam.detect.reference import viewpoint

    away, across = directions([t.xy_mm for t in tokens], viewpoint(cal).nadir_mm)
    moves = [np.linalg.solve(np.column_stack([away[k], across[k]]), np.array([100.0, 310.0]) - tokens[k].xy_mm)
             for k in range(2)]  # (ahead, right) bringing each to (100, 310)
    out = fallen.place_fallen(tokens, image, cal, BOARD, Told(moves))
    assert len(out) == 1 and out[0].source == "both" and np.allclose(out[0].xy_mm, (100.0, 310.0))


LYING = ["off_board_and_fallen", "all_16_tokens", "cup_cards_banknotes"]  # the fixtures with tokens lying down


@pytest.mark.parametrize("load", [
    pytest.param(fallen.load_placer, marks=needs_placer, id="photo"),
    pytest.param(fallen.load_pair_placer, marks=needs_pair_placer, id="photo_pair")])
def test_the_shipped_placer_brings_lying_tokens_found_on_their_body_nearer_their_base(load):
    """Every lying token of the fixtures (renders it did not learn on), found at the middle of its
    body or at its top, as the detectors report them: each shipped placer (the photo-pair one with
    the empty frame) moves it to its base, the point it is stood back up on."""
    from knockcam.detect.patch import PhotoPair

    placer = load()
    before, after = [], []
    for name in LYING:
        image, cal, truth = scene(name)
        pair = PhotoPair(image, cv2.imread(str(SCENES / f"{name}_ref.jpg")), cal, BOARD) if placer.sees_empty_frame else None
        for t in truth["tokens"]:
            if not t["fallen"] or t["state"] == "off_board":
                continue
            base, top = np.array(t["xy_mm"]), np.array(t["lies_to_mm"])
            starts = [base + 0.5 * (top - base), base + 0.8 * (top - base)]
            # one start at a time: both stand up near the base, where two reports of one token leave one
            placed = [fallen.place_fallen([Token(t["side"], tuple(p), 0.9, fallen=True)], image, cal, BOARD, placer,
                                          pair)[0] for p in starts]
            before += [float(np.hypot(*(p - base))) for p in starts]
            after += [float(np.hypot(*(np.array(k.xy_mm) - base))) for k in placed]
    assert len(before) >= 10
    assert np.median(after) < 0.5 * np.median(before) and np.mean(np.array(after) < np.array(before)) >= 0.8
