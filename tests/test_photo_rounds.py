"""A game file whose rounds name photos: each photo's tokens as ``knockcam score`` finds them, with a person's
calls and additions, played by the rules engine as if typed."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.board.layout import load_board
from knockcam.detect.tokens import Token
from knockcam.photo_rounds import _tokens_and_notes, photo_rounds
from knockcam.pipeline import ScoreOptions, Scorer

sys.path.insert(0, str(Path(__file__).resolve().parent / "report"))
from synthetic_scene import scene  # noqa: E402

ORDER = ["red", "yellow", "green", "blue"]


@pytest.fixture
def night(tmp_path):
    """A game folder: the round's photo, the empty-board frame and the calibration of the fixed camera."""
    s = scene()
    for path, name in ((s.photo, "round1.jpg"), (s.empty, "empty.jpg"), (s.calibration, "camera.yaml")):
        shutil.copy(path, tmp_path / name)
    return tmp_path


def _game(folder: Path, rounds: list, **top) -> Path:
    path = folder / "game.yaml"
    path.write_text(yaml.safe_dump({"order": ORDER, "pot": 500, "camera": {"reference": "empty.jpg",
                                                                          "calibration": "camera.yaml"},
                                    **top, "rounds": rounds}))
    return path


def test_a_photo_rounds_tokens_are_the_ones_score_finds_with_the_calls_applied(night):
    game = _game(night, [{"photo": "round1.jpg", "calls": {1: "none", 2: "chance"}, "add": ["red=boardwalk"]},
                         {"tokens": [{"side": "red", "space": "park_place"}]}])
    data, seen = photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")
    scored = Scorer(ScoreOptions(calibration=night / "camera.yaml", reference=night / "empty.jpg",
                                 calls=((1, "none"), (2, "chance")), added=(("red", "boardwalk"),))
                    ).score(night / "round1.jpg")
    expected = [{"side": p.side, "space": p.space if p.state == "on_space" else None} for p in scored.tokens
                if "extra_token" not in p.flags]
    assert data["rounds"][0] == {"tokens": expected} and expected[0]["space"] == "chance"  # #2; #1 is none
    assert {"side": "red", "space": "boardwalk"} in expected and "camera" not in data
    assert data["rounds"][1] == {"tokens": [{"side": "red", "space": "park_place"}]}
    assert list(seen) == [0] and seen[0]["photo"] == "round1.jpg" and seen[0]["calibration"] == "truth"
    notes = "\n".join(seen[0]["notes"])
    assert "#1 " in notes and "not a token, a human's call" in notes and "chance, a human's call" in notes
    assert "red: boardwalk, added by hand" in notes


def test_the_game_command_plays_photo_rounds_and_says_what_to_look_at(night, capsys):
    game = _game(night, [{"photo": "round1.jpg"}])
    assert main(["game", str(game), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rounds_played"] == 1 and out["photos"][0]["round"] == 1
    assert out["rounds"][0]["order"] == ORDER and sum(out["rounds"][0]["delta"].values()) > 0


@pytest.mark.parametrize("round_, words", [
    ({"photo": "missing.jpg"}, "rounds[0].photo: missing.jpg not found beside the game file"),
    ({"photo": "round1.jpg", "tokens": []}, "rounds[0]: give its tokens or a photo, not both"),
    ({"photo": ["a.jpg"]}, "rounds[0].photo: a photo's path beside the game file, not ['a.jpg']"),
    ({"photo": "round1.jpg", "calls": ["5=chance"]}, "rounds[0].calls: a mapping of token number"),
    ({"photo": "round1.jpg", "calls": {1: "chanse"}}, "did you mean chance?"),
    ({"photo": "round1.jpg", "add": "red=boardwalk"}, "rounds[0].add: a list of SIDE=SPACE"),
    ({"photo": "round1.jpg", "add": ["red=nowhere"]}, "game.yaml: rounds[0].add [red=nowhere]: 'nowhere' is not a "),
    ({"photo": "round1.jpg", "calls": {0: "chance"}}, "rounds[0].calls {0: chance}: tokens are numbered from 1"),
    ({"photo": "round1.jpg", "calls": {99: "chance"}}, "rounds[0].calls {99: chance}: the photo shows "),
])
def test_a_bad_photo_round_is_named_in_one_line(night, round_, words):
    game = _game(night, [round_])
    with pytest.raises(KnockcamError) as err:
        photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")
    assert words in str(err.value) and "\n" not in str(err.value)
    assert "--" not in str(err.value) and str(err.value).count(str(round_["photo"])) <= 1  # the file's words, once


def test_every_photo_round_is_checked_before_any_photo_is_scored(night, monkeypatch):
    def not_yet(self, path):
        raise AssertionError("a photo was scored before the game file was checked")

    monkeypatch.setattr(Scorer, "score", not_yet)
    for bad, words in (({"photo": "round2.jpg"}, "rounds[1].photo: round2.jpg not found beside the game file"),
                       ({"photo": "round1.jpg", "add": ["red=nowhere"]}, "rounds[1].add [red=nowhere]: "),
                       ({"photo": "round1.jpg", "colour": "red"},
                        "rounds[1].colour: unknown field of a photo round (expected one of photo, calls, add, "),
                       ({"photo": "round1.jpg", "reference": "empty.jpg"},
                        "rounds[1].reference: one camera's reference serves every photo: give it once, at the top "
                        "of the game file, as camera: {reference: ...}"),
                       ({"tokens": [{"side": "red"}]}, "rounds[1]: tokens[0].space: missing"),
                       ({"photo": "round1.jpg", "events": [{"side": "red"}]}, "rounds[1]: events[0]")):
        game = _game(night, [{"photo": "round1.jpg"}, bad])
        with pytest.raises(KnockcamError) as err:
            photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")
        assert words in str(err.value)
    game = _game(night, [{"photo": "round1.jpg"}], sides=ORDER)  # outside the rounds too
    with pytest.raises(KnockcamError, match="game.yaml: sides: unknown field"):
        photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")


def test_the_empty_board_frames_board_is_found_once_for_all_photo_rounds(night, monkeypatch):
    import knockcam.pipeline as pipeline

    found = []
    automatic = pipeline._automatic
    monkeypatch.setattr(pipeline, "_automatic", lambda *args: found.append(args[1].shape) or automatic(*args))
    game = night / "game.yaml"
    game.write_text(yaml.safe_dump({"order": ORDER, "pot": 500, "camera": {"reference": "empty.jpg"},
                                    "rounds": [{"photo": "round1.jpg"}, {"photo": "round1.jpg", "calls": {1: "none"}},
                                               {"photo": "round1.jpg", "add": ["red=boardwalk"]}]}))
    data, seen = photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")
    assert len(found) == 1 and [seen[i]["calibration"] for i in range(3)] == ["auto"] * 3
    first, called, added = (data["rounds"][i]["tokens"] for i in range(3))
    assert called == first[1:] and added == first + [{"side": "red", "space": "boardwalk"}]  # each round its own


def test_a_camera_entry_with_anything_else_is_refused(night):
    game = _game(night, [{"photo": "round1.jpg"}], camera={"lens": "x.yaml"})
    with pytest.raises(KnockcamError, match="camera: a mapping with reference and/or calibration"):
        photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")


def test_a_token_in_doubt_itself_is_noted_as_such_not_as_a_close_call():
    park_place = load_board().space("park_place").polygon
    centre = (sum(x for x, _ in park_place) / len(park_place), sum(y for _, y in park_place) / len(park_place))
    lone = Token("blue", centre, 0.3, 0.5, source="reference_only")  # one detector alone saw it

    def detect(image, calibration, board, reference=None):
        return [lone]

    s = scene()
    scored = Scorer(ScoreOptions(calibration=s.calibration), detect).score(s.photo)
    tokens, notes = _tokens_and_notes(scored, ("red", "blue"))
    assert tokens == [{"side": "blue", "space": "park_place"}]
    assert notes[0] == ("#1 blue is in doubt (disagreement), scored as park_place: look, and settle it with calls: "
                        "{1: SPACE}, or {1: none} if there is no token")


def test_advice_to_give_an_option_says_where_it_goes_in_a_game_file(night):
    """A photo round's refusal speaks the command line's words (score without --reference, give --corners):
    the game file's own place for them is said after it."""
    from knockcam.photo_rounds import _in_a_game_file

    other = Path(__file__).resolve().parents[1] / "fixtures" / "scenes" / "oblique_60_ref.jpg"
    shutil.copy(other, night / "empty.jpg")  # an empty-board frame from another camera and board
    game = _game(night, [{"photo": "round1.jpg"}], camera={"reference": "empty.jpg"})
    with pytest.raises(KnockcamError) as err:
        photo_rounds(yaml.safe_load(game.read_text()), game, None, "game.yaml")
    said = str(err.value)
    assert said.startswith("game.yaml: rounds[0].photo round1.jpg: ") and "--reference" in said
    assert said.endswith("(in a game file these go once, at its top, as camera: {calibration: FILE, reference: "
                         "IMAGE}; 'knockcam calibrate PHOTO --corners ...' or '--max-error MM' writes the calibration "
                         "file)") and "\n" not in said
    assert _in_a_game_file("the board is far too dark in the photo: light the board") == ""
