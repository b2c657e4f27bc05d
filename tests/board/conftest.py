"""Shared helpers for board tests: the default board file as editable data."""

import copy

import pytest
import yaml

from knockcam.board.layout import default_board_path

_DEFAULT = yaml.safe_load(default_board_path().read_text(encoding="utf-8"))


@pytest.fixture
def board_data():
    """A fresh, mutable copy of the default board file's parsed YAML."""
    return copy.deepcopy(_DEFAULT)
