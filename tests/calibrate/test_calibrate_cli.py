"""knockcam calibrate on the command line: writes the file, prints JSON, fails in one line."""

import json

import cv2

from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import board_corners_mm
from knockcam.cli import main


def test_corners_on_the_command_line(tmp_path, scene, board, capsys):
    img = tmp_path / "photo.png"
    cv2.imwrite(str(img), scene.image)
    corners = " ".join(f"{x:.2f},{y:.2f}" for x, y in scene.truth.mm_to_px(board_corners_mm(board)))
    out = tmp_path / "cal" / "photo.yaml"
    # this scene's print does not confirm the corners, so they count as clicked (1.5 px off): 3.4 mm at the
    # board's far corners, over the 3 mm limit unless a larger error is accepted
    assert main(["calibrate", str(img), "--corners", corners, "--out", str(out)]) == 2
    assert "over the 3 mm limit (corners)" in capsys.readouterr().err and not out.exists()
    assert main(["calibrate", str(img), "--corners", corners, "--out", str(out), "--json", "--max-error", "4"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["method"] == "corners" and len(printed["corners_px"]) == 4
    assert 3 < printed["error_mm"] <= 4 and "at the worst corner" in printed["error_source"]
    assert Calibration.load(out).method == "corners"
    assert main(["calibrate", str(img), "--corners", corners, "--out", str(out), "--max-error", "4"]) == 0
    said, how, then = capsys.readouterr().out.splitlines()  # in words: the error, how it was read, what next
    assert said.startswith("corners: error 3.") and "on the board (limit 4 mm); wrote " + str(out) in said
    assert how.startswith("  how: ") and "at the worst corner" in how
    assert then.startswith(f"  next: knockcam score PHOTO --calibration {out}")


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["calibrate", str(tmp_path / "missing.jpg")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("knockcam: error: photo not found") and err.count("\n") == 1
    bad = tmp_path / "x.jpg"
    bad.write_text("not an image")
    assert main(["calibrate", str(bad), "--corners", "1,2 3,4"]) == 2
    assert "x.jpg is not an image" in capsys.readouterr().err


def test_a_bench_or_tuning_file_that_cannot_be_written_is_refused_before_any_render(tmp_path, capsys, monkeypatch):
    import knockcam.calibrate.bench

    def never(*args, **kwargs):
        raise AssertionError("renders were calibrated before the output file was checked")

    monkeypatch.setattr(knockcam.calibrate.bench, "run_bench", never)
    monkeypatch.setattr(knockcam.calibrate.bench, "tuning_records", never)
    blocker = tmp_path / "bench"
    blocker.write_text("x")
    for args in (["bench", "--out", str(blocker / "calibration.md")], ["tune", "--seed", "3009", "--out", str(tmp_path)]):
        assert main(["calibrate", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("knockcam: error: cannot write") and err.count("\n") == 1


def test_a_damaged_photo_is_refused_not_calibrated_half_grey(tmp_path, scene, board, capsys):
    """The same photo checks as knockcam score (knockcam.files.load_photo): a copy cut short is refused."""
    ok, jpeg = cv2.imencode(".jpg", scene.image)
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(jpeg.tobytes()[: len(jpeg) // 2])
    corners = " ".join(f"{x:.2f},{y:.2f}" for x, y in scene.truth.mm_to_px(board_corners_mm(board)))
    out = tmp_path / "cut.yaml"
    assert main(["calibrate", str(cut), "--corners", corners, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cut.jpg is a damaged JPEG file" in err and err.count("\n") == 1
    assert not out.exists()


def test_sheet_writes_both_printables(tmp_path, capsys):
    assert main(["calibrate", "sheet", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "markers.png").exists() and (tmp_path / "charuco.png").exists()


def test_sheet_on_a_full_disk_writes_neither_printable(tmp_path, capsys, disk_full_after):
    disk_full_after(1)
    assert main(["calibrate", "sheet", "--out", str(tmp_path / "sheets")]) == 2
    assert "none of markers.png, charuco.png was written" in capsys.readouterr().err
    assert list((tmp_path / "sheets").iterdir()) == []


def test_sheet_given_a_file_name_says_it_takes_a_folder(tmp_path, capsys):
    """--out sheet.png once made a folder named sheet.png; now one line says what to give, and nothing is written."""
    (tmp_path / "notes.txt").write_text("mine")
    for out in (tmp_path / "sheet.png", tmp_path / "notes.txt"):
        assert main(["calibrate", "sheet", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "takes a folder" in err and f"--out {tmp_path / out.stem}" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_auto_refuses_a_blurred_photo_in_one_line_saying_retake_it(tmp_path, capsys):
    from knockcam.board import load_board
    from knockcam.synth.scene import make_photo

    photo = tmp_path / "shaken.jpg"  # render 3005/225: a 12 px motion blur, refused even sharpened
    photo.write_bytes(make_photo(load_board(), 3005, 225)[0])
    out = tmp_path / "shaken.yaml"
    assert main(["calibrate", str(photo), "--auto", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "the photo is blurred" in err and "retake it" in err and err.count("\n") == 1
    assert not out.exists()  # nothing half-written


def test_markers_over_the_limit_are_refused_saying_to_lay_the_cards_again(tmp_path, marker_scene, capsys):
    img = tmp_path / "cards.png"
    cv2.imwrite(str(img), marker_scene.image)
    out = tmp_path / "cards.yaml"
    assert main(["calibrate", str(img), "--markers", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "markers"
    assert main(["calibrate", str(img), "--markers", "--max-error", "0.001", "--out", str(tmp_path / "no.yaml")]) == 2
    err = capsys.readouterr().err
    assert "(markers): lay the cards flat against the board's corners" in err and err.count("\n") == 1
    assert "lay the marker sheet" not in err and not (tmp_path / "no.yaml").exists()


def test_clicked_corners_are_snapped_to_the_printed_lines_and_saved(tmp_path, board, monkeypatch, capsys):
    from pathlib import Path

    import numpy as np

    from knockcam.calibrate import click
    from knockcam.calibrate.quality import board_errors_mm

    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    truth = Calibration.from_dict(json.loads((scenes / "touching_and_lines.json").read_text())["calibration"])
    clicked = truth.corners_px(board.size_mm) + np.random.default_rng(0).normal(0, 3.0, (4, 2))
    monkeypatch.setattr(click, "click_corners", lambda image: clicked)
    out = tmp_path / "clicked.yaml"
    assert main(["calibrate", str(scenes / "touching_and_lines.jpg"), "--click", "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["method"] == "click" and printed["error_source"].startswith("the given corners snapped")
    assert board_errors_mm(Calibration.load(out), truth, board).max() < 1.0


def test_max_error_accepts_a_board_refused_for_its_estimate_and_saves_it(tmp_path, capsys):
    """Render 3005/155 (a tuning scene, lens not given): refused at 4.8 mm with an offer; --max-error 5 saves it."""
    from knockcam.board import load_board
    from knockcam.synth.scene import make_photo

    photo = tmp_path / "steep.jpg"
    photo.write_bytes(make_photo(load_board(), 3005, 155)[0])
    out = tmp_path / "steep.yaml"
    assert main(["calibrate", str(photo), "--auto", "--out", str(out)]) == 2
    assert "--max-error 5 " in capsys.readouterr().err and not out.exists()
    assert main(["calibrate", str(photo), "--auto", "--max-error", "5", "--out", str(out)]) == 0
    saved = Calibration.load(out)
    assert 3.0 < saved.error_mm <= 5.0 and saved.grid_share >= 0.6  # the grid placed it, most of it seen


def test_a_calibration_file_is_written_only_to_a_yaml_path(tmp_path, capsys):
    for argv in (["calibrate", str(tmp_path / "missing.jpg"), "--out", str(tmp_path / "c.png")],
                 ["calibrate", "camera", str(tmp_path / "missing.jpg"), "--out", str(tmp_path / "lens.png")]):
        assert main(argv) == 2  # before the photo is looked for
        assert "a calibration file is YAML: give a path ending in .yaml" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_calibrate_camera_without_photos_says_what_to_give(tmp_path, capsys, monkeypatch):
    """It said "the ChArUco board was found in 0 different photo(s)", as if photos had been looked at."""
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "camera"]) == 2
    err = capsys.readouterr().err
    assert "calibrate camera needs photos of the printed ChArUco board: print calibration/charuco.png" in err
    assert "0 different" not in err and not list(tmp_path.iterdir())


def test_a_lens_file_is_scaled_to_the_photos_resolution_and_refused_for_another_shape(tmp_path, capsys):
    """The lens_distortion fixture's lens (k1 -0.20), saved as made at 1280x720, at 2560x1440 (the same view at
    twice the resolution: scaled) and at 1280x960 (another shape: refused). Before, the file's size was never
    read, and the double-size lens bent the photo with twice its focal length."""
    import numpy as np

    from knockcam.calibrate.calibration import Calibration

    root = __import__("pathlib").Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    camera = json.loads((root / "lens_distortion.json").read_text())["camera"]
    k, d = np.array(camera["camera_matrix"]), np.array(camera["dist_coeffs"])
    lenses = {}
    for name, size, scale in (("native", (1280, 720), 1.0), ("double", (2560, 1440), 2.0), ("tall", (1280, 960), 1.0)):
        g = np.diag([scale, scale, 1.0])
        lenses[name] = tmp_path / f"{name}.yaml"
        Calibration("lens", size, np.eye(3), camera_matrix=g @ k, dist_coeffs=d).save(lenses[name])
    corners = {}
    for name in ("native", "double"):
        out = tmp_path / f"board-{name}.yaml"
        assert main(["calibrate", str(root / "lens_distortion.jpg"), "--auto", "--camera", str(lenses[name]),
                     "--out", str(out), "--json"]) == 0, capsys.readouterr().err
        corners[name] = np.array(json.loads(capsys.readouterr().out)["corners_px"])
    assert np.abs(corners["native"] - corners["double"]).max() < 1.0
    assert main(["calibrate", str(root / "lens_distortion.jpg"), "--auto", "--camera", str(lenses["tall"]),
                 "--out", str(tmp_path / "no.yaml")]) == 2
    err = capsys.readouterr().err
    assert "tall.yaml is for 1280x960 images, this photo is 1280x720 (another shape)" in err and err.count("\n") == 1


def test_a_reference_calibration_its_photo_cannot_check_is_said_to_be_used_unchecked(tmp_path, scene, board, capsys):
    """Own scene 104 (the reference) is a print whose printed lines do not place the board, so they cannot check
    the calibration given with it: that calibration is used as given, and the photo registered to it says so
    (were the file another photo's, this one would be wrong too). Before, nothing was said. The overhead
    fixture's empty-board frame checks its calibration, and nothing is said."""
    from pathlib import Path

    from knockcam.calibrate.scene import make_scene

    ref = make_scene(board, 104, art_seed=scene.art_seed, tokens=0)
    photo, ref_photo, ref_cal = tmp_path / "photo.png", tmp_path / "empty.png", tmp_path / "empty.yaml"
    cv2.imwrite(str(photo), scene.image)
    cv2.imwrite(str(ref_photo), ref.image)
    ref.truth.save(ref_cal, board.size_mm)
    out = tmp_path / "photo.yaml"
    assert main(["calibrate", str(photo), "--reference", str(ref_photo), str(ref_cal), "--out", str(out)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("reference: error ") and said[2] == (
        "  not checked: the reference photo shows too little of the board's printed lines to check it; if "
        f"{ref_cal} is not that photo's own calibration, this one is wrong too")
    assert "unchecked" not in out.read_text()  # never saved: a later photo is checked against the file again
    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    truth = Calibration.from_dict(json.loads((scenes / "overhead.json").read_text())["calibration"])
    truth.save(ref_cal, board.size_mm)
    assert main(["calibrate", str(scenes / "overhead.jpg"), "--reference", str(scenes / "overhead_ref.jpg"),
                 str(ref_cal), "--out", str(out)]) == 0
    assert "not checked" not in capsys.readouterr().out
