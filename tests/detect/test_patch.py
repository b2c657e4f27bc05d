"""Patches around candidate bases, shared by the networks that look again at each token."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.calibrate.calibration import Calibration
from knockcam.detect import patch
from knockcam.detect.reference import viewpoint
from knockcam.errors import KnockcamError

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
GEOMETRY = {"size_px": 64, "mm_per_px": 1.25, "behind_mm": 30.0}


def scene(name):
    truth = json.loads((SCENES / f"{name}.json").read_text())
    return cv2.imread(str(SCENES / truth["image"])), Calibration.from_dict(truth["calibration"])


def bilinear(image, xy):
    return cv2.getRectSubPix(image, (1, 1), (float(xy[0]), float(xy[1])))[0, 0].astype(float)


@pytest.mark.parametrize("name", ["oblique_60", "lens_distortion"])
def test_the_patch_has_the_base_behind_its_middle_and_looks_away_from_the_camera(name):
    image, cal = scene(name)
    xy = np.array([210.0, 480.0])
    nadir = viewpoint(cal).nadir_mm
    cut = patch.patches(image, cal, [xy], nadir, GEOMETRY)[0]
    assert cut.shape == (64, 64, 3)
    away = (xy - nadir) / np.linalg.norm(xy - nadir)
    across = np.array([away[1], -away[0]])
    for row, col in [(39, 31), (39, 10), (15, 31), (60, 50)]:  # row 39 is the base: (63 - 39) * 1.25 = 30 mm
        mm = xy + ((63 - row) * 1.25 - 30.0) * away + (col - 31.5) * 1.25 * across
        assert np.allclose(cut[row, col], bilinear(image, cal.mm_to_px([mm])[0]), atol=2.0), (row, col)


def test_more_patches_than_one_remap_holds_are_cut_as_each_alone():
    """cv2.remap refuses maps of 32767 rows or more: 600 patches of 64 px are cut in parts, alike."""
    image, cal = scene("oblique_60")
    rng = np.random.default_rng(0)
    xy = np.column_stack([rng.uniform(50, 450, 600), rng.uniform(100, 900, 600)])
    nadir = viewpoint(cal).nadir_mm
    cut = patch.patches(image, cal, xy, nadir, GEOMETRY)
    assert cut.shape == (600, 64, 64, 3)
    for k in (0, 511, 512, 599):
        assert np.array_equal(cut[k], patch.patches(image, cal, xy[k:k + 1], nadir, GEOMETRY)[0])


def test_directions_point_away_from_the_camera_foot_and_across_to_the_right():
    away, across = patch.directions([[3.0, 4.0], [0.2, 0.1]], [0.0, 0.0])
    assert np.allclose(away[0], [0.6, 0.8]) and np.allclose(across[0], [0.8, -0.6])
    assert np.allclose(away[1], [0.0, 1.0])  # straight under the camera: +y is taken as away


def test_a_standing_figure_leans_more_far_from_the_camera_and_none_below_it():
    lean = patch.lean_mm([[0.0, 0.0], [300.0, 400.0]], np.array([0.0, 0.0, 1028.0]), 28.0)
    assert lean[0] == pytest.approx(0.0)
    assert lean[1] == pytest.approx(500.0 * 28.0 / 1000.0)  # similar triangles: distance * h / (H - h)


def test_the_network_input_is_the_colour_and_a_lean_channel():
    batch = np.full((2, 64, 64, 3), 255, np.uint8)
    x = patch.network_input(batch, np.array([0.0, 15.0]))
    assert x.shape == (2, 4, 64, 64) and x.dtype == np.float32
    assert np.allclose(x[:, :3], 1.0)
    assert np.allclose(x[0, 3], 0.0) and np.allclose(x[1, 3], 15.0 / patch.LEAN_SCALE_MM)


def test_the_network_input_keeps_every_channel_given():
    batch = np.zeros((1, 8, 8, 6), np.uint8)
    assert patch.network_input(batch, np.array([3.0])).shape == (1, 7, 8, 8)


def test_a_photo_pair_cuts_each_base_once_and_answers_as_a_fresh_cut_does(monkeypatch):
    from knockcam.board import load_board

    image, cal = scene("oblique_60")
    board = load_board()
    pair = patch.PhotoPair(image, 255 - image, cal, board)
    first = pair.network_input([[200.0, 400.0], [100.0, 700.0]], GEOMETRY)
    fresh = patch.network_input(*patch.around([image, 255 - image], cal, board, [[100.0, 700.0]], GEOMETRY))
    assert first.shape == (2, 7, 64, 64) and np.array_equal(first[1], fresh[0])
    cut = []
    real_around = patch.around
    monkeypatch.setattr(patch, "around", lambda *a: cut.append(len(a[3])) or real_around(*a))
    again = pair.network_input([[100.0, 700.0], [300.0, 500.0], [200.0, 400.0]], GEOMETRY)
    assert cut == [1]  # only the base not seen before is cut
    assert np.array_equal(again[0], first[1]) and np.array_equal(again[2], first[0])
    assert pair.network_input([], GEOMETRY).shape == (0, 7, 64, 64)


def test_a_photo_alone_gives_the_photos_channels_and_the_lean_as_a_pair_does_without_the_empty_frame():
    from knockcam.board import load_board

    image, cal = scene("oblique_60")
    board = load_board()
    xy = [[200.0, 400.0], [100.0, 700.0]]
    alone = patch.PhotoPair(image, None, cal, board)
    pair = patch.PhotoPair(image, 255 - image, cal, board)
    assert alone.network_input(xy, GEOMETRY).shape == (2, 4, 64, 64)
    assert np.array_equal(alone.network_input(xy, GEOMETRY), pair.photo_and_lean(xy, GEOMETRY))
    assert np.array_equal(alone.photo_and_lean(xy, GEOMETRY), alone.network_input(xy, GEOMETRY))
    assert alone.network_input([], GEOMETRY).shape == (0, 4, 64, 64)


def test_a_file_that_is_no_network_is_a_clear_error_naming_the_remedy(tmp_path):
    class Example(patch.PatchClassifier):
        what = "the example network"
        remedy = " (make it again)"

    bad = tmp_path / "example.onnx"
    bad.write_bytes(b"not a network")
    with pytest.raises(KnockcamError, match=r"cannot load the example network .*\(make it again\)"):
        Example(bad)
