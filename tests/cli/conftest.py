"""Fixtures for command-line tests: the shared synthetic scene."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: processes.py
from synthetic_scene import scene as _scene  # noqa: E402


@pytest.fixture(scope="session")
def scene():
    return _scene()
