"""The default board file loads and keeps the rulebooks' known facts (RULES.md board facts)."""

import itertools
import math

import numpy as np
import pytest

from knockcam.board import COLOR_SETS, default_board_path, load_board
from knockcam.board.geometry import coverage
from knockcam.board.validate import overlap_area, polygon_area
from knockcam.errors import KnockcamError


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


# --- the default file's invariants (issue 3: a documented reconstruction) --------------------

SET_ORDER = ("brown", "light_blue", "pink", "orange", "red", "yellow", "green", "dark_blue")


def _box(space):
    xs = [x for x, _ in space.polygon]
    ys = [y for _, y in space.polygon]
    return min(xs), min(ys), max(xs), max(ys)


def _share_an_edge(a, b, min_length=20.0):
    """Whether two axis-aligned rectangular spaces touch along at least ``min_length`` mm."""
    ax0, ay0, ax1, ay1 = _box(a)
    bx0, by0, bx1, by1 = _box(b)
    if ax1 == bx0 or bx1 == ax0:
        return min(ay1, by1) - max(ay0, by0) >= min_length
    if ay1 == by0 or by1 == ay0:
        return min(ax1, bx1) - max(ax0, bx0) >= min_length
    return False


def test_default_board_size_spaces_and_kinds():
    board = load_board()
    width, length = board.size_mm
    assert 380 <= width <= 420 and 900 <= length <= 1000
    counts = {kind: len(board.of_kind(kind)) for kind in
              ("property", "house", "chance", "railroad", "luxury_tax", "free_parking", "go_to_jail")}
    assert counts == {"property": 22, "house": 2, "chance": 1, "railroad": 1, "luxury_tax": 1,
                      "free_parking": 1, "go_to_jail": 1}
    assert {len(board.color_set(s)) for s in ("brown", "dark_blue")} == {2}
    assert all(len(board.color_set(s)) == 3 for s in SET_ORDER[1:-1])


def test_default_board_token_is_stated():
    board = load_board()
    assert 15 <= board.token.base_diameter_mm <= 35 and board.token.height_mm > 0
    text = default_board_path().read_text(encoding="utf-8")
    assert "ASSUMED" in text and "RECONSTRUCTION" in text


def test_default_values_rise_with_the_set_and_along_the_board():
    board = load_board()
    for cheaper, dearer in zip(SET_ORDER, SET_ORDER[1:]):
        assert max(s.value for s in board.color_set(cheaper)) <= min(s.value for s in board.color_set(dearer))
    mean_y = [np.mean([(_box(s)[1] + _box(s)[3]) / 2 for s in board.color_set(c)]) for c in SET_ORDER]
    assert all(a <= b for a, b in zip(mean_y, mean_y[1:]))  # cheap near GO!, valuable far


def test_launch_area_behind_and_beyond_the_go_line_is_free():
    board = load_board()
    first_row = min(_box(s)[1] for s in board.spaces)
    assert 0 < board.go_line_y_mm < first_row - 100  # room to slide from behind GO! and run up


def test_every_space_is_comfortably_larger_than_a_token_base():
    board = load_board()
    d = board.token.base_diameter_mm
    disc = math.pi * d * d / 4
    for space in board.spaces:
        x0, y0, x1, y1 = _box(space)
        assert min(x1 - x0, y1 - y0) >= 2.5 * d, space.id
        assert abs(polygon_area(space.polygon)) >= 8 * disc, space.id
    centres = [((_box(s)[0] + _box(s)[2]) / 2, (_box(s)[1] + _box(s)[3]) / 2) for s in board.spaces]
    cov = coverage(board, centres)
    for space, rest in zip(board.spaces, cov):
        assert rest.space_id == space.id and rest.share == 1.0
        assert rest.margin_mm >= d, space.id  # a token can land a base-width off-centre and still count


def test_default_spaces_do_not_overlap():
    board = load_board()
    for a, b in itertools.combinations(board.spaces, 2):
        assert overlap_area(a.polygon, b.polygon) == 0.0, (a.id, b.id)


def test_hazards_sit_beside_valuable_spaces():
    board = load_board()
    values = sorted(s.value for s in board.properties)
    valuable = values[len(values) // 2]  # the median printed value
    for hazard in ("go_to_jail", "luxury_tax"):
        space = board.of_kind(hazard)[0]
        neighbours = [p for p in board.properties if _share_an_edge(space, p)]
        assert neighbours and max(p.value for p in neighbours) > valuable, hazard
    jail = board.of_kind("go_to_jail")[0]
    assert "dark_blue" in {p.color_set for p in board.properties if _share_an_edge(jail, p)}


def test_a_space_is_named_by_its_id_or_printed_name_and_a_typo_gets_the_nearest_ids():
    board = load_board()
    assert board.space_id("boardwalk") == "boardwalk"
    assert board.space_id("Virginia Avenue") == board.space_id("virginia avenue") == "virginia_avenue"
    assert board.space_id("Go to Jail") == "go_to_jail"
    with pytest.raises(KnockcamError, match="'House' names 2 spaces: give one of house_1, house_2"):
        board.space_id("House")
    with pytest.raises(KnockcamError, match="'bordwalk' is not a space of this board: did you mean boardwalk"):
        board.space_id("bordwalk")
    with pytest.raises(KnockcamError, match="did you mean off"):
        board.space_id("of", also=("off", "jail"))
    with pytest.raises(KnockcamError, match="one of off, jail, a space id .'knockcam board' lists them."):
        board.space_id("the kitchen", also=("off", "jail"))
    with pytest.raises(KnockcamError, match="unknown space id 'chanse' .*: did you mean chance"):
        board.space("chanse")
