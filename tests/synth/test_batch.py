from pathlib import Path

import cv2

from knockcam.board.layout import load_board
from knockcam.synth.batch import generate


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
