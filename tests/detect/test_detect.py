"""``knockcam.detect``: what ``detect`` refuses or brightens before any detector runs, and the check of an
empty-board frame."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam import settings
from knockcam.detect import (Unreadable, balanced, board_light, check_photo_light, detect, lit,
                             paper_colour, tokens_in_empty_frame)
from knockcam.exposure import colour_cast, without_colour
from knockcam.errors import KnockcamError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"


def _grey(image):
    """``image`` as a black-and-white camera gives it: three equal channels, through a JPEG."""
    grey = cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    return cv2.imdecode(cv2.imencode(".jpg", grey, [cv2.IMWRITE_JPEG_QUALITY, 85])[1], cv2.IMREAD_COLOR)


def _case(case):
    photo = cv2.imread(str(FIXTURES / f"{case}.jpg"))
    return photo, Calibration.from_dict(json.loads((FIXTURES / f"{case}.json").read_text())["calibration"])


def _dimmed(image, gain):
    """``image`` as an underexposed shot gives it: every level scaled down, through a JPEG."""
    dim = np.clip(image.astype(np.float32) * gain + 0.5, 0, 255).astype(np.uint8)
    return cv2.imdecode(cv2.imencode(".jpg", dim, [cv2.IMWRITE_JPEG_QUALITY, 90])[1], cv2.IMREAD_COLOR)


def _warm(image):
    """``image`` as a camera balanced for daylight sees it under a warm lamp: blue at half, green at 0.78."""
    warm = np.clip(image.astype(np.float32) * np.float32([0.5, 0.78, 1.0]), 0, 255).astype(np.uint8)
    return cv2.imdecode(cv2.imencode(".jpg", warm, [cv2.IMWRITE_JPEG_QUALITY, 92])[1], cv2.IMREAD_COLOR)


def test_a_black_and_white_photo_is_refused_not_scored():
    """Scored, the grey photo would give tokens sides it cannot show (the reference detector finds them)."""
    case = "touching_and_lines"
    image, reference = cv2.imread(str(FIXTURES / f"{case}.jpg")), cv2.imread(str(FIXTURES / f"{case}_ref.jpg"))
    cal = Calibration.from_dict(json.loads((FIXTURES / f"{case}.json").read_text())["calibration"])
    assert detect(image, cal, load_board(), reference=reference, model=None).tokens
    with pytest.raises(KnockcamError, match="no colour.*take it in colour"):
        detect(_grey(image), cal, load_board(), reference=reference, model=None)


@pytest.mark.parametrize("photo", sorted(p.name for p in FIXTURES.glob("*.jpg")))
def test_every_shipped_photo_and_empty_frame_has_colour(photo):
    image = cv2.imread(str(FIXTURES / photo))
    min_chroma = float(settings.load("detect")["photo"]["min_chroma"])
    assert not without_colour(image, min_chroma)
    assert without_colour(_grey(image), min_chroma)


def test_the_model_sees_tokens_in_a_frame_that_is_not_empty():
    """The photo given as the empty-board frame: the reference detector would see nothing change there."""
    case = "touching_and_lines"
    cal = Calibration.from_dict(json.loads((FIXTURES / f"{case}.json").read_text())["calibration"])
    board = load_board()
    assert tokens_in_empty_frame(cv2.imread(str(FIXTURES / f"{case}_ref.jpg")), cal, board) == []
    seen = tokens_in_empty_frame(cv2.imread(str(FIXTURES / f"{case}.jpg")), cal, board)
    assert len(seen) >= 5 and all(0 <= t.xy_mm[1] <= board.size_mm[1] for t in seen)
    assert tokens_in_empty_frame(cv2.imread(str(FIXTURES / f"{case}.jpg")), cal, board, model=None) == []


@pytest.mark.parametrize("case", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_every_shipped_photo_and_empty_frame_is_bright_and_white_enough_to_be_left_alone(case):
    _, cal = _case(case)
    board = load_board()
    for name in (f"{case}.jpg", f"{case}_ref.jpg"):
        if (FIXTURES / name).exists():
            image = cv2.imread(str(FIXTURES / name))
            assert lit(image, cal, board) is image and balanced(image, cal, board) is image, name


def test_a_photo_under_warm_light_is_white_balanced_and_its_sides_read_as_in_daylight(monkeypatch):
    """Unbalanced, the learned model takes a blue token on Baltic Avenue for green, unflagged."""
    image, cal = _case("hand")
    board = load_board()
    warm = _warm(image)
    cast_above = settings.load("detect")["photo"]["cast_above"]
    assert colour_cast(paper_colour(warm, cal, board)) > cast_above >= colour_cast(paper_colour(image, cal, board))
    assert colour_cast(paper_colour(balanced(warm, cal, board), cal, board)) < 0.05
    sides = sorted(t.side for t in detect(image, cal, board).tokens)
    assert sorted(t.side for t in detect(warm, cal, board).tokens) == sides
    monkeypatch.setitem(settings.load("detect")["photo"], "cast_above", 99.0)
    assert sorted(t.side for t in detect(warm, cal, board).tokens) != sides


def test_an_underexposed_photo_is_brightened_and_its_tokens_found(monkeypatch):
    """A fifth of the light: unbrightened, the learned model loses most of the tokens."""
    image, cal = _case("touching_and_lines")
    board = load_board()
    dim = _dimmed(image, 0.2)
    assert board_light(dim, cal, board) < 60
    assert abs(board_light(lit(dim, cal, board), cal, board) - settings.load("detect")["photo"]["light_target"]) < 15
    sides = sorted(t.side for t in detect(image, cal, board).tokens)
    assert sorted(t.side for t in detect(dim, cal, board).tokens) == sides
    monkeypatch.setitem(settings.load("detect")["photo"], "dim_below", 0)
    assert len(detect(dim, cal, board).tokens) < len(sides) - 3


def test_a_board_far_too_dark_is_refused():
    image, cal = _case("touching_and_lines")
    with pytest.raises(KnockcamError, match="far too dark in the photo.*light the board"):
        detect(_dimmed(image, 0.05), cal, load_board())


def test_a_photo_whose_brightest_parts_are_under_the_bar_is_refused_before_its_board_is_found():
    """Its board is darker still, so it would be refused once found; the bar is the board's (photo.min_light)."""
    bar = int(settings.load("detect")["photo"]["min_light"])
    with pytest.raises(Unreadable, match=rf"far too dark in the frame \(its brightest parts at {bar - 1} of 255\)"):
        check_photo_light(np.full((72, 128, 3), bar - 1, np.uint8), "the frame")
    check_photo_light(np.full((72, 128, 3), bar, np.uint8))
    image, _ = _case("touching_and_lines")
    check_photo_light(_dimmed(image, 0.18))  # dim photos are brightened, not refused


def test_a_doubted_token_well_off_the_board_is_dropped_one_near_its_edge_or_not_doubted_kept(monkeypatch):
    """Off the board a token is out for the round whoever it is (RULES.md S2): a doubted report there (real, or a
    phantom) changes no payout and is dropped; one its uncertainty could put on the board, or a sure one, stays."""
    from knockcam.assign import assign
    from knockcam.detect import without_doubted_off_board
    from knockcam.detect.tokens import Token

    board = load_board()
    far_out = Token(side="red", xy_mm=(-60.0, 400.0), confidence=0.15, sigma_mm=1.0, unsure=True)
    at_edge = Token(side="blue", xy_mm=(-1.0, 500.0), confidence=0.15, sigma_mm=1.0, unsure=True)  # its band reaches in
    sure_out = Token(side="green", xy_mm=(450.0, 300.0), confidence=0.9, sigma_mm=1.0)
    on_board = Token(side="yellow", xy_mm=(200.0, 350.0), confidence=0.15, sigma_mm=1.0, unsure=True)
    states = [p.state for p in assign([far_out, at_edge, sure_out, on_board], board)]
    assert states == ["off_board", "off_board", "off_board", "on_space"]
    assert without_doubted_off_board([far_out, at_edge, sure_out, on_board], board) == [at_edge, sure_out, on_board]
    monkeypatch.setitem(settings.load("detect")["off_board"], "drop_unsure", False)
    assert without_doubted_off_board([far_out, on_board], board) == [far_out, on_board]
