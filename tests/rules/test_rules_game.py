"""A Game across rounds: R5, N1-N3 carried state, W1 standings, S2/S4 helpers, save and resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from knockcam.errors import KnockcamError
from knockcam.rules import Game, load_file

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rounds" / "four_side_game.yaml"


def test_four_round_game_rotation_refill_and_carried_cash(board):
    order = ["green", "red", "blue", "yellow"]
    game = Game(order, board)
    # Round 1: green alone on Free Parking empties the pot -> N2 refill.
    r1 = game.play([("green", "free_parking"), ("red", "boardwalk"), ("blue", "baltic_avenue")])
    assert r1.refill == 500 and game.pot == 500
    assert game.cash == {"green": 500, "red": 500, "blue": 100, "yellow": 0}
    assert game.order == ("red", "blue", "yellow", "green")  # N3
    # Round 2: red pays tax into the pot; nobody on Free Parking -> the pot carries, no refill.
    r2 = game.play([("red", "luxury_tax"), ("red", "park_place"), ("yellow", "boardwalk")])
    assert r2.refill == 0 and game.pot == 600
    assert r2.cash_before["red"] == 500 and game.cash["red"] == 900
    assert game.order == ("blue", "yellow", "green", "red")
    # Round 3: blue pays a jail fee from carried cash (S4), three-way tie leaves a remainder.
    assert game.can_pay_jail("blue") and game.pay_jail("blue")
    assert game.cash_now("blue") == 0 and not game.can_pay_jail("blue")
    r3 = game.play([("blue", "free_parking"), ("yellow", "free_parking"), ("green", "free_parking")])
    assert r3.pot_before == 600 and r3.free_parking == {"blue": 200, "yellow": 200, "green": 200, "red": 0}
    assert game.pot == 100  # 600 + the M100 jail fee - 3 x 200
    assert game.order == ("yellow", "green", "red", "blue")
    # Round 4: the last one; yellow takes the pot.
    r4 = game.play([("yellow", "free_parking"), ("red", "free_parking"), ("yellow", "free_parking")])
    assert r4.free_parking["yellow"] == 100 and r4.refill == 500
    assert game.over and game.round_number == 4
    assert game.cash == {"green": 700, "red": 900, "blue": 200, "yellow": 800}
    assert [(s.place, s.side) for s in game.standings()] == [(1, "red"), (2, "yellow"), (3, "green"), (4, "blue")]
    with pytest.raises(KnockcamError, match=r"game is over.*\(R5\)"):
        game.play([])


def test_R5_rounds_equal_sides(board):
    assert Game(["red", "blue", "green"], board).rounds_total == 3


def test_W1_equal_money_shares_the_place(board):
    game = Game(["red", "blue", "green"], board, cash={"red": 500, "blue": 500, "green": 100})
    assert [(s.place, s.side, s.cash) for s in game.standings()] == [(1, "red", 500), (1, "blue", 500),
                                                                     (3, "green", 100)]


def test_N1_tokens_return_each_round_is_scored_from_its_own_positions(board):
    game = Game(["red", "blue"], board)
    game.play([("red", "boardwalk")])
    second = game.play([])
    assert second.delta == {"blue": 0, "red": 0}


def test_play_round_refuses_an_input_that_does_not_carry_the_state(board):
    game = Game(["red", "blue"], board)
    game.play([("red", "boardwalk")])
    good = game.round_input([])
    from dataclasses import replace
    with pytest.raises(KnockcamError, match=r"order: expected \['blue', 'red'\].*\(R6\)"):
        game.play_round(replace(good, order=("red", "blue")))
    with pytest.raises(KnockcamError, match=r"pot: .*\(R4\)"):
        game.play_round(replace(good, pot=0))
    with pytest.raises(KnockcamError, match=r"cash.red: .*\(R3\)"):
        game.play_round(replace(good, cash={"red": 0, "blue": 0}))


def test_S4_cannot_pay_jail_in_round_one(board):
    game = Game(["red", "blue"], board)
    assert not game.can_pay_jail("red") and not game.pay_jail("red") and game.pending == []


def test_S2_reslide_by_variant(board):
    none = Game(["red", "blue"], board)
    assert not none.can_reslide("red")
    free = Game(["red", "blue"], board, reslide_off_board="free")
    assert free.reslide("red") and free.pending == []
    assert not free.can_reslide("red", hit_another_token=True)
    paid = Game(["red", "blue"], board, reslide_off_board="paid", cash={"red": 100})
    assert not paid.can_reslide("blue")  # M0
    assert paid.reslide("red") and not paid.reslide("red")
    result = paid.play([])
    assert result.cash["red"] == 0 and result.pot_after == 600


def test_to_dict_from_dict_resumes_the_same_game(board):
    game = Game(["red", "blue", "green"], board, reslide_off_board="paid")
    game.play([("red", "free_parking"), ("blue", "boardwalk"), ("green", "luxury_tax"), ("green", "park_place")])
    game.pay_jail("blue")
    saved = json.loads(json.dumps(game.to_dict()))
    resumed = Game.from_dict(saved, board)
    assert (resumed.order, resumed.cash, resumed.pot, resumed.round_number, resumed.pending) == \
           (game.order, game.cash, game.pot, game.round_number, game.pending)
    assert [r.to_dict() for r in resumed.history] == [r.to_dict() for r in game.history]
    saved["state"]["pot"] += 50
    with pytest.raises(KnockcamError, match="state: the saved state does not match"):
        Game.from_dict(saved, board)


def test_game_file_fixture_plays_four_rounds(board):
    game = Game.from_dict(load_file(FIXTURE), board, where=FIXTURE.name)
    assert game.over and len(game.history) == 4
    assert [r.order[0] for r in game.history] == ["green", "red", "blue", "yellow"]  # each side starts once
    for before, after in zip(game.history, game.history[1:]):
        assert after.cash_before == before.cash and after.pot_before == before.pot_after
    assert game.history[0].ledger[0].kind == "refused"  # yellow cannot pay its jail fee in round 1


def test_game_file_round_that_contradicts_the_carried_state(board):
    data = {"order": ["red", "blue"], "rounds": [{"tokens": []}, {"order": ["red", "blue"], "tokens": []}]}
    with pytest.raises(KnockcamError, match=r"rounds\[1\]: order: .*\(R6\)"):
        Game.from_dict(data, board)


def test_a_game_round_that_names_another_reslide_variant_is_refused_not_ignored(board):
    """S2: the game's variant governs its rounds; a round saying otherwise was accepted and its word ignored."""
    data = {"order": ["red", "blue"], "cash": {"red": 300}, "reslide_off_board": "paid",
            "rounds": [{"reslide_off_board": "none", "events": [{"side": "red", "kind": "reslide_fee"}], "tokens": []}]}
    with pytest.raises(KnockcamError, match=r"rounds\[0\]: reslide_off_board: this game plays 'paid', not 'none': "
                                            r"the variant is set once, at the top of the game file \(S2\)"):
        Game.from_dict(data, board)
    data["rounds"][0]["reslide_off_board"] = "paid"  # saying the game's own is fine
    assert Game.from_dict(data, board).cash["red"] == 200
