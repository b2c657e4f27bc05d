"""Where frames come from: a camera, a network stream, a video file or a list of frames, with camera trouble
reported.

A source yields ``Frame`` (an image with its index and time) or ``Trouble`` (the camera was lost,
froze, its picture changed size, or it came back). A live camera that stops answering or repeats one
frame for too long pauses the game, as frames of another size do; a video file simply ends.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from knockcam import settings
from knockcam.errors import KnockcamError
from knockcam.files import image_format
from knockcam.live.log import RESUME_LATER

LOST, FROZEN, RESIZED, BACK = "lost", "frozen", "resized", "back"


@dataclass(frozen=True)
class Frame:
    """One camera frame: its number in the stream, its time in seconds and the BGR image."""

    index: int
    t: float
    image: np.ndarray


@dataclass(frozen=True)
class Trouble:
    """A change in the camera's health: ``lost``, ``frozen`` or ``back``, with a message for the table."""

    kind: str
    t: float
    message: str


def _signature(image: np.ndarray) -> bytes:
    """A cheap fingerprint of a frame: every 16th pixel. Identical fingerprints for long = frozen."""
    return np.ascontiguousarray(image[::16, ::16]).tobytes()


class FreezeWatch:
    """Says when a live source has repeated the same frame for ``frozen_s`` seconds, and when it moves again."""

    def __init__(self, frozen_s: float):
        self.frozen_s = float(frozen_s)
        self.last: bytes | None = None
        self.since = 0.0
        self.frozen = False

    def update(self, image: np.ndarray, t: float) -> Trouble | None:
        sig = _signature(image)
        if sig != self.last:
            self.last, self.since = sig, t
            if self.frozen:
                self.frozen = False
                return Trouble(BACK, t, "camera picture moving again: game resumed")
            return None
        if not self.frozen and t - self.since >= self.frozen_s:
            self.frozen = True
            return Trouble(FROZEN, t, f"camera picture frozen for {self.frozen_s:g} s: game paused "
                                      "(check the cable or the camera app; it resumes by itself)")
        return None


class SizeWatch:
    """Says when a source's frames change size, and when they are back at the first frames' size: a phone over
    the board turned (its picture upright), its camera app set to another size, a webcam plugged back in at
    another. The board was found, or calibrated, in frames of the first size: frames of another are not read."""

    def __init__(self, name: str):
        self.name = name
        self.size: tuple[int, int] | None = None
        self.changed = False

    def update(self, image: np.ndarray, t: float) -> Trouble | None:
        size = (int(image.shape[1]), int(image.shape[0]))
        if self.size is None:
            self.size = size
        elif size != self.size and not self.changed:
            self.changed = True
            return Trouble(RESIZED, t, f"{self.name}'s picture changed size, {self.size[0]}x{self.size[1]} -> "
                                       f"{size[0]}x{size[1]}: game paused; turn the camera back as it was, or set "
                                       "its app to the size it had (it resumes by itself)")
        elif size == self.size and self.changed:
            self.changed = False
            return Trouble(BACK, t, f"{self.name}'s picture back at {size[0]}x{size[1]}: game resumed")
        return None


class CaptureSource:
    """Frames from anything with OpenCV's ``read() -> (ok, image)``: a camera, or a fake one in tests.

    ``open`` makes a new capture (None when it cannot); failed reads pause the game and the capture
    is reopened every ``reconnect_s`` until frames return. ``live`` sources are also watched for
    freezing; a file source (``live=False``) ends at the first failed read.
    """

    def __init__(self, open_capture: Callable[[], object | None], *, live: bool, fps: float | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 start_index: int = 0, name: str = "camera", max_wait_s: float | None = None,
                 not_opened: str = "check the --camera number or the --video path",
                 reconnect: str = "plug it back in"):
        cfg = settings.load("live")["camera"]
        self.open_capture = open_capture
        self.live = live
        self.fps = fps
        self.clock = clock
        self.sleep = sleep
        self.name = name
        self.reconnect_s = float(cfg["reconnect_s"])
        self.lost_reads = int(cfg["lost_reads"])
        self.freeze = FreezeWatch(float(cfg["frozen_s"])) if live else None
        self.sizes = SizeWatch(name)
        self.index = start_index
        self.max_wait_s = max_wait_s  # live: give up after this long without frames (None: wait for ever)
        self.capture = open_capture()
        self.reconnect = reconnect  # what brings a lost source back, for the table
        if self.capture is None:
            raise KnockcamError(f"cannot open {name}: {not_opened}")
        self.t0 = clock()

    def _time(self) -> float:
        if self.fps:
            return self.index / self.fps
        return self.clock() - self.t0

    def __iter__(self) -> Iterator[Frame | Trouble]:
        failures = 0
        lost_since: float | None = None
        while True:
            ok, image = (False, None) if self.capture is None else self.capture.read()
            if ok and image is not None:
                failures = 0
                if lost_since is not None:
                    lost_since = None
                    yield Trouble(BACK, self._time(), f"{self.name} is back: game resumed")
                t = self._time()
                trouble = self.sizes.update(image, t)
                if trouble is not None:
                    yield trouble
                if self.sizes.changed:  # read at the first frames' size only: the board was placed in those
                    self.index += 1
                    continue
                if self.freeze is not None:
                    trouble = self.freeze.update(image, self.clock() - self.t0)
                    if trouble is not None:
                        yield trouble
                    if self.freeze.frozen:
                        self.index += 1
                        continue
                frame = Frame(self.index, t, image)
                self.index += 1
                yield frame
                continue
            if not self.live:
                return
            failures += 1
            if failures < self.lost_reads:
                continue
            now = self.clock()
            if lost_since is None:
                lost_since = now
                yield Trouble(LOST, self._time(), f"{self.name} disconnected: game paused; {self.reconnect} "
                                                  "(nothing is lost, it resumes when frames return)")
            if self.max_wait_s is not None and now - lost_since > self.max_wait_s:
                raise KnockcamError(f"{self.name} gone for {self.max_wait_s:g} s: stopped", RESUME_LATER)
            self.sleep(self.reconnect_s)
            self._reopen()

    def _reopen(self) -> None:
        try:
            if self.capture is not None and hasattr(self.capture, "release"):
                self.capture.release()
        except Exception:  # a dead device may fail to release: we open a new one anyway
            pass
        self.capture = self.open_capture()

    def frame_size(self) -> tuple[int, int] | None:
        """(width, height) of the frames the capture says it gives, None when it does not say."""
        import cv2

        get = getattr(self.capture, "get", None)
        if get is None:
            return None
        size = (int(get(cv2.CAP_PROP_FRAME_WIDTH) or 0), int(get(cv2.CAP_PROP_FRAME_HEIGHT) or 0))
        return size if min(size) > 0 else None

    def close(self) -> None:
        if self.capture is not None and hasattr(self.capture, "release"):
            self.capture.release()


def size_note(name: str, size: tuple[int, int] | None) -> str | None:
    """A line for the table when ``name``'s frames are smaller than the automatic calibration is tuned for
    (``tuned_px`` across): the board is found less often in them; None otherwise."""
    from knockcam.calibrate.calibration import smaller_than_tuned, tuned_px

    if size is None or not smaller_than_tuned(size):
        return None
    return (f"{name} gives {size[0]}x{size[1]} frames, smaller than the {tuned_px()} px across the automatic "
            f"calibration is tuned for: it finds the board less often in them; use {tuned_px()} px across or more, "
            "or give --calibration")


def camera_source(index: int, **kw) -> CaptureSource:
    """A live webcam by OpenCV index, asked for frames of live.yaml ``camera.frame_size``: OpenCV opens most
    webcams at 640x480, where the automatic calibration finds the board far less often (``size_note``)."""
    import cv2

    if int(index) < 0:  # OpenCV's capture back-ends crash on a negative device number
        raise KnockcamError(f"--camera {index}: cameras are numbered from 0 (0 = the first webcam, 1 = the next)")
    width, height = (int(v) for v in settings.load("live")["camera"]["frame_size"])

    def open_capture():
        # a camera that is not there is told in one line (CaptureSource), not in each back-end's own words
        with _opencv_silent():
            cap = cv2.VideoCapture(int(index))
        if not cap.isOpened():
            return None
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame after a detection, not a stale queue
        cap.set(cv2.CAP_PROP_FRAME_WIDTH, width)  # a camera without this size picks its nearest
        cap.set(cv2.CAP_PROP_FRAME_HEIGHT, height)
        return cap

    return CaptureSource(open_capture, live=True, name=f"camera {index}", **kw)


@contextmanager
def _opencv_silent():
    """OpenCV's own warnings not printed meanwhile: what they say, the game's one-line errors and ``Trouble`` do."""
    import cv2

    level = cv2.utils.logging.getLogLevel()
    cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
    try:
        yield
    finally:
        cv2.utils.logging.setLogLevel(level)


class _QuietCapture:
    """A stream's OpenCV capture whose reads print nothing: one that times out (the stream stalled) warns from
    FFmpeg's interrupt, while the table already says the stream is lost."""

    def __init__(self, capture):
        self.capture = capture

    def read(self):
        with _opencv_silent():
            return self.capture.read()

    def get(self, prop: int) -> float:
        return self.capture.get(prop)

    def release(self) -> None:
        self.capture.release()


STREAM_SCHEMES = ("http", "https", "rtsp")  # what phones' camera apps and network cameras serve


def stream_source(url: str) -> CaptureSource:
    """A network camera's video stream: a phone held over the board by a camera app that serves its picture
    (an MJPEG page, http://PHONE:8080/video, or rtsp://...), or an IP camera. Opened and read with OpenCV's
    FFmpeg back-end, each wait bounded by live.yaml ``camera.stream_timeout_s``; a dropped stream pauses the
    game and is reopened, as a webcam unplugged is."""
    import os
    from urllib.parse import urlsplit

    import cv2

    address = urlsplit(url)
    if address.scheme.lower() not in STREAM_SCHEMES or not address.hostname:
        raise KnockcamError(f"--stream {url}: give the stream's address as the camera app shows it, starting "
                            f"{', '.join(s + '://' for s in STREAM_SCHEMES)} (e.g. http://192.168.1.20:8080/video)")
    # FFmpeg writes its own lines for a refused connection: the one-line error below says it (read at first use)
    os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")
    wait_ms = int(1000 * float(settings.load("live")["camera"]["stream_timeout_s"]))

    def open_capture():
        with _opencv_silent():  # nor OpenCV's (as for a camera, camera_source)
            cap = cv2.VideoCapture(url, cv2.CAP_FFMPEG, [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, wait_ms,
                                                        cv2.CAP_PROP_READ_TIMEOUT_MSEC, wait_ms])
        if not cap.isOpened():
            return None
        cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame after a detection, not a stale queue
        return _QuietCapture(cap)

    try:
        return CaptureSource(open_capture, live=True, name=f"stream {url}",
                             not_opened="check the address, that the camera app is running and that this computer "
                                        "is on the same network",
                             reconnect="check the camera app and the network")
    except KnockcamError:
        page = _web_page(url, wait_ms / 1000.0)
        if page is None:
            raise
        raise KnockcamError(f"cannot open stream {url}: it is a web page ({page}), not the video stream",
                            "give the stream's own address, which the app shows beside its page (often the page's "
                            "address with /video at the end)") from None


def _web_page(url: str, timeout_s: float) -> str | None:
    """The content type of what ``url`` serves when it is a page (``text/...``: a camera app's own page, which
    its user may take for the stream), else None (a stream, nothing, or not HTTP)."""
    from urllib.request import urlopen

    if not url.lower().startswith(("http://", "https://")):
        return None
    try:
        with urlopen(url, timeout=timeout_s) as answer:  # the headers only: the body is not read
            kind = answer.headers.get_content_type()
    except (OSError, ValueError):  # refused, timed out, not found, a bad address
        return None
    return kind if kind.startswith("text/") else None


def video_source(path: str, start_index: int = 0) -> CaptureSource:
    """A video file played frame by frame (time = frame number / its fps), from ``start_index``."""
    import cv2

    from pathlib import Path

    if Path(path).is_dir():
        raise KnockcamError(f"--video {path} is a folder: give a video file")
    if not Path(path).is_file():
        raise KnockcamError(f"video file not found: {path}")
    try:
        with open(path, "rb") as f:
            kind = image_format(f.read(16))
    except OSError as exc:
        raise KnockcamError(f"cannot read video {path}: {exc.strerror or exc}") from None
    if kind is not None:  # OpenCV plays a photo as a video of one frame: a game that ends before it starts
        raise KnockcamError(f"{path} is a photo ({kind}), not a video: 'knockcam score {path}' scores it; live mode "
                            "follows a game in a video (MP4, MOV, AVI or MKV) or from --camera N")

    def open_capture():
        cap = cv2.VideoCapture(str(path))
        if not cap.isOpened():
            return None
        if start_index:
            cap.set(cv2.CAP_PROP_POS_FRAMES, float(start_index))
            if int(round(cap.get(cv2.CAP_PROP_POS_FRAMES))) != start_index:  # no seeking: read up to it
                cap.set(cv2.CAP_PROP_POS_FRAMES, 0.0)
                for _ in range(start_index):
                    if not cap.grab():
                        break
        return cap

    cap = cv2.VideoCapture(str(path))
    readable = cap.isOpened() and cap.read()[0]  # OpenCV opens some files it then cannot decode a frame of
    fps = float(cap.get(cv2.CAP_PROP_FPS)) or 30.0
    cap.release()
    if not readable:
        raise KnockcamError(f"cannot read video {path}: no frame of it decodes; give a video OpenCV can read "
                            "(MP4 or AVI), or --camera N")
    return CaptureSource(open_capture, live=False, fps=fps, start_index=start_index, name=f"video {path}")


class ListCapture:
    """A fake capture over a list: images, or None for a failed read (a camera unplugged for a moment)."""

    def __init__(self, frames: Sequence[np.ndarray | None]):
        self.frames = list(frames)
        self.pos = 0

    def read(self):
        if self.pos >= len(self.frames):
            return False, None
        image = self.frames[self.pos]
        self.pos += 1
        return image is not None, image


def list_source(frames: Sequence[np.ndarray], fps: float = 30.0, start_index: int = 0) -> CaptureSource:
    """Frames held in memory, played like a video file at ``fps`` (tests, benchmarks)."""
    capture = ListCapture(frames[start_index:])
    return CaptureSource(lambda: capture, live=False, fps=fps, start_index=start_index, name="frame list")


def first_good_frame(source: CaptureSource) -> Frame:
    """The first frame of ``source`` worth keeping as a photo of the board: taken once the camera has given
    frames for live.yaml ``grab.settle_s`` (a webcam's exposure and focus settle in its first second) and
    bright enough to read (detect.yaml ``photo.min_light``: a camera's first frames are often black). A
    KnockcamError when the frames end, the camera is lost or its picture freezes (a live camera would wait for
    it to come back), or none is bright enough within ``grab.give_up_s`` of the first."""
    from knockcam.calibrate.auto import photo_light

    cfg = settings.load("live")["grab"]
    settle_s, give_up_s = float(cfg["settle_s"]), float(cfg["give_up_s"])
    least = float(settings.load("detect")["photo"]["min_light"])
    first_t: float | None = None
    light = None
    for item in source:
        if isinstance(item, Trouble):
            if item.kind in (LOST, FROZEN):
                what = "was lost" if item.kind == LOST else "froze"
                raise KnockcamError(f"{source.name} {what} before a frame could be kept", "check it and grab again")
            continue
        first_t = item.t if first_t is None else first_t
        if item.t - first_t < settle_s:
            continue
        light = photo_light(item.image)
        if light >= least:
            return item
        if item.t - first_t > give_up_s:
            break
    if light is None:
        raise KnockcamError(f"{source.name} gave no frame to keep (it ended within {settle_s:g} s)")
    raise KnockcamError(f"{source.name}'s frames are far too dark (their brightest parts at {light:.0f} of 255)",
                        "light the board, or uncover the lens, and grab again")

