"""Files a user hands over (photos) are read or refused in one line; files knockcam writes are whole
or not at all, with a one-line error saying where."""

import os
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.errors import KnockcamError
from knockcam.files import (check_writable, load_photo, parse_json_or_yaml, read_text, remove_written, write_atomic,
                            write_atomic_all)

sys.path.insert(0, str(Path(__file__).resolve().parent / "report"))
from synthetic_scene import scene  # noqa: E402


def test_text_and_bytes_are_written_whole_into_a_new_folder_with_no_temporary_left(tmp_path):
    out = write_atomic(tmp_path / "new" / "result.md", "payouts: é\n")
    assert out.read_text(encoding="utf-8") == "payouts: é\n"
    write_atomic(out, b"\x89PNG")
    assert out.read_bytes() == b"\x89PNG"
    assert sorted(p.name for p in out.parent.iterdir()) == ["result.md"]


def test_a_place_that_cannot_be_written_is_a_clear_error_and_nothing_changes(tmp_path):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    with pytest.raises(KnockcamError, match="cannot write .*not_a_folder/out.png: .*not_a_folder is a file, not a folder"):
        write_atomic(blocker / "out.png", b"data")
    assert blocker.read_text() == "x"


def test_where_a_file_cannot_be_written_is_said_before_writing(tmp_path, monkeypatch):
    assert check_writable(tmp_path / "new" / "folder" / "out.md") == tmp_path / "new" / "folder" / "out.md"
    with pytest.raises(KnockcamError, match="it is a folder"):
        check_writable(tmp_path)
    with pytest.raises(KnockcamError, match="it is a folder"):
        write_atomic(tmp_path, b"data")
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)  # as a folder of another user's
    with pytest.raises(KnockcamError, match=f"the folder {tmp_path} is not writable"):
        check_writable(tmp_path / "new" / "out.md")


def test_files_that_belong_together_are_written_all_or_none(tmp_path, disk_full_after):
    (tmp_path / "b.json").write_text("old")
    assert write_atomic_all({tmp_path / "a.png": b"\x89PNG", tmp_path / "b.json": "{}"}) == [tmp_path / "a.png",
                                                                                              tmp_path / "b.json"]
    assert (tmp_path / "a.png").read_bytes() == b"\x89PNG" and (tmp_path / "b.json").read_text() == "{}"
    disk_full_after(1)
    with pytest.raises(KnockcamError, match=r"cannot write .*d.json: No space left on device \(choose a writable "
                                            r"place\); none of c.png, d.json was written"):
        write_atomic_all({tmp_path / "c.png": b"new", tmp_path / "d.json": "{}"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.json"]  # no c.png, no temporary left


def test_remove_written_takes_a_file_and_its_cut_short_writes_and_nothing_else(tmp_path):
    """A file and the temporary files of writes to it a killed process left; another file's temporaries, a name
    that only begins the same and a missing file are left alone (or are no error)."""
    mine = [tmp_path / "b.png", tmp_path / ".b.png.123.tmp", tmp_path / ".b.png.77.tmp"]
    others = [tmp_path / "bb.png", tmp_path / ".bb.png.123.tmp", tmp_path / ".b.png.old", tmp_path / "b.png.tmp"]
    for path in mine + others:
        path.write_bytes(b"x")
    remove_written(tmp_path / "b.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in others)
    remove_written(tmp_path / "b.png")  # nothing left to remove
    remove_written(tmp_path / "no folder" / "b.png")


def test_a_folder_given_for_a_file_to_read_says_so(tmp_path):
    with pytest.raises(KnockcamError, match=f"round file {tmp_path} is a folder, not a file"):
        read_text(tmp_path, "round file")


@pytest.mark.parametrize("name, text, says", [
    ("round.json", '{"positions": {"red": ["boardwalk"], "red": ["go"]}}', "'red' is given twice in one object"),
    ("round.yaml", "positions:\n  red: [boardwalk]\n  blue: [go]\n  red: [go]\n",
     "'red' is given twice in one mapping at line 4"),
])
def test_a_key_given_twice_is_refused_not_half_kept(name, text, says):
    """JSON and YAML keep the last of two equal keys: the first entry (a token's place) would be lost."""
    with pytest.raises(KnockcamError) as refused:
        parse_json_or_yaml(text, name)
    assert str(refused.value) == f"{name}: {says}: keep one of them"


def test_the_same_key_in_two_mappings_is_fine_and_errors_name_the_kind_of_file():
    assert parse_json_or_yaml("a: {x: 1}\nb: {x: 2}\n", "f.yaml") == {"a": {"x": 1}, "b": {"x": 2}}
    assert parse_json_or_yaml('[{"x": 1}, {"x": 2}]', "f.json") == [{"x": 1}, {"x": 2}]
    with pytest.raises(KnockcamError, match=r"^calibration file c.yaml: not valid YAML: .* at line 3 column 1$"):
        parse_json_or_yaml("a: [1,\nb: 2\n", "c.yaml", "calibration file")


def test_load_photo_reads_a_good_jpeg_and_png(tmp_path):
    s = scene()
    jpeg = load_photo(s.photo)
    assert jpeg.shape == (720, 1280, 3) and jpeg.dtype == np.uint8
    png = tmp_path / "a.png"
    cv2.imwrite(str(png), jpeg)
    assert np.array_equal(load_photo(png), jpeg)


def test_a_phone_photo_taken_upright_is_read_upright(tmp_path):
    """A phone stores a portrait photo as the sensor saw it (landscape) with an EXIF orientation saying how to turn
    it; the photo is read as every viewer shows it, so that corners typed from a viewer fit it."""
    from phone_photo import stored_on_its_side

    s = scene()
    jpeg = cv2.imencode(".jpg", load_photo(s.photo))[1].tobytes()
    photo = tmp_path / "portrait.jpg"
    photo.write_bytes(stored_on_its_side(jpeg))
    upright = load_photo(photo)
    assert upright.shape == (1280, 720, 3)
    turned = cv2.rotate(cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR), cv2.ROTATE_90_CLOCKWISE)
    assert np.abs(upright.astype(int) - turned).max() <= 2


def test_a_motion_photo_reads_as_its_photo_and_the_video_after_it_is_left_alone(tmp_path):
    from phone_photo import motion_photo

    jpeg = scene().photo.read_bytes()
    photo = tmp_path / "PXL_20261204_motion.jpg"
    photo.write_bytes(motion_photo(jpeg))
    assert np.array_equal(load_photo(photo), cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR))


@pytest.mark.parametrize("cut", ["after_thumbnail", "mid_photo", "before_end_marker"])
def test_a_photo_cut_short_is_damaged_even_when_its_exif_preview_is_whole(tmp_path, cut):
    from phone_photo import with_thumbnail

    jpeg = scene().photo.read_bytes()
    preview = cv2.imencode(".jpg", cv2.resize(load_photo(scene().photo), (160, 90)))[1].tobytes()
    whole = with_thumbnail(jpeg, preview)
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(whole)
    assert load_photo(photo).shape == (720, 1280, 3)
    end = {"after_thumbnail": whole.index(preview) + len(preview) + 600, "mid_photo": len(whole) // 2,
           "before_end_marker": len(whole) - 2}[cut]
    photo.write_bytes(whole[:end])
    with pytest.raises(KnockcamError, match="is a damaged JPEG file"):
        load_photo(photo)


@pytest.mark.parametrize("case, words", [
    ("missing", "not found"), ("folder", "folder"), ("text", "not an image"), ("truncated_jpeg", "damaged"),
    ("truncated_png", "damaged"), ("zeroed_jpeg", "damaged"), ("tiny", "too small"), ("heic", "export it as JPEG"),
    ("mp4", "is a video, not a photo: 'knockcam live --video"), ("avi", "is a video"),
    ("empty", "is empty (0 bytes): copy it again"),
    ("float_tiff", "is a TIFF file of a kind OpenCV cannot read")])
def test_load_photo_refuses_bad_files_in_one_line(tmp_path, case, words):
    data = scene().photo.read_bytes()
    path = tmp_path / "photo.jpg"
    if case == "folder":
        path.mkdir()
    elif case == "text":
        path.write_text("these are my notes, not a photo\n")
    elif case == "truncated_jpeg":
        path.write_bytes(data[: len(data) // 2])
    elif case == "truncated_png":
        ok, png = cv2.imencode(".png", load_photo(scene().photo))
        path = tmp_path / "photo.png"
        path.write_bytes(png.tobytes()[:-200])
    elif case == "zeroed_jpeg":
        bad = bytearray(data)
        bad[len(data) // 2: len(data) // 2 + 3000] = b"\x00" * 3000
        path.write_bytes(bytes(bad))
    elif case == "heic":
        path = tmp_path / "IMG_0001.HEIC"
        path.write_bytes(b"\x00\x00\x00\x18ftypheic" + bytes(64))
    elif case in ("mp4", "avi"):  # what a phone or a webcam app records
        path = tmp_path / f"game.{case}"
        path.write_bytes(b"\x00\x00\x00\x20ftypisom" + bytes(64) if case == "mp4" else b"RIFF\x00\x10\x00\x00AVI LIST")
    elif case == "empty":  # a copy that never got its bytes
        path.write_bytes(b"")
    elif case == "tiny":
        path = tmp_path / "tiny.png"
        cv2.imwrite(str(path), np.zeros((10, 10, 3), np.uint8))
    elif case == "float_tiff":  # whole, but of 32-bit floats: not "damaged", not "copy it again"
        path = tmp_path / "photo.tiff"
        cv2.imwrite(str(path), load_photo(scene().photo).astype(np.float32) / 255)
    with pytest.raises(KnockcamError) as err:
        load_photo(path)
    message = str(err.value)
    assert words in message and "\n" not in message
    assert "WARN" not in message and "grfmt_" not in message  # OpenCV's log prefix is not for the user
