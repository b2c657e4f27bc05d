"""A live game: the frame loop (motion gate -> still -> detect -> tracker), its log, resume and replay.

Everything the players decide and everything the camera saw at rest is appended to the game log
(and on disk) before the game acts on it; a game is rebuilt by feeding the logged observations and
answers to a fresh tracker, so ``--resume`` after a crash continues exactly where the log ends.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board, load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect import Unreadable, check_photo_light
from knockcam.errors import KnockcamError
from knockcam.files import load_photo
from knockcam.live.frames import Frame, Trouble
from knockcam.live.log import LOG_FORMAT, GameLog, check_new, read_game_log
from knockcam.live.motion import MotionGate
from knockcam.live.prompts import NeedAnswer, ReplayPrompter
from knockcam.live.tracker import Observation, Still, Tracker
from knockcam.rules import Game

if TYPE_CHECKING:
    from knockcam.calibrate.motion import CameraWatch
    from knockcam.rules import RoundResult

Detector = Callable[[Frame], Still]  # one still frame -> the tokens at rest and what covers the board
# the log's lines that are no tracker event (what the game was given, and the camera's trouble): the others are events
NOT_EVENTS = frozenset({"start", "observation", "question", "answer", "request", "calibration", "reference", "camera"})


@dataclass
class RunStats:
    """What one run of the loop did: frames through it, stills detected, time, and latencies (seconds)."""

    frames: int = 0
    observations: int = 0
    wall_s: float = 0.0
    gate_s: float = 0.0  # time in the motion gate alone
    latencies: list[float] = field(default_factory=list)  # board still -> updated score
    latencies_cpu: list[float] = field(default_factory=list)  # the same in this process's CPU seconds
    detect_s: list[float] = field(default_factory=list)
    troubles: list[str] = field(default_factory=list)
    paused_for_camera: bool = False  # the frames ended with the game paused: camera moved, board not found again

    @property
    def fps(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class BoardSearch:
    """The automatic calibration's tries on the frames of a live game: when, how many, the last refusal."""

    retry_s: float  # a refused frame: the next try this many seconds of frames later ...
    give_up_s: float  # ... until this long after the first try
    tries: int = 0
    first_t: float | None = None
    next_t: float = float("-inf")
    last: KnockcamError | None = None  # why the last try was refused

    def at_the_camera(self, board: Board) -> str:
        """What to change at the camera, from the last refusal: focus it when the frame was blurred (as
        ``knockcam calibrate`` says to retake a blurred photo in focus, not closer), move it closer when the
        refused board was small in the frame (choose.small_in_view, saying how little of it the board spanned);
        else ""."""
        from knockcam.calibrate.choose import small_in_view
        from knockcam.calibrate.quality import Blurred, Refused

        if isinstance(self.last, Blurred):
            return "focus the camera and hold it still"
        small = small_in_view(self.last.calibration, board, "frame") if isinstance(self.last, Refused) else None
        return "" if small is None else f"move the camera closer ({small})"

    def gave_up(self, why: str, board: Board) -> str:
        """The one-line error when the board was never found: the last refusal's reason (its advice is for
        knockcam score), light first when that frame was far too dark, what to change at the camera
        (``at_the_camera``: its focus, or closer), and the --max-error that would have accepted its board where
        one is offered."""
        from knockcam.calibrate.choose import offered_max_error
        from knockcam.calibrate.quality import Refused

        last = self.last or KnockcamError("no frame tried")
        offer = offered_max_error(last.calibration) if isinstance(last, Refused) else None
        accept = "" if offer is None else f", or accept the last one with --max-error {offer:g}"
        first = f"{last.what_to_do}, or " if isinstance(last, Unreadable) else ""
        camera = self.at_the_camera(board)
        first += f"{camera}, or " if camera else ""
        return (f"no --calibration given and the board was not found automatically ({why}; the last: "
                f"{last.reason}): {first}give --calibration from 'knockcam calibrate' on a photo from this "
                f"camera{accept}")


@dataclass
class _Loop:
    """The frame loop's state from one frame to the next (``LiveGame.run``)."""

    cfg: dict  # data/live.yaml
    jpeg_quality: int  # of the evidence frames (live.yaml evidence.jpeg_quality)
    factory: Callable[..., Detector]  # (calibration, reference) -> a detector
    frame_checked: bool  # the empty-board frame was looked at for tokens
    calibration_checked: bool  # the given calibration was checked against a still frame (or no longer tried)
    calibration_tries: int = 0  # still frames that could not check it (live.yaml camera.recheck_s, recheck_tries)
    next_check_t: float = 0.0  # ... the next one is tried from this frame time
    stats: RunStats = field(default_factory=RunStats)
    gate: MotionGate | None = None  # made once the board is placed
    detector: Detector | None = None  # made for the current calibration and empty board
    watch: CameraWatch | None = None  # the camera-move check on the empty board
    search: BoardSearch | None = None  # the automatic calibration's tries, when none was given
    paused_for_camera: bool = False
    told_clutter: str = ""  # the last "board not clear" told, not to repeat it
    told_unreadable: str = ""  # the last "cannot read this frame" told
    provisional: RoundResult | None = None  # the tracker's provisional result after the last observation
    source: str = "the frames"  # the camera's or video's name, for messages
    resumed: bool = False  # a resumed game whose board is still to be seen where its log left it ...
    searched: bool = False  # ... and was looked for by its printed lines once, where features matched nothing


def new_log(path: str | Path, *, order, board_path: str | None, tokens_per_side: int, reslide_off_board: str,
            review: str, source: dict, calibration: Calibration | None = None,
            reference: np.ndarray | None = None, fsync: bool = True) -> GameLog:
    """Start a game log (refusing to overwrite one): its 'start' line, and the calibration and reference if given."""
    path = Path(path)
    check_new(path)
    log = GameLog(path, fsync=fsync)
    log.append("start", format=LOG_FORMAT, order=list(order), board=board_path, tokens_per_side=int(tokens_per_side),
               reslide_off_board=reslide_off_board, review=review, source=source)
    if calibration is not None:
        log_calibration(log, calibration, None)
    if reference is not None:
        log_reference(log, reference)
    return log


def log_calibration(log: GameLog, calibration: Calibration, board: Board | None, note: str = "given") -> Path:
    """Save ``calibration`` beside the log and log a line naming it: the game is rebuilt with the last one."""
    name = f"calibration-{log.seq:05d}.yaml"
    path = log.evidence_dir / name
    calibration.save(path, board.size_mm if board is not None else None)
    log.append("calibration", path=str(path.relative_to(log.path.parent)), method=calibration.method, note=note)
    return path


def log_reference(log: GameLog, image: np.ndarray, note: str = "empty board") -> None:
    import cv2

    ok, buf = cv2.imencode(".png", image)
    if not ok:
        raise KnockcamError("cannot encode the reference frame")
    rel = log.save_bytes(f"reference-{log.seq:05d}.png", buf.tobytes())
    log.append("reference", path=rel, note=note)


class LiveGame:
    """A game rebuilt from its log, ready to go on with frames (``run``) or to be reported (``replay``)."""

    def __init__(self, log_path: str | Path, prompter, *, display=None, board: Board | None = None,
                 live: bool = True, fsync: bool = True, model="auto", max_error_mm: float | None = None):
        self.log_path = Path(log_path)
        entries = read_game_log(self.log_path)
        self.display = display
        self.model = model
        self.max_error_mm = max_error_mm  # the automatic calibration's limit (None: calibrate.yaml's)
        self.live_prompter = prompter
        self.log = GameLog(self.log_path, fsync=fsync) if live else None
        self.muted = True
        self.events: list[tuple[str, dict]] = []
        self._replayed: list[tuple[str, dict]] = []  # the events of the log's last observation, replayed muted
        # each scored round: the tracked tokens as scored and the calibration then (knockcam replay --pictures)
        self.scored: dict[int, dict] = {}
        self._still_image: np.ndarray | None = None  # the still frame being observed (live only)
        self._still_positions: tuple = ()
        self._cal_path: Path | None = None  # the last calibration and empty-board frame the log names
        self._ref_path: Path | None = None
        self.calibration: Calibration | None = None
        self.reference: np.ndarray | None = None
        self.last_frame = -1
        self.incomplete: str | None = None
        self._round_started = False
        self._recalibrated = False  # a calibration given when the game was resumed (``use_calibration``)
        self._refine_carried = False  # the empty-board frame, carried into that calibration's view, is to be refined
        self.start = start = entries[0]
        line, e = 1, start  # the line being read back, for the message when it is damaged
        try:
            self.board = board or load_board(start.get("board"))
            self.game = Game(start["order"], self.board, reslide_off_board=start.get("reslide_off_board", "none"),
                             where=str(self.log_path))
            answers = []
            for line, e in enumerate(entries, start=1):
                if e["kind"] == "answer":
                    if not (isinstance(e["key"], str) and isinstance(e["answer"], str)):
                        raise ValueError("a question's key and its answer are text")
                    answers.append((e["key"], e["answer"]))
            line, e = 1, start
            self.replay = ReplayPrompter(answers, prompter if live else None, before_live=self._ask_live,
                                         after_live=self._log_answer)
            self.tracker = Tracker(self.game, self.board, self, tokens_per_side=start.get("tokens_per_side"),
                                   review=start.get("review"), emit=self._emit)
            last = len(entries)  # the line of the log's last observation
            for line, e in enumerate(entries, start=1):
                kind = e["kind"]
                if kind == "observation":
                    last, self._replayed = line, []
                    self.last_frame = max(self.last_frame, int(e.get("frame", -1)))
                    try:
                        self.tracker.observe(Observation.from_dict(e))
                    except NeedAnswer as need:
                        self.incomplete = f"the log ends at an unanswered question ({need.question.key})"
                        break
                elif kind == "request" and e.get("what") == "review":
                    self.tracker.request_review()
                elif kind == "calibration":
                    self._cal_path = self.log_path.parent / e["path"]
                elif kind == "reference":
                    self._ref_path = self.log_path.parent / e["path"]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
            raise KnockcamError(f"{self.log_path}: line {line} ({e.get('kind')}) is damaged: "
                                f"{type(exc).__name__}: {exc}",
                                "knockcam wrote it otherwise: restore the log from a copy, or delete that line and "
                                "the ones after it to go on from before it with --resume") from None
        self.muted = False
        if live and self.incomplete is None:
            self._catch_up(entries[last:])
        if self._cal_path is not None and live:
            self.calibration = Calibration.load(self._cal_path)
        if self._ref_path is not None and live:
            self.reference = load_photo(self._ref_path, "empty-board frame (named in the game log)")

    # -- the prompter the tracker talks to --------------------------------------------------------------
    def ask(self, question) -> str:
        return self.replay.ask(question)

    def tell(self, message: str) -> None:
        if not self.muted and self.live_prompter is not None:
            self.live_prompter.tell(message)
            if self.display is not None:
                self.display.told(message)

    def _ask_live(self, question) -> None:
        """A question the log does not answer: the game goes on live from here, so what follows is shown and
        logged (a game resumed at a question asked at a round's end: that round's scoring)."""
        self.muted = False
        self._log_question(question)

    def _log_question(self, question) -> None:
        if self.log is not None:
            self.log.append("question", key=question.key, text=question.text, default=question.default)
        if self.display is not None:
            self.display.asked(question)
            if ":review:" in question.key and self._still_image is not None:
                self.display.close_ups(self._still_image, self.calibration, self._still_positions,
                                       self.tracker.snapshot())

    def _log_answer(self, question, answer: str) -> None:
        if self.display is not None:
            self.display.asked(None)
        if self.log is not None:
            on = getattr(self.live_prompter, "answered_on", None)  # the keyboard or the game's page
            self.log.append("answer", key=question.key, answer=answer, **({"on": on} if on else {}))

    def _emit(self, kind: str, **data) -> None:
        self.events.append((kind, data))
        if kind == "round_start":
            self._round_started = True
        if kind == "round":
            self.scored[data["round"]] = {"tokens": self.tracker.snapshot()["tokens"], "evidence": data["evidence"],
                                          "calibration": self._cal_path}
        if self.muted:
            self._replayed.append((kind, data))
            return
        self._publish(kind, data)

    def _publish(self, kind: str, data: dict) -> None:
        """An event logged and shown: the round's table and picture, the final standings."""
        if self.log is not None:
            self.log.append(kind, **data)
        if self.display is not None:
            if kind == "round":
                self.display.round_table(data["round"], data["result"])
                if self._still_image is not None:
                    self.display.scored(data["round"], self._still_image, self.calibration, self.tracker.snapshot())
            elif kind == "standings":
                self.display.standings(data["standings"])

    def _catch_up(self, after: list[dict]) -> None:
        """Log and show the events of the log's last observation that the lines after it (``after``) lack: the
        game was killed before writing them, and ``knockcam replay`` would miss them (a round's scoring). Those
        already logged are not logged again; a log that tells them otherwise is left as it is."""
        logged = [e["kind"] for e in after if e["kind"] not in NOT_EVENTS]
        if [kind for kind, _ in self._replayed[:len(logged)]] != logged:
            return
        for kind, data in self._replayed[len(logged):]:
            self._publish(kind, data)
        self._replayed = []

    # -- the frame loop -------------------------------------------------------------------------------
    def run(self, source, *, detector_factory: Callable[..., Detector] | None = None,
            max_frames: int | None = None, crash_after: int | None = None,
            clock: Callable[[], float] = time.perf_counter) -> RunStats:
        """Go on with the game on these frames until it is over or the frames end. Each frame goes through the
        steps below in turn; a step that has the frame wait (no board yet, the board moving, no empty board,
        the camera moved, the frame unreadable) goes on to the next frame."""
        if self.log is None:
            raise KnockcamError("this game was opened for replay only")
        cfg = settings.load("live")
        factory = detector_factory or (lambda cal, ref: _default_detector(self.board, cal, ref, self.model))
        # the empty-board frame is looked at for tokens before the first observation (a game resumed after
        # some has a checked frame, and tokens in play: a clear board is not to be waited for)
        frame_checked = self.last_frame >= 0
        loop = _Loop(cfg=cfg, jpeg_quality=int(cfg["evidence"]["jpeg_quality"]), factory=factory,
                     frame_checked=frame_checked,
                     # a given one (at the start, or when resumed): checked on a still frame
                     calibration_checked=(frame_checked and not self._recalibrated) or self.calibration is None,
                     source=getattr(source, "name", "the frames"),
                     resumed=frame_checked and self.calibration is not None and not self._recalibrated)
        stats = loop.stats
        poll = getattr(self.live_prompter, "poll", None)
        start = clock()
        for item in source:
            if isinstance(item, Trouble):
                self._camera_trouble(item, loop)
                continue
            frame: Frame = item
            if max_frames is not None and stats.frames >= max_frames:
                break
            stats.frames += 1
            if poll is not None and poll():  # a player typed something: a dispute, review before scoring
                self.log.append("request", what="review")
                self.tracker.request_review()
            if not self._board_placed(frame, loop):
                continue
            g0 = clock()
            state = loop.gate.update(frame.image, frame.t)
            stats.gate_s += clock() - g0
            if self.display is not None and self.display.wants_frames:
                self.display.frame(frame.image, self.calibration, self.tracker.snapshot())
            if not state.settled:
                continue
            t_still, cpu_still = clock(), time.process_time()
            fresh_reference = self.reference is None  # the empty board is taken from this game's frames
            if not self._empty_board_ready(frame, loop, fresh_reference) or not self._camera_in_place(frame, loop):
                continue
            d0 = clock()
            still = self._still(frame, loop)
            if still is None:
                continue
            stats.detect_s.append(clock() - d0)
            self._observe(frame, still, state.launched, loop, crash_after)
            stats.latencies.append(clock() - t_still)
            stats.latencies_cpu.append(time.process_time() - cpu_still)
            self._after_observation(frame, still, loop, fresh_reference)
            if self.tracker.phase == "over":
                break
        stats.wall_s = clock() - start
        stats.paused_for_camera = loop.paused_for_camera
        if self.calibration is None and loop.search is not None:
            raise KnockcamError(loop.search.gave_up(f"{loop.search.tries} tries before the frames ended", self.board))
        if loop.resumed and loop.paused_for_camera:  # not one frame showed the board where the game left it
            looked = "the board was not found in them" if loop.searched else "none was light enough to look for it in"
            raise self._not_this_camera(loop.source, f"none of its still frames showed the board where the game left "
                                                     f"it, and {looked}")
        return stats

    def _camera_trouble(self, trouble: Trouble, loop: "_Loop") -> None:
        """The camera gave no frame (a read failed, the stream stalled): logged and told."""
        loop.stats.troubles.append(trouble.kind)
        self.log.append("camera", trouble=trouble.kind, message=trouble.message)
        self.tell(trouble.message)
        if loop.gate is not None:
            loop.gate.prev = None  # the first frame back is not "motion"

    def _board_placed(self, frame: Frame, loop: "_Loop") -> bool:
        """Whether the board's calibration is known (given, or found now in this frame), with a motion gate
        made for it."""
        if self.calibration is None:
            calibration = loop.cfg["calibration"]
            loop.search = loop.search or BoardSearch(float(calibration["retry_s"]), float(calibration["give_up_s"]))
            if not self._look_for_board(frame, loop.search):
                if self.display is not None and self.display.wants_frames:
                    self.display.frame(frame.image, None, self.tracker.snapshot(), "looking for the board")
                return False
        if loop.gate is None:
            if loop.resumed:
                self._check_resumed_size(frame, loop.source)
            loop.gate = self._motion_gate(frame)
        return True

    def _motion_gate(self, frame: Frame) -> MotionGate:
        """A motion gate for the board as calibrated now, at this frame's size."""
        return MotionGate(self.calibration, self.board, (frame.image.shape[1], frame.image.shape[0]))

    def _start_again_here(self, loop: "_Loop", frame: Frame) -> None:
        """After a re-registration (the camera moved or was bumped): a new gate started on this frame, a new
        camera-move check, and a new detector to come, all for the new calibration and empty board."""
        loop.gate = self._motion_gate(frame)
        loop.gate.update(frame.image, frame.t)
        loop.watch = self._watch(self.reference)
        loop.detector = None

    def _empty_board_ready(self, frame: Frame, loop: "_Loop", fresh_reference: bool) -> bool:
        """Whether the empty-board frame is checked (no token on the board: taken from this still frame, or
        given) and the given calibration fits the camera; the still frame becomes the empty board when none
        was given. False while the board is not clear or the frame cannot be read."""
        if not loop.frame_checked:  # the empty-board frame, taken now or given, must show no token on the board
            try:
                clutter = self._tokens_on_board(frame.image if fresh_reference else self.reference)
            except Unreadable as exc:
                if not fresh_reference:
                    raise
                loop.told_unreadable = self._unreadable(exc, frame, loop.told_unreadable)  # a webcam warming up
                loop.gate.detected()
                return False
            if clutter and not fresh_reference:
                raise KnockcamError(f"the empty-board frame is not empty ({clutter}): give one with no token on "
                                    "the board, or start without --reference with the board clear")
            if clutter:
                if clutter != loop.told_clutter:
                    self.log.append("camera", trouble="board not clear", message=clutter, frame=frame.index)
                    self.tell(f"the board is not clear ({clutter}): clear it, the first still frame is taken "
                              "as the empty board")
                    loop.told_clutter = clutter
                loop.gate.detected()
                return False
            loop.frame_checked = True
        if not loop.calibration_checked and frame.t >= loop.next_check_t:  # on a frame that can be read
            self._check_given_calibration(frame, loop)
        if self.reference is None:
            self.reference = frame.image.copy()
            log_reference(self.log, self.reference, "first still frame: the empty board")
            self.tell("Empty-board reference frame taken")
        return True

    def _camera_in_place(self, frame: Frame, loop: "_Loop") -> bool:
        """Whether the camera sees the board where the calibration says (``camera.moved_check``): where the
        board's rim changed, the frame is registered on the empty board; a camera moved is re-registered, and
        one moved beyond finding pauses the game (False) until the board is found again."""
        camera = loop.cfg["camera"]
        if self._refine_carried:
            self._refine_carried_reference(frame)
            loop.watch = None
        if loop.watch is None and camera["moved_check"]:
            loop.watch = self._watch(self.reference)
        if loop.watch is None or not (loop.gate.rim_change(frame.image, self.reference, self.calibration, self.board)
                                      > float(camera["moved_trigger"])):
            loop.resumed = False
            return True  # no check, or the board's rim as on the empty board
        moved = loop.watch.check(frame.image)
        if loop.resumed:
            loop.resumed = self._check_resumed_view(moved, frame, loop)
        if moved.moved and not np.isfinite(moved.shift_mm):
            if not loop.paused_for_camera:
                self.log.append("camera", trouble="moved", message=moved.note)
                self.tell(f"camera moved: {moved.note}; game paused until the board is found again")
            loop.paused_for_camera = True
            loop.gate.detected()
            return False
        if moved.moved:
            self._moved(moved, frame)
            self._start_again_here(loop, frame)
        loop.paused_for_camera = False
        return True

    def _check_resumed_size(self, frame: Frame, source: str) -> None:
        """KnockcamError when a resumed game's frames are not the size its calibration was made for: another
        camera's or video's, whose board every token would be read on at the wrong place."""
        size = (frame.image.shape[1], frame.image.shape[0])
        if tuple(int(v) for v in self.calibration.image_size) != size:
            w, h = self.calibration.image_size
            raise self._not_this_camera(source, f"its frames are {size[0]}x{size[1]}, the game was calibrated on "
                                                f"{w}x{h} ones")

    def _check_resumed_view(self, moved, frame: Frame, loop: "_Loop") -> bool:
        """KnockcamError when a resumed game's camera shows the board far further from where its log left it than
        a bumped camera moves it (live.yaml ``camera.resumed_move_mm``): another game's video or camera, not to be
        taken for a camera move. Returns whether that is still to be seen (features matched nothing, and the board
        was not found by its printed lines, looked for once: the game waits for it, as after a camera move)."""
        shift = float(moved.shift_mm)
        if not np.isfinite(shift):
            if loop.searched or not self._readable(frame):
                return True
            loop.searched = True
            shift = self._board_found_from_log(frame)
            if shift is None:
                return True
        if shift > float(loop.cfg["camera"]["resumed_move_mm"]):
            raise self._not_this_camera(loop.source, f"it shows the board {shift:.0f} mm from where the game was "
                                                     "calibrated, far more than a bumped camera moves")
        return False

    def _board_found_from_log(self, frame: Frame) -> float | None:
        """How far (mm at the board's corners) the board found automatically in this frame is from where the
        calibration has it; None where it is not found (a covered board, a small camera's frame)."""
        from knockcam.calibrate.choose import calibrate_automatically
        from knockcam.calibrate.quality import corner_errors_mm

        try:
            found = calibrate_automatically(frame.image, self.board, max_error_mm=self.max_error_mm)
        except KnockcamError:
            return None
        return float(corner_errors_mm(found, self.calibration, self.board).max())

    def _readable(self, frame: Frame) -> bool:
        """Whether the frame's light lets the board be looked for (a webcam warming up gives dark frames)."""
        try:
            check_photo_light(frame.image, "the frame")
        except Unreadable:
            return False
        return True

    def _not_this_camera(self, source: str, why: str) -> KnockcamError:
        """The one-line refusal of frames that are not a resumed game's camera or video: what, and what to do."""
        return KnockcamError(f"{source} does not show the game in {self.log_path} ({why})",
                             "give that game's own video, or its camera where it was when the game stopped, or start "
                             "a new game without --resume")

    def _still(self, frame: Frame, loop: "_Loop") -> Still | None:
        """The tokens at rest in this still frame, or None when it cannot be read (the light went out, the
        camera switched to its night mode: told once, the game waits). Implausibly many tokens after a bump of
        the camera: re-registered and detected again."""
        if loop.detector is None:
            loop.detector = loop.factory(self.calibration, self.reference)
        try:
            still = loop.detector(frame)
        except Unreadable as exc:
            loop.told_unreadable = self._unreadable(exc, frame, loop.told_unreadable)
            loop.gate.detected()
            return None
        loop.told_unreadable = ""
        if self._implausible(still.seen) and self._bumped(frame, float(loop.cfg["camera"]["bump_px"])):
            self._start_again_here(loop, frame)  # a bump: re-registered, detect again
            loop.detector = loop.factory(self.calibration, self.reference)
            still = loop.detector(frame)
        return still

    def _observe(self, frame: Frame, still: Still, launched: bool, loop: "_Loop", crash_after: int | None) -> None:
        """The still frame's tokens logged (fsynced) before the game acts on them, then given to the tracker."""
        evidence = self.log.frame_name(f"frame-{frame.index:06d}.jpg")
        obs = Observation(seen=still.seen, frame=frame.index, t=frame.t, launched=launched, evidence=evidence,
                          covered=still.covered)
        self.log.append("observation", **obs.to_dict())
        loop.stats.observations += 1
        if crash_after is not None and loop.stats.observations >= crash_after:
            os._exit(137)  # a simulated kill: nothing after the fsynced log line survives
        self._round_started = False
        self._still_image = frame.image  # what a round scored on this observation is shown with ...
        self._still_positions = still.positions  # ... and the calls made on it (the review's close-ups)
        self.tracker.observe(obs)
        loop.gate.detected()
        loop.provisional = self.tracker.provisional()

    def _after_observation(self, frame: Frame, still: Still, loop: "_Loop", fresh_reference: bool) -> None:
        """The frame saved as evidence (after the score), the empty board refreshed when a round starts on a
        clear board, and the display updated."""
        self.log.save_frame(f"frame-{frame.index:06d}.jpg", frame.image, loop.jpeg_quality)
        self.last_frame = frame.index
        if self._round_started and not still.seen and not fresh_reference:
            self.reference = frame.image.copy()  # the board is clear: refresh the reference (light drifts)
            log_reference(self.log, self.reference, f"round {self.tracker.round} start: the empty board")
            loop.watch = None
            loop.detector = None
        if self.display is not None:
            self.display.status(self.tracker.snapshot(), loop.provisional)

    def _tokens_on_board(self, image: np.ndarray) -> str:
        """Where the learned model sees tokens on the board in ``image`` ("" where none, or with no model):
        in the empty-board frame, the reference-frame detector would never see them."""
        from knockcam.assign import assign, places
        from knockcam.detect import tokens_in_empty_frame

        return places(assign(tokens_in_empty_frame(image, self.calibration, self.board, self.model), self.board))

    def _unreadable(self, exc: KnockcamError, frame: Frame, told: str) -> str:
        """A still frame that cannot be read: said (and logged as camera trouble) once until it changes;
        the game waits for one in better light. Returns what was told."""
        if exc.reason != told:
            self.log.append("camera", trouble="unreadable", message=exc.reason, frame=frame.index)
            self.tell(f"{exc.reason}: waiting for a frame in better light")
        return exc.reason

    def use_calibration(self, calibration: Calibration, note: str) -> None:
        """Go on with ``calibration`` (given when the game is resumed: the camera was calibrated again), logged
        so that the game is rebuilt with it, and checked on the next still frame. The log's empty-board frame is
        carried into its view at once (logged too: a game stopped again before a still frame resumes with the
        two in one view) and refined on that frame. Left in the old view, the camera-move check took the new
        calibration's move for a move of its own and applied it again (a camera moved 30 px while the game was
        stopped: the board then read 43 mm from where it lies)."""
        from knockcam.calibrate.motion import carried

        if self.reference is not None and self.calibration is not None:  # the empty board is in the old one's view
            g = calibration.homography @ np.linalg.inv(self.calibration.homography)
            self.reference = carried(self.reference, g / g[2, 2], tuple(int(v) for v in calibration.image_size))
            log_reference(self.log, self.reference, "carried into the view of the calibration given at --resume")
            self._refine_carried = True
        self._cal_path = log_calibration(self.log, calibration, self.board, note)
        self.calibration = calibration
        self._recalibrated = True

    def _refine_carried_reference(self, frame: Frame) -> None:
        """The empty-board frame carried at resume (``use_calibration``) brought onto this still frame to the
        sub-pixel (knockcam.calibrate.motion.refine_shift), as after a camera move: the reference-frame detector
        compares the two pixel by pixel, and two calibrations of one view differ by a pixel or so."""
        from knockcam.calibrate.motion import carried, refine_shift

        h, w = frame.image.shape[:2]
        g = refine_shift(self.reference, frame.image, np.eye(3))
        if np.abs(g - np.eye(3)).max() > 1e-9:
            self.reference = carried(self.reference, g, (w, h))
            log_reference(self.log, self.reference, "carried at --resume, refined on the first still frame")
        self._refine_carried = False

    def _check_given_calibration(self, frame: Frame, loop: "_Loop") -> None:
        """KnockcamError when the given calibration does not fit the camera's still frame: made before the camera
        moved, it would put every token elsewhere for the whole game (knockcam.calibrate.choose). A frame that
        cannot check it (too blurred, too dark, the board covered: a webcam's first frames often are) is said so
        once, the calibration is used as given, and later still frames try again (live.yaml camera.recheck_s,
        recheck_tries); one that checks it after that says so."""
        from knockcam.calibrate.choose import check_file_fits

        again = f"'knockcam live --resume {self.log_path} --calibration NEW.yaml'"
        photo = "the first still frame" if loop.calibration_tries == 0 else f"still frame {frame.index}"
        try:
            checked = check_file_fits(frame.image, self.calibration, self.board, "the given calibration",
                                      self.max_error_mm, photo=photo)
        except KnockcamError as exc:
            self.log.append("camera", trouble="calibration does not fit", message=exc.reason, frame=frame.index)
            raise KnockcamError(exc.reason, f"make one from where the camera is now (knockcam calibrate) and go on "
                                            f"with {again}") from None
        camera = loop.cfg["camera"]
        if not checked.unchecked:
            loop.calibration_checked = True
            if loop.calibration_tries:
                message = f"{photo} fits it (after {loop.calibration_tries} still frame(s) that could not check it)"
                self.log.append("camera", trouble="calibration checked", message=message, frame=frame.index)
                self.tell(f"calibration checked: {message}")
            return
        loop.calibration_tries += 1
        loop.next_check_t = frame.t + float(camera["recheck_s"])
        loop.calibration_checked = loop.calibration_tries > int(camera["recheck_tries"])
        if loop.calibration_tries == 1:
            self.log.append("camera", trouble="calibration not checked", message=checked.unchecked, frame=frame.index)
            self.tell(f"calibration used as given, not checked: {checked.unchecked} (tried again on later still "
                      f"frames); if the camera moved since it was made, every token is read elsewhere: make one "
                      f"from where the camera is now (knockcam calibrate) and go on with {again}")

    def _look_for_board(self, frame: Frame, search: BoardSearch) -> bool:
        """No calibration given: find the board automatically in this frame, if it is time for another try.

        A refusal is told once and tried again on later frames (a webcam's first frames are often dark or
        out of focus; an arm may be over the board), until ``search.give_up_s`` of frames have passed.
        """
        from knockcam.calibrate.choose import calibrate_automatically
        from knockcam.calibrate.mirror import Mirrored

        if frame.t < search.next_t:
            return False
        search.tries += 1
        if search.first_t is None:
            search.first_t = frame.t
        try:
            check_photo_light(frame.image, "the frame")
            cal = calibrate_automatically(frame.image, self.board, max_error_mm=self.max_error_mm)
        except Mirrored as exc:  # the camera mirrors every frame: looking again does not help
            self.log.append("camera", trouble="mirrored", message=str(exc), frame=frame.index)
            raise KnockcamError(exc.reason, "turn off the camera's mirroring and start again") from None
        except KnockcamError as exc:
            search.last = exc
            if search.tries == 1:
                self.log.append("camera", trouble="board not found", message=str(exc), frame=frame.index)
                camera = search.at_the_camera(self.board)
                camera += ", " if camera else ""
                self.tell(f"first frame: {exc.reason}; looking for the board again every "
                          f"{search.retry_s:g} s for {search.give_up_s:g} s: {camera}clear the board, light it and "
                          "let the camera settle")
            if frame.t - search.first_t >= search.give_up_s:
                raise KnockcamError(search.gave_up(f"{search.tries} tries over {search.give_up_s:g} s of frames",
                                                   self.board)) from None
            search.next_t = frame.t + search.retry_s
            return False
        where = "first frame" if search.tries == 1 else f"frame {frame.index}, try {search.tries}"
        log_calibration(self.log, cal, self.board, f"automatic, {where}")
        self.tell(f"calibrated automatically on the {where} (error {cal.error_mm or 0:.1f} mm)")
        self.calibration = cal
        return True

    def _watch(self, reference: np.ndarray):
        from knockcam.calibrate.motion import CameraWatch

        return CameraWatch(reference, self.calibration, self.board)

    def _moved(self, moved, frame: Frame) -> None:
        """Re-register after a camera move found by features (knockcam.calibrate.motion), refined to sub-pixel."""
        from knockcam.calibrate.motion import refine_shift

        g = moved.calibration.homography @ np.linalg.inv(self.calibration.homography)
        g = refine_shift(self.reference, frame.image, g / g[2, 2])
        self._reregister(g, frame, moved.note, float(moved.shift_mm), moved.calibration)

    def _reregister(self, g: np.ndarray, frame: Frame, note: str, shift_mm: float, base: Calibration | None = None) -> None:
        """The new calibration (``g`` after the old one) and the reference frame carried into the new view."""
        from knockcam.calibrate.motion import carried

        h, w = frame.image.shape[:2]
        warped = carried(self.reference, g, (w, h))
        base = base or self.calibration
        method = base.method if base.method.endswith("+tracked") else base.method + "+tracked"
        self.calibration = self.calibration.moved(g, method=method)
        log_calibration(self.log, self.calibration, self.board, note)
        self.reference = warped
        log_reference(self.log, warped, "carried over after the camera moved")
        self.log.append("camera", trouble="moved", message=note, shift_mm=round(shift_mm, 2))
        self.tell(note)

    def _implausible(self, seen) -> bool:
        """More tokens on the board than the game can explain (those followed plus one slide): phantoms of a
        camera bumped by a pixel, which the reference-frame detector sees at every printed edge."""
        on_board = sum(1 for s in seen if s.state != "off_board")
        known = sum(1 for t in self.tracker.tokens if t.state == "board" or t.parked)
        if self.tracker.phase == "over":
            return False
        return on_board > known + 1

    def _bumped(self, frame: Frame, min_px: float) -> bool:
        """Sub-pixel registration of this frame on the reference (ECC); re-register if it moved ``min_px``."""
        from knockcam.calibrate.motion import refine_shift
        from knockcam.calibrate.quality import board_corners_mm

        g = refine_shift(self.reference, frame.image, np.eye(3))
        corners = self.calibration.corners_px(self.board.size_mm)
        moved = cv2_transform(corners, g)
        shift_px = float(np.abs(moved - corners).max())
        if shift_px < min_px:
            return False
        shift_mm = float(np.linalg.norm(self.calibration.px_to_mm(moved) - board_corners_mm(self.board), axis=1).max())
        self._reregister(g, frame, f"camera bumped {shift_px:.1f} px ({shift_mm:.1f} mm at the board corners): "
                                   "re-registered", shift_mm)
        return True


def cv2_transform(points: np.ndarray, h: np.ndarray) -> np.ndarray:
    import cv2

    return cv2.perspectiveTransform(np.asarray(points, np.float64).reshape(-1, 1, 2), h).reshape(-1, 2)


def _default_detector(board: Board, calibration: Calibration, reference, model) -> Detector:
    from knockcam.live.vision import StillDetector

    return StillDetector(board, calibration, reference, model)


def replay(log_path: str | Path) -> LiveGame:
    """Rebuild a game from its log alone (no camera, no questions): for ``knockcam replay``."""
    return LiveGame(log_path, None, live=False)
