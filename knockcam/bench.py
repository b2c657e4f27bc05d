"""The detection benchmark: held-out synthetic scenes, detectors x calibrations, accuracy and speed.

Scenes come from knockcam.synth with seeds below ``HELD_OUT_LIMIT`` (training uses seeds at or
above it), each with an empty-board reference frame from the same camera. Every configuration
(reference frame or not, learned model or not, true or automatic calibration) runs on the same
scenes; a token is right when its side and its resting place (RULES.md S3, computed from the true
base centre by knockcam.board.geometry) are right.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import cv2
import numpy as np

from knockcam import settings
from knockcam.assign import (CLOSE_CALL, DISAGREEMENT, EXTRA_TOKEN, UNSURE, Position, assign, close_call_band_mm,
                             hidden_spaces)
from knockcam.board.geometry import coverage
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import Refused, agrees, error_limit
from knockcam.detect.tokens import HiddenArea, near_hidden
from knockcam.errors import KnockcamError
from knockcam.seeds import HELD_OUT_FIRST, HELD_OUT_LIMIT
from knockcam.sides import SIDES
from knockcam.workers import in_workers

if TYPE_CHECKING:
    from knockcam.calibrate.cache import CalibrationCache

MATCH_MM = 20.0  # a detection within this of a true base centre (of a fallen token's body) is that token's detection
MISSED = "missed"


@dataclass(frozen=True)
class TrueToken:
    side: str
    xy_mm: tuple[float, float]
    space: str | None
    state: str
    fallen: bool
    visible: float = 1.0  # share of its figure the camera sees (hands, cups, the photo's edge hide the rest)
    margin_mm: float = float("inf")  # how far the true base centre is from a line that changes its resting place
    lies_to_mm: tuple[float, float] | None = None  # a fallen token: where its top lies (knockcam.synth TokenTruth)


@dataclass(frozen=True)
class Scene:
    """One held-out scene: the photo, the empty-board frame, the true calibration and tokens."""

    seed: int
    image: np.ndarray
    reference: np.ndarray
    calibration: Calibration
    tokens: tuple[TrueToken, ...]


@dataclass
class Tally:
    """Counts for one configuration."""

    name: str
    tokens: int = 0
    right: int = 0
    flagged: int = 0
    unflagged: int = 0
    unflagged_right: int = 0
    missed: int = 0
    missed_by_cause: dict = field(default_factory=dict)  # miss_cause() -> count
    false_detections: int = 0
    unflagged_false_detections: int = 0  # on the board and not flagged: a token reported, with no flag, where none is
    scenes: int = 0
    scenes_exact: int = 0
    scenes_sound: int = 0  # every token right or flagged, no unflagged false detection
    calibration_failures: int = 0
    ms: list = field(default_factory=list)
    cpu_ms: list = field(default_factory=list)  # process CPU time: what an unshared 2-core machine would see, roughly
    confusion: dict = field(default_factory=dict)  # (true side, found side or MISSED) -> count
    unflagged_confusions: int = 0  # wrong colour on a call not left to a human
    errors_mm: list = field(default_factory=list)
    flag_reasons: dict = field(default_factory=dict)  # Position flag -> flagged tokens carrying it (one may carry several)
    bands: dict = field(default_factory=dict)  # FLAG_BANDS value -> [flagged, unflagged, unflagged right] with that band
    scene_causes: dict = field(default_factory=dict)  # SCENE_CAUSES entry -> [scenes it spoilt, scenes it alone spoilt]

    def count_confusion(self, true_side: str, found: str) -> None:
        self.confusion[(true_side, found)] = self.confusion.get((true_side, found), 0) + 1


def true_tokens(truth: dict, board: Board) -> tuple[TrueToken, ...]:
    """The scene's tokens with their S3 resting place, from the true base centres."""
    toks = truth["tokens"]
    if not toks:
        return ()
    cov = coverage(board, np.array([t["xy_mm"] for t in toks], dtype=np.float64))
    return tuple(TrueToken(side=t["side"], xy_mm=(float(t["xy_mm"][0]), float(t["xy_mm"][1])), space=cov.space_id[i],
                           state=cov.state[i], fallen=bool(t.get("fallen", False)),
                           visible=float(t.get("visible", 1.0)), margin_mm=float(cov.margin_mm[i]),
                           lies_to_mm=None if t.get("lies_to_mm") is None else tuple(float(v) for v in t["lies_to_mm"]))
                 for i, t in enumerate(toks))


FLAG_REASONS = (CLOSE_CALL, DISAGREEMENT, UNSURE, EXTRA_TOKEN)  # what makes a Position ambiguous
HIDDEN = "hidden area"  # a token not found, under a part of the board the photo reports covered: a human looks there
REFUSED = "photo refused"  # the automatic calibration refused the photo and asked for the corners: every token is a human's
FLAG_BANDS = (1.0, 1.5, 2.0, 2.5, 3.0)  # close-call bands (assign.yaml ambiguity.sigmas) the trade-off table tries


def min_margin_mm() -> float:
    """The margin under which assign always flags a call, whatever the sigma (data/assign.yaml ``min_margin_mm``)."""
    return float(settings.load("assign")["ambiguity"]["min_margin_mm"])


def count_bands(tally: Tally, p: Position | None, right: bool, flagged: bool = False) -> None:
    """How this token would have counted with each close-call band of FLAG_BANDS (p None: not found;
    ``flagged``: flagged whatever the band, e.g. not found under a hidden area): the same positions,
    flagged when the margin is under that many sigma (at least min_margin_mm) or for any other
    reason. Shows what fewer flags would cost in unflagged calls."""
    other = p is not None and bool(set(p.flags) & {DISAGREEMENT, UNSURE, EXTRA_TOKEN})
    for k in FLAG_BANDS:
        counts = tally.bands.setdefault(k, [0, 0, 0])
        if flagged or (p is not None and (other or p.margin_mm < close_call_band_mm(p.sigma_mm, sigmas=k))):
            counts[0] += 1
        else:
            counts[1] += 1
            counts[2] += right


def fallen_band_mm() -> float:
    """How close to a deciding line a lying token is a close call even where it is placed exactly: its
    uncertainty is at least ``fallen_sigma_mm`` (data/assign.yaml), and its band assign's for that uncertainty."""
    return close_call_band_mm(float(settings.load("assign")["ambiguity"]["fallen_sigma_mm"]))


def flag_floor(truth: tuple[TrueToken, ...]) -> dict[str, int]:
    """What a detector with no error at all would still leave to a human in this scene: standing tokens
    closer to a deciding line than assign's smallest margin (``min_margin_mm``, data/assign.yaml), and
    fallen ones within the close-call band of their widened uncertainty (``sigmas`` x ``fallen_sigma_mm``:
    RULES.md S3 stands one up where it fell, which no photo shows to the millimetre); and whether the
    scene has a token on the board too little in view to be found (``hidden_below``): no detector gets
    such a scene exactly right."""
    floor_mm, fallen_mm, hidden = min_margin_mm(), fallen_band_mm(), hidden_below()
    return {"tokens": len(truth), "fallen": sum(t.fallen and t.margin_mm < fallen_mm for t in truth),
            "near_line": sum(not t.fallen and t.margin_mm < floor_mm for t in truth), "scenes": 1,
            "hidden_scenes": int(any(t.state != "off_board" and t.visible < hidden for t in truth))}


def make_scene(board: Board, seed: int, held_out: bool = True) -> Scene:
    """Render scene ``seed`` (index 0) and its empty-board reference frame; held-out seeds only unless told."""
    if held_out and not 0 <= seed < HELD_OUT_LIMIT:
        raise KnockcamError(f"benchmark seeds must be in 0..{HELD_OUT_LIMIT - 1} (training uses the rest), not {seed}")
    from knockcam.synth import scene as sc

    jpeg, truth, rendered, ref_jpeg = sc.make_photo(board, seed, 0, reference=True)
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    reference = cv2.imdecode(np.frombuffer(ref_jpeg, np.uint8), cv2.IMREAD_COLOR)
    return Scene(seed=seed, image=image, reference=reference, calibration=rendered.spec.calibration(board),
                 tokens=true_tokens(truth, board))


def match(found: list[Position], truth: tuple[TrueToken, ...], limit_mm: float = MATCH_MM) -> dict[int, int]:
    """truth index -> found index, nearest pairs first, within ``limit_mm``. A fallen token is where
    its body lies, from its base to its top: a detection near any point of it is that token's."""
    if not found or not truth:
        return {}
    a = np.array([t.xy_mm for t in truth])
    ends = np.array([t.lies_to_mm if t.lies_to_mm is not None else t.xy_mm for t in truth])
    b = np.array([p.token.xy_mm for p in found])
    axis = ends - a
    length2 = np.maximum(np.sum(axis * axis, axis=1), 1e-12)
    along = np.clip(np.einsum("tk,tfk->tf", axis, b[None, :, :] - a[:, None, :]) / length2[:, None], 0.0, 1.0)
    nearest = a[:, None, :] + along[:, :, None] * axis[:, None, :]
    dist = np.hypot(nearest[..., 0] - b[None, :, 0], nearest[..., 1] - b[None, :, 1])
    pairs: dict[int, int] = {}
    used: set[int] = set()
    for flat in np.argsort(dist, axis=None, kind="stable"):
        i, j = np.unravel_index(flat, dist.shape)
        if dist[i, j] > limit_mm:
            break
        if int(i) in pairs or int(j) in used:
            continue
        pairs[int(i)] = int(j)
        used.add(int(j))
    return pairs


MISS_CAUSES = ("hidden", "fallen", "in view")
# What keeps a scene from being exactly right (a scene may have several): a token on the board not found (by
# miss_cause, or its photo refused), one found on the wrong space with its base placed within min_margin_mm of the
# truth (a line call: a base that close to a line, no detector places it on the right side every time) or
# further off, a lying token stood up on the wrong space, a wrong colour, a false detection on the board.
LINE_CALL, PLACED_OFF, LYING_SPACE, COLOUR, FALSE = ("line call", "placed off", "lying token's space", "colour",
                                                      "false detection")
SCENE_CAUSES = (REFUSED,) + tuple(f"missed, {c}" for c in MISS_CAUSES) + (
    LINE_CALL, PLACED_OFF, LYING_SPACE, COLOUR, FALSE)


def hidden_below() -> float:
    """Visible share under which a token counts as hidden: the one training does not label (synth.yaml yolo.min_visible)."""
    return float(settings.load("synth")["yolo"]["min_visible"])


def miss_cause(token: TrueToken) -> str:
    """Why a missed token may have been missed: hidden (under a hand, a cup, outside the photo), fallen, or neither."""
    if token.visible < hidden_below():
        return "hidden"
    return "fallen" if token.fallen else "in view"


def score_scene(tally: Tally, found: list[Position], truth: tuple[TrueToken, ...], board: Board | None = None,
                hidden: tuple[HiddenArea, ...] = (), refused: bool = False,
                failure: Callable[[dict], None] | None = None) -> None:
    """Add one scene's result to the tally. A token not found counts as flagged when the photo reports
    the board covered where it rests (``hidden``: its space is among ``hidden_spaces``, or its base
    touches a hidden area): the human is sent to look there. ``refused``: the photo was not scored
    (its automatic calibration was refused, the user is told to give the corners), so every token on
    the board is missed and left to the human; none is an answer given. ``failure`` is handed a record
    (``failure_record``) of each token missed on the board or called wrong and each false detection."""
    failure = failure or (lambda record: None)
    pairs = match(found, truth)
    covered = hidden_spaces(hidden, board) if hidden and board is not None else ()
    reach = board.token.base_diameter_mm / 2 if board is not None else 0.0
    floor_mm = min_margin_mm()
    causes: set[str] = set()
    sound = True
    for i, t in enumerate(truth):
        tally.tokens += 1
        j = pairs.get(i)
        if j is None:
            call = None
            # the human is sent to look where it rests: a hidden area there, or the photo refused
            looked_at = t.state != "off_board" and (refused or (bool(hidden) and (
                t.space in covered or near_hidden(t.xy_mm, hidden, reach))))
            cause = _score_missed(tally, t, looked_at, refused)
        else:
            call = found[j]
            looked_at = call.ambiguous
            cause = _score_found(tally, call, t, floor_mm)
        if cause is not None:  # not right: a cause of the scene's, and unsound unless the human looks
            causes.add(cause)
            failure(failure_record(cause, looked_at, t, call))
            sound &= looked_at
    for j, p in enumerate(found):
        if j in pairs.values():
            continue
        tally.false_detections += 1
        failure(failure_record(FALSE, p.ambiguous, None, p))
        if p.state != "off_board":
            causes.add(FALSE)
            sound &= p.ambiguous
            tally.unflagged_false_detections += not p.ambiguous
    tally.scenes += 1
    tally.scenes_exact += not causes
    tally.scenes_sound += sound
    for cause in causes:
        counts = tally.scene_causes.setdefault(cause, [0, 0])
        counts[0] += 1
        counts[1] += len(causes) == 1


def _score_missed(tally: Tally, t: TrueToken, under: bool, refused: bool) -> str | None:
    """Count a true token no detection matched; its scene cause, None when that is right (off the board: out, as
    the rules say, S2). ``under``: the human is sent to look where it rests (a hidden area or a refusal)."""
    tally.count_confusion(t.side, MISSED)
    count_bands(tally, None, t.state == "off_board", flagged=under)
    if t.state == "off_board":
        tally.right += 1
        tally.unflagged += 1
        tally.unflagged_right += 1
        return None
    tally.missed += 1
    cause = miss_cause(t)
    tally.missed_by_cause[cause] = tally.missed_by_cause.get(cause, 0) + 1
    if under:
        tally.flagged += 1
        reason = REFUSED if refused else HIDDEN
        tally.flag_reasons[reason] = tally.flag_reasons.get(reason, 0) + 1
    else:
        tally.unflagged += 1
    return REFUSED if refused else f"missed, {cause}"


def _score_found(tally: Tally, p: Position, t: TrueToken, floor_mm: float) -> str | None:
    """Count a true token and the call matched to it; the scene cause when the call is wrong, else None."""
    tally.count_confusion(t.side, p.token.side)
    tally.errors_mm.append(float(np.hypot(p.token.xy_mm[0] - t.xy_mm[0], p.token.xy_mm[1] - t.xy_mm[1])))
    right = p.token.side == t.side and p.space == t.space and (t.space is not None or p.state == t.state)
    tally.unflagged_confusions += p.token.side != t.side and not p.ambiguous
    count_bands(tally, p, right)
    tally.right += right
    if p.ambiguous:
        tally.flagged += 1
        for reason in set(p.flags) & set(FLAG_REASONS):
            tally.flag_reasons[reason] = tally.flag_reasons.get(reason, 0) + 1
    else:
        tally.unflagged += 1
        tally.unflagged_right += right
    return None if right else _wrong_call(p, t, floor_mm)


def failure_record(cause: str, flagged: bool, truth: TrueToken | None, call: Position | None) -> dict:
    """One failure as ``knockcam bench --failures`` lists it: its SCENE_CAUSES entry (a false detection off the
    board too), whether the human is sent to look (flagged, or a hidden area or refusal reported there), the true
    token (none for a false detection) and the call (none for a token missed)."""
    record: dict = {"cause": cause, "flagged": bool(flagged)}
    if truth is not None:
        record["truth"] = {"side": truth.side, "place": truth.space or truth.state,
                           "xy_mm": [round(float(v), 1) for v in truth.xy_mm], "visible": round(truth.visible, 3),
                           "fallen": truth.fallen,
                           "margin_mm": round(truth.margin_mm, 2) if np.isfinite(truth.margin_mm) else None}
    if call is not None:
        record["call"] = {"side": call.token.side, "place": call.space or call.state,
                          "xy_mm": [round(float(v), 1) for v in call.token.xy_mm], "flags": list(call.flags),
                          "source": call.token.source, "confidence": round(call.token.confidence, 3),
                          "fallen": call.token.fallen}
        if truth is not None:
            record["off_mm"] = round(float(np.hypot(*np.subtract(call.token.xy_mm, truth.xy_mm))), 1)
    return record


def _wrong_call(p: Position, t: TrueToken, floor_mm: float) -> str:
    """Which SCENE_CAUSES entry a token found but called wrong is."""
    if p.token.side != t.side:
        return COLOUR
    if t.fallen:
        return LYING_SPACE
    off = float(np.hypot(p.token.xy_mm[0] - t.xy_mm[0], p.token.xy_mm[1] - t.xy_mm[1]))
    return LINE_CALL if off < floor_mm else PLACED_OFF


@dataclass(frozen=True)
class Config:
    name: str
    reference: bool
    model: bool
    calibration: str  # given | auto
    accept_offers: bool = False  # auto: a refusal that offers --max-error is accepted (as a user may)


def configurations(has_model: bool) -> list[Config]:
    """Every detector with the true calibration and with the automatic one; the best detector also
    with every automatic calibration whose refusal offers ``--max-error`` accepted."""
    out = []
    for cal in ("given", "auto"):
        out.append(Config(f"reference frame, {cal} calibration", True, False, cal))
        if has_model:
            out.append(Config(f"learned model, {cal} calibration", False, True, cal))
            out.append(Config(f"model + reference, {cal} calibration", True, True, cal))
    if has_model:
        out.append(Config("model + reference, auto calibration, offers of --max-error accepted", True, True, "auto",
                          accept_offers=True))
    return out


def _auto_calibration(image: np.ndarray, board: Board, max_error_mm: float, ms: list[float] | None = None,
                      cache: "CalibrationCache | None" = None) -> tuple[Calibration | None, bool]:
    """The automatic calibration of ``image`` (over ``max_error_mm``: the one refused; None when the board is not
    found), and whether ``cache`` held it; the time of one within that limit added to ``ms`` (for one the cache
    held, the time it took when it was found)."""
    from knockcam.calibrate import calibrate

    key = None if cache is None else cache.key(image, board, max_error_mm)
    kept = None if key is None else cache.get(key)
    if kept is not None:
        cal, took = kept
        if ms is not None and took is not None:
            ms.append(took)
        return cal, True
    t0 = time.perf_counter()
    took = None
    try:
        cal = calibrate(image, board, max_error_mm=max_error_mm)
        took = (time.perf_counter() - t0) * 1000
    except Refused as refused:
        cal = refused.calibration
    except KnockcamError:
        cal = None
    if ms is not None and took is not None:
        ms.append(took)
    if key is not None:
        cache.put(key, cal, took)
    return cal, False


def scene_calibrations(board: Board, seed: int, loosest_mm: float, scene: Scene | None = None,
                       cache_dir: str | None = None) -> tuple[Calibration | None, Calibration | None, float | None,
                                                              int]:
    """Scene ``seed``'s automatic calibrations (each as ``_auto_calibration`` returns it, up to ``loosest_mm``):
    the photo's, the empty-board frame's, how long the photo's took in ms (None when it was refused), and how many
    of the two the calibration cache in ``cache_dir`` held (knockcam.calibrate.cache; 0 when ``cache_dir`` is
    None: no cache)."""
    from knockcam.calibrate.cache import CalibrationCache

    scene = scene or make_scene(board, seed)
    cache = None if cache_dir is None else CalibrationCache(cache_dir)
    ms: list[float] = []
    photo, photo_kept = _auto_calibration(scene.image, board, loosest_mm, ms, cache)
    frame, frame_kept = _auto_calibration(scene.reference, board, loosest_mm, cache=cache)
    return photo, frame, (ms[0] if ms else None), int(photo_kept) + int(frame_kept)


def _accepted(cal: Calibration | None, limit_mm: float, accept_offers: bool) -> bool:
    """Whether the user gets ``cal``: within ``limit_mm``, or (``accept_offers``) refused with an offer of
    --max-error, which the user accepts."""
    from knockcam.calibrate.choose import offered_max_error

    return cal is not None and ((cal.error_mm or 0.0) <= limit_mm or (accept_offers and offered_max_error(cal) is not None))


def run(board: Board, scenes: int, seed_start: int = 0, model=None,
        progress: Callable[[int], None] | None = None,
        checkpoint: Callable[[list[Tally], dict, int], None] | None = None,
        checkpoint_every: int = 25, given_only: bool = False,
        failures: Callable[[dict], None] | None = None, workers: int = 1,
        cache_dir: str | None = None) -> tuple[list[Tally], dict]:
    """Run every configuration (``given_only``: those with the true calibration) on scenes ``seed_start ..
    seed_start + scenes - 1``; returns tallies and facts. ``workers`` > 1: the automatic calibrations (most of
    the time) are found in that many worker processes, ``checkpoint_every`` scenes at a time, the same answers.
    ``cache_dir``: automatic calibrations found before by the same calibration code are read from there, and
    those found are kept there (knockcam.calibrate.cache): the same answers again, in minutes.

    ``checkpoint(tallies, facts, scenes_done)`` is called every ``checkpoint_every`` scenes, so a
    long run leaves partial results behind. ``failures`` is handed each failure's ``failure_record``
    with its configuration and scene seed.
    """
    if seed_start < 0 or seed_start + scenes > HELD_OUT_LIMIT:
        raise KnockcamError(f"benchmark seeds must stay below {HELD_OUT_LIMIT} (training uses the rest): "
                            f"--seed-start {seed_start} with --scenes {scenes} goes to {seed_start + scenes - 1}")
    configs = [c for c in configurations(model is not None) if c.calibration == "given" or not given_only]
    tallies = {c.name: Tally(c.name) for c in configs}
    limit = error_limit()
    loosest = max(limit, float(settings.load("calibrate")["quality"]["accept_max_mm"]))  # what an offer may accept
    seeds = range(seed_start, seed_start + scenes)
    workers = 1 if given_only else max(1, min(workers, scenes))
    # floor: flag_floor's counts, summed; calibrations_kept: how many automatic calibrations the cache held
    facts = {"calibration_ms": [], "floor": {}, "calibration_workers": workers, "calibrations_kept": 0,
             "calibration_cache": cache_dir}
    # in workers, a checkpoint's scenes at a time: the detectors are timed while the workers wait
    found_ahead = in_workers(scene_calibrations, [(board, seed, loosest, None, cache_dir) for seed in seeds], workers,
                             block=checkpoint_every) if workers > 1 else None
    auto: dict = {}
    try:
        for n, seed in enumerate(seeds):
            scene = make_scene(board, seed)
            for k, v in flag_floor(scene.tokens).items():
                facts["floor"][k] = facts["floor"].get(k, 0) + v
            if not given_only:
                # found in the photo, or (as knockcam score --reference does) in the empty-board frame: no tokens
                # in the way
                photo, frame, ms, kept = next(found_ahead) if found_ahead else scene_calibrations(
                    board, seed, loosest, scene, cache_dir)
                facts["calibration_ms"] += [] if ms is None else [ms]
                facts["calibrations_kept"] += kept
                auto = {False: photo, True: frame}
            _score_configurations(scene, configs, tallies, auto, board, model, limit, failures)
            if progress:
                progress(n + 1)
            if checkpoint and (n + 1) % checkpoint_every == 0 and n + 1 < scenes:
                checkpoint([tallies[c.name] for c in configs], facts, n + 1)
    finally:
        if found_ahead is not None:
            found_ahead.close()
    return [tallies[c.name] for c in configs], facts


def _score_configurations(scene: Scene, configs: list, tallies: dict, auto: dict, board: Board, model, limit: float,
                          failures: Callable[[dict], None] | None) -> None:
    """Each configuration's detection of ``scene`` timed and scored into its tally (``auto``: the photo's (False)
    and the frame's (True) automatic calibration)."""
    seed = scene.seed
    for c in configs:
        tally = tallies[c.name]
        failure = None if failures is None else (
            lambda record, c=c, seed=seed: failures({"configuration": c.name, "seed": seed, **record}))
        if c.calibration == "given":
            cal = scene.calibration
        else:  # with the frame: its calibration, else the photo's where it agrees, as knockcam score --reference
            frame, photo = auto[True], auto[False]
            if c.reference:
                tried = (frame, photo) if photo is not None and agrees(photo, frame, board) else (frame,)
            else:
                tried = (photo,)
            cal = next((a for a in tried if _accepted(a, limit, False)), None)
            if cal is None and c.accept_offers:  # the user accepts the --max-error the refusal offered
                cal = next((a for a in tried if _accepted(a, limit, True)), None)
        if cal is None:
            tally.calibration_failures += 1
            score_scene(tally, [], scene.tokens, refused=True, failure=failure)
            continue
        found, positions, ms, cpu_ms = timed(scene.image, cal, board, scene.reference if c.reference else None,
                                             model if c.model else None)
        tally.ms.append(ms)
        tally.cpu_ms.append(cpu_ms)
        score_scene(tally, positions, scene.tokens, board, found.hidden, failure=failure)


TARGETS = {"unflagged": 0.995, "flagged": 0.02, "exact": 0.97, "ms": 100.0}

SPEED_SEED = HELD_OUT_FIRST  # the held-out scene the speed check times (the first benchmark scene) ...
SPEED_REPEATS = 20  # ... this many times, after a warm-up
SPEED_LINE = "Speed check"  # how the results file's line about it begins (``committed_speed`` reads it back)


def timed(image: np.ndarray, calibration: Calibration, board: Board, reference: np.ndarray | None, model):
    """Detection + assignment as the benchmark times it: (detection, positions, wall ms, this process's CPU ms)."""
    from knockcam.detect import detect

    t0, c0 = time.perf_counter(), time.process_time()
    found = detect(image, calibration, board, reference=reference, model=model)
    positions = assign(found.tokens, board)
    return found, positions, (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000


def speed_check(board: Board, model, repeats: int = SPEED_REPEATS) -> dict[str, float]:
    """Median ms of detection + assignment (``timed``) on held-out scene SPEED_SEED, ``repeats`` times after a
    warm-up, with the learned model and the empty-board frame and with the model alone (the reference
    frame alone without a model): a few seconds' measure of how fast a machine runs the benchmark's own
    work, so that the ms of a results file made elsewhere can be compared with this machine's."""
    scene = make_scene(board, SPEED_SEED)
    if model is not None:
        ways = {"model + reference": (scene.reference, model), "model alone": (None, model)}
    else:
        ways = {"reference frame": (scene.reference, None)}
    warm_up = 3
    return {name: float(np.median([timed(scene.image, scene.calibration, board, reference, learned)[2]
                                   for _ in range(warm_up + repeats)][warm_up:]))
            for name, (reference, learned) in ways.items()}


def speed_text(speed: dict[str, float]) -> str:
    """The results file's line about a speed check (``speed_check``'s medians)."""
    timed_ways = ", ".join(f"{name} {ms:.0f} ms" for name, ms in speed.items())
    return (f"{SPEED_LINE} (`knockcam bench --speed`: scene {SPEED_SEED}, median of {SPEED_REPEATS} after a warm-up, "
            f"on this machine): {timed_ways}.")


def committed_speed(text: str) -> dict[str, float]:
    """The speed check a results file recorded (``speed_text``'s line), {} when it has none."""
    line = next((ln for ln in text.splitlines() if ln.startswith(SPEED_LINE)), "")
    timed = line.split("):", 1)[1] if "):" in line else ""
    return {m.group(1).strip(): float(m.group(2)) for m in re.finditer(r"([a-z +]+) (\d+(?:\.\d+)?) ms", timed)}


def compare_speed(here: dict[str, float], results: str) -> list[str]:
    """Lines comparing this machine's speed check (``here``) with the one the results file ``results`` recorded:
    how much slower or faster this machine runs the same work, to read before comparing times."""
    from pathlib import Path

    path = Path(results)
    there = committed_speed(path.read_text(encoding="utf-8")) if path.is_file() else {}
    shared = [name for name in here if name in there]
    if not shared:
        return [f"{results} records no speed check to compare with"]
    return [f"{name}: {here[name]:.0f} ms here, {there[name]:.0f} ms where {results} was made "
            f"({here[name] / there[name]:.2f} x)" for name in shared]


def machine() -> str:
    """What a results file's times, and the last digits of its figures, depend on: the machine and the versions
    of Python and the numerical libraries ("x86_64, 2 CPUs, Python 3.11.7, numpy 2.4.6, OpenCV 5.0.0,
    onnxruntime 1.32.0")."""
    from importlib import metadata

    try:
        onnx = metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        onnx = "not installed"
    return (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, numpy {np.__version__}, "
            f"OpenCV {cv2.__version__}, onnxruntime {onnx}")


def load_average(note_busy: bool = False) -> str:
    """The machine's 1, 5 and 15 minute load averages as "a / b / c", for a results file; with
    ``note_busy``, a warning when the last minute's is over the CPU count (times are inflated)."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    text = " / ".join(f"{v:.1f}" for v in load)
    if note_busy and load[0] > (os.cpu_count() or 1):
        text += ": above the CPU count, other work shared the cores and the seconds per image are inflated"
    return text


def _pct(num: int, den: int) -> str:
    return f"{100.0 * num / den:.2f}%" if den else "n/a"


def report(tallies: list[Tally], facts: dict, command: str, scenes: int, seed_start: int,
           model_note: str, done: int | None = None, speed: dict[str, float] | None = None) -> str:
    """The results file (markdown); ``done`` < ``scenes`` marks a partial result of a run still going;
    ``speed``: the speed check run after the scenes (``speed_check``)."""
    lines = ["# Detection benchmark", ""]
    if done is not None and done < scenes:
        lines += [f"**PARTIAL: {done} of {scenes} scenes so far (the run is still going or was stopped).**", ""]
        scenes = done
    lines += _header(facts, command, scenes, seed_start, model_note)
    lines += _accuracy_table(tallies) + _why_tables(tallies) + _band_table(tallies)
    lines += _floor_lines(facts) + _time_lines(facts, speed) + _confusion_tables(tallies)
    lines += ["## Targets", ""] + [_verdict(t) for t in tallies] + [""]
    return "\n".join(lines)


def _header(facts: dict, command: str, scenes: int, seed_start: int, model_note: str) -> list[str]:
    """How the results were made and what each figure counts."""
    limit = error_limit()
    return [
        f"Made by: `{command}`",
        "",
        f"Data: {scenes} held-out synthetic scenes (knockcam.synth, seeds {seed_start}..{seed_start + scenes - 1}, "
        f"index 0; training uses seeds >= {HELD_OUT_LIMIT}), 1280x720, overhead to 60 degrees, all the synth's cases "
        "(touching tokens, near lines, fallen, off the board, occluders, blur, noise, JPEG). Synthetic only: no real "
        "photo was measured.",
        "Reference frames: the same synthetic camera with no tokens or occluders, under slightly different light "
        "(knockcam.synth make_photo reference=True).",
        f"Learned model: {model_note}.",
        f"Machine: {machine()}; load average at the end {load_average()}"
        + (" (the run's own calibration workers count in it)." if facts.get("calibration_workers", 1) > 1 else "."),
        "",
        f"A detection is a token's when it lies within {MATCH_MM:g} mm of its true base centre (of any point of its "
        "body, from base to top, for a fallen token; nearest pairs first). "
        "A token is right when its side and its resting place (space id, or no space / off the board; RULES.md S3 "
        "from the true base centre) are right. A token not found counts as right only if it is off the board; one "
        "not found where the photo reports the board covered (`hidden` areas: a hand, a cup, seen by difference with "
        "the empty-board frame or, in a photo alone, by the cover network; its space under one, or its base touching "
        "one) counts as flagged: the human is sent to look there. "
        "With the empty-board frame, the automatic calibration is found in that frame (no tokens in the way), as "
        "`knockcam score --reference` does, and in the photo when the frame's is refused (the same camera in the "
        "same place, as the reference detector needs); without it, in the photo. "
        "A photo the automatic calibration refuses is not scored (the user is told to give the corners): its tokens "
        "count as missed and flagged (`photo refused`), never as answers given. The automatic calibration is "
        f"refused over {limit:g} mm of estimated error (calibrate.yaml quality.max_error_mm), except in the last "
        "row where the refusal offers `--max-error` (a board the printed grid placed, most of it seen, estimated up to "
        f"{settings.load('calibrate')['quality']['accept_max_mm']:g} mm) and the user accepts it: its tokens carry "
        "the larger error. "
        "Flagged = `ambiguous` (a human's call). Scenes exactly right: every token right and no false detection "
        "on the board, flags or not; scenes sound: every token right or flagged and no unflagged false detection. "
        "False detections: reports where no token is; in brackets, those on the board left unflagged (a token "
        "reported with no flag where none stands: right among unflagged does not count them).",
        "",
        f"Targets (issue 6): >= {TARGETS['unflagged'] * 100:.1f}% of unflagged tokens right, <= "
        f"{TARGETS['flagged'] * 100:.0f}% flagged, >= {TARGETS['exact'] * 100:.0f}% of scenes exactly right, no colour "
        f"confusions, <= {TARGETS['ms']:.0f} ms per image.",
        "",
    ]


def _accuracy_table(tallies: list[Tally]) -> list[str]:
    """One row per configuration: the issue's figures."""
    lines = [
        "| configuration | tokens | right | right among unflagged | flagged | missed | false detections (unflagged) | "
        "scenes exactly right | scenes sound | colour confusions (unflagged) | median ms | median CPU ms | median error mm | "
        "calibration failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tallies:
        conf = sum(v for (a, b), v in t.confusion.items() if b != MISSED and a != b)
        ms = f"{np.median(t.ms):.0f}" if t.ms else "n/a"
        cpu = f"{np.median(t.cpu_ms):.0f}" if t.cpu_ms else "n/a"
        err = f"{np.median(t.errors_mm):.2f}" if t.errors_mm else "n/a"
        lines.append(f"| {t.name} | {t.tokens} | {_pct(t.right, t.tokens)} | {_pct(t.unflagged_right, t.unflagged)} | "
                     f"{_pct(t.flagged, t.tokens)} | {t.missed} | "
                     f"{t.false_detections} ({t.unflagged_false_detections}) | "
                     f"{_pct(t.scenes_exact, t.scenes)} | {_pct(t.scenes_sound, t.scenes)} | {conf} "
                     f"({t.unflagged_confusions}) | {ms} | {cpu} | {err} | "
                     f"{t.calibration_failures} |")
    return lines


def _why_tables(tallies: list[Tally]) -> list[str]:
    """Why tokens were missed and flagged, and why scenes were not exactly right."""
    lines = ["", f"Missed tokens by what the camera saw of them (hidden: less than {hidden_below():.0%} of the figure "
             "in view, under a hand, a cup or outside the photo; no detector can find those; calibration failures "
             "count as missed):", "",
             "| configuration | " + " | ".join(MISS_CAUSES) + " |", "|---" * (len(MISS_CAUSES) + 1) + "|"]
    lines += [f"| {t.name} | " + " | ".join(str(t.missed_by_cause.get(c, 0)) for c in MISS_CAUSES) + " |"
              for t in tallies]
    lines += ["", "Why tokens were flagged (share of all tokens; a token may have several reasons):", "",
              "| configuration | " + " | ".join(r.replace("_", " ") for r in FLAG_REASONS + (HIDDEN, REFUSED)) + " |",
              "|---" * (len(FLAG_REASONS) + 3) + "|"]
    lines += [f"| {t.name} | " + " | ".join(_pct(t.flag_reasons.get(r, 0), t.tokens) for r in FLAG_REASONS + (HIDDEN, REFUSED))
              + " |" for t in tallies]
    floor_mm = min_margin_mm()
    lines += ["", "Why scenes were not exactly right: scenes with each cause (in brackets, those with no other). "
              f"A line call is a token found on the wrong space with its base within {floor_mm:g} mm of the truth "
              "(`min_margin_mm`: within that of a line it is always flagged, and no detector places it on the right "
              "side every time); placed off, one placed further off; lying token's space, a fallen one stood up on "
              "the wrong space; colour, one found in the wrong colour; false detection, one on the board where no "
              "token is.", "",
              "| configuration | not exactly right | " + " | ".join(SCENE_CAUSES) + " |",
              "|---" * (len(SCENE_CAUSES) + 2) + "|"]
    for t in tallies:
        cells = [f"{c[0]} ({c[1]})" for c in (t.scene_causes.get(k, [0, 0]) for k in SCENE_CAUSES)]
        lines.append(f"| {t.name} | {t.scenes - t.scenes_exact} | " + " | ".join(cells) + " |")
    return lines


def _band_table(tallies: list[Tally]) -> list[str]:
    """What other close-call bands would flag, and leave wrong unflagged."""
    sigmas = float(settings.load("assign")["ambiguity"]["sigmas"])
    lines = ["", "Flags against unflagged accuracy: the same positions with other close-call bands (a call is close "
             f"when its margin is under k sigma, at least `min_margin_mm`; the shipped k is {sigmas:g}, "
             "`ambiguity.sigmas` in data/assign.yaml; other flags unchanged). Each cell: tokens flagged / wrong calls "
             "left unflagged (missed tokens included) / right among unflagged.", "",
             "| configuration | " + " | ".join(f"k = {k:g}" + (" (shipped)" if k == sigmas else "") for k in FLAG_BANDS)
             + " |", "|---" * (len(FLAG_BANDS) + 1) + "|"]
    for t in tallies:
        cells = [f"{_pct(b[0], t.tokens)} / {b[1] - b[2]} / {_pct(b[2], b[1])}"
                 for b in (t.bands.get(k, [0, 0, 0]) for k in FLAG_BANDS)]
        lines.append(f"| {t.name} | " + " | ".join(cells) + " |")
    return lines


def _floor_lines(facts: dict) -> list[str]:
    """What no detector escapes: the flags of a perfect one, and the scenes a hidden token spoils."""
    lines: list[str] = []
    floor = facts.get("floor") or {}
    if floor.get("tokens"):
        n = floor["tokens"]
        floor_mm, fallen_mm = min_margin_mm(), fallen_band_mm()
        lines += ["", f"A detector with no error at all would still flag {_pct(floor['fallen'] + floor['near_line'], n)} "
                  f"of these tokens: {_pct(floor['near_line'], n)} stand within {floor_mm:g} mm (`min_margin_mm`, "
                  f"data/assign.yaml) of a line that changes their resting place and {_pct(floor['fallen'], n)} lie "
                  f"fallen within {fallen_mm:g} mm of one (RULES.md S3 stands one up where it fell: `sigmas` x "
                  "`fallen_sigma_mm`)."]
    if floor.get("scenes"):
        hidden, n = floor["hidden_scenes"], floor["scenes"]
        lines += ["", f"{hidden} of these {n} scenes ({_pct(hidden, n)}) have a token on the board less than "
                  f"{hidden_below():.0%} in view (under a hand, a cup, outside the photo): with that token missed, at most "
                  f"{_pct(n - hidden, n)} of the scenes can be exactly right."]
    return lines


def _time_lines(facts: dict, speed: dict[str, float] | None) -> list[str]:
    """The automatic calibration's time, what the ms columns measure, and the speed check."""
    lines: list[str] = []
    cal_ms = facts.get("calibration_ms") or []
    if cal_ms:
        workers = int(facts.get("calibration_workers", 1))
        side_by_side = (f", found in {workers} worker processes side by side (each slower than it is alone); the "
                        "detectors were timed while they waited") if workers > 1 else ""
        lines += ["", f"Automatic calibration (not in the ms above): median {np.median(cal_ms):.0f} ms per image"
                      f"{side_by_side}."]
    kept = int(facts.get("calibrations_kept", 0))
    if kept:
        lines += ["", f"{kept} automatic calibrations were read from the calibration cache "
                      f"({facts.get('calibration_cache')}: found before by the same calibration code, the same "
                      "answers; knockcam/calibrate/cache.py), their times as measured when they were found."]
    lines += ["", "Median ms: wall-clock detection + assignment per 1280x720 image, after model load (a load average "
              "above the machine's cores inflates it); median CPU ms is the process's CPU time for the same call "
              "(OpenCV and onnxruntime may use both cores).", ""]
    if speed:
        lines += [speed_text(speed) + " Run `knockcam bench --speed` on another machine to compare its speed with "
                  "this run's before comparing ms.", ""]
    return lines


def _confusion_tables(tallies: list[Tally]) -> list[str]:
    """Each configuration's colour confusions, true side against the side found."""
    lines: list[str] = []
    for t in tallies:
        lines += [f"## Colour confusions: {t.name}", "", "| true \\ found | " + " | ".join(SIDES) + f" | {MISSED} |",
                  "|---" * (len(SIDES) + 2) + "|"]
        for a in SIDES:
            row = [str(t.confusion.get((a, b), 0)) for b in SIDES + (MISSED,)]
            lines.append(f"| {a} | " + " | ".join(row) + " |")
        lines.append("")
    return lines


def _verdict(t: Tally) -> str:
    """Which of the issue's targets a configuration met."""
    conf = sum(v for (a, b), v in t.confusion.items() if b != MISSED and a != b)
    ok = {
        "unflagged": t.unflagged and t.unflagged_right / t.unflagged >= TARGETS["unflagged"],
        "flagged": t.tokens and t.flagged / t.tokens <= TARGETS["flagged"],
        "exact": t.scenes and t.scenes_exact / t.scenes >= TARGETS["exact"],
        "colour": conf == 0,
        "ms": bool(t.ms) and float(np.median(t.ms)) <= TARGETS["ms"],
    }
    met = [k for k, v in ok.items() if v]
    missed = [k for k, v in ok.items() if not v]
    return f"- {t.name}: met {', '.join(met) or 'none'}; not met {', '.join(missed) or 'none'}"

