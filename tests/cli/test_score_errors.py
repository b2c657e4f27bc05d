"""Issue 7's error cases for ``knockcam score``: one clear line, exit code 2, no traceback, nothing half-written.

Most cases call the command line in this process (``knockcam.cli.main``; any exception would fail the
test as a traceback would); the damaged photo runs as a real subprocess, where the image decoder's own
complaints on stderr would show.
"""

from __future__ import annotations

import subprocess

import cv2
import numpy as np
import pytest

from cli_run import knockcam
from knockcam.cli import main
from knockcam.errors import KnockcamError


@pytest.fixture
def cli(capfd):
    """Run ``knockcam ARGS`` in this process; returns what a subprocess run would (returncode, stdout, stderr)."""
    def run(*args):
        code = main([str(a) for a in args])
        out, err = capfd.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)
    return run


def _assert_one_clean_line(result, *words):
    assert result.returncode == 2, result.stderr
    err = result.stderr.strip()
    assert "Traceback" not in result.stderr
    assert err.count("\n") == 0, f"more than one line on stderr:\n{result.stderr}"
    assert err.startswith("knockcam: error: ")
    for word in words:
        assert word in err, err
    assert result.stdout == ""


def _score(tmp_path, photo, *extra, run=knockcam):
    evidence = tmp_path / "out" / "evidence.png"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = run("score", photo, "--order", "red,blue", "--evidence", evidence, "--json", *extra)
    after = sorted(p.name for p in tmp_path.rglob("*"))
    assert after == before, "something was written although scoring failed"
    return result


def test_missing_file(cli, tmp_path):
    _assert_one_clean_line(_score(tmp_path, tmp_path / "nope.jpg", run=cli), "not found", "nope.jpg")


def test_a_missing_folder_with_out_is_not_found_rather_than_a_misused_out(cli, tmp_path):
    result = cli("score", tmp_path / "photos", "--out", tmp_path / "scored")
    _assert_one_clean_line(result, "not found", "photos")
    assert not (tmp_path / "scored").exists()


def test_non_image_file(cli, tmp_path):
    notes = tmp_path / "notes.jpg"
    notes.write_text("round 2: blue disputes the Boardwalk call\n")
    _assert_one_clean_line(_score(tmp_path, notes, run=cli), "not an image", "notes.jpg")


def test_corrupt_image(tmp_path, scene):
    data = bytearray(scene.photo.read_bytes())
    data[len(data) // 2: len(data) // 2 + 3000] = b"\x00" * 3000  # damaged in the middle: libjpeg complains
    bad = tmp_path / "corrupt.jpg"
    bad.write_bytes(bytes(data))
    _assert_one_clean_line(_score(tmp_path, bad), "damaged", "corrupt.jpg")


def test_unreadable_truncated_image(cli, tmp_path, scene):
    data = scene.photo.read_bytes()
    bad = tmp_path / "cut.jpg"
    bad.write_bytes(data[: len(data) // 3])
    _assert_one_clean_line(_score(tmp_path, bad, run=cli), "damaged", "cut.jpg")


def test_no_board_found(cli, tmp_path):
    rng = np.random.default_rng(0)
    table = cv2.GaussianBlur(rng.integers(0, 255, (480, 640, 3), dtype=np.uint8), (0, 0), 6)
    photo = tmp_path / "table.png"
    cv2.imwrite(str(photo), table)
    _assert_one_clean_line(_score(tmp_path, photo, run=cli), "board not found", "--corners")


def test_a_black_photo_is_refused_before_the_board_is_looked_for(cli, tmp_path):
    """A lens cap or a camera still starting, nothing given: told to light the board (the automatic search took
    14-30 s on such noise, 2-5 s since it was sped up, to say "board not found: give --corners")."""
    photo = tmp_path / "black.png"
    cv2.imwrite(str(photo), np.random.default_rng(0).integers(0, 4, (720, 1280, 3), dtype=np.uint8))
    _assert_one_clean_line(_score(tmp_path, photo, run=cli), "the board is far too dark in the photo (its brightest "
                           "parts at 3 of 255)", "light the board")


def test_an_empty_board_frame_that_does_not_match_the_photo(cli, tmp_path, scene):
    h, w = cv2.imread(str(scene.photo)).shape[:2]
    frame = tmp_path / "not-the-board.png"
    cv2.imwrite(str(frame), cv2.GaussianBlur(np.random.default_rng(1).integers(0, 255, (h, w, 3), dtype=np.uint8), (0, 0), 3))
    result = _score(tmp_path, scene.photo, "--calibration", scene.calibration, "--reference", frame, run=cli)
    _assert_one_clean_line(result, "does not show the board as the photo does", "without --reference")


def test_black_and_white_photo(cli, tmp_path, scene):
    photo = tmp_path / "night-mode.jpg"
    cv2.imwrite(str(photo), cv2.cvtColor(cv2.imread(str(scene.photo), cv2.IMREAD_GRAYSCALE), cv2.COLOR_GRAY2BGR))
    result = _score(tmp_path, photo, "--calibration", scene.calibration, run=cli)
    _assert_one_clean_line(result, "no colour", "take it in colour")


def test_a_photo_far_too_dark(cli, tmp_path, scene):
    photo = tmp_path / "lights-off.jpg"
    cv2.imwrite(str(photo), (cv2.imread(str(scene.photo)) * 0.04).astype(np.uint8))
    result = _score(tmp_path, photo, "--calibration", scene.calibration, run=cli)
    _assert_one_clean_line(result, "the board is far too dark in the photo", "light the board")


def test_mirrored_photo(cli, tmp_path, scene):
    """A selfie camera's photo: the automatic method would place the board with left and right swapped."""
    photo = tmp_path / "selfie.jpg"
    cv2.imwrite(str(photo), cv2.flip(cv2.imread(str(scene.photo)), 1))
    _assert_one_clean_line(_score(tmp_path, photo, run=cli), "mirrored", "turn off the camera's mirroring")


def test_a_calibration_file_from_before_the_camera_moved(cli, tmp_path, scene):
    from knockcam.calibrate.calibration import Calibration

    before = tmp_path / "before.yaml"
    Calibration.load(scene.calibration).moved(np.array([[1.0, 0, 0], [0, 1, 8], [0, 0, 1]])).save(before)
    result = _score(tmp_path, scene.photo, "--calibration", before, run=cli)
    _assert_one_clean_line(result, "before.yaml does not fit this photo", "the camera moved", "without --calibration")


def test_an_empty_board_frame_with_tokens_on_it(cli, tmp_path, scene):
    """The photo itself given as the empty-board frame: scored, every token standing in both would be lost."""
    result = _score(tmp_path, scene.photo, "--calibration", scene.calibration, "--reference", scene.photo, run=cli)
    _assert_one_clean_line(result, "is not empty", "on the board (", "without --reference")


def test_an_empty_board_frame_of_another_board_print(cli, tmp_path):
    """Another fixture's frame (its own print, its own camera): before, the photo was scored with "something
    covers the board" over 29 spaces and 5 of its 16 tokens found."""
    from pathlib import Path

    scenes = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
    result = _score(tmp_path, scenes / "overhead.jpg", "--reference", scenes / "hand_ref.jpg", run=cli)
    _assert_one_clean_line(result, "overhead.jpg differs from the empty-board frame", "hand_ref.jpg over 7",
                           "% of the board: the frame is not of this board", "without --reference")


@pytest.mark.parametrize("text, words", [
    ("homography: [1, 2]\n", "calibration"),
    ("{{{ not yaml\n", "calibration"),
    (None, "not found"),
])
def test_bad_calibration_file(cli, tmp_path, scene, text, words):
    calibration = tmp_path / "camera.yaml"
    if text is not None:
        calibration.write_text(text)
    _assert_one_clean_line(_score(tmp_path, scene.photo, "--calibration", calibration, run=cli), words, "camera.yaml")


@pytest.mark.parametrize("text, words", [
    ("name: my board\nsize_mm: [400]\n", "size_mm"),
    ("spaces: [\n", "not valid YAML"),
])
def test_bad_board_file(cli, tmp_path, scene, text, words):
    board = tmp_path / "myboard.yaml"
    board.write_text(text)
    _assert_one_clean_line(_score(tmp_path, scene.photo, "--board", board, run=cli), words, "myboard.yaml")


def test_bad_corners_and_order(cli, tmp_path, scene):
    _assert_one_clean_line(_score(tmp_path, scene.photo, "--corners", "1,2 3,4", run=cli), "--corners")
    result = cli("score", scene.photo, "--order", "red,purple")
    _assert_one_clean_line(result, "purple")


def test_empty_corners_are_refused_rather_than_ignored(cli, tmp_path, scene):
    _assert_one_clean_line(cli("score", scene.photo, "--corners", " "), "--corners is empty")


@pytest.mark.parametrize("order", ["", " ", ","])
def test_empty_order_is_refused_rather_than_ignored(cli, scene, order):
    """An empty --order (a shell variable left unset) is said, not taken as no order: the round would go unscored."""
    _assert_one_clean_line(cli("score", scene.photo, "--order", order), "--order is empty")


def test_corners_typed_without_quotes_are_one_argument(cli, tmp_path, scene):
    from knockcam.cli import joined_corners

    pairs = ["102,655", "1180,640", "930,80", "310,85"]
    assert joined_corners(["score", "--corners", *pairs, "p.jpg"]) == ["score", "--corners", " ".join(pairs), "p.jpg"]
    assert joined_corners(["score", "p.jpg", "--corners", "-5,12.5", "1,2"]) == ["score", "p.jpg", "--corners", "-5,12.5 1,2"]
    assert joined_corners(["score", "--corners", "1,2 3,4 5,6 7,8", "9,9"]) == ["score", "--corners", "1,2 3,4 5,6 7,8", "9,9"]
    # unquoted, the shell splits the pairs: the same clear line as any wrong count, not argparse's "unrecognized"
    _assert_one_clean_line(_score(tmp_path, scene.photo, "--corners", "1,2", "3,4", run=cli), "--corners", "'1,2 3,4'")


def test_a_refusal_offers_max_error_and_max_error_accepts(cli, tmp_path):
    """Render 3005/155 (a tuning scene): the automatic calibration's estimate, 4.8 mm, is over the 3 mm
    limit; the refusal says which --max-error accepts it, and with it the photo is scored."""
    import json

    from knockcam.board import load_board
    from knockcam.synth.scene import make_photo

    photo = tmp_path / "steep.jpg"
    photo.write_bytes(make_photo(load_board(), 3005, 155)[0])
    _assert_one_clean_line(_score(tmp_path, photo, run=cli), "over the 3 mm limit", "--max-error 5 ")
    result = cli("score", photo, "--json", "--max-error", "5")
    assert result.returncode == 0, result.stderr
    assert 3.0 < json.loads(result.stdout)["calibration"]["error_mm"] <= 5.0
    bad = knockcam("score", photo, "--max-error", "-1")
    assert bad.returncode == 2 and "--max-error: give a number of millimetres above 0" in bad.stderr


def test_a_call_on_no_such_token_or_space_or_on_a_folder(cli, tmp_path, scene):
    """--call N=WHERE and --add SIDE=SPACE: a typo in the space, a number the photo has no token for, or a
    folder: one line, nothing written."""
    calibrated = ("--calibration", scene.calibration)
    _assert_one_clean_line(_score(tmp_path, scene.photo, *calibrated, "--call", "1=chanse", run=cli),
                           "--call 1=chanse", "did you mean chance?")
    _assert_one_clean_line(_score(tmp_path, scene.photo, *calibrated, "--call", "99=chance", run=cli),
                           "--call 99=chance: the photo shows", "give a number from the tokens table")
    folder = tmp_path / "night"
    folder.mkdir()
    _assert_one_clean_line(cli("score", folder, "--call", "1=chance"), "--call settles a token of one photo")
    _assert_one_clean_line(cli("score", folder, "--add", "red=chance"), "--add settles a token of one photo")
    _assert_one_clean_line(_score(tmp_path, scene.photo, *calibrated, "--add", "red=boardwlk", run=cli),
                           "--add red=boardwlk", "did you mean boardwalk?")


def test_a_folder_whose_results_cannot_be_written_is_refused_before_any_photo_is_scored(cli, tmp_path, scene,
                                                                                       monkeypatch):
    import knockcam.pipeline

    photos = tmp_path / "night"
    photos.mkdir()
    (photos / "a.jpg").write_bytes(scene.photo.read_bytes())
    out = tmp_path / "scores"
    (out / "summary.csv").mkdir(parents=True)  # in the way of the summary
    monkeypatch.setattr(knockcam.pipeline.Scorer, "score", lambda self, photo: pytest.fail("a photo was scored"))
    _assert_one_clean_line(cli("score", photos, "--out", out), "summary.csv")


def test_a_photo_whose_evidence_cannot_be_written_keeps_its_score(cli, tmp_path, scene, monkeypatch):
    import csv

    import knockcam.report.evidence

    def full_disk(scored, path):
        raise KnockcamError(f"cannot write {path}: No space left on device")

    photos = tmp_path / "night"
    photos.mkdir()
    (photos / "a.jpg").write_bytes(scene.photo.read_bytes())
    out = tmp_path / "scores"
    monkeypatch.setattr(knockcam.report.evidence, "write_evidence", full_disk)
    result = cli("score", photos, "--calibration", scene.calibration, "--reference", scene.empty,
                 "--order", "red,yellow,green,blue", "--out", out)
    assert result.returncode == 0, result.stderr
    (row,) = list(csv.DictReader((out / "summary.csv").open()))
    assert row["status"] == "ok" and row["red"] != "" and int(row["tokens"]) > 0 and row["evidence"] == ""
    assert row["error"].startswith("scored, but no evidence picture: cannot write")
