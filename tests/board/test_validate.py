"""Every board-file mistake gets its own one-line KnockcamError naming file, space and field."""

import pytest
import yaml

from knockcam.board.layout import board_from_dict, load_board
from knockcam.board.validate import overlap_area
from knockcam.errors import KnockcamError

SRC = "my-board.yaml"


def space_of(data, sid):
    """The parsed YAML mapping of one space."""
    return next(item for item in data["spaces"] if item["id"] == sid)


def error_for(data) -> str:
    with pytest.raises(KnockcamError) as info:
        board_from_dict(data, source=SRC)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(SRC)
    return message


def test_default_data_is_valid(board_data):
    assert len(board_from_dict(board_data, source=SRC).spaces) == 29


def test_unknown_kind(board_data):
    space_of(board_data, "chance")["kind"] = "community_chest"
    message = error_for(board_data)
    assert "'chance'" in message and "kind" in message and "community_chest" in message


def test_duplicate_id(board_data):
    space_of(board_data, "house_2")["id"] = "house_1"
    message = error_for(board_data)
    assert "'house_1'" in message and "duplicate id" in message


def test_polygon_not_simple_when_edges_cross(board_data):
    space_of(board_data, "baltic_avenue")["polygon"] = [[86, 305], [162, 390], [162, 305], [86, 390]]  # bow tie
    message = error_for(board_data)
    assert "'baltic_avenue'" in message and "polygon" in message and "not simple" in message


def test_polygon_not_simple_when_a_point_repeats(board_data):
    space_of(board_data, "baltic_avenue")["polygon"] = [[86, 305], [162, 305], [162, 305], [162, 390], [86, 390]]
    message = error_for(board_data)
    assert "'baltic_avenue'" in message and "polygon" in message and "repeated" in message


def test_polygon_not_simple_when_it_folds_back(board_data):
    space_of(board_data, "baltic_avenue")["polygon"] = [[86, 305], [162, 305], [120, 305], [120, 390]]
    message = error_for(board_data)
    assert "'baltic_avenue'" in message and "not simple" in message


def test_polygon_without_area(board_data):
    space_of(board_data, "baltic_avenue")["polygon"] = [[86, 305], [120, 305], [162, 305]]
    message = error_for(board_data)
    assert "'baltic_avenue'" in message and "not simple" in message


def test_polygon_outside_the_board(board_data):
    space_of(board_data, "boardwalk")["polygon"] = [[263, 815], [390, 815], [390, 930], [263, 930]]
    message = error_for(board_data)
    assert "'boardwalk'" in message and "polygon" in message and "outside the board" in message and "930" in message


def test_overlapping_spaces(board_data):
    space_of(board_data, "baltic_avenue")["polygon"] = [[80, 305], [162, 305], [162, 390], [80, 390]]
    message = error_for(board_data)
    assert "'mediterranean_avenue'" in message and "'baltic_avenue'" in message and "overlaps" in message
    assert "510 mm²" in message  # 6 mm x 85 mm


def test_space_inside_another_overlaps(board_data):
    space_of(board_data, "chance")["polygon"] = [[20, 320], [40, 320], [40, 340], [20, 340]]  # inside Mediterranean
    message = error_for(board_data)
    assert "overlaps" in message and "'chance'" in message


def test_colour_set_without_bonus(board_data):
    del board_data["set_bonus"]["green"]
    message = error_for(board_data)
    assert "'pacific_avenue'" in message and "green" in message and "set_bonus" in message


@pytest.mark.parametrize("value", [0, -100, None, 2.5, "M200"])
def test_property_without_positive_value(board_data, value):
    space = space_of(board_data, "park_place")
    if value is None:
        del space["value"]
    else:
        space["value"] = value
    message = error_for(board_data)
    assert "'park_place'" in message and "value" in message


@pytest.mark.parametrize("amount", [-400, 400.5, float("nan"), True, "M400"])
def test_set_bonus_must_be_a_whole_amount(board_data, amount):
    board_data["set_bonus"]["brown"] = amount  # NaN stopped the rules engine with a ValueError; 400.5 was cut to 400
    message = error_for(board_data)
    assert "set_bonus.brown must be a whole number of M, at least 0" in message


@pytest.mark.parametrize("where", ["size", "polygon", "token"])
def test_a_length_that_is_not_finite_is_refused(board_data, where):
    if where == "size":
        board_data["size_mm"][1] = float("inf")
    elif where == "polygon":
        space_of(board_data, "boardwalk")["polygon"][0][0] = float("nan")
    else:
        board_data["token"]["base_diameter_mm"] = float("nan")
    assert "must be a number, not" in error_for(board_data)


@pytest.mark.parametrize("kind", ["railroad", "chance", "luxury_tax", "free_parking", "go_to_jail", "house"])
def test_required_kind_missing(board_data, kind):
    board_data["spaces"] = [s for s in board_data["spaces"] if s["kind"] != kind]
    message = error_for(board_data)
    assert f"'{kind}'" in message and "no space of kind" in message


def test_missing_polygon_field(board_data):
    del space_of(board_data, "railroad")["polygon"]
    message = error_for(board_data)
    assert "'railroad'" in message and "'polygon'" in message


def test_property_with_unknown_colour_set(board_data):
    space_of(board_data, "boardwalk")["color_set"] = "purple"
    message = error_for(board_data)
    assert "'boardwalk'" in message and "color_set" in message and "purple" in message


def test_shared_edges_and_non_convex_spaces_are_fine(board_data):
    # Free Parking becomes an L reaching into the row above, Chance shrinks to make room.
    space_of(board_data, "chance")["polygon"] = [[162, 390], [238, 390], [238, 430], [162, 430]]
    space_of(board_data, "free_parking")["polygon"] = [[162, 475], [162, 430], [238, 430], [238, 475],
                                                       [314, 475], [314, 560], [162, 560]]
    board = board_from_dict(board_data, source=SRC)
    assert board.space("free_parking").polygon[1] == (162.0, 430.0)


def test_clockwise_polygons_are_accepted(board_data):
    space = space_of(board_data, "baltic_avenue")
    space["polygon"] = space["polygon"][::-1]
    board_from_dict(board_data, source=SRC)


def test_load_board_names_the_file(tmp_path, board_data):
    space_of(board_data, "chance")["kind"] = "bogus"
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(board_data), encoding="utf-8")
    with pytest.raises(KnockcamError, match=r"mine\.yaml: space 'chance': unknown kind 'bogus'"):
        load_board(path)


def test_not_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("spaces: [unclosed", encoding="utf-8")
    with pytest.raises(KnockcamError, match="bad.yaml: not valid YAML"):
        load_board(bad)
    with pytest.raises(KnockcamError, match="not found"):
        load_board(tmp_path / "missing.yaml")


@pytest.mark.parametrize("other, expected", [
    ([(0, 0), (10, 0), (10, 10), (0, 10)], 100.0),  # identical
    ([(10, 0), (20, 0), (20, 10), (10, 10)], 0.0),  # shared edge
    ([(5, 0), (15, 0), (15, 10), (5, 10)], 50.0),  # half, along the same line
    ([(2, 2), (4, 2), (4, 4), (2, 4)], 4.0),  # inside
    ([(5, -5), (15, -5), (15, 15), (5, 15)], 50.0),  # crossing through
    ([(10, 10), (20, 10), (20, 20), (10, 20)], 0.0),  # touching at a corner
])
def test_overlap_area_exact_cases(other, expected):
    square = [(0, 0), (10, 0), (10, 10), (0, 10)]
    assert overlap_area(square, other) == pytest.approx(expected)
    assert overlap_area(other[::-1], square) == pytest.approx(expected)


def test_overlap_area_non_convex():
    ell = [(0, 0), (20, 0), (20, 10), (10, 10), (10, 20), (0, 20)]
    assert overlap_area(ell, [(10, 10), (20, 10), (20, 20), (10, 20)]) == pytest.approx(0.0)  # the notch
    assert overlap_area(ell, [(5, 5), (15, 5), (15, 15), (5, 15)]) == pytest.approx(75.0)


def test_a_mangled_board_file_is_refused_in_one_line_or_scores_a_game(tmp_path, board_data):
    """Random manglings of the shipped board file, each used to play the example game: refused in one line
    (naming the file and field) or played, never a traceback."""
    import random
    import sys
    from pathlib import Path

    from knockcam.cli import main

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mangle import answered_in_one_line, mangled

    game = Path(__file__).resolve().parents[2] / "fixtures" / "rounds" / "four_side_game.yaml"
    rng = random.Random(0)
    path = tmp_path / "board.yaml"
    refused = 0
    for _ in range(100):
        path.write_text(yaml.safe_dump(mangled(board_data, rng)))
        refused += answered_in_one_line(main, ["game", str(game), "--board", str(path)]) == 2
    assert 0 < refused < 100
