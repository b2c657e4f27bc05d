"""Atomic file writes for generated data: nothing is ever half-written."""

from __future__ import annotations

import json
from pathlib import Path

from knockcam.files import write_atomic


def write_bytes(path: Path, data: bytes) -> None:
    write_atomic(path, data)


def write_text(path: Path, text: str) -> None:
    write_atomic(path, text)


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")
