"""``knockcam explain``: one side's tokens (or single tokens by number) up close, with every coverage number
behind each call.

For each token: the share of its base on every space it touches (and on no space / off the
board), the call, the runner-up, the margin in mm against the close-call band its uncertainty gives, and a
magnified top-down close-up of the photo with the layout over it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from knockcam.assign import close_call_band_mm, doubt_words
from knockcam.board.geometry import NO_SPACE, OFF_BOARD, coverage
from knockcam.errors import KnockcamError
from knockcam.report import draw as d
from knockcam.report.evidence import call_words, close_up, space_name
from knockcam.sides import SIDES


@dataclass(frozen=True)
class Explanation:
    """One token's call in numbers: every category its base touches, best first."""

    number: int  # the token's number in the evidence picture and the score table (1-based)
    side: str
    call: str  # the call in words
    shares: tuple[tuple[str, float], ...]  # (category, share of the base), share > 0, largest first
    margin_mm: float
    sigma_mm: float
    ambiguous: bool
    runner_up: str | None
    confidence: float
    xy_mm: tuple[float, float]
    flags: tuple[str, ...]
    source: str

    @property
    def close_within_mm(self) -> float:
        """A margin under this is a close call: assign's band for this uncertainty."""
        return close_call_band_mm(self.sigma_mm)

    def to_dict(self) -> dict:
        return {"n": self.number, "side": self.side, "call": self.call,
                "shares": {k: round(v, 4) for k, v in self.shares}, "margin_mm": round(self.margin_mm, 2),
                "sigma_mm": round(self.sigma_mm, 2), "close_within_mm": round(self.close_within_mm, 2),
                "ambiguous": self.ambiguous, "runner_up": self.runner_up,
                "confidence": round(self.confidence, 3), "xy_mm": [round(v, 2) for v in self.xy_mm],
                "flags": list(self.flags), "source": self.source}


def parse_tokens(values: list[str] | None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``--token red --token 5`` or ``--token red,5,#7`` -> (('red',), (5, 7)): sides, and tokens by their number
    in the score table and the evidence picture; KnockcamError for other words."""
    sides: list[str] = []
    numbers: list[int] = []
    for value in values or []:
        for part in value.replace(" ", ",").split(","):
            part = part.strip().lower().removeprefix("#")
            if not part:
                continue
            if part.isdigit() and int(part) >= 1:
                if int(part) not in numbers:
                    numbers.append(int(part))
            elif part in SIDES:
                if part not in sides:
                    sides.append(part)
            else:
                raise KnockcamError(f"--token {part!r} is neither a side ({', '.join(SIDES)}) nor a token's number "
                                    "('knockcam score' numbers them)")
    if not sides and not numbers:
        raise KnockcamError(f"--token needs a side ({', '.join(SIDES)}) or a token's number")
    return tuple(sides), tuple(numbers)


def explain(scored, sides: tuple[str, ...], numbers: tuple[int, ...] = ()) -> list[Explanation]:
    """The numbers behind every call of these sides' tokens and of the tokens with these ``numbers``
    (1-based, as the evidence numbers them), in evidence numbering. A number the photo has no token for is a
    KnockcamError."""
    board = scored.board
    beyond = [n for n in numbers if n > len(scored.positions)]
    if beyond:
        raise KnockcamError(f"--token {beyond[0]}: the photo has {len(scored.positions)} token(s), numbered as "
                            "'knockcam score' prints them")
    picked = [i for i, p in enumerate(scored.positions) if p.side in sides or i + 1 in numbers]
    if not picked:
        return []
    cov = coverage(board, np.array([scored.positions[i].token.xy_mm for i in picked]), margins=False)
    out = []
    for row, i in enumerate(picked):
        p = scored.positions[i]
        shares = [(sid, float(cov.fractions[row, j])) for j, sid in enumerate(cov.space_ids)]
        shares += [(NO_SPACE, float(cov.no_space[row])), (OFF_BOARD, float(cov.off_board[row]))]
        shares = sorted(((k, v) for k, v in shares if v > 5e-4), key=lambda kv: -kv[1])
        out.append(Explanation(number=i + 1, side=p.side, call=call_words(board, p), shares=tuple(shares),
                               margin_mm=float(p.margin_mm), sigma_mm=float(p.sigma_mm), ambiguous=bool(p.ambiguous),
                               runner_up=p.runner_up, confidence=float(p.token.confidence),
                               xy_mm=tuple(float(v) for v in p.token.xy_mm), flags=tuple(p.flags),
                               source=p.token.source))
    return out


def heading(e: Explanation) -> str:
    """A close-up's first line: the token, its call, and why a human decides it (a close call, a disagreement...)."""
    return f"#{e.number} {e.side}: {e.call}" + (f"  {doubt_words(e).upper()}" if e.ambiguous else "")


def explain_image(scored, explanations: list[Explanation], tile: int = 360) -> np.ndarray:
    """Close-ups of the explained tokens side by side, each with its coverage numbers underneath."""
    board = scored.board
    n = max(1, len(explanations))
    per_row = min(n, 4)
    rows = (n + per_row - 1) // per_row
    text_h = 150
    cell_w, cell_h = tile + 20, tile + text_h
    header_h = 62
    img = np.full((header_h + rows * cell_h + 10, per_row * cell_w + 10, 3), d.PAPER, np.uint8)
    room = img.shape[1] - 24
    sides = sorted({e.side for e in explanations}, key=SIDES.index)
    title = f"knockcam explain: {', '.join(sides) or 'no tokens'}"
    d.put(img, title, (12, 30), d.fitted(title, room, 0.7, 2), d.INK, 2)
    name = scored.image_path.split('/')[-1]
    d.put(img, d.shortened(name, room, 0.5), (12, 52), 0.5, d.MUTED, 1)
    if not explanations:
        d.put(img, "no tokens of this side were found", (12, 80), 0.6, d.MUTED, 1)
    for k, e in enumerate(explanations):
        x = 10 + (k % per_row) * cell_w
        y = header_h + (k // per_row) * cell_h
        img[y:y + tile, x:x + tile] = close_up(scored, e.number - 1, size=tile, half_mm=36.0)
        color = d.CLOSE if e.ambiguous else d.INK
        ty = y + tile + 20
        head = heading(e)
        d.put(img, head, (x, ty), d.fitted(head, tile, 0.55, 2), color, 2)
        for cat, share in e.shares[:4]:
            ty += 19
            d.put(img, f"{share:6.1%}  {space_name(board, cat)}", (x + 4, ty), 0.5, d.INK, 1)
        ty += 21
        d.put(img, f"margin {e.margin_mm:.1f} mm, close within {e.close_within_mm:.1f} mm", (x + 4, ty), 0.5, color, 1)
    return img
