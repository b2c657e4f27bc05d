"""A photo's light and colour cast evened out before it is read: the networks learned on bright renders
whose white balance is off by a few per cent, and the edge searches count contrast in grey levels.
Where the white is (the board's paper, or the photo's brightest parts) is measured by the stage that knows."""

from __future__ import annotations

import numpy as np


def scaled(image: np.ndarray, gains) -> np.ndarray:
    """``image`` (uint8) times ``gains`` (one number, or one per channel B, G, R), clipped to 0-255."""
    return np.clip(image.astype(np.float32) * np.asarray(gains, np.float32) + 0.5, 0, 255).astype(np.uint8)


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
