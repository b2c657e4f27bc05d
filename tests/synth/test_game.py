"""``knockcam synth OUT --game``: a whole random game written for ``knockcam live --video``, with its truth."""

from __future__ import annotations

import json
import shlex

from knockcam.cli import main


def test_a_written_game_plays_through_live_to_the_standings_its_truth_gives(tmp_path, capsys):
    out = tmp_path / "game"
    assert main(["synth", str(out), "--game", "--seed", "3", "--order", "red,blue", "--tokens", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    truth = json.loads((out / "truth.json").read_text())
    assert truth["order"] == ["red", "blue"] and len(truth["rounds"]) == 2 and summary["frames"] == truth["frames"]
    # the command it prints plays the game (reference detector only here, as the other live CLI tests)
    play = shlex.split(summary["play"])
    assert play[:2] == ["knockcam", "live"]
    assert main(play[1:] + ["--log", str(tmp_path / "g.jsonl"), "--quiet", "--json", "--no-model"]) == 0
    played = json.loads(capsys.readouterr().out)
    assert played["over"] is True and played["standings"] == truth["standings"]


def test_bad_game_options_are_one_line_errors(tmp_path, capsys):
    assert main(["synth", str(tmp_path / "g"), "--game", "--order", "red,pink"]) == 2
    assert "--order: unknown side 'pink'" in capsys.readouterr().err
    assert main(["synth", str(tmp_path / "g"), "--game", "--tokens", "5"]) == 2
    assert "--tokens must be 1 to 4" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()  # nothing half-written
    assert main(["synth", str(tmp_path / "s"), "--count", "1", "--order", "red,blue"]) == 2  # not a game's stills
    assert "--order and --tokens are for --game" in capsys.readouterr().err
