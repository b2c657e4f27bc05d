"""Marker cards: the printed sheet is detectable and true to size; cards in a photo give the board."""

import re
from dataclasses import replace
import struct

import cv2
import numpy as np
import pytest

from knockcam import settings
from knockcam.board import load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.edges import up_px
from knockcam.calibrate.grid import fit_lift
from knockcam.calibrate.markers import (_detect, calibrate_markers, detect_markers, face_above_table,
                                        marker_corners_mm, png_with_dpi, sheet_image)
from knockcam.calibrate.quality import board_errors_mm, corner_errors_mm, homography_from_points
from knockcam.calibrate.scene import make_scene
from knockcam.errors import KnockcamError


def test_sheet_has_the_four_markers_at_true_size(tmp_path):
    dpi = 150
    page = sheet_image(dpi)
    assert page.shape == (round(297 * dpi / 25.4), round(210 * dpi / 25.4))
    found = detect_markers(page).corners
    assert sorted(found) == [0, 1, 2, 3]
    side_mm = np.linalg.norm(found[0][0] - found[0][1]) / (dpi / 25.4)
    assert side_mm == pytest.approx(50, abs=0.5)
    path = tmp_path / "m.png"
    data = png_with_dpi(page, dpi)
    path.write_bytes(data)
    i = data.index(b"pHYs")
    x, y, unit = struct.unpack(">IIB", data[i + 4:i + 13])
    assert unit == 1 and x == y == round(dpi / 0.0254)
    assert cv2.imread(str(path), cv2.IMREAD_GRAYSCALE).shape == page.shape


def test_cards_in_a_photo_give_the_board_within_a_millimetre(marker_scene, board):
    cal = calibrate_markers(marker_scene.image, board)
    err = corner_errors_mm(cal, marker_scene.truth, board)
    assert err.max() < 1.0
    assert cal.error_source.startswith("residual") and cal.error_mm < 1.5


def test_no_cards_is_a_clear_error(scene, board):
    with pytest.raises(KnockcamError, match="marker cards"):
        calibrate_markers(scene.image, board)


def _one_card_covered(image: np.ndarray, card: int) -> np.ndarray:
    """The photo with a card covered (a cup set on it): a brown disc over its marker."""
    marker = detect_markers(image).corners[card]
    covered = image.copy()
    centre = tuple(int(v) for v in marker.mean(axis=0))
    cv2.circle(covered, centre, int(np.linalg.norm(marker[0] - marker[2])), (40, 80, 120), -1)
    return covered


@pytest.mark.parametrize("card", [0, 2])
def test_three_cards_are_placed_by_the_printed_grid_which_measures_the_unseen_corner(marker_scene, board, card):
    cal = calibrate_markers(_one_card_covered(marker_scene.image, card), board)
    assert cal.method == "markers" and cal.error_source.startswith("3 of 4 cards")
    assert corner_errors_mm(cal, marker_scene.truth, board).max() <= cal.error_mm < 3.0


def test_three_cards_the_grid_does_not_confirm_are_refused_not_extrapolated(board):
    # seed 4: the three cards' residual was 0.7 mm while the unseen corner lay 6.4 mm off
    scene = make_scene(board, 4, markers=True)
    with pytest.raises(KnockcamError, match=r"found 3 of 4 marker cards \(the near-left card would be \d+ px "
                                            r"across, in view: covered, or blurred\?\), and the board's printed "
                                            r"lines do not confirm"):
        calibrate_markers(_one_card_covered(scene.image, 0), board)


@pytest.fixture(scope="module")
def large_cards_scene(board):
    """Own scene 8: every card 43-45 px across."""
    return make_scene(board, 8, markers=True)


def _covered(image: np.ndarray, cards: list[int]) -> np.ndarray:
    for card in cards:
        image = _one_card_covered(image, card)
    return image


def test_two_cards_missing_are_said_to_be_in_view_as_large_as_they_are(large_cards_scene, board):
    """Two cards found put the table's plane in the photo: a missing card's size is foretold from them."""
    sides = {i: np.sqrt(cv2.contourArea(c.astype(np.float32))) for i, c in detect_markers(large_cards_scene.image)
             .corners.items()}
    with pytest.raises(KnockcamError) as refused:
        calibrate_markers(_covered(large_cards_scene.image, [0, 1]), board)
    said = re.fullmatch(r"markers: found 2 of 4 marker cards \(the near-left and near-right cards would be (\d+) "
                        r"and (\d+) px across, in view: covered, or blurred\?\): frame all four cards, closer and "
                        r"in focus, or give --corners", str(refused.value))
    assert said, str(refused.value)
    assert abs(int(said[1]) - sides[0]) <= 2 and abs(int(said[2]) - sides[1]) <= 2


def test_cards_missing_outside_the_photo_or_too_small_are_said_to_be(large_cards_scene, board):
    found = detect_markers(large_cards_scene.image).corners
    right = int(min(found[0][:, 0].min(), found[1][:, 0].min())) - 5  # the near cards lie furthest right here
    with pytest.raises(KnockcamError, match=r"found 2 of 4 marker cards \(the near-left and near-right cards lie "
                                            r"outside the photo\): frame all four cards"):
        calibrate_markers(np.ascontiguousarray(large_cards_scene.image[:, :right]), board)
    mixed = make_scene(board, 26, markers=True)  # cards 42, 53, 25 and 22 px across
    with pytest.raises(KnockcamError, match=r"found 2 of 4 marker cards \(the far-left card would be 2\d px "
                                            r"across here, too small to read \(under 25 px a card is often missed\); "
                                            r"the near-right card would be 5\d px across, in view: covered, or "
                                            r"blurred\?\)"):
        calibrate_markers(_covered(mixed.image, [1, 3]), board)


@pytest.fixture(scope="module")
def thick_board_scene(board):
    """Cards on the table, the board's face 5 mm above it, seen at an angle (tuning seed 4275)."""
    return make_scene(board, 4275, markers=True, thickness_mm=5.0)


def _table_plane(image: np.ndarray, board) -> np.ndarray:
    """The homography of the plane the cards lie in, from their 16 corners alone."""
    found, expected = detect_markers(image).corners, marker_corners_mm(board)
    return homography_from_points(np.vstack([expected[i] for i in sorted(expected)]),
                                  np.vstack([found[i] for i in sorted(expected)]))


def _corner_errors(homography: np.ndarray, truth, board) -> np.ndarray:
    return corner_errors_mm(Calibration(method="corners", image_size=truth.image_size, homography=homography),
                            truth, board)


def test_cards_on_the_table_below_a_thick_board_give_its_face(thick_board_scene, board):
    truth = thick_board_scene.truth
    assert _corner_errors(_table_plane(thick_board_scene.image, board), truth, board).max() > 3.0  # the table's plane
    cal = calibrate_markers(thick_board_scene.image, board)
    assert corner_errors_mm(cal, truth, board).max() < 1.0
    read = re.search(r"the board's face (-?[\d.]+) mm above the cards \(read off (\d+) printed-line", cal.error_source)
    assert read and 3.5 <= float(read.group(1)) <= 6.5 and int(read.group(2)) >= 200
    assert cal.error_source.startswith("residual") and cal.error_mm < 1.5


def test_a_face_whose_lines_do_not_show_is_taken_at_the_files_thickness_with_its_doubt(thick_board_scene, board):
    cfg = settings.load("calibrate")["markers"]["face"]
    blank = np.full(thick_board_scene.image.shape[:2], 128, np.uint8)  # no printed line to read
    face, height, doubt_mm, source = face_above_table(blank, _table_plane(thick_board_scene.image, board), board)
    face = face.homography
    assert height == cfg["thickness_mm"] and source.startswith("calibrate.yaml's, the printed lines not read")
    # the true face (5 mm up) lies within what the stated doubt (2.5 mm of height) moves the corners by
    assert _corner_errors(face, thick_board_scene.truth, board).max() <= doubt_mm


def test_three_cards_below_a_thick_board_are_placed_by_its_printed_grid(thick_board_scene, board):
    cal = calibrate_markers(_one_card_covered(thick_board_scene.image, 1), board)
    assert cal.error_source.startswith("3 of 4 cards")
    assert corner_errors_mm(cal, thick_board_scene.truth, board).max() <= max(cal.error_mm, 1.0)


def _markers_render(index: int):
    """knockcam.synth render ``index`` of tuning run 4243 with the cards laid (preset markers): the photo,
    its true Calibration and its render (camera, board thickness, hump)."""
    from knockcam.synth.scene import config, make_photo

    jpeg, truth, rendered = make_photo(load_board(), 4243, index, config("markers"))
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR), Calibration.from_dict(truth["calibration"]), \
        rendered


def test_small_blurred_cards_missed_at_first_are_found_in_the_photo_enlarged(board):
    image, _, rendered = _markers_render(40)  # the far cards about 25 px wide, the photo blurred
    cam, thickness = rendered.spec.camera, rendered.spec.board_thickness_mm
    gray = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    assert sorted(_detect(gray)) == [2, 3]  # the first look alone
    found = detect_markers(image).corners
    assert sorted(found) == [0, 1, 2, 3]
    for marker_id, quad in marker_corners_mm(board).items():  # where the card on the table truly is
        assert np.abs(found[marker_id] - cam.project(np.column_stack([quad, np.full(4, -thickness)]))).max() < 2.0


def _lens_undone_table(image: np.ndarray, truth, board):
    """The grey photo with the true lens undone, the homography of the table the cards lie on (their 16 corners)
    and the image of a 1 mm step up from it."""
    gray = cv2.undistort(cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), truth.camera_matrix, truth.dist_coeffs)
    found, expected = detect_markers(image).corners, marker_corners_mm(board)
    px = cv2.undistortPoints(np.vstack([found[i] for i in sorted(found)]).reshape(-1, 1, 2), truth.camera_matrix,
                             truth.dist_coeffs, P=truth.camera_matrix).reshape(-1, 2)
    on_table = homography_from_points(np.vstack([expected[i] for i in sorted(found)]), px)
    return gray, on_table, up_px(on_table, board, truth.image_size)


def test_a_humped_board_is_read_with_its_hump_not_as_a_thicker_one(board):
    image, truth, rendered = _markers_render(12)  # a hump of 7.4 mm along the board, 2.7 mm thick
    cal = calibrate_markers(image, board, truth.camera_matrix, truth.dist_coeffs)
    assert cal.hump is not None and 4.0 < cal.hump.along_mm < 11.0
    assert board_errors_mm(cal, truth, board).max() < 1.5
    # read flat, the hump's lines lift the whole face: the corners went 11.9 mm off
    gray, on_table, up = _lens_undone_table(image, truth, board)
    flat = fit_lift(gray, on_table, up, board, (-3.0, 15.0), hump=False)
    lifted = on_table + flat.mm * np.outer(up, [0.0, 0.0, 1.0])
    assert _corner_errors(lifted / lifted[2, 2], truth, board).max() > 3.0


def test_a_height_held_fits_the_hump_alone(board):
    image, truth, rendered = _markers_render(12)  # a hump of 7.4 mm along the board, 2.7 mm thick
    gray, on_table, up = _lens_undone_table(image, truth, board)
    thickness = rendered.spec.board_thickness_mm
    held = fit_lift(gray, on_table, up, board, (-3.0, 15.0), height_mm=thickness)
    assert held.mm == thickness and held.se_mm == 0.0  # held, not measured
    assert 5.0 < held.hump[0] < 10.0
    assert fit_lift(gray, on_table, up, board, (-3.0, 15.0), height_mm=-2.0).hump != held.hump


def test_a_face_read_thinner_than_any_board_is_taken_at_the_thinnest(board):
    """Tuning render 4249/25 (a board 3.3 mm thick with a 2.0 mm hump): its lines read the face below the cards
    (1.8 mm below with a 7.9 mm hump and the corners 5.6 mm off, its cards' corners refined by ArUco's SUBPIX
    method; 1.4 mm below by CONTOUR). No board is that thin (calibrate.yaml
    auto.thickness_mm): the face is taken at the thinnest and the hump fitted again there."""
    from knockcam.calibrate import bench

    image, truth = bench._synth_photo(board, 25, seed=4249, preset="markers")
    cal = calibrate_markers(image, board)  # the lens not given
    thinnest = settings.load("calibrate")["auto"]["thickness_mm"][0]
    assert f"face {thinnest:.1f} mm above the cards" in cal.error_source
    read = re.search(r"as (-?[0-9.]+) mm, taken at a board's thinnest", cal.error_source)
    assert read and float(read.group(1)) < 0.0
    off = corner_errors_mm(cal, truth, board).max()
    assert off < 3.2 and cal.error_mm > off  # the error counts how far the height was moved, so it covers this
    assert cal.hump is not None and cal.hump.along_mm < 6.0


@pytest.fixture(scope="module")
def shaken_render():
    """knockcam.synth render 0 of tuning run 4245 with the cards laid: a motion blur of about 7 px smears the
    small cards' squares together (the photo, its true Calibration, its render)."""
    from knockcam.synth.scene import config, make_photo

    jpeg, truth, rendered = make_photo(load_board(), 4245, 0, config("markers"))
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR), Calibration.from_dict(truth["calibration"]), \
        rendered


def test_cards_a_blur_hides_are_found_with_the_blur_read_off_the_photo_undone(shaken_render, board):
    image, truth, rendered = shaken_render
    assert detect_markers(image, asked=False).seen == 0  # nor enlarged and sharpened: the default flow goes on
    cards = detect_markers(image)
    assert sorted(cards.corners) == [0, 1, 2, 3] and cards.sharpened_for.startswith("a motion blur of")
    cam, thickness = rendered.spec.camera, rendered.spec.board_thickness_mm
    for marker_id, quad in marker_corners_mm(board).items():  # undone, the blur leaves the corners where they are
        on_table = cam.project(np.column_stack([quad, np.full(4, -thickness)]))
        assert np.abs(cards.corners[marker_id] - on_table).max() < 2.0
    cal = calibrate_markers(image, board, cards=cards)
    assert corner_errors_mm(cal, truth, board).max() < 1.0 <= cal.error_mm < 3.0
    assert "found in the photo sharpened for a motion blur" in cal.error_source


def test_the_face_of_a_blurred_photo_is_read_in_the_photo_sharpened(shaken_render, board):
    """Read off the blurred printed lines, the face came out 7 mm above the cards (the board is 2.1 mm thick)
    and the corners 3.9 mm off, with 1.5 mm estimated."""
    image, truth, _ = shaken_render
    cards = detect_markers(image)
    blurred = replace(cards, face_photo=cv2.cvtColor(image, cv2.COLOR_BGR2GRAY), sharpened_for="")
    assert corner_errors_mm(calibrate_markers(image, board, cards=blurred), truth, board).max() > 3.0
    assert corner_errors_mm(calibrate_markers(image, board, cards=cards), truth, board).max() < 1.0


def test_a_phone_size_photo_takes_the_deblurred_look_at_the_searched_size_and_maps_the_cards_back(board):
    """A 12 MP render (tuning run 4245/44, cards laid) smeared by a 33 px shake: no card is found at first;
    the blur is read and undone at calibrate.yaml's photo.max_px, and the cards found there are mapped
    back to the photo's own pixels, where the sharp photo puts them."""
    from knockcam.calibrate import bench

    image, truth = bench._synth_photo(board, 44, seed=4245, size=(4032, 3024), preset="markers")
    sharp = detect_markers(image).corners
    shaken = cv2.filter2D(image, -1, np.full((1, 33), 1 / 33, np.float32))
    assert detect_markers(shaken, asked=False).seen == 0
    cards = detect_markers(shaken)
    assert sorted(cards.corners) == sorted(sharp) == [0, 1, 2, 3]
    assert cards.sharpened_for.startswith("a motion blur of") and cards.face_photo.shape == shaken.shape[:2]
    for i in sharp:  # a few px of the 1280 px photo searched, each 3.15 px here
        assert np.abs(cards.corners[i] - sharp[i]).max() < 12.0
    assert corner_errors_mm(calibrate_markers(shaken, board, cards=cards), truth, board).max() < 3.0
