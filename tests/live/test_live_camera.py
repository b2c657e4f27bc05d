"""Camera trouble: frames from files and lists, a disconnected or frozen camera pausing the game,
and a camera moved in the middle of a game being re-registered."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from knockcam.errors import KnockcamError
from knockcam.live.compose import DEMO_ANSWERS, DEMO_ORDER, DEMO_TOKENS, demo_expected
from knockcam.live.frames import BACK, FROZEN, LOST, RESIZED, CaptureSource, Frame, ListCapture, Trouble, list_source, \
    video_source
from knockcam.live.log import read_log
from knockcam.live.prompts import ScriptedPrompter
from knockcam.live.session import LiveGame, new_log
from knockcam.live.tracker import Still


class FakeClock:
    def __init__(self, step=0.1):
        self.now = 0.0
        self.step = step

    def __call__(self):
        self.now += self.step
        return self.now

    def sleep(self, s):
        self.now += s


def _img(v):
    return np.full((24, 32, 3), v, np.uint8)


def _drain(source):
    items = []
    try:
        for item in source:
            items.append(item)
    except KnockcamError as exc:
        items.append(str(exc))
    return items


def test_video_file_frames_have_times_and_resume_at_a_frame(demo_files):
    src = video_source(str(demo_files["video"]))
    frames = [f for f in src]
    assert len(frames) > 200 and all(isinstance(f, Frame) for f in frames)
    assert frames[30].index == 30 and frames[30].t == pytest.approx(1.0)
    later = video_source(str(demo_files["video"]), start_index=100)
    first = next(iter(later))
    assert first.index == 100
    assert cv2.absdiff(first.image, frames[100].image).max() <= 2


def test_missing_video_is_a_clear_error(tmp_path):
    with pytest.raises(KnockcamError, match="video file not found"):
        video_source(str(tmp_path / "nope.avi"))


@pytest.mark.parametrize("name", ["game.mp4", "photo.jpg"])
def test_a_file_that_is_no_video_is_a_clear_error_not_an_empty_game(tmp_path, name):
    """OpenCV opens some such files (a .jpg as a one-image sequence) and then reads no frame: once that made
    a game of 0 frames (exit code 3)."""
    fake = tmp_path / name
    fake.write_text("not a video", encoding="utf-8")
    with pytest.raises(KnockcamError, match="cannot read video .*no frame of it decodes"):
        video_source(str(fake))


class FakeWebcam:
    """cv2.VideoCapture as a webcam that gives the nearest of the sizes it has to the one asked (640x480 at first)."""

    def __init__(self, sizes):
        self.sizes, self.size, self.asked = sizes, (640, 480), [None, None]

    def __call__(self, index):
        return self

    def isOpened(self):
        return True

    def set(self, prop, value):
        if prop in (cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT):
            self.asked[prop == cv2.CAP_PROP_FRAME_HEIGHT] = value
            if None not in self.asked:
                self.size = min(self.sizes, key=lambda s: abs(s[0] - self.asked[0]) + abs(s[1] - self.asked[1]))
        return True

    def get(self, prop):
        return {cv2.CAP_PROP_FRAME_WIDTH: self.size[0], cv2.CAP_PROP_FRAME_HEIGHT: self.size[1]}.get(prop, 0.0)

    def release(self):
        pass


@pytest.mark.parametrize("sizes, gives, told", [([(640, 480), (1280, 720), (1920, 1080)], (1280, 720), False),
                                                ([(640, 480), (800, 600)], (800, 600), True)])
def test_a_webcam_is_asked_for_the_size_calibration_is_tuned_at_and_a_smaller_one_is_told(monkeypatch, sizes, gives,
                                                                                          told):
    """OpenCV opens most webcams at 640x480, where the automatic calibration finds the board far less often
    (data/calibrate.yaml photo.max_px): live.yaml camera.frame_size is asked for, and smaller frames are told."""
    from knockcam.live.frames import camera_source, size_note

    monkeypatch.setattr(cv2, "VideoCapture", FakeWebcam(sizes))
    source = camera_source(0)
    assert source.frame_size() == gives
    note = size_note(source.name, source.frame_size())
    assert (note is not None) is told
    if told:
        assert note.startswith("camera 0 gives 800x600 frames, smaller than the 1280 px across the automatic "
                               "calibration is tuned for") and note.endswith("or give --calibration")
    assert size_note("camera 0", None) is None and CaptureSource(lambda: ListCapture([]), live=False).frame_size() is None


def test_a_negative_camera_number_is_refused_before_opencv_opens_it(monkeypatch):
    from knockcam.live.frames import camera_source

    monkeypatch.setattr(cv2, "VideoCapture", lambda index: pytest.fail("a negative device was opened"))
    with pytest.raises(KnockcamError, match="cameras are numbered from 0"):
        camera_source(-1)


def test_a_disconnected_camera_pauses_and_resumes_when_frames_return():
    clock = FakeClock()
    cap = ListCapture([_img(1), _img(2)] + [None] * 7 + [_img(3), _img(4)])
    src = CaptureSource(lambda: cap, live=True, clock=clock, sleep=clock.sleep, max_wait_s=5.0)
    items = _drain(src)
    kinds = [i.kind if isinstance(i, Trouble) else ("frame" if isinstance(i, Frame) else "error") for i in items]
    assert kinds[:6] == ["frame", "frame", LOST, BACK, "frame", "frame"]
    assert "disconnected" in items[2].message
    assert kinds[-2:] == [LOST, "error"]  # the list ends: lost again, and nothing comes back


def test_a_frozen_camera_pauses_until_the_picture_moves():
    clock = FakeClock(step=0.5)
    cap = ListCapture([_img(5)] * 10 + [_img(6), _img(7)])
    src = CaptureSource(lambda: cap, live=True, clock=clock, sleep=clock.sleep, max_wait_s=5.0)
    items = _drain(src)
    kinds = [i.kind if isinstance(i, Trouble) else ("frame" if isinstance(i, Frame) else "error") for i in items]
    assert FROZEN in kinds and BACK in kinds
    frozen_at = kinds.index(FROZEN)
    assert kinds[frozen_at + 1] == BACK  # no frame reaches the game while the picture is frozen
    assert "frozen" in items[frozen_at].message


def test_frames_of_another_size_are_not_read_until_the_first_size_returns():
    turned = np.zeros((32, 24, 3), np.uint8)  # the 24x32 picture of _img, upright
    items = list(list_source([_img(1), _img(2), turned, turned, _img(3)]))
    kinds = [i.kind if isinstance(i, Trouble) else "frame" for i in items]
    assert kinds == ["frame", "frame", RESIZED, BACK, "frame"]
    assert items[2].message == ("frame list's picture changed size, 32x24 -> 24x32: game paused; turn the camera back "
                                "as it was, or set its app to the size it had (it resumes by itself)")
    assert items[3].message == "frame list's picture back at 32x24: game resumed"
    assert [i.index for i in items if isinstance(i, Frame)] == [0, 1, 4]


def test_a_phone_turned_for_a_while_in_the_middle_of_a_game_pauses_it_and_changes_nothing(demo, board, tmp_path):
    """Once, frames of another size reached the game and stopped it with OpenCV's traceback (the camera-move check)."""
    cut = demo.marks[4] - 3  # in the middle of round 1
    turned = [cv2.rotate(f, cv2.ROTATE_90_CLOCKWISE) for f in demo.frames[cut:cut + 30]]
    log = tmp_path / "turned.jsonl"
    new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=demo.calibration, reference=demo.empty,
            fsync=False).close()
    live = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None)
    stats = live.run(list_source(demo.frames[:cut] + turned + demo.frames[cut:], demo.fps))
    assert stats.troubles == [RESIZED, BACK]
    assert [s.to_dict() for s in live.game.standings()] == [s.to_dict() for s in demo_expected(board).standings()]


def test_a_file_source_is_never_frozen():
    src = list_source([_img(5)] * 200)
    assert all(isinstance(i, Frame) for i in src)


@pytest.mark.parametrize("step,dx,dy,how", [
    (8, 9, 5, "moved"),  # moved a lot while the board is cleared between rounds: found by features
    (4, 1, 1, "bumped"),  # bumped a pixel in the middle of round 1 (else phantom tokens at printed edges)
])
def test_a_camera_moved_during_the_game_is_re_registered(demo, board, tmp_path, step, dx, dy, how):
    cut = demo.marks[step] - 3
    shift = np.float32([[1, 0, dx], [0, 1, dy]])
    h, w = demo.frames[0].shape[:2]
    frames = demo.frames[:cut] + [cv2.warpAffine(f, shift, (w, h), borderMode=cv2.BORDER_REPLICATE)
                                  for f in demo.frames[cut:]]
    log = tmp_path / "moved.jsonl"
    new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=demo.calibration, reference=demo.empty,
            fsync=False).close()
    live = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None)
    live.run(list_source(frames, demo.fps))
    entries = read_log(log)
    moved = [e for e in entries if e["kind"] == "camera" and e["trouble"] == "moved"]
    # found by the rim check and features (moved) or, below their reach, by ECC when phantoms appear (bumped)
    assert len(moved) == 1 and "re-registered" in moved[0]["message"]
    assert [e["kind"] for e in entries].count("calibration") == 2
    centre = np.array([[200.0, 450.0]])
    assert np.linalg.norm(live.calibration.mm_to_px(centre) - demo.calibration.mm_to_px(centre) - [dx, dy]) < 0.3
    assert [s.to_dict() for s in live.game.standings()] == [s.to_dict() for s in demo_expected(board).standings()]


def test_camera_trouble_is_logged_and_told(demo, board, tmp_path):
    log = tmp_path / "trouble.jsonl"
    new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=demo.calibration, reference=demo.empty,
            fsync=False).close()
    prompter = ScriptedPrompter(dict(DEMO_ANSWERS))
    live = LiveGame(log, prompter, fsync=False, model=None)
    clock = FakeClock(step=1 / 30)
    cap = ListCapture(demo.frames[:40] + [None] * 6 + demo.frames[40:80])
    src = CaptureSource(lambda: cap, live=True, clock=clock, sleep=clock.sleep, max_wait_s=5.0)
    with pytest.raises(KnockcamError, match="resume later"):
        live.run(src, detector_factory=lambda cal, ref: (lambda frame: Still(())))
    troubles = [e["trouble"] for e in read_log(log) if e["kind"] == "camera"
                and e["trouble"] != "calibration not checked"]  # the demo's small frames cannot check it
    assert troubles[:2] == [LOST, BACK]
    assert any("disconnected" in m for m in prompter.told)


def test_sub_pixel_registration_finds_a_camera_bump(demo):
    from knockcam.calibrate.motion import refine_shift

    h, w = demo.empty.shape[:2]
    shift = np.float32([[1, 0, 0.7], [0, 1, -0.4]])
    bumped = cv2.warpAffine(demo.frames[demo.marks[5] + 5], shift, (w, h), borderMode=cv2.BORDER_REPLICATE)
    g = refine_shift(demo.empty, bumped, np.eye(3))
    assert g[0, 2] == pytest.approx(0.7, abs=0.1) and g[1, 2] == pytest.approx(-0.4, abs=0.1)
    assert np.abs(refine_shift(demo.empty, demo.frames[demo.marks[0] + 5], np.eye(3)) - np.eye(3)).max() < 0.05


@pytest.fixture(scope="module")
def empty_720p(board):
    """An empty board at 1280x720, the size the automatic calibration is benchmarked at, and its true calibration."""
    from knockcam.live.compose import Composer

    composer = Composer(board, seed=5, size=(1280, 720))
    return composer.empty, composer.spec.calibration(board)


def _warming_up(image, frames):
    """A webcam's first frames: black until its sensor starts (a few gray levels of noise)."""
    rng = np.random.default_rng(0)
    return [rng.integers(0, 4, image.shape, dtype=np.uint8) for _ in range(frames)]


def _search_game(tmp_path):
    log = tmp_path / "search.jsonl"
    new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, fsync=False).close()
    prompter = ScriptedPrompter(dict(DEMO_ANSWERS))
    return log, prompter, LiveGame(log, prompter, fsync=False, model=None)


def test_no_calibration_looks_for_the_board_again_until_it_is_found(empty_720p, board, tmp_path):
    from knockcam.calibrate.quality import corner_errors_mm

    empty, truth = empty_720p
    log, prompter, live = _search_game(tmp_path)
    # 45 dark frames (1.5 s at 30 fps): tries at 0 s and 1 s are refused, the one at 2 s finds the board
    frames = _warming_up(empty, 45) + [empty] * 30
    live.run(list_source(frames, 30.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))
    entries = read_log(log)
    refused = [e for e in entries if e["kind"] == "camera"]
    assert [(e["trouble"], e["frame"]) for e in refused] == [("board not found", 0)]
    assert any(t.startswith("first frame: the board is far too dark in the frame (its brightest parts at 3 of 255); "
                            "looking for the board again") for t in prompter.told)
    calibrations = [e for e in entries if e["kind"] == "calibration"]
    assert len(calibrations) == 1 and "frame 60, try 3" in calibrations[0]["note"]
    assert float(corner_errors_mm(live.calibration, truth, board).max()) < 3.0
    assert [e for e in entries if e["kind"] == "reference"]  # the game went on: the empty board was taken


def test_no_calibration_gives_up_with_what_to_do(empty_720p, tmp_path, monkeypatch):
    from knockcam import settings

    empty, _ = empty_720p
    monkeypatch.setitem(settings.load("live")["calibration"], "give_up_s", 2.0)
    _, _, live = _search_game(tmp_path)
    with pytest.raises(KnockcamError, match=r"not found automatically \(3 tries over 2 s of frames; the last: the "
                                            r"board is far too dark in the frame .*\): light the board, or let the "
                                            r"camera expose longer, and take it again, or give --calibration"):
        live.run(list_source(_warming_up(empty, 90), 30.0))
    _, _, live = _search_game(tmp_path / "short")
    with pytest.raises(KnockcamError, match=r"2 tries before the frames ended"):
        live.run(list_source(_warming_up(empty, 40), 30.0))


def test_a_board_small_in_the_frame_is_told_to_bring_the_camera_closer(empty_720p, tmp_path, monkeypatch):
    """A refused board whose end further from the camera spans under calibrate.yaml quality.small_end_share of
    the frame: the first refusal and the last word both say to move the camera closer, with how much of the
    frame the board spans (knockcam.calibrate.choose.small_in_view)."""
    from knockcam import settings
    from knockcam.calibrate import choose
    from knockcam.calibrate.calibration import Calibration
    from knockcam.calibrate.quality import Refused

    empty, _ = empty_720p
    s = 0.25  # px per mm: the board's ends 100 px across in the 1280x720 frame
    small = Calibration("auto", (1280, 720), np.array([[s, 0, 640 - 200 * s], [0, -s, 360 + 457.5 * s], [0, 0, 1.0]]),
                        error_mm=8.0)

    def refused(*args, **kwargs):
        raise Refused("calibration error 8.0 mm is over the 3 mm limit (auto)", "give --corners", small)

    monkeypatch.setattr(choose, "calibrate_automatically", refused)
    monkeypatch.setitem(settings.load("live")["calibration"], "give_up_s", 2.0)
    _, prompter, live = _search_game(tmp_path)
    closer = "move the camera closer (its end further from the camera spans 8% of the frame's longer side; 20% or " \
             "more is best)"
    with pytest.raises(KnockcamError) as err:
        live.run(list_source([empty] * 90, 30.0))
    assert f"(auto)): {closer}, or give --calibration from 'knockcam calibrate'" in str(err.value)
    assert any(t.startswith("first frame: calibration error 8.0 mm") and f"2 s: {closer}, clear the board" in t
               for t in prompter.told)


def test_a_blurred_frame_is_told_to_focus_the_camera_not_to_bring_it_closer(empty_720p, tmp_path, monkeypatch):
    """A board refused as blurred (``Blurred``: its printed lines wider than a sharp frame's) is told to focus the
    camera, at the first refusal and in the last word, and not to move it closer although it is small in the
    frame too: ``knockcam calibrate`` tells a blurred photo to be retaken in focus, not closer."""
    from knockcam import settings
    from knockcam.calibrate import choose
    from knockcam.calibrate.calibration import Calibration
    from knockcam.calibrate.quality import Blurred

    empty, _ = empty_720p
    s = 0.25  # px per mm: small in the frame, as in the test above
    small = Calibration("auto", (1280, 720), np.array([[s, 0, 640 - 200 * s], [0, -s, 360 + 457.5 * s], [0, 0, 1.0]]),
                        error_mm=8.0)

    def refused(*args, **kwargs):
        raise Blurred("calibration error 8.0 mm is over the 3 mm limit (auto): the photo is blurred (its printed "
                      "lines are 9 px wide; sharp photos show at most 5 px)", "retake it in focus", small)

    monkeypatch.setattr(choose, "calibrate_automatically", refused)
    monkeypatch.setitem(settings.load("live")["calibration"], "give_up_s", 2.0)
    _, prompter, live = _search_game(tmp_path)
    with pytest.raises(KnockcamError) as err:
        live.run(list_source([empty] * 90, 30.0))
    assert "at most 5 px)): focus the camera and hold it still, or give --calibration" in str(err.value)
    first = [t for t in prompter.told if t.startswith("first frame: calibration error 8.0 mm")]
    assert len(first) == 1 and "2 s: focus the camera and hold it still, clear the board" in first[0]
    assert "closer" not in str(err.value) and "closer" not in first[0]


def _given_game(tmp_path, calibration, model=None):
    log = tmp_path / "given.jsonl"
    new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=calibration, fsync=False).close()
    return log, LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=model)


def test_a_webcam_warming_up_is_waited_for_not_taken_as_the_empty_board(empty_720p, tmp_path):
    """Its first frames are black and still: the empty board is the first still frame that can be read."""
    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth)
    live.run(list_source(_warming_up(empty, 45) + [empty] * 60, 30.0),
             detector_factory=lambda cal, ref: (lambda frame: Still(())))
    assert cv2.absdiff(live.reference, empty).max() == 0
    trouble = [e for e in read_log(log) if e["kind"] == "camera"]
    assert [e["trouble"] for e in trouble] == ["unreadable"] and "far too dark" in trouble[0]["message"]


def test_a_still_frame_that_cannot_be_read_mid_game_pauses_it(empty_720p, tmp_path):
    """The light dims after the empty board was taken, and the detector finds the frames unreadable (a
    board far too dark, or no colour: knockcam.detect.Unreadable): told once, and the game goes on when
    the light is back. (Darkness itself shows as the view blocked, and pauses the game too.)"""
    from knockcam.detect import Unreadable

    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth)
    dim = (empty * 0.5).astype(np.uint8)

    def detector(frame):
        if frame.image.mean() < 0.75 * empty.mean():
            raise Unreadable("the board is far too dark in the photo (its brightest parts at 12 of 255)", "light it")
        return Still(())

    stats = live.run(list_source([empty] * 40 + [dim] * 40 + [empty] * 40, 30.0),
                     detector_factory=lambda cal, ref: detector)
    trouble = [e for e in read_log(log) if e["kind"] == "camera"]
    assert [e["trouble"] for e in trouble] == ["unreadable"] and 40 <= trouble[0]["frame"] < 80
    observed = [e["frame"] for e in read_log(log) if e["kind"] == "observation"]
    assert stats.observations >= 2 and min(observed) < 40 and max(observed) >= 80


def test_a_mirrored_camera_stops_at_once_with_what_to_do(empty_720p, tmp_path):
    """Every frame of a mirrored webcam is mirrored: the live mode says so on the first, not after its search."""
    empty, _ = empty_720p
    log, _, live = _search_game(tmp_path)
    with pytest.raises(KnockcamError, match=r"mirrored .*: turn off the camera's mirroring and start again$"):
        live.run(list_source([cv2.flip(empty, 1)] * 60, 30.0))
    trouble = [e for e in read_log(log) if e["kind"] == "camera"]
    assert [(e["trouble"], e["frame"]) for e in trouble] == [("mirrored", 0)]


def test_a_given_calibration_from_before_the_camera_moved_stops_a_new_game(empty_720p, tmp_path):
    """Made 12 px off (the webcam moved since): every token would be read over a centimetre away all game."""
    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth.with_error(0.5, "test").moved(np.array([[1.0, 0, 12], [0, 1, 0], [0, 0, 1]])))
    with pytest.raises(KnockcamError, match=rf"the given calibration does not fit .*go on with 'knockcam live "
                                            rf"--resume {log} --calibration NEW.yaml'$"):
        live.run(list_source([empty] * 60, 30.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))
    assert [e["trouble"] for e in read_log(log) if e["kind"] == "camera"] == ["calibration does not fit"]
    assert not [e for e in read_log(log) if e["kind"] == "reference"]  # stopped before the empty board was taken

    # resumed with one made again from where the camera is now (it used to fail the same way every time)
    resumed = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False)
    resumed.use_calibration(truth.with_error(0.5, "test"), "given at --resume: new.yaml")
    resumed.run(list_source([empty] * 60, 30.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))
    assert [e["note"] for e in read_log(log) if e["kind"] == "calibration"] == ["given", "given at --resume: new.yaml"]
    assert [e for e in read_log(log) if e["kind"] == "reference"]  # the empty board taken: the game went on
    again = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False)  # rebuilt from the log: the new one
    assert np.allclose(again.calibration.homography, truth.homography)


def test_giving_up_offers_the_max_error_that_would_accept_the_last_board(board):
    from dataclasses import replace

    from knockcam.calibrate.quality import Refused
    from knockcam.live.session import BoardSearch

    seen = replace(_fixture("overhead")[2], error_mm=4.2, grid_share=0.9)  # the printed grid placed it: an offer
    last = Refused("calibration error 4.2 mm is over the 3 mm limit (auto)", "give --corners", seen)
    text = BoardSearch(1.0, 30.0, tries=30, last=last).gave_up("30 tries over 30 s of frames", board)
    assert text == ("no --calibration given and the board was not found automatically (30 tries over 30 s of frames; "
                    "the last: calibration error 4.2 mm is over the 3 mm limit (auto)): give --calibration from "
                    "'knockcam calibrate' on a photo from this camera, or accept the last one with --max-error 4.5")
    unsure = Refused(last.reason, last.what_to_do, replace(seen, grid_share=0.3))  # the grid poorly seen: none
    assert "--max-error" not in BoardSearch(1.0, 30.0, last=unsure).gave_up("1 try", board)
    assert "--max-error" not in BoardSearch(1.0, 30.0, last=KnockcamError("board not found")).gave_up("1 try", board)


def _fixture(case):
    import json
    from pathlib import Path

    from knockcam.calibrate.calibration import Calibration

    folder = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    truth = Calibration.from_dict(json.loads((folder / f"{case}.json").read_text())["calibration"])
    return cv2.imread(str(folder / f"{case}.jpg")), cv2.imread(str(folder / f"{case}_ref.jpg")), truth


def _clutter_game(tmp_path, calibration, reference=None):
    log = tmp_path / "clutter.jsonl"
    new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
            review="ambiguous", source={"frames": "memory"}, calibration=calibration, reference=reference,
            fsync=False).close()
    prompter = ScriptedPrompter(dict(DEMO_ANSWERS))
    return log, prompter, LiveGame(log, prompter, fsync=False)  # the shipped model looks at the empty frame


def test_a_board_with_tokens_on_it_is_not_taken_for_the_empty_board(tmp_path):
    """Tokens in the empty-board frame would be invisible to the reference detector for the whole game."""
    photo, empty, truth = _fixture("overhead")
    log, prompter, live = _clutter_game(tmp_path, truth)
    live.run(list_source([photo] * 20 + [empty] * 20, 10.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))
    entries = read_log(log)
    (clutter,) = [e for e in entries if e["kind"] == "camera"]
    assert clutter["trouble"] == "board not clear" and "yellow on connecticut_avenue" in clutter["message"]
    assert any(t.startswith("the board is not clear (yellow on") for t in prompter.told)
    (reference,) = [e for e in entries if e["kind"] == "reference"]
    assert reference["seq"] > clutter["seq"]
    taken = cv2.imread(str(log.parent / reference["path"]))
    assert cv2.absdiff(taken, empty).max() <= 2  # the frame of the clear board, not the one with tokens


def test_a_given_empty_board_frame_with_tokens_on_it_stops_the_game(tmp_path):
    photo, empty, truth = _fixture("overhead")
    _, _, live = _clutter_game(tmp_path, truth, reference=photo)
    with pytest.raises(KnockcamError, match=r"the empty-board frame is not empty \(yellow on .*without --reference"):
        live.run(list_source([empty] * 20, 10.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))
    # a game resumed after its first observations is not held back: its frame was looked at when it started
    from knockcam.live.log import GameLog
    from knockcam.live.tracker import Observation

    log = GameLog(tmp_path / "clutter.jsonl", fsync=False)
    log.append("observation", **Observation(seen=(), frame=3, t=0.3).to_dict())
    log.close()
    resumed = LiveGame(tmp_path / "clutter.jsonl", ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False)
    resumed.run(list_source([empty] * 20, 10.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))


def test_a_calibration_given_at_resume_after_the_camera_moved_is_used_once_with_the_empty_board_carried(empty_720p,
                                                                                                     board, tmp_path):
    """The camera moved 30 px while the game was stopped and was calibrated again: the log's empty-board frame, in
    the old view, is carried into the new one. Left there, the camera-move check took the new calibration's move
    for one of its own and applied it again: the board read 43 mm from where it lies for the rest of the game."""
    from knockcam.calibrate.quality import corner_errors_mm

    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth.with_error(0.5, "test"))
    still = lambda cal, ref: (lambda frame: Still(()))  # noqa: E731
    live.run(list_source([empty] * 60, 30.0), detector_factory=still)
    shift = np.array([[1.0, 0, 30], [0, 1, 12], [0, 0, 1]])
    moved = cv2.warpPerspective(empty, shift, (1280, 720), borderMode=cv2.BORDER_REPLICATE)
    again = truth.with_error(0.5, "test").moved(shift)
    stopped = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None)
    stopped.use_calibration(again, "given at --resume: new.yaml")
    stopped.run(list_source([moved] * 2, 30.0), detector_factory=still)  # stopped again before a still frame
    resumed = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None)  # no --calibration now
    resumed.run(list_source([moved] * 90, 30.0), detector_factory=still)
    assert corner_errors_mm(resumed.calibration, again, board).max() < 0.1
    assert cv2.absdiff(resumed.reference, moved)[100:-100, 100:-100].mean() < 1.0
    assert not [e for e in read_log(log) if e["kind"] == "camera"]  # no camera move of its own
    assert "carried into the view of the calibration given at --resume" in \
        [e["note"] for e in read_log(log) if e["kind"] == "reference"]


def test_a_calibration_given_at_resume_that_does_not_fit_the_camera_stops_the_game(empty_720p, tmp_path):
    """Checked on a still frame as one given at the start is, though the game has seen frames already."""
    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth.with_error(0.5, "test"))
    still = lambda cal, ref: (lambda frame: Still(()))  # noqa: E731
    live.run(list_source([empty] * 60, 30.0), detector_factory=still)
    resumed = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), fsync=False, model=None)
    resumed.use_calibration(truth.with_error(0.5, "test").moved(np.array([[1.0, 0, 12], [0, 1, 0], [0, 0, 1]])),
                            "given at --resume: off.yaml")
    with pytest.raises(KnockcamError, match="the given calibration does not fit"):
        resumed.run(list_source([empty] * 60, 30.0), detector_factory=still)


def test_a_given_calibration_the_first_still_frame_cannot_check_is_said_to_be_used_as_given(demo, tmp_path):
    """The demo's 480x270 frames show the printed lines too small to check a calibration against: the game
    goes on with the one given, and says once, in the log and to the players, that it was not checked; later
    still frames (every camera.recheck_s of frames) cannot check it either, and say nothing more."""
    log, live = _given_game(tmp_path, demo.calibration)
    live.run(list_source([demo.empty] * 700, 30.0), detector_factory=lambda cal, ref: (lambda frame: Still(())))
    trouble = [e for e in read_log(log) if e["kind"] == "camera"]
    assert [e["trouble"] for e in trouble] == ["calibration not checked"]
    assert "the first still frame shows too little of the board's printed lines" in trouble[0]["message"]
    told = [m for m in live.live_prompter.told if m.startswith("calibration used as given, not checked")]
    assert len(told) == 1 and f"--resume {log} --calibration NEW.yaml" in told[0]
    assert "tried again on later still frames" in told[0]


def _calibration_loop(checked: bool = False):
    from knockcam import settings
    from knockcam.live.session import _Loop

    return _Loop(cfg=settings.load("live"), jpeg_quality=85, factory=None, frame_checked=True,
                 calibration_checked=checked)


def test_a_given_calibration_a_blurred_first_frame_cannot_check_is_checked_on_a_sharp_one_later(empty_720p, tmp_path):
    """A webcam still focusing: its first still frame is too blurred to check the calibration, which is used
    as given and tried again camera.recheck_s later; a sharp frame then checks it, and says so."""
    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth)
    blurred = cv2.GaussianBlur(empty, (0, 0), 8)
    loop = _calibration_loop()
    live._check_given_calibration(Frame(10, 0.3, blurred), loop)
    assert not loop.calibration_checked and loop.calibration_tries == 1 and loop.next_check_t == pytest.approx(10.3)
    live._check_given_calibration(Frame(400, 13.3, empty), loop)
    assert loop.calibration_checked
    trouble = [(e["trouble"], e["frame"]) for e in read_log(log) if e["kind"] == "camera"]
    assert trouble == [("calibration not checked", 10), ("calibration checked", 400)]
    assert live.live_prompter.told[-1] == ("calibration checked: still frame 400 fits it (after 1 still frame(s) "
                                           "that could not check it)")


def test_a_given_calibration_no_still_frame_can_check_is_tried_a_few_times_then_left_as_given(empty_720p, tmp_path):
    """camera.recheck_tries more tries after the first, told once; then no more (each try may look for the board)."""
    from knockcam import settings

    empty, truth = empty_720p
    log, live = _given_game(tmp_path, truth)
    blurred = cv2.GaussianBlur(empty, (0, 0), 8)
    loop = _calibration_loop()
    tries = int(settings.load("live")["camera"]["recheck_tries"])
    for n in range(tries + 1):
        assert not loop.calibration_checked
        live._check_given_calibration(Frame(n, 10.0 * n, blurred), loop)
    assert loop.calibration_checked and loop.calibration_tries == tries + 1
    assert [e["trouble"] for e in read_log(log) if e["kind"] == "camera"] == ["calibration not checked"]


def test_a_given_calibration_a_later_still_frame_finds_off_stops_the_game(empty_720p, tmp_path):
    """Not checked on a blurred first frame, then a sharp frame shows the board 12 px from where the file says:
    the game stops as it would have on the first frame, saying what to do (its log kept for --resume)."""
    empty, truth = empty_720p
    off = truth.with_error(0.5, "test").moved(np.array([[1.0, 0, 12], [0, 1, 0], [0, 0, 1]]))
    log, live = _given_game(tmp_path, off)
    loop = _calibration_loop()
    live._check_given_calibration(Frame(3, 0.1, cv2.GaussianBlur(empty, (0, 0), 8)), loop)
    with pytest.raises(KnockcamError, match="the given calibration does not fit still frame 350"):
        live._check_given_calibration(Frame(350, 11.7, empty), loop)
    assert [e["trouble"] for e in read_log(log) if e["kind"] == "camera"] == ["calibration not checked",
                                                                               "calibration does not fit"]
