"""Two detectors, one answer: learned and reference-frame tokens matched by side and distance.

Where both saw the same token (same side, bases within detect.yaml combine.same_side_match_mm; of
two sides, within MATCH_MM) the positions are averaged by their uncertainty and the token is
trusted more (source "both"). Where they disagree -- one saw a token
the other did not ("model_only" / "reference_only"), or they saw it in different colours
("conflict") -- the token is kept, marked, and knockcam.assign flags it for a human. A model token
outside the reference detector's reach (off the board, where it never looks) is no disagreement:
it keeps source "model". Blobs only
the reference frame shows, where the model has not even a weak candidate, and several together,
are dropped: a hand or a glare change differs from the empty board too (most reference-only blobs
on held-out scenes were such). A weak token only the model saw is dropped too where the photo does
not differ from the empty board under its base: nothing is there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from knockcam import settings
from knockcam.detect.tokens import Token

if TYPE_CHECKING:
    from knockcam.detect.reference import Difference

MATCH_MM = 12.0  # two detections of one token are closer than this (bases are >= 25 mm apart)


def combine(model: list[Token], reference: list[Token], weak: list[Token] | None = None,
            match_mm: float = MATCH_MM, reach: Callable[[tuple[float, float]], bool] | None = None,
            difference: "Difference | None" = None, base_radius_mm: float = 0.0) -> list[Token]:
    """Merge the two detectors' tokens; order: matched, then conflicts, then one-detector tokens.

    ``weak`` are the model's candidates below its threshold; None means no model vetting of
    reference-only blobs (every one is kept). ``reach(xy_mm)`` says where the reference detector
    looks (knockcam.detect.reference.in_reach); None: everywhere. ``difference`` is the reference
    detector's comparison with the empty board (None: no check of model-only tokens against it);
    ``base_radius_mm`` the base disc it is read in."""
    same_side_mm = max(match_mm, float(settings.load("detect").get("combine", {}).get("same_side_match_mm", match_mm)))
    pairs = _match(model, reference, match_mm, same_side_mm)
    used_m = {i for i, _ in pairs}
    used_r = {j for _, j in pairs}
    out: list[Token] = []
    for i, j in pairs:
        m, r = model[i], reference[j]
        if m.side == r.side:
            out.append(_fuse(m, r))
        else:  # same place, different colour: keep the more confident one, marked
            best = m if m.confidence >= r.confidence else r
            out.append(replace(best, source="conflict", confidence=abs(m.confidence - r.confidence)))
    for i in range(len(model)):
        if i in used_m:
            continue
        if reach is not None and not reach(model[i].xy_mm):
            out.append(model[i])
        elif not _contradicted(model[i], difference, base_radius_mm):
            out.append(replace(model[i], source="model_only"))
    alone = [j for j in range(len(reference)) if j not in used_r]
    if weak is not None:
        alone = _vetted(reference, alone, [t.xy_mm for t in weak] + [model[i].xy_mm for i in range(len(model))
                                                                      if i not in used_m], match_mm)
    out += [replace(reference[j], source="reference_only") for j in alone]
    return out


def _vetted(reference: list[Token], alone: list[int], support: list, match_mm: float) -> list[int]:
    """The reference-only blobs to keep: those with a model candidate nearby, and lone upright unsupported ones.

    Unsupported blobs in a crowd (detect.yaml combine.veto_crowd of them within crowd_mm) are a hand,
    a cup's shadow or a glare change, not tokens; so are unsupported blobs with no upright base in
    them (``fallen``, when combine.veto_fallen): a coloured card or banknote, a shadow; and so are
    those the reference detector itself doubts (``unsure``: stray plastic beside the base). A lone
    upright unsupported blob is kept, flagged: dropping it too would silence real tokens the model
    misses (measured with the first model on held-out seeds 3000-3099: 2 more missed tokens for 130
    fewer phantom ones with the crowd rule; 11 more missed without it)."""
    cfg = settings.load("detect").get("combine", {})
    crowd, radius = int(cfg.get("veto_crowd", 2)), float(cfg.get("crowd_mm", 60.0))
    unsupported = [j for j in alone if not near(reference[j].xy_mm, support, match_mm)]
    points = [reference[j].xy_mm for j in unsupported]
    vetoed = {j for j in unsupported if sum(near(reference[j].xy_mm, [p], radius) for p in points) >= crowd}
    if cfg.get("veto_fallen", False):
        vetoed |= {j for j in unsupported if reference[j].fallen or reference[j].unsure}
    return [j for j in alone if j not in vetoed]


def _contradicted(token: Token, difference: "Difference | None", radius_mm: float) -> bool:
    """Whether the empty board rules out a token only the model saw (detect.yaml combine): a weak
    score (under ``unchanged_conf``) where under ``unchanged_share`` of its base differs from the
    empty board -- nothing is there. Measured with the shipped model, model + reference, true
    calibration, on seeds 3000-3199: 12 of 59 phantom model-only tokens dropped, no real one;
    checked on seeds 3400-3799: 27 fewer phantoms, scenes exactly right 208 -> 222 of 400, no real
    token lost."""
    if difference is None or radius_mm <= 0:
        return False
    changed = difference.changed_share(token.xy_mm, radius_mm)
    if changed is None:
        return False
    cfg = settings.load("detect").get("combine", {})
    return token.confidence < float(cfg.get("unchanged_conf", 0.0)) and changed < float(cfg.get("unchanged_share", 0.0))


def near(xy, points, radius: float) -> bool:
    """Whether board point ``xy`` is within ``radius`` mm of any of ``points``."""
    return any(np.hypot(xy[0] - p[0], xy[1] - p[1]) <= radius for p in points)


def _match(model: list[Token], reference: list[Token], match_mm: float,
           same_side_mm: float | None = None) -> list[tuple[int, int]]:
    """Greedy nearest pairs, same side first (a colour conflict only as a last resort): within
    ``same_side_mm`` (default ``match_mm``) of one colour, within ``match_mm`` of two."""
    if not model or not reference:
        return []
    a = np.array([t.xy_mm for t in model], dtype=np.float64)
    b = np.array([t.xy_mm for t in reference], dtype=np.float64)
    dist = np.hypot(a[:, None, 0] - b[None, :, 0], a[:, None, 1] - b[None, :, 1])
    same = np.array([[m.side == r.side for r in reference] for m in model])
    cost = np.where(same, dist, dist + 1000.0)  # prefer a same-side partner at any distance within reach
    limit = np.where(same, same_side_mm or match_mm, match_mm)
    pairs, used_m, used_r = [], set(), set()
    for flat in np.argsort(cost, axis=None, kind="stable"):
        i, j = np.unravel_index(flat, cost.shape)
        if i in used_m or j in used_r or dist[i, j] > limit[i, j]:
            continue
        pairs.append((int(i), int(j)))
        used_m.add(i)
        used_r.add(j)
    return pairs


def _fuse(m: Token, r: Token) -> Token:
    """Inverse-variance average of two detections of one token."""
    wm, wr = 1.0 / m.sigma_mm ** 2, 1.0 / r.sigma_mm ** 2
    xy = (np.asarray(m.xy_mm) * wm + np.asarray(r.xy_mm) * wr) / (wm + wr)
    sigma = float(np.sqrt(1.0 / (wm + wr)))
    # the two estimates must agree within their errors, else the fused sigma is optimistic
    gap = float(np.hypot(m.xy_mm[0] - r.xy_mm[0], m.xy_mm[1] - r.xy_mm[1]))
    sigma = max(sigma, gap / 2.0)
    confidence = 1.0 - (1.0 - m.confidence) * (1.0 - r.confidence)
    xy_px = r.xy_px if r.xy_px is not None else m.xy_px
    return Token(side=m.side, xy_mm=(float(xy[0]), float(xy[1])), confidence=round(confidence, 4),
                 sigma_mm=round(sigma, 3), xy_px=xy_px, source="both", fallen=m.fallen or r.fallen)
