"""Helpers for command-line tests: run ``knockcam`` in a subprocess, and the shared synthetic scene."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from synthetic_scene import scene as _scene  # noqa: E402


def knockcam(*args, cwd=None, timeout=180) -> subprocess.CompletedProcess:
    """Run the real command line (python -m knockcam) and capture what it prints."""
    return subprocess.run([sys.executable, "-m", "knockcam", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


@pytest.fixture(scope="session")
def scene():
    return _scene()
