"""Ground truth is self-consistent: pixels, corners, coverage, determinism."""

from dataclasses import replace

import cv2
import numpy as np
import pytest

from knockcam.board.layout import load_board
from knockcam.synth.art import BoardArt
from knockcam.synth.scene import PlacedToken, config, make_photo, render, sample_scene
from knockcam.synth.truth import resting, sampled_coverages

BOARD = load_board()


@pytest.fixture(scope="module")
def photos():
    return [make_photo(BOARD, 11, i) for i in range(5)]


def test_base_centres_project_to_their_pixels(photos):
    for _, truth, rendered in photos:
        cam = rendered.spec.camera
        cal = cam.calibration()
        flat = truth["board_bow_mm"] == [0.0, 0.0]
        for tok in truth["tokens"]:
            xy = np.array(tok["xy_mm"])
            assert tok["z_mm"] == pytest.approx(rendered.spec.surface_z([xy], BOARD)[0] if 0 <= xy[0] <= 400 and 0 <= xy[1] <= 915 else 0.0, abs=1e-3)
            px = cam.project(np.array([[xy[0], xy[1], tok["z_mm"]]]))[0]
            assert np.allclose(px, tok["xy_px"], atol=1e-2)
            if flat:  # the Calibration built from the true camera agrees, lens included
                assert np.allclose(cal.mm_to_px([xy])[0], tok["xy_px"], atol=0.05)
                back = cal.px_to_mm([tok["xy_px"]])[0]
                assert np.allclose(back, xy, atol=0.05)


def test_coverages_sum_to_at_most_one(photos):
    seen = 0
    for _, truth, _ in photos:
        for tok in truth["tokens"]:
            total = sum(tok["coverages"].values())
            assert total <= 1.0 + 1e-9
            if tok["space"] is not None:
                assert tok["state"] == "on_space"
                assert tok["coverage"] == max(tok["coverages"].values())
                assert tok["margin_mm"] is not None and tok["margin_mm"] >= 0
                seen += 1
            else:
                assert tok["state"] in ("no_space", "off_board")
    assert seen > 0


def test_exact_coverage_agrees_with_dense_sampling(photos):
    for _, truth, _ in photos:
        for tok in truth["tokens"]:
            sampled = sampled_coverages(BOARD, tok["xy_mm"])
            for sid in set(sampled) | set(tok["coverages"]):
                assert tok["coverages"].get(sid, 0.0) == pytest.approx(sampled.get(sid, 0.0), abs=0.01)


def test_resting_by_hand():
    board = BOARD
    r = resting(board, (48, 347.5))  # middle of Mediterranean Avenue (x 10-86, y 305-390)
    assert r.space == "mediterranean_avenue" and r.coverage == pytest.approx(1.0)
    assert r.margin_mm == pytest.approx(38.0, abs=0.05)
    r = resting(board, (86.0, 347.5))  # on the line between Mediterranean and Baltic
    assert r.coverages["mediterranean_avenue"] == pytest.approx(0.5, abs=0.01)
    assert r.coverages["baltic_avenue"] == pytest.approx(0.5, abs=0.01)
    r = resting(board, (90.0, 347.5))  # 4 mm into Baltic
    assert r.space == "baltic_avenue" and r.margin_mm == pytest.approx(4.0, abs=0.05)
    assert resting(board, (200, 100)).space is None  # the GO! area
    assert resting(board, (-50, 500)).state == "off_board"  # on the table


def _solid_scene(seed: int, tokens=()):
    """A scene whose board art is pure magenta and whose tokens are pure cyan, to find them by colour."""
    spec = sample_scene(BOARD, np.random.default_rng([seed, 0]), tokens=tuple(tokens), with_occluders=False)
    art = spec.art.image.copy()
    art[:] = (255, 0, 255)
    light = replace(spec.light, glare=None)
    return replace(spec, art=BoardArt(image=art, view=spec.art.view), light=light,
                   table=replace(spec.table, image=np.zeros_like(spec.table.image)))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_corners_project_where_the_board_is(seed):
    spec = _solid_scene(seed)
    img = render(spec, BOARD).image
    cam = spec.camera
    w, l = BOARD.size_mm
    inside = np.array([[6, 6, 0], [w - 6, 6, 0], [w - 6, l - 6, 0], [6, l - 6, 0]], dtype=float)
    outside = np.array([[-8, -8, 0], [w + 8, -8, 0], [w + 8, l + 8, 0], [-8, l + 8, 0]], dtype=float)
    for p in cam.project(inside):
        b, g, r = img[int(round(p[1])), int(round(p[0]))].astype(int)
        assert b > 80 and r > 80 and g < 0.5 * min(b, r), (p, (b, g, r))
    for p in cam.project(outside):
        x, y = int(round(p[0])), int(round(p[1]))
        if 0 <= x < img.shape[1] and 0 <= y < img.shape[0]:
            b, g, r = img[y, x].astype(int)
            assert not (b > 80 and r > 80 and g < 0.5 * min(b, r)), (p, (b, g, r))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_base_centre_pixel_shows_the_token(seed):
    rng = np.random.default_rng(seed)
    tokens = [PlacedToken(side="blue", shape=shape, xy_mm=(float(rng.uniform(40, 360)), float(rng.uniform(320, 880))),
                          yaw=float(rng.uniform(0, 6.28)), colour=(250.0, 250.0, 0.0), shine=0.0)
              for shape in ("cat", "car", "top_hat", "dog")]
    # keep them apart
    tokens = [replace(t, xy_mm=(60.0 + 90 * i, t.xy_mm[1])) for i, t in enumerate(tokens)]
    spec = _solid_scene(seed, tokens)
    rendered = render(spec, BOARD)
    img = rendered.image
    for tok in rendered.tokens:
        x, y = (int(round(v)) for v in tok.xy_px)
        b, g, r = img[y, x].astype(int)
        assert g > 60 and r < 0.5 * g, (tok.shape, (b, g, r))  # token cyan, not the magenta board
        assert tok.visible > 0.9
        x0, y0, x1, y1 = tok.bbox_px
        assert x0 <= tok.xy_px[0] <= x1 and y0 <= tok.xy_px[1] <= y1


def test_figure_leans_away_from_the_camera_when_oblique():
    for seed in range(30):
        spec = sample_scene(BOARD, np.random.default_rng([seed, 0]), tokens=(), with_occluders=False)
        cam = spec.camera
        tilt = np.degrees(np.arccos(-cam.r[2, 2]))
        if tilt > 40:
            break
    else:
        pytest.skip("no oblique camera drawn")
    base = np.array([[200.0, 600.0, 0.0]])
    top = np.array([[200.0, 600.0, BOARD.token.height_mm]])
    shift = cam.project(top) - cam.project(base)
    assert np.linalg.norm(shift) > 3  # an oblique view shows the figure displaced from its base


def test_same_seed_same_photo_other_index_other_photo():
    a = make_photo(BOARD, 5, 3)
    b = make_photo(BOARD, 5, 3)
    c = make_photo(BOARD, 5, 4)
    assert a[0] == b[0] and a[1] == b[1]
    assert a[0] != c[0]


def test_bowed_board_art_lands_where_truth_says():
    """Dots printed at known board points appear at their projected 3-D positions on a bowed board."""
    for seed in range(40):
        spec = sample_scene(BOARD, np.random.default_rng([seed, 0]), tokens=(), with_occluders=False)
        if np.degrees(np.arccos(-spec.camera.r[2, 2])) > 35:
            break
    art = spec.art.image.copy()
    art[:] = (255, 0, 255)
    pts = [(x, y) for x in range(30, 400, 50) for y in range(30, 915, 80)]
    for p in pts:
        u, v = spec.art.view.to_px([p])[0]
        cv2.circle(art, (int(round(u)), int(round(v))), 5, (255, 255, 0), -1)
    spec = replace(spec, art=BoardArt(image=art, view=spec.art.view), bow_mm=(12.0, 5.0),
                   light=replace(spec.light, glare=None))
    img = render(spec, BOARD).image
    hits = 0
    for p in pts:
        q = spec.camera.project(np.array([[p[0], p[1], spec.surface_z([p], BOARD)[0]]]))[0]
        b, g, r = img[int(round(q[1])), int(round(q[0]))].astype(int)
        hits += g > 0.6 * b and r < 0.6 * g
    assert hits == len(pts)


def test_a_hand_over_a_token_hides_it():
    from knockcam.synth import occluders as occ

    tok = PlacedToken(side="red", shape="cat", xy_mm=(200.0, 600.0), yaw=0.0, colour=(40.0, 40.0, 200.0))
    other = PlacedToken(side="blue", shape="car", xy_mm=(100.0, 350.0), yaw=0.0, colour=(200.0, 90.0, 30.0))
    cfg = config()
    cfg = {**cfg, "camera": {**cfg["camera"], "tilt_deg": [0, 1]}}  # straight overhead
    spec = sample_scene(BOARD, np.random.default_rng([3, 0]), cfg, tokens=(tok, other), with_occluders=False)
    clear = render(spec, BOARD).tokens
    assert clear[0].visible > 0.95 and clear[1].visible > 0.95
    hand = occ.hand((230.0, 600.0), 0.0, 40.0, (120, 160, 210), (50, 50, 50))
    covered = render(replace(spec, occluders=(hand,)), BOARD)
    hidden = covered.tokens
    assert hidden[0].visible < 0.3  # under the palm
    assert hidden[1].visible > 0.95  # far from it
    # the render's mask of what covers the board: under the palm, not at the far token, nothing without the hand
    palm, far = (np.round(t.xy_px).astype(int) for t in hidden)
    assert covered.covered[palm[1], palm[0]] and not covered.covered[far[1], far[0]]
    assert not render(spec, BOARD).covered.any()


@pytest.mark.parametrize("fallen_dir", [0.0, 1.0, 2.5, 4.0])
def test_a_fallen_token_lies_where_its_truth_says(fallen_dir):
    # the figure lies from its base towards lies_to_mm (the fall direction), flat on the board
    from knockcam.synth.scene import _lies_to
    from knockcam.synth.tokens import pose_token

    tok = PlacedToken(side="red", shape="cat", xy_mm=(200.0, 600.0), yaw=0.7, colour=(40.0, 40.0, 200.0),
                      fallen_dir=fallen_dir)
    mesh, base = pose_token(tok.shape, BOARD.token, tok.xy_mm, tok.yaw, tok.fallen_dir)
    axis = np.asarray(_lies_to(tok, BOARD)) - np.asarray(tok.xy_mm)
    axis /= np.linalg.norm(axis)
    along = (mesh.verts[:, :2] - np.asarray(tok.xy_mm)) @ axis
    assert along.max() > 0.9 * BOARD.token.height_mm and along.min() > -3.0  # top towards lies_to, nothing behind the base
    assert mesh.verts[:, 2].min() == pytest.approx(0.0, abs=1e-6)
    assert mesh.verts[:, 2].max() < BOARD.token.base_diameter_mm + 1  # on its side, not standing
