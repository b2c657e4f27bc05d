"""The second look with the empty-board frame: which one-detector tokens go, which weak candidates stay."""

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.assign import DISAGREEMENT, UNSURE, assign
from knockcam.detect import Token, verify
from knockcam.detect.patch import PhotoPair
from knockcam.detect.verify_train import NONE, nearest_true
from knockcam.errors import KnockcamError
from knockcam.settings import load

BOARD = load_board()
SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
GEOMETRY = {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}
CFG = load("detect")["verify"]
ALONE = load("detect")["verify_alone"]


def scene(name):
    truth = json.loads((SCENES / f"{name}.json").read_text())
    return (cv2.imread(str(SCENES / truth["image"])), cv2.imread(str(SCENES / f"{name}_ref.jpg")),
            Calibration.from_dict(truth["calibration"]))


class Told:
    """A verifier that answers what it is told, by the candidate's x (mm)."""

    def __init__(self, answers):
        self.answers, self.mirrored = answers, []

    def chances(self, pair, xy_mm, mirrored=False):
        self.mirrored.append(mirrored)
        return np.array([self.answers[round(float(x))] for x, _ in xy_mm])


def look(tokens, weak, answers):
    image, reference, cal = scene("overhead")
    return verify.second_look(tokens, weak, PhotoPair(image, reference, cal, BOARD), Told(answers))


SURE_NONE = [0.0, 0.0, 0.0, 0.0, 1.0]
SURE_BLUE = [0.0, 0.0, 0.02, 0.97, 0.01]


def test_without_a_verifier_nothing_changes():
    image, reference, cal = scene("overhead")
    tokens = [Token("red", (100.0, 300.0), 0.9, source="model_only")]
    assert verify.second_look(tokens, [], PhotoPair(image, reference, cal, BOARD), None) == tokens


SURE_YELLOW = [0.0, 0.98, 0.0, 0.0, 0.02]
SURE_GREEN = [0.0, 0.0, 0.99, 0.0, 0.01]


def test_a_token_not_both_detectors_saw_goes_where_the_verifier_sees_none():
    tokens = [Token("red", (100.0, 300.0), 0.9, source="model_only"),
              Token("green", (200.0, 300.0), 0.7, source="reference_only"),
              Token("yellow", (300.0, 300.0), 0.9, source="both"),       # both saw it: kept
              Token("blue", (400.0, 300.0), 0.9, source="model_only"),
              Token("red", (-50.0, 300.0), 0.9, source="model")]         # off the board, only the model looks
    barely = [0.0, 0.0, 0.0, 0.03, 0.97]  # a 3% chance of a token: not sure enough that none is there
    kept = look(tokens, [], {100: SURE_NONE, 200: SURE_GREEN, 300: SURE_NONE, 400: barely, -50: SURE_NONE})
    assert [(t.side, t.source) for t in kept] == [("green", "reference_only"), ("yellow", "both"), ("blue", "model_only")]


def test_a_token_only_one_detector_saw_is_verified_when_the_verifier_is_sure_of_its_colour():
    certain = [0.0, 0.0, 0.9995, 0.0, 0.0005]
    tokens = [Token("green", (100.0, 300.0), 0.9, source="model_only"),
              Token("green", (200.0, 300.0), 0.7, source="reference_only"),
              Token("green", (300.0, 300.0), 0.9, source="model_only"),  # sure, but not sure enough
              Token("green", (400.0, 300.0), 0.9, source="both")]
    kept = look(tokens, [], {100: certain, 200: certain, 300: SURE_GREEN, 400: certain})
    assert [t.source for t in kept] == ["verified", "verified", "model_only", "both"]
    assert [DISAGREEMENT in p.flags for p in assign(kept, BOARD)] == [False, False, True, False]


def test_a_token_the_verifier_is_sure_is_of_another_side_takes_that_side_flagged():
    tokens = [Token("red", (100.0, 300.0), 0.97, source="both"), Token("green", (200.0, 300.0), 0.9, source="both")]
    doubt = [0.0, 0.5, 0.0, 0.0, 0.5]  # yellow at most even odds: not sure enough to change anything
    kept = look(tokens, [], {100: SURE_YELLOW, 200: doubt})
    assert [(t.side, t.source) for t in kept] == [("yellow", "conflict"), ("green", "both")]


def test_a_lone_weak_candidate_the_verifier_vouches_for_is_kept_flagged_in_its_colour():
    tokens = [Token("yellow", (300.0, 300.0), 0.9, source="both")]
    weak = [Token("green", (100.0, 500.0), 0.04), Token("red", (310.0, 300.0), 0.05),
            Token("green", (103.0, 505.0), 0.03)]
    kept = look(tokens, weak, {300: SURE_YELLOW, 100: SURE_BLUE, 103: SURE_BLUE})
    assert len(kept) == 2  # the one beside the found token is that token; two at one place are one
    added = kept[1]
    assert added.side == "blue" and added.unsure and added.source == "model_only"
    assert added.confidence == pytest.approx(0.99)


def test_a_weak_candidate_is_kept_only_when_the_verifier_finds_a_token_there():
    unsure = [0.0, 0.0, 0.0, CFG["keep_weak_above"] - 0.01, 1.01 - CFG["keep_weak_above"]]
    assert look([], [Token("blue", (100.0, 500.0), 0.04)], {100: unsure}) == []


def test_the_network_sees_the_photo_the_empty_frame_and_the_lean():
    image, reference, cal = scene("oblique_60")
    x = PhotoPair(image, reference, cal, BOARD).network_input([[200.0, 400.0], [100.0, 700.0]], GEOMETRY)
    assert x.shape == (2, 7, 64, 64) and x.dtype == np.float32
    assert np.all(x[:, 6] > 0)


def test_a_damaged_verifier_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "verify.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(KnockcamError, match="retrain it with 'knockcam train --verify'"):
        verify.TokenVerifier(bad)


def test_training_labels_come_from_the_nearest_true_base_or_lying_body():
    from knockcam.bench import TrueToken

    truth = (TrueToken("red", (100.0, 100.0), None, "no_space", False),
             TrueToken("blue", (300.0, 300.0), None, "no_space", True, lies_to_mm=(300.0, 330.0)))
    side, dist = nearest_true(np.array([[104.0, 103.0], [301.0, 325.0], [200.0, 200.0]]), truth)
    assert list(side[:2]) == [0, 3]
    assert dist[0] == pytest.approx(5.0) and dist[1] == pytest.approx(1.0) and dist[2] > 100
    side, dist = nearest_true(np.array([[1.0, 2.0]]), ())
    assert side[0] == NONE and np.isinf(dist[0])


def test_train_verify_explains_bad_arguments(capsys):
    from knockcam.cli import main

    assert main(["train", "--verify", "--fallen"]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(["train", "--verify", "--scenes", "3"]) == 2
    assert "--scenes must be at least 10" in capsys.readouterr().err


needs_verifier = pytest.mark.skipif(not verify.default_path().is_file(), reason="models/verify.onnx not trained yet")
SHIPPED = [pytest.param(False, marks=needs_verifier, id="with empty frame"),
           pytest.param(True, marks=pytest.mark.skipif(not verify.alone_path().is_file(),
                                                    reason="models/verify_alone.onnx not trained yet"), id="photo alone")]


@pytest.mark.parametrize("alone", SHIPPED)
@pytest.mark.parametrize("name", ["touching_and_lines", "all_16_tokens", "oblique_60"])
def test_the_shipped_verifiers_find_the_fixtures_tokens_in_their_colours_and_none_on_bare_board(name, alone):
    """Each verifier (with the empty frame, and of a photo alone) sees the tokens in their colours where it
    would keep them, and no token on bare board."""
    image, reference, cal = scene(name)
    truth = json.loads((SCENES / f"{name}.json").read_text())["tokens"]
    seen = [t for t in truth if t["visible"] >= 0.5 and not t["fallen"] and t["state"] != "off_board"]
    bases = np.array([t["xy_mm"] for t in truth])
    grid = np.array([[x, y] for x in range(40, 400, 60) for y in range(60, 900, 60)], np.float64)
    bare = grid[np.min(np.hypot(*(grid[:, None, :] - bases[None, :, :]).transpose(2, 0, 1)), axis=1) > 60]
    verifier, pair = ((verify.load_alone(), PhotoPair(image, None, cal, BOARD)) if alone
                      else (verify.load(), PhotoPair(image, reference, cal, BOARD)))
    p = verifier.chances(pair, [t["xy_mm"] for t in seen] + bare.tolist())
    tokens, empty = p[:len(seen)], p[len(seen):]
    sides = [("red", "yellow", "green", "blue").index(t["side"]) for t in seen]
    assert np.mean(tokens[:, :NONE].argmax(axis=1) == sides) >= 0.9
    # with the empty frame: a weak candidate there would be kept; alone: the model's token would not be doubted
    kept = 1 - tokens[:, NONE] >= (ALONE["drop_below"] if alone else CFG["keep_weak_above"])
    assert np.mean(kept) >= (0.95 if alone else 0.9)
    assert len(bare) >= 20 and np.mean(empty[:, NONE] > 0.5) >= 0.95


def test_a_doubted_token_closer_than_a_base_to_one_of_its_side_is_that_token_seen_twice():
    doubted = [0.0, 0.0, 0.0, 0.04, 0.96]  # 4%: kept alone, but not beside a surer token of its side
    base = BOARD.token.base_diameter_mm
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="both"),
              Token("blue", (100.0 + base - 5, 300.0), 0.9, source="both"),   # beside it: seen twice
              Token("blue", (300.0, 300.0), 0.9, source="both"),
              Token("blue", (300.0 + base + 5, 300.0), 0.9, source="model_only"),  # a base apart: two tokens
              Token("red", (500.0, 300.0), 0.9, source="both"),
              Token("blue", (500.0 + base - 5, 300.0), 0.9, source="reference_only")]  # another side
    answers = {100: SURE_BLUE, round(100 + base - 5): doubted, 300: SURE_BLUE, round(300 + base + 5): doubted,
               500: [0.97, 0.0, 0.0, 0.0, 0.03], round(500 + base - 5): doubted}
    kept = look(tokens, [], answers)
    assert [t.xy_mm[0] for t in kept] == [100.0, 300.0, 300.0 + base + 5, 500.0, 500.0 + base - 5]


LAST = CFG["last_look"]
WITHIN = LAST["lying_twice_mm"]


def last(tokens, answers, hidden=()):
    image, reference, cal = scene("overhead")
    return verify.last_look(tokens, PhotoPair(image, reference, cal, BOARD), Told(answers), hidden)


def chance_of_blue(p):
    return [0.0, 0.0, 0.0, p, 1.0 - p]


def test_a_lying_token_seen_twice_is_reported_once_the_surer_report_kept():
    close = WITHIN - 4
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="model_only", fallen=True),
              Token("blue", (100.0 + close, 300.0), 0.9, source="both", fallen=True),  # the same body: kept
              Token("red", (300.0, 300.0), 0.9, source="both"),
              Token("red", (300.0 + close, 300.0), 0.9, source="model_only", fallen=True),  # a figure's top
              Token("green", (500.0, 300.0), 0.9, source="both"),
              Token("blue", (500.0 + close, 300.0), 0.9, source="both", fallen=True),  # another side: kept
              Token("yellow", (700.0, 300.0), 0.9, source="both"),
              Token("yellow", (700.0 + WITHIN + 4, 300.0), 0.9, source="both", fallen=True)]  # further: kept
    sure = {"blue": SURE_BLUE, "red": [0.97, 0.0, 0.0, 0.0, 0.03], "green": SURE_GREEN, "yellow": SURE_YELLOW}
    kept = last(tokens, {round(t.xy_mm[0]): sure[t.side] for t in tokens})
    assert [t.xy_mm[0] for t in kept] == [100.0 + close, 300.0, 500.0, 500.0 + close, 700.0, 700.0 + WITHIN + 4]


def test_a_report_the_verifier_doubts_does_not_outrank_one_it_believes():
    """Two detectors and a doubt (a phantom beside the lying token) lose to one detector and belief."""
    doubted = chance_of_blue(LAST["believed_above"] - 0.1)
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="both", fallen=True),
              Token("blue", (100.0 + WITHIN - 2, 300.0), 0.9, source="model_only", fallen=True)]
    kept = last(tokens, {100: doubted, round(100 + WITHIN - 2): SURE_BLUE})
    assert [t.source for t in kept] == ["model_only"]


def test_a_standing_token_closer_to_a_surer_one_of_its_side_than_two_bases_can_be_is_that_token_seen_twice():
    close, apart = LAST["standing_twice_mm"] - 2, LAST["standing_twice_mm"] + 2
    assert apart < WITHIN < BOARD.token.base_diameter_mm
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="both"),
              Token("blue", (100.0 + close, 300.0), 0.9, source="model_only"),  # the weak candidate beside it
              Token("red", (300.0, 300.0), 0.9, source="model_only"),
              Token("red", (300.0 + close, 300.0), 0.9, source="both"),  # surer: kept, the other one goes
              Token("green", (500.0, 300.0), 0.9, source="both"),
              Token("blue", (500.0 + close, 300.0), 0.9, source="model_only"),  # another side: kept
              Token("yellow", (700.0, 300.0), 0.9, source="both"),
              Token("yellow", (700.0 + apart, 300.0), 0.9, source="model_only")]  # further (a lying one would go)
    sure = {"blue": SURE_BLUE, "red": [0.97, 0.0, 0.0, 0.0, 0.03], "green": SURE_GREEN, "yellow": SURE_YELLOW}
    kept = last(tokens, {round(t.xy_mm[0]): sure[t.side] for t in tokens})
    assert [t.xy_mm[0] for t in kept] == [100.0, 300.0 + close, 500.0, 500.0 + close, 700.0, 700.0 + apart]


def test_without_a_verifier_the_last_look_changes_nothing():
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="both"),
              Token("blue", (105.0, 300.0), 0.9, source="model_only", fallen=True)]
    image, reference, cal = scene("overhead")
    assert verify.last_look(tokens, PhotoPair(image, reference, cal, BOARD), None) == tokens


def test_doubted_tokens_are_dropped_only_where_one_detector_saw_them_or_beside_a_hidden_area():
    from knockcam.detect.tokens import HiddenArea

    one, near = LAST["drop_one_below"], LAST["drop_near_hidden_below"]
    cup = HiddenArea(outline_mm=((600.0, 280.0), (660.0, 280.0), (660.0, 340.0), (600.0, 340.0)), area_mm2=3600.0)
    beside_cup = 660.0 + LAST["near_hidden_mm"] - 2  # x of a token just beside the cup
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="model_only"),      # one detector, doubted: dropped
              Token("blue", (200.0, 300.0), 0.9, source="reference_only"),  # one detector, a little surer: kept
              Token("blue", (300.0, 300.0), 0.9, source="both"),            # both, as doubted, in the open: kept
              Token("blue", (beside_cup, 300.0), 0.9, source="both"),       # both, doubted, beside the cup: dropped
              Token("blue", (630.0, 310.0), 0.9, source="both"),            # on the cup, believed: kept
              Token("blue", (800.0, 300.0), 0.9, source="both")]            # far from the cup, doubted: kept
    answers = {100: chance_of_blue(one / 2), 200: chance_of_blue(one * 1.5), 300: chance_of_blue(one / 2),
               round(beside_cup): chance_of_blue(near / 2), 630: SURE_BLUE, 800: chance_of_blue(near / 2)}
    kept = last(tokens, answers, hidden=(cup,))
    assert [t.xy_mm[0] for t in kept] == [200.0, 300.0, 630.0, 800.0]
    # no hidden area: only the first goes; the one both detectors saw and the verifier doubts is kept, flagged
    assert last(tokens, answers) == [replace(t, unsure=t.xy_mm[0] == 300.0) for t in tokens if t.xy_mm[0] != 100.0]


def test_a_token_both_detectors_saw_that_the_verifier_doubts_is_kept_flagged_unsure():
    below = LAST["unsure_below"]
    tokens = [Token("blue", (100.0, 500.0), 0.9, source="both"),      # doubted: kept, flagged
              Token("blue", (300.0, 500.0), 0.9, source="both"),      # a little surer: as it was
              Token("blue", (60.0, 400.0), 0.9, source="verified")]   # doubted at the last look: flagged too
    assert not any(p.ambiguous for p in assign(tokens, BOARD))      # each well inside a space
    answers = {100: chance_of_blue(below / 2), 300: chance_of_blue(below * 1.5), 60: chance_of_blue(below / 2)}
    kept = last(tokens, answers)
    assert [t.unsure for t in kept] == [True, False, True]
    assert [p.ambiguous for p in assign(kept, BOARD)] == [True, False, True]
    assert [UNSURE in p.flags for p in assign(kept, BOARD)] == [True, False, True]


def test_a_token_the_verifier_believes_is_of_another_side_takes_that_side_flagged():
    share = LAST["recolour_share"]
    tokens = [Token("blue", (100.0, 300.0), 0.9, source="model_only"),
              Token("blue", (200.0, 300.0), 0.9, source="both"),
              Token("blue", (300.0, 300.0), 0.9, source="both")]
    green = 0.8
    answers = {100: [0.0, 0.0, green, 0.0, 1 - green],                                # sure it is green
               200: [0.0, 0.0, green * share - 0.05, green * (1 - share) + 0.05, 0.2],  # green, not by enough
               300: [0.0, 0.0, LAST["believed_above"] - 0.05, 0.0, 0.55]}            # believed too little
    kept = last(tokens, answers)
    assert [t.side for t in kept] == ["green", "blue", "blue"]
    assert kept[0].source == "conflict" and DISAGREEMENT in assign(kept, BOARD)[0].flags


class ByPlace:
    """A verifier whose chances depend on where it looks (``answer(xy)``); it keeps the points it was shown."""

    def __init__(self, answer):
        self.answer, self.shown = answer, []

    def chances(self, pair, xy_mm):
        self.shown += [tuple(p) for p in xy_mm]
        return np.array([self.answer(p) for p in xy_mm])


class Changed:
    """An empty-board comparison that finds this share of every disc changed."""

    def __init__(self, share):
        self.share = share

    def changed_share(self, xy_mm, radius_mm):
        return self.share


RING = BOARD.token.base_diameter_mm + CFG["beside"]["gap_mm"]


def beside(tokens, verifier, share=1.0):
    image, reference, cal = scene("overhead")
    return verify.tokens_beside(tokens, PhotoPair(image, reference, cal, BOARD), verifier, Changed(share))


def blue_at(place):
    return lambda xy: SURE_BLUE if np.hypot(xy[0] - place[0], xy[1] - place[1]) < 3 else SURE_NONE


def test_a_token_touching_a_found_one_is_reported_in_its_colour_and_flagged():
    found = [Token("red", (200.0, 400.0), 0.9, source="both")]
    out = beside(found, ByPlace(blue_at((200.0 + RING, 400.0))))
    assert len(out) == 1
    assert out[0].side == "blue" and out[0].xy_mm == pytest.approx((200.0 + RING, 400.0))
    assert out[0].source == "verifier_only" and out[0].unsure
    position = assign(found + out, BOARD)[1]
    assert position.ambiguous and DISAGREEMENT in position.flags


def test_nothing_is_looked_at_where_the_photo_shows_the_empty_board():
    verifier = ByPlace(lambda xy: SURE_BLUE)
    assert beside([Token("red", (200.0, 400.0), 0.9, source="both")], verifier, share=0.0) == []
    assert verifier.shown == []


def test_points_near_a_found_token_or_a_lying_one_are_not_looked_at():
    height = BOARD.token.height_mm
    standing, lying = (200.0, 400.0), (200.0, 400.0 + RING + 20.0)
    verifier = ByPlace(lambda xy: SURE_NONE)
    found = [Token("red", standing, 0.9, source="both"), Token("green", lying, 0.9, source="both", fallen=True)]
    assert beside(found, verifier) == []
    shown = np.array(verifier.shown)
    assert 6 <= len(shown) < CFG["beside"]["directions"]
    assert np.allclose(np.hypot(*(shown - standing).T), RING)  # around the standing token only
    assert np.all(np.hypot(*(shown - lying).T) > height)


def test_where_two_tokens_rings_meet_one_token_is_reported():
    a, b = (200.0, 400.0), (200.0 + 2 * RING, 400.0)
    out = beside([Token("red", a, 0.9), Token("red", b, 0.9)], ByPlace(blue_at((200.0 + RING, 400.0))))
    assert [t.side for t in out] == ["blue"]


@needs_verifier
def test_the_shipped_verifier_finds_a_touching_token_left_out_and_adds_none_when_all_are_there():
    """On fixture scenes (not renders it learnt on): each token touching another, left out in turn, is
    found again near its base in its colour (measured: 8 of 10); with every token given, none is added
    (fallen ones, whose bodies it would take for tokens, given as lying down)."""
    from knockcam.detect.reference import look as reference_look

    again = 0
    for name in ("touching_and_lines", "off_board_and_fallen", "cup_cards_banknotes"):
        image, reference, cal = scene(name)
        truth = json.loads((SCENES / f"{name}.json").read_text())["tokens"]
        pair, difference = PhotoPair(image, reference, cal, BOARD), reference_look(image, reference, cal, BOARD).difference
        tokens = [Token(t["side"], tuple(t["xy_mm"]), 0.9, source="both", fallen=t["fallen"]) for t in truth]
        assert verify.tokens_beside(tokens, pair, verify.load(), difference) == []
        if name != "touching_and_lines":
            continue
        bases = np.array([t.xy_mm for t in tokens])
        touching = [i for i in range(len(tokens)) if np.sort(np.hypot(*(bases - bases[i]).T))[1] < RING + 1]
        assert len(touching) == 10
        for i in touching:
            out = verify.tokens_beside(tokens[:i] + tokens[i + 1:], pair, verify.load(), difference)
            again += any(t.side == tokens[i].side and np.hypot(*(np.array(t.xy_mm) - bases[i])) < 8 for t in out)
    assert again >= 6


# A photo alone (no empty-board frame): the verifier of a photo alone looks at the learned model's tokens.
MODELS = Path(__file__).resolve().parents[2] / "models"


def look_alone(tokens, weak, answers):
    return _alone(tokens, weak, Told(answers))


def _alone(tokens, weak, verifier):
    image, _, cal = scene("overhead")
    return verify.alone_look(tokens, weak, PhotoPair(image, None, cal, BOARD), verifier)


def test_the_verifier_of_a_photo_alone_is_not_one_that_needs_the_empty_frame(tmp_path):
    with pytest.raises(KnockcamError, match="needs an empty-board frame.*knockcam train --verify-alone"):
        verify.load_alone(MODELS / "verify.onnx")
    assert verify.load_alone(tmp_path / "not_trained.onnx") is None


class Around(Told):
    """Answers by the candidate's x as Told, and finds a token at one point (SURE_GREEN there), none elsewhere."""

    def __init__(self, answers, token_at=None):
        super().__init__(answers)
        self.token_at, self.looked = token_at, []

    def chances(self, pair, xy_mm, mirrored=False):
        xy = np.asarray(xy_mm, np.float64)
        if all(round(float(x)) in self.answers for x, _ in xy):
            return super().chances(pair, xy, mirrored)
        self.looked.append(xy)
        self.mirrored.append(mirrored)
        return np.array([SURE_GREEN if self.token_at is not None and np.hypot(*(p - self.token_at)) < 0.5
                         else SURE_NONE for p in xy])


def test_in_a_photo_alone_a_token_the_verifier_rules_out_and_finds_nowhere_around_goes():
    tokens = [Token("red", (100.0, 300.0), 0.95), Token("blue", (200.0, 300.0), 0.4, unsure=True),
              Token("green", (300.0, 300.0), 0.9)]
    barely = [0.0, 0.0, 0.0, ALONE["drop_below"] + 0.01, 0.99 - ALONE["drop_below"]]
    verifier = Around({100: SURE_NONE, 200: barely, 300: SURE_GREEN})
    kept = _alone(tokens, [], verifier)
    assert [t.side for t in kept] == ["blue", "green"]
    around = ALONE["around"]
    assert len(verifier.looked) == 1 and len(verifier.looked[0]) == around["directions"] * len(around["distances_mm"])
    assert np.allclose(np.hypot(*(verifier.looked[0] - (100.0, 300.0)).T).reshape(len(around["distances_mm"]), -1),
                       np.array(around["distances_mm"], np.float64)[:, None])


def test_in_a_photo_alone_a_well_scored_token_the_verifier_doubts_but_does_not_rule_out_stays_flagged():
    """Found nowhere around, it stays where the model put it, left to a human, only when the model scored it at
    least keep_doubted.model_above and the verifier gives it at least keep_doubted.present_above."""
    keep = ALONE["keep_doubted"]
    doubted = [0.0, keep["present_above"], 0.0, 0.0, 1.0 - keep["present_above"]]
    ruled_out = [0.0, keep["present_above"] - 0.005, 0.0, 0.0, 1.005 - keep["present_above"]]
    assert keep["present_above"] < ALONE["drop_below"]  # else these would not be doubted at all
    tokens = [Token("red", (100.0, 300.0), keep["model_above"]), Token("red", (200.0, 300.0), 0.95),
              Token("blue", (300.0, 300.0), keep["model_above"] - 0.01), Token("green", (400.0, 300.0), 0.95),
              Token("red", (410.0, 300.0), 0.95)]  # beside the green one: that token seen twice
    verifier = Around({100: doubted, 200: ruled_out, 300: doubted, 400: SURE_GREEN, 410: doubted})
    kept = _alone(tokens, [], verifier)
    assert [(t.side, t.xy_mm, t.unsure) for t in kept] == [("red", (100.0, 300.0), True),
                                                          ("green", (400.0, 300.0), False)]
    assert [UNSURE in p.flags for p in assign(kept, BOARD)] == [True, False]


def test_in_a_photo_alone_a_doubted_token_found_beside_where_the_model_put_it_moves_there_flagged():
    step = float(ALONE["around"]["distances_mm"][-1])
    verifier = Around({100: SURE_NONE, 300: SURE_GREEN}, token_at=np.array([100.0 + step, 300.0]))
    kept = _alone([Token("red", (100.0, 300.0), 0.9), Token("green", (300.0, 300.0), 0.9)], [], verifier)
    assert [(t.side, t.unsure) for t in kept] == [("green", True), ("green", False)]
    assert np.allclose(kept[0].xy_mm, (100.0 + step, 300.0))
    # found where another token already is: that token, not a second one
    verifier = Around({100: SURE_NONE, 120: SURE_GREEN}, token_at=np.array([100.0 + step, 300.0]))
    assert [t.xy_mm for t in _alone([Token("red", (100.0, 300.0), 0.9), Token("green", (120.0, 300.0), 0.9)], [],
                                    verifier)] == [(120.0, 300.0)]


def test_in_a_photo_alone_the_colour_the_verifier_is_sure_of_is_given_flagged():
    sure = [0.0, 0.0, ALONE["recolour_above"], 0.0, 1.0 - ALONE["recolour_above"]]
    unsure = [0.0, 0.0, ALONE["recolour_above"] - 0.01, 0.0, 1.01 - ALONE["recolour_above"]]
    kept = look_alone([Token("yellow", (100.0, 300.0), 0.9), Token("red", (200.0, 300.0), 0.9)], [],
                      {100: sure, 200: unsure})
    assert [(t.side, t.source) for t in kept] == [("green", "conflict"), ("red", "model")]
    assert [DISAGREEMENT in p.flags for p in assign(kept, BOARD)] == [True, False]


def test_in_a_photo_alone_a_token_the_verifier_also_sees_in_another_colour_is_left_to_a_human():
    """Kept in the model's colour, flagged unsure, when the verifier gives another side at least other_side_above
    (blue and green figures in a dim or blurred photo); the chance of no token there does not count."""
    bar = ALONE["other_side_above"]
    tokens = [Token("red", (100.0, 300.0), 0.9), Token("red", (200.0, 300.0), 0.9), Token("red", (300.0, 300.0), 0.9)]
    kept = look_alone(tokens, [], {100: [0.8, 0.0, 0.0, bar, 0.2 - bar], 200: [0.8, 0.0, 0.0, bar - 0.01, 0.21 - bar],
                                   300: [0.5, 0.0, 0.0, 0.0, 0.5]})
    assert [(t.side, t.source, t.unsure) for t in kept] == [("red", "model", True), ("red", "model", False),
                                                            ("red", "model", False)]
    assert [UNSURE in p.flags for p in assign(kept, BOARD)] == [True, False, False]


def test_in_a_photo_alone_a_weakly_scored_token_the_verifier_vouches_for_in_its_colour_is_not_left_to_a_human():
    vouched = [ALONE["vouch_above"], 0.0, 0.0, 0.0, 1.0 - ALONE["vouch_above"]]
    almost = [ALONE["vouch_above"] - 0.01, 0.0, 0.0, 0.0, 1.01 - ALONE["vouch_above"]]
    tokens = [Token("red", (100.0, 300.0), 0.4, unsure=True), Token("red", (200.0, 300.0), 0.4, unsure=True)]
    kept = look_alone(tokens, [], {100: vouched, 200: almost})
    assert [t.unsure for t in kept] == [False, True]
    assert [UNSURE in p.flags for p in assign(kept, BOARD)] == [False, True]


def test_in_a_photo_alone_a_lone_weak_candidate_the_verifier_is_sure_of_is_added_flagged_in_its_colour():
    sure = [0.0, 0.0, 0.0, ALONE["keep_weak_above"], 1.0 - ALONE["keep_weak_above"]]
    unsure = [0.0, 0.0, 0.0, ALONE["keep_weak_above"] - 0.01, 1.01 - ALONE["keep_weak_above"]]
    tokens = [Token("yellow", (300.0, 300.0), 0.9)]
    weak = [Token("green", (100.0, 500.0), 0.04), Token("red", (310.0, 300.0), 0.05),  # beside a token: that token
            Token("green", (103.0, 505.0), 0.03), Token("red", (200.0, 500.0), 0.05)]  # two at one place are one
    verifier = Around({300: SURE_YELLOW, 100: sure, 103: sure, 310: sure, 200: unsure})  # nothing around (200, 500)
    kept = _alone(tokens, weak, verifier)
    assert [(t.side, t.xy_mm, t.unsure) for t in kept] == [("yellow", (300.0, 300.0), False),
                                                          ("blue", (100.0, 500.0), True)]
    assert len(verifier.looked) == 1 and np.allclose(verifier.looked[0].mean(axis=0), (200.0, 500.0))


def test_in_a_photo_alone_a_weak_candidate_the_verifier_half_believes_is_looked_for_around_and_kept_where_found():
    bar = ALONE["look_weak_above"]
    half = [0.0, 0.0, bar + 0.01, 0.0, 0.99 - bar]
    under = [0.0, 0.0, bar - 0.01, 0.0, 1.01 - bar]
    step = float(ALONE["around"]["distances_mm"][0])
    weak = [Token("red", (100.0, 500.0), 0.05), Token("red", (200.0, 500.0), 0.05)]
    verifier = Around({100: half, 200: under}, token_at=np.array([100.0, 500.0 + step]))
    kept = _alone([], weak, verifier)
    assert [(t.side, t.unsure) for t in kept] == [("green", True)]  # the colour it sees there, left to a human
    assert np.allclose(kept[0].xy_mm, (100.0, 500.0 + step))
    assert len(verifier.looked) == 1  # under the bar: not looked for
    assert _alone([], weak[:1], Around({100: half})) == []  # found nowhere around: not kept


def test_detect_without_a_reference_asks_the_verifier_of_a_photo_alone(monkeypatch):
    """detect() with no empty-board frame: the model's tokens and its weak candidates go through load_alone()'s
    verifier, which sees the photo alone."""
    from knockcam.detect import detect, fallen, refine

    image, _, cal = scene("oblique_60")
    monkeypatch.setattr(fallen, "load", lambda: None)
    monkeypatch.setattr(fallen, "load_placer", lambda: None)
    monkeypatch.setattr(refine, "load_alone", lambda: None)
    asked = []

    class Model:  # plays TokenModel: returns its candidates whatever the photo
        conf, sure_conf, sure_conf_alone, support_conf = 0.1, 0.25, 0.6, 0.01

        def detect(self, image, calibration, board, conf=None):
            asked.append(conf)
            return [Token("red", (200.0, 500.0), 0.9), Token("blue", (120.0, 350.0), 0.4),
                    Token("green", (300.0, 700.0), 0.05)]

    class Looking(Around):
        def chances(self, pair, xy_mm, mirrored=False):
            assert pair.reference is None
            return super().chances(pair, xy_mm, mirrored)

    answers = {200: [0.99, 0.0, 0.0, 0.0, 0.01], 120: SURE_NONE, 300: SURE_GREEN}
    monkeypatch.setattr(verify, "load_alone", lambda: Looking(answers))
    last, seen_again = [], verify.figure_seen_again
    monkeypatch.setattr(verify, "figure_seen_again", lambda tokens, c: last.append(tokens) or seen_again(tokens, c))
    found = detect(image, cal, BOARD, reference=None, model=Model()).tokens
    assert asked == [0.01]  # the model's weak candidates too (model.support_conf)
    assert [(t.side, t.xy_mm, t.unsure) for t in found] == [("red", (200.0, 500.0), False),
                                                           ("green", (300.0, 700.0), True)]
    assert len(last) == 1 and [t.xy_mm for t in last[0]] == [t.xy_mm for t in found]  # the photo alone's last step


class Lopsided(verify.TokenVerifier):
    """A TokenVerifier whose 'network' sees red in a patch's left half and yellow in its right half."""

    def __init__(self):  # no ONNX file: logits below stand for the network
        self.geometry = GEOMETRY

    def logits(self, x):
        half = x.shape[3] // 2
        left, right = x[:, :3, :, :half].mean(axis=(1, 2, 3)), x[:, :3, :, half:].mean(axis=(1, 2, 3))
        return np.stack([20 * left, 20 * right, np.zeros(len(x)), np.zeros(len(x)), np.zeros(len(x))], axis=1)


def test_the_verifier_asked_mirrored_gives_the_mean_of_its_answers_for_a_patch_and_its_mirror_image():
    image, _, cal = scene("overhead")
    pair, bases = PhotoPair(image, None, cal, BOARD), [(60.0, 300.0), (150.0, 420.0)]
    verifier = Lopsided()
    once = verifier.chances(pair, bases)
    assert np.all(np.abs(once[:, 0] - once[:, 1]) > 1e-3)  # the patches are not symmetric ...
    x = pair.network_input(bases, GEOMETRY)
    flipped = verifier.probabilities(np.ascontiguousarray(x[..., ::-1]))
    both = verifier.chances(pair, bases, mirrored=True)
    assert np.allclose(both, (once + flipped) / 2) and np.allclose(both[:, 0], both[:, 1])  # ... their mean is
    assert np.allclose(both.sum(axis=1), 1.0)
    assert verifier.chances(pair, [], mirrored=True).shape == (0, NONE + 1)


def test_in_a_photo_alone_the_verifier_looks_at_each_patch_mirrored_too_and_at_a_photo_pairs_once():
    """detect.yaml verify_alone.mirrored (set: measured there); the verifier of photo pairs is asked once a patch."""
    assert ALONE["mirrored"] is True and "mirrored" not in CFG
    verifier = Around({100: SURE_NONE, 300: SURE_GREEN})
    _alone([Token("red", (100.0, 300.0), 0.9), Token("green", (300.0, 300.0), 0.9)],
           [Token("red", (300.0, 500.0), 0.05)], verifier)
    assert len(verifier.mirrored) == 2 and all(verifier.mirrored)  # the tokens and candidates; then around the doubted
    image, reference, cal = scene("overhead")
    pair_verifier = Told({100: SURE_NONE, 300: SURE_GREEN})
    verify.second_look([Token("red", (100.0, 300.0), 0.9, source="model_only")], [],
                       PhotoPair(image, reference, cal, BOARD), pair_verifier)
    assert pair_verifier.mirrored == [False]


def _behind(cal, xy, along_mm, across_mm):
    """The point ``along_mm`` further from the camera than ``xy`` and ``across_mm`` to one side of that line."""
    from knockcam.detect.patch import directions
    from knockcam.detect.reference import viewpoint

    away, across = directions([xy], viewpoint(cal).nadir_mm)
    point = np.asarray(xy) + along_mm * away[0] + across_mm * across[0]
    return float(point[0]), float(point[1])


def test_in_a_photo_alone_a_doubted_report_just_behind_a_surer_one_of_its_side_is_its_figure_seen_again():
    """detect.yaml verify_alone.figure_again: two standing bases are never that close; the figure leans away."""
    _, _, cal = scene("oblique_60")
    reach, aside = ALONE["figure_again"]["behind_mm"], ALONE["figure_again"]["across_mm"]
    base = Token("red", (200.0, 500.0), 0.9)
    up_the_figure = Token("red", _behind(cal, base.xy_mm, reach - 3, aside / 2), 0.2, unsure=True)
    assert verify.figure_seen_again([base, up_the_figure], cal) == [base]
    assert verify.figure_seen_again([up_the_figure, base], cal) == [base]


def test_a_report_behind_a_token_is_kept_when_it_is_sure_lying_of_another_side_in_front_or_beside_it():
    _, _, cal = scene("oblique_60")
    reach, aside = ALONE["figure_again"]["behind_mm"], ALONE["figure_again"]["across_mm"]
    base = Token("red", (200.0, 500.0), 0.9)
    behind = _behind(cal, base.xy_mm, reach - 3, 0.0)
    kept = [Token("red", behind, 0.2),  # not doubted by the second look
            Token("red", behind, 0.2, unsure=True, fallen=True),  # lying: one_report_each's, not this rule's
            Token("blue", behind, 0.2, unsure=True),  # another side
            Token("red", behind, 0.95, unsure=True),  # the model scored it higher than the token in front
            Token("red", _behind(cal, base.xy_mm, -(reach - 3), 0.0), 0.2, unsure=True),  # nearer the camera
            Token("red", _behind(cal, base.xy_mm, reach + 3, 0.0), 0.2, unsure=True),  # too far behind: a token
            Token("red", _behind(cal, base.xy_mm, reach - 3, aside + 2), 0.2, unsure=True)]  # beside the line
    for other in kept:
        assert verify.figure_seen_again([base, other], cal) == [base, other]
    doubted = Token("red", behind, 0.2, unsure=True)
    lying_base = replace(base, fallen=True)  # a lying token's figure does not stand behind its base
    assert verify.figure_seen_again([lying_base, doubted], cal) == [lying_base, doubted]
    assert verify.figure_seen_again([], cal) == [] and verify.figure_seen_again([base], cal) == [base]
