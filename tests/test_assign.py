"""Assignment of token bases to spaces (RULES.md S3), close calls and the R2 / S2 sanity checks."""

import numpy as np
import pytest

from knockcam.assign import (ADDED, CLOSE_CALL, DISAGREEMENT, EXTRA_TOKEN, FALLEN, HUMAN_CALL, MAYBE_FALLEN,
                             NOT_A_TOKEN, OFF, UNSURE, added_token, assign, check_category, doubt_words, human_call)
from knockcam.board import load_board
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError
from knockcam.settings import load


@pytest.fixture(scope="module")
def board():
    return load_board()


def centre(board, space_id):
    pts = board.space(space_id).polygon
    return (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts))


def test_token_in_the_middle_of_a_space_is_on_it_and_sure(board):
    (pos,) = assign([Token("red", centre(board, "boardwalk"), 0.9, sigma_mm=1.5)], board)
    assert pos.space == "boardwalk" and pos.state == "on_space"
    assert pos.coverage == pytest.approx(1.0)
    assert not pos.ambiguous and pos.flags == ()
    # boardwalk is 127 x 85 mm: the centre is 42.5 mm from the nearest line, the base must cross it
    assert pos.margin_mm > 20


def test_base_straddling_a_line_goes_to_the_bigger_share_and_is_flagged(board):
    # Baltic (86..162) | Oriental (162..238), row y 305..390: 3 mm right of the line
    pos = assign([Token("blue", (165.0, 350.0), 0.9, sigma_mm=1.5)], board)[0]
    assert pos.space == "oriental_avenue"
    assert pos.runner_up == "baltic_avenue"
    assert 0.5 < pos.coverage < 0.75
    assert pos.margin_mm == pytest.approx(3.0, abs=0.05)
    assert pos.ambiguous and CLOSE_CALL in pos.flags


def test_a_human_call_puts_the_token_where_they_say_and_keeps_the_cameras_call_beside_it(board):
    """Settling the Baltic | Oriental close call the other way: Baltic's share of the base, no longer a close
    call, the camera's Oriental kept as the runner-up; the measured margin and the token itself unchanged."""
    camera = assign([Token("blue", (165.0, 350.0), 0.9, sigma_mm=1.5)], board)[0]
    called = human_call(camera, "baltic_avenue", board)
    assert (called.space, called.state, called.runner_up) == ("baltic_avenue", "on_space", "oriental_avenue")
    assert called.coverage == pytest.approx(camera.runner_up_coverage, abs=1e-6)
    assert called.runner_up_coverage == pytest.approx(camera.coverage, abs=1e-6)
    assert not called.ambiguous and CLOSE_CALL not in called.flags and called.flags[-1] == HUMAN_CALL
    assert called.token == camera.token and called.margin_mm == camera.margin_mm
    out = human_call(camera, "off_board", board)
    assert (out.space, out.state, out.coverage) == (None, "off_board", 0.0) and OFF in out.flags
    assert human_call(camera, "no_space", board).state == "no_space"
    struck = human_call(camera, "none", board)  # no token there: the camera's call kept for the reports
    assert (struck.space, struck.runner_up, struck.coverage) == (camera.space, camera.space, camera.coverage)
    assert not struck.ambiguous and struck.flags[-2:] == (NOT_A_TOKEN, HUMAN_CALL) and CLOSE_CALL not in struck.flags


def test_a_call_naming_no_space_of_the_board_says_which_it_may_have_meant(board):
    assert check_category("chance", board) == "chance" and check_category("no_space", board) == "no_space"
    # as the tables print them: a space's name, "no space", "off the board"
    assert check_category("Virginia Avenue", board) == "virginia_avenue"
    assert check_category("Go to Jail", board) == "go_to_jail"
    assert check_category("no space", board) == "no_space" and check_category("Off the board", board) == "off_board"
    assert check_category("none", board) == check_category("no token", board) == NOT_A_TOKEN
    with pytest.raises(KnockcamError, match="'House' names 2 spaces: give one of house_1, house_2"):
        check_category("House", board)
    with pytest.raises(KnockcamError, match="did you mean baltic_avenue"):
        check_category("baltc_avenue", board)
    with pytest.raises(KnockcamError, match="'knockcam board' lists them"):
        check_category("the kitchen", board)


def test_a_token_added_by_hand_rests_well_inside_its_space_even_an_l_shaped_one(board):
    """--add: the token is put deep inside the space named, sure; a space whose corners' mean lies outside it
    (an L-shaped one in a board file of one's own) gets the point deepest inside instead."""
    (p,) = assign([added_token("red", "Park Place", board)], board)
    assert (p.space, p.coverage, p.ambiguous, p.flags) == ("park_place", 1.0, False, (ADDED,))
    assert p.margin_mm > 10 and p.token.confidence == 1.0
    for side, where, words in (("purple", "park_place", "not a side"), ("red", "no_space", "goes on a space")):
        with pytest.raises(KnockcamError, match=words):
            added_token(side, where, board)
    from dataclasses import replace

    (x0, y0), (x1, y1) = (np.min(board.space("free_parking").polygon, axis=0),
                          np.max(board.space("free_parking").polygon, axis=0))
    xm, ym = (x0 + x1) / 2, (y0 + y1) / 2  # the L: the space less its far right quarter; its corners' mean is (xm, ym)
    corner = ((x0, y0), (x1, y0), (x1, ym), (xm, ym), (xm, y1), (x0, y1))
    l_board = replace(board, spaces=tuple(replace(s, polygon=corner) if s.id == "free_parking" else s
                                          for s in board.spaces))
    (p,) = assign([added_token("green", "free_parking", l_board)], l_board)
    assert p.space == "free_parking" and p.coverage == pytest.approx(1.0) and not p.ambiguous


def test_a_smaller_sigma_makes_the_same_call_sure(board):
    token = Token("blue", (175.0, 350.0), 0.9, sigma_mm=1.0)  # 13 mm from the line
    assert not assign([token], board)[0].ambiguous
    wide = Token("blue", (175.0, 350.0), 0.9, sigma_mm=7.0)
    assert assign([wide], board)[0].ambiguous


def test_off_board_and_no_space(board):
    off, launch = assign([Token("green", (-30.0, 500.0), 0.8), Token("green", (200.0, 100.0), 0.8)], board)
    assert off.state == "off_board" and off.space is None and OFF in off.flags
    assert launch.state == "no_space" and launch.space is None


def test_a_fifth_token_of_a_side_is_flagged_the_least_confident_one(board):
    spots = ["boardwalk", "park_place", "chance", "railroad", "free_parking"]
    tokens = [Token("yellow", centre(board, s), conf, sigma_mm=1.0) for s, conf in zip(spots, (0.9, 0.8, 0.3, 0.95, 0.7))]
    positions = assign(tokens, board)
    flagged = [p.space for p in positions if EXTRA_TOKEN in p.flags]
    assert flagged == ["chance"]
    assert positions[2].ambiguous


def test_fallen_and_disputed_tokens_widen_the_uncertainty(board):
    # 10 mm from a line: sure at 1.5 mm sigma, not for a fallen or disputed token
    fallen = Token("red", (172.0, 350.0), 0.9, sigma_mm=1.5, fallen=True)
    disputed = Token("red", (172.0, 350.0), 0.9, sigma_mm=1.5, source="model_only")
    upright = Token("red", (172.0, 350.0), 0.9, sigma_mm=1.5)
    pf, pd, pu = assign([fallen, disputed, upright], board)
    assert FALLEN in pf.flags and CLOSE_CALL in pf.flags and pf.ambiguous
    assert DISAGREEMENT in pd.flags and pd.ambiguous
    assert not pu.ambiguous


def test_a_token_that_may_lie_down_is_as_close_a_call_as_a_lying_one_but_stays_where_found(board):
    # the fallen network half believes it (knockcam.detect.fallen maybe_above): found on its body, its base
    # may be 8-18 mm away, so 10 mm from a line it is a close call; well inside a space it is told, not flagged
    near = Token("red", (172.0, 350.0), 0.9, sigma_mm=1.5, maybe_fallen=True)
    inside = Token("red", centre(board, "boardwalk"), 0.9, sigma_mm=1.5, maybe_fallen=True)
    pn, pi = assign([near, inside], board)
    assert pn.ambiguous and pn.flags == (CLOSE_CALL, MAYBE_FALLEN)
    assert pn.sigma_mm == load("assign")["ambiguity"]["fallen_sigma_mm"] and pn.token.xy_mm == near.xy_mm
    assert pi.flags == (MAYBE_FALLEN,) and not pi.ambiguous and pi.space == "boardwalk"
    assert doubt_words(pn) == "close call"


def test_a_fallen_token_well_inside_a_space_is_told_but_not_a_close_call(board):
    # stood up where it fell (S3), a lying token's base is less sure (fallen_sigma_mm); further from
    # every line than the close-call band of that, its space is not in doubt
    amb = load("assign")["ambiguity"]
    fallen = Token("red", centre(board, "boardwalk"), 0.9, sigma_mm=1.5, fallen=True)
    p = assign([fallen], board)[0]
    assert p.margin_mm > amb["sigmas"] * amb["fallen_sigma_mm"]
    assert p.space == "boardwalk" and p.flags == (FALLEN,) and not p.ambiguous


def test_a_token_its_detector_is_unsure_of_is_flagged_wherever_it_lies(board):
    sure, unsure = assign([Token("red", (172.0, 350.0), 0.9, sigma_mm=1.5),
                           Token("blue", (172.0, 350.0), 0.2, sigma_mm=1.5, unsure=True)], board)
    assert not sure.ambiguous and UNSURE not in sure.flags
    assert unsure.ambiguous and unsure.flags == (UNSURE,)


def test_bad_side_is_a_clear_error(board):
    with pytest.raises(KnockcamError, match="purple"):
        assign([Token("purple", (100.0, 400.0), 0.9)], board)


def test_no_tokens_no_positions(board):
    assert assign([], board) == []


def test_to_dict_has_the_score_contract_keys(board):
    d = assign([Token("red", centre(board, "boardwalk"), 0.9)], board)[0].to_dict()
    for key in ("side", "space", "state", "coverage", "margin_mm", "xy_mm", "ambiguous", "confidence"):
        assert key in d


def test_the_spaces_under_a_hidden_area_are_the_ones_it_covers_enough_of(board):
    from knockcam.assign import hidden_spaces
    from knockcam.detect.tokens import near_hidden
    from knockcam.detect.tokens import HiddenArea

    space = next(s for s in board.spaces if s.kind == "property")
    xs, ys = [p[0] for p in space.polygon], [p[1] for p in space.polygon]
    over = HiddenArea(outline_mm=((min(xs) + 2, min(ys) + 2), (max(xs) - 2, min(ys) + 2), (max(xs) - 2, max(ys) - 2),
                                  (min(xs) + 2, max(ys) - 2)), area_mm2=1.0)
    assert hidden_spaces((over,), board) == (space.id,)  # its neighbours: only a sliver each, or nothing
    corner = HiddenArea(outline_mm=((min(xs), min(ys)), (min(xs) + 3, min(ys)), (min(xs) + 3, min(ys) + 3),
                                    (min(xs), min(ys) + 3)), area_mm2=9.0)
    assert hidden_spaces((corner,), board) == ()  # 9 mm2 of a space is not "under" it
    assert hidden_spaces((), board) == ()
    inside = ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)
    assert near_hidden(inside, (over,), 0.0) and near_hidden((max(xs) + 5, inside[1]), (over,), 12.5)
    assert not near_hidden((max(xs) + 20, inside[1]), (over,), 12.5)
