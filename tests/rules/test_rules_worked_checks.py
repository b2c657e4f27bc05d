"""RULES.md "Worked checks": each is its own test, with the figures RULES.md states."""

from __future__ import annotations

from rules_helpers import entries

from knockcam.rules import Game


def test_check1_rulebook_2024_example(play):
    """Check 1: blue +2,500; red +200 and half the pot; green +100 -100 and half; pot 600 split, refilled to 500."""
    result = play(
        ["blue", "red", "green"],
        [("blue", "railroad"), ("blue", "ventnor_avenue"), ("blue", "marvin_gardens"), ("blue", "house_1"),
         ("red", "marvin_gardens"), ("red", "st_james_place"), ("red", "free_parking"), ("red", None),
         ("green", "baltic_avenue"), ("green", "luxury_tax"), ("green", None), ("green", "free_parking")],
        railroad={"blue": ["atlantic_avenue"]}, house={"blue": "atlantic_avenue"})
    blue = result.per_side["blue"]
    assert (blue.property_cash, blue.set_bonus, blue.house) == (750, 1500, 250)
    assert blue.delta == 2500
    assert result.per_side["red"].property_cash == 200
    assert result.per_side["red"].properties == ("st_james_place",)  # Marvin Gardens is blue's
    assert (result.per_side["green"].property_cash, result.per_side["green"].tax) == (100, 100)
    assert result.free_parking == {"blue": 0, "red": 300, "green": 300}  # (500 + 100) / 2, the text wins
    assert result.delta == {"blue": 2500, "red": 500, "green": 300}
    assert result.refill == 500 and result.pot_after == 500


def test_check1_engine_makes_the_same_choices_when_none_are_given(play):
    """E2/E3c Decisions reproduce the rulebook's choices (Atlantic Avenue for both) on their own."""
    result = play(
        ["blue", "red", "green"],
        [("blue", "railroad"), ("blue", "ventnor_avenue"), ("blue", "marvin_gardens"), ("blue", "house_1"),
         ("red", "marvin_gardens"), ("red", "st_james_place"), ("red", "free_parking"),
         ("green", "baltic_avenue"), ("green", "luxury_tax"), ("green", "free_parking")])
    choices = [e for e in result.ledger if e.kind == "choice"]
    assert [(e.rule, e.by, e.chose) for e in choices] == [("E2", "engine", ("atlantic_avenue",)),
                                                         ("E3c", "engine", ("atlantic_avenue",))]
    assert result.delta["blue"] == 2500


def test_check2_two_railroad_tokens_to_park_place_and_boardwalk(play):
    """Check 2: 500 + 500 + the dark-blue bonus 2,000 = M3,000, whether given or chosen by the engine."""
    tokens = [("red", "railroad"), ("red", "railroad"), ("blue", "free_parking")]
    given = play(["red", "blue"], tokens, railroad={"red": ["park_place", "boardwalk"]})
    assert given.delta["red"] == 3000
    chosen = play(["red", "blue"], tokens)
    assert chosen.delta["red"] == 3000
    assert entries(chosen, "E2", "red", kind="choice")[0].chose == ("park_place", "boardwalk")


def test_check3_red_on_all_three_yellow_properties(play, board):
    """Check 3: 3 x 250 + 1,500 = M2,250."""
    yellow = [p.id for p in board.color_set("yellow")]
    result = play(["red", "blue"], [("red", p) for p in yellow])
    assert result.delta["red"] == 2250
    assert entries(result, "E3b", "red")[0].amount == 1500


def test_check4_most_tokens_on_free_parking_take_the_whole_pot(play):
    """Check 4: blue two tokens, red one: blue takes the pot."""
    result = play(["red", "blue"], [("blue", "free_parking"), ("blue", "free_parking"), ("red", "free_parking")])
    assert result.free_parking == {"red": 0, "blue": 500}


def test_check5_three_way_tie_splits_in_money_units_and_remainder_stays(play, board):
    """Check 5: M500, three tied, unit 50: M150 each, M50 stays; N2 adds nothing next round."""
    order = ["red", "blue", "green"]
    result = play(order, [(s, "free_parking") for s in order], unit=50)
    assert result.free_parking == {"red": 150, "blue": 150, "green": 150}
    assert result.pot_after == 50 and result.refill == 0
    game = Game(order, board)
    game.play([(s, "free_parking") for s in order])
    assert game.pot == 50
    game.play([])  # nobody on Free Parking: the M50 stays, the bank adds nothing
    assert game.pot == 50


def test_check6_round_one_jail_with_no_cash(play):
    """Check 6: a side with M0 cannot pay to re-slide; the token stays jailed and scores nothing."""
    result = play(["red", "blue"], [("red", "go_to_jail"), ("blue", "baltic_avenue")], events=[("red", "jail_fee")])
    refused = [e for e in result.ledger if e.kind == "refused"]
    assert [(e.rule, e.side, e.amount) for e in refused] == [("S4", "red", 0)]
    assert result.delta["red"] == 0 and result.pot_after == 500
    assert result.tokens[0].space is None  # jailed
