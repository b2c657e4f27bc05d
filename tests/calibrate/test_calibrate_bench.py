"""knockcam calibrate bench's results file: corner errors, errors on the board, what the limit keeps."""

import numpy as np
import pytest

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
    import os

    results = {"auto (test)": {"errors": [np.zeros(4)], "board": [np.zeros(2)], "reported": [1.0], "failed": 0,
                               "seconds": [1.0]}}
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 3.0, 2.5))
    assert "other work shared the cores" in report(results, 0, 1.0)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.4, 1.5, 1.6))
    assert "other work shared the cores" not in report(results, 0, 1.0)


def test_offers_of_max_error_accepted_get_a_row_of_their_own():
    results = {"auto (test)": {
        "errors": [np.full(4, 0.5), np.full(4, 2.0), np.full(4, 5.0)], "board": [np.zeros(2)] * 3,
        "reported": [1.0, 4.2, 5.5], "offered": [False, True, False], "failed": 0, "seconds": [1.0] * 3}}
    text = report(results, 0, 1.0)
    assert "| auto (test) | 1 | 0.50 | 0.50 | 0 | 2 | 1 |" in text
    assert "| auto (test), 1 offers of --max-error accepted | 2 | 1.25 | 2.00 | 0 | 1 | 0 |" in text


def test_a_speed_check_is_written_and_read_back():
    from knockcam.bench import committed_speed
    from knockcam.calibrate.bench import speed_text

    line = speed_text({"automatic": 1612.4})
    assert committed_speed("# Calibration benchmark\n\n" + line + "\n") == {"automatic": 1612.0}
    results = {"auto (test)": {"errors": [np.zeros(4)], "board": [np.zeros(2)], "reported": [1.0], "failed": 0,
                               "seconds": [1.0]}}
    assert line in report(results, 0, 1.0, speed={"automatic": 1612.4})
    assert "Speed check" not in report(results, 0, 1.0)


def test_the_speed_check_times_the_automatic_calibration_of_the_first_held_out_photo(board, monkeypatch):
    import knockcam.calibrate.auto
    from knockcam.calibrate.bench import SPEED_PHOTO, _synth_photo, speed_check
    from knockcam.errors import KnockcamError

    photos = []

    def calibrate_auto(image, board, *lens):
        photos.append((image, lens))
        raise KnockcamError("board not found")  # a refusal is timed as the work done

    monkeypatch.setattr(knockcam.calibrate.auto, "calibrate_auto", calibrate_auto)
    speed = speed_check(board, repeats=2)
    assert list(speed) == ["automatic"] and speed["automatic"] > 0
    expected, _ = _synth_photo(board, SPEED_PHOTO)
    assert len(photos) == 3  # a warm-up and the two timed
    assert all(np.array_equal(image, expected) and lens == () for image, lens in photos)


def test_calibrate_bench_speed_compares_this_machine_with_the_results_file(tmp_path, capsys, monkeypatch):
    import knockcam.calibrate.bench
    from knockcam.calibrate.bench import speed_text
    from knockcam.cli import main

    monkeypatch.setattr(knockcam.calibrate.bench, "speed_check", lambda board: {"automatic": 3200.0})
    out = tmp_path / "calibration.md"
    assert main(["calibrate", "bench", "--speed", "--out", str(out)]) == 0
    assert "records no speed check" in capsys.readouterr().out and not out.exists()
    out.write_text("# Calibration benchmark\n\n" + speed_text({"automatic": 1600.0}) + "\n")
    assert main(["calibrate", "bench", "--speed", "--out", str(out)]) == 0
    assert "automatic: 3200 ms here, 1600 ms where" in capsys.readouterr().out
    assert out.read_text().count("Speed check") == 1  # the results file is only read


@pytest.mark.parametrize("counts", [["--scenes", "0"], ["--held-out", "-5"]])
def test_calibrate_bench_refuses_negative_counts_before_it_starts(tmp_path, capsys, counts):
    from knockcam.cli import main

    out = tmp_path / "calibration.md"
    assert main(["calibrate", "bench", *counts, "--out", str(out)]) == 2
    assert "calibrate bench needs --scenes 1 or more" in capsys.readouterr().err and not out.exists()


def _rec(index, worst, estimate, offered=False):
    return {"seed": 3100, "index": index, "worst_mm": worst, "estimate_mm": estimate, "grid_share": 0.9,
            "offered": offered, "source": "estimate"}


def test_tuning_records_are_summed_up_under_the_3_mm_limit():
    from knockcam.calibrate.bench import tuning_summary

    records = [_rec(0, 1.0, 1.5), _rec(1, 4.0, 2.0), _rec(2, 2.0, 3.5, offered=True), _rec(3, 9.0, 5.0, offered=True),
               _rec(4, 12.0, 40.0), {"seed": 3100, "index": 5, "failed": "board not found"}]
    assert tuning_summary(records) == {"renders": 6, "kept": 2, "bad kept": 1, "good refused": 1,
                                       "over 3 mm or not found": 4, "good offers": 1, "bad offers": 1}


def test_the_lens_focal_length_is_taken_out_of_k1():
    from knockcam.calibrate.bench import k1_at_nominal_focal
    from knockcam.calibrate.calibration import Calibration

    cam = np.array([[640.0, 0, 639.5], [0, 640.0, 359.5], [0, 0, 1]])  # half the nominal focal length, 1280 px
    cal = Calibration(method="truth", image_size=(1280, 720), homography=np.eye(3), camera_matrix=cam,
                      dist_coeffs=np.array([-0.1, 0.02, 0, 0, 0]))
    assert k1_at_nominal_focal(cal) == pytest.approx(-0.4)  # the same bend, seen at twice the focal length
    assert k1_at_nominal_focal(Calibration(method="truth", image_size=(1280, 720), homography=np.eye(3))) == 0.0


def test_a_tuning_record_says_which_lens_was_read_and_which_the_render_has(board):
    # detection scene 49129 (index 0): a strong barrel lens the automatic method reads off the printed lines
    from knockcam.calibrate.bench import tuning_records

    record = next(tuning_records(board, 49129, [0]))
    assert record["true_k1"] == pytest.approx(-0.497, abs=0.001)
    assert "lens distortion read" in record["source"]
    assert record["lens_k1"] == pytest.approx(record["true_k1"], abs=0.03)
    given = next(tuning_records(board, 49129, [0], lens_given=True))
    assert given["lens_k1"] is None and given["true_k1"] == record["true_k1"]


def test_tuning_changes_name_the_renders_whose_fate_or_error_moved():
    from knockcam.calibrate.bench import tuning_changes

    before = [_rec(0, 1.0, 1.5), _rec(1, 8.4, 1.6), _rec(2, 1.2, 1.4), {"seed": 3100, "index": 3, "failed": "no"}]
    after = [_rec(0, 1.1, 1.5), _rec(1, 1.1, 1.9), _rec(2, 1.2, 3.4), _rec(3, 2.0, 2.5), _rec(9, 1.0, 1.0)]
    lines = tuning_changes(before, after)
    assert lines == ["3100/1: kept, bad 8.40 mm (estimated 1.60) -> kept, good 1.10 mm (estimated 1.90)",
                     "3100/2: kept, good 1.20 mm (estimated 1.40) -> refused, good 1.20 mm (estimated 3.40)",
                     "3100/3: not found -> kept, good 2.00 mm (estimated 2.50)"]


def test_calibrate_tune_records_renders_and_compares_with_an_earlier_run(tmp_path, capsys):
    import json

    from knockcam.cli import main

    out = tmp_path / "now.jsonl"
    assert main(["calibrate", "tune", "--seed", "3007", "--first", "110", "--renders", "1", "--out", str(out)]) == 0
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["index"] == 110 and record["worst_mm"] < 3.0 and record["estimate_mm"] < 3.0
    assert capsys.readouterr().out.startswith("renders 1; kept 1; bad kept 0")
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_text(json.dumps({**record, "worst_mm": 7.5, "estimate_mm": 1.0}) + "\n")
    assert main(["calibrate", "tune", "--seed", "3007", "--first", "110", "--renders", "1",
                 "--compare", str(earlier)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("3007/110: kept, bad 7.50 mm (estimated 1.00) -> kept, good")
    assert "bad kept 1 -> 0" in printed[1]


def test_calibrate_tune_refuses_a_benchmark_seed_and_records_it_did_not_write(tmp_path, capsys):
    from knockcam.cli import main

    assert main(["calibrate", "tune", "--seed", "2026", "--renders", "1"]) == 2
    assert "held out for a benchmark" in capsys.readouterr().err
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    assert main(["calibrate", "tune", "--seed", "3007", "--renders", "1", "--compare", str(junk)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("knockcam: error: cannot read tuning records") and err.count("\n") == 1


def test_a_cut_photo_keeps_the_board_where_it_was_in_the_photo(board):
    """cut_photo: the crop moves every pixel, and the true calibration with it (lens included)."""
    from knockcam.calibrate.bench import _synth_photo, cut_photo
    from knockcam.calibrate.quality import board_corners_mm

    image, truth = _synth_photo(board, 0, seed=3011)
    corners = truth.mm_to_px(board_corners_mm(board))
    for side, axis, sign in (("left", 0, -1), ("top", 1, -1), ("right", 0, 1), ("bottom", 1, 1)):
        cut, moved = cut_photo(image, truth, board, side, 20)
        assert (cut.shape[1], cut.shape[0]) == tuple(moved.image_size)
        now = moved.mm_to_px(board_corners_mm(board))
        outermost = (sign * now[:, axis]).max() * sign
        edge = 0 if sign < 0 else cut.shape[1 - axis] - 1
        assert abs(abs(outermost - edge) - 20) <= 1.5  # that corner lies 20 px past the edge
        shift = corners - now  # a pure translation: the crop's offset
        assert np.ptp(shift, axis=0).max() < 1e-6


def test_a_turned_photo_keeps_every_point_of_the_board_where_the_turn_takes_it(board):
    """turned_photo: each board point lands where the quarter turn moves its pixel, lens (tangential terms
    included) and hump with it, both ways round."""
    from dataclasses import replace

    from knockcam.calibrate.bench import _synth_photo, turned_photo
    from knockcam.calibrate.calibration import Hump
    from knockcam.calibrate.quality import board_grid_mm

    image, truth = _synth_photo(board, 0, seed=3011)
    k = np.array([[900.0, 0.0, 610.0], [0.0, 905.0, 350.0], [0.0, 0.0, 1.0]])
    truth = replace(truth, camera_matrix=k, dist_coeffs=np.array([-0.2, 0.05, 0.004, -0.003, 0.0]),
                    hump=Hump(5.0, 2.0, board.size_mm, (0.3, -1.5, 0.0004)))
    h, w = image.shape[:2]
    grid = board_grid_mm(board)
    px = truth.mm_to_px(grid)
    for clockwise, expected in ((True, np.column_stack([h - 1 - px[:, 1], px[:, 0]])),
                                (False, np.column_stack([px[:, 1], w - 1 - px[:, 0]]))):
        turned, moved = turned_photo(image, truth, clockwise)
        assert turned.shape[:2] == (w, h) and tuple(moved.image_size) == (h, w)
        assert np.abs(moved.mm_to_px(grid) - expected).max() < 1e-6
        assert np.abs(moved.px_to_mm(expected) - grid).max() < 0.01  # undistortPoints iterates
        y, x = np.round(expected[len(grid) // 2]).astype(int)[::-1]
        sy, sx = np.round(px[len(grid) // 2]).astype(int)[::-1]
        assert np.array_equal(turned[y, x], image[sy, sx])  # the pixels turned the same way


def test_a_photo_saved_again_is_the_same_photo_with_other_compression_noise(board):
    """resaved: the "saved again" rows' photo keeps its size and content; only JPEG noise of a few levels moves."""
    from knockcam.calibrate.bench import RESAVE_QUALITY, _synth_photo, resaved

    image, _ = _synth_photo(board, 0, seed=3011)
    again = resaved(image)
    assert again.shape == image.shape and again.dtype == np.uint8
    change = np.abs(again.astype(int) - image.astype(int))
    assert 0 < change.mean() < 3 and change.max() > 0
    assert np.array_equal(resaved(image, RESAVE_QUALITY), again)  # the same every run


def test_the_bench_in_worker_processes_measures_what_it_measures_in_one(monkeypatch):
    """`knockcam calibrate bench --workers N` (one per CPU by default): the fixtures and scenes calibrated side by
    side give the rows of one process, each scene's corner noise drawn as one process draws it."""
    from knockcam.board import load_board
    from knockcam.calibrate import bench

    board = load_board()
    monkeypatch.setattr(bench, "_fixture_cases", lambda: ["all_16_tokens"])  # one fixture, one own scene: seconds
    alone = bench.run_methods(board, 1, held_out=0, workers=1)
    side_by_side = bench.run_methods(board, 1, held_out=0, workers=2)
    assert list(alone) == list(side_by_side) and len(alone) == 10  # the fixture's 4 methods, the own scene's 6
    for name, r in alone.items():
        other = side_by_side[name]
        assert (r["failed"], r["reported"], r["offered"]) == (other["failed"], other["reported"], other["offered"])
        assert all(np.array_equal(a, b) for a, b in zip(r["errors"] + r["board"], other["errors"] + other["board"]))


def test_a_report_of_workers_side_by_side_says_so_and_does_not_blame_other_work(monkeypatch):
    import os

    results = {"auto (test)": {"errors": [np.zeros(4)], "board": [np.zeros(2)], "reported": [1.0], "failed": 0,
                               "seconds": [1.0]}}
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 3.0, 2.5))  # its own two workers and their threads
    text = report(results, 12, 1.0, held_out=50, workers=2)
    assert "knockcam calibrate bench --scenes 12 --held-out 50 --workers 2`" in text
    assert "other work shared the cores" not in text and "its own 2 worker processes counted in it" in text
    assert "timed in 2 worker processes calibrating side by side" in text
    assert "worker processes" not in report(results, 12, 1.0, held_out=50)
