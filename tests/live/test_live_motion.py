"""Motion gating on the demo video: one detection per still spell that changed, none while things move."""

from __future__ import annotations

from knockcam import settings
from knockcam.live.motion import MotionGate


def test_the_gate_settles_once_per_change_and_never_while_moving(demo, board):
    h, w = demo.frames[0].shape[:2]
    gate = MotionGate(demo.calibration, board, (w, h))
    still_frames = int(round(settings.load("live")["motion"]["still_s"] * demo.fps))
    settled, launched, moving = [], [], []
    for i, image in enumerate(demo.frames):
        g = gate.update(image, i / demo.fps)
        if g.moving:
            moving.append(i)
        if g.settled:
            settled.append(i)
            launched.append(g.launched)
            gate.detected()
    hand_step = 3  # demo step 3: a hand passes over the board and leaves nothing changed
    expected = [m + still_frames for k, m in enumerate(demo.marks) if k != hand_step]
    assert len(settled) == len(expected)
    for got, want in zip(settled, expected):
        assert want - 2 <= got <= want + 1
    # every motion frame of the steps is seen as motion; held frames (sensor noise only) are not
    held = {i for k, m in enumerate(demo.marks) for i in range(m + 1, m + 12)}
    assert not held & set(moving)
    assert len(moving) >= 0.8 * 5 * (len(demo.marks) - 1)  # 5 motion frames a step; the last ones barely move
    # slides start at the near end; the lead-in and the hand pass do not; picking a token up does not
    assert launched[0] is False and launched[1] is True


def test_a_frame_differing_only_by_noise_is_not_detected_again(demo, board):
    h, w = demo.frames[0].shape[:2]
    gate = MotionGate(demo.calibration, board, (w, h))
    t = 0.0
    first = None
    for i in range(25):
        g = gate.update(demo.frames[i], t)
        t += 1 / demo.fps
        if g.settled:
            first = i
            gate.detected()
    assert first is not None
    # a long still spell of the same scene: nothing new to detect
    again = [gate.update(demo.frames[i % 20], t + i / demo.fps).settled for i in range(60)]
    assert not any(again)


def test_a_synth_clip_with_a_hand_flicking_a_token_is_gated_to_one_still_frame(board):
    """knockcam.synth.video's clip: a hand comes in, flicks a token that knocks another, and leaves: the
    gate waits for all of it and settles once, after the last token rests."""
    import copy

    import pytest

    video = pytest.importorskip("knockcam.synth.video")
    from knockcam.calibrate.calibration import Calibration
    from knockcam.synth.scene import config

    cfg = copy.deepcopy(config())
    cfg["image_size"] = [320, 180]
    frames, truth, reference = video.make_video(board, 1, 0, cfg)
    calibration = Calibration.from_dict(truth["calibration"])
    gate = MotionGate(calibration, board, (320, 180))
    settled = []
    for i, image in enumerate(frames):
        if gate.update(image, i / truth["fps"]).settled:
            settled.append(i)
            gate.detected()
    last_move = max(e["frame"] for e in truth["events"] if e["type"] in ("rests", "hand_leaves", "knocked_off"))
    assert len(settled) == 1 and settled[0] > last_move  # nothing while the hand or a token moves
