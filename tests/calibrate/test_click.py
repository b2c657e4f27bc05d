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


def test_clicks_in_a_scaled_down_window_land_on_the_photos_own_pixels(monkeypatch):
    """A photo wider than click.max_window_px is shown scaled down; a click on a window pixel is the centre of
    the photo pixels it covers (here 2 x 2 of them), in the order clicked, and Backspace takes one back."""
    import cv2

    monkeypatch.setattr(click, "has_display", lambda: True)
    window = {}
    for name in ("namedWindow", "destroyWindow"):
        monkeypatch.setattr(cv2, name, lambda *args: None, raising=False)
    monkeypatch.setattr(cv2, "setMouseCallback", lambda title, fn: window.update(on_mouse=fn), raising=False)
    monkeypatch.setattr(cv2, "imshow", lambda title, canvas: window.update(shape=canvas.shape), raising=False)
    # window pixels clicked, one per frame; None: Backspace (the mistaken click before it is taken back)
    clicks = iter([(50, 500), (1150, 550), (7, 7), None, (1000, 25), (200, 40)])

    def wait_key(ms):
        where = next(clicks)
        if where is None:
            return 8
        window["on_mouse"](cv2.EVENT_LBUTTONDOWN, where[0], where[1], 0, None)
        return -1

    monkeypatch.setattr(cv2, "waitKey", wait_key, raising=False)
    corners = click.click_corners(np.zeros((1200, 2400, 3), np.uint8))
    assert window["shape"] == (600, 1200, 3)
    assert np.allclose(corners, [[100.5, 1000.5], [2300.5, 1100.5], [2000.5, 50.5], [400.5, 80.5]])
