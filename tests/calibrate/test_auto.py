"""The automatic method: the board found in photos it never saw, with an error it reports honestly."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.calibrate import auto, calibrate
from knockcam.calibrate.auto import calibrate_auto
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import board_corners_mm, corner_errors_mm, error_limit
from knockcam.calibrate.scene import make_scene
from knockcam.errors import KnockcamError
from knockcam.exposure import colour_cast
from knockcam.settings import load as settings_of

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
needs_fixtures = pytest.mark.skipif(not (SCENES / "overhead.json").exists(), reason="synth fixtures not generated")


def _fixture(name):
    data = json.loads((SCENES / f"{name}.json").read_text())
    truth = Calibration.from_dict(data["calibration"])
    return cv2.imread(str(SCENES / f"{name}.jpg")), truth, data


@pytest.mark.parametrize("seed", [2, 6])
def test_board_found_on_unseen_art_within_targets(board, seed):
    scene = make_scene(board, seed, art_seed=3000 + seed)
    cal = calibrate_auto(scene.image, board)
    err = corner_errors_mm(cal, scene.truth, board)
    assert np.median(err) <= 1.0 and err.max() <= 3.0
    assert cal.method == "auto" and cal.error_source.startswith("estimate")


def test_no_board_is_a_clear_error(board):
    table = (np.random.default_rng(1).random((720, 1280, 3)) * 60 + 100).astype(np.uint8)
    with pytest.raises(KnockcamError, match="board not found"):
        calibrate_auto(table, board)


@needs_fixtures
@pytest.mark.parametrize("name", ["overhead", "hand", "oblique_60", "off_board_and_fallen", "lens_distortion",
                                  "motion_blur"])
def test_fixture_placed_by_the_printed_grid_within_targets(board, name):
    image, truth, _ = _fixture(name)
    cal = calibrate_auto(image, board, truth.camera_matrix, truth.dist_coeffs)
    err = corner_errors_mm(cal, truth, board)
    assert np.median(err) <= 1.0 and err.max() <= 3.0
    assert "printed grid" in cal.error_source and cal.error_mm >= 0.5 * err.max()


@needs_fixtures
def test_the_same_photo_gives_the_same_board_whatever_came_before(board):
    # k-means++ in the table-colour mask draws from OpenCV's global RNG; unseeded, a photo's outline
    # depended on which photos had been calibrated earlier in the process
    image, truth, _ = _fixture("cup_cards_banknotes")
    first = calibrate_auto(image, board, truth.camera_matrix, truth.dist_coeffs)
    cv2.randu(np.empty((1000, 1), np.float32), 0, 1)  # move OpenCV's RNG on, as other calls would
    again = calibrate_auto(image, board, truth.camera_matrix, truth.dist_coeffs)
    np.testing.assert_array_equal(first.homography, again.homography)


@needs_fixtures
@pytest.mark.parametrize("name", ["cup_cards_banknotes", "glare_crease_bowed"])
def test_a_wrong_outline_reports_a_large_error_and_is_refused(board, name):
    # measured: on these fixtures the board is not placed within 3 mm (the mug and cards break the
    # board's edges; a bowed board bends the printed lines away from any flat fit); the reported
    # error says so, and calibrate() refuses rather than hand on a wrong board
    image, truth, _ = _fixture(name)
    cal = calibrate_auto(image, board, truth.camera_matrix, truth.dist_coeffs)
    err = corner_errors_mm(cal, truth, board)
    assert err.max() <= 3.0 or cal.error_mm > 3.0  # never a wrong board reported as good
    if err.max() > 3.0:
        camera = Calibration("lens", truth.image_size, np.eye(3), truth.camera_matrix, truth.dist_coeffs)
        with pytest.raises(KnockcamError, match="over the 3 mm limit"):
            calibrate(image, board, camera=camera)


@needs_fixtures
def test_a_hump_fitted_from_the_printed_lines_puts_the_tokens_back_where_they_rest(board):
    # lens_distortion's board rises 7.5 mm along its middle (3.3 mm more across): the printed lines show
    # it, the fit keeps it in the calibration, and bases seen on the hump are read back where they are
    from dataclasses import replace

    image, truth, data = _fixture("lens_distortion")
    cal = calibrate_auto(image, board, truth.camera_matrix, truth.dist_coeffs)
    assert cal.hump is not None and abs(cal.hump.along_mm - data["board_bow_mm"][0]) < 1.0
    on_board = [t for t in data["tokens"] if t["state"] != "off_board"]
    px = np.array([t["xy_px"] for t in on_board])
    xy = np.array([t["xy_mm"] for t in on_board])
    assert np.median(np.linalg.norm(cal.px_to_mm(px) - xy, axis=1)) < 0.5
    assert np.median(np.linalg.norm(replace(cal, hump=None).px_to_mm(px) - xy, axis=1)) > 3.0


def _humped_render(board, hump_mm, tilt_deg=None):
    """A board with a hump along it (no tokens, a sharp photo), from scene 7's camera or one ``tilt_deg`` off
    overhead; the photo and the exact calibration."""
    from dataclasses import replace

    from knockcam.synth import scene as sc
    from knockcam.synth.camera import random_camera

    spec = sc.sample_scene(board, np.random.default_rng(7), tokens=(), with_occluders=False)
    if tilt_deg is not None:
        cfg = dict(sc.config()["camera"], tilt_deg=[tilt_deg, tilt_deg], no_distortion_p=1.0)
        spec = replace(spec, camera=random_camera(np.random.default_rng(7), board, cfg))
    spec = replace(spec, bow_mm=(hump_mm, 0.0),
                   photo=replace(spec.photo, blur_sigma=0.5, noise_sigma=2.0, defocus_px=0.0, motion=None))
    return sc.finish_photo(sc.render(spec, board).image, spec.photo), spec.calibration(board)


@pytest.mark.parametrize("hump_mm", [6.0, 20.0])
def test_a_hump_no_board_has_is_not_believed(board, hump_mm):
    # the printed lines of a board humped 20 mm bend as no board's do (auto.max_hump_mm: boards have a few
    # mm): such a fit is what a wrong registration or lens looks like, so the estimate is at least its height
    # (the board refused: this camera sees the hump move the board 9 mm, over auto.hump_unseen_mm); a hump
    # boards do have is fitted and believed
    image, _ = _humped_render(board, hump_mm)
    outline = auto.find_outline(image, board)
    assert outline.placed_by == "grid" and abs(outline.bow_mm[0] - hump_mm) < 2.5
    if hump_mm > settings_of("calibrate")["auto"]["max_hump_mm"]:
        assert outline.error_mm >= abs(outline.bow_mm[0]) > error_limit()
    else:
        assert outline.error_mm < 3.0


def test_a_hump_seen_from_overhead_counts_as_far_as_it_moves_the_board(board):
    # from 1 degree off overhead a hump hardly moves the board's face in the photo, and the fit reads its height
    # loosely (20.6 mm for 15 here); the board is placed as well as ever. Counted at its height, the estimate
    # refused it at 20.6 mm; it moves the face less than auto.hump_unseen_mm (2.5 mm), so it counts that far
    image, truth = _humped_render(board, 15.0, tilt_deg=1.0)
    outline = auto.find_outline(image, board)
    height = max(abs(v) for v in outline.bow_mm)
    assert outline.placed_by == "grid" and height > settings_of("calibrate")["auto"]["max_hump_mm"]
    off_mm = np.linalg.norm(truth.px_to_mm(outline.corners_px) - board_corners_mm(board), axis=1)
    assert off_mm.max() < 1.5
    assert off_mm.max() <= outline.error_mm <= error_limit() < height  # kept


@needs_fixtures
def test_a_lens_nobody_calibrated_is_read_off_the_printed_lines(board, monkeypatch):
    # touching_and_lines was taken through a lens with k1 = +0.07 (pincushion) that the method is not
    # told about: a homography alone cannot follow the bent lines and misses a corner by over 3 mm;
    # with the lens read off the printed lines the corners are within the target again
    image, truth, _ = _fixture("touching_and_lines")
    cal = calibrate_auto(image, board)
    assert cal.dist_coeffs is not None and cal.dist_coeffs[0] > 0.05
    assert "lens distortion read off the printed lines" in cal.error_source
    err = corner_errors_mm(cal, truth, board)
    assert np.median(err) <= 1.0 and err.max() <= 1.5
    monkeypatch.setitem(settings_of("calibrate")["auto"], "lens_fit", False)
    assert corner_errors_mm(calibrate_auto(image, board), truth, board).max() > 3.0


def test_a_lens_read_off_the_coloured_bands_is_turned_down(board, monkeypatch):
    # detection scene 49022 (photo alone): a camera of k1 -0.03 whose printed lines the shipped lens fit
    # reads as a barrel lens of -0.27, the board then kept 5.1 mm off while estimated 2.2 mm; fitted with the
    # bands' pull too, that k1 moves by more than lens_pull_max_move, so no lens is read and the board
    # is not kept wrong
    from knockcam.calibrate.bench import _synth_photo

    image, truth = _synth_photo(board, 0, seed=49022)
    cal = calibrate_auto(image, board)
    assert cal.dist_coeffs is None
    assert cal.error_mm > 3.0 or corner_errors_mm(cal, truth, board).max() <= 3.0
    monkeypatch.setitem(settings_of("calibrate")["auto"], "lens_pull_max_move", float("inf"))
    trusting = calibrate_auto(image, board)
    assert trusting.dist_coeffs is not None and trusting.dist_coeffs[0] < -0.2
    assert trusting.error_mm <= 3.0 < corner_errors_mm(trusting, truth, board).max()


def test_from_given_corners_the_lens_is_not_put_to_the_bands_pull_check(board, monkeypatch):
    # synth calibration run 4260/82 from its true corners + 3 px of noise (the corners check of
    # docs/calibration-measured.md): a barrel lens read off the printed lines (-0.18) places the board 1.2 mm off,
    # estimated 1.3 mm; put to the pull check, that lens is turned down and the board, estimated 8 mm
    # off without it, is refused. From given corners the check lost 2 good boards for 1 bad one
    from knockcam.calibrate.bench import _synth_photo

    image, truth = _synth_photo(board, 82, seed=4260)
    noisy = truth.corners_px(board.size_mm) + np.random.default_rng(4260 * 1000 + 82).normal(0, 3.0, (4, 2))
    cal = calibrate_auto(image, board, start_px=noisy)
    assert cal.dist_coeffs is not None and cal.dist_coeffs[0] < -0.1
    assert cal.error_mm <= 3.0 and corner_errors_mm(cal, truth, board).max() <= 3.0
    checked = auto.fit_lens_from_grid
    monkeypatch.setattr(auto, "fit_lens_from_grid", lambda *args, **kw: checked(*args, **{**kw, "pull_check": True}))
    assert calibrate_auto(image, board, start_px=noisy).error_mm > 3.0


@needs_fixtures
def test_a_strong_lens_nobody_calibrated_places_the_board_where_the_lens_fit_put_it(board, monkeypatch):
    # lens_distortion's barrel lens (k1 -0.36 read) bends the printed lines so much that the board is
    # not found again in the undistorted photo (too few samples on a line there: the edges alone put
    # it 21 mm off), and without the lens the flat fit misses a corner by 28 mm; the lens fit itself,
    # on the photo's own pixels, places every corner within 3 mm, and its estimate (2.6 mm at a worst
    # corner 2.75 mm off) keeps it
    image, truth, _ = _fixture("lens_distortion")
    cal = calibrate_auto(image, board)
    err = corner_errors_mm(cal, truth, board)
    assert cal.dist_coeffs is not None and cal.dist_coeffs[0] < -0.3
    assert err.max() <= 3.0 and 0.75 * err.max() <= cal.error_mm <= 3.0
    monkeypatch.setattr(auto, "placed_with_lens", lambda *args: None)
    assert corner_errors_mm(calibrate_auto(image, board), truth, board).max() > 10.0


@needs_fixtures
def test_printed_lines_are_measured_where_the_humped_board_puts_them(board):
    # lens_distortion's board rises 7.5 mm along its middle: measured where a flat board would put
    # them, its sharp lines look as wide as a blurred photo's and would scale its estimate up for nothing
    image, truth, _ = _fixture("lens_distortion")
    undistorted = cv2.undistort(image, truth.camera_matrix, truth.dist_coeffs)
    hump = (truth.hump.along_mm, truth.hump.across_mm)
    assert auto._lines_width_px(undistorted, truth.homography, board, hump) <= 5.0
    assert auto._lines_width_px(undistorted, truth.homography, board) >= 6.5


def test_the_printed_lines_resampled_count_more_in_a_blurred_photo():
    cfg = settings_of("calibrate")["auto"]
    sharp = float(cfg["grid_spread_sharp_px"])
    base = auto._spread_error_mm(0.5, sharp - 1.0, cfg)
    assert base == pytest.approx(float(cfg["grid_spread_factor"]) * 0.5)
    assert auto._spread_error_mm(0.5, sharp, cfg) == pytest.approx(base)
    assert auto._spread_error_mm(0.5, 2 * sharp, cfg) == pytest.approx(4 * base)
    assert auto._spread_error_mm(0.5, float("inf"), cfg) == float("inf")  # no line seen at all


@needs_fixtures
def test_no_lens_is_made_up_for_a_photo_taken_without_distortion(board):
    image, truth, _ = _fixture("all_16_tokens")
    assert truth.dist_coeffs is None
    assert calibrate_auto(image, board).dist_coeffs is None


def test_a_mild_lens_is_kept_when_the_board_found_through_it_is_estimated_better(board, monkeypatch):
    # render 3098 (a tuning scene) was taken through a mild lens (k1 +0.014, k2 +0.016): it hardly
    # bends the printed lines in the middle of the photo (their RMS offset falls by 3%), but the board's
    # near corners lie at the photo's edge, where it moves them by 4 mm; the board found through the
    # lens read off the lines has the lower estimated error, so the lens is kept
    from knockcam.synth.scene import make_photo

    jpeg, _, rendered = make_photo(board, 3098, 0)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    truth = rendered.spec.calibration(board)
    cal = calibrate_auto(image, board)
    assert cal.dist_coeffs is not None and "lens distortion read off the printed lines" in cal.error_source
    assert corner_errors_mm(cal, truth, board).max() <= 1.5
    monkeypatch.setitem(settings_of("calibrate")["auto"], "lens_fit", False)
    flat = calibrate_auto(image, board)
    assert corner_errors_mm(flat, truth, board).max() > 3.0 and flat.error_mm > cal.error_mm


def test_no_lens_is_read_off_printed_lines_the_grid_did_not_find(board):
    # tuning render 3001/149 is blurred and taken without distortion; the printed grid does not confirm
    # the outline the edges give (12% of its samples on a line). A lens read off those lines (k1 +0.36)
    # put the board 10 mm off with an estimate just under 3 mm; with no lens read there the board is
    # refused, its estimate over the limit
    from knockcam.synth.scene import make_photo

    jpeg, _, rendered = make_photo(board, 3001, 149)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    cal = calibrate_auto(image, board)
    assert cal.grid_share is None and cal.dist_coeffs is None
    assert cal.error_mm > settings_of("calibrate")["quality"]["max_error_mm"]


def test_a_lens_read_with_a_hump_no_board_has_is_not_kept(board, committed_render, monkeypatch):
    # tuning render 3001/153: a board humped by 2 mm, taken through a nearly distortion-free lens. Read
    # off the printed lines, the hump came out as a strong barrel lens (k1 -0.54) with a 25 mm dip, and
    # the board found through it was 4.8 mm off while estimated at 2.6 mm; without that lens it is
    # within 2 mm. The bands' pull moves that lens too (lens_pull_max_move), so each rule alone turns it down
    image, truth = committed_render(3001, 153)
    cal = calibrate_auto(image, board)
    assert cal.dist_coeffs is None and corner_errors_mm(cal, truth, board).max() <= 2.0
    monkeypatch.setitem(settings_of("calibrate")["auto"], "max_hump_mm", 100.0)
    assert calibrate_auto(image, board).dist_coeffs is None
    monkeypatch.setitem(settings_of("calibrate")["auto"], "lens_pull_max_move", float("inf"))
    bent = calibrate_auto(image, board)
    assert bent.dist_coeffs is not None and bent.dist_coeffs[0] < -0.4
    assert corner_errors_mm(bent, truth, board).max() > 4.0 > 3.0 > bent.error_mm


@needs_fixtures
def test_a_phone_size_photo_is_calibrated_at_working_size_in_its_own_pixels(board):
    """A 4032x2268 photo no sharper than a webcam's (the fixture scaled up): searched at full size, the
    printed lines are too wide for the grid's line search and the board lands 17 mm off; scaled
    down to calibrate.yaml photo.max_px it is found as in the original, in the big photo's pixels."""
    image, truth, _ = _fixture("all_16_tokens")
    big = cv2.resize(image, (4032, 2268), interpolation=cv2.INTER_CUBIC)
    cal = calibrate_auto(big, board, truth.camera_matrix, truth.dist_coeffs)
    assert cal.image_size == (4032, 2268) and "scaled down" in cal.error_source
    err = corner_errors_mm(cal, truth.resized((4032, 2268)), board)
    assert np.median(err) <= 1.0 and err.max() <= 3.0 and cal.error_mm <= 3.0


def test_a_board_its_edges_alone_placed_is_estimated_at_its_worst_corner(board):
    # tuning render 21721 (an empty-board frame): the printed grid does not confirm the outline and the
    # edges alone place the board 28 mm off at its worst corner. Counted over the whole board the
    # estimate was 2.5 mm and the board was kept; at the worst corner it is over the limit, refused
    from knockcam.synth.scene import make_photo

    _, truth_dict, _, ref_jpeg = make_photo(board, 21721, 0, reference=True)
    image = cv2.imdecode(np.frombuffer(ref_jpeg, np.uint8), cv2.IMREAD_COLOR)
    cal = calibrate_auto(image, board)
    truth = Calibration.from_dict(truth_dict["calibration"])
    assert cal.grid_share is None and "worst corner" in cal.error_source
    assert corner_errors_mm(cal, truth, board).max() > 3.0
    assert cal.error_mm > settings_of("calibrate")["quality"]["max_error_mm"]


@needs_fixtures
def test_a_defocused_photo_is_sharpened_and_the_board_found_in_it(board, monkeypatch):
    # the defocus fixture (lens not given): in the photo as it is, the grid places the board 5-6 mm off
    # and estimates 11 mm (refused); sharpened for the defocus read off its cepstrum, within 3 mm and kept
    image, truth, _ = _fixture("defocus")
    cal = calibrate(image, board)
    assert "sharpened for a defocus blur" in cal.error_source and cal.error_mm <= 3.0
    err = corner_errors_mm(cal, truth, board)
    assert err.max() <= 3.0 and cal.error_mm >= 0.5 * err.max()
    # a board found in a sharpened photo counts only when most of the grid's samples sit on a line again
    monkeypatch.setitem(settings_of("calibrate")["sharpen"], "min_grid_share", 1.01)
    with pytest.raises(KnockcamError, match="over the 3 mm limit"):
        calibrate(image, board)


@needs_fixtures
def test_a_photo_kept_as_it_is_is_not_sharpened(board, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("a board kept in the photo as it is needs no sharpening")

    monkeypatch.setattr(auto, "blur_readings", never)
    image, truth, _ = _fixture("overhead")
    cal = calibrate_auto(image, board)
    assert "sharpened" not in cal.error_source and corner_errors_mm(cal, truth, board).max() <= 3.0


def test_the_lens_is_read_again_on_the_sharpened_photo(board, monkeypatch):
    # tuning render 3006/36 (a 13 px motion blur, lens not given): read on the blurred photo, the lens
    # left the board found in the sharpened one 4.6 mm off while estimated 2.2 mm (kept). Read again on
    # the sharpened photo, where the printed lines are crisp, it places the board within 1 mm
    from knockcam.synth.scene import make_photo

    jpeg, truth_dict, _ = make_photo(board, 3006, 36)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    truth = Calibration.from_dict(truth_dict["calibration"])
    cal = calibrate_auto(image, board)
    assert "sharpened for a motion blur" in cal.error_source and "lens distortion read" in cal.error_source
    assert corner_errors_mm(cal, truth, board).max() <= 1.0 and cal.error_mm <= 3.0
    # without a lens the sharpened board is not placed as well
    monkeypatch.setitem(settings_of("calibrate")["auto"], "lens_fit", False)
    flat = calibrate_auto(image, board)
    assert corner_errors_mm(flat, truth, board).max() > 3.0


def test_a_less_certain_lens_is_tried_around_a_board_that_would_be_refused(board, committed_render, monkeypatch):
    # tuning render 3904/304 (lens not given): the lens the printed lines show is read at 3-5 standard
    # errors, under auto.lens_min_z. Without it the board is 8.3 mm off and refused; tried because the
    # board would be refused anyway (auto.lens_refused_min_z), it places the board within 3 mm, kept
    image, truth = committed_render(3904, 304)
    cal = calibrate_auto(image, board)
    assert "lens distortion read" in cal.error_source and cal.error_mm <= 3.0
    assert corner_errors_mm(cal, truth, board).max() <= 3.0
    auto_cfg = settings_of("calibrate")["auto"]
    monkeypatch.setitem(auto_cfg, "lens_refused_min_z", auto_cfg["lens_min_z"])
    strict = calibrate_auto(image, board)
    assert strict.error_mm > settings_of("calibrate")["quality"]["max_error_mm"]
    assert corner_errors_mm(strict, truth, board).max() > 3.0


@needs_fixtures
def test_a_board_found_sharpened_with_a_hump_no_board_has_is_not_kept(board, monkeypatch):
    # the motion_blur fixture, lens not given: in the photo sharpened for the defocus also read off it
    # (6 px, wider than calibrate.yaml sharpen.max_defocus_px now lets through), the grid fits a 24 mm
    # hump across the board and places it 7.9 mm off, estimated 3.2 mm: it was refused with an offer of
    # --max-error that would have kept it. Such a hump is not a board's
    image, truth, _ = _fixture("motion_blur")
    cal = calibrate_auto(image, board)
    assert "sharpened" not in cal.error_source
    assert cal.error_mm > settings_of("calibrate")["quality"]["accept_max_mm"]
    monkeypatch.setitem(settings_of("calibrate")["sharpen"], "max_defocus_px", 100.0)
    assert "sharpened" not in calibrate_auto(image, board).error_source
    monkeypatch.setitem(settings_of("calibrate")["auto"], "max_hump_mm", 100.0)
    humped = calibrate_auto(image, board)
    assert "sharpened" in humped.error_source and abs(humped.hump.across_mm) > 20
    assert corner_errors_mm(humped, truth, board).max() > 3.0 and humped.error_mm < 6.0


@needs_fixtures
def test_a_photo_under_warm_light_is_white_balanced_before_the_board_is_looked_for(board, monkeypatch):
    """Blue at half and green at 0.78 (a camera balanced for daylight under a warm lamp): the edge and line
    searches lose the blue channel's contrast and place the board tens of millimetres off."""
    image, truth, _ = _fixture("oblique_60")
    warm = np.clip(image.astype(np.float32) * np.float32([0.5, 0.78, 1.0]), 0, 255).astype(np.uint8)
    warm = cv2.imdecode(cv2.imencode(".jpg", warm, [cv2.IMWRITE_JPEG_QUALITY, 92])[1], cv2.IMREAD_COLOR)
    cast_above = settings_of("calibrate")["photo"]["cast_above"]
    assert colour_cast(auto.photo_white(warm)) > cast_above >= colour_cast(auto.photo_white(image))
    assert auto.evened(image) is image
    cal = calibrate_auto(warm, board)
    assert cal.error_mm <= 3.0 and corner_errors_mm(cal, truth, board).max() <= 3.0
    monkeypatch.setitem(settings_of("calibrate")["photo"], "cast_above", 99.0)
    assert calibrate_auto(warm, board).error_mm > 3.0


@needs_fixtures
def test_an_underexposed_photo_is_brightened_before_the_board_is_looked_for(board, monkeypatch):
    """A tenth of the light: the printed lines barely differ from the paper in grey levels."""
    image, truth, _ = _fixture("touching_and_lines")
    dim = np.clip(image.astype(np.float32) * 0.1 + 0.5, 0, 255).astype(np.uint8)
    assert auto.photo_light(dim) < settings_of("calibrate")["photo"]["dim_below"] <= auto.photo_light(image)
    assert auto.evened(image) is image
    cal = calibrate_auto(dim, board)
    assert cal.error_mm <= 3.0 and corner_errors_mm(cal, truth, board).max() <= 3.0
    monkeypatch.setitem(settings_of("calibrate")["photo"], "dim_below", 0)
    with pytest.raises(KnockcamError, match="board not found"):
        calibrate_auto(dim, board)


@needs_fixtures
def test_a_sharpened_board_is_judged_by_the_blurred_boards_own_estimate(board):
    """The cup_cards_banknotes fixture's empty-board frame: its edges alone place the board 22.9 mm off
    (estimated 16.7 mm), and the photo sharpened places it 12.6 mm off, estimated 2.4 mm on its own. Lying
    12.6 mm outside the first board's estimate, it is estimated that far and refused. Counting the edges'
    blur in the first board's estimate before this comparison (it is 30 px wide) made room for the
    sharpened board, kept 12.6 mm off: the blur is counted on the answer only."""
    image = cv2.imread(str(SCENES / "cup_cards_banknotes_ref.jpg"))
    truth = Calibration.from_dict(json.loads((SCENES / "cup_cards_banknotes.json").read_text())["calibration"])
    cal = calibrate_auto(image, board)
    assert corner_errors_mm(cal, truth, board).max() > 10 and cal.error_mm > 10


def test_a_registration_a_row_of_spaces_off_is_moved_a_row_along(board):
    """The rows of spaces repeat along the board: a grid registration started a whole row off settles there.
    The best one so far is registered again a row along either way (tuning render 4244/101: the outline
    found took a table's stripe for the near edge and was placed 85 mm off, estimated 1.4 mm)."""
    from knockcam.calibrate.bench import _synth_photo
    from knockcam.calibrate.grid import fit_grid, ridge_image

    image, truth = _synth_photo(board, 101, seed=4244)
    assert auto.row_pitch_mm(board) == 85.0
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    ridge = ridge_image(gray.astype(np.float32), 1.0)
    row_off = truth.homography @ np.array([[1, 0, 0], [0, 1, -85.0], [0, 0, 1]])  # the near edge a row out
    settled = fit_grid(gray, row_off, board, radii=(4.0, 2.0), bow=False, ridge=ridge)
    assert corner_errors_mm(Calibration(method="auto", image_size=truth.image_size, homography=settled.homography),
                            truth, board).min() > 80  # the lines hold it a row off
    along = auto._a_row_along([(settled, gray)], [gray], [ridge], board, (4.0, 2.0), 0.1)
    best = max(along, key=lambda f: f[0].score)[0]
    assert best.score > settled.score + 0.15
    assert corner_errors_mm(Calibration(method="auto", image_size=truth.image_size, homography=best.homography),
                            truth, board).max() < 3.0  # a flat fit, the lens not read: not a row off
    cal = calibrate_auto(image, board)  # and the whole search keeps that one
    assert corner_errors_mm(cal, truth, board).max() <= max(cal.error_mm, 3.0)


@pytest.mark.parametrize("index", [28, 30])
def test_a_cut_board_is_looked_for_from_the_best_registration_and_from_a_row_along_it(board, index):
    """Cut tuning renders of run 4247 (a board corner 60 px past the photo's bottom or right edge). At 30 a
    row along fits better than the first registration (64% against 51% of samples on a line), but the board
    cut by the edge is found from the first (88%): searched only from the row along, it was placed 239 mm off
    and refused. At 28 it is found only from the row along: searched only from the first, 2351 mm off."""
    from knockcam.calibrate.bench import CUT_PX, CUT_SIDES, _synth_photo, cut_photo

    image, truth = _synth_photo(board, index, seed=4247)
    image, truth = cut_photo(image, truth, board, CUT_SIDES[index % 4], CUT_PX[(index // 4) % 2])
    cal = calibrate_auto(image, board)
    assert corner_errors_mm(cal, truth, board).max() < 3.0 and cal.error_mm < 3.0
