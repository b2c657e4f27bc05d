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
