"""Files knockcam writes: whole or not at all, with a one-line error saying where."""

import pytest

from knockcam.errors import KnockcamError
from knockcam.files import write_atomic


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
