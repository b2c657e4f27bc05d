"""A phone over the board as the camera (knockcam live --stream URL), and a frame of a camera kept as a photo
(knockcam live --grab FILE)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import cv2
import numpy as np
import pytest

from knockcam import settings
from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.live.frames import (LOST, CaptureSource, Frame, ListCapture, Trouble, first_good_frame,
                                  list_source, stream_source, video_source)
from knockcam.live.log import read_log


class PhoneCamera:
    """A phone's camera app on this computer: an MJPEG page (multipart/x-mixed-replace, as such apps serve)
    showing ``frames`` in a loop at ``fps``, from the first frame for each viewer."""

    def __init__(self, frames, fps=60.0, stall_after=None):
        """``stall_after``: frames sent before it stops sending, the connection held open (a stalled stream)."""
        jpegs = [cv2.imencode(".jpg", f, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes() for f in frames]
        stop = self.stop = threading.Event()

        class Page(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if self.path == "/":  # the app's own page, with the stream on it
                    page = b"<html><body><img src='/video'></body></html>"
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
                self.end_headers()
                k = 0
                try:
                    while not stop.is_set():
                        if stall_after is not None and k >= stall_after:
                            stop.wait(0.05)
                            continue
                        jpeg = jpegs[k % len(jpegs)]
                        self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n"
                                         % len(jpeg) + jpeg + b"\r\n")
                        k += 1
                        time.sleep(1.0 / fps)
                except OSError:  # the viewer went away
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/video"

    def close(self):
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def _free_port() -> int:
    """A port nobody listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_phone_stream_is_read_frame_by_frame():
    colours = [(0, 0, 200), (0, 200, 0), (200, 0, 0)]
    phone = PhoneCamera([np.full((240, 320, 3), c, np.uint8) for c in colours])
    try:
        source = stream_source(phone.url)
        assert source.name == f"stream {phone.url}" and source.live
        frames = []
        for item in source:
            if isinstance(item, Frame):
                frames.append(item)
            if len(frames) == 6:
                break
        source.close()
    finally:
        phone.close()
    assert [f.index for f in frames] == list(range(6))
    assert all(f.image.shape == (240, 320, 3) for f in frames)
    seen = {int(np.argmax(f.image[120, 160])) for f in frames}  # which channel is lit: the served colours
    assert seen == {0, 1, 2}


def test_a_stream_that_drops_pauses_the_game_with_what_to_check():
    phone = PhoneCamera([np.full((240, 320, 3), v, np.uint8) for v in (60, 120, 180)])
    source = stream_source(phone.url)
    try:
        items = iter(source)
        assert isinstance(next(items), Frame)
        phone.close()  # the phone's app stopped, or the Wi-Fi dropped
        trouble = next(item for _, item in zip(range(1000), items) if isinstance(item, Trouble))
    finally:
        source.close()
    assert trouble.kind == LOST
    assert trouble.message == (f"stream {phone.url} disconnected: game paused; check the camera app and the network "
                               "(nothing is lost, it resumes when frames return)")


def test_a_stalled_stream_is_lost_after_one_wait_and_prints_nothing_itself(monkeypatch, capfd):
    """The connection stays open but no frame comes (the phone asleep): each read waits ``stream_timeout_s``;
    the table says the stream is lost, and FFmpeg's interrupt warning is not printed beside it."""
    monkeypatch.setitem(settings.load("live")["camera"], "stream_timeout_s", 1.0)
    phone = PhoneCamera([np.full((240, 320, 3), v, np.uint8) for v in (60, 120, 180)], stall_after=3)
    source = stream_source(phone.url)
    try:
        items = iter(source)
        started = time.monotonic()
        trouble = next(item for _, item in zip(range(1000), items) if isinstance(item, Trouble))
        waited = time.monotonic() - started
    finally:
        source.close()
        phone.close()
    assert trouble.kind == LOST and waited < 10.0  # one wait of 1 s (and reconnecting), not one per read
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("url", ["192.168.1.20:8080/video", "ftp://192.168.1.20/video", "http://", "video.mp4"])
def test_a_stream_address_that_is_no_stream_url_is_a_clear_error(url):
    with pytest.raises(KnockcamError, match=r"give the stream's address as the camera app shows it, starting http://"):
        stream_source(url)


def test_the_camera_apps_page_given_for_its_stream_says_so():
    phone = PhoneCamera([np.full((240, 320, 3), 90, np.uint8)])
    page = phone.url.removesuffix("video")
    try:
        with pytest.raises(KnockcamError) as caught:
            stream_source(page)
    finally:
        phone.close()
    assert str(caught.value) == (f"cannot open stream {page}: it is a web page (text/html), not the video stream: give "
                                 "the stream's own address, which the app shows beside its page (often the page's "
                                 "address with /video at the end)")


def test_a_stream_nobody_serves_is_one_line_and_no_game_log(tmp_path):
    """In the real command line: FFmpeg's own lines about the refused connection are not shown either."""
    url = f"http://127.0.0.1:{_free_port()}/video"
    log = tmp_path / "game.jsonl"
    run = subprocess.run([sys.executable, "-m", "knockcam", "live", "--stream", url, "--sides", "red,blue",
                          "--log", str(log)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.splitlines() == [f"knockcam: error: cannot open stream {url}: check the address, that the "
                                       "camera app is running and that this computer is on the same network"]
    assert not log.exists()


def test_a_game_from_a_phone_stream_is_logged_with_it_and_resumed_from_it(demo_files, tmp_path, capsys):
    frames = [f.image for f in video_source(str(demo_files["video"]))]
    phone = PhoneCamera(frames[:60])
    log = tmp_path / "game.jsonl"
    common = ["--answers", str(demo_files["answers"]), "--quiet", "--no-model"]
    try:
        assert main(["live", "--stream", phone.url, "--calibration", str(demo_files["calibration"]),
                     "--order", "red,blue", "--tokens", "2", "--log", str(log), "--max-frames", "20", *common]) == 3
        start = read_log(log)[0]
        assert start["source"] == {"stream": phone.url}
        observed = sum(e["kind"] == "observation" for e in read_log(log))
        assert observed >= 1  # the still board was seen in the stream
        # resumed without a source: the logged stream again
        assert main(["live", "--resume", str(log), "--max-frames", "20", *common]) == 3
    finally:
        phone.close()
    err = capsys.readouterr().err
    assert f"resumed {log}" in err
    assert sum(e["kind"] == "observation" for e in read_log(log)) > observed


def _shades(*runs):
    """Frames of flat grey: (value, count) runs, in order."""
    return [np.full((48, 64, 3), v, np.uint8) for v, n in runs for _ in range(n)]


def test_the_grabbed_frame_is_past_the_cameras_first_second_and_its_dark_frames():
    # at 30 frames/s: a second of settling (frames 0-29), then black frames until frame 40
    frame = first_good_frame(list_source(_shades((0, 40), (200, 20)), fps=30.0))
    assert frame.index == 40 and frame.image[0, 0, 0] == 200
    settled = first_good_frame(list_source(_shades((200, 60)), fps=30.0))
    assert settled.index == 30


def test_a_camera_too_dark_or_too_short_to_grab_is_a_clear_error():
    with pytest.raises(KnockcamError, match=r"frames are far too dark \(their brightest parts at 3 of 255\)"):
        first_good_frame(list_source(_shades((3, 400)), fps=30.0))
    with pytest.raises(KnockcamError, match=r"gave no frame to keep \(it ended within 1 s\)"):
        first_good_frame(list_source(_shades((200, 10)), fps=30.0))


def test_a_camera_lost_while_grabbing_stops_the_grab_instead_of_waiting_for_it():
    lost = CaptureSource(lambda: ListCapture(_shades((200, 3)) + [None] * 20), live=True, sleep=lambda s: None,
                         name="camera 0")
    with pytest.raises(KnockcamError, match="camera 0 was lost before a frame could be kept: check it and grab again"):
        first_good_frame(lost)


def test_grab_writes_one_frame_of_the_stream_and_says_what_next(tmp_path, capsys):
    phone = PhoneCamera([np.full((240, 320, 3), (40, 160, 220), np.uint8)])
    out = tmp_path / "empty.jpg"
    try:
        assert main(["live", "--stream", phone.url, "--grab", str(out)]) == 0
        said = capsys.readouterr().out
        assert main(["live", "--stream", phone.url, "--grab", str(out)]) == 2  # never over a file
        assert "the file exists already" in capsys.readouterr().err
    finally:
        phone.close()
    image = cv2.imread(str(out))
    assert image.shape == (240, 320, 3) and np.abs(image[120, 160].astype(int) - (40, 160, 220)).max() <= 3
    assert said.startswith(f"{out}: 320x240, from stream {phone.url}.")
    assert f"'knockcam calibrate {out}'" in said and f"--reference {out}" in said


@pytest.mark.parametrize("args, said", [
    (["--grab", "empty.gif", "--video", "game.avi"], "give a file name ending in .jpg or .png"),
    (["--grab", "empty.jpg"], "--grab takes its frame from --camera N, --stream URL or --video FILE"),
])
def test_grab_input_errors(args, said, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["live", *args]) == 2
    assert said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
