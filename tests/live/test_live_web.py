"""``knockcam live --serve``: the game's page, its numbers and its picture, over HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.live import web
from knockcam.live.compose import demo_expected
from knockcam.live.display import Display


def _get(page, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{page.port}{path}", timeout=5) as reply:
        return reply.status, reply.headers["Content-Type"], reply.read()


@pytest.fixture
def page():
    shown = web.GamePage(0, host="127.0.0.1")
    yield shown
    shown.close()


class _Provisional:
    delta = {"red": 300, "blue": -100}


def test_the_page_serves_what_the_game_hands_it(page):
    status, kind, html = _get(page, "/")
    assert status == 200 and kind.startswith("text/html") and b"state.json" in html and b"frame.jpg" in html
    with pytest.raises(urllib.error.HTTPError) as missing:
        _get(page, "/frame.jpg")
    assert missing.value.code == 404  # no frame yet
    page.show_frame(b"\xff\xd8 a jpeg \xff\xd9")
    assert _get(page, "/frame.jpg?n=1") == (200, "image/jpeg", b"\xff\xd8 a jpeg \xff\xd9")
    page.show_state({"round": 2, "rounds": 4, "phase": "slide", "order": ["blue", "red"], "expected": "red",
                     "slid": {"blue": 1}, "cash": {"red": 500, "blue": 200}, "pot": 500, "tokens": []})
    page.show_provisional(_Provisional())
    page.show_message("Clear the board for round 2")
    page.show_question("red token on Go to Jail: pay M100 to leave? [y]")
    page.show_round(1, {"order": ["red", "blue"], "per_side": {"red": {"delta": 500}, "blue": {"delta": 200}},
                        "pot_after": 500})
    state = json.loads(_get(page, "/state.json")[2])
    assert state["round"] == 2 and state["order"] == ["blue", "red"] and state["cash"] == {"red": 500, "blue": 200}
    assert state["if_it_ended_now"] == {"red": 300, "blue": -100} and state["frame"] == 1
    assert state["messages"] == ["Clear the board for round 2"] and state["question"].startswith("red token")
    assert state["last_round"] == {"round": 1, "order": ["red", "blue"], "delta": {"red": 500, "blue": 200},
                                   "pot_after": 500}
    page.show_question(None)
    page.show_standings([{"place": 1, "side": "red", "cash": 500}])
    state = json.loads(_get(page, "/state.json")[2])
    assert state["question"] is None and state["standings"] == [{"place": 1, "side": "red", "cash": 500}]
    with pytest.raises(urllib.error.HTTPError) as unknown:
        _get(page, "/etc/passwd")
    assert unknown.value.code == 404


def test_a_port_in_use_is_one_line_saying_what_to_do(page):
    with pytest.raises(KnockcamError, match=f"--serve {page.port}: cannot serve there") as caught:
        web.GamePage(page.port, host="127.0.0.1")
    assert "another port" in str(caught.value)


def test_the_page_gets_a_few_frames_a_second_not_every_frame(page, board, demo):
    display = Display(board, quiet=True, page=page)
    assert display.wants_frames and not display.show
    snapshot = {"round": 1, "rounds": 2, "phase": "slide", "order": ["red", "blue"], "expected": "red",
                "slid": {}, "cash": {"red": 0, "blue": 0}, "pot": 500, "tokens": []}
    for image in demo.frames[:10]:  # ten frames at once: the first is drawn, the rest come too soon
        display.frame(image, demo.calibration, snapshot)
    state = page.state()
    assert state["frame"] == 1 and state["phase"] == "slide"
    assert _get(page, "/frame.jpg")[2][:2] == b"\xff\xd8"  # the overlay, as JPEG


def test_the_page_is_told_where_the_picture_shows_each_token_and_its_words_not_drawn_in(page, board, demo):
    display = Display(board, quiet=True, page=page)
    space = board.space("baltic_avenue")
    xy = [float(v) for v in np.mean(np.asarray(space.polygon), axis=0)]
    tokens = [{"id": 0, "side": "red", "xy_mm": xy, "space": space.id, "state": "board", "doubts": ["disagreement"]},
              {"id": 1, "side": "blue", "xy_mm": [200.0, 100.0], "space": None, "state": "board", "doubts": []},
              {"id": 2, "side": "blue", "xy_mm": [float("nan")] * 2, "space": None, "state": "out", "doubts": []}]
    snapshot = {"round": 1, "rounds": 2, "phase": "slide", "order": ["red", "blue"], "expected": "red",
                "slid": {}, "cash": {"red": 0, "blue": 0}, "pot": 500, "tokens": tokens}
    image = demo.frames[0]
    display.frame(image, demo.calibration, snapshot)
    marks = page.state()["marks"]
    assert [(m["number"], m["side"], m["space"], m["doubts"]) for m in marks] == [
        (1, "red", "Baltic Avenue", ["disagreement"]), (2, "blue", "no space", [])]
    height, width = image.shape[:2]
    x, y = demo.calibration.mm_to_px([xy])[0]
    assert (marks[0]["x"], marks[0]["y"]) == pytest.approx((x / width, y / height))
    # the page's picture has the circles but not the words the window writes beside them
    plain = display.overlay(image, demo.calibration, snapshot, words=False)
    worded = display.overlay(image, demo.calibration, snapshot)
    beside = np.s_[int(y) - 8:int(y) + 3, int(x) + 14:int(x) + 60]
    assert not np.array_equal(plain, image)
    assert np.array_equal(plain[beside], image[beside]) and not np.array_equal(worded[beside], image[beside])


def test_a_whole_game_served_ends_with_its_standings_on_the_page(demo_files, board, tmp_path, capsys, monkeypatch):
    seen = {}
    close = web.GamePage.close

    def close_and_keep(self):
        seen.setdefault("state", self.state())
        close(self)

    monkeypatch.setattr(web.GamePage, "close", close_and_keep)
    f = demo_files
    assert main(["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order", "red,blue",
                 "--tokens", "2", "--log", str(tmp_path / "g.jsonl"), "--answers", str(f["answers"]), "--quiet",
                 "--json", "--no-model", "--serve", "0"]) == 0
    result = json.loads(capsys.readouterr().out)
    state = seen["state"]
    assert state["standings"] == result["standings"] == [s.to_dict() for s in demo_expected(board).standings()]
    assert state["last_round"]["round"] == 2 and state["frame"] >= 1 and state["phase"] == "over"
    assert state["messages"] and state["question"] is None


@pytest.mark.skipif(shutil.which("node") is None, reason="the page's script is run with Node, not installed here")
def test_the_pages_script_shows_the_state_it_fetches(page, tmp_path):
    page.show_state({"round": 2, "rounds": 4, "phase": "slide", "order": ["blue", "red"], "expected": "red",
                     "slid": {"blue": 1}, "cash": {"red": 500, "blue": 200}, "pot": 500})
    page.show_provisional(_Provisional())
    page.show_message("Clear the board for round 2")
    page.show_message("blue token on Railroad")
    page.show_question("pay M100?")
    page.show_frame(b"jpeg", [{"number": 1, "side": "red", "x": 0.25, "y": 0.5, "space": "Baltic Avenue",
                               "doubts": ["close call"]}], "looking for the board")
    script = tmp_path / "page.js"
    script.write_text(web.PAGE.split("<script>")[1].split("</script>")[0], encoding="utf-8")
    run = subprocess.run(["node", str(Path(__file__).with_name("page_dom.js")), f"http://127.0.0.1:{page.port}/",
                          str(script)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert shown["title"]["text"] == "Round 2 of 4: slide (next: red)"
    assert [[cell[0] for cell in row] for row in shown["sides"]["rows"]] == [["blue", 1, "M200", "-100"],
                                                                            ["red", 0, "M500", "+300"]]
    assert shown["sides"]["rows"][0][0][1] == "blue"  # the side in its colour
    assert shown["question"]["text"] == "Waiting at the keyboard: pay M100?" and not shown["question"]["hidden"]
    assert shown["pot"]["text"] == "Free Parking pot M500"
    assert shown["messages"]["items"] == ["blue token on Railroad", "Clear the board for round 2"]  # newest first
    assert shown["frame"]["src"] == "frame.jpg?n=1"
    # the tokens numbered where the picture shows them, and listed under it, in the page's letters
    assert shown["marks"]["spans"] == [[1, "mark red", "25.00%", "50.00%"]]
    assert shown["tokens"]["spans"] == [["1 red: Baltic Avenue (close call)", "red", None, None]]
    assert shown["note"]["text"] == "looking for the board"
