"""A phone's photo taken upright (portrait), as the phone stores it: the JPEG as the sensor saw it (landscape)
with an EXIF orientation saying how to turn it."""

from __future__ import annotations

import struct


def stored_on_its_side(jpeg: bytes, orientation: int = 6) -> bytes:
    """``jpeg`` with an EXIF block whose one entry is its orientation (6: turn 90 degrees clockwise to view)."""
    ifd = struct.pack("<H", 1) + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0)
    exif = b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 8) + ifd
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif + jpeg[2:]


def with_thumbnail(jpeg: bytes, thumbnail: bytes) -> bytes:
    """``jpeg`` with an EXIF block holding a small preview JPEG, as cameras write: the file then has two end
    markers, the preview's inside the EXIF block and the photo's own at the end."""
    exif = b"Exif\x00\x00" + b"II*\x00" + struct.pack("<I", 8) + struct.pack("<HI", 0, 0) + thumbnail
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(exif) + 2) + exif + jpeg[2:]


def motion_photo(jpeg: bytes) -> bytes:
    """``jpeg`` as a phone's "motion photo" stores it: a short MP4 video after the JPEG's end marker."""
    return jpeg + b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(4096) + b"\x00\x00\x00\x08mdat"
