"""Shared fixtures for the live-mode tests: the board and the demo game as a synthetic video."""

from __future__ import annotations

import pytest

from knockcam.board.layout import load_board
from knockcam.live.compose import demo_video


@pytest.fixture(scope="session")
def board():
    return load_board()


@pytest.fixture(scope="session")
def demo(board):
    """The two-side demo game rendered at 480x270 (about 290 frames): rendered once per test run."""
    return demo_video(board, size=(480, 270))


@pytest.fixture(scope="session")
def demo_files(demo, board, tmp_path_factory):
    """The demo game on disk as the CLI takes it: video, calibration, empty-board reference, answers."""
    import cv2
    import yaml

    from knockcam.live.compose import DEMO_ANSWERS

    d = tmp_path_factory.mktemp("demo")
    video = demo.write(d / "game.avi")
    calibration = d / "calibration.yaml"
    demo.calibration.save(calibration, board.size_mm)
    reference = d / "empty.png"
    cv2.imwrite(str(reference), demo.empty)
    # an empty-board photo taken with the camera: the video's own first frame (same compression)
    first = next(iter(__import__("knockcam.live.frames", fromlist=["video_source"]).video_source(str(video))))
    reference_jpeg = d / "empty-from-video.png"
    cv2.imwrite(str(reference_jpeg), first.image)
    answers = d / "answers.yaml"
    answers.write_text(yaml.safe_dump(DEMO_ANSWERS), encoding="utf-8")
    return {"video": video, "calibration": calibration, "reference": reference, "reference_jpeg": reference_jpeg, "answers": answers, "dir": d}
