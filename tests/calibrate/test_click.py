"""Clicking needs a display; without one it fails with a message naming the alternatives."""

import numpy as np
import pytest

from knockcam.calibrate import click
from knockcam.errors import KnockcamError


def test_headless_click_says_what_to_do_instead(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(click.sys, "platform", "linux")
    assert not click.has_display()
    with pytest.raises(KnockcamError, match="--corners"):
        click.click_corners(np.zeros((10, 10, 3), np.uint8))


def _free_display(host: str) -> tuple[object, int]:
    """A socket listening where X display N of ``host`` would (TCP port 6000 + N), and N."""
    import socket

    for number in range(90, 200):
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            server.bind((host, 6000 + number))
        except OSError:
            server.close()
            continue
        server.listen(1)
        return server, number
    pytest.skip("no free X display port")


def test_a_display_that_does_not_answer_is_no_display(monkeypatch):
    """A stale DISPLAY (an ssh session's, long closed) made OpenCV's window abort the whole program (exit 134);
    now it is told in one line. A display whose server answers is used."""
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(click.sys, "platform", "linux")
    server, number = _free_display("127.0.0.1")
    with server:
        monkeypatch.setenv("DISPLAY", f"127.0.0.1:{number}.0")
        assert click.has_display() == hasattr(__import__("cv2"), "imshow")
    monkeypatch.setenv("DISPLAY", f"127.0.0.1:{number}.0")  # closed now
    assert not click.has_display()
    monkeypatch.setenv("DISPLAY", ":987")  # no such local server
    assert not click.has_display()
    with pytest.raises(KnockcamError, match=r"no display to click on: .*--corners.* "
                                            r"\(the display :987 does not answer\)"):
        click.click_corners(np.zeros((10, 10, 3), np.uint8))
