"""`knockcam board`: the JSON contract other tools depend on, --board, --png and `board check`."""

import json

import cv2
import numpy as np
import pytest
import yaml

from knockcam.board import COLOR_SETS, KINDS, load_board
from knockcam.board.drawing import draw_board
from knockcam.board.layout import default_board_path
from knockcam.cli import main


def run_json(capsys, *extra):
    assert main(["board", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_keys_are_the_contract(capsys):
    data = run_json(capsys)
    assert set(data) == {"name", "size_mm", "spaces", "set_bonus", "token"}
    assert data["size_mm"] == [400, 915]
    assert set(data["token"]) == {"base_diameter_mm", "height_mm"}
    assert set(data["set_bonus"]) == set(COLOR_SETS)
    for space in data["spaces"]:
        assert set(space) == {"id", "name", "kind", "color_set", "value", "polygon"}
        assert space["kind"] in KINDS
        assert space["color_set"] in (*COLOR_SETS, None)
        assert all(len(point) == 2 for point in space["polygon"])
    board = load_board()
    assert [s["id"] for s in data["spaces"]] == [s.id for s in board.spaces]
    assert data["token"]["base_diameter_mm"] == board.token.base_diameter_mm


def test_board_option_is_honoured(tmp_path, capsys):
    data = yaml.safe_load(default_board_path().read_text(encoding="utf-8"))
    data["name"] = "my measured board"
    data["token"]["base_diameter_mm"] = 23.5
    next(s for s in data["spaces"] if s["id"] == "boardwalk")["value"] = 400
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out = run_json(capsys, "--board", str(path))
    assert out["name"] == "my measured board"
    assert out["token"]["base_diameter_mm"] == 23.5
    assert next(s for s in out["spaces"] if s["id"] == "boardwalk")["value"] == 400


def test_bad_board_file_is_one_line_and_exit_2(tmp_path, capsys):
    data = yaml.safe_load(default_board_path().read_text(encoding="utf-8"))
    data["spaces"][0]["polygon"] = [[10, 305], [86, 305], [86, 990], [10, 990]]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert main(["board", "--board", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.yaml" in err and "mediterranean_avenue" in err and "outside the board" in err
    assert "Traceback" not in err


def test_table_output(capsys):
    assert main(["board"]) == 0
    out = capsys.readouterr().out
    assert "boardwalk" in out and "dark_blue" in out


@pytest.mark.parametrize("columns", [80, 120])
def test_the_table_shows_every_space_id_whole_in_a_narrow_terminal(capsys, monkeypatch, columns):
    """The ids are what --call, round files and the live prompts take, and errors send people here."""
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["board"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= columns for line in out.splitlines())
    first_cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    ids = {cell for cell in first_cells if cell}
    assert ids == {space.id for space in load_board().spaces}
    assert ("centre mm" in out) == (columns >= 110)


def test_png_is_drawn(tmp_path, capsys):
    out = tmp_path / "board.png"
    assert main(["board", "--png", str(out), "--px-per-mm", "1"]) == 0
    image = cv2.imread(str(out))
    assert image is not None and image.shape[:2] == (915 + 20, 400 + 20)
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("scale", ["0", "0.001", "1000", "inf", "nan"])
def test_a_png_scale_too_small_or_too_large_is_refused_in_one_line(tmp_path, capsys, scale):
    out = tmp_path / "board.png"
    assert main(["board", "--png", str(out), "--px-per-mm", scale]) == 2
    assert "--px-per-mm must be between 0.2 and 10" in capsys.readouterr().err and not out.exists()


def test_a_picture_is_written_only_to_a_picture_path(tmp_path, capsys):
    assert main(["board", "--png", str(tmp_path / "board.txt")]) == 2
    assert "give a path ending in .png" in capsys.readouterr().err and not list(tmp_path.iterdir())


def fake_photo(path):
    """A perspective view of the drawn board, and the pixel corners it was placed at."""
    board = load_board()
    top = draw_board(board, 1.0)
    h, w = top.shape[:2]
    corners = np.float32([[150, 900], [750, 880], [560, 120], [300, 130]])  # near-left, near-right, far-right, far-left
    warp = cv2.getPerspectiveTransform(np.float32([[0, h], [w, h], [w, 0], [0, 0]]), corners)
    cv2.imwrite(str(path), cv2.warpPerspective(top, warp, (900, 1000), borderValue=(40, 80, 40)))
    return corners


def test_check_overlays_the_layout(tmp_path, capsys):
    photo = tmp_path / "photo.jpg"
    corners = fake_photo(photo)
    out = tmp_path / "check.png"
    text = " ".join(f"{x:g},{y:g}" for x, y in corners)
    assert main(["board", "check", str(photo), "--corners", text, "--out", str(out)]) == 0
    before, after = cv2.imread(str(photo)), cv2.imread(str(out))
    assert after.shape == before.shape
    # the board edge is drawn white through the corners, e.g. midway along the near edge
    u, v = np.round((corners[0] + corners[1]) / 2).astype(int)
    assert after[v - 2:v + 3, u - 2:u + 3].min(axis=2).max() > 200
    assert np.abs(after.astype(int) - before.astype(int)).sum() > 0


def test_check_honours_board_option(tmp_path, capsys):
    photo = tmp_path / "photo.jpg"
    corners = fake_photo(photo)
    data = yaml.safe_load(default_board_path().read_text(encoding="utf-8"))
    data["spaces"] = [s for s in data["spaces"] if s["id"] != "mediterranean_avenue"]
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    text = " ".join(f"{x:g},{y:g}" for x, y in corners)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert main(["board", "check", str(photo), "--corners", text, "--out", str(a)]) == 0
    assert main(["board", "check", str(photo), "--corners", text, "--board", str(path), "--out", str(b)]) == 0
    assert not np.array_equal(cv2.imread(str(a)), cv2.imread(str(b)))


def test_check_takes_a_calibration_file_instead_of_corners(tmp_path, capsys):
    from knockcam.calibrate.calibration import Calibration

    photo = tmp_path / "photo.jpg"
    corners = fake_photo(photo)
    w, h = load_board().size_mm
    homography = cv2.getPerspectiveTransform(np.float32([(0, 0), (w, 0), (w, h), (0, h)]), corners)
    saved = tmp_path / "camera.yaml"
    Calibration(method="corners", image_size=(900, 1000), homography=homography.astype(np.float64)).save(saved)
    text = " ".join(f"{x:g},{y:g}" for x, y in corners)
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert main(["board", "check", str(photo), "--corners", text, "--out", str(a)]) == 0
    assert main(["board", "check", str(photo), "--calibration", str(saved), "--out", str(b)]) == 0
    assert np.array_equal(cv2.imread(str(a)), cv2.imread(str(b)))  # the same board, placed the same way
    Calibration(method="corners", image_size=(1280, 720), homography=homography.astype(np.float64)).save(saved)
    capsys.readouterr()
    assert main(["board", "check", str(photo), "--calibration", str(saved)]) == 2
    assert "is for 1280x720 images" in capsys.readouterr().err


@pytest.mark.parametrize("corners, expect", [
    ("1,2 3,4 5,6", "needs four x,y pixel pairs"),
    ("1,2 3,4 5,6 x,7", "needs four x,y pixel pairs"),
    ("150,900 560,120 750,880 300,130", "convex"),
    ("150,900 750,880 560,120 300,5000", "far outside the 900x1000 image"),
    ("750,880 150,900 300,130 560,120", "the corners are mirrored"),
])
def test_check_bad_corners(tmp_path, capsys, corners, expect):
    photo = tmp_path / "photo.jpg"
    fake_photo(photo)
    assert main(["board", "check", str(photo), "--corners", corners, "--out", str(tmp_path / "check.png")]) == 2
    assert expect in capsys.readouterr().err and not (tmp_path / "check.png").exists()


def test_check_missing_photo(tmp_path, capsys):
    assert main(["board", "check", str(tmp_path / "none.jpg"), "--corners", "0,10 10,10 10,0 0,0"]) == 2
    assert "photo not found" in capsys.readouterr().err
