"""--resume: a game stopped at a question before a round is scored, or killed before its last observation's
events were written, logs that round once; another game's video or camera is refused, not taken for a move."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.live.compose import DEMO_ANSWERS, DEMO_ORDER, DEMO_TOKENS, Composer, demo_expected, oracle_detector
from knockcam.live.display import Display
from knockcam.live.frames import list_source
from knockcam.live.log import RESUME_LATER, read_log
from knockcam.live.prompts import ScriptedPrompter
from knockcam.live.session import LiveGame, new_log
from knockcam.live.story import story


def _start(path, demo):
    new_log(path, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=demo.calibration, reference=demo.empty,
            fsync=False).close()


def _standings(game):
    return [s.to_dict() for s in game.standings()]


def _rounds(log):
    return [e["round"] for e in read_log(log) if e["kind"] == "round"]


class _StopAt(ScriptedPrompter):
    """The demo's answers, but nobody answers ``key``: the game stops there, as at Ctrl-C or input closed."""

    def __init__(self, key):
        super().__init__(dict(DEMO_ANSWERS))
        self.key = key

    def ask(self, question):
        if question.key == self.key:
            raise KnockcamError("no answer (input closed)", RESUME_LATER)
        return super().ask(question)


class _Tables(Display):
    """A quiet display that keeps the rounds it was shown."""

    def __init__(self, board):
        super().__init__(board, quiet=True)
        self.rounds = []

    def round_table(self, number, result):
        self.rounds.append(number)


def test_a_game_resumed_at_a_question_before_its_round_is_scored_shows_and_logs_that_round_once(demo, board,
                                                                                                tmp_path):
    """Resumed, the question was asked while the log was replayed muted, and round 1's scoring was neither shown
    nor logged: knockcam replay told a round 1 without its Railroad move and score."""
    log = tmp_path / "game.jsonl"
    _start(log, demo)
    oracle = oracle_detector(demo, board)
    with pytest.raises(KnockcamError, match="resume later"):
        LiveGame(log, _StopAt("r1:railroad:blue:1"), fsync=False).run(
            list_source(demo.frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    assert _rounds(log) == [] and read_log(log)[-1]["kind"] == "question"

    prompter, display = ScriptedPrompter(dict(DEMO_ANSWERS)), _Tables(board)
    live = LiveGame(log, prompter, display=display, fsync=False)
    assert [key for key, _ in prompter.asked] == ["r1:railroad:blue:1"]
    assert _rounds(log) == [1] and display.rounds == [1]
    assert any(m.startswith("Round 1 scored") for m in prompter.told)
    size = log.stat().st_size
    LiveGame(log, ScriptedPrompter({}), fsync=False)  # resumed again: already logged, not again
    assert log.stat().st_size == size

    live.run(list_source(demo.frames, demo.fps, start_index=live.last_frame + 1),
             detector_factory=lambda cal, ref: oracle)
    assert live.tracker.phase == "over" and _standings(live.game) == _standings(demo_expected(board))
    entries = read_log(log)
    assert _rounds(log) == [1, 2] and [e["seq"] for e in entries] == list(range(len(entries)))
    told = [h.text for h in story(entries, board) if h.round == 1]
    assert "round 1 scored on this frame" in told and any(t.startswith("E2: blue moved") for t in told)


@pytest.mark.parametrize("written", [0, 2])
def test_a_game_killed_before_its_last_observations_events_were_written_logs_them_once(demo, board, tmp_path,
                                                                                       written):
    """Killed after the last observation's line and ``written`` of the lines that followed it (a knock, a slide,
    then the end of the game): the others, round 2's scoring among them, were never logged."""
    log = tmp_path / "game.jsonl"
    _start(log, demo)
    oracle = oracle_detector(demo, board)
    LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False).run(
        list_source(demo.frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    kinds = [e["kind"] for e in read_log(log)]
    last = len(kinds) - kinds[::-1].index("observation")
    tail = kinds[last:]
    assert tail[-2:] == ["round", "standings"] and len(tail) > written + 2
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:last + written]))

    display = _Tables(board)
    live = LiveGame(log, ScriptedPrompter({}), display=display, fsync=False)
    assert live.tracker.phase == "over" and display.rounds == [2]
    entries = read_log(log)
    assert [e["kind"] for e in entries][last:] == tail and _rounds(log) == [1, 2]
    assert [e["seq"] for e in entries] == list(range(len(entries)))
    size = log.stat().st_size
    LiveGame(log, ScriptedPrompter({}), fsync=False)  # resumed again: nothing more to log
    assert log.stat().st_size == size


def _stopped_in_round_1(log, demo, board):
    """The demo game followed up to the middle of round 1, then stopped (the frames ended): its LiveGame."""
    _start(log, demo)
    oracle = oracle_detector(demo, board)
    LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None).run(
        list_source(demo.frames[:demo.marks[4]], demo.fps), detector_factory=lambda cal, ref: oracle)
    return LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None), oracle


def _other_game(board, seed):
    """A second of another game's camera at the demo's size (another table, light and camera place): empty board."""
    return [Composer(board, seed=seed, size=(480, 270)).empty] * 30


def _no_board(seed):
    """A second of a camera that shows no board at all: a cloth's coloured blotches under room light."""
    rng = np.random.default_rng(seed)
    blotches = cv2.resize(rng.integers(40, 220, (9, 16, 3), dtype=np.uint8), (480, 270), interpolation=cv2.INTER_CUBIC)
    return [cv2.GaussianBlur(blotches, (0, 0), 3)] * 30


@pytest.mark.parametrize("other,said", [
    ("seed 11", "mm from where the game was calibrated"),  # features put its board 1170 mm away: a "camera move"
    ("seed 1", "mm from where the game was calibrated"),  # features match nothing; its printed lines place it
    ("larger", "its frames are 640x360, the game was calibrated on 480x270 ones"),
    # used to wait to its end
    ("no board", "none of its still frames showed the board where the game left it, and the board was not found"),
])
def test_resume_with_another_games_video_is_refused_not_taken_for_a_camera_move(demo, board, tmp_path, other, said):
    log = tmp_path / "game.jsonl"
    live, oracle = _stopped_in_round_1(log, demo, board)
    if other == "larger":
        frames = [cv2.resize(f, (640, 360)) for f in demo.frames[demo.marks[4]:]]
    elif other == "no board":
        frames = _no_board(3)
    else:
        frames = _other_game(board, int(other.split()[1]))
    with pytest.raises(KnockcamError) as refused:
        live.run(list_source(frames, demo.fps), detector_factory=lambda cal, ref: oracle)
    message = str(refused.value)
    assert message.startswith(f"frame list does not show the game in {log} (") and said in message
    assert message.endswith("or start a new game without --resume") and "\n" not in message
    assert [e["note"] for e in read_log(log) if e["kind"] == "calibration"] == ["given"]  # not re-registered


def test_a_camera_bumped_while_a_game_was_stopped_is_re_registered_on_resume(demo, board, tmp_path):
    """A bump's few millimetres are still a camera move: re-registered, and the game goes on to its end."""
    log = tmp_path / "game.jsonl"
    live, oracle = _stopped_in_round_1(log, demo, board)
    h, w = demo.empty.shape[:2]
    shift = np.float32([[1, 0, 9], [0, 1, 5]])
    frames = [cv2.warpAffine(f, shift, (w, h), borderMode=cv2.BORDER_REPLICATE) for f in demo.frames]
    live.run(list_source(frames, demo.fps, start_index=live.last_frame + 1), detector_factory=lambda cal, ref: oracle)
    moved = [e for e in read_log(log) if e["kind"] == "camera" and e["trouble"] == "moved"]
    assert len(moved) == 1 and "re-registered" in moved[0]["message"]
    assert live.tracker.phase == "over" and _standings(live.game) == _standings(demo_expected(board))


def test_resume_with_another_games_video_stops_in_one_line(demo_files, board, tmp_path, capsys):
    f = demo_files
    log = tmp_path / "game.jsonl"
    common = ["--answers", str(f["answers"]), "--quiet", "--no-model"]
    assert main(["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order", "red,blue",
                 "--tokens", "2", "--log", str(log), "--max-frames", "120", *common]) == 3
    capsys.readouterr()
    other = tmp_path / "other.avi"
    writer = cv2.VideoWriter(str(other), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (480, 270))
    for frame in _other_game(board, 11):
        writer.write(frame)
    writer.release()
    assert main(["live", "--resume", str(log), "--video", str(other), *common]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"knockcam: error: video {other} does not show the game in {log} (it shows the board ")
    assert last.endswith("or start a new game without --resume")


def test_ctrl_c_says_how_to_go_on(demo_files, tmp_path, capsys, monkeypatch):
    """Stopping a game with Ctrl-C names the command that continues it (before: 'knockcam: interrupted')."""
    from knockcam.live.session import LiveGame

    def interrupted(self, source, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(LiveGame, "run", interrupted)
    log = tmp_path / "game.jsonl"
    assert main(["live", "--video", str(demo_files["video"]), "--calibration", str(demo_files["calibration"]),
                 "--order", "red,blue", "--tokens", "2", "--log", str(log), "--quiet", "--no-model"]) == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == f"knockcam: stopped in round 1; nothing is lost: continue with 'knockcam live --resume {log}'"


def test_frames_that_end_with_the_camera_moved_beyond_finding_say_so(demo, demo_files, tmp_path, capsys):
    """The camera knocked away mid-game, and the video ends before the board is seen again: the game is not
    over, and the line that says to resume says why it stopped and what to do first."""
    video = tmp_path / "knocked.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), demo.fps, (480, 270))
    for frame in list(demo.frames[:demo.marks[4]]) + _no_board(3) * 2:
        writer.write(frame)
    writer.release()
    log = tmp_path / "game.jsonl"
    assert main(["live", "--video", str(video), "--calibration", str(demo_files["calibration"]), "--order", "red,blue",
                 "--tokens", "2", "--log", str(log), "--answers", str(demo_files["answers"]), "--quiet",
                 "--no-model"]) == 3
    err = capsys.readouterr().err
    assert "with the game paused (the camera moved and the board was not found again: put the camera back" in err
    assert f"continue with 'knockcam live --resume {log}'" in err
    assert [e["trouble"] for e in read_log(log) if e["kind"] == "camera"][-1] == "moved"
