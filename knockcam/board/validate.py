"""Board checks beyond the file's shape: ids, required kinds, bonuses, polygon geometry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knockcam.errors import KnockcamError

if TYPE_CHECKING:
    from knockcam.board.layout import Board

REQUIRED_KINDS = ("property", "railroad", "chance", "house", "luxury_tax", "free_parking", "go_to_jail")


def validate_board(board: "Board") -> None:
    """Raise KnockcamError (file, space id, field) for the first thing wrong with the board."""
    src = board.source or board.name
    seen = set()
    for space in board.spaces:
        if space.id in seen:
            raise KnockcamError(f"{src}: space {space.id!r}: duplicate id")
        seen.add(space.id)
    for kind in REQUIRED_KINDS:
        if not board.of_kind(kind):
            raise KnockcamError(f"{src}: no space of kind {kind!r}; the rules need one")
    for space in board.properties:
        if space.color_set not in board.set_bonus:
            raise KnockcamError(f"{src}: colour set {space.color_set!r} (space {space.id!r}) has no set_bonus")
    # TODO(board): polygon simple, inside the board, no overlaps.
