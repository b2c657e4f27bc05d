"""The learned detector's runtime: letterbox, output decoding, NMS, and the pixel -> board-mm chain."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

from knockcam.board.layout import load_board
from knockcam.detect.canonical import canonical_view
from knockcam.detect.model import (
    PAD_VALUE, Letterbox, TokenModel, decode, default_model_path, input_hw_for, letterbox, nms, sigma_for, sigma_table,
)
from knockcam.errors import KnockcamError
from knockcam.sides import SIDES

BOARD = load_board()
VIEW = canonical_view(BOARD)


# --- letterbox ---------------------------------------------------------------------------------

def test_letterbox_uses_width_and_height_each_once_on_a_landscape_frame():
    image = np.zeros((720, 1280, 3), np.uint8)
    boxed, box = letterbox(image, (640, 640))
    assert boxed.shape == (640, 640, 3)
    assert box.gain == pytest.approx(0.5)  # min(640/720, 640/1280); the height-twice bug gives 0.889
    assert box.pad == (0.0, 140.0)
    assert (boxed[:140] == PAD_VALUE).all() and (boxed[500:] == PAD_VALUE).all()
    assert (boxed[140:500] == 0).all()


def test_letterbox_of_the_canonical_view_into_the_model_input():
    hw = input_hw_for(VIEW)
    assert hw[0] % 32 == 0 and hw[1] % 32 == 0
    assert hw[0] >= VIEW.size[1] and hw[1] >= VIEW.size[0]
    image = np.zeros((VIEW.size[1], VIEW.size[0], 3), np.uint8)
    boxed, box = letterbox(image, hw)
    assert boxed.shape[:2] == hw
    expected_gain = min(hw[0] / VIEW.size[1], hw[1] / VIEW.size[0])
    assert box.gain == pytest.approx(expected_gain)


@given(h=st.integers(20, 900), w=st.integers(20, 900), in_h=st.sampled_from([224, 320, 416, 640]),
       in_w=st.sampled_from([224, 320, 416, 640]))
@hsettings(max_examples=60, deadline=None)
def test_letterbox_places_every_pixel_where_its_mapping_says(h, w, in_h, in_w):
    image = np.zeros((h, w, 3), np.uint8)
    y, x = h // 3, (2 * w) // 3
    image[max(0, y - 3):y + 4, max(0, x - 3):x + 4] = 255  # a 7 px bright square, survives resizing
    boxed, box = letterbox(image, (in_h, in_w))
    assert boxed.shape == (in_h, in_w, 3)
    # the content fills one side exactly and is centred along the other
    content = np.argwhere(boxed[:, :, 0] != PAD_VALUE)
    (top, left), (bottom, right) = content.min(axis=0), content.max(axis=0)
    assert abs((in_h - 1 - bottom) - top) <= 1 and abs((in_w - 1 - right) - left) <= 1
    u, v = box.to_input([(x + 0.5, y + 0.5)])[0]
    bright = np.argwhere(boxed[:, :, 0] > 200)
    if box.gain > 0.3:  # the square is still visible
        cy, cx = bright.mean(axis=0) + 0.5
        assert abs(cx - u) <= 1.5 + 0.5 / box.gain and abs(cy - v) <= 1.5 + 0.5 / box.gain
    back = box.to_image(box.to_input([(x, y)]))[0]
    assert back == pytest.approx((x, y))


def test_letterbox_mapping_round_trips():
    box = Letterbox(gain=1.0048, pad=(7.0, 0.0))
    pts = np.array([[0.0, 0.0], [103.5, 207.25], [207.9, 413.9]])
    assert np.allclose(box.to_image(box.to_input(pts)), pts)


# --- decoding ------------------------------------------------------------------------------------

def classic_output(rows, n_anchors=50, nc=4):
    """A raw (1, 4 + nc, N) head output with the given (cx, cy, w, h, class, score) rows, zeros elsewhere."""
    out = np.zeros((1, 4 + nc, n_anchors), np.float32)
    for i, (cx, cy, w, h, cls, score) in enumerate(rows):
        out[0, :4, i] = (cx, cy, w, h)
        out[0, 4 + cls, i] = score
    return out


def test_decode_keeps_confident_boxes_best_first():
    out = classic_output([(50, 60, 10, 10, 0, 0.9), (150, 300, 10, 10, 3, 0.95), (20, 20, 10, 10, 1, 0.1)])
    found = decode(out, 4, conf=0.25, iou=0.3)
    assert len(found) == 2
    assert found.classes.tolist() == [3, 0]
    assert np.allclose(found.centres, [[150, 300], [50, 60]])
    assert np.allclose(found.scores, [0.95, 0.9])


def test_decode_merges_one_token_the_model_is_unsure_about_unless_per_side():
    rows = [(100, 100, 10, 10, 0, 0.8), (101, 100.5, 10, 10, 1, 0.6), (100.5, 99, 10, 10, 0, 0.7)]
    agnostic = decode(classic_output(rows), 4, conf=0.25, iou=0.3, agnostic=True)
    assert len(agnostic) == 1 and agnostic.classes[0] == 0
    per_side = decode(classic_output(rows), 4, conf=0.25, iou=0.3, agnostic=False)
    assert sorted(per_side.classes.tolist()) == [0, 1]


def test_decode_keeps_touching_tokens_apart():
    # two 25 mm bases touching: centres 10 px apart at 0.4 px/mm, boxes of 10 px do not overlap
    rows = [(100, 100, 10, 10, 2, 0.9), (110, 100, 10, 10, 2, 0.85)]
    assert len(decode(classic_output(rows), 4, conf=0.25, iou=0.3)) == 2


def test_configured_nms_never_merges_touching_tokens_of_the_training_box_size():
    from knockcam import settings

    cfg = settings.load("detect")
    box_mm = cfg["train"]["label_box_mm"] or cfg["canonical"]["label_box_mm"]
    box = box_mm * VIEW.px_per_mm
    gap = BOARD.token.base_diameter_mm * VIEW.px_per_mm  # centre distance of touching bases
    for dx, dy in [(gap, 0.0), (0.0, gap), (gap / np.sqrt(2), gap / np.sqrt(2))]:
        rows = [(100, 100, box, box, 0, 0.9), (100 + dx, 100 + dy, box, box, 0, 0.8)]
        found = decode(classic_output(rows), 4, conf=cfg["model"]["conf"], iou=cfg["model"]["iou"])
        assert len(found) == 2, (dx, dy)
    # ... while one token seen twice, a few px apart, stays one token
    rows = [(100, 100, box, box, 0, 0.9), (102, 101, box * 0.9, box, 1, 0.8)]
    assert len(decode(classic_output(rows), 4, conf=cfg["model"]["conf"], iou=cfg["model"]["iou"])) == 1


def test_decode_caps_the_number_of_detections():
    rows = [(20 + 30 * i, 40, 10, 10, i % 4, 0.5 + i / 100) for i in range(40)]
    found = decode(classic_output(rows, n_anchors=60), 4, conf=0.25, iou=0.3, max_det=16)
    assert len(found) == 16
    assert np.all(np.diff(found.scores) <= 0)


def test_decode_end_to_end_layout():
    out = np.zeros((1, 300, 6), np.float32)
    out[0, 0] = (95, 195, 105, 205, 0.9, 2)
    out[0, 1] = (10, 10, 20, 20, 0.1, 1)
    found = decode(out, 4, conf=0.25, iou=0.3)
    assert len(found) == 1
    assert np.allclose(found.centres, [[100, 200]]) and found.classes.tolist() == [2]
    assert np.allclose(found.sizes, [[10, 10]])


def test_decode_empty_and_bad_shapes():
    assert len(decode(classic_output([]), 4, conf=0.25, iou=0.3)) == 0
    with pytest.raises(KnockcamError, match="output has shape"):
        decode(np.zeros((1, 9, 30), np.float32), 4, conf=0.25, iou=0.3)
    with pytest.raises(KnockcamError, match="output has shape"):
        decode(np.zeros((2, 3, 4, 5), np.float32), 4, conf=0.25, iou=0.3)


@given(st.lists(st.tuples(st.floats(0, 200), st.floats(0, 200), st.floats(2, 40), st.floats(2, 40),
                          st.floats(0.01, 1.0)), min_size=1, max_size=25),
       st.floats(0.1, 0.9))
@hsettings(max_examples=80, deadline=None)
def test_nms_keeps_no_two_overlapping_boxes_and_drops_only_covered_ones(boxes, thresh):
    arr = np.array(boxes)
    xyxy = np.column_stack([arr[:, 0], arr[:, 1], arr[:, 0] + arr[:, 2], arr[:, 1] + arr[:, 3]])
    scores = arr[:, 4]
    keep = nms(xyxy, scores, thresh)

    def iou(a, b):
        iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = iw * ih
        return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)

    assert len(set(keep.tolist())) == len(keep)
    for i in keep:
        for j in keep:
            if i < j:
                assert iou(xyxy[i], xyxy[j]) <= thresh + 1e-9
    for d in set(range(len(arr))) - set(keep.tolist()):
        assert any(iou(xyxy[d], xyxy[k]) > thresh and scores[k] >= scores[d] for k in keep)


# --- the whole chain with a stand-in network --------------------------------------------------

class FakeSession:
    """Plays onnxruntime: records the input blob and returns a prepared raw output."""

    def __init__(self, output):
        self.output = output
        self.blob = None

    def run(self, _names, feeds):
        self.blob = next(iter(feeds.values()))
        return [self.output]


def fake_model(output, hw):
    model = object.__new__(TokenModel)
    model.path = Path("fake.onnx")
    model.conf, model.iou, model.max_det, model.agnostic = 0.25, 0.3, 32, True
    model.sigma_by_score = ((0.85, 1.0), (0.0, 2.5))
    model.sure_conf = 0.75
    model.session = FakeSession(output)
    model.input_name, model.input_hw, model.names = "images", hw, SIDES
    model.support_conf = 0.05
    return model


def test_box_centres_map_back_to_board_millimetres_through_letterbox_and_view():
    hw = input_hw_for(VIEW)
    canon = np.full((VIEW.size[1], VIEW.size[0], 3), 90, np.uint8)
    _, box = letterbox(canon, hw)
    truth_mm = np.array([[37.5, 412.0], [200.0, 880.0], [-30.0, 120.0]])  # the last one is off the board
    centres_in = box.to_input(VIEW.to_px(truth_mm))
    rows = [(u, v, 10, 10, side, 0.9 - 0.1 * i) for i, ((u, v), side) in enumerate(zip(centres_in, (0, 3, 1)))]
    model = fake_model(classic_output(rows), hw)
    tokens = model.detect_canonical(canon, VIEW)
    assert [t.side for t in tokens] == ["red", "blue", "yellow"]
    assert np.allclose([t.xy_mm for t in tokens], truth_mm, atol=1e-4)
    assert all(t.source == "model" and 0 < t.confidence <= 1 for t in tokens)
    assert [t.sigma_mm for t in tokens] == [1.0, 2.5, 2.5]  # a confident token is placed better (sigma_by_score)
    assert [t.unsure for t in tokens] == [False, False, True]  # scores 0.9, 0.8, 0.7; sure from 0.75 on
    blob = model.session.blob
    assert blob.shape == (1, 3, hw[0], hw[1]) and blob.dtype == np.float32
    assert 0.0 <= blob.min() and blob.max() <= 1.0


def test_the_network_sees_rgb_scaled_to_one():
    hw = input_hw_for(VIEW)
    canon = np.zeros((VIEW.size[1], VIEW.size[0], 3), np.uint8)
    canon[:, :] = (255, 0, 0)  # pure blue in OpenCV's BGR
    model = fake_model(classic_output([]), hw)
    assert model.detect_canonical(canon, VIEW) == []
    _, box = letterbox(canon, hw)
    u, v = box.to_input([(VIEW.size[0] / 2, VIEW.size[1] / 2)])[0]
    pixel = model.session.blob[0, :, int(v), int(u)]
    assert pixel.tolist() == [0.0, 0.0, 1.0]  # R, G, B


def test_detect_maps_tokens_into_the_photo_too():
    from knockcam.calibrate.calibration import Calibration

    # a camera looking straight down: 1.2 px per mm, the board 40 px in from the left
    homography = np.array([[1.2, 0.0, 40.0], [0.0, -0.7, 700.0], [0.0, 0.0, 1.0]])
    calibration = Calibration(method="truth", image_size=(640, 720), homography=homography)
    photo = np.full((720, 640, 3), 100, np.uint8)
    hw = input_hw_for(VIEW)
    _, box = letterbox(np.zeros((VIEW.size[1], VIEW.size[0], 3), np.uint8), hw)
    (u, v), = box.to_input(VIEW.to_px([(150.0, 600.0)]))
    model = fake_model(classic_output([(u, v, 10, 10, 2, 0.8)]), hw)
    tokens = model.detect(photo, calibration, BOARD)
    assert len(tokens) == 1 and tokens[0].side == "green"
    assert tokens[0].xy_mm == pytest.approx((150.0, 600.0), abs=1e-4)
    assert tokens[0].xy_px == pytest.approx((40 + 1.2 * 150, 700 - 0.7 * 600), abs=1e-3)


def test_bad_images_are_explained():
    model = fake_model(classic_output([]), input_hw_for(VIEW))
    with pytest.raises(KnockcamError, match="canonical image is"):
        model.detect_canonical(np.zeros((100, 100, 3), np.uint8), VIEW)
    with pytest.raises(KnockcamError, match="8-bit"):
        model.detect_canonical(np.zeros((VIEW.size[1], VIEW.size[0], 3), np.float32), VIEW)
    with pytest.raises(KnockcamError, match="image array"):
        model.predict(np.zeros((0, 0, 3), np.uint8))
    grey = np.zeros((VIEW.size[1], VIEW.size[0]), np.uint8)
    assert model.detect_canonical(grey, VIEW) == []


def test_missing_and_corrupt_model_files_are_explained(tmp_path):
    with pytest.raises(KnockcamError, match="token model not found"):
        TokenModel(tmp_path / "nope.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not an onnx file at all")
    with pytest.raises(KnockcamError, match="cannot load token model"):
        TokenModel(junk)


def test_model_path_can_be_overridden(monkeypatch, tmp_path):
    monkeypatch.setenv("KNOCKCAM_MODEL", str(tmp_path / "x.onnx"))
    assert default_model_path() == tmp_path / "x.onnx"
    monkeypatch.delenv("KNOCKCAM_MODEL")
    assert default_model_path().name == "tokens.onnx"


# --- the shipped weights ------------------------------------------------------------------------

SHIPPED = Path(__file__).resolve().parents[2] / "models" / "tokens.onnx"
needs_weights = pytest.mark.skipif(not SHIPPED.is_file(), reason="models/tokens.onnx not trained yet")


@needs_weights
def test_shipped_model_fits_the_canonical_view_and_names_the_sides():
    assert SHIPPED.stat().st_size <= 15 * 1024 * 1024
    model = TokenModel(SHIPPED)
    assert model.names == SIDES
    assert model.input_hw == input_hw_for(VIEW)
    empty_table = np.full((VIEW.size[1], VIEW.size[0], 3), 114, np.uint8)
    assert model.detect_canonical(empty_table, VIEW) == []


def test_sigma_by_score_is_read_highest_score_first_and_must_cover_every_score():
    table = sigma_table({"sigma_by_score": [[0.0, 4.0], [0.9, 1.0], [0.6, 2.0]]})
    assert table == ((0.9, 1.0), (0.6, 2.0), (0.0, 4.0))
    assert [sigma_for(table, s) for s in (0.95, 0.9, 0.7, 0.1)] == [1.0, 1.0, 2.0, 4.0]
    for bad in ({"sigma_by_score": [[0.5, 1.0]]}, {"sigma_by_score": [[0.0, 0.0]]}, {}):
        with pytest.raises(KnockcamError, match="sigma_by_score"):
            sigma_table(bad)
