"""The video's little physics: friction stops a slide where kinematics says, a knock passes momentum."""

import numpy as np
import pytest

from knockcam.synth.video import FPS, FRICTION_MM_S2, Slide


def test_a_lone_slide_stops_after_v_squared_over_2a():
    sim = Slide(np.array([[0.0, 0.0]]), 12.5)
    sim.v[0] = (0.0, 1500.0)
    for _ in range(3 * FPS):
        sim.step(1.0 / FPS)
    assert not sim.moving().any()
    assert sim.p[0, 1] == pytest.approx(1500.0**2 / (2 * FRICTION_MM_S2), rel=0.02)


def test_a_head_on_knock_moves_the_struck_token_on():
    sim = Slide(np.array([[0.0, 0.0], [0.0, 100.0]]), 12.5)
    sim.v[0] = (0.0, 1200.0)
    knocks = []
    for _ in range(3 * FPS):
        knocks += sim.step(1.0 / FPS)
    assert knocks and knocks[0] == (0, 1)
    assert sim.p[1, 1] > 150  # pushed on
    assert sim.p[0, 1] < sim.p[1, 1] - 25 + 1e-6  # bases never overlap
