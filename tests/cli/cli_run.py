"""Run the real command line in a subprocess (a module of its own: conftest names clash across test folders)."""

from __future__ import annotations

import subprocess
import sys


def knockcam(*args, cwd=None, timeout=180) -> subprocess.CompletedProcess:
    """Run the real command line (python -m knockcam) and capture what it prints."""
    return subprocess.run([sys.executable, "-m", "knockcam", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)
