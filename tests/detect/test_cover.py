"""What covers the board in a photo alone: the top-down input, the covered areas, the shipped network."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.assign import hidden_spaces
from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect import cover, detect
from knockcam.detect.tokens import near_hidden
from knockcam.errors import KnockcamError
from knockcam.settings import load

BOARD = load_board()
SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
CFG = load("detect")["cover"]
MM = 5.0  # the shipped recipe's top-down scale: the 400 x 915 mm board in 80 x 184 px, 20 x 46 cells


def scene(name):
    truth = json.loads((SCENES / f"{name}.json").read_text())
    return cv2.imread(str(SCENES / truth["image"])), Calibration.from_dict(truth["calibration"]), truth


def test_the_network_sees_the_board_from_above_far_end_at_the_top_padded_to_whole_cells():
    _, cal, _ = scene("overhead")
    w, h = cal.image_size
    image = np.zeros((h, w, 3), np.uint8)
    far_left = cal.mm_to_px([[0, 915], [200, 915], [200, 457.5], [0, 457.5]])  # the far half's left side, white
    cv2.fillConvexPoly(image, np.round(far_left).astype(np.int32), (255, 255, 255))
    raster = cover.top_down(image, cal, BOARD, MM)
    assert raster.shape == (184, 80, 3)  # 183 rows padded to 184
    grey = raster[..., 0].astype(float)
    assert grey[5:85, 5:35].min() > 200 and grey[5:85, 45:75].max() < 60  # far end at the top, left at the left
    assert grey[100:180].max() < 60


def cells(value=0.0):
    return np.full((46, 20), value, np.float32)


def test_a_covered_area_is_where_the_chance_is_high_over_enough_board():
    chance = cells(0.05)
    chance[10:15, 5:10] = 0.99  # 5 x 5 cells of 20 mm: x 100-200 mm, y 615-715 mm (row 0 at the far end)
    (area,) = cover.covered_areas(chance, BOARD, MM)
    assert 6400 <= area.area_mm2 < 12000  # read between cell centres: at least from the first cells' centres to the last's
    centre = np.mean(np.array(area.outline_mm), axis=0)
    assert np.allclose(centre, [150, 665], atol=8)
    assert near_hidden((150, 665), (area,), 0) and not near_hidden((300, 300), (area,), 20)
    assert hidden_spaces((area,), BOARD)  # a human is sent to the spaces under it
    small = cells(0.05)
    small[10:12, 5:7] = 0.99  # 40 x 40 mm: smaller than cover.min_area_mm2
    assert 1600 < CFG["min_area_mm2"] and cover.covered_areas(small, BOARD, MM) == ()
    doubt = cells(0.05)
    doubt[10:15, 5:10] = CFG["covered_above"] - 0.1
    assert cover.covered_areas(doubt, BOARD, MM) == ()


def test_without_the_network_nothing_is_reported_and_a_wrong_file_is_refused(tmp_path):
    image, cal, _ = scene("hand")
    assert cover.hidden_in_photo(image, cal, BOARD, None) == ()
    assert cover.load(tmp_path / "absent.onnx") is None
    patch_network = Path(__file__).resolve().parents[2] / "models" / "verify_alone.onnx"
    if patch_network.is_file():
        with pytest.raises(KnockcamError, match="does not say what top-down scale"):
            cover.load(patch_network)


class Everywhere:
    """A cover network that sees the whole board covered (and says when it was asked)."""

    mm_per_px = MM

    def __init__(self):
        self.asked = 0

    def chance(self, image, calibration, board):
        self.asked += 1
        return cells(0.99)


def test_detect_reports_what_the_cover_network_sees_with_or_without_the_empty_frame(monkeypatch):
    from knockcam.detect import load_model

    if load_model() is None:
        pytest.skip("models/tokens.onnx not trained yet")
    net = Everywhere()
    monkeypatch.setattr(cover, "load", lambda where=None: net)
    image, cal, _ = scene("empty_board")
    alone = detect(image, cal, BOARD, reference=None)
    assert net.asked == 1 and len(alone.hidden) == 1 and alone.hidden[0].area_mm2 > 0.9 * 400 * 915
    reference = cv2.imread(str(SCENES / "empty_board_ref.jpg"))
    with_frame = detect(image, cal, BOARD, reference=reference)
    assert net.asked == 2 and with_frame.hidden == alone.hidden  # the empty board's difference shows nothing more
    monkeypatch.setattr(cover, "load", lambda where=None: None)
    assert detect(image, cal, BOARD, reference=reference).hidden == ()


needs_network = pytest.mark.skipif(not cover.path().is_file(), reason="models/cover.onnx not trained yet")


@needs_network
def test_the_shipped_network_finds_the_hands_over_the_tokens_they_hide():
    """Renders with a hand over a token (seeds no training used): every token on the board less than 15% in
    view is in or beside a reported area, where a human is sent to look."""
    from knockcam.synth.scene import config, make_photo

    cfg = config()
    hands = {**cfg, "occluders": {**cfg["occluders"], "hand_p": 1.0, "hand_over_token_p": 1.0, "cup_p": 0.0,
                                  "card_p": 0.0, "banknote_p": 0.0}}
    radius = BOARD.token.base_diameter_mm / 2
    under = found = 0
    for seed in range(25655, 25662):
        jpeg, truth, rendered = make_photo(BOARD, seed, 0, hands)
        image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        areas = cover.hidden_in_photo(image, rendered.spec.calibration(BOARD), BOARD, cover.load())
        hidden = [t for t in truth["tokens"] if t["visible"] < 0.15 and t["state"] != "off_board"]
        under += len(hidden)
        found += sum(near_hidden(t["xy_mm"], areas, radius) for t in hidden)
    assert under >= 5 and found >= 0.8 * under


@needs_network
@pytest.mark.parametrize("name", ["empty_board", "all_16_tokens", "touching_and_lines", "overhead"])
def test_the_shipped_network_reports_no_cover_where_there_are_only_tokens(name):
    image, cal, _ = scene(name)
    assert cover.hidden_in_photo(image, cal, BOARD, cover.load()) == ()
