"""The calibration cache (knockcam/calibrate/cache.py): automatic calibrations kept exactly, keyed by the photo,
the board, the limit and everything the calibration reads, so that a benchmark reading them gives the answers
finding them again would."""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from knockcam.bench import Tally, run, scene_calibrations
from knockcam.board import load_board
from knockcam.calibrate.cache import MODULES, NOT_READ, PACKAGES, SETTINGS, CalibrationCache
from knockcam.calibrate.calibration import Calibration, Hump

BOARD = load_board()
PHOTO = Path(__file__).resolve().parents[2] / "fixtures" / "scenes" / "all_16_tokens.jpg"


def odd_calibration() -> Calibration:
    """A calibration with a lens and a hump, its numbers with more digits than a calibration file keeps."""
    h = np.array([[1.0123456789012345, 0.1234567890123, 300.12345678901234],
                  [0.0212345678901234, -0.9876543210987, 650.98765432109876],
                  [1.234567890123e-5, 3.21098765432109e-4, 1.0]])
    k = np.array([[1000.123456789, 0.0, 640.5], [0.0, 1001.987654321, 360.25], [0.0, 0.0, 1.0]])
    return Calibration(method="auto", image_size=(1280, 720), homography=h, camera_matrix=k,
                       dist_coeffs=np.array([-0.1234567891234, 0.0123456789123, 0.0, 0.0, 0.0]),
                       error_mm=2.71828182845904, error_source="an estimate", created="2026-12-07T07:00:00+00:00",
                       hump=Hump(3.14159265358979, 0.5772156649015, (400.0, 915.0),
                                 (0.01234567890123456, -0.9876543210987654, 1.1111111111111e-5)),
                       grid_share=0.61803398874989)


def test_a_kept_calibration_is_read_back_exactly(tmp_path):
    cache = CalibrationCache(tmp_path / "cache")
    cal = odd_calibration()
    cache.put("k", cal, 1234.5)
    back, took = cache.get("k")
    assert took == 1234.5
    assert back.homography.tobytes() == cal.homography.tobytes()
    assert back.camera_matrix.tobytes() == cal.camera_matrix.tobytes()
    assert back.dist_coeffs.tobytes() == cal.dist_coeffs.tobytes()
    assert back.hump == cal.hump
    assert (back.method, back.image_size, back.error_mm, back.error_source, back.created, back.grid_share) == \
        (cal.method, cal.image_size, cal.error_mm, cal.error_source, cal.created, cal.grid_share)
    # a board not found is kept too, as such; and what was never kept is not there
    cache.put("not found", None, None)
    assert cache.get("not found") == (None, None)
    assert cache.get("never") is None


def test_a_damaged_entry_is_found_again_not_trusted(tmp_path):
    cache = CalibrationCache(tmp_path)
    cache.put("k", odd_calibration(), 10.0)
    path = tmp_path / "k.json"
    path.write_text(path.read_text()[:40])  # cut short, as by a full disk
    assert cache.get("k") is None
    path.write_text(json.dumps({"calibration": {"method": "auto"}, "ms": 3}))  # not a calibration
    assert cache.get("k") is None


def test_the_key_changes_with_the_photo_the_board_and_the_limit(tmp_path):
    cache = CalibrationCache(tmp_path)
    image = np.zeros((72, 128, 3), np.uint8)
    key = cache.key(image, BOARD, 6.0)
    assert cache.key(image.copy(), BOARD, 6.0) == key
    other = image.copy()
    other[5, 7, 1] = 1  # one pixel's green
    assert cache.key(other, BOARD, 6.0) != key
    assert cache.key(image, BOARD, 3.0) != key
    assert cache.key(image, replace(BOARD, go_line_y_mm=BOARD.go_line_y_mm + 1), 6.0) != key
    assert cache.key(image.reshape(128, 72, 3), BOARD, 6.0) != key  # the same bytes, another shape
    # the same board read from another file (another checkout's board.yaml: a benchmark run from a clean clone)
    assert cache.key(image, replace(BOARD, source="/elsewhere/board.yaml"), 6.0) == key


def test_the_fingerprint_covers_everything_the_automatic_calibration_reads():
    """Calibrating a photo in a fresh process loads no knockcam module and reads no settings file outside what
    the fingerprint hashes: a change anywhere else cannot change a calibration the cache keeps."""
    script = f"""
import sys
from knockcam import settings
read = []
load = settings.load
settings.load = lambda stage: read.append(stage) or load(stage)
import cv2
from knockcam.board import load_board
from knockcam.calibrate import calibrate
from knockcam.errors import KnockcamError
try:
    calibrate(cv2.imread({str(PHOTO)!r}), load_board(), max_error_mm=6.0)
except KnockcamError:
    pass
print(sorted(m for m in sys.modules if m == "knockcam" or m.startswith("knockcam.")))
print(sorted(set(read)))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    modules, stages = (eval(line) for line in out.strip().splitlines()[-2:])
    assert "knockcam.calibrate.auto" in modules and "calibrate" in stages  # it did calibrate
    outside = [m for m in modules if m not in MODULES and not any(m == p or m.startswith(p + ".") for p in PACKAGES)]
    assert outside == [] and not set(NOT_READ) & set(modules)
    assert set(stages) <= set(SETTINGS)


def test_a_benchmark_reading_the_cache_gives_the_answers_of_one_finding_the_calibrations(tmp_path):
    cache = tmp_path / "cache"
    first_tallies, first = run(BOARD, 2, 5, model=None, cache_dir=str(cache))
    again_tallies, again = run(BOARD, 2, 5, model=None, cache_dir=str(cache))
    assert first["calibrations_kept"] == 0 and again["calibrations_kept"] == 4  # two scenes, photo and frame each
    assert len(list(cache.glob("*.json"))) == 4
    assert again["calibration_ms"] == first["calibration_ms"]  # as timed when they were found
    counts = [{k: v for k, v in vars(t).items() if k not in ("ms", "cpu_ms")} for t in first_tallies]
    assert counts == [{k: v for k, v in vars(t).items() if k not in ("ms", "cpu_ms")} for t in again_tallies]
    assert any(t.calibration_failures == 0 and t.name.endswith("auto calibration") for t in again_tallies)
    # and a scene's calibrations read back are those found
    found, kept = scene_calibrations(BOARD, 5, 6.0), scene_calibrations(BOARD, 5, 6.0, cache_dir=str(cache))
    assert kept[3] == 2 and found[3] == 0
    for a, b in zip(found[:2], kept[:2]):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.homography.tobytes() == b.homography.tobytes() and a.error_mm == b.error_mm


def test_the_results_file_says_which_calibrations_came_from_the_cache():
    from knockcam.bench import report

    text = report([Tally("x")], {"calibration_ms": [900.0], "calibrations_kept": 4, "calibration_cache": "/c"},
                  "knockcam bench", 2, 7, "m")
    assert "4 automatic calibrations were read from the calibration cache (/c:" in text
    assert "calibration cache" not in report([Tally("x")], {"calibration_ms": [900.0]}, "knockcam bench", 2, 7, "m")
