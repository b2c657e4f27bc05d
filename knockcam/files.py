"""Reading the files a user hands over (board, rounds, answers, game logs) with one-line errors, and
writing every file knockcam makes atomically (never half-written)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from knockcam.errors import KnockcamError


def read_text(path: str | Path, what: str, hint: str = "") -> str:
    """The UTF-8 text of ``path``; a missing or unreadable file is a KnockcamError naming ``what`` it is
    (e.g. "board file") and, for a missing one, ``hint`` on what to give instead."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KnockcamError(f"{what} not found: {path}" + (f" ({hint})" if hint else "")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KnockcamError(f"cannot read {what} {path}: {exc}") from None


def parse_json_or_yaml(text: str, path: str | Path) -> Any:
    """Parse ``text`` as JSON when ``path`` ends in .json, else as YAML; a syntax error says where it is."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise KnockcamError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise KnockcamError(f"{path}: not valid YAML: {problem}{at}") from None


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (text is written as UTF-8) to ``path`` through a temporary file and a rename:
    never half-written; the folder is made if needed. A failure is a KnockcamError saying where."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    blocker = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise KnockcamError(f"cannot write {path}: {blocker} is a file, not a folder (choose a writable place)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # the folder itself is not there, or not a folder: there is nothing to remove
            pass
        raise KnockcamError(f"cannot write {path}: {exc.strerror or exc} (choose a writable place)") from None
    return path
