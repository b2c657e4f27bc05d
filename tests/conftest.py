"""Fixtures shared by every test folder."""

import pytest


@pytest.fixture
def disk_full_after(monkeypatch):
    """Call with n: the disk is full after n more temporary files of knockcam.files (``write_atomic_all``
    and every atomic write go through them)."""
    from knockcam import files

    real = files._temporary

    def full_after(files_written: int) -> None:
        count = [0]

        def temporary(path, data, **kw):
            count[0] += 1
            if count[0] > files_written:
                raise OSError(28, "No space left on device")
            return real(path, data, **kw)

        monkeypatch.setattr(files, "_temporary", temporary)

    return full_after
