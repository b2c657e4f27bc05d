"""knockcam calibrate bench's results file: corner errors, errors on the board, what the limit keeps."""

import numpy as np

from knockcam.calibrate.bench import report


def test_report_has_corner_and_board_errors_and_what_the_limit_keeps():
    results = {"auto (test)": {
        "errors": [np.array([0.2, 0.4, 0.6, 0.8]), np.array([1.0, 2.0, 4.0, 5.0])],
        "board": [np.array([0.1, 0.3]), np.array([0.5, 6.0])],
        "reported": [1.0, 2.5],  # both kept: the second is 5 mm off at a corner but says 2.5
        "failed": 1, "seconds": [1.0, 2.0]}}
    text = report(results, 0, 12.0)
    assert "| auto (test) | 3 | 1 | 0.90 | 4.30 | 5.00 | 50% | 0.40 / 6.00 | 1.75 | 1.50 |" in text
    assert "| auto (test) | 2 | 0.90 | 5.00 | 1 | 1 | 0 |" in text  # kept, median, worst, bad kept, refused, good refused


def test_report_warns_of_inflated_seconds_only_when_other_work_shared_the_cores(monkeypatch):
    from knockcam.calibrate import bench

    results = {"auto (test)": {"errors": [np.zeros(4)], "board": [np.zeros(2)], "reported": [1.0], "failed": 0,
                               "seconds": [1.0]}}
    monkeypatch.setattr(bench.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (3.5, 3.0, 2.5))
    assert "other work shared the cores" in report(results, 0, 1.0)
    monkeypatch.setattr(bench.os, "getloadavg", lambda: (1.4, 1.5, 1.6))
    assert "other work shared the cores" not in report(results, 0, 1.0)


def test_offers_of_max_error_accepted_get_a_row_of_their_own():
    results = {"auto (test)": {
        "errors": [np.full(4, 0.5), np.full(4, 2.0), np.full(4, 5.0)], "board": [np.zeros(2)] * 3,
        "reported": [1.0, 4.2, 5.5], "offered": [False, True, False], "failed": 0, "seconds": [1.0] * 3}}
    text = report(results, 0, 1.0)
    assert "| auto (test) | 1 | 0.50 | 0.50 | 0 | 2 | 1 |" in text
    assert "| auto (test), 1 offers of --max-error accepted | 2 | 1.25 | 2.00 | 0 | 1 | 0 |" in text
