"""Worker processes: calls run in them in order, and stopped at once by Ctrl-C."""

import multiprocessing
import operator
import os
import signal
import time

import pytest

from knockcam.errors import KnockcamError
from knockcam.workers import in_workers


def test_calls_come_back_in_their_order_a_block_at_a_time_or_all_at_once():
    calls = [(n, 10) for n in range(7)]
    assert list(in_workers(operator.mul, calls, 2, block=3)) == [n * 10 for n in range(7)]
    assert list(in_workers(operator.mul, calls, 2)) == [n * 10 for n in range(7)]
    assert list(in_workers(operator.mul, [], 2)) == []


def _no_workers_left(within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not multiprocessing.active_children()


def test_ctrl_c_while_the_workers_run_stops_them_at_once():
    def interrupt(*_):
        raise KeyboardInterrupt

    running = in_workers(time.sleep, [(30,)] * 4, 2)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)  # the workers are starting, or sleeping
        with pytest.raises(KeyboardInterrupt):
            next(running)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert _no_workers_left(within_s=2)  # not the half minute their calls would take


def test_a_worker_that_dies_is_one_line_that_says_what_to_do():
    with pytest.raises(KnockcamError, match=r"the worker processes stopped \(out of memory\?\): run it again with "
                                            "--workers 1"):
        list(in_workers(os._exit, [(1,)], 1))
    assert _no_workers_left(within_s=2)
