"""``knockcam live --serve``: the game's page, its numbers and its picture, over HTTP."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.live import web
from knockcam.live.compose import DEMO_ANSWERS, demo_expected
from knockcam.live.display import Display
from knockcam.live.prompts import Question, TerminalPrompter, yes_no


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
    page.show_question(Question("r2:jail:red:1", "red token on Go to Jail: pay M100 to leave?", "yes"))
    page.show_round(1, {"order": ["red", "blue"], "per_side": {"red": {"delta": 500}, "blue": {"delta": 200}},
                        "pot_after": 500})
    state = json.loads(_get(page, "/state.json")[2])
    assert state["round"] == 2 and state["order"] == ["blue", "red"] and state["cash"] == {"red": 500, "blue": 200}
    assert state["if_it_ended_now"] == {"red": 300, "blue": -100} and state["frame"] == 1
    assert state["messages"] == ["Clear the board for round 2"] and state["question"]["text"].startswith("red token")
    assert state["question"]["key"] == "r2:jail:red:1" and state["question"]["default"] == "yes"
    assert state["last_round"] == {"round": 1, "order": ["red", "blue"], "delta": {"red": 500, "blue": 200},
                                   "pot_after": 500}
    page.show_question(None)
    page.show_standings([{"place": 1, "side": "red", "cash": 500}])
    state = json.loads(_get(page, "/state.json")[2])
    assert state["question"] is None and state["standings"] == [{"place": 1, "side": "red", "cash": 500}]
    with pytest.raises(urllib.error.HTTPError) as unknown:
        _get(page, "/etc/passwd")
    assert unknown.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as none_yet:
        _get(page, "/scored.jpg")
    assert none_yet.value.code == 404 and page.state()["scored"] is None
    page.show_scored(1, b"\xff\xd8 scored \xff\xd9", [{"number": 1, "side": "red", "x": 0.5, "y": 0.5,
                                                          "space": "Chance", "doubts": []}])
    assert _get(page, "/scored.jpg?round=1")[2] == b"\xff\xd8 scored \xff\xd9"
    assert page.state()["scored"] == {"round": 1, "marks": [{"number": 1, "side": "red", "x": 0.5, "y": 0.5,
                                                             "space": "Chance", "doubts": []}]}


def test_a_port_in_use_is_one_line_saying_what_to_do(page):
    with pytest.raises(KnockcamError, match=f"--serve {page.port}: cannot serve there") as caught:
        web.GamePage(page.port, host="127.0.0.1")
    assert "another port" in str(caught.value)
    assert f"--serve {page.port}" not in str(caught.value).split("another port")[1]  # not the busy one again


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
    # the frame round 2 was scored on stays up, its tokens numbered: the engine's placements
    scored = state["scored"]
    assert scored["round"] == 2 and all(0 < m["x"] < 1 and 0 < m["y"] < 1 for m in scored["marks"])
    assert sorted((m["side"], m["space"]) for m in scored["marks"]) == sorted(
        (t.side, board.space(t.space).name) for t in demo_expected(board).history[1].tokens if t.space)
    assert state["messages"] and state["question"] is None


@pytest.mark.skipif(shutil.which("node") is None, reason="the page's script is run with Node, not installed here")
def test_the_pages_script_shows_the_state_it_fetches(page, tmp_path):
    page.show_state({"round": 2, "rounds": 4, "phase": "slide", "order": ["blue", "red"], "expected": "red",
                     "slid": {"blue": 1}, "cash": {"red": 500, "blue": 200}, "pot": 500})
    page.show_provisional(_Provisional())
    page.show_message("Clear the board for round 2")
    page.show_message("blue token on Railroad")
    page.show_question(Question("r2:jail:red:1", "pay M100?", "yes"))
    page.show_frame(b"jpeg", [{"number": 1, "side": "red", "x": 0.25, "y": 0.5, "space": "Baltic Avenue",
                               "doubts": ["close call"]}], "looking for the board")
    page.show_scored(1, b"jpeg", [{"number": 2, "side": "blue", "x": 0.75, "y": 0.125, "space": "Chance",
                                   "doubts": []}])
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
    assert shown["asked"]["text"] == "Waiting at the keyboard: pay M100? [yes]" and not shown["question"]["hidden"]
    assert shown["answer"]["hidden"] and shown["review"]["hidden"]  # this page only shows
    assert shown["pot"]["text"] == "Free Parking pot M500"
    assert shown["messages"]["items"] == ["blue token on Railroad", "Clear the board for round 2"]  # newest first
    assert shown["frame"]["src"] == "frame.jpg?n=1"
    # the tokens numbered where the picture shows them, and listed under it, in the page's letters
    assert shown["marks"]["spans"] == [[1, "mark red", "25.00%", "50.00%"]]
    assert shown["tokens"]["spans"] == [["1 red: Baltic Avenue (close call)", "red", None, None]]
    assert shown["note"]["text"] == "looking for the board"
    # the frame the last round was scored on, under its payouts
    assert not shown["scored"]["hidden"] and shown["scoredframe"]["src"] == "scored.jpg?round=1"
    assert shown["scoredmarks"]["spans"] == [[2, "mark blue", "75.00%", "12.50%"]]
    assert shown["scoredtokens"]["items"] == ["2 blue: Chance"]


def _post(port, path, data):
    """POST JSON to the page: (status, reply)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(data).encode("utf-8"),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def answering():
    shown = web.GamePage(0, host="127.0.0.1", answers=True)
    yield shown
    shown.close()


def test_a_page_that_only_shows_refuses_answers(page):
    page.show_question(Question("r2:jail:red:1", "pay M100?", "yes", yes_no))
    code, reply = _post(page.port, "/answer", {"key": "r2:jail:red:1", "answer": "y"})
    assert code == 403 and "--answer-on-page" in reply["error"]
    assert _post(page.port, "/review", {})[0] == 403
    assert page.take_answer("r2:jail:red:1") is None and not page.take_review()


def test_the_page_answers_the_waiting_question_checked_as_the_keyboards_answer_is(answering):
    port = answering.port
    assert _post(port, "/answer", {"key": "r2:jail:red:1", "answer": "y"}) == (
        409, {"error": "that question is no longer waiting"})  # none is waiting
    answering.show_question(Question("r2:jail:red:1", "pay M100?", "yes", yes_no))
    assert json.loads(_get(answering, "/state.json")[2])["answers"] is True
    assert _post(port, "/answer", {"key": "r1:railroad:blue:1", "answer": "y"})[0] == 409  # another question
    assert _post(port, "/answer", {"key": "r2:jail:red:1", "answer": "maybe"}) == (400, {"error": "answer yes or no"})
    assert _post(port, "/answer", {"answer": "y"})[0] == 400  # no key
    assert answering.take_answer("r2:jail:red:1") is None  # nothing valid given yet
    assert _post(port, "/answer", {"key": "r2:jail:red:1", "answer": ""}) == (200, {"ok": True, "answer": "yes"})
    assert answering.take_answer("r1:railroad:blue:1") is None
    assert answering.take_answer("r2:jail:red:1") == "yes" and answering.take_answer("r2:jail:red:1") is None
    assert _post(port, "/review", {}) == (200, {"ok": True})
    assert answering.take_review() and not answering.take_review()


def test_the_terminal_takes_whichever_answer_comes_first(answering):
    read_end, write_end = os.pipe()
    with os.fdopen(read_end) as keyboard, os.fdopen(write_end, "w") as typing:
        out = io.StringIO()
        prompter = TerminalPrompter(keyboard, out, page=answering)
        question = Question("r2:jail:red:1", "pay M100?", "yes", yes_no)
        answering.show_question(question)
        threading.Timer(0.3, lambda: _post(answering.port, "/answer", {"key": question.key, "answer": "n"})).start()
        assert prompter.ask(question) == "no" and "(answered on the game's page)" in out.getvalue()
        assert prompter.answered_on == "page"
        typing.write("y\n")
        typing.flush()
        assert prompter.ask(Question("r2:jail:red:2", "pay M100?", "no", yes_no)) == "yes"  # typed, page quiet
        assert prompter.answered_on == "keyboard"
        moot = Question("r3:off:red:1", "off the board?", "yes", yes_no, timeout_s=0.3)
        assert prompter.ask(moot) == "yes" and "(no answer: yes)" in out.getvalue()  # its time still runs out
        assert prompter.answered_on == "timeout"
        _post(answering.port, "/review", {})
        assert prompter.poll()  # a review asked on the page, as a line typed between questions


def test_with_no_keyboard_the_page_alone_answers(answering):
    out = io.StringIO()
    prompter = TerminalPrompter(io.StringIO(""), out, page=answering)  # stdin closed: a game run with no terminal
    question = Question("r2:jail:red:1", "pay M100?", "no", yes_no)
    answering.show_question(question)
    threading.Timer(0.3, lambda: _post(answering.port, "/answer", {"key": question.key, "answer": "y"})).start()
    assert prompter.ask(question) == "yes" and prompter.answered_on == "page"
    assert "(no keyboard: answer on the game's page)" in out.getvalue()
    with pytest.raises(KnockcamError, match="input closed"):  # without the page, as before: resume later
        TerminalPrompter(io.StringIO(""), io.StringIO()).ask(question)


def test_a_whole_game_answered_on_the_page(demo_files, board, tmp_path, capsys, monkeypatch):
    pages = []
    init = web.GamePage.__init__

    def init_and_keep(self, *args, **kwargs):
        init(self, *args, **kwargs)
        pages.append(self)

    monkeypatch.setattr(web.GamePage, "__init__", init_and_keep)
    read_end, write_end = os.pipe()  # a keyboard nobody types on
    monkeypatch.setattr("sys.stdin", os.fdopen(read_end))
    answered, done = [], threading.Event()

    def player():  # answers each question as it shows on the page: the game's answer, else the default
        while not done.is_set():
            time.sleep(0.05)
            try:
                question = json.loads(_get(pages[0], "/state.json")[2])["question"] if pages else None
                if question and (not answered or answered[-1] != question["key"]):
                    code, _ = _post(pages[0].port, "/answer", {"key": question["key"],
                                                               "answer": DEMO_ANSWERS.get(question["key"], "")})
                    if code == 200:
                        answered.append(question["key"])
            except OSError:  # the page closed with the game
                return

    thread = threading.Thread(target=player, daemon=True)
    thread.start()
    f = demo_files
    try:
        assert main(["live", "--video", str(f["video"]), "--calibration", str(f["calibration"]), "--order",
                     "red,blue", "--tokens", "2", "--log", str(tmp_path / "g.jsonl"), "--quiet", "--json",
                     "--no-model", "--serve", "0", "--answer-on-page", "--review", "always"]) == 0
    finally:
        done.set()
        thread.join()
        os.close(write_end)
    out, err = capsys.readouterr()
    assert err.count("(answered on the game's page)") == len(answered)  # with --json, stdout holds the JSON alone
    result = json.loads(out)
    assert result["standings"] == [s.to_dict() for s in demo_expected(board).standings()]
    logged = [json.loads(line) for line in (tmp_path / "g.jsonl").read_text().splitlines()]
    assert [e["key"] for e in logged if e["kind"] == "answer"] == answered and set(DEMO_ANSWERS) <= set(answered)
    assert {e["on"] for e in logged if e["kind"] == "answer"} == {"page"}  # the log says where each came from
    assert {"r1:review:-:1", "r2:review:-:1"} <= set(answered)  # the round-end reviews, answered there too


def test_answer_on_page_needs_a_page_and_no_answers_file(demo_files, tmp_path, capsys):
    f = demo_files
    base = ["live", "--video", str(f["video"]), "--order", "red,blue", "--log", str(tmp_path / "g.jsonl")]
    assert main(base + ["--answer-on-page"]) == 2
    assert "give --serve PORT too" in capsys.readouterr().err
    assert main(base + ["--serve", "0", "--answer-on-page", "--answers", str(f["answers"])]) == 2
    assert "leave out --answer-on-page" in capsys.readouterr().err
    assert not (tmp_path / "g.jsonl").exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="the page's script is run with Node, not installed here")
@pytest.mark.parametrize("typed, taken, why", [("n", "no", ""), ("maybe", None, "answer yes or no")])
def test_the_pages_script_sends_an_answer_typed_on_it(answering, tmp_path, typed, taken, why):
    answering.show_state({"round": 2, "rounds": 4, "phase": "slide", "order": ["blue", "red"], "expected": "red",
                          "slid": {"blue": 1}, "cash": {"red": 500, "blue": 200}, "pot": 500})
    answering.show_question(Question("r2:jail:red:1", "pay M100?", "yes", yes_no))
    script = tmp_path / "page.js"
    script.write_text(web.PAGE.split("<script>")[1].split("</script>")[0], encoding="utf-8")
    run = subprocess.run(["node", str(Path(__file__).with_name("page_dom.js")), f"http://127.0.0.1:{answering.port}/",
                          str(script), "type:" + typed], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    assert shown["asked"]["text"] == "Waiting for an answer: pay M100? [yes]"
    assert shown["document_title"] == "? knockcam live"
    assert not shown["answer"]["hidden"] and not shown["review"]["hidden"]
    assert answering.take_answer("r2:jail:red:1") == taken and shown["why"]["text"] == why


@pytest.mark.skipif(shutil.which("node") is None, reason="the page's script is run with Node, not installed here")
def test_a_close_call_is_settled_with_one_tap_at_the_review(answering, board, demo, tmp_path):
    display = Display(board, quiet=True, page=answering)
    space = board.space("boardwalk")
    xy = [float(v) for v in np.mean(np.asarray(space.polygon), axis=0)]
    tokens = [{"id": 2, "side": "red", "xy_mm": xy, "space": "boardwalk", "state": "board", "ambiguous": True,
               "doubts": ["close call: or Park Place, margin 1.2 mm"], "rival": "park_place"},
              {"id": 3, "side": "blue", "xy_mm": xy, "space": "boardwalk", "state": "board", "ambiguous": True,
               "doubts": ["close call: or no space, margin 0.4 mm"], "rival": "no_space"}]
    snapshot = {"round": 1, "rounds": 2, "phase": "slide", "order": ["red", "blue"], "expected": None,
                "slid": {}, "cash": {"red": 0, "blue": 0}, "pot": 500, "tokens": tokens}
    display.frame(demo.frames[0], demo.calibration, snapshot)
    display.asked(Question("r1:review:-:1", "Enter to score this round, or fix a token", "ok"))
    answering.show_close_ups({3: b"jpeg"})
    script = tmp_path / "page.js"
    script.write_text(web.PAGE.split("<script>")[1].split("</script>")[0], encoding="utf-8")
    run = subprocess.run(["node", str(Path(__file__).with_name("page_dom.js")), f"http://127.0.0.1:{answering.port}/",
                          str(script), "click:quick:0"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    shown = json.loads(run.stdout)
    # one button, for the close call the review can settle (it cannot put a token on no space)
    assert shown["quick"]["items"] == ["3 red: not Boardwalk, Park Place", ""]
    assert answering.take_answer("r1:review:-:1") == "3 park_place"
    assert shown["closeups"]["nested"] == [["closeup/3.jpg?q=r1%3Areview%3A-%3A1", "token 3"]]


def test_the_review_shows_each_token_in_doubt_magnified_from_above(page, board, demo):
    import cv2

    from knockcam.assign import CLOSE_CALL, assign
    from knockcam.detect.tokens import Token
    from knockcam.report.evidence import TILE

    display = Display(board, quiet=True, page=page)
    near_line = Token("red", (172.0, 350.0), 0.9, sigma_mm=8.0)  # a close call
    inside = Token("blue", [float(v) for v in np.mean(np.asarray(board.space("boardwalk").polygon), axis=0)], 0.9,
                   sigma_mm=1.0)
    positions = tuple(assign([near_line, inside], board))
    assert CLOSE_CALL in positions[0].flags and not positions[1].ambiguous
    tokens = [{"id": 4, "side": "red", "colour": "red", "xy_mm": [172.0, 350.0], "state": "board", "ambiguous": True},
              {"id": 5, "side": "blue", "colour": "blue", "xy_mm": list(inside.xy_mm), "state": "board",
               "ambiguous": False}]
    display.asked(Question("r1:review:-:1", "Enter to score this round, or fix a token", "ok"))
    display.close_ups(demo.frames[0], demo.calibration, positions, {"tokens": tokens})
    assert page.state()["close_ups"] == [5]  # token 5 (the review's number) alone is in doubt
    picture = cv2.imdecode(np.frombuffer(_get(page, "/closeup/5.jpg")[2], np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (TILE, TILE, 3)
    for missing in ("/closeup/6.jpg", "/closeup/x.jpg"):
        with pytest.raises(urllib.error.HTTPError) as none:
            _get(page, missing)
        assert none.value.code == 404
    display.asked(None)  # answered: the close-ups go with the question
    assert page.state()["close_ups"] == []


def test_a_close_call_in_a_game_is_shown_close_up_at_the_review_and_settled_by_its_button(board, tmp_path,
                                                                                          monkeypatch):
    """End to end: red comes to rest on St. James Place by its line with Tennessee Avenue (a close call, margin
    0.4 mm, read off the frames by the oracle detector); at the round-end review the page shows its close-up, the
    button's answer (what the page sends) moves it, and the round is scored with red on Tennessee Avenue."""
    import cv2

    from knockcam.live.compose import Composer, Move, Step, oracle_detector, spot
    from knockcam.live.frames import list_source
    from knockcam.live.log import read_log
    from knockcam.live.prompts import ScriptedPrompter
    from knockcam.live.session import LiveGame, new_log
    from knockcam.report.evidence import TILE
    from knockcam.settings import load

    # the frames come as fast as they are read, not at 30 a second: the page is given every one of them
    monkeypatch.setitem(load("live")["page"], "frames_per_s", 1e6)
    page = web.GamePage(0, host="127.0.0.1")
    composer = Composer(board, seed=5)
    composer.hold(20)
    composer.step(Step((Move("red:0", (85.6, 517.5)),)))
    composer.step(Step((Move("blue:0", spot(board, "marvin_gardens")),)))
    composed = composer.result()
    seen = {}

    class Referee(ScriptedPrompter):
        def ask(self, question):  # at the review: what the page shows, and the button's answer
            if ":review:" in question.key and "button" not in seen:  # the next review: as fixed, score it
                state = page.state()
                seen["close_ups"] = state["close_ups"]
                seen["pictures"] = [_get(page, f"/closeup/{n}.jpg")[2] for n in state["close_ups"]]
                mark = next(m for m in state["marks"] if m["rival"])
                seen["button"] = f"{mark['number']} {mark['rival']['answer']}"
                return seen["button"]
            return super().ask(question)

    log = tmp_path / "g.jsonl"
    new_log(log, order=("red", "blue"), board_path=None, tokens_per_side=1, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=composed.calibration, fsync=False).close()
    live = LiveGame(log, Referee(), display=Display(board, quiet=True, page=page), fsync=False, model=None)
    try:
        live.run(list_source(composed.frames + [composed.frames[-1]] * 30, composed.fps),
                 detector_factory=lambda cal, ref: oracle_detector(composed, board))
    finally:
        page.close()
    assert seen["close_ups"] == [1] and seen["button"] == "1 tennessee_avenue"
    picture = cv2.imdecode(np.frombuffer(seen["pictures"][0], np.uint8), cv2.IMREAD_COLOR)
    assert picture.shape == (TILE, TILE, 3)
    rounds = [e for e in read_log(log) if e["kind"] == "round"]
    assert len(rounds) == 1 and "tennessee_avenue" in json.dumps(rounds[0]["result"])
    assert "st_james_place" not in json.dumps(rounds[0]["result"])
