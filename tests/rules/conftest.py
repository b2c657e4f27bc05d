"""Fixtures for the rules-engine tests: the default board and ``play`` (score a round written compactly)."""

from __future__ import annotations

import pytest
from rules_helpers import build

from knockcam.board import load_board
from knockcam.rules import score_round


@pytest.fixture(scope="session")
def board():
    return load_board()


@pytest.fixture
def play(board):
    """Score a round on the default board: play(order, tokens, **options) -> RoundResult."""
    def _play(order, tokens, **options):
        return score_round(build(order, tokens, **options), board)
    return _play
