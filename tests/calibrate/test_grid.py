"""Registration to the printed grid: the template, and the homography pulled onto the printed lines."""

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.grid import (_search, corner_spread_mm, fit_grid, fit_grid_bowed, fit_lens, hump_mm,
                                     ridge_image, shares_on_lines, template)
from knockcam.calibrate.quality import board_corners_mm, corner_errors_mm, homography_from_points

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"


def _fixture(name):
    truth = Calibration.from_dict(json.loads((SCENES / f"{name}.json").read_text())["calibration"])
    image = cv2.imread(str(SCENES / f"{name}.jpg"))
    if truth.camera_matrix is not None:
        image = cv2.undistort(image, truth.camera_matrix, truth.dist_coeffs)
    return image, replace(truth, camera_matrix=None, dist_coeffs=None, hump=None)


def test_template_samples_lie_on_space_edges_with_unit_normals(board):
    pts, nrm = template(board)
    assert len(pts) == len(nrm) > 300
    assert np.allclose(np.linalg.norm(nrm, axis=1), 1.0)
    xs = {x for s in board.spaces for x, _ in s.polygon}
    ys = {y for s in board.spaces for _, y in s.polygon} | {board.go_line_y_mm}
    on_edge = [min(abs(p[0] - x) for x in xs) < 1e-6 if abs(n[0]) > 0.99 else min(abs(p[1] - y) for y in ys) < 1e-6
               for p, n in zip(pts, nrm)]
    assert all(on_edge)
    # shared or overlapping edges sampled once: no two samples on one line closer than half a step
    for axis in (0, 1):
        sel = np.abs(nrm[:, axis]) > 0.99
        d = np.linalg.norm(pts[sel][:, None] - pts[sel][None], axis=2)
        np.fill_diagonal(d, np.inf)
        assert d.min() >= 2.0


@pytest.mark.skipif(not (SCENES / "hand.json").exists(), reason="synth fixtures not generated")
@pytest.mark.parametrize("name", ["hand", "off_board_and_fallen"])
def test_grid_pulls_a_rough_homography_onto_the_print(board, name):
    image, truth = _fixture(name)
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    rng = np.random.default_rng(3)
    rough = truth.mm_to_px(board_corners_mm(board)) + rng.normal(0, 2.0, (4, 2))
    start = homography_from_points(board_corners_mm(board), rough)
    before = corner_errors_mm(Calibration("a", truth.image_size, start), truth, board).max()
    fit = fit_grid(gray, start, board, radii=(4, 2), bow=False)
    after = corner_errors_mm(Calibration("a", truth.image_size, fit.homography), truth, board)
    assert after.max() < min(1.5, before / 2)
    assert fit.score > 0.8 and fit.rms_px < 0.6


def test_grid_finds_nothing_on_a_blank_image(board):
    blank = np.full((720, 1280), 128, np.uint8)
    h = homography_from_points(board_corners_mm(board), [[300, 650], [900, 650], [800, 100], [400, 100]])
    assert fit_grid(blank, h, board).score == 0.0


@pytest.mark.skipif(not (SCENES / "hand.json").exists(), reason="synth fixtures not generated")
def test_hump_is_small_on_flat_boards_and_large_on_a_bowed_one(board):
    for name in ("hand", "overhead"):
        image, truth = _fixture(name)
        assert hump_mm(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), truth.homography, board) < 1.0
    image, truth = _fixture("glare_crease_bowed")  # a board with a 3 mm hump along it
    assert hump_mm(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), truth.homography, board) > 3.0


@pytest.mark.skipif(not (SCENES / "hand.json").exists(), reason="synth fixtures not generated")
def test_corner_spread_grows_when_fewer_printed_lines_are_seen(board):
    image, truth = _fixture("overhead")
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    full = corner_spread_mm(gray, truth.homography, board)
    # hide the far half of the board: the corners there are now extrapolated from fewer lines
    hidden = gray.copy()
    far = truth.mm_to_px(np.array([[0, 560], [400, 560], [400, 915], [0, 915]], float))
    cv2.fillConvexPoly(hidden, np.round(far).astype(np.int32), 200)
    assert full < 1.0
    assert corner_spread_mm(hidden, truth.homography, board) > 1.5 * full


def test_a_bowed_board_is_placed_by_fitting_its_hump(board):
    # a knockcam.synth photo (seed 2026, 136) of a board with a 5.3 mm hump along it: the flat
    # registration skews the corners by several mm; with the hump fitted (two unknowns, in the
    # direction the camera implies) the corners are back within the target
    from knockcam.calibrate.edges import up_px
    from knockcam.calibrate.bench import _synth_photo

    photo = _synth_photo(board, 136)
    if photo is None:
        pytest.skip("knockcam.synth not available")
    image, truth = photo
    image = cv2.undistort(image, truth.camera_matrix, truth.dist_coeffs)
    gray = np.ascontiguousarray(image.max(axis=2))
    flat = fit_grid(gray, truth.homography, board, radii=(2,), bow=False)
    size = truth.image_size
    bent, (along, across) = fit_grid_bowed(gray, flat.homography, board, lambda h: up_px(h, board, size))

    def worst(h):
        return corner_errors_mm(Calibration("a", size, h, truth.camera_matrix, truth.dist_coeffs), truth, board).max()

    assert worst(flat.homography) > 3.0
    assert worst(bent.homography) < 1.5
    assert along == pytest.approx(5.3, abs=1.5)
    assert hump_mm(gray, flat.homography, board) > 1.5  # what makes the automatic method fit the hump


@pytest.mark.skipif(not (SCENES / "touching_and_lines.json").exists(), reason="synth fixtures not generated")
def test_the_lens_read_off_the_printed_lines_bends_them_as_the_true_lens_does(board):
    # touching_and_lines: k1 = +0.071 at a focal length of 938 px, unknown to the fit. Started from a
    # flat registration on the photo as taken, the fitted lens (at its nominal focal length) and
    # homography put the board's points where the true camera does, which the flat fit cannot
    from knockcam.calibrate.edges import up_px

    truth = Calibration.from_dict(json.loads((SCENES / "touching_and_lines.json").read_text())["calibration"])
    gray = cv2.cvtColor(cv2.imread(str(SCENES / "touching_and_lines.jpg")), cv2.COLOR_BGR2GRAY)
    size = truth.image_size
    start = fit_grid(gray, homography_from_points(board_corners_mm(board), truth.mm_to_px(board_corners_mm(board))),
                     board, radii=(4, 2), bow=False).homography
    up = lambda h: up_px(h, board, size)  # noqa: E731
    flat = fit_lens(gray, start, board, lens=False)
    lens = fit_lens(gray, start, board, up=up)
    assert lens.dist_coeffs[0] == pytest.approx(0.071 * (lens.camera_matrix[0, 0] / 938) ** 2, rel=0.25)
    assert abs(lens.dist_coeffs[0]) > 10 * lens.k1_sigma and lens.shift_px > 2.0
    pts = np.array([[x, y] for x in range(0, 401, 50) for y in range(0, 916, 50)], np.float64)

    def off_px(fit, k=None, d=None):
        return np.linalg.norm(Calibration("a", size, fit.homography, k, d).mm_to_px(pts) - truth.mm_to_px(pts), axis=1)

    assert off_px(lens, lens.camera_matrix, lens.dist_coeffs).max() < 0.75
    assert off_px(flat).max() > 1.5


def test_printed_lines_look_wide_in_a_blurred_photo_and_thin_in_a_sharp_one(board):
    from knockcam.calibrate.grid import printed_line_width_px

    def width(name):
        image, truth = _fixture(name)
        return printed_line_width_px(image, truth, board)

    assert all(width(name) <= 5.0 for name in ("overhead", "all_16_tokens", "hand"))
    assert all(width(name) >= 7.0 for name in ("defocus", "motion_blur"))
    blank = np.full((720, 1280, 3), 200, np.uint8)  # no line at all
    assert printed_line_width_px(blank, _fixture("overhead")[1], board) == float("inf")


def test_share_on_lines_is_high_where_the_grid_lies_and_low_a_few_px_off(board):
    image, truth = _fixture("overhead")
    ridge = ridge_image(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32), 1.0)
    h = truth.homography
    down = [np.array([[1.0, 0.0, 0.0], [0.0, 1.0, px], [0.0, 0.0, 1.0]]) @ h for px in np.arange(0.0, 8.0, 0.125)]
    shares = shares_on_lines(ridge, down, board)  # 64 starts: more than one pass of the search
    assert shares[0] > 0.6 > shares[48]  # 6 px down the photo
    one_at_a_time = [shares_on_lines(ridge, [h], board)[0] for h in down]
    assert np.array_equal(shares, one_at_a_time)
    # every 4th sample: a rougher share, ranking the starts about the same
    rough = shares_on_lines(ridge, down, board, every=4)
    assert rough[0] > 0.6 > rough[48]
    assert np.abs(rough - shares).max() < 0.1
    assert abs(rough[0] - shares[0]) > 0  # other samples, another count


def test_share_on_lines_counts_only_the_samples_in_view(board):
    # a photo cut through the board: the samples past its edge neither help nor count against the board
    image, truth = _fixture("overhead")
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY).astype(np.float32)
    whole = shares_on_lines(ridge_image(gray, 1.0), [truth.homography], board)[0]
    left = int(np.median(cv2.perspectiveTransform(board_corners_mm(board).reshape(-1, 1, 2),
                                                  truth.homography)[:, 0, 0]))  # through the board's middle
    cut = ridge_image(np.ascontiguousarray(gray[:, left:]), 1.0)
    moved = np.array([[1.0, 0.0, -left], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]) @ truth.homography
    assert shares_on_lines(cut, [moved], board)[0] == pytest.approx(whole, abs=0.1)
    # and a board wholly outside the photo has no sample in view: no share at all
    away = np.array([[1.0, 0.0, 5000.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]) @ truth.homography
    assert shares_on_lines(cut, [away], board)[0] == 0.0


@pytest.mark.parametrize("band", ["ahead", "behind", "none"])
def test_a_band_beside_a_printed_line_makes_it_lopsided_towards_the_band(band):
    # a dark line at x = 40 on white paper, a coloured band (darker paper) 4 px past it on one side:
    # the line's surroundings 3 px away are darker on the band's side, and the search reports that side
    img = np.full((60, 80), 200.0, np.float32)
    if band == "ahead":
        img[:, 44:] = 150.0
    elif band == "behind":
        img[:, :37] = 150.0
    img[:, 39:42] = 60.0
    img = ridge_image(img, 1.0)
    q = np.array([[40.0, y] for y in range(10, 50, 5)])
    found, ok, _, _, lopsided = _search(img, q, q + [1.0, 0.0], 6.0, 3.0, 1.5, lopsided=True)
    assert ok.all() and np.abs(found).max() < 0.5
    if band == "none":
        assert np.abs(lopsided).max() < 0.05
    else:
        assert np.all(np.sign(lopsided) == (-1 if band == "ahead" else 1)) and np.abs(lopsided).min() > 0.2
