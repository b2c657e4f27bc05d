"""One or more tests per rule id of RULES.md for a single round (R1-R4, S2-S4, E1-E4, N2, N3)."""

from __future__ import annotations

import pytest
from rules_helpers import build, entries, small_board

from knockcam.errors import KnockcamError
from knockcam.rules import rotate, score_round
from knockcam.sides import SIDES


def _error(board, ri) -> str:
    with pytest.raises(KnockcamError) as info:
        score_round(ri, board)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- R1 sides -------------------------------------------------------------------------------------
@pytest.mark.parametrize("order, needle", [(["red"], "order: a game has 2 to 4 sides"),
                                           (["red", "purple"], "order[1]: unknown side 'purple'"),
                                           (["red", "blue", "red"], "order[2]: side 'red' listed twice")])
def test_R1_order_is_two_to_four_distinct_sides(board, order, needle):
    message = _error(board, build(order, []))
    assert needle in message and "(R1)" in message


def test_R1_a_token_of_a_side_not_playing_is_refused(board):
    assert "tokens[0].side" in _error(board, build(["red", "blue"], [("green", "boardwalk")]))


def test_R1_scoring_is_per_side_for_all_four_sides(play, board):
    props = [p.id for p in board.properties][:4]
    result = play(list(SIDES), list(zip(SIDES, props)))
    assert result.delta == {s: board.space(p).value for s, p in zip(SIDES, props)}


# -- R2 tokens ------------------------------------------------------------------------------------
def test_R2_more_than_four_tokens_for_a_side_is_refused(board):
    message = _error(board, build(["red", "blue"], [("red", None)] * 5))
    assert "tokens: side 'red' has more than 4 tokens (R2)" in message


# -- R3 money -------------------------------------------------------------------------------------
@pytest.mark.parametrize("cash", [{"red": -50}, {"red": 2.5}, {"red": True}])
def test_R3_cash_is_whole_money_at_least_zero(board, cash):
    message = _error(board, build(["red", "blue"], [], cash=cash))
    assert "cash.red" in message and "(R3)" in message


def test_R3_money_unit_must_be_positive(board):
    assert "money_unit" in _error(board, build(["red", "blue"], [], unit=0))


def test_R3_money_unit_sets_the_split_granularity(play):
    order = ["red", "blue", "green"]
    tokens = [(s, "free_parking") for s in order]
    assert play(order, tokens, unit=100).free_parking == {"red": 100, "blue": 100, "green": 100}
    assert play(order, tokens, unit=50).free_parking == {"red": 150, "blue": 150, "green": 150}


# -- R4 pot ---------------------------------------------------------------------------------------
def test_R4_negative_pot_is_refused(board):
    assert "pot: must be a whole number of M, at least 0, not -1 (R4)" in _error(board, build(["red", "blue"], [], pot=-1))


def test_R4_the_pot_starts_at_500(board):
    from knockcam.rules import Game
    assert Game(["red", "blue"], board).pot == 500


# -- R6 / N3 turn order ---------------------------------------------------------------------------
def test_R6_N3_rotation_moves_the_first_side_to_the_bottom(play):
    assert rotate(("green", "red", "blue", "yellow")) == ("red", "blue", "yellow", "green")
    assert play(["blue", "red", "green"], []).next_order == ("red", "green", "blue")


# -- S2 off the board -----------------------------------------------------------------------------
def test_S2_off_board_tokens_score_nothing(play):
    result = play(["red", "blue"], [("red", None), ("red", None), ("blue", "boardwalk")])
    assert result.delta["red"] == 0
    assert "2 tokens off the board" in entries(result, "S2", "red", kind="note")[0].reason


def test_S2_paid_reslide_moves_100_into_the_pot_before_E4(play):
    result = play(["red", "blue"], [("red", "free_parking")], cash={"blue": 300},
                  events=[("blue", "reslide_fee")], variant="paid")
    fee = entries(result, "S2", "blue")[0]
    assert (fee.amount, fee.pot) == (-100, 100)
    assert result.free_parking["red"] == 600  # the fee is in the pot E4 pays out
    assert result.cash == {"red": 600, "blue": 200}


def test_S2_reslide_fee_refused_when_the_side_cannot_pay(play):
    result = play(["red", "blue"], [], cash={"blue": 50}, events=[("blue", "reslide_fee")], variant="paid")
    assert [e.kind for e in result.ledger if e.rule == "S2" and e.side == "blue"] == ["refused"]
    refused = next(e for e in result.ledger if e.rule == "S2" and e.side == "blue")
    assert "(a side never goes below M0, E3d)" in refused.reason and "S4" not in refused.reason  # S4: the jail
    assert result.cash["blue"] == 50 and result.pot_after == 500


@pytest.mark.parametrize("variant", ["none", "free", None])
def test_S2_reslide_fee_under_a_variant_that_is_not_paid_is_refused(board, variant):
    """None: the round does not say, and the rules' default is none (a paid re-slide was once taken to say paid)."""
    message = _error(board, build(["red", "blue"], [], events=[("red", "reslide_fee")], variant=variant))
    assert "events[0].kind" in message and "(S2)" in message
    assert ("add reslide_off_board: paid" in message) == (variant is None)


def test_S2_unknown_variant_and_event_kind_are_refused(board):
    assert "reslide_off_board" in _error(board, build(["red", "blue"], [], variant="sometimes"))
    assert "events[0].kind" in _error(board, build(["red", "blue"], [], events=[("red", "bribe")]))


# -- S3 resting place -----------------------------------------------------------------------------
def test_S3_unknown_space_id_is_refused_naming_the_field(board):
    message = _error(board, build(["red", "blue"], [("red", "boardwalk"), ("blue", "bordwalk")]))
    assert "tokens[1].space: unknown space id 'bordwalk'" in message and "did you mean boardwalk?" in message


def test_S3_token_on_a_non_scoring_space_scores_nothing(play):
    result = play(["red", "blue"], [("red", "railroad"), ("red", "boardwalk")], railroad={"red": ["park_place"]})
    assert result.delta["red"] == 3000
    result = play(["red", "blue"], [("red", "house_2"), ("blue", "luxury_tax")])
    assert result.delta == {"red": 0, "blue": 0}


# -- S4 jail --------------------------------------------------------------------------------------
def test_S4_token_on_go_to_jail_is_jailed_and_scores_nothing(play):
    result = play(["red", "blue"], [("red", "go_to_jail")])
    assert result.tokens[0].space is None
    assert entries(result, "S4", "red", kind="note")


def test_S4_jail_fee_paid_when_the_side_holds_100(play):
    result = play(["red", "blue"], [], cash={"red": 100}, events=[("red", "jail_fee")])
    assert result.cash["red"] == 0 and result.pot_after == 600
    assert entries(result, "S4", "red")[0].reason.startswith("S4 -100 jail fee")


def test_S4_can_pay_is_judged_at_that_moment(play):
    """M150 pays one fee; the second, M50 later, is refused."""
    result = play(["red", "blue"], [], cash={"red": 150}, events=[("red", "jail_fee"), ("red", "jail_fee")])
    assert [e.kind for e in result.ledger if e.rule == "S4"] == ["money", "refused"]
    assert result.cash["red"] == 50


# -- E1 Chance ------------------------------------------------------------------------------------
def test_E1_token_still_on_chance_scores_nothing(play):
    result = play(["red", "blue"], [("red", "chance"), ("red", "baltic_avenue")])
    assert result.delta["red"] == 100
    assert entries(result, "E1", "red", kind="note")


# -- E2 Railroad ----------------------------------------------------------------------------------
def test_E2_engine_choice_maximises_the_sides_E3_cash(play, board):
    yellow = [p.id for p in board.color_set("yellow")]
    result = play(["red", "blue"], [("red", "railroad"), ("red", yellow[0]), ("red", yellow[1])])
    choice = entries(result, "E2", "red", kind="choice")[0]
    assert choice.chose == (yellow[2],) and choice.by == "engine"
    assert choice.worth == 3 * 250 + board.set_bonus["yellow"] == result.delta["red"]
    assert all(worth <= choice.worth for _, worth in choice.alternatives) and choice.alternatives


def test_E2_ties_go_to_higher_value_then_board_order(board):
    small = small_board(properties=[("a", "brown", 300), ("b", "brown", 300), ("c", "dark_blue", 300)],
                        set_bonus={"brown": 0, "dark_blue": 0})
    result = score_round(build(["red", "blue"], [("red", "railroad"), ("red", "luxury_tax")]), small)
    assert entries(result, "E2", "red", kind="choice")[0].chose == ("a",)


def test_E2_choice_must_be_an_unoccupied_property(board):
    occupied = _error(board, build(["red", "blue"], [("red", "railroad"), ("blue", "boardwalk")],
                                   railroad={"red": ["boardwalk"]}))
    assert "railroad_choice.red[0]" in occupied and "occupied" in occupied and "(E2)" in occupied
    special = _error(board, build(["red", "blue"], [("red", "railroad")], railroad={"red": ["free_parking"]}))
    assert "not a property (E2)" in special
    unknown = _error(board, build(["red", "blue"], [("red", "railroad")], railroad={"red": ["narnia"]}))
    assert "railroad_choice.red[0]: unknown space id" in unknown
    too_many = _error(board, build(["red", "blue"], [("red", "boardwalk")], railroad={"red": ["park_place"]}))
    assert "railroad_choice.red" in too_many and "(E2)" in too_many


def test_E2_earlier_sides_move_first_and_occupy(board):
    """Red (first) takes the best property; blue's choice of it is then occupied."""
    message = _error(board, build(["red", "blue"], [("red", "railroad"), ("blue", "railroad")],
                                  railroad={"red": ["boardwalk"], "blue": ["boardwalk"]}))
    assert "railroad_choice.blue[0]" in message


def test_E2_no_unoccupied_property_the_token_stays(board):
    small = small_board()
    tokens = [("blue", p.id) for p in small.properties] + [("red", "railroad")]
    result = score_round(build(["red", "blue"], tokens), small)
    assert result.delta["red"] == 0
    assert entries(result, "E2", "red", kind="note")


# -- E3a properties -------------------------------------------------------------------------------
def test_E3a_pays_only_the_side_highest_in_turn_order_and_only_once(play, board):
    value = board.space("boardwalk").value
    result = play(["blue", "red"], [("red", "boardwalk"), ("blue", "boardwalk"), ("blue", "boardwalk")])
    assert result.delta == {"blue": value, "red": 0}
    assert len(entries(result, "E3a")) == 1
    assert entries(result, "E3a", "red", kind="note")[0].reason == "E3a Boardwalk pays blue, higher in turn order"


# -- E3b set bonus --------------------------------------------------------------------------------
def test_E3b_bonus_needs_every_property_of_the_set_paid_to_this_side(play, board):
    red_set = [p.id for p in board.color_set("red")]
    full = play(["green", "blue"], [("blue", p) for p in red_set])
    assert entries(full, "E3b", "blue")[0].amount == board.set_bonus["red"]
    blocked = play(["green", "blue"], [("blue", p) for p in red_set] + [("green", red_set[0])])
    assert not entries(blocked, "E3b", "blue")


# -- E3c House ------------------------------------------------------------------------------------
def test_E3c_house_collects_one_property_again_once(play, board):
    result = play(["red", "blue"], [("red", "house_1"), ("red", "house_2"), ("red", "baltic_avenue"),
                                    ("red", "boardwalk")])
    assert result.per_side["red"].house == board.space("boardwalk").value  # engine: highest value
    assert len(entries(result, "E3c", "red")) == 1


def test_E3c_given_house_choice_is_used(play, board):
    result = play(["red", "blue"], [("red", "house_1"), ("red", "baltic_avenue"), ("red", "boardwalk")],
                  house={"red": "baltic_avenue"})
    assert result.per_side["red"].house == board.space("baltic_avenue").value
    assert entries(result, "E3c", "red", kind="choice")[0].by == "player"


def test_E3c_bonus_is_not_doubled(play, board):
    yellow = [p.id for p in board.color_set("yellow")]
    result = play(["red", "blue"], [("red", p) for p in yellow] + [("red", "house_1")])
    assert result.delta["red"] == sum(board.space(p).value for p in yellow) + board.set_bonus["yellow"] + 250


def test_E3c_house_without_a_collected_property_pays_nothing(play):
    result = play(["blue", "red"], [("red", "house_1"), ("blue", "boardwalk"), ("red", "boardwalk")])
    assert result.delta["red"] == 0 and entries(result, "E3c", "red", kind="note")


def test_E3c_house_choice_not_collected_is_refused(board):
    message = _error(board, build(["blue", "red"], [("red", "house_1"), ("blue", "boardwalk"), ("red", "boardwalk")],
                                  house={"red": "boardwalk"}))
    assert message.endswith("house_choice.red: red did not collect for Boardwalk in E3a (E3c)")


def test_E3c_house_choice_without_a_house_token_is_refused(board):
    message = _error(board, build(["red", "blue"], [("red", "boardwalk")], house={"red": "boardwalk"}))
    assert "house_choice.red" in message and "(E3c)" in message


# -- E3d Luxury Tax -------------------------------------------------------------------------------
def test_E3d_pays_100_per_collected_property_once(play):
    result = play(["red", "blue"], [("red", "luxury_tax"), ("red", "luxury_tax"), ("red", "boardwalk"),
                                    ("red", "park_place")])
    assert result.per_side["red"].tax == 200
    assert result.pot_after == 700


def test_E3d_never_below_zero_pays_what_it_holds(board):
    small = small_board()
    result = score_round(build(["red", "blue"], [("red", "luxury_tax"), ("red", "cheap")]), small)
    tax = entries(result, "E3d", "red")[0]
    assert (tax.amount, tax.pot) == (-50, 50) and "pays what it holds" in tax.reason
    assert result.cash["red"] == 0


# -- E4 Free Parking ------------------------------------------------------------------------------
def test_E4_no_token_on_free_parking_the_pot_stays(play):
    result = play(["red", "blue"], [("red", "boardwalk")], pot=350)
    assert result.pot_after == 350 and result.refill == 0
    assert result.free_parking == {"red": 0, "blue": 0}


def test_E4_pot_includes_this_rounds_taxes_and_fees(play):
    result = play(["red", "blue"], [("red", "luxury_tax"), ("red", "boardwalk"), ("blue", "free_parking")],
                  cash={"blue": 100}, events=[("blue", "jail_fee")])
    assert result.free_parking["blue"] == 500 + 100 + 100


# -- N2 refill ------------------------------------------------------------------------------------
def test_N2_refill_only_when_the_pot_is_empty(play):
    emptied = play(["red", "blue"], [("red", "free_parking")])
    assert emptied.refill == 500 and emptied.pot_after == 500
    assert entries(emptied, "N2")[0].pot == 500
    empty_from_start = play(["red", "blue"], [], pot=0)
    assert empty_from_start.refill == 500
    left = play(["red", "blue"], [], pot=50)
    assert left.refill == 0 and left.pot_after == 50


# -- ledger contract ------------------------------------------------------------------------------
def test_ledger_accounts_for_every_coin(play):
    result = play(["blue", "red"], [("blue", "luxury_tax"), ("blue", "boardwalk"), ("red", "free_parking"),
                                    ("red", "house_1"), ("red", "baltic_avenue")], cash={"red": 200},
                  events=[("red", "jail_fee")])
    for side in result.order:
        assert sum(e.amount for e in result.ledger if e.side == side) == result.delta[side]
    assert result.pot_before + sum(e.pot for e in result.ledger) == result.pot_after
    assert {e.kind for e in result.ledger} <= {"money", "choice", "refused", "note"}
    assert all(e.reason.startswith(e.rule) for e in result.ledger if e.kind == "money")


# -- S1 the sliding phase -------------------------------------------------------------------------
def test_S1_only_the_final_positions_matter_not_the_order_tokens_are_listed(play):
    tokens = [("red", "railroad"), ("blue", "free_parking"), ("red", "house_1"), ("blue", "boardwalk"),
              ("red", "boardwalk"), ("red", "luxury_tax")]
    forward, backward = play(["blue", "red"], tokens), play(["blue", "red"], list(reversed(tokens)))
    assert (forward.delta, forward.pot_after) == (backward.delta, backward.pot_after)
    money = lambda r: [e.to_dict() for e in r.ledger if e.kind != "note"]  # noqa: E731
    assert money(forward) == money(backward)
