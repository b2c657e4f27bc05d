"""The detector's canonical view: each pixel shows the board point it stands for, humped boards too."""

import cv2
import numpy as np

from knockcam.board.layout import load_board
from knockcam.detect.canonical import warp_to_canonical
from knockcam.synth.camera import Camera, look_at

BOARD = load_board()


def _camera():
    w, l = BOARD.size_mm
    r, t = look_at(np.array([w / 2 - 100, -450.0, 750.0]), np.array([w / 2, l / 2, 0.0]), np.array([0, 0, 1.0]), 0.0)
    k = np.array([[1000.0, 0, 640], [0, 1000, 360], [0, 0, 1]])
    return Camera(k=k, r=r, t=t, dist=np.array([-0.05, 0.0, 0, 0, 0]), image_size=(1280, 720))


def _dot_seen_at(calibration, camera, xy_mm, z_mm, sigma_px=3.0):
    """Where (canonical px) a small bright dot on the board face at ``xy_mm``, ``z_mm`` up, shows."""
    photo = np.zeros((720, 1280, 3), np.float32)
    u, v = camera.project(np.array([[xy_mm[0], xy_mm[1], z_mm]]))[0]
    yy, xx = np.mgrid[0:720, 0:1280]
    photo[...] = 255 * np.exp(-((xx - u) ** 2 + (yy - v) ** 2) / (2 * sigma_px**2))[..., None]
    canon, view = warp_to_canonical(photo.astype(np.uint8), calibration, BOARD)
    grey = cv2.GaussianBlur(canon[..., 0].astype(np.float32), (0, 0), 1.0)
    r, c = np.unravel_index(np.argmax(grey), grey.shape)
    w = grey[r - 2:r + 3, c - 2:c + 3]
    dy, dx = np.mgrid[-2:3, -2:3]
    return np.array([c + (w * dx).sum() / w.sum(), r + (w * dy).sum() / w.sum()]), view


def test_a_point_on_a_humped_board_lands_on_its_own_canonical_pixel():
    camera = _camera()
    humped = camera.calibration(BOARD, (7.0, 2.0))
    xy = (230.0, 480.0)
    z = float(humped.hump.height_mm([xy])[0])
    seen, view = _dot_seen_at(humped, camera, xy, z)
    want = view.to_px([xy])[0]
    assert np.linalg.norm(seen - want) < 0.3  # canonical px (0.4 px/mm)
    flat_seen, _ = _dot_seen_at(camera.calibration(), camera, xy, z)
    assert np.linalg.norm(flat_seen - want) > 1.5  # read as flat, it lands millimetres away


def test_what_a_barrel_lens_shows_at_the_photo_corner_is_kept():
    """Undistorting the photo first, at its own size, cut off what a barrel lens pushes past the
    frame's edge; the canonical view samples the photo directly and keeps it, at its own pixel."""
    w, l = BOARD.size_mm
    r, t = look_at(np.array([w / 2, l / 2, 250.0]), np.array([w / 2, l / 2, 0.0]), np.array([1.0, 0, 0]), 0.0)
    k = np.array([[800.0, 0, 640], [0, 800, 360], [0, 0, 1]])
    camera = Camera(k=k, r=r, t=t, dist=np.array([-0.3, 0.05, 0, 0, 0]), image_size=(1280, 720))
    calibration = camera.calibration()
    xy = np.array([376.0, 776.0])  # board mm
    assert np.all(calibration.mm_to_px([xy])[0] < 45)  # the lens shows it near the photo's corner ...
    undistorted = cv2.perspectiveTransform(xy.reshape(1, 1, 2), calibration.homography).reshape(2)
    assert undistorted.min() < -20  # ... and outside the photo once undistorted at the photo's size
    # the camera is close (8 photo px per canonical px): a wide dot, cut by the photo's edge
    seen, view = _dot_seen_at(calibration, camera, xy, 0.0, sigma_px=12.0)
    assert np.linalg.norm(seen - view.to_px([xy])[0]) < 1.0  # canonical px (2.5 mm)
