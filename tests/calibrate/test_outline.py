"""The search for where the board may be: straight lines kept for building quadrilaterals, the true
shape of a seen rectangle, and the fast pruning of sides no edge supports."""

import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from knockcam.board.geometry import _cross
from knockcam.calibrate.outline import (_PRUNING_SLACK, _board_shaped, _crossings, _hough_lines, _side_support,
                                        _supported_stretches, quad_aspect)
from knockcam.settings import load as settings_of


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_quad_aspect_recovers_the_true_aspect_from_any_camera(seed, board):
    from knockcam.calibrate.scene import look_at_homography

    rng = np.random.default_rng(seed)
    hom = None
    while hom is None:
        hom = look_at_homography(board, rng, (1280, 720), (5, 60))
    w, l = board.size_mm
    quad = cv2.perspectiveTransform(np.array([[[0, 0]], [[w, 0]], [[w, l]], [[0, l]]], np.float64), hom).reshape(-1, 2)
    assert quad_aspect(quad, (1280, 720)) == pytest.approx(w / l, rel=0.03)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_board_shaped_quadrilaterals_are_those_one_built_at_a_time_would_keep(seed, board):
    # _board_shaped tests millions of line quadruples at once, on one array per corner; built one at a
    # time (corners where the lines cross, turned anticlockwise, convex, large, of the board's shape with a
    # cut one's slack) the same quadrilaterals must come out, in the same order, with the same fit and area
    cfg = settings_of("calibrate")["auto"]
    size = (960, 540)
    rng = np.random.default_rng(seed)
    lines = np.column_stack([rng.uniform(0, 900, 18), rng.uniform(0, np.pi, 18)])
    lines = np.vstack([lines, [[0.25, 0.0], [size[0] - 1.25, 0.0], [0.25, np.pi / 2], [size[1] - 1.25, np.pi / 2]]])
    n_found, aspect = 18, board.size_mm[1] / board.size_mm[0]
    cx, cy, _ = _crossings(lines, size, float(cfg["corner_reach"]))
    ii, jj = np.triu_indices(len(lines), 1)
    mean_dir = np.angle(np.exp(2j * lines[ii, 1]) + np.exp(2j * lines[jj, 1])) / 2
    pa, pb = np.nonzero(np.triu(np.ones((len(ii), len(ii)), bool), 1))
    quads, fit, area, cut = _board_shaped(pa, pb, ii, jj, mean_dir, cx, cy, size, aspect, cfg, n_found)
    tol, slack = float(cfg["aspect_tolerance"]), float(cfg["cut_aspect_tolerance"])
    expected = []
    for p, q in zip(pa, pb):
        if abs((mean_dir[p] - mean_dir[q] + np.pi / 2) % np.pi - np.pi / 2) <= np.radians(cfg["min_pair_angle_deg"]):
            continue
        i, j, k, m = ii[p], jj[p], ii[q], jj[q]
        if len({i, j, k, m}) < 4:
            continue
        corners = np.array([[cx[a, b], cy[a, b]] for a, b in ((i, k), (k, j), (j, m), (m, i))])
        turns = [_cross(corners[(t + 1) % 4] - corners[t], corners[(t + 2) % 4] - corners[(t + 1) % 4])
                 for t in range(4)]
        if not (all(z > 0 for z in turns) or all(z < 0 for z in turns)):
            continue
        if turns[0] > 0:
            corners = corners[::-1]
        a = 0.5 * abs(sum(_cross(corners[t], corners[(t + 1) % 4]) for t in range(4)))  # shoelace
        if a < float(cfg["min_area_frac"]) * size[0] * size[1]:
            continue
        r = quad_aspect(corners, size)
        f = abs(np.log(max(r, 1 / r) / aspect))
        is_cut = max(i, j, k, m) >= n_found
        if is_cut:
            f = max(f - slack + tol, 0.0)
        if f <= tol:
            expected.append((corners, f, a, is_cut))
    assert len(expected) > 20 and any(c for *_, c in expected) and not all(c for *_, c in expected)
    assert len(quads) == len(expected)
    np.testing.assert_allclose(quads, np.array([e[0] for e in expected]), atol=1e-9)
    np.testing.assert_allclose(fit, [e[1] for e in expected], atol=1e-9)
    np.testing.assert_allclose(area, [e[2] for e in expected], rtol=1e-9)
    assert list(cut) == [e[3] for e in expected]


def test_short_board_ends_are_kept_among_many_long_parallel_lines():
    # a board's long sides and the printed lines along them are many and long; its two ends are
    # short: they must still be among the lines tried, or the board's quadrilateral is never built
    edges = np.zeros((540, 960), np.uint8)
    for y in range(60, 480, 12):
        cv2.line(edges, (100, y), (860, y + 20), 255, 1)
    cv2.line(edges, (300, 100), (310, 420), 255, 1)
    cv2.line(edges, (700, 110), (712, 430), 255, 1)
    lines = _hough_lines(edges, 24, 10)
    assert len(lines) <= 24
    # where each near-vertical line (normal along x) crosses y = 260
    x_mid = [(r - 260 * np.sin(t)) / np.cos(t) for r, t in lines if abs(np.cos(t)) > 0.9]
    assert any(abs(x - 305) < 4 for x in x_mid) and any(abs(x - 706) < 4 for x in x_mid)


def test_the_outermost_line_of_a_crowded_direction_is_tried_even_when_it_is_weak():
    # the far end of an oblique board is short and soft; the printed lines parallel to it are longer
    # and more than a direction band's quota: it is kept only as the outermost line of its band
    edges = np.zeros((540, 960), np.uint8)
    for y in range(60, 480, 12):
        cv2.line(edges, (100, y), (860, y + 20), 255, 1)
    for x in range(300, 700, 25):
        cv2.line(edges, (x, 80), (x + 10, 460), 255, 1)
    cv2.line(edges, (250, 200), (253, 300), 255, 1)  # short: fewer Hough votes than any printed line

    def crosses_at(lines, x0):
        x_mid = [(r - 250 * np.sin(t)) / np.cos(t) for r, t in lines if abs(np.cos(t)) > 0.9]
        return any(abs(x - x0) < 4 for x in x_mid)

    assert not crosses_at(_hough_lines(edges, 48, 10), 251.5)
    outermost = int(settings_of("calibrate")["auto"]["outermost_bands"])
    assert crosses_at(_hough_lines(edges, 48, 10, outermost=outermost), 251.5)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_pruning_by_running_sums_agrees_with_the_exact_side_test(seed):
    # quadrilaterals are pruned with an approximate side support before the exact 40-sample test:
    # with the slack allowed, it must keep every side the exact test keeps (else real boards drop),
    # even on a table of random crossing edges, where sampling differs most; the photo's own four edges
    # (the last lines, as _candidate_quads adds them) are on an edge wherever they run
    rng = np.random.default_rng(seed)
    h, w = 240, 320
    edges = np.zeros((h, w), np.uint8)
    for _ in range(12):
        a, b = rng.integers(0, [w, h], 2), rng.integers(0, [w, h], 2)
        cv2.line(edges, tuple(int(v) for v in a), tuple(int(v) for v in b), 255, 1)
    on_edge = cv2.distanceTransform(255 - edges, cv2.DIST_L2, 3) <= 1.5  # as _candidate_quads
    lines = np.vstack([np.column_stack([rng.uniform(-50, 400, 12), rng.uniform(0, np.pi, 12)]),
                       [[0.25, 0.0], [w - 1.25, 0.0], [0.25, np.pi / 2], [h - 1.25, np.pi / 2]]])
    framing = np.arange(len(lines)) >= 12
    reach = float(settings_of("calibrate")["auto"]["corner_reach"])
    cx, cy, near = _crossings(lines, (w, h), reach)  # as _candidate_quads
    ii, jj = np.triu_indices(len(lines), 1)
    crosses = near[ii] & near[jj]
    for k in range(len(lines)):
        crosses[(ii == k) | (jj == k), k] = False
    for threshold in (0.15, 0.25, 0.4):
        kept = _supported_stretches(crosses, ii, jj, lines, cx, cy, on_edge, threshold - _PRUNING_SLACK, framing)
        p, k = np.nonzero(crosses)
        a = np.stack([cx[k, ii[p]], cy[k, ii[p]]], axis=-1)
        b = np.stack([cx[k, jj[p]], cy[k, jj[p]]], axis=-1)
        exact = _side_support(a, b, on_edge, framing[k])
        long_enough = np.linalg.norm(b - a, axis=1) > 20
        assert kept[p, k][long_enough & (exact >= threshold)].all()


def test_quadrilaterals_looked_at_a_slice_at_a_time_are_those_looked_at_all_at_once(monkeypatch, board):
    """The checkered table of cup_cards_banknotes makes over a million pairs of line pairs; slicing them (for
    memory) must keep every candidate and its order."""
    from pathlib import Path

    from knockcam.calibrate import outline

    photo = cv2.imread(str(Path(__file__).resolve().parents[2] / "fixtures" / "scenes" / "cup_cards_banknotes.jpg"))
    cfg = settings_of("calibrate")["auto"]
    scale = min(1.0, float(cfg["work_px"]) / max(photo.shape[:2]))
    small = cv2.resize(photo, (round(photo.shape[1] * scale), round(photo.shape[0] * scale)),
                       interpolation=cv2.INTER_AREA)
    mask, aspect = outline._board_mask(small), board.size_mm[1] / board.size_mm[0]
    sliced = outline._candidate_quads(small, mask, aspect, cfg)
    monkeypatch.setattr(outline, "_SLICE", 10 ** 9)
    whole = outline._candidate_quads(small, mask, aspect, cfg)
    for part, (s, wh) in enumerate(zip(sliced, whole)):  # the quadrilaterals, then those the photo's edge closes
        assert len(s) == len(wh) > 10 * (part == 0)
        assert all(np.array_equal(a, b) for a, b in zip(s, wh))


def test_a_board_with_a_corner_past_the_photos_edge_is_found(scene, board):
    """Cropped so the board's highest corner lies 60 px above the photo (as the calibration benchmark cuts), the
    sides meeting there still make a candidate (auto.corner_reach) and the board is placed. Before, a corner had
    to lie within 5% of the photo's size and the part of a side out of the photo counted against it: this board
    came out 2504 mm off (estimated 9.1 mm)."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.bench import cut_photo
    from knockcam.calibrate.quality import corner_errors_mm

    photo, truth = cut_photo(scene.image, scene.truth, board, "top", 60)
    assert truth.corners_px(board.size_mm)[:, 1].min() < -50
    cal = calibrate_auto(photo, board)
    assert corner_errors_mm(cal, truth, board).max() < 1.0 and cal.error_mm <= 3.0


def test_a_board_whose_end_lies_past_the_photos_edge_is_placed_by_its_other_sides(board):
    """Own scene 15 cropped at its left so both corners of the board's end there lie past the photo's edge, the
    nearer 15 px: no four lines in the photo make the board, but its two long sides, its other end and the
    photo's edge do (auto.cut_aspect_tolerance), and the corners on that edge slid along the long sides meet
    the printed grid (knockcam.calibrate.cut.closed_by_the_edge). Before, this board came out 2323 mm off."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.bench import cut_photo
    from knockcam.calibrate.quality import corner_errors_mm
    from knockcam.calibrate.scene import make_scene

    scene = make_scene(board, 15)
    x = np.sort(scene.truth.corners_px(board.size_mm)[:, 0])
    photo, truth = cut_photo(scene.image, scene.truth, board, "left", int(x[1] - x[0]) + 15)
    out = set(np.flatnonzero(truth.corners_px(board.size_mm)[:, 0] < 0).tolist())
    assert out in ({0, 1}, {2, 3})  # the near end's two corners, or the far end's
    cal = calibrate_auto(photo, board)
    assert corner_errors_mm(cal, truth, board).max() < 1.0 and cal.error_mm <= 3.0
