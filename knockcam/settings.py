"""Tunable thresholds, one YAML file per pipeline stage in ``knockcam/data/<stage>.yaml``."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@lru_cache(maxsize=None)
def load(stage: str) -> dict[str, Any]:
    """The settings of one stage (``detect``, ``calibrate``, ...), read once and shared."""
    text = resources.files("knockcam.data").joinpath(f"{stage}.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text) or {}
