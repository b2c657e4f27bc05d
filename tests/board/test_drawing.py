"""The top-down drawing and the photo overlay put things where TopDown / Calibration say."""

import numpy as np

from knockcam.board import load_board
from knockcam.board.drawing import KIND_COLORS, SET_COLORS, draw_board, draw_layout_overlay
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration

BOARD = load_board()


def test_draw_board_size_matches_topdown():
    for scale, margin in ((1.0, 0.0), (2.0, 10.0), (0.5, 5.0)):
        image = draw_board(BOARD, scale, margin_mm=margin)
        assert image.dtype == np.uint8 and image.shape[2] == 3
        assert (image.shape[1], image.shape[0]) == TopDown(BOARD, scale, margin).size


def test_property_colour_bar_sits_at_its_far_edge():
    view = TopDown(BOARD, 2.0, 10.0)
    image = draw_board(BOARD, 2.0, margin_mm=10.0)
    for sid in ("boardwalk", "mediterranean_avenue", "st_james_place"):
        space = BOARD.space(sid)
        xs = [x for x, _ in space.polygon]
        ys = [y for _, y in space.polygon]
        u, v = np.round(view.to_px([((min(xs) + max(xs)) / 2, max(ys) - 3)])[0]).astype(int)
        assert tuple(int(c) for c in image[v, u]) == SET_COLORS[space.color_set], sid


def test_special_space_is_tinted_by_kind_and_labelled():
    view = TopDown(BOARD, 2.0)
    image = draw_board(BOARD, 2.0)
    space = BOARD.space("railroad")
    xs = [x for x, _ in space.polygon]
    ys = [y for _, y in space.polygon]
    u, v = np.round(view.to_px([(min(xs) + 3, min(ys) + 3)])[0]).astype(int)
    tinted = tuple(int(round(c + (255 - c) * 0.35)) for c in KIND_COLORS["railroad"])
    assert tuple(int(c) for c in image[v, u]) == tinted
    # the label puts dark ink in the middle of the space
    (u0, v1), (u1, v0) = np.round(view.to_px([(min(xs), min(ys)), (max(xs), max(ys))])).astype(int)
    middle = image[v0 + 5:v1 - 5, u0 + 5:u1 - 5]
    assert (middle.max(axis=2) < 80).sum() > 50


def test_go_line_is_drawn_across_the_board():
    view = TopDown(BOARD, 1.0)
    image = draw_board(BOARD, 1.0)
    u, v = np.round(view.to_px([(40, BOARD.go_line_y_mm)])[0]).astype(int)
    b, g, r = (int(c) for c in image[v, u])
    assert r > 150 and g < 80 and b < 80


def test_overlay_draws_outlines_where_the_calibration_maps_them():
    view = TopDown(BOARD, 1.0, 20.0)
    w, h = view.size
    photo = np.zeros((h, w, 3), dtype=np.uint8)
    calibration = Calibration(method="corners", image_size=(w, h), homography=view.mm_to_px)
    out = draw_layout_overlay(photo, calibration, BOARD, color=(0, 255, 255), labels=False)
    assert out is not photo and photo.max() == 0
    for sid in ("boardwalk", "chance", "house_1"):
        space = BOARD.space(sid)
        a, b = np.array(space.polygon[0]), np.array(space.polygon[1])
        u, v = np.round(view.to_px([(a + b) / 2])[0]).astype(int)
        patch = out[v - 1:v + 2, u - 1:u + 2].reshape(-1, 3)
        assert (patch[:, 1] > 150).any(), sid  # yellow (or the white board edge) drawn there
    u, v = np.round(view.to_px([(238, 517)])[0]).astype(int)
    assert out[v, u].max() == 0  # nothing drawn inside a space without labels
