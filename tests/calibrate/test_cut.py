"""A board cut by the photo's edge: stretched and turned placements, and when a board runs past the edge."""

import cv2
import numpy as np

from knockcam.calibrate.cut import (_best_starts, _side_on_the_edge, closed_by_the_edge, grown, near_edge,
                                    runs_past_edge, shifted, stretched, turned)
from knockcam.calibrate.quality import board_corners_px as _corners


def test_a_stretch_keeps_the_side_it_is_anchored_at(scene, board):
    h = scene.truth.homography
    w, l = board.size_mm
    near = _corners(stretched(h, board, 1, False, 1.5), board)
    assert np.allclose(near[:2], _corners(h, board)[:2])  # the near side stays
    far_px = cv2.perspectiveTransform(np.array([[[0.0, 1.5 * l]]]), h).reshape(2)
    assert np.allclose(near[3], far_px)  # the far side goes to where 1.5 board lengths would be
    far = _corners(stretched(h, board, 0, True, 1.2), board)
    assert np.allclose(far[[1, 2]], _corners(h, board)[[1, 2]])  # across, anchored at the right side
    assert not np.allclose(far[[0, 3]], _corners(h, board)[[0, 3]])


def test_a_shift_moves_every_corner_the_same_board_distance(scene, board):
    h = scene.truth.homography
    moved = _corners(shifted(h, 1, 85.0), board)
    w, l = board.size_mm
    along = cv2.perspectiveTransform(np.array([[[0.0, 85.0]], [[w, 85.0]], [[w, l + 85.0]], [[0.0, l + 85.0]]]), h)
    assert np.allclose(moved, along.reshape(4, 2))


def test_a_board_grown_a_row_reaches_an_edge_its_corners_do_not(scene, board):
    h = scene.truth.homography
    size = scene.truth.image_size
    corners = _corners(grown(h, board, 100.0), board)
    w, l = board.size_mm
    assert np.allclose(corners[0], cv2.perspectiveTransform(np.array([[[-100.0, -100.0]]]), h).reshape(2))
    assert np.allclose(corners[2], cv2.perspectiveTransform(np.array([[[w + 100.0, l + 100.0]]]), h).reshape(2))
    # a margin that the board's own corners keep clear of, but the grown board's do not
    inside = _corners(h, board)
    gap = float(np.min([inside[:, 0], size[0] - 1 - inside[:, 0], inside[:, 1], size[1] - 1 - inside[:, 1]]))
    frac = 0.5 * gap / max(size)
    assert not near_edge(h, board, size, frac)
    assert near_edge(h, board, size, frac, reach_mm=1000.0)


def test_turned_end_for_end_swaps_the_corners(scene, board):
    h = scene.truth.homography
    assert np.allclose(_corners(turned(h, board), board), _corners(h, board)[[2, 3, 0, 1]])


def test_near_the_edge_and_past_it(scene, board):
    h = scene.truth.homography
    size = scene.truth.image_size
    corners = _corners(h, board)
    inside = float(np.min([corners[:, 0], size[0] - 1 - corners[:, 0], corners[:, 1], size[1] - 1 - corners[:, 1]]))
    assert inside > 0 and not runs_past_edge(h, board, size)
    assert near_edge(h, board, size, (inside + 1) / max(size))
    assert not near_edge(h, board, size, (inside - 1) / max(size))
    assert runs_past_edge(stretched(h, board, 1, False, 3.0), board, size)


def test_a_board_cut_by_the_photos_edge_is_placed_past_it(board):
    """Tuning render 3161/0 cut 60 px past the board's right-most corner: the printed grid fitted the board
    squeezed into the part in view (52% of its samples on a line, 178 mm off, estimated 2.9 mm: kept).
    Stretched past the edge, 88% are on a line and every corner is within 3 mm."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.bench import _synth_photo, cut_photo
    from knockcam.calibrate.quality import corner_errors_mm

    image, truth = _synth_photo(board, 0, seed=3161)
    cut, cut_truth = cut_photo(image, truth, board, "right", 60)
    cal = calibrate_auto(cut, board)
    assert runs_past_edge(cut_truth.homography, board, cut_truth.image_size)
    assert corner_errors_mm(cal, cut_truth, board).max() < 3.0 and cal.error_mm <= 3.0


def test_a_board_cut_by_the_photos_edge_and_placed_a_row_short_is_moved_past_it(board, committed_render):
    """Tuning render 3900/10 cut 20 px past the board's lowest corner (its far end): the printed grid fitted
    the board moved a row of spaces towards GO!, its near end on the table (74% of its samples on a line,
    86 mm off, estimated 2.0 mm: kept). Neither the margin grown a row nor the moves alone put it right;
    together they do, with 99% of the grid on a line."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.bench import cut_photo
    from knockcam.calibrate.quality import corner_errors_mm

    image, truth = committed_render(3900, 10)
    cut, cut_truth = cut_photo(image, truth, board, "bottom", 20)
    cal = calibrate_auto(cut, board)
    assert corner_errors_mm(cal, cut_truth, board).max() < 3.0 and cal.error_mm <= 3.0


def test_the_side_on_the_photos_edge_is_the_one_whose_corners_both_lie_on_it():
    size = (1280, 720)
    quad = np.array([[300.0, 600.0], [700.0, 640.0], [760.0, 0.0], [420.0, 0.5]])
    assert _side_on_the_edge(quad, size) == 2  # corners 2 and 3 on the top edge
    assert _side_on_the_edge(np.roll(quad, 1, axis=0), size) == 3
    assert _side_on_the_edge(np.array([[0.0, 100.0], [0.0, 500.0], [900.0, 520.0], [900.0, 90.0]]), size) == 0
    assert _side_on_the_edge(np.array([[300.0, 600.0], [700.0, 640.0], [760.0, 0.0], [420.0, 30.0]]), size) is None


def test_a_quadrilateral_clear_of_the_photos_edge_is_not_closed_by_it(scene, board):
    from knockcam.calibrate.grid import ridge_image
    from knockcam.settings import load

    gray = cv2.cvtColor(scene.image, cv2.COLOR_BGR2GRAY)
    quad = _corners(scene.truth.homography, board)
    assert _side_on_the_edge(quad, scene.truth.image_size) is None
    cfg = load("calibrate")["auto"]
    assert closed_by_the_edge(gray, quad, board, cfg, ridge_image(gray.astype(np.float32), 1.0)) == []


def test_the_best_starts_ranked_roughly_first_are_those_a_full_ranking_gives(board):
    import json
    from pathlib import Path

    from knockcam.calibrate.calibration import Calibration
    from knockcam.calibrate.grid import ridge_image, shares_on_lines
    from knockcam.settings import load

    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"  # a sharp photo, no lens distortion
    h = Calibration.from_dict(json.loads((scenes / "overhead.json").read_text())["calibration"]).homography
    gray = cv2.cvtColor(cv2.imread(str(scenes / "overhead.jpg")), cv2.COLOR_BGR2GRAY)
    ridge = ridge_image(gray.astype(np.float32), 1.0)
    steps = np.arange(-30.0, 30.1, 0.5)
    tried = [shifted(h, axis, d) for axis in (0, 1) for d in steps]  # 242 starts, the truth among them
    cfg = load("calibrate")["auto"]
    assert int(cfg["cut_rank_every"]) > 1 and len(tried) > int(cfg["cut_shortlist"])  # the shortlist is used
    full = shares_on_lines(ridge, tried, board)
    best = _best_starts(ridge, tried, board, cfg)
    assert len(best) == int(cfg["cut_starts"])
    chosen = [next(i for i, t in enumerate(tried) if t is b) for b in best]
    assert sorted(full[chosen]) == sorted(np.sort(full)[::-1][:len(best)])  # the full ranking's best shares
    assert min(abs(steps[i % len(steps)]) for i in chosen) <= 1.0  # the truth, or a hair from it, among them
