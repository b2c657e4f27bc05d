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
