"""Token detection: which tokens are on the table and where each base touches the board.

``detect`` is the one entry point: it runs what is available -- the learned model
(knockcam.detect.model) and, given an empty-board frame, the reference-frame detector
(knockcam.detect.reference) -- and combines them (knockcam.detect.combine), then looks again
at every token, at the model's weak candidates and beside every token, where one touching it may
hide (knockcam.detect.verify), and places each base again, more precisely (knockcam.detect.refine; a
photo alone by its own verifier and refiner, which see the photo only);
each token's uncertainty then includes the calibration's error (``with_calibration_error``). It also
reports the parts of the board something else covers (a hand, a cup), where a token may not be seen:
seen by the cover network in the photo itself (knockcam.detect.cover) and, with the empty frame, by
difference with it.
Tokens lying on their side are marked (knockcam.detect.fallen; with the empty frame by a classifier
that sees it too); a last look (``verify.last_look``) drops the tokens the verifier doubts where that
costs least, reports a lying token seen twice once and corrects colours; the lying tokens are then
moved to where their base is, the point they are stood back up on (``place_fallen``). Then
``knockcam.assign.assign(tokens, board)`` says where each one rests.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Union

import numpy as np

from knockcam import settings
from knockcam.detect.tokens import Detection, HiddenArea, Token
from knockcam.errors import KnockcamError
from knockcam.exposure import without_colour

if TYPE_CHECKING:
    from knockcam.board.layout import Board
    from knockcam.calibrate.calibration import Calibration
    from knockcam.detect.model import TokenModel
    from knockcam.detect.reference import Difference

AUTO = "auto"  # use the shipped model when its weights exist, else go on without it


class Unreadable(KnockcamError):
    """This photo cannot be read (its board far too dark, no colour in it); one taken in better light can."""

ModelArg = Union["TokenModel", str, Path, None]

_LOADED: dict[str, "TokenModel"] = {}


def load_model(model: ModelArg = AUTO) -> "TokenModel | None":
    """The learned detector: a TokenModel as given, loaded from a path, the default one (AUTO, None if it
    has not been trained yet), or None for no model. Loaded models are kept for the next call."""
    if model is None:
        return None
    if not isinstance(model, (str, Path)):
        return model
    from knockcam.detect.model import TokenModel, default_model_path

    if model == AUTO:
        path = default_model_path()
        if not path.is_file():
            return None
    else:
        path = Path(model)
    key = str(path.resolve())
    if key not in _LOADED:
        _LOADED[key] = TokenModel(path)
    return _LOADED[key]


def detect(image: np.ndarray, calibration: "Calibration", board: "Board",
           reference: np.ndarray | None = None, model: ModelArg = AUTO) -> Detection:
    """Tokens in a photo of the board (base centres in board mm), from every detector available,
    and the parts of the board something else covers (seen by the cover network when it is shipped, and
    by difference with ``reference``).

    ``reference`` is an empty-board frame from the same camera (taken at calibration); ``model``
    is a TokenModel, a path to an ONNX file, AUTO (the shipped weights if present) or None.
    With neither a reference frame nor a model there is nothing to detect with: KnockcamError; nor in
    a photo with no colour (black and white), where the sides cannot be told apart. A photo under a strong
    colour cast is white-balanced (``balanced``) and a dim one brightened (``lit``) first. A token a look
    doubts whose base lies well off the board is left out (``without_doubted_off_board``): it is out either way.
    """
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
        raise KnockcamError("the photo must be a colour image (height x width x 3)")
    learned = load_model(model)
    if learned is None and reference is None:
        raise KnockcamError("no token detector available: the learned model is missing (train it with "
                            "'knockcam train' or set KNOCKCAM_MODEL) and no --reference empty-board frame was given")
    image = lit(image, calibration, board)
    if reference is not None:
        reference = frame_as_read(reference, calibration, board)
    # as taken: white-balancing a photo of no board would grey it
    if without_colour(image, float(settings.load("detect")["photo"]["min_chroma"])):
        raise Unreadable("no colour in the image (black and white, a camera's night mode, or far too dark)",
                         "the tokens' sides cannot be told apart; take it in colour and in good light")
    image = balanced(image, calibration, board)
    seen = _first_looks(image, reference, calibration, board, learned)
    if reference is None:
        found = _photo_alone(image, calibration, board, learned, seen)
    elif learned is None:
        found = _frame_alone(image, calibration, board, seen)
    else:
        found = _photo_and_frame(image, reference, calibration, board, seen)
    found = without_doubted_off_board(with_calibration_error(found, calibration), board)
    return Detection(tokens=tuple(found), hidden=seen.hidden, difference=seen.difference)


@dataclass(frozen=True)
class _FirstLooks:
    """What the detectors saw before any second look: the model's tokens and weak candidates (None without
    the model), the reference-frame detector's tokens and its difference image (None without the empty
    frame), and the parts of the board something else covers."""

    by_model: list[Token] | None
    weak: list[Token] | None
    by_frame: list[Token] | None
    difference: "Difference | None"
    hidden: tuple[HiddenArea, ...]


def _first_looks(image: np.ndarray, reference: np.ndarray | None, calibration: "Calibration", board: "Board",
                 learned: "TokenModel | None") -> _FirstLooks:
    """The learned model and the reference-frame detector, each where available, and the cover network.
    The three are independent: the networks run in a thread while the photo is compared with the empty frame
    (onnxruntime and OpenCV release the GIL), so the 2 cores share the work."""
    from knockcam.detect.cover import hidden_in_photo, load as load_cover

    by_frame = difference = by_model = weak = None
    with ThreadPoolExecutor(max_workers=1) as pool:
        if learned is not None:
            # the model's weak candidates too: they vouch for reference-only blobs, or the verifier looks at them
            floor = min(learned.support_conf, learned.conf)
            candidates = pool.submit(learned.detect, image, calibration, board, conf=floor)
        # what covers the board, seen in the photo itself: all there is in a photo alone, and with the empty
        # frame it adds the hands and cups its difference left out. The comparison with the frame takes
        # longest, so the cover network then runs in the thread too (-7 ms a photo); else on this one.
        if reference is not None:
            from knockcam.detect.reference import look

            covered = pool.submit(hidden_in_photo, image, calibration, board, load_cover())
            seen = look(image, reference, calibration, board)
            by_frame, difference = list(seen.tokens), seen.difference
            hidden = tuple(seen.hidden) + covered.result()
        else:
            hidden = hidden_in_photo(image, calibration, board, load_cover())
        if learned is not None:
            proposed = candidates.result()
            by_model = [t for t in proposed if t.confidence >= learned.conf]
            # with the empty frame, weak candidates only vouch for reference blobs: none found, none needed
            weak = [t for t in proposed if t.confidence < learned.conf] if by_frame or reference is None else []
    return _FirstLooks(by_model, weak, by_frame, difference, hidden)


def _photo_alone(image: np.ndarray, calibration: "Calibration", board: "Board", learned: "TokenModel",
                 seen: _FirstLooks) -> list[Token]:
    """The model alone (a phone photo scored after the game): no second detector can confirm a middling score,
    so the photo's own verifier, base refiner and fallen networks look again."""
    from knockcam.detect.fallen import load as load_fallen, load_placer, mark_fallen, place_fallen
    from knockcam.detect.patch import PhotoPair
    from knockcam.detect.refine import load_alone, refine_bases
    from knockcam.detect.verify import alone_look, figure_seen_again, load_alone as load_verifier_alone

    photo = PhotoPair(image, None, calibration, board)  # the refiner, verifier and fallen networks share its patches
    found = alone_look([t if t.confidence >= learned.sure_conf_alone else replace(t, unsure=True)
                        for t in seen.by_model], seen.weak, photo, load_verifier_alone())
    found = refine_bases(found, photo, load_alone(), "refine_alone")
    found = mark_fallen(found, image, calibration, board, load_fallen(), photo)
    return figure_seen_again(place_fallen(found, image, calibration, board, load_placer(), photo), calibration)


def _frame_alone(image: np.ndarray, calibration: "Calibration", board: "Board", seen: _FirstLooks) -> list[Token]:
    """The empty-board frame alone (no model shipped): its tokens, the lying ones marked and stood up."""
    from knockcam.detect.fallen import load as load_fallen, load_placer, mark_fallen, place_fallen

    found = mark_fallen(seen.by_frame, image, calibration, board, load_fallen())
    return place_fallen(found, image, calibration, board, load_placer())


def _photo_and_frame(image: np.ndarray, reference: np.ndarray, calibration: "Calibration", board: "Board",
                     seen: _FirstLooks) -> list[Token]:
    """Both detectors combined, then looked at again with the empty frame beside the photo: the second look
    at the tokens one detector alone saw, the bases placed again, lying tokens marked, tokens touching a
    standing one that no detector reported, a last look, and the lying ones stood up."""
    from knockcam.detect.combine import combine
    from knockcam.detect.fallen import (load as load_fallen, load_pair as load_fallen_pair, load_pair_placer,
                                        load_placer, mark_fallen, place_fallen)
    from knockcam.detect.patch import PhotoPair
    from knockcam.detect.reference import in_reach
    from knockcam.detect.refine import load as load_refiner, refine_bases
    from knockcam.detect.verify import load as load_verifier, last_look, second_look, tokens_beside

    found = combine(seen.by_model, seen.by_frame, seen.weak, reach=lambda xy: in_reach(xy, board),
                    difference=seen.difference, base_radius_mm=board.token.base_diameter_mm / 2.0)
    pair = PhotoPair(image, reference, calibration, board)  # both networks look at the same bases
    verifier, refiner = load_verifier(), load_refiner()
    # with the empty frame, the fallen networks that see it too (the photo-only ones when those are absent)
    lying, placer = load_fallen_pair() or load_fallen(), load_pair_placer() or load_placer()
    found = mark_fallen(refine_bases(second_look(found, seen.weak, pair, verifier), pair, refiner), image,
                        calibration, board, lying, pair)
    # then tokens touching a standing one that no detector reported (looked for once lying ones are known)
    beside = refine_bases(tokens_beside(found, pair, verifier, seen.difference), pair, refiner)
    found = last_look(found + mark_fallen(beside, image, calibration, board, lying, pair), pair, verifier, seen.hidden)
    return place_fallen(found, image, calibration, board, placer, pair)  # the lying ones: where they stand up


def tokens_in_empty_frame(reference: np.ndarray, calibration: Calibration, board: Board,
                          model: ModelArg = AUTO) -> list[Token]:
    """The tokens the learned model is sure of (``empty_frame.token_above``, data/detect.yaml) on the board in
    ``reference``, a frame that should show the board empty; [] without a model. The reference-frame detector
    sees only what changed: a token standing in both would be missed, and the model's report of it overruled."""
    reference = frame_as_read(reference, calibration, board)  # a frame too dark is no empty board
    learned = load_model(model)
    if learned is None:
        return []
    bar = float(settings.load("detect")["empty_frame"]["token_above"])
    width, length = board.size_mm
    return [t for t in learned.detect(reference, calibration, board, conf=bar)
            if 0.0 <= t.xy_mm[0] <= width and 0.0 <= t.xy_mm[1] <= length]


def board_samples(image: np.ndarray, calibration: Calibration, board: Board) -> np.ndarray:
    """The photo's pixels (B, G, R; n x 3) at board points 20 mm apart that lie in it: mostly its paper,
    tokens and hands are a minority of them."""
    width, length = board.size_mm
    xs, ys = np.meshgrid(np.arange(10.0, width, 20.0), np.arange(10.0, length, 20.0))
    px = np.rint(calibration.mm_to_px(np.column_stack([xs.ravel(), ys.ravel()]))).astype(np.int64)
    h, w = image.shape[:2]
    inside = (px[:, 0] >= 0) & (px[:, 1] >= 0) & (px[:, 0] < w) & (px[:, 1] < h)
    return image[px[inside, 1], px[inside, 0]]


def board_light(image: np.ndarray, calibration: Calibration, board: Board) -> float:
    """How bright the board is in ``image`` (0-255): the 75th percentile of the brightest channel at
    its sample points (``board_samples``; 0.3 ms)."""
    brightest = board_samples(image, calibration, board).max(axis=1)
    return float(np.percentile(brightest, 75)) if brightest.size else 0.0


def paper_colour(image: np.ndarray, calibration: Calibration, board: Board) -> np.ndarray | None:
    """The board's paper as the photo sees it (B, G, R): the median of the brighter half of its sample
    points (``board_samples``), where the coloured bands, tokens and shadows are few; None off the photo."""
    samples = board_samples(image, calibration, board).astype(np.float64)
    if len(samples) < 10:
        return None
    brightest = samples.max(axis=1)
    return np.median(samples[brightest >= np.median(brightest)], axis=0)


def balanced(image: np.ndarray, calibration: Calibration, board: Board) -> np.ndarray:
    """``image`` white-balanced when the board's paper is seen further from grey than in any render the
    networks learned on (``photo.cast_above``, data/detect.yaml): a lamp's warm light otherwise turns blue
    tokens green. The paper is made grey; a photo within the renders' range is returned as it is."""
    from knockcam.exposure import white_balanced

    paper = paper_colour(image, calibration, board)
    if paper is None:
        return image
    return white_balanced(image, paper, float(settings.load("detect")["photo"]["cast_above"]))


def frame_as_read(reference: np.ndarray, calibration: Calibration, board: Board) -> np.ndarray:
    """The empty-board frame as the detectors read it: brightened when dim (``lit``: Unreadable when far too
    dark), then white-balanced (``balanced``), as the photo is."""
    return balanced(lit(reference, calibration, board, "the empty-board frame"), calibration, board)


def lit(image: np.ndarray, calibration: Calibration, board: Board, what: str = "the photo") -> np.ndarray:
    """``image`` brightened when its board is dim (under ``photo.dim_below``, data/detect.yaml) until it is
    as bright as the renders the networks learned on (``photo.light_target``): an underexposed photo
    otherwise loses most of its tokens. Unreadable when the board is too dark to read at all."""
    from knockcam.exposure import scaled

    cfg = settings.load("detect")["photo"]
    light = board_light(image, calibration, board)
    if light >= float(cfg["dim_below"]):
        return image
    _check_light(light, what)
    return scaled(image, float(cfg["light_target"]) / light)


def check_photo_light(image: np.ndarray, what: str = "the photo") -> None:
    """Unreadable when even the photo's brightest parts (knockcam.calibrate.auto.photo_light) are darker than
    ``lit`` lets a board be: its board, darker still, would be refused once found. Checked before the board is
    looked for: on such a photo (a lens cap, a webcam's first frames: noise at 1-11 of 255, 1280x720) the
    automatic search took 14-30 s (2-5 s once its quadrilaterals were looked at a slice at a time: noise at 1,
    3 and 11 of 255, 3.8, 1.9 and 4.5 s, the code before 19.5, 6.2 and 11.9 s, measured 2026-12-03) to say
    "board not found: give --corners". (A board under 4% of the photo could be brighter than its brightest
    parts: too small to find anyway.)"""
    from knockcam.calibrate.auto import photo_light

    _check_light(photo_light(image), what)


def _check_light(light: float, what: str) -> None:
    if light < float(settings.load("detect")["photo"]["min_light"]):
        raise Unreadable(f"the board is far too dark in {what} (its brightest parts at {light:.0f} of 255)",
                         "light the board, or let the camera expose longer, and take it again")


def with_calibration_error(tokens: list[Token], calibration: "Calibration") -> list[Token]:
    """Each token's position uncertainty with the calibration's error added (in quadrature).

    The calibration reports its error at the board's worst corner, a bound rather than a sigma: a
    share of it (data/assign.yaml ``ambiguity.calibration_share``) counts, so that the close-call
    band reaches the whole bound. Added once, after the detectors are combined: both read the board
    through the same calibration, so its error is common to them and must not shrink when they agree."""
    share = float(settings.load("assign")["ambiguity"]["calibration_share"])
    err = share * float(calibration.error_mm or 0.0)
    if err <= 0:
        return list(tokens)
    return [replace(t, sigma_mm=round(float(np.hypot(t.sigma_mm, err)), 3)) for t in tokens]


def without_doubted_off_board(tokens: list[Token], board: "Board") -> list[Token]:
    """``tokens`` less those a look doubts (``unsure``) whose base lies off the board beyond their close-call band
    (detect.yaml ``off_board.drop_unsure``): such a token is out for the round whoever it is (RULES.md S2), so no
    payout turns on it, and some such reports are phantoms or in the wrong colour. One near the board's edge is kept:
    it may rest on the board."""
    if not settings.load("detect")["off_board"]["drop_unsure"]:
        return list(tokens)
    from knockcam.assign import CLOSE_CALL, assign  # knockcam.assign imports this package: here, not at the top
    from knockcam.board.geometry import OFF_BOARD

    doubted = [i for i, t in enumerate(tokens) if t.unsure]
    out = {i for i, p in zip(doubted, assign([tokens[i] for i in doubted], board))
           if p.state == OFF_BOARD and CLOSE_CALL not in p.flags}
    return [t for i, t in enumerate(tokens) if i not in out]


__all__ = ["AUTO", "Detection", "HiddenArea", "Token", "Unreadable", "detect", "load_model", "tokens_in_empty_frame",
           "with_calibration_error", "without_doubted_off_board"]
