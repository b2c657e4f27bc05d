"""Worker processes for work that runs on one core at a time (the automatic calibration): how many CPUs there
are, and a pool of spawned workers that leave Ctrl-C to the main process."""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Callable


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says, else every CPU)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def spawned_pool(workers: int, initializer: Callable | None = None, initargs: tuple = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes, spawned, not forked (a fork would copy this process's onnxruntime and
    OpenCV thread pools mid-state); each ignores Ctrl-C, which the main process handles (``stop_workers``), then
    runs ``initializer(*initargs)``."""
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start, initargs=(initializer, initargs))


def stop_workers() -> None:
    """Ends every worker process at once (a second Ctrl-C, or a run given up): what they were doing is lost."""
    for worker in multiprocessing.active_children():
        worker.terminate()


def _start(initializer: Callable | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)
