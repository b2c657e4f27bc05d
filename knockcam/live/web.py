"""A page of the game for the table (``knockcam live --serve PORT``): the camera with the overlay, the
scoreboard, what the round would pay if it ended now, the last messages and the question waiting at the
keyboard, for a TV or the players' phones on the same network.

Python's own HTTP server runs in a thread beside the frame loop; the loop only hands it the scoreboard's
numbers and the overlay as JPEG, at most ``page.frames_per_s`` a second (data/live.yaml), so serving
costs the game little. The page asks ``/state.json`` every second and shows ``/frame.jpg`` with the tokens
numbered on it and listed under it in the page's own letters, which a phone can read (drawn into the picture,
they would shrink with it), and the frame the last round was scored on (``/scored.jpg``), marked the same way.
Answers are typed at the keyboard; with ``answers=True`` (``--answer-on-page``) the page may answer the
waiting question too (at the round-end review, a close call in one tap), and ask for a review before the round
is scored (as a line typed at the keyboard does): whichever answers first is the answer, checked as the
keyboard's is, and logged with where it came from.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from knockcam import settings
from knockcam.errors import KnockcamError
from knockcam.live.prompts import Question


class GamePage:
    """The state the page shows, and the server that shows it. Every method is safe to call from the loop."""

    def __init__(self, port: int, host: str = "0.0.0.0", answers: bool = False):
        cfg = settings.load("live")["page"]
        self._lock = threading.Lock()
        self._jpeg: bytes | None = None
        self._scored_jpeg: bytes | None = None  # the frame the last round was scored on
        self._close_ups: dict[int, bytes] = {}  # token number -> its close-up, while the review waits
        self._state: dict = {"frame": 0, "marks": [], "note": "", "messages": [], "question": None,
                             "if_it_ended_now": None, "last_round": None, "scored": None, "standings": None,
                             "answers": answers, "close_ups": []}
        self._question: Question | None = None  # the question waiting, while the page may answer it
        self._given: tuple[str, str] | None = None  # (question key, answer in normal form) given on the page
        self._review = False  # the page asked for a review before the round is scored
        self._messages: deque[str] = deque(maxlen=int(cfg["messages"]))
        self._every_s = 1.0 / float(cfg["frames_per_s"])
        self.jpeg_quality = int(cfg["jpeg_quality"])
        self._last_frame_t = float("-inf")
        page = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the name http.server calls)
                page._show(self)

            def do_POST(self):  # noqa: N802
                page._take(self)

            def log_message(self, *args):  # the terminal is the game's: no request log there
                pass

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as error:
            raise KnockcamError(f"--serve {port}: cannot serve there ({error.strerror or error})",
                                f"give another port, e.g. --serve {port + 1 if 0 < port < 65535 else 8765}") from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="knockcam page", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    # -- what the loop hands over ---------------------------------------------------------------------------
    def frame_due(self) -> bool:
        """Whether a new picture is wanted now (at most ``page.frames_per_s`` a second)."""
        return time.monotonic() - self._last_frame_t >= self._every_s

    def show_frame(self, jpeg: bytes, marks: list[dict] = (), note: str = "") -> None:
        """The camera's picture; ``marks``: the tokens on it (Display.token_marks), each at ``x``, ``y`` in fractions
        of the picture's width and height: the page numbers them on the picture and lists them under it, in its own
        letters, which a phone can read; ``note``: a line about the picture (e.g. "looking for the board")."""
        with self._lock:
            self._jpeg = jpeg
            self._state["frame"] += 1
            self._state["marks"] = [dict(m) for m in marks]
            self._state["note"] = note
            self._last_frame_t = time.monotonic()

    def show_state(self, snapshot: dict) -> None:
        """The scoreboard's numbers: the tracker's snapshot."""
        keys = ("round", "rounds", "phase", "order", "expected", "slid", "cash", "pot")
        with self._lock:
            self._state.update({k: snapshot.get(k) for k in keys})

    def show_scored(self, number: int, jpeg: bytes, marks: list[dict]) -> None:
        """The frame round ``number`` was scored on, with its tokens' marks (as show_frame's)."""
        with self._lock:
            self._scored_jpeg = jpeg
            self._state["scored"] = {"round": number, "marks": [dict(m) for m in marks]}

    def show_close_ups(self, pictures: dict[int, bytes]) -> None:
        """Close-ups of the tokens the review asks a human about, by token number (JPEG); {}: none."""
        with self._lock:
            self._close_ups = dict(pictures)
            self._state["close_ups"] = sorted(pictures)

    def show_provisional(self, provisional) -> None:
        """What the round pays if it ended now (a RoundResult; None: not in a round)."""
        with self._lock:
            self._state["if_it_ended_now"] = None if provisional is None else dict(provisional.delta)

    def show_message(self, text: str) -> None:
        with self._lock:
            self._messages.append(text)
            self._state["messages"] = list(self._messages)

    def show_question(self, question: Question | None) -> None:
        """The question waiting for an answer (None: none)."""
        with self._lock:
            self._question, self._given = question, None
            self._state["question"] = None if question is None else {"key": question.key, "text": question.text,
                                                                      "default": question.default}

    # -- what the page hands back (``answers``) ----------------------------------------------------------------
    def take_answer(self, key: str) -> str | None:
        """The answer given on the page to the question ``key``, in normal form, once (None: none yet)."""
        with self._lock:
            if self._given is None or self._given[0] != key:
                return None
            answer, self._given = self._given[1], None
            return answer

    def take_review(self) -> bool:
        """Whether the page asked for a review since the last call."""
        with self._lock:
            asked, self._review = self._review, False
            return asked

    def show_round(self, number: int, result: dict) -> None:
        with self._lock:
            self._state["last_round"] = {"round": number, "order": result["order"],
                                         "delta": {s: result["per_side"][s]["delta"] for s in result["order"]},
                                         "pot_after": result["pot_after"]}

    def show_standings(self, standings: list[dict]) -> None:
        with self._lock:
            self._state["standings"] = [dict(s) for s in standings]

    def state(self) -> dict:
        with self._lock:
            return json.loads(json.dumps(self._state))

    def close(self) -> None:
        """Stop serving (again: nothing)."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()

    # -- the server's side ------------------------------------------------------------------------------------
    def _take(self, request: BaseHTTPRequestHandler) -> None:
        """POST /answer {"key", "answer"} or /review: 200 {"ok": true}, or an error with {"error": why}."""
        path = request.path.split("?", 1)[0]
        if path not in ("/answer", "/review"):
            request.send_error(404)
            return
        if not self._state["answers"]:
            self._reply(request, 403, {"error": "this page only shows the game: answer at the keyboard "
                                                "(knockcam live --answer-on-page lets it answer)"})
            return
        if path == "/review":
            with self._lock:
                self._review = True
            self._reply(request, 200, {"ok": True})
            return
        try:
            length = int(request.headers.get("Content-Length") or 0)
            body = json.loads(request.rfile.read(min(length, 10_000)) or b"{}")
            key, answer = str(body["key"]), str(body.get("answer", ""))
        except (ValueError, KeyError, TypeError, AttributeError):
            self._reply(request, 400, {"error": 'send {"key": the question\'s key, "answer": the answer}'})
            return
        with self._lock:
            question = self._question
        if question is None or question.key != key:
            self._reply(request, 409, {"error": "that question is no longer waiting"})
            return
        try:  # checked here, while the game waits for this very answer
            normal = question.normal(answer)
        except ValueError as error:
            self._reply(request, 400, {"error": str(error)})
            return
        with self._lock:
            still_waiting = self._question is question
            if still_waiting:
                self._given = (key, normal)
        if not still_waiting:
            self._reply(request, 409, {"error": "that question was answered at the keyboard"})
            return
        self._reply(request, 200, {"ok": True, "answer": normal})

    @staticmethod
    def _reply(request: BaseHTTPRequestHandler, code: int, data: dict) -> None:
        body = json.dumps(data).encode("utf-8")
        request.send_response(code)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    def _show(self, request: BaseHTTPRequestHandler) -> None:
        path = request.path.split("?", 1)[0]
        if path in ("/", "/index.html"):
            body, kind = PAGE.encode("utf-8"), "text/html; charset=utf-8"
        elif path == "/state.json":
            body, kind = json.dumps(self.state()).encode("utf-8"), "application/json"
        elif path.startswith("/closeup/") and path.endswith(".jpg"):
            number = path[len("/closeup/"):-len(".jpg")]
            with self._lock:
                jpeg = self._close_ups.get(int(number)) if number.isdigit() else None
            if jpeg is None:
                request.send_error(404, "no such close-up")
                return
            body, kind = jpeg, "image/jpeg"
        elif path in ("/frame.jpg", "/scored.jpg"):
            with self._lock:
                jpeg = self._jpeg if path == "/frame.jpg" else self._scored_jpeg
            if jpeg is None:
                request.send_error(404, "no frame yet" if path == "/frame.jpg" else "no round scored yet")
                return
            body, kind = jpeg, "image/jpeg"
        else:
            request.send_error(404)
            return
        request.send_response(200)
        request.send_header("Content-Type", kind)
        request.send_header("Content-Length", str(len(body)))
        request.send_header("Cache-Control", "no-store")
        request.end_headers()
        request.wfile.write(body)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>knockcam live</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0; background: #222; color: #eee; }
main { display: flex; flex-wrap: wrap; gap: 12px; padding: 12px; }
#camera { flex: 3 1 480px; } .view { position: relative; }
.view img { display: block; width: 100%; border-radius: 6px; background: #000; }
.marks { position: absolute; inset: 0; pointer-events: none; }
.mark { position: absolute; transform: translate(6px, -50%); font-weight: bold; font-size: 0.95em;
        background: rgba(0, 0, 0, 0.7); padding: 0 5px; border-radius: 8px; }
.tokens { columns: 2 14em; margin: 6px 0; padding-left: 0; list-style: none; }
#board { flex: 1 1 260px; }
table { border-collapse: collapse; width: 100%; font-size: 1.3em; }
td, th { padding: 4px 8px; text-align: right; } td:first-child, th:first-child { text-align: left; }
.red { color: #f55; } .yellow { color: #fd3; } .green { color: #5d5; } .blue { color: #6af; }
#question { background: #a60; padding: 8px; border-radius: 6px; font-size: 1.2em; }
#answer, #quick button { margin-top: 6px; }
#answer input { font-size: 1em; width: 10em; } #why { color: #fdd; }
#closeups figure { display: inline-block; margin: 6px 6px 0 0; } #closeups img { width: 180px; border-radius: 4px; }
button { font-size: 1em; }
#messages { color: #bbb; font-size: 0.95em; padding-left: 1.2em; }
h1 { font-size: 1.3em; margin: 0 0 8px 0; }
</style></head>
<body><main>
<section id="camera"><div class="view"><img id="frame" alt="the camera, once the board is found">
<div class="marks" id="marks"></div></div><p id="note"></p><ul class="tokens" id="tokens"></ul></section>
<section id="board">
<h1 id="title">knockcam live</h1>
<div id="question" hidden><span id="asked"></span>
<form id="answer" hidden><input id="reply" autocomplete="off"> <button>Answer</button> <span id="why"></span></form>
<div id="quick"></div><div id="closeups"></div></div>
<table><thead><tr><th>side</th><th>slid</th><th>cash</th><th>if the round ended now</th></tr></thead>
<tbody id="sides"></tbody></table>
<p id="pot"></p><p id="last"></p>
<div id="scored" hidden><div class="view"><img id="scoredframe" alt="the frame the last round was scored on">
<div class="marks" id="scoredmarks"></div></div><ul class="tokens" id="scoredtokens"></ul></div>
<p id="standings"></p>
<p><button id="review" hidden>Review the positions before this round is scored</button></p>
<ul id="messages"></ul>
</section></main>
<script>
let shown = -1, asking = null, scoredShown = null, closeupsShown = null;
function showTokens(marks, onPicture, list) {  // numbered on the picture, listed under it
  onPicture.replaceChildren(); list.replaceChildren();
  for (const m of marks) {
    const span = document.createElement("span"); span.className = "mark " + m.side; span.textContent = m.number;
    span.style.left = (100 * m.x).toFixed(2) + "%"; span.style.top = (100 * m.y).toFixed(2) + "%";
    onPicture.append(span);
    const li = document.createElement("li"); li.className = m.side; list.append(li);
    li.textContent = `${m.number} ${m.side}: ${m.space}` + (m.doubts.length ? ` (${m.doubts.join("; ")})` : "");
  }
}
function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; }
async function refresh() {
  let s;
  try { s = await (await fetch("state.json", {cache: "no-store"})).json(); } catch (e) { return; }
  document.getElementById("title").textContent = s.round === undefined ? "knockcam live" :
    `Round ${s.round} of ${s.rounds}: ${s.phase}` + (s.expected ? ` (next: ${s.expected})` : "");
  const q = s.question;
  document.getElementById("question").hidden = !q;
  document.getElementById("asked").textContent = !q ? "" : (s.answers ? "Waiting for an answer: " :
    "Waiting at the keyboard: ") + q.text + (q.default ? ` [${q.default}]` : "");
  document.getElementById("answer").hidden = !(s.answers && q);
  if ((q ? q.key : null) !== asking) {  // a new question: an empty answer box, its default shown in it
    asking = q ? q.key : null;
    const reply = document.getElementById("reply"); reply.value = ""; reply.placeholder = q && q.default || "";
    document.getElementById("why").textContent = "";
    document.title = q ? "? knockcam live" : "knockcam live";  // a question waits: seen in a tab's title too
    if (q && s.answers && typeof navigator !== "undefined" && navigator.vibrate) navigator.vibrate(200);
  }
  const ups = q ? s.close_ups : [];
  if (`${asking}|${ups}` !== closeupsShown) {  // the tokens the review asks about, magnified from above
    closeupsShown = `${asking}|${ups}`;
    const closeups = document.getElementById("closeups"); closeups.replaceChildren();
    for (const n of ups) {
      const figure = document.createElement("figure"), img = document.createElement("img");
      img.src = `closeup/${n}.jpg?q=${encodeURIComponent(q.key)}`; img.alt = `token ${n}, from above`;
      const caption = document.createElement("figcaption"); caption.textContent = `token ${n}`;
      figure.append(img, caption); closeups.append(figure);
    }
  }
  const quick = document.getElementById("quick"); quick.replaceChildren();
  if (s.answers && q && q.key.includes(":review:")) {  // a close call settled with one tap
    for (const m of s.marks.filter(m => m.rival)) {
      const b = document.createElement("button"); b.className = m.side;
      b.textContent = `${m.number} ${m.side}: not ${m.space}, ${m.rival.name}`;
      b.onclick = async () => { await send(`${m.number} ${m.rival.answer}`); };
      quick.append(b, document.createElement("br"));
    }
  }
  const review = document.getElementById("review");
  review.hidden = !s.answers || s.phase === "over" || s.round === undefined;
  const body = document.getElementById("sides"); body.replaceChildren();
  for (const side of (s.order || [])) {
    const row = body.insertRow();
    cell(row, side, side); cell(row, (s.slid || {})[side] || 0); cell(row, "M" + s.cash[side]);
    const d = s.if_it_ended_now ? s.if_it_ended_now[side] : null;
    cell(row, d === null || d === undefined ? "" : (d >= 0 ? "+" : "") + d);
  }
  document.getElementById("pot").textContent = s.pot === undefined ? "" : `Free Parking pot M${s.pot}`;
  const last = s.last_round;
  document.getElementById("last").textContent = last ? `Round ${last.round} paid: ` +
    last.order.map(x => `${x} ${last.delta[x] >= 0 ? "+" : ""}${last.delta[x]}`).join(", ") : "";
  document.getElementById("standings").textContent = s.standings ? "Final standings: " +
    s.standings.map(x => `${x.place}. ${x.side} M${x.cash}`).join(", ") : "";
  const list = document.getElementById("messages"); list.replaceChildren();
  for (const m of s.messages.slice().reverse()) { const li = document.createElement("li"); li.textContent = m; list.append(li); }
  if (s.frame !== shown) {
    shown = s.frame;
    if (s.frame > 0) document.getElementById("frame").src = "frame.jpg?n=" + s.frame;
    showTokens(s.marks, document.getElementById("marks"), document.getElementById("tokens"));
    document.getElementById("note").textContent = s.note;
  }
  document.getElementById("scored").hidden = !s.scored;
  if (s.scored && s.scored.round !== scoredShown) {
    scoredShown = s.scored.round;
    document.getElementById("scoredframe").src = "scored.jpg?round=" + s.scored.round;
    showTokens(s.scored.marks, document.getElementById("scoredmarks"), document.getElementById("scoredtokens"));
  }
}
async function post(path, data) {
  const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                               body: JSON.stringify(data)});
  return [r.ok, await r.json()];
}
async function send(text) {
  const [ok, reply] = await post("answer", {key: asking, answer: text});
  document.getElementById("why").textContent = ok ? "" : reply.error;
  await refresh();
}
async function answer(event) { event.preventDefault(); await send(document.getElementById("reply").value); }
document.getElementById("answer").onsubmit = answer;
document.getElementById("review").onclick = async () => { await post("review", {}); await refresh(); };
refresh(); setInterval(refresh, 1000);
</script></body></html>
"""
