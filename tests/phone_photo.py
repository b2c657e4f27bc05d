"""A phone's photo taken upright (portrait), as the phone stores it: the JPEG as the sensor saw it (landscape)
with an EXIF orientation saying how to turn it."""

from __future__ import annotations

import struct


def stored_on_its_side(jpeg: bytes, orientation: int = 6) -> bytes:
    """``jpeg`` with an EXIF block whose one entry is its orientation (6: turn 90 degrees clockwise to view)."""
    ifd = struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    exif = b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 8) + ifd
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif + jpeg[2:]
