"""The round-by-round check: a still camera passes; a moved one is measured and re-registered."""

import cv2
import numpy as np

from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.motion import CameraWatch
from knockcam.calibrate.quality import corner_errors_mm


def test_still_camera_then_moved_camera(scene, board):
    watch = CameraWatch(scene.image, scene.truth, board)
    same = watch.check(scene.image)
    assert not same.moved and same.shift_mm < 0.5
    shift = np.array([[1, 0, 14.0], [0, 1, -9.0]])
    moved_img = cv2.warpAffine(scene.image, shift, scene.image.shape[1::-1], borderMode=cv2.BORDER_REFLECT)
    result = watch.check(moved_img)
    assert result.moved and result.shift_mm > 2.0
    truth_moved = Calibration("truth", scene.truth.image_size, np.vstack([shift, [0, 0, 1]]) @ scene.truth.homography)
    assert corner_errors_mm(result.calibration, truth_moved, board).max() < 1.5


def test_a_moved_camera_with_a_lens_is_re_registered_between_undistorted_pixels(scene, board):
    # through a k1 = -0.25 lens a bumped camera's motion is no homography in the photo as taken;
    # measured between undistorted pixels, where the calibration's homography lives, it is
    from knockcam.calibrate.grid import nominal_camera

    h, w = scene.image.shape[:2]
    k, d = nominal_camera((w, h)), np.array([-0.25, 0.0, 0.0, 0.0, 0.0])
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    src = cv2.undistortPoints(np.stack([xs.ravel(), ys.ravel()], 1).reshape(-1, 1, 2), k, d, P=k).reshape(h, w, 2)

    def through_lens(img):
        return cv2.remap(img, src[..., 0], src[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)

    shift = np.array([[1, 0, 14.0], [0, 1, -9.0], [0, 0, 1]])
    before = through_lens(scene.image)
    after = through_lens(cv2.warpPerspective(scene.image, shift, (w, h), borderMode=cv2.BORDER_REFLECT))
    watch = CameraWatch(before, Calibration("truth", (w, h), scene.truth.homography, k, d), board)
    assert not watch.check(before).moved
    result = watch.check(after)
    assert result.moved
    truth_moved = Calibration("truth", (w, h), shift @ scene.truth.homography, k, d)
    assert corner_errors_mm(result.calibration, truth_moved, board).max() < 0.75  # 1.98 mm in the photo's pixels


def test_the_empty_board_frame_is_found_on_a_photo_taken_from_elsewhere(scene, board):
    """knockcam score --reference: a photo from where the frame was taken needs nothing; one taken after the
    camera moved gets the homography carrying the frame onto it; one that shows something else is refused."""
    import pytest

    from knockcam.calibrate.motion import FrameOnto, carried
    from knockcam.errors import KnockcamError

    h, w = scene.image.shape[:2]
    frame_onto = FrameOnto(scene.image, (w, h), scene.truth, board)  # one frame, matched with each photo
    g, shift = frame_onto(scene.image)
    assert shift == 0.0 and np.array_equal(g, np.eye(3))
    move = np.vstack([cv2.getRotationMatrix2D((w / 2, h / 2), 1.0, 1.0), [0, 0, 1]])
    move[:2, 2] += (12.0, -8.0)
    photo = cv2.warpPerspective(scene.image, move, (w, h), borderMode=cv2.BORDER_REFLECT)
    g, shift = frame_onto(photo)
    corners = scene.truth.mm_to_px([(0, 0), (400, 0), (400, 915), (0, 915)]).reshape(-1, 1, 2)
    assert np.abs(cv2.perspectiveTransform(corners, g) - cv2.perspectiveTransform(corners, move)).max() < 1.0
    assert shift > 2.0
    assert np.abs(carried(scene.image, g, (w, h)).astype(int) - photo)[100:-100, 100:-100].mean() < 6
    noise = np.random.default_rng(0).integers(0, 256, scene.image.shape, dtype=np.uint8)
    with pytest.raises(KnockcamError, match="does not show the board as the photo does"):
        frame_onto(noise)


def test_a_phone_size_pair_is_matched_at_the_working_size(scene, board):
    """A phone's photo and frame: matched on copies scaled down, the move put back at full size."""
    from knockcam.calibrate.motion import FrameOnto

    size = (4032, 2268)
    frame = cv2.resize(scene.image, size, interpolation=cv2.INTER_CUBIC)
    move = np.array([[1.0, 0.0, 30.0], [0.0, 1.0, -20.0], [0.0, 0.0, 1.0]])
    photo = cv2.warpPerspective(frame, move, size, borderMode=cv2.BORDER_REFLECT)
    truth = scene.truth.resized(size)
    g, shift = FrameOnto(frame, size, truth, board)(photo)
    corners = truth.mm_to_px([(0, 0), (400, 0), (400, 915), (0, 915)]).reshape(-1, 1, 2)
    assert shift > 2.0
    assert np.abs(cv2.perspectiveTransform(corners, g) - cv2.perspectiveTransform(corners, move)).max() < 3.0
