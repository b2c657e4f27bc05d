"""A photo's light and colour cast evened out before it is read: the networks learned on bright renders
whose white balance is off by a few per cent, and the edge searches count contrast in grey levels.
Where the white is (the board's paper, or the photo's brightest parts) is measured by the stage that knows."""

from __future__ import annotations

import cv2
import numpy as np


def scaled(image: np.ndarray, gains) -> np.ndarray:
    """``image`` (uint8) times ``gains`` (one number, or one per channel B, G, R), rounded and clipped to 0-255.
    Through a lookup table per channel: a phone's 12 MP photo in floats takes 145 MB and 0.74 s, this 37 ms."""
    channels = image.shape[2] if image.ndim == 3 else 1
    gains = np.broadcast_to(np.asarray(gains, np.float32).reshape(-1), (channels,))
    levels = np.arange(256, dtype=np.float32)
    table = np.stack([np.clip(levels * g + 0.5, 0, 255).astype(np.uint8) for g in gains], axis=1)
    return cv2.LUT(image, table.reshape(256, 1, channels) if channels > 1 else table.reshape(256))


def without_colour(image: np.ndarray, min_chroma: float) -> bool:
    """Whether ``image`` shows no colour at all: under 1% of its pixels (every 8th row and column) have
    channels ``min_chroma`` apart (0-255). A black-and-white camera or a night mode gives such a photo: the
    tokens' sides cannot be told apart in it, and the board is found less often."""
    blue, green, red = cv2.split(cv2.resize(image, (max(image.shape[1] // 8, 1), max(image.shape[0] // 8, 1)),
                                            interpolation=cv2.INTER_NEAREST))
    chroma = cv2.max(cv2.max(blue, green), red) - cv2.min(cv2.min(blue, green), red)  # uint8: max >= min
    return np.count_nonzero(chroma >= min_chroma) < 0.01 * chroma.size


def colour_cast(white_bgr) -> float:
    """How far from grey something white is seen (B, G, R): the natural log of its strongest channel
    over its weakest; 0 for grey, 0.69 for a blue channel at half the red (a lamp's warm light)."""
    white = np.asarray(white_bgr, np.float64) + 1.0  # + 1: a black channel stays finite
    return float(np.log(white.max() / white.min()))


def white_balanced(image: np.ndarray, white_bgr, cast_above: float) -> np.ndarray:
    """``image`` with each channel scaled so that ``white_bgr`` (its white, as seen) is grey at its strongest
    channel's level, when its cast is over ``cast_above``; otherwise ``image`` itself. What is measured as the
    white must be white in daylight (the board's paper): anything else would be greyed."""
    if colour_cast(white_bgr) <= cast_above:
        return image
    white = np.asarray(white_bgr, np.float64) + 1.0
    return scaled(image, white.max() / white)
