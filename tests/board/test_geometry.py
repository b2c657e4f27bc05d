"""Token-base coverage (S3 resting place): exact cases, a raster cross-check, and the margin."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knockcam.board import load_board
from knockcam.board.geometry import NO_SPACE, OFF_BOARD, coverage
from knockcam.board.layout import board_from_dict
from knockcam.errors import KnockcamError

BOARD = load_board()
R = BOARD.token.base_diameter_mm / 2


def segment_share(d: float, r: float = R) -> float:
    """Share of a disc lying beyond a straight line at distance d from its centre (d may be negative)."""
    d = max(-r, min(r, d))
    seg = r * r * math.acos(d / r) - d * math.sqrt(r * r - d * d)
    return seg / (math.pi * r * r)


def raster_shares(board, center, r=R, n=240):
    """Brute-force shares by testing an n x n grid of points in the disc's box (even-odd rule)."""
    xs = center[0] + (np.arange(n) + 0.5) / n * 2 * r - r
    ys = center[1] + (np.arange(n) + 0.5) / n * 2 * r - r
    gx, gy = np.meshgrid(xs, ys)
    inside_disc = (gx - center[0]) ** 2 + (gy - center[1]) ** 2 <= r * r
    px, py = gx[inside_disc], gy[inside_disc]
    total = len(px)
    shares = {}
    covered = np.zeros(total, dtype=bool)
    for space in board.spaces:
        poly = np.asarray(space.polygon)
        if (poly[:, 0].min() > center[0] + r or poly[:, 0].max() < center[0] - r
                or poly[:, 1].min() > center[1] + r or poly[:, 1].max() < center[1] - r):
            shares[space.id] = 0.0
            continue
        inside = np.zeros(total, dtype=bool)
        for (x1, y1), (x2, y2) in zip(poly, np.roll(poly, -1, axis=0)):
            crosses = (y1 > py) != (y2 > py)
            with np.errstate(divide="ignore", invalid="ignore"):
                x_at = x1 + (py - y1) * (x2 - x1) / (y2 - y1)
            inside ^= crosses & (px < x_at)
        shares[space.id] = inside.sum() / total
        covered |= inside
    w, length = board.size_mm
    on_board = (px >= 0) & (px <= w) & (py >= 0) & (py <= length)
    shares[OFF_BOARD] = (~on_board).sum() / total
    shares[NO_SPACE] = (on_board & ~covered).sum() / total
    return shares


def test_disc_wholly_inside_a_space():
    cov = coverage(BOARD, [(48, 347)])
    j = cov.space_ids.index("mediterranean_avenue")
    assert cov.fractions[0, j] == pytest.approx(1.0, abs=1e-12)
    assert cov.fractions[0].sum() == pytest.approx(1.0, abs=1e-12)
    assert cov.off_board[0] == 0 and cov.no_space[0] == 0
    assert cov[0].state == "on_space" and cov[0].space_id == "mediterranean_avenue"


def test_disc_split_evenly_by_a_shared_straight_edge():
    cov = coverage(BOARD, [(86, 347)])
    assert cov.of(0, "mediterranean_avenue") == pytest.approx(0.5, abs=1e-12)
    assert cov.of(0, "baltic_avenue") == pytest.approx(0.5, abs=1e-12)
    assert cov[0].margin_mm == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("d", [-11.0, -4.0, 0.5, 3.0, 9.0, 12.4])
def test_disc_at_a_distance_from_a_straight_edge(d):
    cov = coverage(BOARD, [(86 + d, 347)])
    assert cov.of(0, "baltic_avenue") == pytest.approx(1 - segment_share(d), abs=1e-12)
    assert cov.of(0, "mediterranean_avenue") == pytest.approx(segment_share(d), abs=1e-12)


def test_disc_at_a_rectangle_corner():
    cov = coverage(BOARD, [(86, 390)])  # four spaces meet here
    for sid in ("mediterranean_avenue", "baltic_avenue", "st_charles_place", "states_avenue"):
        assert cov.of(0, sid) == pytest.approx(0.25, abs=1e-12)
    corner = coverage(BOARD, [(10, 305)])  # Mediterranean's outer corner: the rest is no space or off the board
    assert corner.of(0, "mediterranean_avenue") == pytest.approx(0.25, abs=1e-12)


def test_disc_off_the_board_edge_and_corner():
    cov = coverage(BOARD, [(0, 500), (0, 0), (-20, 500), (400, 915), (-12.5, 500)])
    assert cov.off_board[0] == pytest.approx(0.5, abs=1e-12)
    assert cov.off_board[1] == pytest.approx(0.75, abs=1e-12)
    assert cov.off_board[2] == 1.0 and cov[2].state == "off_board" and cov[2].space_id is None
    assert cov.off_board[3] == pytest.approx(0.75, abs=1e-12)
    assert cov.off_board[4] == pytest.approx(1.0, abs=1e-12)
    # (0, 500): half off, the strip x 0..10 is no space, the rest St. James Place.
    assert cov.no_space[0] == pytest.approx(0.5 - segment_share(10.0), abs=1e-12)
    assert cov.of(0, "st_james_place") == pytest.approx(segment_share(10.0), abs=1e-12)


def test_launch_area_is_no_space():
    cov = coverage(BOARD, [(200, 100)])
    assert cov[0].state == "no_space" and cov.no_space[0] == 1.0


def test_against_a_raster_estimate():
    rng = np.random.default_rng(7)
    centers = np.column_stack([rng.uniform(-15, 415, 30), rng.uniform(290, 930, 30)])
    cov = coverage(BOARD, centers, margins=False)
    for i, c in enumerate(centers):
        ref = raster_shares(BOARD, c)
        for category, share in ref.items():
            assert cov.of(i, category) == pytest.approx(share, abs=0.005), (c, category)


def non_convex_board(board_data):
    """The default board with Free Parking as an L reaching into Chance's row."""
    spaces = {s["id"]: s for s in board_data["spaces"]}
    spaces["chance"]["polygon"] = [[162, 390], [238, 390], [238, 430], [162, 430]]
    spaces["free_parking"]["polygon"] = [[162, 475], [162, 430], [238, 430], [238, 475],
                                         [314, 475], [314, 560], [162, 560]]
    return board_from_dict(board_data, source="l-shape")


def test_non_convex_space(board_data):
    board = non_convex_board(board_data)
    reflex = coverage(board, [(238, 475)])  # the L's inner corner: three quarters are Free Parking
    assert reflex.of(0, "free_parking") == pytest.approx(0.75, abs=1e-12)
    assert reflex.of(0, "virginia_avenue") == pytest.approx(0.25, abs=1e-12)
    rng = np.random.default_rng(3)
    centers = np.column_stack([rng.uniform(150, 330, 15), rng.uniform(400, 570, 15)])
    cov = coverage(board, centers, margins=False)
    for i, c in enumerate(centers):
        ref = raster_shares(board, c)
        assert cov.of(i, "free_parking") == pytest.approx(ref["free_parking"], abs=0.005)


@settings(max_examples=60, deadline=None)
@given(st.floats(-30, 430), st.floats(-30, 945))
def test_shares_are_a_partition(x, y):
    cov = coverage(BOARD, [(x, y)], margins=False)
    total = cov.fractions.sum() + cov.off_board[0] + cov.no_space[0]
    assert total == pytest.approx(1.0, abs=1e-9)
    assert (cov.fractions >= 0).all() and (cov.fractions <= 1).all()
    assert cov[0].share >= cov[0].runner_up_share


def test_runner_up_and_empty_input():
    cov = coverage(BOARD, [(90, 347)])
    assert cov[0].space_id == "baltic_avenue"
    assert cov[0].runner_up == "mediterranean_avenue"
    assert cov[0].runner_up_share == pytest.approx(segment_share(4.0), abs=1e-12)
    inside = coverage(BOARD, [(48, 350)])  # nothing else under it: the runner-up is where it would go
    assert inside[0].runner_up_share == 0 and inside[0].runner_up == "baltic_avenue"
    assert len(coverage(BOARD, np.zeros((0, 2)))) == 0


def test_bad_centres_are_a_knockcam_error():
    with pytest.raises(KnockcamError):
        coverage(BOARD, [(1.0, float("nan"))])
    with pytest.raises(KnockcamError):
        coverage(BOARD, [1.0, 2.0, 3.0])


# --- margin ---------------------------------------------------------------------------------

def brute_margin(board, center, max_t=45.0, step=0.1, directions=120):
    """Smallest move (over many directions, in small steps) that changes the winning category."""
    cov0 = coverage(board, [center], margins=False)
    winner = cov0[0].space_id or cov0[0].state
    angles = np.arange(directions) * 2 * np.pi / directions
    ts = np.arange(1, int(max_t / step) + 1) * step
    pts = center + ts[None, :, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)[:, None, :]
    cov = coverage(board, pts.reshape(-1, 2), margins=False)
    won = np.array([(sid or st_) == winner for sid, st_ in zip(cov.space_id, cov.state)]).reshape(directions, -1)
    changed = ~won
    first = np.where(changed.any(axis=1), changed.argmax(axis=1), len(ts))
    return float(np.min(np.where(first < len(ts), ts[np.minimum(first, len(ts) - 1)], np.inf)))


@pytest.mark.parametrize("center", [(80.0, 347.0), (91.5, 350.0), (200.0, 420.0), (12.0, 517.0), (30.0, 517.0),
                                    (-5.0, 500.0), (395.0, 700.0), (250.0, 690.0)])
def test_margin_is_exact_beside_straight_edges(center):
    got = coverage(BOARD, [center])[0].margin_mm
    assert got == pytest.approx(brute_margin(BOARD, np.array(center)), abs=0.12)


def test_margin_at_a_straight_edge_equals_the_distance_to_it():
    for d in (0.3, 2.0, 7.5, 20.0):
        assert coverage(BOARD, [(86 - d, 347)])[0].margin_mm == pytest.approx(d, abs=0.01)


@pytest.mark.parametrize("center", [(84.0, 388.0), (95.0, 300.0), (160.0, 478.0), (203.0, 643.0), (8.0, 303.0),
                                    (5.0, 905.0), (300.0, 530.0), (240.0, 470.0)])
def test_margin_near_corners_is_close_to_brute_force(center):
    got = coverage(BOARD, [center])[0].margin_mm
    truth = brute_margin(BOARD, np.array(center))
    assert got >= truth - 0.12  # a crossing along one direction can only overestimate
    assert got <= truth + max(1.0, 0.5 * truth)  # documented approximation near corners
