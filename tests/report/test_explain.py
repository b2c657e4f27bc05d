"""``knockcam explain``'s numbers: every share of a base, summing to one, agreeing with the call."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from knockcam.board.layout import load_board
from knockcam.errors import KnockcamError
from knockcam.pipeline import ScoreOptions, score_photo
from knockcam.report import draw as d
from knockcam.detect.tokens import Token
from knockcam.report.explain import explain, explain_image, heading, parse_tokens
from synthetic_scene import scene


def _scored():
    s = scene()
    return score_photo(s.photo, ScoreOptions(calibration=s.calibration), detector=s.truth_detector())


def test_shares_add_up_and_agree_with_the_call():
    scored = _scored()
    found = explain(scored, ("red", "yellow", "green", "blue"))
    assert len(found) == len(scored.positions)
    for e in found:
        p = scored.positions[e.number - 1]
        assert p.side == e.side
        assert sum(v for _, v in e.shares) == pytest.approx(1.0, abs=2e-3)
        assert [v for _, v in e.shares] == sorted((v for _, v in e.shares), reverse=True)
        top, share = e.shares[0]
        expected = p.space if p.state == "on_space" else p.state
        assert top == expected and share == pytest.approx(p.coverage, abs=1e-3)
        assert e.ambiguous == p.ambiguous and e.margin_mm == pytest.approx(p.margin_mm)
        # the band it shows is the one assign flagged the call by
        assert (e.margin_mm < e.close_within_mm) == ("close_call" in p.flags) and e.close_within_mm >= 1.0


def test_only_the_asked_side_is_explained():
    scored = _scored()
    side = scene().truth["tokens"][0]["side"]
    reds = explain(scored, (side,))
    assert reds and all(e.side == side for e in reds)
    assert len(reds) == sum(p.side == side for p in scored.positions)
    picture = explain_image(scored, reds)
    assert picture.shape[1] > 360 * min(len(reds), 4)
    assert explain_image(scored, []).shape[0] > 0


def test_a_token_is_explained_by_its_number_as_the_score_table_prints_it():
    scored = _scored()
    numbers = (len(scored.positions), 1)
    picked = explain(scored, (), numbers)
    assert [e.number for e in picked] == [1, len(scored.positions)]
    first = scored.positions[0]
    assert picked[0].side == first.side and picked[0].xy_mm == pytest.approx(first.token.xy_mm)
    side = scored.positions[0].side
    both = explain(scored, (side,), (len(scored.positions),))
    assert {e.number for e in both} == {i + 1 for i, p in enumerate(scored.positions) if p.side == side} | {numbers[0]}
    with pytest.raises(KnockcamError, match=f"--token {len(scored.positions) + 1}: the photo has"):
        explain(scored, (), (len(scored.positions) + 1,))


def test_one_tokens_picture_has_its_whole_title():
    scored = dataclasses.replace(_scored(), image_path="/photos/" + "a_long_photo_name_from_a_phone_" * 3 + ".jpg")
    picture = explain_image(scored, explain(scored, (), (1,)))
    header = picture[:62, -8:].reshape(-1, 3)  # the title and the photo's name end inside the picture
    assert (header == np.array(d.PAPER, np.uint8)).all()


@pytest.mark.parametrize("values, expected", [(["red"], (("red",), ())), (["Red,blue"], (("red", "blue"), ())),
                                              (["blue", "red", "blue"], (("blue", "red"), ())),
                                              (["5", "red,#7", "5"], (("red",), (5, 7)))])
def test_parse_tokens(values, expected):
    assert parse_tokens(values) == expected


@pytest.mark.parametrize("values", [["purple"], [], [","], ["0"], ["-2"]])
def test_parse_tokens_refuses_what_is_neither_a_side_nor_a_number(values):
    with pytest.raises(KnockcamError, match="side"):
        parse_tokens(values)


def test_a_close_ups_heading_says_why_a_human_decides():
    s = scene()
    board = load_board()
    poly = board.space("park_place").polygon
    centre = (sum(x for x, _ in poly) / len(poly), sum(y for _, y in poly) / len(poly))
    lone = Token("blue", centre, 0.3, 0.5, source="reference_only")  # one detector alone saw it: a disagreement
    scored = score_photo(s.photo, ScoreOptions(calibration=s.calibration), detector=lambda *args, **kw: [lone])
    (e,) = explain(scored, ("blue",))
    assert e.ambiguous and "close_call" not in e.flags
    assert heading(e) == "#1 blue: Park Place  DISAGREEMENT"  # not "CLOSE CALL": nothing is near a line
