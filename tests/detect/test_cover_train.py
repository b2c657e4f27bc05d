"""Training the cover network: the board from above, labelled by the render's own mask of hands and cups."""

import numpy as np
import pytest

from knockcam.board import load_board
from knockcam.detect.cover_train import measure, scene_example
from knockcam.settings import load
from knockcam.synth.scene import config

BOARD = load_board()
GEOMETRY = {"mm_per_px": 5.0}
CFG = load("detect")["cover"]


def occluders(**chances):
    cfg = config()
    none = {"hand_p": 0.0, "cup_p": 0.0, "card_p": 0.0, "banknote_p": 0.0}
    return {**cfg, "occluders": {**cfg["occluders"], **none, **chances}}


def test_a_render_with_a_hand_over_a_token_is_labelled_covered_there_and_one_with_nothing_is_not():
    raster, share = scene_example(BOARD, 350_001, occluders(hand_p=1.0, hand_over_token_p=1.0), GEOMETRY)
    assert raster.shape == (1, 184, 80, 3) and raster.dtype == np.uint8
    assert share.shape == (1, 46, 20) and share.dtype == np.float32
    assert share.max() > 0.9 and 0 < (share >= 0.5).mean() < 0.5  # the hand covers part of the board
    _, clear = scene_example(BOARD, 350_001, occluders(card_p=1.0, banknote_p=1.0), GEOMETRY)
    assert not clear.any()  # cards and banknotes lie flat beside the tokens: nothing hides under them


def test_the_network_gives_one_logit_per_cell_of_any_board_raster():
    torch = pytest.importorskip("torch")
    from knockcam.detect.cover_train import network

    net = network().eval()
    with torch.no_grad():
        assert tuple(net(torch.zeros(2, 3, 184, 80)).shape) == (2, 1, 46, 20)
        assert tuple(net(torch.zeros(1, 3, 96, 64)).shape) == (1, 1, 24, 16)


def test_held_out_figures_count_cells_and_renders():
    share = np.zeros((2, 46, 20), np.float32)
    share[0, 10:20, 5:10] = 1.0  # render 0: 50 cells (20000 mm2) covered; render 1: nothing
    chance = np.zeros_like(share)
    chance[0, 10:20, 5:9] = 0.9  # 40 of the 50 caught
    chance[1, 0, 0] = 0.9  # one clear cell marked, too small to be an area
    r = measure(chance, share, BOARD, 5.0)
    assert r["covered_cells"] == 50 and r["covered_caught"] == pytest.approx(0.8)
    assert r["clear_marked"] == pytest.approx(1 / (2 * 46 * 20 - 50))
    assert (r["renders_with_cover"], r["reported_with_cover"], r["renders_without"], r["reported_without"]) == (1, 1, 1, 0)
