import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import pytest

from knockcam.board.layout import load_board
from knockcam.synth.batch import generate
from processes import HAS_PROC, children_of


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_one_worker_leaves_the_callers_thread_count_and_matches_a_pool(tmp_path: Path):
    """A batch run in the caller's process must not change OpenCV's thread count for the code that runs after it."""
    board = load_board()
    before = cv2.getNumThreads()
    cv2.setNumThreads(2)
    try:
        generate(tmp_path / "one", board, count=2, seed=31, workers=1)
        assert cv2.getNumThreads() == 2
    finally:
        cv2.setNumThreads(before)
    generate(tmp_path / "pool", board, count=2, seed=31, workers=2)
    one, pool = _files(tmp_path / "one"), _files(tmp_path / "pool")
    assert one and one == pool


@pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on Linux")
def test_ctrl_c_stops_the_workers_without_a_traceback(tmp_path: Path):
    """Ctrl-C to the whole process group (as a terminal sends it) while the workers render: the command says it
    was interrupted (exit 130), and no worker prints a traceback of its own (before, one killed mid-render
    often did, with KeyboardInterrupt)."""
    out = tmp_path / "scenes"
    synth = subprocess.Popen([sys.executable, "-m", "knockcam", "synth", str(out), "--count", "300", "--workers", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    end = time.monotonic() + 120
    while not (out.is_dir() and any(out.glob("*.json"))):  # the workers are rendering
        assert synth.poll() is None and time.monotonic() < end, "no scene rendered"
        time.sleep(0.02)
    os.killpg(synth.pid, signal.SIGINT)
    _, err = synth.communicate(timeout=60)
    assert synth.returncode == 130 and err.strip().endswith("knockcam: interrupted"), err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


@pytest.mark.skipif(not HAS_PROC, reason="finds the worker processes in /proc")
def test_the_workers_leave_ctrl_c_to_the_main_process(tmp_path: Path):
    """Ctrl-C sent to the workers alone changes nothing: they ignore it (the main process stops them), and every
    scene is rendered. Before, a worker died of it with a traceback and the run waited forever for its scene."""
    out = tmp_path / "scenes"
    synth = subprocess.Popen([sys.executable, "-m", "knockcam", "synth", str(out), "--count", "24", "--workers", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 120
        while not (out.is_dir() and any(out.glob("*.json"))):  # the workers are rendering
            assert synth.poll() is None and time.monotonic() < end, "no scene rendered"
            time.sleep(0.02)
        workers = children_of(synth.pid)
        assert len(workers) == 2
        for pid in workers:
            os.kill(pid, signal.SIGINT)
        _, err = synth.communicate(timeout=60)
    finally:
        synth.kill()
    assert synth.returncode == 0 and "Traceback" not in err, err
    assert len(list(out.glob("*.json"))) == 24
