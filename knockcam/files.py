"""Reading the files a user hands over (photos, board, rounds, answers, game logs) with one-line errors,
and writing every file knockcam makes atomically (never half-written)."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from knockcam.errors import KnockcamError

if TYPE_CHECKING:
    import numpy as np


def read_text(path: str | Path, what: str, hint: str = "") -> str:
    """The UTF-8 text of ``path``; a missing or unreadable file is a KnockcamError naming ``what`` it is
    (e.g. "board file") and, for a missing one, ``hint`` on what to give instead."""
    path = Path(path)
    if path.is_dir():
        raise KnockcamError(f"{what} {path} is a folder, not a file")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KnockcamError(f"{what} not found: {path}" + (f" ({hint})" if hint else "")) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KnockcamError(f"cannot read {what} {path}: {exc}") from None


class _Twice(ValueError):
    """A key given twice in one mapping of a JSON or YAML file."""


def _refuse_twice(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object's pairs as a dict, or ``_Twice`` when a key is given twice (json would keep the last)."""
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise _Twice(f"{key!r} is given twice in one object")
        seen[key] = value
    return seen


class _YamlLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (YAML would keep the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                twice = key in seen
            except TypeError:  # a list or mapping as a key: the constructor says what is wrong with it
                break
            if twice:
                raise _Twice(f"{key!r} is given twice in one mapping at line {key_node.start_mark.line + 1}")
            seen.add(key)
        return super().construct_mapping(node, deep)


def parse_json_or_yaml(text: str, path: str | Path, what: str = "") -> Any:
    """Parse ``text`` as JSON when ``path`` ends in .json, else as YAML; a syntax error says where it is,
    and a key given twice is refused (the first entry would be lost without a word). ``what``: the kind
    of file, named before its path in an error."""
    where = f"{what} {path}" if what else str(path)
    again = "keep one of them"
    if Path(path).suffix.lower() == ".json":
        try:
            return json.loads(text, object_pairs_hook=_refuse_twice)
        except json.JSONDecodeError as exc:
            raise KnockcamError(f"{where}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
        except _Twice as exc:
            raise KnockcamError(f"{where}: {exc}", again) from None
    try:
        return yaml.load(text, Loader=_YamlLoader)
    except _Twice as exc:
        raise KnockcamError(f"{where}: {exc}", again) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise KnockcamError(f"{where}: not valid YAML: {problem}{at}") from None


def file_in_the_way(path: Path) -> Path | None:
    """A file where one of ``path``'s folders should be (the folder cannot be made), or None."""
    return next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), None)


def check_writable(path: str | Path) -> Path:
    """``path``, when a file can be written there (``write_atomic`` makes its folder); else a KnockcamError
    saying why. A long job (a benchmark) checks where its result goes before it starts, not after."""
    path = Path(path)
    blocker = file_in_the_way(path)
    if blocker is not None:
        raise KnockcamError(f"cannot write {path}: {blocker} is a file, not a folder (choose a writable place)")
    if path.is_dir():
        raise KnockcamError(f"cannot write {path}: it is a folder (give a file name in it)")
    folder = next(p for p in path.parents if p.exists())
    if not os.access(folder, os.W_OK | os.X_OK):
        raise KnockcamError(f"cannot write {path}: the folder {folder} is not writable (choose a writable place)")
    return path


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (text is written as UTF-8) to ``path`` through a temporary file and a rename:
    never half-written; the folder is made if needed. A failure is a KnockcamError saying where."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    check_writable(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_atomically(path, data)
    except OSError as exc:
        raise KnockcamError(f"cannot write {path}: {exc.strerror or exc} (choose a writable place)") from None
    return path


def write_atomic_all(files: dict[Path, bytes | str]) -> list[Path]:
    """Write files that belong together (a picture and its JSON, the two printed sheets) each as
    ``write_atomic`` does, and all or none: every temporary file is written before the first is renamed into
    place, so a failure (a full disk) leaves none of them new."""
    paths = [check_writable(path) for path in files]
    temps: list[Path] = []
    try:
        for path, data in files.items():
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            temps.append(_temporary(path, data.encode("utf-8") if isinstance(data, str) else data))
    except OSError as exc:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        raise KnockcamError(f"cannot write {path}: {exc.strerror or exc} (choose a writable place); "
                            f"none of {', '.join(p.name for p in paths)} was written") from None
    for i, (tmp, path) in enumerate(zip(temps, paths)):
        try:
            tmp.replace(path)
        except OSError as exc:  # the folder changed under us: what is left is not put in place
            for left in temps[i:]:
                left.unlink(missing_ok=True)
            raise KnockcamError(f"cannot write {path}: {exc.strerror or exc} (choose a writable place)") from None
    return paths


def replace_atomically(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Put ``data`` at ``path`` through a temporary file beside it and a rename, flushed to the disk first when
    ``fsync`` (a game's evidence must survive a power cut). An OSError leaves no temporary file behind."""
    tmp = _temporary(path, data, fsync=fsync)
    try:
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def remove_written(path: Path) -> None:
    """Remove ``path`` and the temporary files of writes to it cut short (a process killed between writing one
    and renaming it), where there are any; an OSError says why one could not be removed."""
    folder = path.parent
    left = [p for p in folder.iterdir() if p.name.startswith(f".{path.name}.") and p.name.endswith(".tmp")] \
        if folder.is_dir() else []
    for each in (path, *left):
        each.unlink(missing_ok=True)


def _temporary(path: Path, data: bytes, *, fsync: bool = False) -> Path:
    """``data`` written to a temporary file beside ``path`` (named for ``remove_written``), to be renamed onto it;
    an OSError leaves none."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # the folder itself is not there, or not a folder: there is nothing to remove
            pass
        raise
    return tmp


# First bytes of the image formats OpenCV reads (anything else is "not an image").
_SIGNATURES = ((b"\xff\xd8\xff", "JPEG"), (b"\x89PNG\r\n\x1a\n", "PNG"), (b"BM", "BMP"),
               (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"RIFF", "WebP"))
# What libjpeg / libpng write to stderr about a damaged file.
_DECODER_COMPLAINTS = re.compile(r"(corrupt|premature end|invalid|bad |crc error|libpng error|not a jpeg|truncat)",
                                 re.IGNORECASE)
# How OpenCV's log begins a decoder's warning ("[ WARN:0@0.07] global grfmt_tiff.cpp:811 readData "): not for the user
_OPENCV_LOG_PREFIX = re.compile(r"\[\s*(?:WARN|ERROR|INFO)[^\]]*\]\s*(?:global\s+\S+\s+\S+\s+)?")
# ... and what a decoder says of a whole file in a kind of its format it does not read (a TIFF of 32-bit floats)
_UNREADABLE_KIND = re.compile(r"(can ?not handle|unsupported|not supported)", re.IGNORECASE)


# ISO media brands (the 4 bytes after "ftyp") of still images: HEIC / HEIF, which OpenCV cannot read, and AVIF.
_HEIF_BRANDS = (b"heic", b"heix", b"mif1", b"hevc")
_STILL_BRANDS = _HEIF_BRANDS + (b"avif", b"avis")


def image_format(data: bytes) -> str | None:
    """The image format a file beginning with ``data`` is in (JPEG, PNG, BMP, TIFF or WebP), or None."""
    kind = next((name for magic, name in _SIGNATURES if data.startswith(magic)), None)
    return None if kind == "WebP" and data[8:12] != b"WEBP" else kind  # RIFF holds AVI videos too


def _is_video(data: bytes) -> bool:
    """Whether ``data`` opens as a video file: MP4 / MOV / 3GP (an ISO media box other than a still image's
    brand), Matroska / WebM, or AVI: what a phone or a webcam app records."""
    if data[4:8] == b"ftyp":
        return data[8:12] not in _STILL_BRANDS
    return data.startswith(b"\x1a\x45\xdf\xa3") or (data.startswith(b"RIFF") and data[8:12] == b"AVI ")


def load_photo(path: str | Path, what: str = "photo") -> np.ndarray:
    """The photo as an 8-bit BGR array, or a one-line KnockcamError: missing, not an image, or damaged.

    A truncated or damaged JPEG/PNG is refused rather than scored half grey; the decoder's own
    warnings are caught so the user sees one line, not libjpeg's. (numpy and OpenCV are imported
    here: the rules engine reads its files through this module and loads no vision stack.)
    """
    import cv2
    import numpy as np

    path = Path(path)
    if not path.exists():
        raise KnockcamError(f"{what} not found: {path} (check the path)")
    if path.is_dir():
        raise KnockcamError(f"{what} {path} is a folder, not an image file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KnockcamError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if not data:
        raise KnockcamError(f"{what} {path} is empty (0 bytes): copy it again from the camera")
    kind = image_format(data)
    if kind is None and data[4:8] == b"ftyp" and data[8:12] in _HEIF_BRANDS:
        raise KnockcamError(f"{path} is a HEIC photo, which knockcam cannot read: export it as JPEG "
                            "(on an iPhone: Settings > Camera > Formats > Most Compatible)")
    if kind is None and _is_video(data):
        raise KnockcamError(f"{path} is a video, not a photo: 'knockcam live --video {path}' follows a game in it; "
                            "here give a photo (JPEG, PNG, BMP, TIFF or WebP)")
    if kind is None:
        raise KnockcamError(f"{path} is not an image (expected a JPEG, PNG, BMP, TIFF or WebP photo)")
    damaged = _truncated(data, kind)
    image, complaint = None, ""
    if not damaged:
        with _decoder_messages() as messages:  # turned as its EXIF orientation says: as photo viewers show it
            image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        complaint = _OPENCV_LOG_PREFIX.sub("", " ".join(" ".join(messages).split()))
        if image is None or _DECODER_COMPLAINTS.search(complaint):
            damaged = complaint or "the decoder could not read it"
    if isinstance(damaged, str) and _UNREADABLE_KIND.search(damaged):
        raise KnockcamError(f"{what} {path} is a {kind} file of a kind OpenCV cannot read ({damaged[:120]})",
                            "save it again as an 8-bit JPEG or PNG (a photo editor's export does)")
    if damaged:
        reason = damaged if isinstance(damaged, str) else "the file ends early"
        raise KnockcamError(f"{what} {path} is a damaged {kind} file ({reason[:120]}): copy it again from the camera")
    if min(image.shape[:2]) < 32:
        raise KnockcamError(f"{what} {path} is only {image.shape[1]}x{image.shape[0]} pixels: too small to score")
    return image


def _truncated(data: bytes, kind: str) -> bool:
    """True when a JPEG's picture stops before its end marker or a PNG lacks its IEND chunk (a copy cut short)."""
    if kind == "JPEG":
        return _jpeg_cut_short(data)
    if kind == "PNG":
        return b"IEND" not in data[-64:]
    return False


def _jpeg_cut_short(data: bytes) -> bool:
    """Whether the file ends before the JPEG's own end marker, found by walking its segments.

    The walk steps over each marker segment whole (so the end marker of an EXIF thumbnail does not count) and
    through the compressed scans. Bytes after the end marker are allowed: a phone's "motion photo" appends its
    video there. A structure the walk does not follow is left to the decoder's own complaints.
    """
    at = 2  # after the start-of-image marker
    while at + 1 < len(data):
        if data[at] != 0xFF:
            return False  # not a marker where one belongs: the decoder decides
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte before a marker
            at += 1
            continue
        if marker == 0xD9:
            return False
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers without a length
            at += 2
            continue
        if at + 4 > len(data):
            return True
        at += 2 + int.from_bytes(data[at + 2: at + 4], "big")
        if marker == 0xDA:  # a scan: compressed data runs to the next marker that is not a stuffed 0xFF00 or RSTn
            at = _after_scan(data, at)
    return True


def _after_scan(data: bytes, at: int) -> int:
    """Where the marker ending a compressed scan that starts at ``at`` begins (len(data) when none does)."""
    while (at := data.find(b"\xff", at)) != -1 and at + 1 < len(data):
        follower = data[at + 1]
        if follower != 0x00 and not 0xD0 <= follower <= 0xD7 and follower != 0xFF:
            return at
        at += 1 if follower == 0xFF else 2
    return len(data)


@contextmanager
def _decoder_messages():
    """Catch what native decoders print on file descriptor 2 during the block (a list, filled at exit)."""
    messages: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield messages
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield messages
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            messages.append(sink.read().decode("utf-8", "replace"))
