"""``knockcam round`` and ``knockcam game``: the JSON contract, the tables, and bad input (exit 2, one line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from knockcam.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mangle import answered_in_one_line, mangled  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ROUND = ROOT / "fixtures" / "rounds" / "rulebook_example.json"
GAME = ROOT / "fixtures" / "rounds" / "four_side_game.yaml"


def test_round_json_contract_on_the_fixture(capsys):
    assert main(["round", str(ROUND), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("delta", "cash", "pot_after", "free_parking", "ledger", "pot_before", "order", "next_order",
                "per_side", "refill"):
        assert key in out
    assert out["delta"] == {"blue": 2500, "red": 500, "green": 300}
    assert out["pot_after"] == 500 and out["free_parking"]["red"] == 300
    assert {"rule", "side", "amount", "pot", "reason", "kind"} <= set(out["ledger"][0])
    assert "E3a +250 Atlantic Avenue" in [e["reason"] for e in out["ledger"]]


def test_round_table_output(capsys):
    assert main(["round", str(ROUND)]) == 0
    out = capsys.readouterr().out
    assert "Ledger" in out and "E3b +1500 yellow set bonus" in out and "blue" in out


def test_round_with_explicit_board(capsys):
    from knockcam.board import default_board_path
    assert main(["round", str(ROUND), "--board", str(default_board_path()), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["delta"]["blue"] == 2500


def test_game_cli_plays_the_fixture_and_ranks(capsys):
    assert main(["game", str(GAME), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["final"] and len(out["rounds"]) == 4
    cash = sorted(out["cash"].values(), reverse=True)
    assert [s["cash"] for s in out["standings"]] == cash
    assert main(["game", str(GAME)]) == 0
    assert "Standings (W1, final)" in capsys.readouterr().out


BASE = {"order": ["blue", "red"], "pot": 500, "tokens": [{"side": "blue", "space": "railroad"},
                                                        {"side": "red", "space": "boardwalk"},
                                                        {"side": "red", "space": "house_1"}]}


@pytest.mark.parametrize("change, needle", [
    ({"order": ["blue", "pink"]}, "order[1]: unknown side 'pink'"),
    ({"tokens": [{"side": "blue", "space": "the_moon"}]}, "tokens[0].space: unknown space id 'the_moon'"),
    ({"order": ["blue", "blue"]}, "order[1]: side 'blue' listed twice (R1)"),
    ({"tokens": [{"side": "red", "space": None}] * 5}, "tokens: side 'red' has more than 4 tokens (R2)"),
    ({"pot": -50}, "pot: must be a whole number of M, at least 0, not -50 (R4)"),
    ({"railroad_choice": {"blue": ["boardwalk"]}}, "railroad_choice.blue[0]: Boardwalk is occupied"),
    ({"railroad_choice": {"blue": ["chance"]}}, "railroad_choice.blue[0]: 'chance' is a chance, not a property (E2)"),
    ({"house_choice": {"red": "park_place"}}, "house_choice.red: red did not collect for Park Place in E3a (E3c)"),
    ({"cash": {"red": "lots"}}, "cash.red: must be a whole number of M"),
    ({"events": [{"side": "red"}]}, "events[0]: must be a mapping with side and kind"),
    ({"events": [{"side": "red", "kind": ["jail_fee"]}]}, "events[0].kind: must be jail_fee or reslide_fee, not ['jail_fee']"),
    ({"tokens": [{"side": "red"}]}, "tokens[0].space: missing"),
    ({"hosue_choice": {}}, "hosue_choice: unknown field"),
])
def test_round_bad_input_exits_2_with_one_line(tmp_path, capsys, change, needle):
    path = tmp_path / "round.json"
    path.write_text(json.dumps({**BASE, **change}))
    assert main(["round", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and "\n" not in err and "Traceback" not in err
    assert needle in err, err


@pytest.mark.parametrize("name, text, needle", [
    ("round.json", '{"order": ["red", "blue"], "pot": 500,', "not valid JSON"),
    ("round.yaml", "order: [red, blue\npot: 500\n", "not valid YAML"),
    ("round.yaml", "- just\n- a list\n", "a round is a mapping"),
    ("round.yaml", "order: [red, blue]\npot: 500\norder: [blue, red]\n", "'order' is given twice"),
])
def test_round_malformed_file_exits_2(tmp_path, capsys, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    assert main(["round", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


def test_round_missing_file_exits_2(tmp_path, capsys):
    assert main(["round", str(tmp_path / "nope.json")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_round_yaml_file_is_accepted(tmp_path, capsys):
    import yaml
    path = tmp_path / "round.yaml"
    path.write_text(yaml.safe_dump(json.loads(ROUND.read_text())))
    assert main(["round", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["delta"]["blue"] == 2500


def test_spaces_may_be_written_by_their_printed_names(tmp_path, capsys):
    """A round typed by hand may name a space as the board prints it; the result is the ids' to the coin."""
    assert main(["round", str(ROUND), "--json"]) == 0
    by_id = json.loads(capsys.readouterr().out)
    data = json.loads(ROUND.read_text())
    from knockcam.board import load_board
    names = {space.id: space.name for space in load_board().spaces if space.kind != "house"}
    for token in data["tokens"]:
        token["space"] = names.get(token["space"], token["space"]).upper() if token["space"] else None
    data["railroad_choice"] = {side: [names[p].lower() for p in picks] for side, picks in
                               data["railroad_choice"].items()}
    data["house_choice"] = {side: names[pick] for side, pick in data["house_choice"].items()}
    path = tmp_path / "round.json"
    path.write_text(json.dumps(data))
    assert main(["round", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_id
    game = {"order": ["red", "blue"], "rounds": [{"tokens": [{"side": "red", "space": "Park Place"},
                                                             {"side": "blue", "space": "go to jail"}]}]}
    path.write_text(json.dumps(game))
    assert main(["game", str(path), "--json"]) == 0
    park_place = load_board().space("park_place").value
    assert json.loads(capsys.readouterr().out)["cash"] == {"red": park_place, "blue": 0}


def test_game_bad_round_names_the_round_and_field(tmp_path, capsys):
    path = tmp_path / "game.json"
    path.write_text(json.dumps({"order": ["red", "blue"], "rounds": [{"tokens": []},
                                                                    {"tokens": [{"side": "red", "space": "x"}]}]}))
    assert main(["game", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "rounds[1]: tokens[0].space: unknown space id 'x'" in err and "\n" not in err
    pending = [{"side": "red", "kind": ["jail_fee"]}, {"side": "red", "kind": {"fee": 50}},  # a list or a mapping
               {"side": "red", "kind": "bribe"}, {"side": "green", "kind": "jail_fee"}, {"kind": "jail_fee"}, "red"]
    for event in pending:
        path.write_text(json.dumps({"order": ["red", "blue"], "rounds": [{"tokens": []}], "pending_events": [event]}))
        assert main(["game", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "pending_events[0]" in err and "jail_fee or reslide_fee" in err and "\n" not in err


def test_rules_engine_imports_no_vision_stack():
    """The engine is pure Python: importing it (and the CLI verbs' modules) loads neither numpy nor cv2."""
    code = ("import sys, knockcam.rules, knockcam.cli.round, knockcam.cli.game; "
            "bad = [m for m in ('numpy', 'cv2', 'onnxruntime', 'torch') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_command_line_loads_no_vision_stack_before_a_verb_needs_it():
    """Every verb's options are registered for any command: `knockcam round` paid 0.15 s for OpenCV when the
    benchmark's default seed was read from knockcam.bench (it lives in knockcam.seeds)."""
    code = ("import sys; from knockcam.cli import build_parser; build_parser(); "
            "bad = [m for m in ('numpy', 'cv2', 'onnxruntime', 'torch') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_mangled_round_or_game_file_is_scored_or_refused_in_one_line(tmp_path):
    """Random manglings of the shipped examples (an event kind given as a list was a TypeError)."""
    import random

    import yaml

    rng = random.Random(0)
    examples = {"round": json.loads(ROUND.read_text()), "game": yaml.safe_load(GAME.read_text())}
    path = tmp_path / "mangled.json"
    refused = 0
    for _ in range(300):
        verb = rng.choice(sorted(examples))
        path.write_text(json.dumps(mangled(examples[verb], rng)))
        refused += answered_in_one_line(main, [verb, str(path), "--json"]) == 2
    assert 0 < refused < 300  # some manglings still make a valid file


def test_a_round_file_given_to_game_is_sent_to_round(capsys):
    assert main(["game", str(ROUND)]) == 2
    err = capsys.readouterr().err
    assert "this is one round" in err and "knockcam round" in err and err.count("\n") == 1
