"""The default board file loads and keeps the rulebooks' known facts (RULES.md board facts)."""

from knockcam.board import COLOR_SETS, load_board


def test_default_board_has_every_colour_set_with_its_printed_bonus():
    board = load_board()
    assert board.set_bonus == {"brown": 400, "light_blue": 900, "pink": 1200, "orange": 1200,
                               "red": 1500, "yellow": 1500, "green": 1800, "dark_blue": 2000}
    assert {s.color_set for s in board.properties} == set(COLOR_SETS)
    assert len(board.properties) == 22


def test_default_board_keeps_known_printed_values():
    board = load_board()
    known = {"baltic_avenue": 100, "st_james_place": 200, "tennessee_avenue": 200, "atlantic_avenue": 250,
             "ventnor_avenue": 250, "marvin_gardens": 250, "park_place": 500, "boardwalk": 500}
    assert {sid: board.space(sid).value for sid in known} == known
    assert [s.id for s in board.color_set("red")] == ["kentucky_avenue", "indiana_avenue", "illinois_avenue"]
    assert len(board.of_kind("house")) == 2
