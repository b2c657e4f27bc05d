"""A regular (non-editable) install ships every network models/ holds."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_shipped_network_is_installed_with_the_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["data-files"]["share/knockcam/models"]
    installed = {p for pattern in patterns for p in ROOT.glob(pattern)}
    networks = set((ROOT / "models").glob("*.onnx"))
    assert networks and networks <= installed
