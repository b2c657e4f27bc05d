"""``knockcam score``, ``explain`` and ``demo`` end to end on synthetic photos (with the reference-frame detector, and alone)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from cli_run import knockcam
from knockcam.pipeline import TOKEN_KEYS


def test_score_json_is_the_contract_and_evidence_is_written(tmp_path, scene):
    evidence = tmp_path / "evidence.png"
    result = knockcam("score", scene.photo, "--calibration", scene.calibration, "--reference", scene.empty,
                      "--order", "red,yellow,green,blue", "--pot", "500", "--json", "--evidence", evidence)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert list(out) == ["tokens", "calibration", "round", "hidden"]
    assert out["tokens"] and all(tuple(t) == TOKEN_KEYS for t in out["tokens"])
    assert out["calibration"]["method"] == "truth"
    assert out["round"]["order"] == ["red", "yellow", "green", "blue"] and out["round"]["pot_before"] == 500
    picture = cv2.imread(str(evidence))
    assert picture is not None and picture.shape[1] > 2000
    # the reference detector finds the true bases: each unflagged token has a true token of its side nearby
    truth = [(t["side"], np.array(t["xy_mm"])) for t in scene.truth["tokens"]]
    for token in out["tokens"]:
        if not token["ambiguous"]:
            assert min(np.linalg.norm(xy - token["xy_mm"]) for side, xy in truth if side == token["side"]) < 10


def test_score_prints_tables_without_json(tmp_path, scene):
    result = knockcam("score", scene.photo, "--calibration", scene.calibration, "--reference", scene.empty,
                      "--order", "red,blue,green,yellow")
    assert result.returncode == 0, result.stderr
    for words in ("Tokens in", "Rests on", "Payout: turn order red, blue, green, yellow", "Free Parking (E4)"):
        assert words in result.stdout


def test_score_says_when_the_photo_could_not_check_the_calibration_file(tmp_path):
    """The overhead fixture blurred past reading its printed lines: its calibration file is used as given, and the
    output says so; the photo as shot checks it and says nothing."""
    from knockcam.board import load_board
    from knockcam.calibrate.calibration import Calibration

    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    calibration = tmp_path / "overhead.yaml"
    Calibration.from_dict(json.loads((scenes / "overhead.json").read_text())["calibration"]).save(
        calibration, load_board().size_mm)
    blurred = tmp_path / "blurred.png"
    cv2.imwrite(str(blurred), cv2.GaussianBlur(cv2.imread(str(scenes / "overhead.jpg")), (0, 0), 8))
    for photo, told in ((blurred, True), (scenes / "overhead.jpg", False)):
        result = knockcam("score", photo, "--calibration", calibration)
        assert result.returncode == 0, result.stderr
        said = " ".join(result.stdout.split())  # rich wraps at 80 columns
        assert ("calibration file used as given: this photo shows too little of the board's printed lines to check "
                "it; if the camera moved since it was made, every token is read elsewhere" in said) is told


def test_explain_prints_every_share(tmp_path, scene):
    out = tmp_path / "side.png"
    side = scene.truth["tokens"][0]["side"]
    result = knockcam("explain", scene.photo, "--token", side, "--calibration", scene.calibration,
                      "--reference", scene.empty, "--json", "--out", out)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["sides"] == [side] and data["tokens"]
    for token in data["tokens"]:
        assert token["side"] == side
        assert abs(sum(token["shares"].values()) - 1.0) < 5e-3
        assert token["close_within_mm"] >= 1.0  # assign.yaml min_margin_mm
    assert cv2.imread(str(out)) is not None
    result = knockcam("explain", scene.photo, "--token", "purple", "--calibration", scene.calibration)
    assert result.returncode == 2 and "purple" in result.stderr
    result = knockcam("explain", scene.photo, "--token", "#1", "--calibration", scene.calibration, "--json",
                      cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["numbers"] == [1] and [t["n"] for t in data["tokens"]] == [1]
    assert (tmp_path / f"{Path(scene.photo).stem}-1-explain.png").is_file()
    result = knockcam("explain", scene.photo, "--token", "#1", "--calibration", scene.calibration, cwd=tmp_path)
    band = data["tokens"][0]["close_within_mm"]
    assert result.returncode == 0 and f"(a call is close within {band:.1f} mm of a line)" in result.stdout


def test_demo_from_the_repository(tmp_path):
    """``knockcam demo`` as the README runs it: the committed fixture, any working folder, nothing else."""
    from knockcam.cli.demo import repo_root

    if not (repo_root() / "fixtures" / "scenes").is_dir():
        import pytest

        pytest.skip("fixtures/scenes is not in this checkout")
    result = knockcam("demo", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    written = sorted((tmp_path / "out").iterdir())
    assert [p.suffix for p in written] == [".png", ".json"] or [p.suffix for p in written] == [".json", ".png"]
    assert "evidence picture written to out/" in result.stdout and "Free Parking (E4)" in result.stdout
    assert "Payout" in result.stdout and "ground truth of this synthetic photo" in result.stdout
    assert cv2.imread(str(tmp_path / "out" / "all_16_tokens-evidence.png")) is not None
    assert list(json.loads((tmp_path / "out" / "all_16_tokens.json").read_text())) == ["tokens", "calibration", "round", "hidden"]


def test_demo_on_a_full_disk_leaves_neither_the_picture_nor_its_json(tmp_path, capsys, disk_full_after):
    from knockcam.cli import main
    from knockcam.cli.demo import repo_root

    if not (repo_root() / "fixtures" / "scenes").is_dir():
        import pytest

        pytest.skip("fixtures/scenes is not in this checkout")
    disk_full_after(1)
    assert main(["demo", "--out", str(tmp_path / "out")]) == 2
    assert "none of all_16_tokens-evidence.png, all_16_tokens.json was written" in capsys.readouterr().err
    assert list((tmp_path / "out").iterdir()) == []


def test_the_explain_command_the_demo_suggests_shows_the_demos_close_call(tmp_path, capsys, monkeypatch):
    """The hint repeats the photo and the options that number the tokens (here the empty-board frame): without
    them explain numbered the tokens another way, and its #5 was another token."""
    import re
    import shlex

    from knockcam.cli import main
    from knockcam.cli.demo import repo_root

    if not (repo_root() / "fixtures" / "scenes").is_dir():
        import pytest

        pytest.skip("fixtures/scenes is not in this checkout")
    monkeypatch.chdir(tmp_path)  # the paths suggested work from wherever the demo was run
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["demo", "--out", "out"]) == 0
    hint = re.search(r"'knockcam explain (.+) --token N'", capsys.readouterr().out).group(1)
    assert "--reference" in hint
    tokens = json.loads((tmp_path / "out" / "all_16_tokens.json").read_text())["tokens"]
    close = [n for n, t in enumerate(tokens, 1) if t["ambiguous"]]
    assert close
    assert main(["explain", *shlex.split(hint), "--token", ",".join(map(str, close)), "--json", "--out", "e.png"]) == 0
    explained = json.loads(capsys.readouterr().out)["tokens"]
    assert [(e["n"], e["side"], e["xy_mm"], e["ambiguous"]) for e in explained] == [
        (n, tokens[n - 1]["side"], tokens[n - 1]["xy_mm"], True) for n in close]  # the same token, in doubt


def test_explain_of_a_side_with_no_token_in_the_photo_writes_no_picture(tmp_path, capsys, monkeypatch):
    from knockcam.cli import main
    from knockcam.cli.demo import repo_root

    photo = repo_root() / "fixtures" / "scenes" / "overhead.jpg"
    if not photo.is_file():
        import pytest

        pytest.skip("fixtures/scenes is not in this checkout")
    monkeypatch.chdir(tmp_path)
    assert main(["explain", str(photo), "--token", "red", "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["tokens"] == [] and said["close_ups"] is None and list(tmp_path.iterdir()) == []
    assert main(["explain", str(photo), "--token", "red"]) == 0
    out = capsys.readouterr().out
    assert "no red tokens found" in out and "close-ups" not in out and list(tmp_path.iterdir()) == []


def test_the_options_repeated_in_a_hint_are_those_that_number_the_tokens():
    from knockcam.cli.score import same_tokens_options

    assert same_tokens_options("my photos/p.jpg", corners="1,2 3,4 5,6 7,8", board="b.yaml", max_error=4.5) == \
        "'my photos/p.jpg' --corners '1,2 3,4 5,6 7,8' --board b.yaml --max-error 4.5"
    assert same_tokens_options("p.jpg", calibration="cam.yaml", reference="empty.jpg") == \
        "p.jpg --calibration cam.yaml --reference empty.jpg"


def test_demo_truth_check_counts_against_the_truth(tmp_path, scene):
    """Scored from the true bases, every token is found: right, or a close call; none wrong, none missed."""
    import re

    from knockcam.cli.demo import DemoScene, truth_check
    from knockcam.pipeline import ScoreOptions, score_photo

    scored = score_photo(scene.photo, ScoreOptions(calibration=scene.calibration), detector=scene.truth_detector())
    truth = scene.photo.with_suffix(".json")
    line = truth_check(scored, DemoScene(photo=scene.photo, reference=None, truth=truth))
    n = len(scene.truth["tokens"])
    right, wrong, close, missed = map(int, re.findall(r"(\d+) (?:on the right|on a wrong|close calls?|not found)", line))
    assert f"({n} tokens)" in line and wrong == 0 and missed == 0 and right + close == n
    assert close == sum(p.ambiguous for p in scored.positions)


def test_demo_uses_the_automatic_calibration_only_when_it_agrees(scene):
    """The demo scores with the board finder's calibration when it matches the photo's saved one, else the saved one."""
    from dataclasses import replace
    from types import SimpleNamespace

    from knockcam.board.layout import load_board
    from knockcam.cli.demo import DemoScene, _saved_calibration, choose_calibration
    from knockcam.errors import KnockcamError

    demo_scene = DemoScene(photo=scene.photo, reference=scene.empty, truth=scene.photo.with_suffix(".json"))
    saved = _saved_calibration(demo_scene)
    shift = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1.0]])

    def finder(dx_px):
        shift[0, 2] = dx_px
        found = replace(saved, method="auto", homography=shift @ saved.homography, error_mm=0.4)
        return SimpleNamespace(board=load_board(), calibrate=lambda image: found)

    cal, note = choose_calibration(demo_scene, finder(0.5))
    assert cal.method == "auto" and "found automatically" in note
    cal, note = choose_calibration(demo_scene, finder(40.0))
    assert cal.method == "saved" and np.allclose(cal.homography, saved.homography) and "off by up to" in note

    def fails(image):
        raise KnockcamError("board not found: give --corners")

    cal, note = choose_calibration(demo_scene, SimpleNamespace(board=load_board(), calibrate=fails))
    assert cal.method == "saved" and "board not found" in note


def test_a_photo_alone_reports_the_hand_over_the_board_and_the_spaces_under_it(tmp_path):
    """Without an empty-board frame the cover network sees the hand: the JSON names the spaces to look at."""
    import pytest

    from knockcam.board import load_board
    from knockcam.detect import cover, load_model
    from knockcam.synth.scene import config, make_photo

    if load_model() is None or not cover.path().is_file():
        pytest.skip("models/tokens.onnx or models/cover.onnx not trained yet")
    cfg = config()
    hands = {**cfg, "occluders": {**cfg["occluders"], "hand_p": 1.0, "hand_over_token_p": 1.0, "cup_p": 0.0,
                                  "card_p": 0.0, "banknote_p": 0.0}}
    jpeg, truth, rendered = make_photo(load_board(), 25658, 0, hands)  # two tokens all but hidden under the hand
    photo = tmp_path / "hand.jpg"
    photo.write_bytes(jpeg)
    corners = " ".join(f"{x:.1f},{y:.1f}" for x, y in truth["corners_px"])
    result = knockcam("score", photo, "--corners", corners, "--json")
    assert result.returncode == 0, result.stderr
    hidden = json.loads(result.stdout)["hidden"]
    under = {t["space"] for t in truth["tokens"] if t["visible"] < 0.15 and t["space"]}
    assert hidden and under and under <= {s for area in hidden for s in area["spaces"]}


def test_a_close_call_settled_with_call_is_scored_and_shown_as_a_humans(tmp_path, scene, monkeypatch, capsys):
    """The referee looks, decides, and scores the photo again with --call: the table and the evidence say whose
    call it is, and the JSON has it where they said."""
    args = ("score", scene.photo, "--calibration", scene.calibration, "--reference", scene.empty, "--order",
            "red,yellow,green,blue")
    camera = json.loads(knockcam(*args, "--json").stdout)
    n = next(i for i, t in enumerate(camera["tokens"], 1) if t["state"] == "on_space")
    other = "no_space"
    result = knockcam(*args, "--call", f"{n}={other}", "--json")
    assert result.returncode == 0, result.stderr
    called = json.loads(result.stdout)["tokens"]
    assert called[n - 1]["state"] == other and called[n - 1]["space"] is None and not called[n - 1]["ambiguous"]
    assert [t for i, t in enumerate(called) if i != n - 1] == [t for i, t in enumerate(camera["tokens"]) if i != n - 1]
    from knockcam.cli import main

    monkeypatch.setenv("COLUMNS", "200")  # the table's note column on one line
    assert main([str(a) for a in args] + ["--call", f"{n}={other}", "--evidence", str(tmp_path / "evidence.png")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("│") and line.split("│")[1].strip() == str(n))
    assert "no space" in row and "a human's call (the camera's:" in row
    assert cv2.imread(str(tmp_path / "evidence.png")) is not None


def test_each_close_call_line_gives_the_call_that_settles_it(scene):
    """The stake line of a close call ends with the --call lines that settle it either way."""
    import numpy as np
    from rich.console import Console

    from knockcam.board import load_board
    from knockcam.cli.score import print_scored
    from knockcam.detect.tokens import Token
    from knockcam.pipeline import ScoreOptions, score_photo

    board = load_board()
    common = {tuple(np.round(p, 6)) for p in board.space("baltic_avenue").polygon} & \
        {tuple(np.round(p, 6)) for p in board.space("oriental_avenue").polygon}
    on_line = tuple(float(v) + (0.5 if k == 0 else 0.0) for k, v in enumerate(np.mean(sorted(common)[:2], axis=0)))
    scored = score_photo(scene.photo, ScoreOptions(calibration=scene.calibration, order=("red", "blue")),
                         detector=lambda image, calibration, board, reference=None: [Token("red", on_line, 0.9, 2.0)])
    (call,) = scored.close_calls
    console = Console(record=True, width=200)
    print_scored(scored, console=console)
    camera = scored.positions[0].space
    assert f"(settle it: --call 1={call.other}, or --call 1={camera} to keep the camera's)" in console.export_text()
