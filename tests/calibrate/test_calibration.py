"""The Calibration file round-trips and refuses what is not a calibration."""

import numpy as np
import pytest

from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError


def test_save_load_round_trip_keeps_everything(tmp_path, scene, board):
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    cal = Calibration("auto", (1280, 720), scene.truth.homography, k, np.array([-0.1, 0.02, 0, 0, 0]), 0.42,
                      "estimate: test")
    path = tmp_path / "sub" / "c.yaml"
    cal.save(path, board.size_mm)
    back = Calibration.load(path)
    assert back.error_source == "estimate: test" and back.error_mm == pytest.approx(0.42)
    pts = np.array([[0, 0], [400, 915], [123, 456]])
    assert np.allclose(back.mm_to_px(pts), cal.mm_to_px(pts), atol=1e-4)
    assert np.allclose(back.px_to_mm(back.mm_to_px(pts)), pts, atol=1e-3)
    assert not list(path.parent.glob("*.tmp"))


def test_not_a_calibration_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: auto\nhomography: [[1, 0], [0, 1]]\nimage_size: [10, 10]\n")
    with pytest.raises(KnockcamError, match="not a knockcam calibration"):
        Calibration.load(bad)
    with pytest.raises(KnockcamError, match="not found"):
        Calibration.load(tmp_path / "missing.yaml")
