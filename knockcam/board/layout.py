"""The board as data: spaces, kinds, colour sets, values and outlines, loaded from YAML.

Pure Python (no numpy, no OpenCV) so that the rules engine can use it without the vision stack.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from knockcam.errors import KnockcamError

KINDS = ("property", "railroad", "chance", "house", "luxury_tax", "free_parking", "go_to_jail")
COLOR_SETS = ("brown", "light_blue", "pink", "orange", "red", "yellow", "green", "dark_blue")

Point = tuple[float, float]


@dataclass(frozen=True)
class Space:
    """One printed space: a stable snake_case id, its kind and, for a property, set and value."""

    id: str
    name: str
    kind: str
    color_set: str | None
    value: int
    polygon: tuple[Point, ...]  # board millimetres, counter-clockwise


@dataclass(frozen=True)
class TokenSize:
    """The assumed size of a sliding token: a round base with a figure standing on it."""

    base_diameter_mm: float
    height_mm: float


@dataclass(frozen=True)
class Board:
    """A whole board in board millimetres (origin near-left, x across, y towards the far end)."""

    name: str
    size_mm: tuple[float, float]  # (width along x, length along y)
    go_line_y_mm: float
    token: TokenSize
    set_bonus: dict[str, int]
    spaces: tuple[Space, ...]
    source: str = field(default="", compare=False)

    def space(self, space_id: str) -> Space:
        """The space with this id; a KnockcamError naming the board if there is none."""
        for space in self.spaces:
            if space.id == space_id:
                return space
        raise KnockcamError(f"unknown space id {space_id!r} (board {self.source or self.name})",
                            self.did_you_mean(space_id))

    def has_space(self, space_id: str) -> bool:
        return any(space.id == space_id for space in self.spaces)

    def space_id(self, words: str, also: tuple[str, ...] = ()) -> str:
        """The id of the space a person names by its id or its printed name, any case ("Virginia Avenue",
        "go to jail"); else a KnockcamError that offers the nearest ids (and the caller's other answers,
        ``also``), so a typo at a prompt or on the command line costs one more try, not a lookup."""
        if self.has_space(words):
            return words
        key = as_id(words)
        named = [space.id for space in self.spaces if key in (space.id, as_id(space.name))]
        if len(named) == 1:
            return named[0]
        if named:
            raise KnockcamError(f"{words!r} names {len(named)} spaces: give one of {', '.join(named)}")
        raise KnockcamError(f"{words!r} is not a space of this board", self.did_you_mean(words, also) or
                            f"one of {''.join(a + ', ' for a in also)}a space id ('knockcam board' lists them)")

    def did_you_mean(self, words: str, also: tuple[str, ...] = ()) -> str:
        """The hint "did you mean X or Y?" naming the space ids (or ``also`` answers) nearest to mistyped
        ``words``; "" when none is near."""
        near = difflib.get_close_matches(as_id(str(words)), [space.id for space in self.spaces] + list(also),
                                         n=3, cutoff=0.6)
        return f"did you mean {' or '.join(near)}?" if near else ""

    def of_kind(self, kind: str) -> tuple[Space, ...]:
        return tuple(space for space in self.spaces if space.kind == kind)

    @property
    def properties(self) -> tuple[Space, ...]:
        return self.of_kind("property")

    def color_set(self, color_set: str) -> tuple[Space, ...]:
        """The properties of one colour set, in board-file order."""
        return tuple(space for space in self.properties if space.color_set == color_set)


def as_id(words: str) -> str:
    """Words as an id is written: "Go to Jail" -> "go_to_jail"."""
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


def default_board_path() -> Path:
    """The board file shipped with knockcam (a documented reconstruction)."""
    return Path(str(resources.files("knockcam.data").joinpath("board.yaml")))


def load_board(path: str | Path | None = None) -> Board:
    """Read and validate a board file; the default board when ``path`` is None."""
    from knockcam.files import parse_json_or_yaml, read_text

    path = Path(path) if path is not None else default_board_path()
    text = read_text(path, "board file", "give --board an existing YAML file")
    return board_from_dict(parse_json_or_yaml(text, path), source=str(path))


def board_from_dict(data: Any, source: str = "<board>") -> Board:
    """Build a Board from parsed YAML, raising KnockcamError naming the file, space and field."""
    from knockcam.board.validate import validate_board  # geometry checks live with the geometry

    read = _BoardReader(source)
    if not isinstance(data, dict):
        raise read.error("a board file is a mapping with name, size_mm, token, set_bonus, spaces")
    size_mm = read.size(data)
    token = read.token(data)
    set_bonus = read.set_bonus(data)
    spaces_data = read.need(data, "spaces", "")
    if not isinstance(spaces_data, list) or not spaces_data:
        raise read.error("spaces must be a non-empty list")
    spaces = tuple(read.space(index, item) for index, item in enumerate(spaces_data))
    board = Board(
        name=str(data.get("name", "board")),
        size_mm=size_mm,
        go_line_y_mm=read.number(data.get("go_line_y_mm", 0), "go_line_y_mm"),
        token=token,
        set_bonus=set_bonus,
        spaces=spaces,
        source=source,
    )
    validate_board(board)
    return board


class _BoardReader:
    """Reads a board file's parts, each error naming the file (``source``), the space and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, message: str) -> KnockcamError:
        """The error to raise: ``message`` after the file's name."""
        return KnockcamError(f"{self.source}: {message}")

    def need(self, mapping: dict, key: str, where: str) -> Any:
        if key not in mapping:
            raise self.error(f"{where}missing field '{key}'")
        return mapping[key]

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.error(f"{where} must be a number, not {value!r}")
        return float(value)

    def size(self, data: dict) -> tuple[float, float]:
        size = self.need(data, "size_mm", "")
        if not (isinstance(size, list) and len(size) == 2):
            raise self.error(f"size_mm must be [width, length] in mm, not {size!r}")
        return (self.number(size[0], "size_mm[0]"), self.number(size[1], "size_mm[1]"))

    def token(self, data: dict) -> TokenSize:
        token = self.need(data, "token", "")
        if not isinstance(token, dict):
            raise self.error("token must be a mapping with base_diameter_mm and height_mm")
        return TokenSize(
            base_diameter_mm=self.number(self.need(token, "base_diameter_mm", "token: "), "token.base_diameter_mm"),
            height_mm=self.number(self.need(token, "height_mm", "token: "), "token.height_mm"),
        )

    def set_bonus(self, data: dict) -> dict[str, int]:
        bonus = self.need(data, "set_bonus", "")
        if not isinstance(bonus, dict):
            raise self.error("set_bonus must map colour sets to money")
        out = {}
        for name, amount in bonus.items():
            if name not in COLOR_SETS:
                raise self.error(f"set_bonus: unknown colour set {name!r} (one of {', '.join(COLOR_SETS)})")
            if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
                raise self.error(f"set_bonus.{name} must be a whole number of M, at least 0, not {amount!r}")
            out[name] = amount
        return out

    def space(self, index: int, item: Any) -> Space:
        if not isinstance(item, dict):
            raise self.error(f"spaces[{index}] must be a mapping")
        sid = self.need(item, "id", f"spaces[{index}]: ")
        where = f"space {sid!r}: "
        kind = self.need(item, "kind", where)
        if kind not in KINDS:
            raise self.error(f"{where}unknown kind {kind!r} (one of {', '.join(KINDS)})")
        color_set = item.get("color_set")
        if kind == "property":
            if color_set not in COLOR_SETS:
                raise self.error(f"{where}color_set must be one of {', '.join(COLOR_SETS)}, not {color_set!r}")
            value = item.get("value")
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise self.error(f"{where}a property needs a positive whole value, not {value!r}")
        else:
            if color_set is not None:
                raise self.error(f"{where}only properties have a color_set")
            value = 0
        return Space(id=str(sid), name=str(item.get("name", sid)), kind=kind, color_set=color_set, value=int(value),
                     polygon=self.polygon(self.need(item, "polygon", where), where))

    def polygon(self, points: Any, where: str) -> tuple[tuple[float, float], ...]:
        if not isinstance(points, list) or len(points) < 3:
            raise self.error(f"{where}polygon needs at least 3 [x, y] points")
        out = []
        for point in points:
            if not (isinstance(point, list) and len(point) == 2):
                raise self.error(f"{where}polygon point {point!r} is not [x, y]")
            out.append((self.number(point[0], f"{where}polygon x"), self.number(point[1], f"{where}polygon y")))
        return tuple(out)
