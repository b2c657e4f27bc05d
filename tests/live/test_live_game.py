"""A whole game end to end on a synthetic video: several rounds, jail, Chance, Railroad, knock-offs;
then a kill in the middle and --resume finishing the same game; then knockcam replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from knockcam.cli import main
from knockcam.live.compose import DEMO_ANSWERS, DEMO_ORDER, DEMO_TOKENS, demo_expected, oracle_detector
from knockcam.live.display import Display
from knockcam.live.frames import list_source
from knockcam.live.log import read_log
from knockcam.live.prompts import ScriptedPrompter
from knockcam.live.session import LiveGame, new_log


def _standings(game):
    return [s.to_dict() for s in game.standings()]


def _start(path, demo, review="ambiguous"):
    new_log(path, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review=review, source={"frames": "memory"}, calibration=demo.calibration, reference=demo.empty,
            fsync=False).close()


def test_whole_game_with_the_real_detector_ends_with_the_engines_standings(demo, board, tmp_path):
    log = tmp_path / "game.jsonl"
    _start(log, demo)
    prompter = ScriptedPrompter(dict(DEMO_ANSWERS))
    live = LiveGame(log, prompter, display=Display(board, quiet=True), fsync=False, model=None)
    stats = live.run(list_source(demo.frames, demo.fps))
    expected = demo_expected(board)
    assert live.tracker.phase == "over"
    assert _standings(live.game) == _standings(expected)
    assert [dict(r.cash) for r in live.game.history] == [dict(r.cash) for r in expected.history]
    # the players were asked exactly the two real choices of this game
    assert [key for key, _ in prompter.asked] == ["r1:railroad:blue:1", "r2:jail:blue:1"]
    # motion gating: one detection per still spell that changed: the lead-in and every step but the
    # hand passing over the board (which changed nothing)
    assert stats.observations == len(demo.marks) - 1
    kinds = [e["kind"] for e in read_log(log)]
    assert kinds.count("round") == 2 and kinds[-1] == "standings"
    assert kinds.count("knock") >= 2 and "jail" in kinds and "railroad" in kinds and "reslide" in kinds


def test_oracle_game_logs_evidence_frames_for_each_round(demo, board, tmp_path):
    log = tmp_path / "game.jsonl"
    _start(log, demo)
    live = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False)
    oracle = oracle_detector(demo, board)
    live.run(list_source(demo.frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    rounds = [e for e in read_log(log) if e["kind"] == "round"]
    assert len(rounds) == 2
    for r in rounds:
        assert (tmp_path / r["evidence"]).is_file()


def _cli(args):
    """Run knockcam in a subprocess (a kill must really kill a process)."""
    return subprocess.run([sys.executable, "-c", "import sys; from knockcam.cli import main; sys.exit(main(sys.argv[1:]))", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_kill_in_the_middle_then_resume_finishes_the_same_game(demo_files, board, tmp_path, capsys):
    f = demo_files
    common = ["--answers", str(f["answers"]), "--quiet", "--json", "--no-model"]
    log = tmp_path / "killed.jsonl"
    # no --reference: the first still frame of the video is the empty-board reference, as at a real table
    killed = _cli(["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order", "red,blue", "--tokens", "2", "--log", str(log),
                   "--crash-after", "8", *common])
    assert killed.returncode == 137, killed.stderr
    before = read_log(log)
    assert sum(e["kind"] == "observation" for e in before) == 8
    assert sum(e["kind"] == "round" for e in before) == 1  # killed during round 2

    assert main(["live", "--resume", str(log), *common]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["over"] is True
    assert resumed["standings"] == _standings(demo_expected(board))
    entries = read_log(log)
    assert [e["seq"] for e in entries] == list(range(len(entries)))  # one log, appended in order
    assert sum(e["kind"] == "round" for e in entries) == 2  # round 1 was not scored twice

    # replay re-scores the finished game from the log alone
    assert main(["replay", str(log), "--json"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["over"] is True and replayed["standings"] == resumed["standings"]
    assert replayed["mismatches"] == []


def test_a_full_disk_stops_the_game_in_one_line_and_resume_finishes_it(demo_files, board, tmp_path, capsys,
                                                                        monkeypatch):
    import errno

    f = demo_files
    common = ["--answers", str(f["answers"]), "--quiet", "--json", "--no-model"]
    log = tmp_path / "full.jsonl"
    real_fsync, calls = os.fsync, []

    def fsync(fd):  # the disk fills up during round 2: the 40th write to it fails
        calls.append(fd)
        if len(calls) >= 40:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert main(["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order", "red,blue",
                 "--tokens", "2", "--log", str(log), *common]) == 2
    err = capsys.readouterr().err.splitlines()
    last = err[-1]  # after the log's name, one line: with --calibration the frames' size is not told
    assert len(err) == 2 and err[0].startswith("game log: ")
    assert last.startswith(f"knockcam: error: cannot write game log {log}: No space left on device")
    assert last.endswith(f"then continue with 'knockcam live --resume {log}'")
    before = read_log(log)
    assert sum(e["kind"] == "round" for e in before) == 1 and before[-1]["kind"] != "standings"  # in round 2

    monkeypatch.setattr(os, "fsync", real_fsync)  # room made on the disk
    assert main(["live", "--resume", str(log), *common]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["over"] is True and resumed["standings"] == _standings(demo_expected(board))
    entries = read_log(log)
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    assert sum(e["kind"] == "round" for e in entries) == 2


def _finished_game_log(path, demo, board, checks: bool = True):
    """The demo game played to the end with every token where the video puts it: its log's lines. Without
    ``checks``, as a log of format 1 has them (before 2026-12-03: no line carries a check)."""
    _start(path, demo)
    oracle = oracle_detector(demo, board)
    LiveGame(path, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False).run(
        list_source(demo.frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    lines = path.read_text().splitlines()
    if checks:
        return lines
    entries = [{k: v for k, v in json.loads(line).items() if k != "check"} for line in lines]
    entries[0]["format"] = 1
    lines = [json.dumps(e, separators=(",", ":")) for e in entries]
    path.write_text("\n".join(lines) + "\n")
    return lines


def test_a_line_changed_moved_or_removed_after_it_was_written_is_named_and_the_log_left_as_it_is(
        demo, board, tmp_path, capsys):
    """Edits that still make sense (a turn order, a token's place, a line taken out) replayed as if nothing
    had happened until each line carried a check of itself and of the line before it."""
    log = tmp_path / "game.jsonl"
    lines = _finished_game_log(log, demo, board)
    assert main(["replay", str(log)]) == 0
    capsys.readouterr()
    kinds = [json.loads(line)["kind"] for line in lines]
    start = kinds.index("round_start")
    seen = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "observation"
                and json.loads(line)["seen"])
    moved = json.loads(lines[seen])
    moved["seen"][0]["xy_mm"] = [moved["seen"][0]["xy_mm"][0] + 40, moved["seen"][0]["xy_mm"][1]]
    edits = {
        "order": (lines[:start] + [lines[start].replace('"order":["', '"order":["blue","')] + lines[start + 1:],
                  start + 1, "round_start"),
        "place": (lines[:seen] + [json.dumps(moved, separators=(",", ":"))] + lines[seen + 1:], seen + 1,
                  "observation"),
        "removed": (lines[:seen] + lines[seen + 1:], seen + 1, kinds[seen + 1]),
    }
    for edited, number, kind in edits.values():
        text = "\n".join(edited) + "\n"
        log.write_text(text)
        for args in (["replay", str(log)], ["live", "--resume", str(log), "--quiet", "--no-model"]):
            assert main(args) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1
            assert f"{log}: line {number} ({kind}) was changed after it was written, or a line before it removed" in err
            assert f"the game holds up to line {number - 1}: to go on from there, copy the log and delete line " \
                   f"{number} and the lines after it" in err
        assert log.read_text() == text


def test_a_damaged_line_in_the_game_log_is_named_and_the_log_left_as_it_is(demo, board, tmp_path, capsys):
    """In a log of format 1, whose lines carry no check, a changed line is found by what it breaks."""
    log = tmp_path / "game.jsonl"
    lines = _finished_game_log(log, demo, board, checks=False)
    at = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "observation" and json.loads(line)["seen"])
    entry = json.loads(lines[at])
    entry["seen"][0]["xy_mm"] = "by the dog"  # hand-edited: found by mutating logs, each field a TypeError or worse
    damaged = "\n".join(lines[:at] + [json.dumps(entry)] + lines[at + 1:]) + "\n"
    log.write_text(damaged)
    for args in (["replay", str(log)], ["live", "--resume", str(log), "--quiet", "--no-model"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{log}: line {at + 1} (observation) is damaged: ValueError" in err
        assert "delete that line and the ones after it to go on from before it with --resume" in err
    assert log.read_text() == damaged

    rounds = [i for i, line in enumerate(lines) if json.loads(line)["kind"] == "round"]
    record = json.loads(lines[rounds[0]])
    record["result"] = "paid"  # what the log says was paid, damaged: replay says it cannot check it
    log.write_text("\n".join(lines[:rounds[0]] + [json.dumps(record)] + lines[rounds[0] + 1:]) + "\n")
    assert main(["replay", str(log)]) == 2
    assert "replay does not match the log: round 1: the log's record of it is damaged" in capsys.readouterr().err


def test_a_start_line_or_a_round_number_no_game_writes_is_refused_in_one_line(demo, board, tmp_path, capsys):
    """A start line whose board is a list, and a slide in round Infinity (JSON's extension): found by a fuzz of
    game logs, each a traceback before (TypeError from the board file's path; OverflowError from the round)."""
    log = tmp_path / "game.jsonl"
    lines = _finished_game_log(log, demo, board, checks=False)
    start = json.loads(lines[0])
    start["board"] = []
    log.write_text("\n".join([json.dumps(start)] + lines[1:]) + "\n")
    for args in (["replay", str(log)], ["live", "--resume", str(log), "--quiet", "--no-model"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{log}: line 1 (start) is damaged" in err, err
    at = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "slide")
    slide = json.loads(lines[at])
    slide["round"] = float("inf")
    log.write_text("\n".join(lines[:at] + [json.dumps(slide)] + lines[at + 1:]) + "\n")
    assert main(["replay", str(log), "--json"]) in (0, 2)
    told = [h["text"] for h in json.loads(capsys.readouterr().out)["story"]]
    assert f"line {at} of the log ('slide') is damaged: it cannot be read" in told


def test_a_mangled_game_log_is_replayed_or_refused_in_one_line(demo, board, tmp_path):
    """Random manglings of one line of a finished game's log at a time (56 kinds of traceback before)."""
    import random

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mangle import answered_in_one_line, mangled

    log = tmp_path / "game.jsonl"
    lines = _finished_game_log(log, demo, board, checks=False)  # format 1: a changed line is found by what it breaks
    rng = random.Random(0)
    refused = 0
    for _ in range(100):
        at = rng.randrange(len(lines))
        line = json.dumps(mangled(json.loads(lines[at]), rng, changes=2))
        log.write_text("\n".join(lines[:at] + [line] + lines[at + 1:]) + "\n")
        refused += answered_in_one_line(main, ["replay", str(log)]) == 2
    assert 0 < refused < 100


def test_a_log_line_with_an_absurd_frame_or_round_number_is_answered_at_once(demo, board, tmp_path, capsys):
    """A frame number of infinity was a traceback (OverflowError); a round number of 10**12 made replay count up
    to it, for ever."""
    log = tmp_path / "game.jsonl"
    lines = _finished_game_log(log, demo, board, checks=False)
    observed = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "observation")
    started = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "round_start")
    for at, field, value in ((observed, "frame", float("inf")), (started, "round", 10**12)):
        entry = json.loads(lines[at])
        entry[field] = value
        log.write_text("\n".join(lines[:at] + [json.dumps(entry)] + lines[at + 1:]) + "\n")
        code = main(["replay", str(log)])
        err = capsys.readouterr().err
        assert code in (0, 2, 3) and "Traceback" not in err and len(err.strip().splitlines()) <= 1


def test_resume_takes_a_calibration_made_again_and_refuses_another_empty_board_frame(demo_files, tmp_path, capsys):
    """A new --calibration with --resume used to be ignored without a word (a game stopped for a calibration
    made before the camera moved could then never go on); it is now logged and used from there on."""
    import yaml

    log = tmp_path / "game.jsonl"  # stopped at once: one frame is too few to find the board in
    assert main(["live", "--video", str(demo_files["video"]), "--sides", "red,blue", "--log", str(log),
                 "--answers", str(demo_files["answers"]), "--quiet", "--no-model", "--max-frames", "1"]) == 2
    assert "the board was not found automatically" in capsys.readouterr().err
    assert main(["live", "--resume", str(log), "--reference", str(demo_files["reference"])]) == 2
    assert "--reference cannot change it (a new --calibration can)" in capsys.readouterr().err
    data = yaml.safe_load(demo_files["calibration"].read_text())
    data["image_size"] = [data["image_size"][0] // 2, data["image_size"][1] // 2]
    halved = tmp_path / "halved.yaml"
    halved.write_text(yaml.safe_dump(data))
    lines = log.read_text()
    assert main(["live", "--resume", str(log), "--calibration", str(halved), "--quiet", "--no-model"]) == 2
    assert "is 480x270: calibrate a frame of this camera at this size" in capsys.readouterr().err
    assert log.read_text() == lines  # refused, nothing logged
    assert main(["live", "--resume", str(log), "--calibration", str(demo_files["calibration"]),
                 "--answers", str(demo_files["answers"]), "--quiet", "--no-model", "--max-frames", "1"]) in (0, 3)
    notes = [e["note"] for e in read_log(log) if e["kind"] == "calibration"]
    assert notes == [f"given at --resume: {demo_files['calibration']}"]


def test_a_game_stopped_for_an_answer_says_the_resume_command_with_its_log(demo_files, tmp_path, capsys, monkeypatch):
    import io

    log = tmp_path / "game.jsonl"
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # run with no terminal, no page and no answers file
    assert main(["live", "--video", str(demo_files["video"]), "--calibration", str(demo_files["calibration"]),
                 "--order", "red,blue", "--log", str(log), "--quiet", "--no-model"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert "(input closed): resume later with 'knockcam live --resume " + str(log) + "'" in err


@pytest.mark.parametrize("text", ["", "\n", '{"seq": 0, "kind": "st'])
def test_resume_of_a_log_whose_game_never_started_says_so_in_one_line(demo_files, tmp_path, capsys, text):
    """A crash while a game starts leaves an empty log, or one whose first line is cut off."""
    log = tmp_path / "game.jsonl"
    log.write_text(text)
    assert main(["live", "--video", str(demo_files["video"]), "--resume", str(log)]) == 2
    assert "no game was started in this log" in capsys.readouterr().err and log.read_text() == text


def test_a_calibration_or_empty_board_frame_for_another_frame_size_is_refused_before_a_log_is_written(
        demo_files, tmp_path, capsys):
    import cv2
    import yaml

    data = yaml.safe_load(demo_files["calibration"].read_text())
    data["image_size"] = [data["image_size"][0] // 2, data["image_size"][1] // 2]
    halved = tmp_path / "halved.yaml"
    halved.write_text(yaml.safe_dump(data))
    small = tmp_path / "small.png"
    empty = cv2.imread(str(demo_files["reference"]))
    cv2.imwrite(str(small), cv2.resize(empty, (empty.shape[1] // 2, empty.shape[0] // 2)))
    log = tmp_path / "game.jsonl"
    for given, said in ((["--calibration", str(halved)], "--calibration"),
                        (["--reference", str(small)], "--reference")):
        assert main(["live", "--video", str(demo_files["video"]), "--sides", "red,blue", "--log", str(log),
                     *given]) == 2
        err = capsys.readouterr().err
        assert said in err and f"a frame of video {demo_files['video']} is {empty.shape[1]}x{empty.shape[0]}: " in err
        assert not log.exists() and not Path(str(log) + ".d").exists()


def test_resume_of_a_finished_game_changes_nothing(demo, board, tmp_path):
    log = tmp_path / "game.jsonl"
    _start(log, demo)
    oracle = oracle_detector(demo, board)
    live = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False)
    live.run(list_source(demo.frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    size = log.stat().st_size
    again = LiveGame(log, ScriptedPrompter({}), fsync=False)
    assert again.tracker.phase == "over" and _standings(again.game) == _standings(live.game)
    assert log.stat().st_size == size


def test_frames_ending_mid_game_exit_3_and_resume_finishes_it(demo, demo_files, board, tmp_path, capsys,
                                                              monkeypatch):
    from dataclasses import replace

    from knockcam.calibrate import choose

    f = demo_files
    log = tmp_path / "stopped.jsonl"
    common = ["--answers", str(f["answers"]), "--quiet", "--json", "--no-model"]
    # no --calibration: found automatically on the first frame, logged, and reused by --resume (the
    # automatic method itself cannot place the board in this 480x270 video: see the next test)
    calls = []
    monkeypatch.setattr(choose, "calibrate_automatically", lambda image, board, max_error_mm=None: calls.append(image.shape)
                        or replace(demo.calibration, method="auto", error_mm=1.0))
    code = main(["live", "--video", str(f["video"]), "--reference", str(f["reference_jpeg"]), "--sides", "blue,red", "--order", "red,blue", "--tokens", "2", "--log",
                 str(log), "--max-frames", "120", *common])
    out = capsys.readouterr()
    assert code == 3 and "continue with 'knockcam live --resume" in out.err
    assert json.loads(out.out)["over"] is False
    assert [e["method"] for e in read_log(log) if e["kind"] == "calibration"] == ["auto"] and len(calls) == 1
    assert main(["live", "--resume", str(log), *common]) == 0
    out = capsys.readouterr()
    assert "resumed" in out.err and len(calls) == 1
    assert json.loads(out.out)["standings"] == _standings(demo_expected(board))


def test_a_board_the_automatic_method_cannot_place_stops_live_mode_with_what_to_do(demo_files, tmp_path, capsys):
    """The 480x270 demo video: the automatic method puts the board 21 mm off with a hump no board has
    (77 mm across), and says 77 mm (12.5 mm before such a hump counted). Live mode used to play the whole
    game on it; now it looks again each second of frames (here 40 frames: two tries) and stops in one line,
    before any turn."""
    log = tmp_path / "refused.jsonl"
    code = main(["live", "--video", str(demo_files["video"]), "--sides", "blue,red", "--order", "red,blue",
                 "--tokens", "2", "--log", str(log), "--quiet", "--no-model", "--answers", str(demo_files["answers"]),
                 "--max-frames", "40"])
    err = capsys.readouterr().err.splitlines()
    last = err[-1]  # after the lines naming the game log and the frames' size
    assert err[1] == (f"video {demo_files['video']} gives 480x270 frames, smaller than the 1280 px across the "
                      "automatic calibration is tuned for: it finds the board less often in them; use 1280 px across "
                      "or more, or give --calibration")
    assert code == 2 and last.startswith("knockcam: error: no --calibration given and the board was not found "
                                         "automatically (2 tries before the frames ended")
    assert not [e for e in read_log(log) if e["kind"] in ("calibration", "observation")]
    assert "calibration error" in last and "over the 3 mm limit" in last and "give --calibration" in last
    assert "--corners" not in last  # knockcam score's advice: live mode takes a calibration file
    accepted = tmp_path / "accepted.jsonl"  # the user may accept the larger error, as with knockcam score
    code = main(["live", "--video", str(demo_files["video"]), "--sides", "blue,red", "--order", "red,blue",
                 "--tokens", "2", "--log", str(accepted), "--quiet", "--no-model", "--answers",
                 str(demo_files["answers"]), "--max-error", "100", "--max-frames", "3"])
    assert code == 3
    (cal,) = [e for e in read_log(accepted) if e["kind"] == "calibration"]
    from knockcam.calibrate.calibration import Calibration

    assert cal["method"] == "auto" and 3 < Calibration.load(tmp_path / cal["path"]).error_mm <= 100


def test_bad_inputs_stop_live_mode_before_any_game_log_is_written(demo_files, tmp_path, capsys):
    bad_answers = tmp_path / "answers.yaml"
    bad_answers.write_text("a: [", encoding="utf-8")
    not_a_video = tmp_path / "game.jpg"
    not_a_video.write_text("not a video", encoding="utf-8")
    for extra, says in (
        (["--video", str(demo_files["video"]), "--answers", str(bad_answers)], "not valid YAML"),
        (["--video", str(not_a_video)], "no frame of it decodes"),
    ):
        log = tmp_path / "game.jsonl"
        code = main(["live", *extra, "--sides", "blue,red", "--log", str(log), "--quiet", "--no-model"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and says in err[0]
        assert not log.exists() and not list(tmp_path.glob("game.jsonl*"))


def test_sides_without_order_draw_round_ones_order(tmp_path, demo_files, capsys):
    log = tmp_path / "drawn.jsonl"
    main(["live", "--video", str(demo_files["video"]), "--calibration", str(demo_files["calibration"]),
          "--sides", "green,blue,red", "--log", str(log), "--max-frames", "1", "--quiet", "--no-model"])
    capsys.readouterr()
    start = read_log(log)[0]
    assert sorted(start["order"]) == ["blue", "green", "red"]


def test_a_dispute_typed_during_the_game_is_logged_and_replayed(demo, board, tmp_path):
    class Typing(ScriptedPrompter):
        """Answers from a script; a player types a line at the 100th frame (a dispute)."""

        calls = 0

        def poll(self):
            self.calls += 1
            return self.calls == 100

    log = tmp_path / "dispute.jsonl"
    _start(log, demo)
    # the dispute: red's first token (St. James Place) was really on Boardwalk
    answers = {**DEMO_ANSWERS, "r1:review:-:1": "1 boardwalk", "r1:review:-:2": "ok"}
    prompter = Typing(answers)
    live = LiveGame(log, prompter, fsync=False)
    oracle = oracle_detector(demo, board)
    live.run(list_source(demo.frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    entries = read_log(log)
    assert [e["kind"] for e in entries].count("request") == 1
    override = [e for e in entries if e["kind"] == "override"]
    assert len(override) == 1 and (tmp_path / override[0]["evidence"]).is_file()
    assert override[0]["after"] == {"space": "boardwalk", "state": "board"}
    first = live.game.history[0]
    assert "boardwalk" in first.per_side["red"].properties  # and blue's Railroad went elsewhere (E2)
    assert "boardwalk" not in first.per_side["blue"].properties
    rebuilt = LiveGame(log, None, live=False)  # the request is re-fed: the logged review answers still fit
    assert rebuilt.incomplete is None and _standings(rebuilt.game) == _standings(live.game)


def test_the_benchmark_writes_its_report(tmp_path):
    from knockcam.live.bench import run_bench

    out = tmp_path / "live.md"
    report = run_bench(out, size=(480, 270), model=None, games=0)
    assert out.read_text() == report
    assert "frames/s" in report and "| final standings as the engine scores the script | match" in report


def test_json_alone_on_stdout_and_quiet_still_gives_the_result(demo_files, board, tmp_path, capsys):
    """With --json the scoreboards and questions go to stderr, so stdout parses; with --quiet the result is one
    line (before: --json shared stdout with the tables, and --quiet printed no result)."""
    f = demo_files
    game = ["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order", "red,blue",
            "--tokens", "2", "--answers", str(f["answers"]), "--no-model"]
    assert main([*game, "--log", str(tmp_path / "a.jsonl"), "--json"]) == 0
    out, err = capsys.readouterr()
    result = json.loads(out)
    assert result["over"] is True and result["standings"] == _standings(demo_expected(board))
    assert "Round 1" in err or "round 1" in err  # the tables were shown, on stderr
    assert main([*game, "--log", str(tmp_path / "b.jsonl"), "--quiet"]) == 0
    line = capsys.readouterr().out.strip()
    cash = ", ".join(f"{side} {amount}" for side, amount in result["cash"].items())
    assert line == f"game over in round {result['round']}: {cash}; pot {result['pot']}"
