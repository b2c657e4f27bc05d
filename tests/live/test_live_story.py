"""``knockcam replay``'s account of a game: each logged event in the table's words, shown by the right frame."""

from __future__ import annotations

import datetime as dt
import json
import shutil

import pytest

from knockcam.cli import main
from knockcam.live.compose import DEMO_ANSWERS
from knockcam.live.log import read_log
from knockcam.live.story import story


def test_each_event_is_told_in_words_and_shown_by_the_frame_the_game_acted_on(board):
    entries = [
        {"seq": 0, "kind": "start"},
        {"seq": 1, "kind": "camera", "trouble": "board not found", "message": "no board in the first frame"},
        {"seq": 2, "kind": "observation", "evidence": "g.d/frame-000009.jpg"},
        {"seq": 3, "kind": "round_start", "round": 1},
        {"seq": 4, "kind": "observation", "evidence": "g.d/frame-000033.jpg"},
        {"seq": 5, "kind": "slide", "round": 1, "side": "red", "space": "go_to_jail", "state": "board", "frame": 33,
         "t": "2026-12-05T21:03:07.125+00:00"},
        {"seq": 6, "kind": "question", "key": "r1:jail:red:1", "text": "pay M100?", "default": "no"},
        {"seq": 7, "kind": "answer", "key": "r1:jail:red:1", "answer": "yes", "on": "page"},
        {"seq": 8, "kind": "jail", "round": 1, "side": "red", "paid": True},
        {"seq": 9, "kind": "observation", "evidence": "g.d/frame-000052.jpg"},
        {"seq": 10, "kind": "reslide", "round": 1, "side": "red", "why": "jail", "space": None, "state": "board"},
        {"seq": 11, "kind": "knock", "round": 1, "side": "blue", "before": "boardwalk", "after": None, "state": "out"},
        {"seq": 12, "kind": "knock", "round": 1, "side": "blue", "before": "chance", "after": "park_place",
         "state": "board"},
        {"seq": 13, "kind": "railroad", "round": 1, "side": "blue", "to": ["boardwalk"],
         "suggested": ["park_place"], "by": "player"},
        {"seq": 14, "kind": "override", "round": 1, "token": 2, "side": "blue",
         "before": {"space": "chance", "state": "board"}, "after": {"space": None, "state": "out"},
         "evidence": "g.d/frame-000052.jpg"},
        {"seq": 15, "kind": "round", "round": 1, "evidence": "g.d/frame-000052.jpg"},
        {"seq": 16, "kind": "observation", "frame": 60},  # no frame saved with it: the last one still shows
        {"seq": 17, "kind": "round_start", "round": 2},
        {"seq": 18, "kind": "slide", "round": 2, "side": "blue", "space": None, "state": "out", "out_of_turn": True},
    ]
    told = story(entries, board)
    assert [(h.round, h.text, h.evidence) for h in told] == [
        (0, "camera: board not found: no board in the first frame", None),
        (1, "red slid: Go to Jail", "g.d/frame-000033.jpg"),
        (1, "asked: pay M100? -> yes (answered on the game's page)", "g.d/frame-000033.jpg"),
        (1, "red paid M100 into the pot to slide again from jail (S4)", "g.d/frame-000033.jpg"),
        (1, "red slid again (out of jail, S4): no space", "g.d/frame-000052.jpg"),
        (1, "blue's token on Boardwalk knocked off (S2)", "g.d/frame-000052.jpg"),
        (1, "blue's token moved from Chance to Park Place", "g.d/frame-000052.jpg"),
        (1, "E2: blue moved the Railroad token to Boardwalk (the player's choice; suggested Park Place)",
         "g.d/frame-000052.jpg"),
        (1, "fixed by hand: token 3 (blue) Chance -> off the board", "g.d/frame-000052.jpg"),
        (1, "round 1 scored on this frame", "g.d/frame-000052.jpg"),
        (2, "blue slid: off the board (out of turn, or an earlier slide was not seen)", "g.d/frame-000052.jpg"),
    ]
    assert [h.seq for h in told] == [1, 5, 7, 8, 10, 11, 12, 13, 14, 15, 18]
    local = dt.datetime(2026, 12, 5, 21, 3, 7, tzinfo=dt.timezone.utc).astimezone().strftime("%H:%M:%S")
    assert told[1].time == local and told[0].time == ""  # the log's time, on this computer's clock


@pytest.fixture(scope="module")
def played_once(demo_files, tmp_path_factory):
    """The demo game played through ``knockcam live`` with its answers, once for these tests: its folder."""
    f = demo_files
    folder = tmp_path_factory.mktemp("played")
    assert main(["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order", "red,blue",
                 "--tokens", "2", "--log", str(folder / "g.jsonl"), "--answers", str(f["answers"]), "--quiet",
                 "--no-model"]) == 0
    return folder


@pytest.fixture
def played(played_once, tmp_path, capsys):
    """A copy of that game's log and frames in this test's folder (a test may damage it): the log's path."""
    shutil.copytree(played_once, tmp_path, dirs_exist_ok=True)
    capsys.readouterr()
    return tmp_path / "g.jsonl"


def test_replay_tells_each_round_as_it_happened_with_its_frames(played, tmp_path, capsys):
    log = played
    assert main(["replay", str(log), "--json"]) == 0
    told = json.loads(capsys.readouterr().out)["story"]
    answers = [h for h in told if h["text"].startswith("asked: ")]
    assert len(answers) == len(DEMO_ANSWERS) and all(h["round"] in (1, 2) for h in answers)
    assert all(h["text"].endswith(" (from the answers file)") for h in answers)  # where each answer came from
    assert sum(h["text"].startswith(("red slid", "blue slid")) for h in told) == sum(
        e["kind"] in ("slide", "reslide") for e in read_log(log))
    for h in told:  # every frame named is one the log saved
        assert h["evidence"] is None or (tmp_path / h["evidence"]).is_file()
    assert main(["replay", str(log)]) == 0
    shown = capsys.readouterr().out
    assert "Round 1, as it happened" in shown and "Round 2, as it happened" in shown
    first = next(h["evidence"] for h in told if h["evidence"])
    assert "frames in " in shown and f"{first.split('/')[-1]} " in shown  # the folder once


def test_replay_draws_each_round_as_it_was_scored(played, tmp_path, capsys):
    import cv2

    log = played
    assert main(["replay", str(log), "--json", "--pictures", str(tmp_path / "pictures")]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["pictures"] == {str(n): str(tmp_path / "pictures" / f"round-{n}.jpg") for n in (1, 2)}
    rounds = {e["round"]: e for e in read_log(log) if e["kind"] == "round"}
    for n in (1, 2):
        frame = cv2.imread(str(tmp_path / rounds[n]["evidence"]))
        drawn = cv2.imread(replayed["pictures"][str(n)])
        assert drawn.shape[1] == 1280 and frame.shape[1] < 1280  # a small camera's frame, drawn larger
        plain = cv2.resize(frame, (drawn.shape[1], drawn.shape[0]))
        assert (cv2.absdiff(drawn, plain).max(axis=2) > 80).sum() > 2000  # the tokens' marks and words
    # a frame gone from the log's folder: that round has no picture, said why; the other still has one
    (tmp_path / rounds[1]["evidence"]).unlink()
    assert main(["replay", str(log), "--json", "--pictures", str(tmp_path / "again")]) == 0
    again = json.loads(capsys.readouterr().out)["pictures"]
    assert again["1"].startswith("none: round 1's frame not found") and again["2"].endswith("round-2.jpg")
