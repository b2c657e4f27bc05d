"""The live mode's still-frame detector: the detectors' tokens -> Seen records, weak single-detector scores left out."""

import numpy as np

from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import Token
from knockcam.live.frames import Frame
from knockcam.live.vision import StillDetector


class FakeModel:
    conf, support_conf = 0.1, 0.01

    def detect(self, image, calibration, board, conf=None):
        return [Token("red", (150.0, 400.0), 0.9, sigma_mm=1.6),
                Token("blue", (250.0, 600.0), 0.15, sigma_mm=1.6, unsure=True)]


def test_a_token_the_model_is_unsure_of_is_not_taken_for_a_slide():
    board = load_board()
    calibration = Calibration(method="truth", image_size=(640, 480),
                              homography=np.array([[0.5, 0.0, 100.0], [0.0, -0.4, 420.0], [0.0, 0.0, 1.0]]))
    detector = StillDetector(board, calibration, reference=None, model=FakeModel())
    seen = detector(Frame(image=np.zeros((480, 640, 3), np.uint8), index=0, t=0.0))
    assert [s.side for s in seen] == ["red"]
