"""The four sides of the game (RULES.md R1): one colour each, 4 tokens each (R2)."""

from __future__ import annotations

SIDES = ("red", "yellow", "green", "blue")
TOKENS_PER_SIDE = 4
SHAPES = ("cat", "car", "top_hat", "dog")


def parse_sides(text: str | None, what: str) -> list[str] | None:
    """The sides of a game as typed ("red,blue"), in that order, for the option ``--what``; None when not given.
    A KnockcamError names an unknown side, a side listed twice, or fewer than 2 or more than 4 (R1)."""
    from knockcam.errors import KnockcamError

    if text is None:
        return None
    sides = [s.strip().lower() for s in text.split(",") if s.strip()]
    for s in sides:
        if s not in SIDES:
            raise KnockcamError(f"--{what}: unknown side {s!r} (one of {', '.join(SIDES)})")
    if len(set(sides)) != len(sides):
        raise KnockcamError(f"--{what}: a side is listed twice")
    if not 2 <= len(sides) <= 4:
        raise KnockcamError(f"--{what}: a game has 2 to 4 sides, not {len(sides)} (R1)")
    return sides
