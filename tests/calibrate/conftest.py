"""Shared scenes for the calibration tests (rendered once per session: rendering takes a while), and the
committed renders of the knife-edge cases."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.scene import make_scene


@pytest.fixture(scope="session")
def board():
    return load_board()


@pytest.fixture(scope="session")
def scene(board):
    return make_scene(board, 4)


@pytest.fixture(scope="session")
def marker_scene(board):
    return make_scene(board, 1, markers=True)


RENDERS = Path(__file__).parent / "renders"


def _committed_render(seed: int, index: int):
    """knockcam.synth render SEED/INDEX (``make_photo(board, seed, index)``) as committed in renders/: the
    decoded photo and its true Calibration. The tests that pin a knife-edge case of the automatic method
    on one render read it from here: the renderer draws the board's printed names with cv2.putText, which
    OpenCV 5.1 draws differently from 5.0, and a render changed that much is another case. These were
    rendered with OpenCV 5.0.0 (tests/calibrate/test_committed_renders.py checks them against the renderer)."""
    jpeg = (RENDERS / f"{seed}_{index}.jpg").read_bytes()
    truth = json.loads((RENDERS / f"{seed}_{index}.json").read_text())
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR), Calibration.from_dict(truth)


@pytest.fixture(scope="session")
def committed_render():
    """``committed_render(seed, index)``: a committed knockcam.synth render and its true Calibration."""
    return _committed_render
