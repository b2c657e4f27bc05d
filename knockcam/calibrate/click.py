"""Clicking the four corners in a window, where a display exists (OpenCV's HighGUI)."""

from __future__ import annotations

import os
import sys

import numpy as np

from knockcam import settings
from knockcam.calibrate.calibration import unscaled_px
from knockcam.errors import KnockcamError

HEADLESS = ("no display to click on: give --corners \"x,y x,y x,y x,y\" (near-left, near-right, far-right, "
            "far-left), use --markers, or --auto")
NAMES = ("near-left", "near-right", "far-right", "far-left")


def has_display() -> bool:
    """True when OpenCV can open a window here."""
    import cv2

    if not hasattr(cv2, "imshow") or not hasattr(cv2, "setMouseCallback"):
        return False
    if sys.platform.startswith("linux"):
        wayland, x11 = os.environ.get("WAYLAND_DISPLAY"), os.environ.get("DISPLAY")
        if not (wayland or x11):
            return False
        if x11 and not wayland and not _x_server_answers(x11):
            return False  # a stale DISPLAY (an ssh session's, long closed): OpenCV's window would abort the program
    return True


def _x_server_answers(display: str) -> bool:
    """Whether the X server that ``display`` ("[host]:N[.screen]") names takes a connection: its local socket
    (/tmp/.X11-unix/XN, or Linux's abstract one of that name) or TCP port 6000 + N on ``host``."""
    import socket

    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not number.isdigit():
        return False
    if host in ("", "unix"):
        path = f"/tmp/.X11-unix/X{number}"
        addresses = [(socket.AF_UNIX, "\0" + path), (socket.AF_UNIX, path)]
    else:
        addresses = [(socket.AF_INET6 if ":" in host else socket.AF_INET, (host.strip("[]"), 6000 + int(number)))]
    for family, address in addresses:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            try:
                s.connect(address)
                return True
            except OSError:
                continue
    return False


def click_corners(image: np.ndarray) -> np.ndarray:
    """Show the photo and collect four clicks (backspace undoes, Esc cancels); (4, 2) pixels."""
    import cv2

    if not has_display():
        named = os.environ.get("DISPLAY")
        raise KnockcamError(HEADLESS + (f" (the display {named} does not answer)" if named else ""))
    h, w = image.shape[:2]
    scale = min(1.0, float(settings.load("calibrate")["click"]["max_window_px"]) / max(w, h))
    shown = cv2.resize(image, (int(w * scale), int(h * scale))) if scale < 1 else image.copy()
    points: list[tuple[float, float]] = []
    title = "knockcam calibrate: click near-left, near-right, far-right, far-left"

    def on_mouse(event, x, y, flags, param):  # noqa: ARG001 - OpenCV's signature
        if event == cv2.EVENT_LBUTTONDOWN and len(points) < 4:
            points.append(tuple(unscaled_px((x, y), scale)))

    try:
        cv2.namedWindow(title, cv2.WINDOW_AUTOSIZE)
        cv2.setMouseCallback(title, on_mouse)
        while len(points) < 4:
            canvas = shown.copy()
            for i, (x, y) in enumerate(points):
                p = (int((x + 0.5) * scale), int((y + 0.5) * scale))
                cv2.circle(canvas, p, 6, (0, 0, 255), 2)
                cv2.putText(canvas, NAMES[i], (p[0] + 8, p[1] - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 255), 2)
            cv2.putText(canvas, f"click {NAMES[len(points)]}", (10, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.9,
                        (0, 255, 255), 2)
            cv2.imshow(title, canvas)
            key = cv2.waitKey(30) & 0xFF
            if key == 27:
                raise KnockcamError("calibration cancelled (Esc): no corners clicked")
            if key in (8, 127) and points:
                points.pop()
    except cv2.error as exc:
        raise KnockcamError(HEADLESS + f" ({' '.join(str(exc).split())[:80]})") from None
    finally:
        try:
            cv2.destroyWindow(title)
        except Exception:  # noqa: BLE001 - the window may never have opened
            pass
    return np.array(points)
