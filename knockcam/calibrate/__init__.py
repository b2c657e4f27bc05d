"""Calibration: where the board is in a photo (board millimetres <-> pixels), and how sure we are."""

from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.choose import calibrate

__all__ = ["Calibration", "calibrate"]
