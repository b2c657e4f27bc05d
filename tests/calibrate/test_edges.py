"""The board's sides to a fraction of a pixel: where the camera sees the board's edge face."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.calibrate.edges import edge_width_px, side_face_px

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
needs_fixtures = pytest.mark.skipif(not (SCENES / "overhead.json").exists(), reason="synth fixtures not generated")


@needs_fixtures
@pytest.mark.parametrize("name", ["oblique_60", "empty_board", "overhead"])
def test_side_face_is_predicted_where_the_camera_sees_it(board, name):
    data = json.loads((SCENES / f"{name}.json").read_text())
    cam = data["camera"]
    k, r, t = np.array(cam["camera_matrix"]), np.array(cam["rotation"]), np.array(cam["tvec_mm"])

    def project(p):
        x = k @ (r @ np.asarray(p, float) + t)
        return x[:2] / x[2]

    w, l = board.size_mm
    corners = np.array([project([x, y, 0.0]) for x, y in [(0, 0), (w, 0), (w, l), (0, l)]])
    face = side_face_px(corners, board, tuple(data["image_size"]))
    mids = [((w / 2, 0), (0, -1)), ((w, l / 2), (1, 0)), ((w / 2, l), (0, 1)), ((0, l / 2), (-1, 0))]
    for a, ((x, y), (ox, oy)) in enumerate(mids):
        down = project([x, y, -1.0]) - project([x, y, 0.0])
        out = project([x + ox, y + oy, 0.0]) - project([x, y, 0.0])
        seen = max(0.0, float(down @ out / np.linalg.norm(out)))
        assert face[a] == pytest.approx(seen, abs=0.15)


@pytest.mark.parametrize("sigma", [0.0, 2.0, 4.0, 6.0])
def test_an_edge_blurred_looks_as_wide_as_its_blur(sigma):
    """A light board on a dark table, blurred: each side's edge is as wide at half height as a Gaussian
    step's gradient, sqrt(sigma^2 + 0.9^2) x 2.355 (0.9 px: the smoothing the edges are looked at with, and
    a drawn edge's own pixel of anti-aliasing)."""
    photo = np.full((480, 640, 3), 40, np.uint8)
    corners = np.array([[150.0, 400.0], [500.0, 380.0], [450.0, 100.0], [180.0, 90.0]])  # anticlockwise on screen
    cv2.fillPoly(photo, [np.round(corners * 16).astype(np.int32)], (220, 220, 220), cv2.LINE_AA, shift=4)
    if sigma:
        photo = cv2.GaussianBlur(photo, (0, 0), sigma)
    widths = edge_width_px(photo, corners)
    assert widths == pytest.approx(2.355 * np.hypot(sigma, 0.9), abs=0.5)
