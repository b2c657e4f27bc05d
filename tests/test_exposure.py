"""``knockcam.exposure``: a colour cast measured on what should be white, and removed only past a bar."""

import numpy as np

from knockcam.exposure import colour_cast, scaled, white_balanced


def test_grey_has_no_cast_and_a_warm_white_has_the_log_of_its_channels_ratio():
    assert colour_cast((200, 200, 200)) == 0.0
    assert abs(colour_cast((99, 160, 199)) - np.log(2.0)) < 1e-9  # blue at half the red (+ 1 each)


def test_a_cast_over_the_bar_is_removed_and_one_under_it_is_left_alone():
    image = np.zeros((4, 4, 3), np.uint8)
    image[:2] = (100, 160, 200)  # the white, warm
    image[2:] = (20, 60, 150)  # a red token under the same light
    assert white_balanced(image, (100, 160, 200), cast_above=0.7) is image
    balanced = white_balanced(image, (100, 160, 200), cast_above=0.45)
    assert np.abs(balanced[0, 0].astype(int) - 200).max() <= 1  # the white made grey at its red level
    assert balanced[3, 0, 2] == 150 and balanced[3, 0, 0] == round(20 * 201 / 101)  # blue scaled as the white's


def test_scaled_clips_to_the_bytes_range():
    image = np.array([[[10, 100, 250]]], np.uint8)
    assert scaled(image, 2.0).tolist() == [[[20, 200, 255]]]
    assert scaled(image, (1.0, 0.5, 0.0)).tolist() == [[[10, 50, 0]]]


def test_scaled_gives_what_the_arithmetic_gives():
    image = np.random.default_rng(0).integers(0, 256, (40, 60, 3), dtype=np.uint8)
    for gains in (1.7, (2.0, 1.28, 1.0), (0.5, 1.0, 3.3)):
        expected = np.clip(image.astype(np.float32) * np.asarray(gains, np.float32) + 0.5, 0, 255).astype(np.uint8)
        assert np.array_equal(scaled(image, gains), expected)
    grey = image[..., 0].copy()
    assert np.array_equal(scaled(grey, 1.7), np.clip(grey * np.float32(1.7) + 0.5, 0, 255).astype(np.uint8))
