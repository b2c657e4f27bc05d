"""Many scenes at once, on several processes: stills with truth, a YOLO dataset, or videos."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from knockcam.board.layout import Board
from knockcam.workers import available_cpus, process_pool


@dataclass(frozen=True)
class BatchResult:
    """What a batch wrote: how many items, where, how long it took."""

    mode: str
    count: int
    out_dir: str
    seconds: float
    labels: int = 0

    @property
    def per_second(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0


_STATE: dict = {}


def _init(board: Board, out: Path, seed: int, mode: str, cfg: dict) -> None:
    import cv2

    cv2.setNumThreads(1)
    _STATE.update(board=board, out=out, seed=seed, mode=mode, cfg=cfg)


def _one(index: int) -> int:
    board, out, seed, mode, cfg = (_STATE[k] for k in ("board", "out", "seed", "mode", "cfg"))
    if mode == "yolo":
        from knockcam.synth.yolo import write_sample

        return write_sample(out, board, seed, index, cfg)
    if mode == "video":
        from knockcam.synth.video import write_video

        write_video(out, board, seed, index, cfg)
        return 0
    from knockcam.synth.stills import write_still

    write_still(out, board, seed, index, cfg)
    return 0


def generate(out: Path, board: Board, count: int, seed: int, mode: str = "stills", workers: int = 1,
             cfg: dict | None = None) -> BatchResult:
    """Write ``count`` items numbered 0..count-1 of run ``seed``; the same seed gives the same files."""
    from knockcam.synth.scene import config

    cfg = cfg or config()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if mode == "yolo":
        from knockcam.synth.yolo import prepare, write_data_yaml

        prepare(out)
        write_data_yaml(out)
    start = time.perf_counter()
    workers = max(1, min(int(workers), count, available_cpus()))
    if workers == 1:
        import cv2

        threads = cv2.getNumThreads()
        try:  # one OpenCV thread, as in a pool worker, so the files match; the caller's count is restored after
            _init(board, out, seed, mode, cfg)
            labels = sum(_one(i) for i in range(count))
        finally:
            cv2.setNumThreads(threads)
    else:
        with process_pool("fork", workers, _init, (board, out, seed, mode, cfg)) as pool:
            labels = sum(pool.imap_unordered(_one, range(count), chunksize=4))
    return BatchResult(mode=mode, count=count, out_dir=str(out), seconds=time.perf_counter() - start, labels=labels)
