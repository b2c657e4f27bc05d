"""``knockcam explain``'s numbers: every share of a base, summing to one, agreeing with the call."""

from __future__ import annotations

import pytest

from knockcam.errors import KnockcamError
from knockcam.pipeline import ScoreOptions, score_photo
from knockcam.report.explain import explain, explain_image, parse_sides
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


def test_only_the_asked_side_is_explained():
    scored = _scored()
    side = scene().truth["tokens"][0]["side"]
    reds = explain(scored, (side,))
    assert reds and all(e.side == side for e in reds)
    assert len(reds) == sum(p.side == side for p in scored.positions)
    picture = explain_image(scored, reds)
    assert picture.shape[1] > 360 * min(len(reds), 4)
    assert explain_image(scored, []).shape[0] > 0


@pytest.mark.parametrize("values, expected", [(["red"], ("red",)), (["Red,blue"], ("red", "blue")),
                                              (["blue", "red", "blue"], ("blue", "red"))])
def test_parse_sides(values, expected):
    assert parse_sides(values) == expected


@pytest.mark.parametrize("values", [["purple"], [], [","]])
def test_parse_sides_refuses_non_sides(values):
    with pytest.raises(KnockcamError, match="side"):
        parse_sides(values)
