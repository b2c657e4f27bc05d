"""Shared scenes for the calibration tests (rendered once per session: rendering takes a while)."""

import pytest

from knockcam.board import load_board
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
