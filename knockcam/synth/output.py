"""Atomic file writes for generated data: nothing is ever half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, data) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")
