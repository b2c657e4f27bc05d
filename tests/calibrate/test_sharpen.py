"""Sharpening a blurred photo: the blur read off the photo's cepstrum, and undone."""

import cv2
import numpy as np
import pytest

from knockcam.board.drawing import draw_board
from knockcam.calibrate.sharpen import Blur, blur_readings, kernel, sharpened


@pytest.fixture(scope="module")
def art(board):
    """The board's printed face, top-down (thin lines, bands, text: what a photo of it shows)."""
    return draw_board(board, px_per_mm=1.5)[:720, :560].copy()


def _jpeg(image, quality=85):
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.imdecode(data, cv2.IMREAD_COLOR)


def _blurred(image, blur):
    return cv2.filter2D(image, -1, kernel(blur, {**_cfg(), "soft_sigma_px": 0.5, "motion_shorten_px": 0.0}))


def _cfg():
    from knockcam.settings import load

    return load("calibrate")["sharpen"]


@pytest.mark.parametrize("length, angle", [(9.0, 30.0), (12.0, 100.0)])
def test_a_motion_blur_is_read_off_the_photo(art, length, angle):
    photo = _jpeg(_blurred(art, Blur("motion", length_px=length, angle_deg=angle)))
    motion = blur_readings(photo)[0]
    assert motion.kind == "motion"
    assert abs(motion.length_px - length) <= 2.5
    assert abs((motion.angle_deg - angle + 90) % 180 - 90) <= 8


def test_a_defocus_is_read_off_the_photo(art):
    photo = _jpeg(_blurred(art, Blur("defocus", radius_px=4.0)))
    defocus = [b for b in blur_readings(photo) if b.kind == "defocus"]
    assert defocus and abs(defocus[0].radius_px - 4.0) <= 1.0


def test_a_defocus_read_too_wide_is_not_undone(art):
    # undoing a defocus that wide leaves ghost lines the grid settles on (calibrate.yaml max_defocus_px)
    photo = _jpeg(_blurred(art, Blur("defocus", radius_px=7.0)))
    assert not [b for b in blur_readings(photo) if b.kind == "defocus"]
    wider = [b for b in blur_readings(photo, {**_cfg(), "max_defocus_px": 99.0}) if b.kind == "defocus"]
    assert wider and wider[0].radius_px >= _cfg()["max_defocus_px"]


def test_jpeg_blocks_are_not_read_as_a_blur(art):
    # a JPEG's 8 x 8 blocks make the cepstrum dip 8 px out along x and y, blurred or not
    photo = _jpeg(art, quality=55)
    for blur in blur_readings(photo):
        if blur.kind == "motion":
            d = blur.length_px * np.array([np.cos(np.radians(blur.angle_deg)), np.sin(np.radians(blur.angle_deg))])
            assert np.hypot(*(d - 8 * np.round(d / 8))) > 1.0
        else:
            assert blur.radius_px != 4.0


def test_sharpening_undoes_the_blur_it_was_given(art):
    blur = Blur("motion", length_px=10.0, angle_deg=45.0)
    photo = cv2.filter2D(art, -1, kernel(blur))
    sharp = sharpened(photo, blur)
    assert sharp.shape == photo.shape and sharp.dtype == np.uint8

    def off(image):  # RMS difference from the printed face, away from the borders
        inner = (slice(30, -30), slice(30, -30))
        return np.sqrt(np.mean((image[inner].astype(float) - art[inner]) ** 2))

    assert off(sharp) < 0.7 * off(photo)
    # a blur read wrong (across the real one) makes it worse: why the calibration judges each reading
    assert off(sharpened(photo, Blur("motion", length_px=10.0, angle_deg=135.0))) > off(photo)


def test_a_grey_photo_is_sharpened_in_grey(art):
    gray = cv2.cvtColor(art, cv2.COLOR_BGR2GRAY)
    out = sharpened(gray, Blur("defocus", radius_px=2.0))
    assert out.shape == gray.shape and out.dtype == np.uint8
    assert blur_readings(gray)  # a grey photo is read too


def test_a_blur_says_what_it_is():
    assert Blur("motion", length_px=9.4, angle_deg=30.2).describe() == "a motion blur of 9 px at 30 deg"
    assert Blur("defocus", radius_px=3.5).describe() == "a defocus blur of 3.5 px radius"
