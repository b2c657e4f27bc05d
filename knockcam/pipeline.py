"""One photo scored end to end: image -> calibration -> tokens -> positions -> (with a turn order) payouts.

``knockcam score``, ``knockcam demo``, ``knockcam explain`` and the batch mode all go through
``Scorer``, so a photo gives the same answer whichever command scored it. ``ScoredPhoto.to_dict()``
is the ``knockcam score --json`` contract (issue 6): keep its keys stable.
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from knockcam.assign import (CLOSE_CALL, EXTRA_TOKEN, NOT_A_TOKEN, Position, added_token, assign, check_category,
                             human_call)
from knockcam.board.layout import Board, load_board
from knockcam.calibrate.calibration import Calibration
from knockcam.detect.tokens import Detection, HiddenArea, Token
from knockcam.errors import KnockcamError
from knockcam.files import load_photo
from knockcam.rules.money import POT_START
from knockcam.sides import SIDES

# The keys of one token in the --json contract, in contract order.
TOKEN_KEYS = ("side", "space", "state", "coverage", "margin_mm", "xy_mm", "ambiguous", "confidence")
# File endings taken as photos when a folder is scored.
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")

# A detector gives a Detection (tokens and hidden areas) or just the tokens.
Detector = Callable[[np.ndarray, Calibration, Board, "np.ndarray | None"], "Detection | Sequence[Token]"]


# --- options and the result -------------------------------------------------------------------
def parse_order(text: str | None) -> tuple[str, ...]:
    """'red,blue,green' -> ('red', 'blue', 'green'); the rules engine checks the sides themselves (R1)."""
    if not text:
        return ()
    return tuple(part.strip().lower() for part in re.split(r"[,\s]+", text.strip()) if part.strip())


@dataclass(frozen=True)
class ScoreOptions:
    """How to score: where the calibration comes from, the empty-board frame, the board file, the round."""

    calibration: str | Path | Calibration | None = None  # a saved calibration file, or a Calibration in hand
    corners: str | None = None  # "x,y x,y x,y x,y": near-left, near-right, far-right, far-left
    reference: str | Path | None = None  # empty-board frame from the same camera
    board: str | Path | None = None  # board file; None: the shipped board
    order: tuple[str, ...] = ()  # turn order; empty: positions only, no payouts
    pot: int = POT_START  # the Free Parking pot before the round (R4)
    max_error_mm: float | None = None  # the calibration error accepted (None: calibrate.yaml quality.max_error_mm)
    calls: tuple[tuple[int, str], ...] = ()  # a person's calls: (token number as reported, from 1; where it rests)
    added: tuple[tuple[str, str], ...] = ()  # tokens the camera missed, added by a person: (side, space)


class EntryRefused(KnockcamError):
    """A person's call (``--call N=WHERE``) or added token (``--add SIDE=WHERE``) that this board or photo
    cannot take. ``flag`` ("call" or "add"), ``key`` (the token number or side), ``value`` and ``detail`` name
    it, so a game file's photo round can say it in its own fields' words."""

    def __init__(self, flag: str, key, value: str, detail: str):
        super().__init__(f"--{flag} {key}={value}: {detail}")
        self.flag, self.key, self.value, self.detail = flag, key, value, detail


@dataclass(frozen=True)
class CloseCall:
    """What the round would pay if one call for a human went the other way (the referee's stake): a close
    call to its runner-up; a token in doubt itself (one detector alone saw it, a weak one) to no token at all."""

    index: int  # into ScoredPhoto.positions
    other: str  # the runner-up: a space id, "no_space" or "off_board"; or NOT_A_TOKEN
    cash_change: dict  # side -> M difference (other call minus this call); only sides that change


@dataclass(frozen=True, eq=False)
class ScoredPhoto:
    """A scored photo: the calibration used, every token's position and, with a turn order, the round."""

    image_path: str
    image: np.ndarray  # the photo as scored (BGR), for evidence
    board: Board
    calibration: Calibration
    positions: tuple[Position, ...]  # ordered by side (SIDES order), then far to near
    detector: str  # which detector(s) found the tokens (Token.source values, joined)
    order: tuple[str, ...] = ()
    round: object | None = None  # knockcam.rules.RoundResult when an order was given
    left_out: tuple[tuple[int, str], ...] = ()  # (position index, why) for tokens not scored in the round
    close_calls: tuple[CloseCall, ...] = ()
    timings_ms: dict = field(default_factory=dict)
    hidden: tuple[HiddenArea, ...] = ()  # parts of the board something else covers: a token there may not be seen

    def hidden_spaces(self, area: HiddenArea | None = None) -> tuple[str, ...]:
        """The spaces under the hidden areas (or under one of them): a human must look there."""
        from knockcam.assign import hidden_spaces

        return hidden_spaces(self.hidden if area is None else (area,), self.board)

    @property
    def ambiguous(self) -> tuple[int, ...]:
        """Indices of the positions a human must decide."""
        return tuple(i for i, p in enumerate(self.positions) if p.ambiguous)

    @property
    def tokens(self) -> tuple[Position, ...]:
        """The positions of the tokens on the table: all but those a person said are none (``--call N=none``)."""
        return tuple(p for p in self.positions if NOT_A_TOKEN not in p.flags)

    @property
    def unseen(self) -> dict[str, int]:
        """For each side in the turn order, how many of its tokens (R2) the photo does not show (``unseen``)."""
        return unseen(self.tokens, self.order)

    def calibration_dict(self) -> dict:
        cal = self.calibration
        return {"method": cal.method,
                "corners_px": [[round(float(v), 2) for v in pt] for pt in cal.corners_px(self.board.size_mm)],
                "error_mm": None if cal.error_mm is None else round(float(cal.error_mm), 3)}

    def to_dict(self) -> dict:
        """The ``knockcam score --json`` object (issue 6 contract): tokens, calibration, round."""
        tokens = []
        for p in self.tokens:
            full = p.to_dict()
            tokens.append({key: full[key] for key in TOKEN_KEYS})
        hidden = [{"spaces": list(self.hidden_spaces(a)), "area_mm2": a.area_mm2,
                   "outline_mm": [list(pt) for pt in a.outline_mm]} for a in self.hidden]
        return {"tokens": tokens, "calibration": self.calibration_dict(),
                "round": None if self.round is None else self.round.to_dict(), "hidden": hidden}


# --- the stages -------------------------------------------------------------------------------
def default_detector(image: np.ndarray, calibration: Calibration, board: Board,
                     reference: np.ndarray | None = None) -> Detection:
    """The project's detectors (knockcam.detect.detect): the learned model and/or the empty frame."""
    from knockcam.detect import detect

    return detect(image, calibration, board, reference=reference)


def _automatic(calibrate, image: np.ndarray, board: Board, max_error_mm: float | None = None) -> Calibration:
    """Automatic calibration; an unexpected failure inside the outline finder becomes a one-line answer
    that says what to do (the photo is still scorable with corners), never a traceback."""
    try:
        return calibrate(image, board, max_error_mm=max_error_mm)
    except KnockcamError:
        raise
    except (ValueError, IndexError, ArithmeticError, np.linalg.LinAlgError) as exc:
        raise KnockcamError(f"board not found: the automatic finder failed ({type(exc).__name__}); give --corners "
                            "\"x,y x,y x,y x,y\" (near-left, near-right, far-right, far-left) "
                            "or --calibration") from None


def _detector_name(tokens: Sequence[Token], reference_given: bool) -> str:
    sources = sorted({t.source for t in tokens})
    if sources:
        return "+".join(sources)
    return "reference" if reference_given else "model"


def sort_tokens(tokens: Sequence[Token]) -> list[Token]:
    """Side by side in SIDES order, then from the far end to GO!: the numbering every report uses."""
    rank = {side: i for i, side in enumerate(SIDES)}
    return sorted(tokens, key=lambda t: (rank.get(t.side, len(SIDES)), -t.xy_mm[1], t.xy_mm[0]))


def unseen(tokens: Sequence[Position], sides: Sequence[str]) -> dict[str, int]:
    """For each side, how many of its tokens (R2) are not among these: out of play (off the board, out of
    the picture) unless something hides them, which only a look tells."""
    from knockcam import settings

    per_side = int(settings.load("assign")["sanity"]["tokens_per_side"])
    seen = {side: sum(p.side == side for p in tokens) for side in sides}
    return {side: per_side - n for side, n in seen.items() if n < per_side}


def round_for(positions: Sequence[Position], board: Board, order: tuple[str, ...], pot: int,
              override: tuple[int, str] | None = None):
    """The rules engine's result for these positions, and which positions it left out and why (``placements``).
    ``override`` = (index, category) scores one position as another call (for close calls)."""
    from knockcam.rules import RoundInput, score_round

    tokens, left_out = placements(positions, board, order, override)
    ri = RoundInput(order=order, pot=pot, tokens=tokens)
    return score_round(ri, board, where="--order/--pot"), left_out


def placements(positions: Sequence[Position], board: Board, order: Sequence[str],
               override: tuple[int, str] | None = None):
    """What the rules engine is given of these positions (each token's side and space), and which positions are
    left out and why: tokens a person called none, extra tokens of a side (R2), sides not in the turn order."""
    from knockcam.rules import TokenPlacement

    given, left_out = [], []
    for i, p in enumerate(positions):
        if NOT_A_TOKEN in p.flags:
            left_out.append((i, "not a token: a human's call"))
            continue
        if EXTRA_TOKEN in p.flags:
            left_out.append((i, "more than 4 tokens of this side seen (R2): the least sure one is left out"))
            continue
        if p.side not in order:
            left_out.append((i, f"{p.side} is not in the turn order"))
            continue
        space = p.space if p.state == "on_space" else None
        if override is not None and override[0] == i:
            if override[1] == NOT_A_TOKEN:
                continue
            space = override[1] if board.has_space(override[1]) else None
        given.append(TokenPlacement(p.side, space))
    return tuple(given), tuple(left_out)


def _cache_key(calibration: Calibration) -> bytes:
    """Which calibration this is, for the Scorer's once-per-calibration work: its homography's bytes."""
    return np.asarray(calibration.homography, np.float64).tobytes()


@dataclass
class _FrameMemo:
    """What a Scorer finds once of its empty-board frame and keeps for every photo from the same camera."""

    calibration: Calibration | KnockcamError | None = None  # the frame's automatic calibration, or its refusal
    checked: set[bytes] = field(default_factory=set)  # the calibrations the frame was seen empty through
    onto: tuple | None = None  # ((_cache_key, photo size), FrameOnto): the last calibration's


class Scorer:
    """Scores photos with one set of options; the board, saved calibration, empty frame and model load once."""

    def __init__(self, options: ScoreOptions = ScoreOptions(), detector: Detector | None = None):
        self.options = options
        if options.calibration and options.corners:
            raise KnockcamError("give either --calibration or --corners, not both")
        self.board = load_board(options.board)
        if options.calibration and not isinstance(options.calibration, Calibration):
            Calibration.load(options.calibration)  # a bad file fails here, before any photo is read
        if options.corners:
            from knockcam.calibrate.corners import parse_corners

            parse_corners(options.corners)
        self._calls = self._checked_calls(options.calls)  # (number, category), before any photo is read
        self._added = self._checked_added(options.added)
        if options.order:
            # the engine checks the turn order and pot before any photo is looked at
            round_for((), self.board, tuple(options.order), int(options.pot))
        self.reference = load_photo(options.reference, "empty-board frame") if options.reference else None
        if self.reference is not None:  # refused before any photo is read, not after the board was searched for
            from knockcam.detect import check_photo_light

            check_photo_light(self.reference, "the empty-board frame")
        self._frame = _FrameMemo()
        self.detect = detector or default_detector

    def for_round(self, calls: tuple[tuple[int, str], ...], added: tuple[tuple[str, str], ...]) -> "Scorer":
        """A Scorer for another photo from the same camera with a person's other calls and added tokens (checked
        here, before any photo is read): the board, empty-board frame and model, and what was found once of the
        frame (its calibration, its features), are shared, as a game file's photo rounds need."""
        other = copy.copy(self)
        other.options = replace(self.options, calls=tuple(calls), added=tuple(added))
        other._calls = other._checked_calls(other.options.calls)
        other._added = other._checked_added(other.options.added)
        return other

    def calibrate(self, image: np.ndarray) -> Calibration:
        """The calibration for a photo: the saved file, the given corners, else found automatically.

        With an empty-board frame and nothing else given, the board is found in that frame (no
        tokens in the way) once, and used for every photo from the same camera; when it is refused
        there, in each photo (``_calibrate_photo_for_frame``).
        """
        from knockcam.calibrate import calibrate
        from knockcam.calibrate.choose import check_size

        opts = self.options
        if isinstance(opts.calibration, Calibration):
            check_size(opts.calibration, image, "the calibration", "this one",
                       "run 'knockcam calibrate' on this camera's image")
            return opts.calibration
        if opts.calibration or opts.corners:
            return calibrate(image, self.board, corners=opts.corners, calibration_file=opts.calibration,
                             max_error_mm=opts.max_error_mm)
        if self.reference is None:
            return _automatic(calibrate, image, self.board, opts.max_error_mm)
        if self._frame.calibration is None:
            try:
                self._frame.calibration = _automatic(calibrate, self.reference, self.board, opts.max_error_mm)
            except KnockcamError as refused:
                self._frame.calibration = refused
        if isinstance(self._frame.calibration, Calibration):
            return self._frame.calibration
        return self._calibrate_photo_for_frame(image, self._frame.calibration)

    def _frame_in_view(self, image: np.ndarray, calibration: Calibration) -> tuple[np.ndarray, Calibration]:
        """The empty-board frame as the photo's camera saw the board, and the photo's calibration. A hand-held
        phone or a bumped webcam seldom takes the photo from exactly where it took the frame, and the
        reference-frame detector compares the two pixel by pixel: the frame is carried into the photo's view
        (knockcam.calibrate.motion), and a calibration found in the frame with it."""
        from knockcam.calibrate.motion import FrameOnto, carried

        size = (int(image.shape[1]), int(image.shape[0]))
        key = (_cache_key(calibration), size)
        if self._frame.onto is None or self._frame.onto[0] != key:  # the frame's features: found again only
            self._frame.onto = (key, FrameOnto(self.reference, size, calibration, self.board))  # for a new calibration
        g, shift = self._frame.onto[1](image)
        if shift == 0.0:
            return self.reference, calibration
        if calibration is self._frame.calibration:
            note = f"carried into the photo's view: the camera moved {shift:.1f} mm at the board corners since the frame"
            calibration = calibration.moved(g, error_source=f"{calibration.error_source or calibration.method}; {note}")
        return carried(self.reference, g, size), calibration

    def _check_frame_is_empty(self, reference: np.ndarray, calibration: Calibration) -> None:
        """KnockcamError when the empty-board frame shows tokens on the board (looked at once per calibration):
        the reference-frame detector would miss every token standing where one stands in the frame."""
        key = _cache_key(calibration)
        if key in self._frame.checked:
            return
        from knockcam.assign import places
        from knockcam.detect import tokens_in_empty_frame

        seen = assign(tokens_in_empty_frame(reference, calibration, self.board), self.board)
        if seen:
            raise KnockcamError(f"the empty-board frame {self.options.reference} is not empty: {len(seen)} token"
                                f"{'s' if len(seen) > 1 else ''} on the board ({places(seen)}): give a frame of this "
                                "camera with no token on the board, or score without --reference")
        self._frame.checked.add(key)

    def _check_frame_matches(self, found, name: str) -> None:
        """KnockcamError when the photo differs from the empty-board frame over most of the board
        (``frame_check.max_board_share``, data/reference.yaml): a frame of another board print or from another
        camera place, where every difference would be read as a hand over the board."""
        from knockcam import settings

        difference = found.difference if isinstance(found, Detection) else None
        limit = float(settings.load("reference")["frame_check"]["max_board_share"])
        if difference is not None and difference.board_share > limit:
            raise KnockcamError(f"{name} differs from the empty-board frame {self.options.reference} over "
                                f"{difference.board_share:.0%} of the board: the frame is not of this board seen from "
                                "this camera; take one with no token on the board from where the camera stands, or "
                                "score without --reference")

    def _calibrate_photo_for_frame(self, image: np.ndarray, frame_refused: KnockcamError) -> Calibration:
        """The empty-board frame's automatic calibration was refused: the photo's own, when it is accepted and
        agrees with where the frame's refused one put the board (``agrees``). Both come from the same camera in
        the same place, which the reference detector needs anyway."""
        from knockcam.calibrate import calibrate
        from knockcam.calibrate.quality import Refused, agrees, corner_errors_mm

        try:
            cal = _automatic(calibrate, image, self.board, self.options.max_error_mm)
        except KnockcamError as photo_refused:
            raise KnockcamError(f"in the empty-board frame, {frame_refused}; in the photo too, {photo_refused}") from None
        kept = frame_refused.calibration if isinstance(frame_refused, Refused) else None  # None: board not found
        if not agrees(cal, kept, self.board):
            # a frame taken from elsewhere: that, not its calibration, is what to mend first (a --max-error the
            # frame's refusal offers would only lead to this)
            self._frame_in_view(image, cal)
            apart = float(corner_errors_mm(cal, kept, self.board).max())
            raise KnockcamError(f"in the empty-board frame, {frame_refused}; the photo's board lies {apart:.1f} mm from "
                                f"the frame's, more than the frame's estimated {kept.error_mm:.1f} mm: give --corners "
                                "\"x,y x,y x,y x,y\" (near-left, near-right, far-right, far-left) or lay the marker sheet")
        return replace(cal, error_source=f"{cal.error_source}; found in the photo: the empty-board frame's calibration "
                                         f"was refused ({frame_refused})")

    def score(self, path: str | Path) -> ScoredPhoto:
        """Score one photo file."""
        clock = time.perf_counter()
        image = load_photo(path)
        return self.score_image(image, str(path), clock)

    def score_image(self, image: np.ndarray, name: str = "<image>", clock: float | None = None) -> ScoredPhoto:
        """Score a decoded photo (BGR)."""
        from knockcam.detect import check_photo_light

        timings = {}
        t0 = clock if clock is not None else time.perf_counter()
        if self.reference is not None and self.reference.shape != image.shape:
            r, p = self.reference.shape, image.shape
            sizes = f"the empty-board frame is {r[1]}x{r[0]} but {name} is {p[1]}x{p[0]}"
            if (r[0], r[1]) == (p[1], p[0]):  # a phone held the other way for one of them
                raise KnockcamError(f"{sizes}: one of them is turned a quarter",
                                    "take both with the phone held the same way, or turn one back in a photo editor")
            raise KnockcamError(f"{sizes}: take both with the same camera")
        t1 = time.perf_counter()
        check_photo_light(image)
        calibration = self.calibrate(image)
        reference = self.reference
        if reference is not None:
            reference, calibration = self._frame_in_view(image, calibration)
            self._check_frame_is_empty(reference, calibration)
        t2 = time.perf_counter()
        found = self.detect(image, calibration, self.board, reference)
        self._check_frame_matches(found, name)
        hidden = found.hidden if isinstance(found, Detection) else ()
        tokens = sort_tokens(found.tokens if isinstance(found, Detection) else found)
        if tokens and any(t.xy_px is None for t in tokens):
            px = calibration.mm_to_px([t.xy_mm for t in tokens])
            tokens = [t if t.xy_px is not None else replace(t, xy_px=(float(u), float(v)))
                      for t, (u, v) in zip(tokens, px)]
        t3 = time.perf_counter()
        positions = self._human_calls(tuple(assign(tokens, self.board)))
        t4 = time.perf_counter()
        result, left_out, close = None, (), ()
        order = tuple(self.options.order)
        if order:
            result, left_out = round_for(positions, self.board, order, int(self.options.pot))
            close = tuple(self._close_calls(positions, result, left_out, order))
        t5 = time.perf_counter()
        timings.update(load=(t1 - t0) * 1e3, calibrate=(t2 - t1) * 1e3, detect=(t3 - t2) * 1e3,
                       assign=(t4 - t3) * 1e3, round=(t5 - t4) * 1e3)
        return ScoredPhoto(image_path=name, image=image, board=self.board, calibration=calibration,
                           positions=positions, detector=_detector_name(tokens, self.reference is not None),
                           order=order, round=result, left_out=left_out, close_calls=close,
                           timings_ms={k: round(v, 1) for k, v in timings.items()}, hidden=hidden)

    def _checked_calls(self, calls: tuple[tuple[int, str], ...]) -> list[tuple[int, str]]:
        """A person's calls with each place as a category of this board (a KnockcamError naming the bad one)."""
        numbers = [n for n, _ in calls]
        twice = sorted({n for n in numbers if numbers.count(n) > 1})
        if twice:
            raise KnockcamError(f"--call: token #{twice[0]} is called twice; give one call per token")
        checked = []
        for n, category in calls:
            if n < 1:
                raise EntryRefused("call", n, category, "tokens are numbered from 1, as the table shows")
            try:
                checked.append((n, check_category(category, self.board)))
            except KnockcamError as exc:
                raise EntryRefused("call", n, category, str(exc)) from None
        return checked

    def _checked_added(self, added: tuple[tuple[str, str], ...]) -> list[Token]:
        """The tokens a person added (side, place), each a token of this board (an EntryRefused naming the bad one)."""
        tokens = []
        for side, where in added:
            try:
                tokens.append(added_token(side, where, self.board))
            except KnockcamError as exc:
                raise EntryRefused("add", side, where, str(exc)) from None
        return tokens

    def _human_calls(self, positions: tuple[Position, ...]) -> tuple[Position, ...]:
        """The positions with a person's calls (``ScoreOptions.calls``) in place of the camera's, and the tokens
        they added (``ScoreOptions.added``) after the camera's, so no number changes. Without the tokens called
        none, with the ones added, all are assigned again: which token of a side is a fifth (R2) may change."""
        out = list(positions)
        for (n, _), (_, given) in zip(self._calls, self.options.calls):
            if n > len(out):
                found = f"#1-#{len(out)}" if out else "none"
                raise EntryRefused("call", n, given, f"the photo shows {len(out)} token{'s' if len(out) != 1 else ''} "
                                                     f"({found}): give a number from the tokens table")
        calls = [(n - 1, category) for n, category in self._calls]
        struck = {i for i, category in calls if category == NOT_A_TOKEN}
        if struck or self._added:
            tokens = [p.token for p in out] + self._added
            out += [None] * len(self._added)
            kept = [i for i in range(len(tokens)) if i not in struck]
            for i, again in zip(kept, assign([tokens[i] for i in kept], self.board)):
                out[i] = again
        for i, category in calls:
            out[i] = human_call(out[i], category, self.board)
        return tuple(out)

    def _close_calls(self, positions, result, left_out, order) -> list[CloseCall]:
        """For each call for a human in the round, the payout difference if it went the other way: a close
        call to its runner-up, a token in doubt itself (no close call) to no token at all."""
        out = []
        left = {i for i, _ in left_out}
        for i, p in enumerate(positions):
            if not p.ambiguous or i in left:
                continue
            instead = p.runner_up if CLOSE_CALL in p.flags else NOT_A_TOKEN
            if not instead:
                continue
            other, _ = round_for(positions, self.board, order, int(self.options.pot), override=(i, instead))
            change = {side: int(other.cash[side] - result.cash[side]) for side in order
                      if other.cash[side] != result.cash[side]}
            out.append(CloseCall(index=i, other=instead, cash_change=change))
        return out


def score_photo(path: str | Path, options: ScoreOptions = ScoreOptions(),
                detector: Detector | None = None) -> ScoredPhoto:
    """Score one photo file with these options (a one-off ``Scorer``)."""
    return Scorer(options, detector).score(path)
