"""The reference-frame detector: camera from the homography, base discs in leaning blobs, whole scenes."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam import settings
from knockcam.board import load_board
from knockcam.board.topdown import TopDown
from knockcam.calibrate.calibration import Calibration
from knockcam.detect import reference as ref
from knockcam.errors import KnockcamError
from knockcam.sides import SIDES


@pytest.fixture(scope="module")
def board():
    return load_board()


def camera_looking_at(center, target, f=900.0, size=(1280, 720)):
    """K, R, t of a pinhole camera at ``center`` (board mm) looking at ``target``."""
    center, target = np.asarray(center, float), np.asarray(target, float)
    z = target - center
    z /= np.linalg.norm(z)
    up = np.array([0.0, 1.0, 0.0]) - z[1] * z
    if np.linalg.norm(up) < 1e-6:
        up = np.array([1.0, 0.0, 0.0]) - z[0] * z
    y = -up / np.linalg.norm(up)
    x = np.cross(y, z)
    r = np.vstack([x, y, z])
    k = np.array([[f, 0, size[0] / 2], [0, f, size[1] / 2], [0, 0, 1.0]])
    return k, r, -r @ center


def calibration_for(center, target=(200, 450, 0), f=900.0):
    k, r, t = camera_looking_at(center, target, f)
    h = k @ np.column_stack([r[:, 0], r[:, 1], t])
    return Calibration(method="truth", image_size=(1280, 720), homography=h / h[2, 2])


@pytest.mark.parametrize("center", [(-600.0, 200.0, 900.0), (200.0, -700.0, 800.0), (900.0, 1300.0, 1200.0)])
def test_viewpoint_finds_an_oblique_camera_from_the_homography_alone(center):
    vp = ref.viewpoint(calibration_for(center))
    assert vp.estimated_focal
    assert vp.focal_px == pytest.approx(900.0, rel=0.01)
    assert np.allclose(vp.center_mm, center, atol=5.0)


def test_viewpoint_overhead_keeps_the_nadir_even_without_a_focal_length():
    vp = ref.viewpoint(calibration_for((200.0, 450.0, 1000.0), target=(200.0, 450.0, 0.0)))
    assert np.allclose(vp.nadir_mm, (200.0, 450.0), atol=2.0)
    assert vp.height_mm > 300


def test_viewpoint_uses_a_calibrated_lens():
    cal = calibration_for((-500.0, 300.0, 700.0), f=1100.0)
    k = np.array([[1100.0, 0, 640], [0, 1100.0, 360], [0, 0, 1]])
    from dataclasses import replace

    vp = ref.viewpoint(replace(cal, camera_matrix=k, dist_coeffs=np.zeros(5)))
    assert np.allclose(vp.center_mm, (-500.0, 300.0, 700.0), atol=3.0)


def _leaning_token(mask, res, cls, view, xy_mm, nadir_mm, height_mm, side, board):
    """Paint a token's top-down silhouette (base disc swept up to its top) into the maps."""
    import cv2

    s = view.px_per_mm
    c = view.to_px([xy_mm])[0]
    n = view.to_px([nadir_mm])[0]
    lean = board.token.height_mm / (height_mm - board.token.height_mm)
    poly = ref._envelope(c, n, board.token.base_diameter_mm / 2 * s, lean * 0.8)
    m = np.zeros(mask.shape, np.uint8)
    cv2.fillConvexPoly(m, poly, 1)
    m = m.astype(bool)
    mask |= m
    res[m] = 120.0
    cls[m] = SIDES.index(side)


def test_touching_tokens_in_one_blob_are_split_and_their_bases_found(board):
    cfg = settings.load("reference")
    view = TopDown(board, px_per_mm=1.0, margin_mm=40.0)
    w, h = view.size
    mask = np.zeros((h, w), bool)
    res = np.zeros((h, w), np.float32)
    cls = np.full((h, w), -1, np.int8)
    nadir = (-500.0, 300.0)
    height = 600.0
    # three bases in a row across the lean, touching (25.3 mm apart): red, blue, blue
    bases = [((120.0, 500.0), "red"), ((112.2, 524.0), "blue"), ((104.4, 548.1), "blue")]
    for xy, side in sorted(bases, key=lambda b: -np.hypot(b[0][0] - nadir[0], b[0][1] - nadir[1])):
        _leaning_token(mask, res, cls, view, xy, nadir, height, side, board)
    vp = ref.Viewpoint(center_mm=np.array([nadir[0], nadir[1], height]), focal_px=900.0, estimated_focal=True)
    blobs = ref.find_bases(mask, cls, res, view, vp, board, cfg)
    assert len(blobs) == 3
    found = [(view.to_mm([b.center_px])[0], SIDES[int(np.argmax(b.side_votes))]) for b in blobs]
    for xy, side in bases:
        fxy, fside = min(found, key=lambda f: np.hypot(*(f[0] - np.array(xy))))
        assert np.hypot(*(fxy - np.array(xy))) < 1.5, (xy, found)
        assert fside == side


def test_the_base_is_the_end_nearest_the_camera_not_the_blob_centre(board):
    cfg = settings.load("reference")
    view = TopDown(board, px_per_mm=1.0, margin_mm=40.0)
    w, h = view.size
    mask = np.zeros((h, w), bool)
    res = np.zeros((h, w), np.float32)
    cls = np.full((h, w), -1, np.int8)
    nadir, height, xy = (200.0, -900.0), 500.0, (200.0, 600.0)  # strongly oblique: a long lean towards +y
    _leaning_token(mask, res, cls, view, xy, nadir, height, "yellow", board)
    vp = ref.Viewpoint(center_mm=np.array([nadir[0], nadir[1], height]), focal_px=900.0, estimated_focal=True)
    (blob,) = ref.find_bases(mask, cls, res, view, vp, board, cfg)
    fxy = view.to_mm([blob.center_px])[0]
    ys, xs = np.nonzero(mask)
    centroid = view.to_mm([(xs.mean(), ys.mean())])[0]
    assert centroid[1] - xy[1] > 10  # the blob's centre is far from the base ...
    assert np.hypot(*(fxy - np.array(xy))) < 1.0  # ... the detector's base is not
    assert blob.fitted and not blob.fallen


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"


def load_fixture(case):
    """A committed synthetic scene: photo, empty-board frame, true calibration and truth."""
    truth = json.loads((FIXTURES / f"{case}.json").read_text())
    cal = Calibration.from_dict(truth["calibration"])
    image = cv2.imread(str(FIXTURES / f"{case}.jpg"))
    reference = cv2.imread(str(FIXTURES / f"{case}_ref.jpg"))
    return image, reference, cal, truth


@pytest.mark.parametrize("case", ["touching_and_lines", "hand", "cup_cards_banknotes"])
def test_fixture_tokens_are_found_with_their_side_and_base(board, case):
    image, reference, cal, truth = load_fixture(case)
    tokens = ref.detect_reference(image, reference, cal, board)
    upright = [t for t in truth["tokens"] if not t["fallen"] and t["state"] != "off_board" and t["visible"] > 0.9]
    assert upright
    hits = 0
    for t in upright:
        near = [d for d in tokens if np.hypot(d.xy_mm[0] - t["xy_mm"][0], d.xy_mm[1] - t["xy_mm"][1]) < 4.0]
        if near:
            assert near[0].side == t["side"], (case, t)
            assert near[0].source == "reference" and near[0].xy_px is not None
            hits += 1
    assert hits >= 0.8 * len(upright), (case, hits, len(upright))


@pytest.mark.parametrize("case", ["all_16_tokens", "touching_and_lines", "oblique_60"])
def test_a_standing_token_is_not_called_fallen(board, case):
    # a standing token's figure, seen at a slant, sticks out of its base: that is no sign that it fell
    image, reference, cal, truth = load_fixture(case)
    for k in ref.detect_reference(image, reference, cal, board):
        t = min(truth["tokens"], key=lambda t: np.hypot(t["xy_mm"][0] - k.xy_mm[0], t["xy_mm"][1] - k.xy_mm[1]))
        if np.hypot(t["xy_mm"][0] - k.xy_mm[0], t["xy_mm"][1] - k.xy_mm[1]) < 10 and not t["fallen"]:
            assert not k.fallen, (case, t)


def test_at_60_degrees_the_bases_are_found_not_the_leaning_figures(board):
    image, reference, cal, truth = load_fixture("oblique_60")
    tokens = ref.detect_reference(image, reference, cal, board)
    vp = ref.viewpoint(cal)
    close = 0
    for t in truth["tokens"]:
        if t["state"] == "off_board":
            continue
        lean = board.token.height_mm / (vp.height_mm - board.token.height_mm) * np.hypot(
            t["xy_mm"][0] - vp.nadir_mm[0], t["xy_mm"][1] - vp.nadir_mm[1])
        d = min((np.hypot(k.xy_mm[0] - t["xy_mm"][0], k.xy_mm[1] - t["xy_mm"][1]) for k in tokens), default=99.0)
        if d < 2.5:
            assert lean > 20  # the top of the figure is far from the base the detector reports
            close += 1
    assert close >= 2
    # Nothing where no token is. (Known weakness, kept visible here: the blue dog stands on the dark
    # blue band of its own colour, so its base does not differ from the empty board; its leaning
    # figure over the paper is then taken for a token about 30 mm off.)
    for k in tokens:
        assert min(np.hypot(k.xy_mm[0] - t["xy_mm"][0], k.xy_mm[1] - t["xy_mm"][1]) for t in truth["tokens"]) < 40


def test_fixture_assignments_match_the_truth_where_the_detector_is_sure(board):
    from knockcam.assign import assign

    image, reference, cal, truth = load_fixture("hand")
    positions = assign(ref.detect_reference(image, reference, cal, board), board)
    checked = 0
    for p in positions:
        if p.ambiguous:
            continue
        t = min(truth["tokens"], key=lambda t: np.hypot(t["xy_mm"][0] - p.token.xy_mm[0], t["xy_mm"][1] - p.token.xy_mm[1]))
        assert (p.token.side, p.space) == (t["side"], t["space"])
        checked += 1
    assert checked >= 5


def test_an_empty_board_has_no_tokens(board):
    image, reference, cal, _ = load_fixture("empty_board")
    assert ref.detect_reference(image, reference, cal, board) == []
    image, _, cal, _ = load_fixture("oblique_60")
    assert ref.detect_reference(image, image, cal, board) == []  # nothing changed: nothing there


def test_bad_inputs_are_clear_errors(board):
    image, reference, cal, _ = load_fixture("oblique_60")
    with pytest.raises(KnockcamError, match="same camera"):
        ref.detect_reference(image, reference[:-8], cal, board)
    with pytest.raises(KnockcamError, match="colour image"):
        ref.detect_reference(image[..., 0], reference, cal, board)
    with pytest.raises(KnockcamError, match="calibrate"):
        small = image[:360, :640].copy()
        ref.detect_reference(small, small, cal, board)


def _classes(photo_bgr, reference_bgr, measured=True):
    cfg = settings.load("reference")
    photo = np.full((4, 4, 3), photo_bgr, np.uint8)
    reference = np.full((4, 4, 3), reference_bgr, np.float32)
    return ref.colour_classes(photo, np.ones(3, np.float32), cfg, reference, np.full((4, 4), measured))[0, 0]


def test_washed_out_plastic_on_paper_is_plastic_but_a_shadow_is_not():
    paper = (200, 200, 200)
    pale_yellow = (150, 200, 205)  # saturation 0.27: under yellow's min_saturation
    assert _classes(pale_yellow, paper) == SIDES.index("yellow")
    assert ref.colour_classes(np.full((4, 4, 3), pale_yellow, np.uint8), np.ones(3, np.float32),
                              settings.load("reference"))[0, 0] == -1  # without the board's colour: not plastic
    assert _classes((120, 120, 120), paper) == -1  # a shadow on the paper
    tinted = (180, 200, 190)
    assert _classes((108, 120, 114), tinted) == -1  # a shadow on tinted print: a scale keeps the saturation
    # where the reference is clipped its tint is unknown: a shadow revealing it is no plastic
    assert _classes((140, 185, 150), (235, 255, 250), measured=False) == -1


def test_colour_classes_follow_the_hue_ranges_and_thresholds_of_the_settings():
    """Every pixel: the side whose hue range holds its hue, when saturated and bright enough (the table
    lookups against the definition in degrees and shares, on random colours and a random white balance)."""
    cfg = settings.load("reference")
    ccfg = cfg["colour"]
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    gains = rng.uniform(0.8, 1.25, 3).astype(np.float32)
    balanced = np.clip(image.astype(np.float32) * gains, 0, 255).astype(np.uint8)
    hsv = cv2.cvtColor(balanced, cv2.COLOR_BGR2HSV_FULL).astype(np.float64)
    hue, sat, val = hsv[..., 0] * 360.0 / 256.0, hsv[..., 1] / 255.0, hsv[..., 2] / 255.0
    expected = np.full(image.shape[:2], -1)
    for index, side in enumerate(SIDES):
        inside = np.zeros(image.shape[:2], bool)
        for lo, hi in ccfg["hues"][side]:
            inside |= (hue >= lo) & (hue < hi)
        expected[inside & (sat >= ccfg["min_saturation"][side]) & (val >= ccfg["min_value"])] = index
    got = ref.colour_classes(image, gains, cfg)
    assert (got == expected).all() and len(np.unique(got)) == len(SIDES) + 1


def test_small_changes_against_a_clipped_reference_are_not_token_pixels():
    cfg = settings.load("reference")
    orange = np.full((4, 4, 3), (60, 150, 255), np.uint8)  # red channel clipped
    darker = np.full((4, 4, 3), (48, 128, 252), np.uint8)  # a little less light: the clipped channel stays
    changed, strong, _ = ref.changed_pixels(darker, orange.astype(np.float32), cfg)
    classes = ref.colour_classes(darker, np.ones(3, np.float32), cfg)
    assert changed.all() and not strong.any() and (classes >= 0).all()  # a plastic-coloured change ...
    measured = ref.measured_colour(orange, cfg)
    assert not ref.token_mask(changed, strong, classes, measured).any()  # ... against a clipped reference
    assert ref.token_mask(changed, strong, classes, ~measured).all()


def test_changed_pixels_are_judged_each_on_its_own_in_every_band_of_rows():
    """The change is worked a band of rows at a time: every row, the last part-band's too, is judged as it would
    be alone (a pixel's answer depends on that pixel only)."""
    cfg = settings.load("reference")
    rng = np.random.default_rng(11)
    rows = 2 * ref._BAND_ROWS + 7
    reference = rng.uniform(0, 255, (rows, 5, 3)).astype(np.float32)
    # a third of the pixels a shadow of the reference (not changed), the rest new colours
    shadow = rng.random((rows, 5)) < 1 / 3
    photo = np.where(shadow[..., None], reference * 0.7, rng.uniform(0, 255, (rows, 5, 3))).astype(np.uint8)
    whole = ref.changed_pixels(photo, reference, cfg)
    alone = [ref.changed_pixels(photo[r:r + 1], reference[r:r + 1], cfg) for r in range(rows)]
    for got, single in zip(whole, zip(*alone)):
        assert got.shape == (rows, 5) and np.array_equal(got, np.concatenate(single))
    changed = whole[0]
    assert changed[~shadow].mean() > 0.8 and changed[shadow].mean() < 0.2


def test_a_hand_on_the_board_is_reported_where_it_lies(board):
    photo, reference, cal, truth = load_fixture("hand")
    (hand,) = [o for o in truth["occluders"] if o["kind"] == "hand"]
    (area,) = ref.look(photo, reference, cal, board).hidden
    outline = np.asarray(area.outline_mm)
    assert area.area_mm2 >= settings.load("reference")["hidden"]["min_area_mm2"]
    # the hand reaches in over the board's right edge (its wrist is off the board)
    assert outline[:, 0].max() >= board.size_mm[0] - 5 and outline[:, 1].min() <= hand["anchor_mm"][1] <= outline[:, 1].max()


@pytest.mark.parametrize("case", ["all_16_tokens", "empty_board", "overhead", "oblique_60", "off_board_and_fallen"])
def test_nothing_is_reported_hidden_when_only_tokens_are_on_the_board(board, case):
    photo, reference, cal, _ = load_fixture(case)
    assert ref.look(photo, reference, cal, board).hidden == ()


def test_a_token_under_a_hand_is_sent_to_a_human(board):
    """A render where a hand hides two tokens (less than 15% of each in view): the area reported
    reaches at least one of them, so the benchmark and the user are told to look there."""
    from knockcam.detect.tokens import near_hidden
    from knockcam.bench import make_scene

    scene = make_scene(board, 3026, held_out=False)
    hidden = [t for t in scene.tokens if t.visible < 0.15]
    assert len(hidden) == 2
    areas = ref.look(scene.image, scene.reference, scene.calibration, board).hidden
    assert any(near_hidden(t.xy_mm, areas, board.token.base_diameter_mm / 2) for t in hidden)


@pytest.mark.parametrize("seed", [3022, 3024, 3026])
def test_the_screen_skips_hopeless_fits_and_finds_the_same_tokens(board, seed, monkeypatch):
    """Candidates far from passing at their coarse centre are not fitted; the tokens are those of fitting all.

    Renders with hands, cups and glare, where most candidates are hopeless.
    """
    from knockcam.bench import make_scene

    scene = make_scene(board, seed, held_out=False)
    cfg = settings.load("reference")
    fits = []
    fit_front = ref._fit_front
    monkeypatch.setattr(ref, "_fit_front", lambda *a: fits.append(1) or fit_front(*a))
    screened = ref.look(scene.image, scene.reference, scene.calibration, board).tokens
    screened_fits = len(fits)
    fits.clear()
    fit_all = {**cfg, "token": {**cfg["token"], "screen_margin": 100.0}}
    load = settings.load
    monkeypatch.setattr(settings, "load", lambda name: fit_all if name == "reference" else load(name))
    every = ref.look(scene.image, scene.reference, scene.calibration, board).tokens
    assert screened == every and len(screened) > 0
    assert screened_fits < 0.9 * len(fits)
