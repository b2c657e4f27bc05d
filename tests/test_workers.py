"""Worker processes: calls run in them in order, stopped at once by Ctrl-C, ended with their main process."""

import multiprocessing
import operator
import os
import signal
import subprocess
import sys
import time

import pytest

from knockcam.errors import KnockcamError
from knockcam.workers import FirstCtrlC, in_workers
from processes import HAS_PROC, press_ctrl_c, running, still_running


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


def test_a_first_ctrl_c_is_noted_and_a_second_stops_at_once():
    before = signal.getsignal(signal.SIGINT)
    with FirstCtrlC() as ctrl_c:
        assert not ctrl_c.pressed
        press_ctrl_c()
        assert ctrl_c.pressed  # and no KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):
            press_ctrl_c()
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on Linux")
def test_ctrl_c_while_the_workers_start_reaches_the_main_process_alone(tmp_path):
    """Ctrl-C to the whole process group (as a terminal sends it) just as the pool is made, its workers still
    starting: the main process reads it, the workers do their work, nothing prints a traceback. Before, a
    worker still starting died of it with a traceback and the pool broke."""
    script = tmp_path / "main.py"
    script.write_text("import os, signal\n"
                      "from knockcam.workers import FirstCtrlC, close_pool, spawned_pool\n"
                      "if __name__ == '__main__':\n"
                      "    with FirstCtrlC() as ctrl_c:\n"
                      "        pool = spawned_pool(2)\n"
                      "        calls = [pool.submit(abs, -n) for n in range(6)]\n"
                      "        os.killpg(0, signal.SIGINT)  # the workers are still starting (importing)\n"
                      "        done = [call.result() for call in calls]\n"
                      "        close_pool(pool)\n"
                      "    print(done, ctrl_c.pressed, flush=True)\n")
    main = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert main.returncode == 0 and "Traceback" not in main.stderr, main.stderr
    assert main.stdout.split() == ["[0,", "1,", "2,", "3,", "4,", "5]", "True"]


@pytest.mark.skipif(not HAS_PROC, reason="reads the processes' states in /proc")
def test_workers_end_with_a_main_process_killed_outright(tmp_path):
    """A main process killed (SIGKILL: it cannot stop its workers) leaves no worker waiting for work forever."""
    script = tmp_path / "main.py"
    script.write_text("import os, time\n"
                      "from knockcam.workers import spawned_pool\n"
                      "if __name__ == '__main__':\n"
                      "    pool = spawned_pool(2)\n"
                      "    print(*{pool.submit(os.getpid).result() for _ in range(4)}, flush=True)\n"
                      "    time.sleep(60)\n")
    main = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in main.stdout.readline().split()]
    assert workers and all(running(pid) for pid in workers)
    main.kill()
    main.wait()
    left = still_running(workers, within_s=10)
    for pid in left:  # not to leave them behind the test run
        os.kill(pid, signal.SIGKILL)
    assert not left
