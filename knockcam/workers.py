"""Worker processes for work that runs on one core at a time (the automatic calibration): how many CPUs there
are, a pool of spawned workers that leave Ctrl-C to the main process (and end with it), and calls run in them in
order."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from knockcam.errors import KnockcamError


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says, else every CPU)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def spawned_pool(workers: int, initializer: Callable | None = None, initargs: tuple = ()) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes, spawned, not forked (a fork would copy this process's onnxruntime and
    OpenCV thread pools mid-state); each ignores Ctrl-C, which the main process handles (``stop_workers``), then
    runs ``initializer(*initargs)``. The workers are started here with Ctrl-C held back, so that one pressed
    while a worker is still starting, before it can ignore it, does not end it with a traceback and break the
    pool (it reaches the main process once they are started); ``close_pool`` ends it."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start, initargs=(initializer, initargs))
    with _ctrl_c_held():  # a started worker inherits it held, until it leaves Ctrl-C to this process
        for _ in range(workers):  # the pool starts a worker for each call while none is free
            pool.submit(int)
    return pool


def process_pool(start_method: str, workers: int, initializer: Callable | None = None,
                 initargs: tuple = ()) -> "multiprocessing.pool.Pool":
    """A ``multiprocessing`` Pool (``start_method`` "fork" or "spawn") of ``workers`` processes started as
    ``spawned_pool``'s are: Ctrl-C left to the main process (which ends the pool: no worker prints a traceback),
    each ending with it, then ``initializer(*initargs)``."""
    with _ctrl_c_held():  # the Pool starts its workers here
        return multiprocessing.get_context(start_method).Pool(workers, initializer=_start,
                                                              initargs=(initializer, initargs))


def close_pool(pool: ProcessPoolExecutor, at_once: bool = False) -> None:
    """Shut ``pool`` down and wait until its processes and its thread have ended: one still ending as Python
    exits may race it (Python 3.11 then prints "Bad file descriptor" from the pool's thread). ``at_once``: its
    work is abandoned, the workers ended first (``stop_workers``: a second Ctrl-C, a run given up)."""
    if at_once:
        stop_workers()
    pool.shutdown(wait=True, cancel_futures=True)


def stop_workers() -> None:
    """Ends every worker process at once (a second Ctrl-C, or a run given up): what they were doing is lost. On
    return they have ended (each waited for a few seconds at most), so none writes a file after it."""
    workers = multiprocessing.active_children()
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=5.0)


class FirstCtrlC:
    """Within it, a first Ctrl-C only sets ``pressed``: the caller stops where it chooses, so that no work is
    handed to a worker and then forgotten (a KeyboardInterrupt can land between the two). A second Ctrl-C raises
    KeyboardInterrupt at once. Outside the main thread, where Python takes no signal handler, Ctrl-C is as
    usual."""

    def __init__(self) -> None:
        self.pressed = False
        self._installed = False
        self._previous = None

    def __enter__(self) -> "FirstCtrlC":
        try:
            self._previous = signal.signal(signal.SIGINT, self._press)
            self._installed = True
        except ValueError:  # not the main thread
            pass
        return self

    def _press(self, signum, frame) -> None:
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True

    def __exit__(self, *exc) -> None:
        if self._installed:  # None: the handler before was not set from Python
            signal.signal(signal.SIGINT, signal.SIG_DFL if self._previous is None else self._previous)


def in_workers(fn: Callable, calls: Sequence[tuple], workers: int, block: int | None = None) -> Iterator:
    """``fn(*args)`` for each ``args`` of ``calls``, in their order (a generator), run in ``workers`` worker
    processes; ``block`` calls at a time (default all), each block done before any of it is handed on, so that
    what the caller does with them runs while the workers wait (a benchmark's timings stay its own). Closed
    early (Ctrl-C), it stops the workers at once; should a worker die (killed for memory), a KnockcamError."""
    from concurrent.futures.process import BrokenProcessPool

    if not calls:
        return
    block = block or len(calls)
    pool = spawned_pool(workers)
    finished = False
    try:
        for first in range(0, len(calls), block):
            futures = [pool.submit(fn, *args) for args in calls[first:first + block]]
            done = [future.result() for future in futures]
            if first + block >= len(calls):
                pool.shutdown()
                finished = True
            yield from done
    except BrokenProcessPool:
        raise KnockcamError("the worker processes stopped (out of memory?)", "run it again with --workers 1") from None
    finally:
        if not finished:
            close_pool(pool, at_once=True)


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Within it, Ctrl-C is held back in this thread, and so in the processes it starts, which inherit that: start
    worker processes in it and have each call ``_leave_ctrl_c_to_main`` first. (This process may still take a
    Ctrl-C through another of its threads: ``FirstCtrlC`` is for that.) Where the system cannot hold signals back,
    nothing changes."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _leave_ctrl_c_to_main() -> None:
    """A worker process's first step: it ignores Ctrl-C (the main process stops it), and one held back since it
    was started in ``_ctrl_c_held`` is dropped."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start(initializer: Callable | None, initargs: tuple) -> None:
    _leave_ctrl_c_to_main()
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


def _exit_with_parent(parent: int) -> None:
    """A worker whose main process is gone (killed outright, with no chance to stop its workers) ends too,
    instead of waiting for work forever with the models it loaded."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
