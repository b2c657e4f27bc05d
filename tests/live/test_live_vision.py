"""The live mode's still-frame detector: the detectors' tokens -> Seen records, weak single-detector scores left out."""

import numpy as np

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import Token
from knockcam.live.frames import Frame
from knockcam.live.vision import StillDetector


class FakeModel:
    conf, support_conf, sure_conf_alone = 0.1, 0.01, 0.6

    def detect(self, image, calibration, board, conf=None):
        return [Token("red", (150.0, 400.0), 0.9, sigma_mm=1.6),
                Token("blue", (250.0, 600.0), 0.15, sigma_mm=1.6, unsure=True)]


def test_a_token_the_model_is_unsure_of_is_not_taken_for_a_slide(monkeypatch):
    from knockcam.detect import verify

    monkeypatch.setattr(verify, "load_alone", lambda path=None: None)  # it would see no token on a plain frame
    board = load_board()
    calibration = Calibration(method="truth", image_size=(640, 480),
                              homography=np.array([[0.5, 0.0, 100.0], [0.0, -0.4, 420.0], [0.0, 0.0, 1.0]]))
    detector = StillDetector(board, calibration, reference=None, model=FakeModel())
    table = np.full((480, 640, 3), (40, 110, 60), np.uint8)  # a plain green table, in colour
    seen = detector(Frame(image=table, index=0, t=0.0)).seen
    assert [s.side for s in seen] == ["red"]


class ConfidentModel(FakeModel):
    def detect(self, image, calibration, board, conf=None):
        return [Token("red", (150.0, 400.0), 0.9, sigma_mm=1.6),      # on the board
                Token("yellow", (-80.0, 400.0), 0.9, sigma_mm=1.6)]   # on the table, beyond the board


def test_a_token_only_the_model_sees_where_the_empty_frame_shows_none_is_not_taken_for_a_slide(monkeypatch):
    # the photo is the empty-board frame itself: nothing changed, so a model token on the board is a
    # phantom (it would keep the board from ever looking clear); off the board the reference frame
    # does not look, so the model's word stands there. Without the second look, which would see no
    # token in this noise at all (tests/detect/test_verify.py), nor without the empty frame
    from knockcam.detect import verify

    monkeypatch.setattr(verify, "load", lambda path=None: None)
    monkeypatch.setattr(verify, "load_alone", lambda path=None: None)
    board = load_board()
    calibration = Calibration(method="truth", image_size=(640, 480),
                              homography=np.array([[0.5, 0.0, 100.0], [0.0, -0.4, 420.0], [0.0, 0.0, 1.0]]))
    rng = np.random.default_rng(0)
    empty = rng.integers(90, 160, (480, 640, 3), dtype=np.uint8)
    frame = Frame(image=empty.copy(), index=0, t=0.0)
    assert [s.side for s in StillDetector(board, calibration, reference=empty, model=ConfidentModel())(frame).seen] \
        == ["yellow"]
    assert sorted(s.side for s in StillDetector(board, calibration, reference=None,
                                                model=ConfidentModel())(frame).seen) == ["red", "yellow"]


def test_what_covers_the_board_comes_with_the_tokens():
    # the hand fixture: an arm over the board, which the empty-board frame of the same camera does not show
    import json
    from pathlib import Path

    import cv2

    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    truth = json.loads((scenes / "hand.json").read_text())
    photo, empty = cv2.imread(str(scenes / "hand.jpg")), cv2.imread(str(scenes / "hand_ref.jpg"))
    detector = StillDetector(load_board(), Calibration.from_dict(truth["calibration"]), reference=empty, model=None)
    still = detector(Frame(image=photo, index=0, t=0.0))
    assert still.seen and still.covered
    clear = detector(Frame(image=empty, index=1, t=0.0))
    assert not clear.seen and not clear.covered
