"""The payout table fits the terminal: a column per rule when wide, a block per side when narrow."""

import io
from pathlib import Path

import pytest
from rich.console import Console

from knockcam.board import load_board
from knockcam.report.tables import WIDE_COLUMNS, round_tables
from knockcam.rules import load_file, parse_round, score_round

ROUND = Path(__file__).resolve().parents[2] / "fixtures" / "rounds" / "rulebook_example.json"
BOARD = load_board()


def _printed(width: int) -> str:
    result = score_round(parse_round(load_file(ROUND), BOARD, "r"), BOARD, "r")
    console = Console(file=io.StringIO(), width=width, color_system=None)
    sides, pot, _ = round_tables(result, BOARD, width=width)
    console.print(sides)
    console.print(pot)
    return console.file.getvalue()


@pytest.mark.parametrize("width", [80, 100])
def test_a_narrow_terminal_gets_every_name_whole(width):
    text = _printed(width)
    assert "…" not in text
    assert "Atlantic Avenue" in text and "St. James Place" in text and "yellow set" in text
    assert "2,500 (+2,500)" in text and "E3d" in text and "Luxury Tax" in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_a_wide_terminal_gets_a_column_per_rule():
    text = _printed(WIDE_COLUMNS + 40)
    header = next(line for line in text.splitlines() if "Side" in line)
    assert "Before" in header and "After" in header
    assert "2,500 (+2,500)" in text
