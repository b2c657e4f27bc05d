"""Tokens -> positions: which space each token's base rests on (RULES.md S3), and which calls are close.

The base is a disc at the token's base centre; the board's geometry gives its coverage of every
space. A call is ``ambiguous`` when the position's uncertainty (``sigma_mm`` times a factor from
``data/assign.yaml``) reaches the margin: the human decides, the machine does not guess.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.geometry import NO_SPACE, OFF_BOARD, ON_SPACE, coverage
from knockcam.board.layout import Board, as_id
from knockcam.detect.tokens import HiddenArea, Token
from knockcam.errors import KnockcamError
from knockcam.sides import SIDES

# Flags a Position can carry, in the order they are reported.
CLOSE_CALL = "close_call"  # the base centre is within the uncertainty band of a line that changes the answer
EXTRA_TOKEN = "extra_token"  # more tokens of this side than the game has (R2): the least confident ones
FALLEN = "fallen"  # fell over: stood back up where it fell (S3), its base centre less sure (fallen_sigma_mm)
MAYBE_FALLEN = "maybe_fallen"  # it may lie down (knockcam.detect.fallen): where it was found, as unsure as a fallen one
DISAGREEMENT = "disagreement"  # two detectors disagreed about this token (see knockcam.detect.combine)
UNSURE = "unsure"  # a look doubts the token: a weak score (it may be no token at all), or another colour seen there
OFF = "off_board"  # most of the base is off the board (S2): out for the round
HUMAN_CALL = "human_call"  # a person said where it rests (``human_call``); the camera's call is the runner-up
NOT_A_TOKEN = "not_a_token"  # a person said there is no token there (a false detection): left out of everything
ADDED = "added_by_hand"  # a token the camera did not see, put on its space by a person (``added_token``)
BY_HAND = "by_hand"  # Token.source of such a token

# Token.source values that mean the two detectors disagreed (set by knockcam.detect.combine; verifier_only:
# neither reported it, knockcam.detect.verify found it beside another token).
DISPUTED_SOURCES = ("model_only", "reference_only", "conflict", "verifier_only")


def doubt_words(position) -> str:
    """Why a call is left to a human, in a word or two: a close call, else its first other flag (one word
    for every place that says it: the score line, the evidence, explain, game files and the live review)."""
    if CLOSE_CALL in position.flags:
        return "close call"
    reasons = [flag for flag in position.flags if flag not in (OFF, FALLEN, MAYBE_FALLEN, HUMAN_CALL)]
    return (reasons[0] if reasons else "in doubt").replace("_", " ")


@dataclass(frozen=True)
class Position:
    """Where one token rests: its space (None unless ``state`` is on_space), coverage and how sure we are."""

    token: Token
    space: str | None
    state: str  # on_space | no_space | off_board
    coverage: float  # share of the base on the winning category (the space, no space or off the board)
    margin_mm: float  # how far the base centre can move before the answer changes
    ambiguous: bool  # the uncertainty could flip the answer, or the token itself is in doubt: a human's call
    runner_up: str | None  # the category that would win next: a space id, "no_space" or "off_board"
    runner_up_coverage: float
    sigma_mm: float  # the uncertainty used for the ambiguity test
    flags: tuple[str, ...] = ()

    @property
    def side(self) -> str:
        return self.token.side

    def to_dict(self) -> dict:
        """The keys of the ``knockcam score --json`` contract, plus flags and runner-up."""
        return {
            "side": self.token.side,
            "space": self.space,
            "state": self.state,
            "coverage": round(float(self.coverage), 4),
            "margin_mm": round(float(self.margin_mm), 2),
            "xy_mm": [round(float(v), 2) for v in self.token.xy_mm],
            "ambiguous": bool(self.ambiguous),
            "confidence": round(float(self.token.confidence), 3),
            "runner_up": self.runner_up,
            "runner_up_coverage": round(float(self.runner_up_coverage), 4),
            "sigma_mm": round(float(self.sigma_mm), 2),
            "flags": list(self.flags),
            "source": self.token.source,
        }


def effective_sigma(token: Token, cfg: dict | None = None) -> float:
    """The token's positional uncertainty, widened for fallen tokens (and those that may be) and detector
    disagreements."""
    cfg = cfg or settings.load("assign")
    sigma = float(token.sigma_mm)
    if token.fallen or token.maybe_fallen:
        sigma = max(sigma, float(cfg["ambiguity"]["fallen_sigma_mm"]))
    if token.source in DISPUTED_SOURCES:
        sigma = max(sigma, float(cfg["ambiguity"]["disagreement_sigma_mm"]))
    return sigma


def close_call_band_mm(sigma_mm: float, cfg: dict | None = None, *, sigmas: float | None = None) -> float:
    """How near a deciding line a base with this uncertainty is a close call: ``sigmas`` (None: ``ambiguity.sigmas``
    of data/assign.yaml) x its sigma, at least ``min_margin_mm``."""
    amb = (cfg or settings.load("assign"))["ambiguity"]
    k = float(amb["sigmas"]) if sigmas is None else float(sigmas)
    return max(k * float(sigma_mm), float(amb["min_margin_mm"]))


def assign(tokens: list[Token] | tuple[Token, ...], board: Board) -> list[Position]:
    """One Position per token, in the order given: coverage by the board's geometry and the sanity checks."""
    cfg = settings.load("assign")
    for token in tokens:
        if token.side not in SIDES:
            raise KnockcamError(f"token side {token.side!r} is not one of {', '.join(SIDES)}")
    if not tokens:
        return []
    centres = np.array([t.xy_mm for t in tokens], dtype=np.float64).reshape(-1, 2)
    cov = coverage(board, centres)
    extras = _extras(tokens, int(cfg["sanity"]["tokens_per_side"]))
    positions = []
    for i, token in enumerate(tokens):
        rest = cov[i]
        sigma = effective_sigma(token, cfg)
        margin = float(rest.margin_mm) if np.isfinite(rest.margin_mm) else 0.0
        close = margin < close_call_band_mm(sigma, cfg)
        flags = []
        if close:
            flags.append(CLOSE_CALL)
        if i in extras:
            flags.append(EXTRA_TOKEN)
        if token.fallen:
            flags.append(FALLEN)
        elif token.maybe_fallen:
            flags.append(MAYBE_FALLEN)
        if token.source in DISPUTED_SOURCES:
            flags.append(DISAGREEMENT)
        if token.unsure:
            flags.append(UNSURE)
        if rest.state == OFF_BOARD:
            flags.append(OFF)
        if token.source == BY_HAND:
            flags.append(ADDED)
        # a fallen token is stood back up where it fell (S3): its base centre is less sure (fallen_sigma_mm),
        # so its call is close sooner; well inside a space it is no closer a call than a standing token's
        ambiguous = close or i in extras or token.source in DISPUTED_SOURCES or token.unsure
        positions.append(Position(
            token=token, space=rest.space_id, state=rest.state, coverage=float(rest.share),
            margin_mm=margin, ambiguous=bool(ambiguous), runner_up=rest.runner_up,
            runner_up_coverage=float(rest.runner_up_share), sigma_mm=sigma, flags=tuple(flags)))
    return positions


def check_category(category: str, board: Board) -> str:
    """A resting place a person names, as a category: a space id or a space's printed name ("Virginia Avenue",
    any case), ``no_space`` or ``off_board``; or ``none`` (``NOT_A_TOKEN``: no token there). Else a
    KnockcamError naming the nearest ids."""
    if category in (NO_SPACE, OFF_BOARD) or board.has_space(category):
        return category
    words = as_id(category)
    if words in ("none", "no_token", NOT_A_TOKEN):
        return NOT_A_TOKEN
    if words in (NO_SPACE, OFF_BOARD, "off_the_board"):
        return OFF_BOARD if words == "off_the_board" else words
    return board.space_id(category, also=(NO_SPACE, OFF_BOARD, "none"))


def added_token(side: str, category: str, board: Board) -> Token:
    """A token the camera did not see, put by a person on a space (id or name): in its middle, sure of it."""
    if side not in SIDES:
        raise KnockcamError(f"{side!r} is not a side: one of {', '.join(SIDES)}")
    space = check_category(category, board)
    if not board.has_space(space):
        raise KnockcamError(f"a token added by hand goes on a space (its id or name), not {space}")
    polygon = np.asarray(board.space(space).polygon, np.float64)
    xy = polygon.mean(axis=0)
    rest = coverage(board, xy[None], margins=False)[0]
    if rest.space_id != space or rest.share < 0.999:  # the base not all on it there (an L-shaped space, say)
        label = [s.id for s in board.spaces].index(space) + 1
        inside = cv2.distanceTransform((_space_raster(board, 1.0) == label).astype(np.uint8), cv2.DIST_L2, 5)
        y, x = np.unravel_index(int(np.argmax(inside)), inside.shape)  # the pixel deepest inside (1 px = 1 mm)
        xy = np.array([float(x), float(y)])
    return Token(side, (float(xy[0]), float(xy[1])), 1.0, sigma_mm=0.0, source=BY_HAND)


def human_call(position: Position, category: str, board: Board) -> Position:
    """The position put where a person says it rests (a space id, ``no_space`` or ``off_board``): no longer a
    close call; the camera's own call becomes the runner-up, so the reports can show both. ``none``: no token
    there; the camera's call is kept for the reports, and the token is left out of the round and the counts."""
    category = check_category(category, board)
    camera = position.space if position.state == ON_SPACE else position.state
    if category == NOT_A_TOKEN:
        return replace(position, ambiguous=False, runner_up=camera, runner_up_coverage=position.coverage,
                       flags=tuple(f for f in position.flags if f != CLOSE_CALL) + (NOT_A_TOKEN, HUMAN_CALL))
    cov = coverage(board, np.asarray([position.token.xy_mm], np.float64), margins=False)
    on_space = board.has_space(category)
    flags = tuple(f for f in position.flags if f not in (CLOSE_CALL, OFF)) + ((OFF,) if category == OFF_BOARD else ())
    return replace(position, space=category if on_space else None, state=ON_SPACE if on_space else category,
                   coverage=cov.of(0, category), ambiguous=False, runner_up=camera,
                   runner_up_coverage=cov.of(0, camera), flags=flags + (HUMAN_CALL,))


def _extras(tokens, per_side: int) -> set[int]:
    """Indices of the tokens beyond ``per_side`` of one side: the least confident of that side."""
    extras: set[int] = set()
    for side in SIDES:
        idx = [i for i, t in enumerate(tokens) if t.side == side]
        if len(idx) > per_side:
            idx.sort(key=lambda i: -tokens[i].confidence)
            extras.update(idx[per_side:])
    return extras


def places(positions: list[Position]) -> str:
    """Where the tokens rest, for a message: "red on boardwalk, blue on no_space"."""
    return ", ".join(f"{p.token.side} on {p.space or p.state}" for p in positions)


def hidden_spaces(areas: tuple[HiddenArea, ...] | list[HiddenArea], board: Board) -> tuple[str, ...]:
    """The spaces a hidden area covers enough of (``hidden.min_space_share`` of the space, data/assign.yaml)
    for a token resting there to be under it: the ones a human must look at. In board-file order."""
    if not areas:
        return ()
    scale = 1.0  # raster px per mm
    labels = _space_raster(board, scale)
    covered = np.zeros(labels.shape, np.uint8)
    for area in areas:
        cv2.fillPoly(covered, [np.round(np.asarray(area.outline_mm) * scale).astype(np.int32)], 1)
    n = len(board.spaces)
    inside = np.bincount(labels[covered > 0].ravel(), minlength=n + 1)[1:]
    whole = np.bincount(labels.ravel(), minlength=n + 1)[1:]
    share = float(settings.load("assign")["hidden"]["min_space_share"])
    return tuple(space.id for space, a, b in zip(board.spaces, inside, whole) if b and a >= share * b)


def _space_raster(board: Board, scale: float) -> np.ndarray:
    """The board at ``scale`` px/mm, each pixel labelled with its space's index + 1 (0: no space)."""
    w, length = board.size_mm
    labels = np.zeros((int(np.ceil(length * scale)) + 1, int(np.ceil(w * scale)) + 1), np.int32)
    for i, space in enumerate(board.spaces):
        cv2.fillPoly(labels, [np.round(np.asarray(space.polygon) * scale).astype(np.int32)], i + 1)
    return labels
