"""The Calibration file round-trips and refuses what is not a calibration."""

import numpy as np
import pytest

from knockcam.calibrate.calibration import Calibration
from knockcam.errors import KnockcamError


def test_save_load_round_trip_keeps_everything(tmp_path, scene, board):
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    cal = Calibration("auto", (1280, 720), scene.truth.homography, k, np.array([-0.1, 0.02, 0, 0, 0]), 0.42,
                      "estimate: test", grid_share=0.73)
    path = tmp_path / "sub" / "c.yaml"
    cal.save(path, board.size_mm)
    back = Calibration.load(path)
    assert back.error_source == "estimate: test" and back.error_mm == pytest.approx(0.42)
    assert back.grid_share == pytest.approx(0.73)
    pts = np.array([[0, 0], [400, 915], [123, 456]])
    assert np.allclose(back.mm_to_px(pts), cal.mm_to_px(pts), atol=1e-4)
    assert np.allclose(back.px_to_mm(back.mm_to_px(pts)), pts, atol=1e-3)
    assert not list(path.parent.glob("*.tmp"))


def test_not_a_calibration_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: auto\nhomography: [[1, 0], [0, 1]]\nimage_size: [10, 10]\n")
    with pytest.raises(KnockcamError, match="not a knockcam calibration"):
        Calibration.load(bad)
    with pytest.raises(KnockcamError, match=r"^calibration file not found: .*\(run 'knockcam calibrate' first\)$"):
        Calibration.load(tmp_path / "missing.yaml")
    with pytest.raises(KnockcamError, match=r"^lens calibration file not found: .*\(run 'knockcam calibrate camera' "
                                            r"first\)$"):
        Calibration.load(tmp_path / "missing.yaml", lens=True)


def _bowed_camera(board):
    """A synthetic camera 55 degrees off vertical, with some lens distortion, and a humped board."""
    from knockcam.synth.camera import Camera, look_at

    w, l = board.size_mm
    centre = np.array([w / 2 + 150, -500.0, 800.0])
    r, t = look_at(centre, np.array([w / 2, l / 2, 0.0]), np.array([0, 0, 1.0]), 0.05)
    k = np.array([[1000.0, 0, 640], [0, 1000, 360], [0, 0, 1]])
    return Camera(k=k, r=r, t=t, dist=np.array([-0.08, 0.01, 0, 0, 0]), image_size=(1280, 720))


def test_a_humped_board_is_seen_where_the_camera_sees_its_face(board):
    camera = _bowed_camera(board)
    cal = camera.calibration(board, (6.0, 2.0))
    rng = np.random.default_rng(3)
    xy = np.column_stack([rng.uniform(0, 400, 200), rng.uniform(0, 915, 200)])
    z = cal.hump.height_mm(xy)
    assert z.max() > 6.0 and cal.hump.height_mm([[0, 0], [400, 915]]).max() == pytest.approx(0.0, abs=1e-9)
    seen = camera.project(np.column_stack([xy, z]))
    np.testing.assert_allclose(cal.mm_to_px(xy), seen, atol=1e-6)
    np.testing.assert_allclose(cal.px_to_mm(seen), xy, atol=1e-3)
    flat = camera.calibration()
    assert np.abs(flat.px_to_mm(seen) - xy).max() > 5.0  # read as flat, the hump moves points by mm


def test_the_hump_is_saved_and_a_broken_one_refused(tmp_path, board):
    cal = _bowed_camera(board).calibration(board, (4.0, 1.5))
    path = tmp_path / "humped.yaml"
    cal.save(path, board.size_mm)
    back = Calibration.load(path)
    assert back.hump == cal.hump.__class__.from_dict(cal.hump.to_dict())
    pts = np.array([[200.0, 457.5], [50.0, 700.0]])
    np.testing.assert_allclose(back.mm_to_px(pts), cal.mm_to_px(pts), atol=1e-6)
    text = path.read_text().replace("board_size_mm:", "board_size:")
    path.write_text(text)
    with pytest.raises(KnockcamError, match="not a knockcam calibration"):
        Calibration.load(path)


def test_view_maps_sample_the_photo_where_each_raster_pixel_is_seen(board):
    """The interpolated maps agree with projecting every raster pixel, lens and hump included."""
    from knockcam.board.topdown import TopDown
    from knockcam.synth.camera import Camera, look_at

    w, l = board.size_mm
    r, t = look_at(np.array([w / 2 - 150, -500.0, 800.0]), np.array([w / 2, l / 2, 0.0]), np.array([0, 0, 1.0]), 0.1)
    k = np.array([[900.0, 0, 650], [0, 900, 350], [0, 0, 1]])
    camera = Camera(k=k, r=r, t=t, dist=np.array([-0.2, 0.05, 0.001, 0, 0]), image_size=(1280, 720))
    calibration = camera.calibration(board, (6.0, 2.0))
    view = TopDown(board, px_per_mm=0.5, margin_mm=30)
    map_x, map_y = calibration.view_maps(view, grid_px=4)
    vw, vh = view.size
    v, u = np.mgrid[0:vh, 0:vw].astype(np.float64)
    exact = calibration.mm_to_px(view.to_mm(np.column_stack([u.ravel(), v.ravel()])))
    assert map_x.shape == (vh, vw)
    off = np.hypot(map_x.ravel() - exact[:, 0], map_y.ravel() - exact[:, 1])
    assert off.max() < 0.1  # photo px


def test_a_resized_photo_keeps_every_board_point_where_the_resized_pixels_show_it(board):
    """Lens and hump included: a point seen at pixel p in the photo is seen at p scaled in the resized
    photo (pixel centres at +0.5, as cv2.resize puts them), and read back to the same board mm."""
    k = np.array([[1000.0, 0, 640], [0, 1000, 360], [0, 0, 1]])
    cal = _bowed_camera(board).calibration(board, (5.0, 1.0))
    cal = Calibration(cal.method, cal.image_size, cal.homography, k, np.array([-0.2, 0.05, 0.001, 0, 0]),
                      hump=cal.hump)
    big = cal.resized((4032, 2268))
    xy = np.array([[0.0, 0.0], [400.0, 915.0], [120.0, 600.0], [333.0, 77.0]])
    scale = np.array([4032 / 1280, 2268 / 720])
    np.testing.assert_allclose(big.mm_to_px(xy), (cal.mm_to_px(xy) + 0.5) * scale - 0.5, atol=1e-6)
    np.testing.assert_allclose(big.px_to_mm(big.mm_to_px(xy)), xy, atol=1e-3)
    assert big.image_size == (4032, 2268) and np.allclose(big.dist_coeffs, cal.dist_coeffs)


@pytest.mark.parametrize("text, says", [
    ("", "it holds no fields such as homography"),
    ("- 1\n- 2\n", "it holds no fields such as homography"),
    ("image_size: [1280, 720]\n", "(no homography field)"),
    ("homography: [[1, 2], [3]]\nimage_size: [1280, 720]\n", "(setting an array element with a sequence)"),
])
def test_a_file_that_is_no_calibration_is_refused_in_plain_words(tmp_path, text, says):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(KnockcamError, match="not a knockcam calibration file") as caught:
        Calibration.load(path)
    assert says in str(caught.value) and "object" not in str(caught.value) and "\n" not in str(caught.value)


def test_a_lens_file_and_a_board_file_are_told_apart(tmp_path, scene, board):
    k = np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]])
    lens = tmp_path / "camera.yaml"
    Calibration("lens", (1280, 720), np.eye(3), k, np.zeros(5), None, "lens only: test").save(lens)
    board_file = tmp_path / "board.yaml"
    scene.truth.save(board_file, board.size_mm)
    assert Calibration.load(lens, lens=True).camera_matrix[0, 0] == 900
    with pytest.raises(KnockcamError, match="is a lens calibration .* give it as --camera"):
        Calibration.load(lens)
    assert scene.truth.camera_matrix is None  # a board found with no lens known
    with pytest.raises(KnockcamError, match="holds no lens"):
        Calibration.load(board_file, lens=True)
    assert Calibration.load(board_file).method == scene.truth.method


def test_a_folder_or_a_photo_given_as_a_calibration_file_is_named_so(tmp_path):
    with pytest.raises(KnockcamError, match="is a folder: give the .yaml file in it"):
        Calibration.load(tmp_path)
    photo = tmp_path / "photo.yaml"
    photo.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    with pytest.raises(KnockcamError, match="not a calibration file \\(not text: a photo\\?\\)"):
        Calibration.load(photo)
