"""Prompts (terminal, scripted, replayed), the game log (append, fsync, torn tail), display and CLI errors."""

from __future__ import annotations

import errno
import io
import json
import os
import re

import cv2
import numpy as np
import pytest

from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.live.display import Display, check_window
from knockcam.live.log import RESUME_LATER, GameLog, read_log
from knockcam.live.prompts import NeedAnswer, Question, ReplayPrompter, ScriptedPrompter, TerminalPrompter, \
    load_answers, yes_no


def q(key="r1:jail:red:1", default="no"):
    return Question(key=key, text="pay?", default=default, check=yes_no)


def test_terminal_prompter_repeats_after_a_bad_answer_and_takes_the_default():
    out = io.StringIO()
    p = TerminalPrompter(stdin=io.StringIO("maybe\ny\n\n"), stdout=out)
    assert p.ask(q()) == "yes"
    assert "answer yes or no" in out.getvalue()
    assert p.ask(q()) == "no"  # Enter: the default
    with pytest.raises(KnockcamError, match="input closed") as stopped:
        p.ask(q())
    assert stopped.value.what_to_do == RESUME_LATER  # the command line names the log there


def test_with_input_closed_a_question_that_times_out_takes_its_default_at_once():
    """It would take it after its time anyway ("[no in 15 s]"): a game run with no terminal stopped there."""
    out = io.StringIO()
    timed = Question(key="r1:off:red:1", text="slid off?", default="no", check=yes_no, timeout_s=15)
    assert TerminalPrompter(stdin=io.StringIO(""), stdout=out).ask(timed) == "no"
    assert "(input closed: no)" in out.getvalue()


def test_scripted_answers_by_key_in_order_and_defaults():
    p = ScriptedPrompter({"r1:jail:red:1": "oui"})
    assert p.ask(q()) == "yes" and p.answered_on == "file"  # logged with the answer: replay says where it came from
    assert p.ask(q("r2:jail:red:1")) == "no" and p.answered_on == "default"  # unscripted: the default
    p = ScriptedPrompter(["y", "n", "y"], skip=1)  # the first was already used before a crash
    assert [p.ask(q()) for _ in range(2)] == ["no", "yes"]
    with pytest.raises(KnockcamError, match="scripted answer 'perhaps'"):
        ScriptedPrompter(["perhaps"]).ask(q())


def test_replayed_answers_must_match_the_questions_then_go_live():
    logged_q, logged_a = [], []
    live = ScriptedPrompter({"r1:jail:blue:1": "y"})
    p = ReplayPrompter([("r1:jail:red:1", "yes")], live, before_live=logged_q.append,
                       after_live=lambda question, answer: logged_a.append(answer))
    assert p.ask(q()) == "yes" and live.asked == []
    assert p.ask(q("r1:jail:blue:1")) == "yes" and logged_a == ["yes"] and logged_q[0].key == "r1:jail:blue:1"
    with pytest.raises(KnockcamError, match="does not match"):
        ReplayPrompter([("r1:off:red:1", "no")], None).ask(q())
    with pytest.raises(NeedAnswer):
        ReplayPrompter([], None).ask(q())


def test_answers_file_errors(tmp_path):
    with pytest.raises(KnockcamError, match="not found"):
        load_answers(tmp_path / "none.yaml")
    bad = tmp_path / "a.yaml"
    bad.write_text("just a string\n")
    with pytest.raises(KnockcamError, match="mapping"):
        load_answers(bad)
    good = tmp_path / "a.json"
    good.write_text(json.dumps({"r1:jail:red:1": "yes"}))
    assert load_answers(good) == {"r1:jail:red:1": "yes"}
    for key, words in (("r2:jial:blue:1", "no question has the kind 'jial' (did you mean jail?)"),
                       ("r2:jail:bleu:1", "no question has the side 'bleu' (did you mean blue?)"),
                       ("foo", "answer key 'foo' is no question's: keys are rROUND:KIND:SIDE:N")):
        bad.write_text(json.dumps({"r1:jail:red:1": "yes", key: "yes"}))
        with pytest.raises(KnockcamError, match=re.escape(words)):
            load_answers(bad)
    bad.write_text("r1:railroad:blue:1: yes\nr2:jail:red:1: [no, yes]\n")  # unquoted: YAML booleans
    assert load_answers(bad) == {"r1:railroad:blue:1": "yes", "r2:jail:red:1": ["no", "yes"]}


def test_the_answer_keys_kinds_are_the_ones_the_live_loop_asks():
    import knockcam.live.tracker as tracker
    from knockcam.live.prompts import QUESTION_KINDS

    with open(tracker.__file__, encoding="utf-8") as source:
        asked = set(re.findall(r'self\.ask\(\s*"(\w+)"', source.read()))
    assert asked == set(QUESTION_KINDS)


def test_log_is_appended_and_a_torn_last_line_is_dropped(tmp_path):
    path = tmp_path / "g.jsonl"
    log = GameLog(path)
    log.append("start", order=["red", "blue"])
    log.append("answer", key="k", answer="yes", value=np.int64(3))
    log.close()
    with open(path, "a") as f:
        f.write('{"seq": 2, "kind": "obs')  # a crash in the middle of a write
    assert [e["kind"] for e in read_log(path)] == ["start", "answer"]
    log = GameLog(path)  # reopening cuts the torn line before appending
    log.append("note", text="after")
    log.close()
    entries = read_log(path)
    assert [e["seq"] for e in entries] == [0, 1, 2] and entries[1]["value"] == 3


def test_each_line_carries_a_check_that_follows_from_the_line_before(tmp_path):
    path = tmp_path / "g.jsonl"
    log = GameLog(path)
    log.append("start", format=2, order=["red", "blue"])
    log.append("answer", key="k", answer="yes")
    log.close()
    log = GameLog(path)  # resumed: the chain goes on from the last line's check
    log.append("note", text="after")
    log.close()
    lines = path.read_text().splitlines()
    assert all(re.search(r',"check":"[0-9a-f]{16}"}$', line) for line in lines)
    assert [sorted(e) for e in read_log(path)][1] == ["answer", "key", "kind", "seq", "t"]  # read without it
    path.write_text("\r\n".join(lines) + "\r\n")  # moved through a tool that ends lines the Windows way
    assert [e["kind"] for e in read_log(path)] == ["start", "answer", "note"]
    for edited, number, kind in (([lines[0], lines[1].replace('"yes"', '"no"'), lines[2]], 2, "answer"),
                                 ([lines[0], lines[2]], 2, "note"),
                                 ([lines[0], lines[2], lines[1]], 2, "note"),
                                 ([lines[0], re.sub(r',"check":"[0-9a-f]+"', "", lines[1]), lines[2]], 2, "answer")):
        path.write_text("\n".join(edited) + "\n")
        with pytest.raises(KnockcamError, match=rf"line {number} \({kind}\) was changed after it was written"):
            read_log(path)


def test_a_log_of_format_1_has_no_checks_and_is_read_as_it_is(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text('{"seq":0,"kind":"start","order":["red","blue"]}\n{"seq":1,"kind":"answer","key":"k"}\n')
    assert [e["kind"] for e in read_log(path)] == ["start", "answer"]


def test_log_errors(tmp_path):
    with pytest.raises(KnockcamError, match="not found"):
        read_log(tmp_path / "missing.jsonl")
    other = tmp_path / "other.jsonl"
    other.write_text('{"kind": "answer"}\n')
    with pytest.raises(KnockcamError, match="not a knockcam game log"):
        read_log(other)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"kind": "start"}\nnot json\n{"kind": "x"}\n')
    with pytest.raises(KnockcamError, match="line 2"):
        read_log(broken)


def test_evidence_that_cannot_reach_the_disk_stops_the_game_and_leaves_no_partial_file(tmp_path, monkeypatch):
    log = GameLog(tmp_path / "g.jsonl")
    first = log.save_bytes("frame.jpg", b"first")
    assert (tmp_path / first).read_bytes() == b"first"

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(KnockcamError, match="No space left") as caught:
        log.save_bytes("frame.jpg", b"second")
    assert "--resume" in caught.value.what_to_do
    assert (tmp_path / first).read_bytes() == b"first"
    assert sorted(p.name for p in log.evidence_dir.iterdir()) == ["frame.jpg"]


def test_show_without_a_display_fails_clearly(board, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(KnockcamError, match="--show needs a display"):
        check_window()
    with pytest.raises(KnockcamError, match="--show"):
        Display(board, show=True)


def test_overlay_draws_the_board_tokens_and_scores(demo, board):
    d = Display(board, quiet=True)
    snap = {"round": 1, "rounds": 2, "phase": "slide", "order": ["red", "blue"], "expected": "blue",
            "slid": {"red": 1}, "cash": {"red": 0, "blue": 0}, "pot": 500,
            "tokens": [{"id": 0, "side": "red", "xy_mm": [124.0, 348.0], "space": "baltic_avenue", "state": "board"}]}
    image = demo.frames[0]
    out = d.overlay(image, demo.calibration, snap)
    assert out.shape == image.shape and (out != image).any()
    p = demo.calibration.mm_to_px([[124.0, 348.0]])[0].round().astype(int)
    assert (out[p[1] - 12:p[1] + 12, p[0] - 12:p[0] + 12] != image[p[1] - 12:p[1] + 12, p[0] - 12:p[0] + 12]).any()


def test_live_cli_input_errors(tmp_path, capsys):
    assert main(["live", "--video", str(tmp_path / "v.avi"), "--sides", "red,purple"]) == 2
    assert "unknown side 'purple'" in capsys.readouterr().err
    assert main(["live", "--video", str(tmp_path / "v.avi")]) == 2
    assert "--sides" in capsys.readouterr().err
    assert main(["live", "--sides", "red,blue"]) == 2
    assert "--camera N, --stream URL or --video FILE" in capsys.readouterr().err
    assert main(["live", "--sides", "red,blue", "--order", "red,green", "--video", "x.avi"]) == 2
    assert "same sides" in capsys.readouterr().err
    existing = tmp_path / "game.jsonl"
    existing.write_text('{"kind": "start"}\n')
    assert main(["live", "--sides", "red,blue", "--video", "x.avi", "--log", str(existing)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["replay", str(tmp_path / "none.jsonl")]) == 2
    assert "game log not found" in capsys.readouterr().err


def test_a_camera_that_is_not_there_is_one_line_without_opencvs_own_messages(tmp_path):
    """OpenCV's capture back-ends each wrote their failure (warnings, an exception text, an error) first."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "knockcam", "live", "--camera", "9", "--sides", "red,blue", "--log",
                           str(tmp_path / "g.jsonl")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "knockcam: error: cannot open camera 9: check the --camera number or the --video path\n"
    assert list(tmp_path.iterdir()) == []


def test_terminal_question_with_a_timeout_takes_its_default_when_nobody_answers():
    import os

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "r") as stdin:
            out = io.StringIO()
            p = TerminalPrompter(stdin=stdin, stdout=out)
            question = Question(key="r1:off:red:1", text="off?", default="no", check=yes_no, timeout_s=0.05)
            assert p.ask(question) == "no" and "no answer" in out.getvalue()
            os.write(write_end, b"y\n")
            assert p.ask(question) == "yes"
    finally:
        os.close(write_end)


def test_a_line_typed_between_questions_is_a_dispute():
    import os

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(read_end, "r") as stdin:
            p = TerminalPrompter(stdin=stdin, stdout=io.StringIO(), pollable=True)
            assert p.poll() is False
            os.write(write_end, b"fix\n")
            assert p.poll() is True and p.poll() is False
    finally:
        os.close(write_end)


def test_nothing_is_written_when_the_game_cannot_start(tmp_path, monkeypatch, capsys, demo_files):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    log = tmp_path / "g.jsonl"
    assert main(["live", "--video", str(demo_files["video"]), "--sides", "red,blue", "--show", "--log", str(log)]) == 2
    assert "--show needs a display" in capsys.readouterr().err
    assert main(["live", "--video", str(tmp_path / "missing.avi"), "--sides", "red,blue", "--log", str(log)]) == 2
    assert "video file not found" in capsys.readouterr().err
    assert main(["live", "--video", str(tmp_path), "--sides", "red,blue", "--log", str(log)]) == 2
    assert f"--video {tmp_path} is a folder" in capsys.readouterr().err
    cut = tmp_path / "empty.jpg"  # an empty-board frame copied short: refused like any photo (knockcam.files)
    cut.write_bytes(b"\xff\xd8\xff\xe0" + bytes(2000))
    assert main(["live", "--video", str(demo_files["video"]), "--reference", str(cut), "--sides", "red,blue",
                 "--log", str(log)]) == 2
    err = capsys.readouterr().err
    assert "empty-board frame" in err and "damaged JPEG" in err and err.count("\n") == 1
    photo = tmp_path / "board.jpg"  # OpenCV would play it as a video of one frame: a game over before it starts
    cv2.imwrite(str(photo), np.full((64, 64, 3), 200, np.uint8))
    assert main(["live", "--video", str(photo), "--sides", "red,blue", "--log", str(log)]) == 2
    assert f"{photo} is a photo (JPEG), not a video: 'knockcam score {photo}'" in capsys.readouterr().err
    video = str(demo_files["video"])
    assert main(["live", "--video", video, "--sides", "red,blue", "--tokens", "0", "--log", str(log)]) == 2
    assert "--tokens: 1 to 4 tokens per side" in capsys.readouterr().err
    assert main(["live", "--video", video, "--sides", "red,blue", "--log", str(tmp_path)]) == 2
    assert f"game log {tmp_path} is a folder: give a file, e.g. --log {tmp_path / 'game.jsonl'}" in capsys.readouterr().err
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x")
    assert main(["live", "--video", video, "--sides", "red,blue", "--log", str(blocker / "game.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"cannot write game log {blocker / 'game.jsonl'}: {blocker} is a file, not a folder" in err
    assert err.count("\n") == 1 and blocker.read_text() == "x"
    assert not log.exists()


def test_a_game_log_of_a_later_format_is_refused_not_misread(tmp_path):
    log = tmp_path / "g.jsonl"
    log.write_text(json.dumps({"seq": 0, "kind": "start", "format": 99, "order": ["red", "blue"]}) + "\n")
    with pytest.raises(KnockcamError, match="format 99, written by a newer knockcam"):
        read_log(log)
    log.write_text(json.dumps({"seq": 0, "kind": "start", "format": 1, "order": ["red", "blue"]}) + "\n")
    assert read_log(log)[0]["format"] == 1


def test_an_answer_keyed_to_a_side_not_in_the_game_is_refused_before_the_game_starts(tmp_path, capsys):
    """Its question is never asked: the answer meant for another side was lost and that side given the default."""
    from knockcam.live.prompts import check_answer_sides

    answers = {"r1:jail:red:1": "yes", "r2:railroad:-:1": "no"}
    check_answer_sides(answers, ("red", "blue"), "a.yaml")  # the game's sides, and questions to nobody
    check_answer_sides(["yes", "no"], ("red",), "a.yaml")  # answers in order name no side
    with pytest.raises(KnockcamError, match=re.escape("a.yaml: answer key 'r1:jail:green:1' is for green, who is "
                                                      "not in this game (sides red, blue): key each answer")):
        check_answer_sides({**answers, "r1:jail:green:1": "yes"}, ("red", "blue"), "a.yaml")
    path, log = tmp_path / "answers.yaml", tmp_path / "game.jsonl"
    path.write_text("r1:jail:green:1: yes\n")
    assert main(["live", "--video", str(tmp_path / "game.mp4"), "--sides", "red,blue", "--answers", str(path),
                 "--log", str(log)]) == 2
    assert "is for green, who is not in this game (sides " in capsys.readouterr().err and not log.exists()
