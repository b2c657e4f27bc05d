"""A second look with the empty-board frame: is a token really here, and of which colour?

The two detectors disagree most about tokens in a cluster (one half hidden behind another), pale
ones washed out by the light, and things that are no token (a fallen token's top, a card's edge).
This stage cuts the photo *and* the empty-board frame around a candidate base (the same oriented
patch as knockcam.detect.fallen: the camera's side at the bottom, where a standing figure leans
above it) and a small convolutional network (models/verify.onnx, onnxruntime) gives the chance
that a token of each side stands there, or none. With it, ``second_look``:

- keeps the model's weak candidates (below ``model.conf``) that nothing else explains when the
  network finds a token there: flagged ``unsure``, a human confirms them;
- drops tokens the network is sure are not there, unless both detectors saw them (a phantom only
  one detector reports; off the board, where only the model looks), and a token it doubts beside
  a surer one of its side (a second detection of one token, most often lying on its side);
- settles a disagreement when only one detector saw a token and the network is sure of it in that
  colour (source ``verified``: not flagged for the disagreement);
- gives a token the side the network is sure of when the detectors said another (a yellow token
  turned orange by the light), flagged as a disagreement.

Then ``tokens_beside`` looks for the token both detectors miss most: one whose base touches another's
(their figures merge into one), a base's diameter from a found token, where the photo differs from
the empty board; one the network is sure of is added, flagged ``unsure``. Last, ``last_look`` looks
at every base where the refiner placed it: it drops the doubted tokens where a wrong drop costs least
(one detector alone saw them, or a hidden area is beside them), keeps one report of a lying token
seen twice (its base and its top), once the fallen network has marked them, and corrects colours.

``knockcam train --verify`` trains it on synthetic renders (knockcam.detect.verify_train); settings
in data/detect.yaml ``verify``.

A photo alone (no empty-board frame: a phone photo scored after the game) has its own verifier
(models/verify_alone.onnx, ``load_alone``): the same network on the photo's patch only, trained at the
learned model's candidates (``knockcam train --verify-alone``). ``alone_look`` uses it to drop the
model's phantoms (after looking a few mm around each for the token the model may have placed off; one
the model scored well and it does not rule out stays, flagged), correct colours (and flag those it half
sees in another), vouch for weakly scored tokens and keep weak candidates it is sure of, each patch looked at
as cut and mirrored left-right (the mean of the two answers). Last, once the lying tokens are stood up,
``figure_seen_again`` drops a doubted standing report just behind a surer one of its side: that token's figure
seen again. Settings in data/detect.yaml ``verify_alone``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.detect.combine import near
from knockcam.detect.patch import PatchClassifier, PhotoPair, configured_path, directions, load_once, load_photo_alone
from knockcam.detect.tokens import BOTH, HiddenArea, Token, near_hidden, seen_by
from knockcam.sides import SIDES

if TYPE_CHECKING:
    from knockcam.calibrate.calibration import Calibration
    from knockcam.detect.reference import Difference

NONE = len(SIDES)  # the network's last class: no token here
ONE_DETECTOR = ("model_only", "reference_only")  # knockcam.detect.combine: the detectors disagree about it
ALONE_FILE = "verify_alone.onnx"  # the verifier of a photo alone, in models/


def default_path() -> Path:
    """data/detect.yaml verify.path, else the shipped models/verify.onnx."""
    return configured_path("verify", "verify.onnx")


class TokenVerifier(PatchClassifier):
    """models/verify.onnx: per candidate, the chance of a token of each side (SIDES order) and of none."""

    what = "the token verifier"
    remedy = " (retrain it with 'knockcam train --verify')"

    def chances(self, pair: PhotoPair, xy_mm, mirrored: bool = False) -> np.ndarray:
        """(N, 5): for candidate bases at ``xy_mm``, the chance of a red, yellow, green, blue token, or none;
        ``mirrored``: the mean of the chances for each patch and for its mirror image (left and right swapped:
        the network learnt on patches mirrored at random, so it knows both), which a single look at a printed
        mark that happens to resemble a figure sways less."""
        x = pair.network_input(xy_mm, self.geometry)
        p = self.probabilities(x)
        if mirrored and len(x):
            p = (p + self.probabilities(np.ascontiguousarray(x[..., ::-1]))) / 2.0
        return p

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """(N, 5) softmax over red, yellow, green, blue, none, for rows of ``PhotoPair.network_input``."""
        if not len(x):
            return np.zeros((0, NONE + 1))
        logits = self.logits(x).reshape(len(x), NONE + 1).astype(np.float64)
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def load(path: str | Path | None = None) -> TokenVerifier | None:
    """The shipped network (None when it has not been trained), kept for the next call."""
    return load_once(TokenVerifier, Path(path) if path is not None else default_path())


def alone_path() -> Path:
    """data/detect.yaml verify_alone.path, else the shipped models/verify_alone.onnx."""
    return configured_path("verify_alone", ALONE_FILE)


def load_alone(path: str | Path | None = None) -> TokenVerifier | None:
    """The verifier of a photo alone (``alone_path`` unless given; None when it has not been trained), kept
    for the next call."""
    return load_photo_alone(TokenVerifier, Path(path) if path is not None else alone_path(), "--verify-alone")


def alone_look(tokens: list[Token], weak: list[Token], photo: PhotoPair,
               verifier: TokenVerifier | None) -> list[Token]:
    """The learned model's ``tokens`` in a photo alone (no empty-board frame) looked at again by the verifier
    of a photo alone (data/detect.yaml verify_alone), where the model put them (where it learnt):

    - a token it doubts (under ``drop_below``) is looked for around there (``around``): moved, flagged
      ``unsure``, to where the verifier is sure of a token, else dropped (a phantom: a printed "?", a card)
      unless the model scored it well and the verifier does not rule it out (``keep_doubted``): then it
      stays where the model put it, flagged ``unsure``, a human's call rather than a token missed;
    - a token it is sure is of another side takes that side, flagged (source ``conflict``); one it keeps in the
      model's colour while giving another side some chance (``other_side_above``) is flagged ``unsure``;
    - a token the model scored weakly (``unsure``) that it vouches for in its colour is no longer left
      to a human for that;
    - the model's lone weak candidates (``weak``, under ``model.conf``) it is sure of are added, flagged
      ``unsure``; those it half believes (``look_weak_above``) are looked for around, and added where found,
      flagged ``unsure``."""
    if verifier is None:
        return list(tokens)
    cfg, looked, p = _asked("verify_alone", tokens, weak, photo, verifier)
    apart, present, likeliest = float(cfg["apart_mm"]), 1.0 - p[:, NONE], np.argmax(p[:, :NONE], axis=1)
    out: list[Token] = []
    for k, t in enumerate(tokens):
        if present[k] < float(cfg["drop_below"]):
            # a doubted token may be a real one the model placed a little off: looked for around it
            others = [u.xy_mm for j, u in enumerate(tokens) if j != k]
            moved = _look_around(t, photo, verifier, cfg["around"], cfg["mirrored"])
            if moved is not None and not near(moved.xy_mm, others, apart):
                out.append(moved)
            elif _kept_doubted(t, present[k], cfg["keep_doubted"]) and not near(t.xy_mm, others, apart):
                out.append(replace(t, unsure=True))
            continue
        side = SIDES[int(likeliest[k])]
        if side != t.side and p[k, likeliest[k]] >= float(cfg["recolour_above"]):
            t = replace(t, side=side, source="conflict")
        elif max(p[k, j] for j in range(NONE) if SIDES[j] != t.side) >= float(cfg["other_side_above"]):
            t = replace(t, unsure=True)  # the verifier sees another colour there too: a human's call
        elif t.unsure and p[k, SIDES.index(t.side)] >= float(cfg["vouch_above"]):
            t = replace(t, unsure=False)
        out.append(t)
    added: list[Token] = []
    look_weak = cfg.get("look_weak_above")
    for k in np.argsort(-present[len(tokens):], kind="stable") + len(tokens):
        t = looked[k]
        if near(t.xy_mm, [u.xy_mm for u in out + added], apart):
            continue
        if present[k] >= float(cfg["keep_weak_above"]):
            added.append(replace(t, side=SIDES[int(likeliest[k])], confidence=float(present[k]), unsure=True))
        elif look_weak is not None and present[k] >= float(look_weak):
            # a weak candidate a little off a token the model barely saw: looked for around it too
            t = _look_around(t, photo, verifier, cfg["around"], cfg["mirrored"])
            if t is not None and not near(t.xy_mm, [u.xy_mm for u in out + added], apart):
                added.append(t)
    return out + added


def figure_seen_again(tokens: list[Token], calibration: "Calibration") -> list[Token]:
    """A photo alone's ``tokens`` less the standing ones its second look left doubted (``unsure``) that stand
    just behind a standing token of their side the model scored higher: further from the camera by less than
    ``behind_mm`` and off that line by less than ``across_mm`` (data/detect.yaml verify_alone.figure_again).
    The model saw that token's figure again there, partway up where it leans away from the camera; two
    standing bases are never closer than a base's diameter (25 mm)."""
    from knockcam.detect.reference import viewpoint

    standing = [k for k, t in enumerate(tokens) if not t.fallen]
    if len(standing) < 2:
        return list(tokens)
    cfg = settings.load("detect")["verify_alone"]["figure_again"]
    behind, aside = float(cfg["behind_mm"]), float(cfg["across_mm"])
    xy = np.array([t.xy_mm for t in tokens], np.float64)
    away, across = directions(xy, viewpoint(calibration).nadir_mm)

    def behind_a_surer(k: int) -> bool:
        t = tokens[k]
        for j in standing:
            u = tokens[j]
            if j != k and u.side == t.side and u.confidence > t.confidence:
                gap = xy[k] - xy[j]
                if 0.0 < gap @ away[j] < behind and abs(gap @ across[j]) < aside:
                    return True
        return False

    return [t for k, t in enumerate(tokens) if not (t.unsure and not t.fallen and behind_a_surer(k))]


def _kept_doubted(token: Token, present: float, cfg: dict) -> bool:
    """Whether a token the verifier of a photo alone doubts, and did not find around, is kept (flagged) rather
    than dropped: the model scored it at least ``model_above`` and the verifier gives it at least ``present_above``
    (data/detect.yaml verify_alone.keep_doubted)."""
    return token.confidence >= float(cfg["model_above"]) and present >= float(cfg["present_above"])


def _look_around(token: Token, photo: PhotoPair, verifier: TokenVerifier, cfg: dict,
                 mirrored: bool) -> Token | None:
    """``token`` moved to the point around it (``directions`` at each of ``distances_mm``) where the verifier is
    surest of a token (``mirrored``: TokenVerifier.chances), flagged ``unsure`` in the side it gives there, when
    that is at least ``found_above``; else None (nothing is there)."""
    n = int(cfg["directions"])
    angles = np.arange(n) * (2 * np.pi / n)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    points = np.concatenate([np.asarray(token.xy_mm)[None, :] + float(r) * ring for r in cfg["distances_mm"]])
    p = verifier.chances(photo, points, mirrored)
    best = int(np.argmax(1.0 - p[:, NONE]))
    if 1.0 - p[best, NONE] < float(cfg["found_above"]):
        return None
    px = photo.calibration.mm_to_px(points[best:best + 1])[0]
    return replace(token, xy_mm=(float(points[best, 0]), float(points[best, 1])), xy_px=(float(px[0]), float(px[1])),
                   side=SIDES[int(np.argmax(p[best, :NONE]))], unsure=True)


def second_look(tokens: list[Token], weak: list[Token], pair: PhotoPair,
                verifier: TokenVerifier | None) -> list[Token]:
    """``tokens`` (combined) looked at again (data/detect.yaml verify): tokens the verifier rules out
    dropped (those both detectors saw only when beside a surer one of their side), one-detector
    tokens it vouches for in their colour marked ``verified``, tokens it is sure are of another side
    given that side and marked ``conflict`` (flagged), and the lone weak candidates it vouches for
    added, flagged ``unsure``."""
    if verifier is None:
        return list(tokens)
    cfg, looked, p = _asked("verify", tokens, weak, pair, verifier)
    apart, present, likeliest = float(cfg["apart_mm"]), 1.0 - p[:, NONE], np.argmax(p[:, :NONE], axis=1)
    out: list[Token] = []
    for k, t in enumerate(tokens):
        # a token both detectors saw (BOTH) is not dropped by the network alone
        if (present[k] < float(cfg["drop_below"]) and t.source not in BOTH) \
                or _second_sight(k, tokens, present, pair.board, float(cfg["drop_beside_below"])):
            continue
        side = SIDES[int(likeliest[k])]
        if side != t.side and p[k, likeliest[k]] >= float(cfg["recolour_above"]):
            t = replace(t, side=side, source="conflict")
        elif t.source in ONE_DETECTOR and p[k, SIDES.index(t.side)] >= float(cfg["vouch_above"]):
            t = replace(t, source="verified")
        out.append(t)
    added: list[Token] = []
    for k in range(len(tokens), len(looked)):
        t = looked[k]
        if present[k] < float(cfg["keep_weak_above"]):
            continue
        if near(t.xy_mm, [u.xy_mm for u in added], apart):
            continue
        added.append(replace(t, side=SIDES[int(likeliest[k])], confidence=float(present[k]), source="model_only",
                             unsure=True))
    return out + added


def tokens_beside(tokens: list[Token], pair: PhotoPair, verifier: TokenVerifier | None,
                  difference: "Difference | None") -> list[Token]:
    """The tokens touching ``tokens`` that no detector reported (data/detect.yaml verify.beside): around
    every standing token, at a base's diameter from its base, each point where the photo differs from
    the empty board (``difference``: knockcam.detect.reference), no token is found within ``apart_mm``
    and no token lies down within its height (its body would be seen there) is looked at; a token the
    verifier is sure of there is reported, in its colour, flagged ``unsure``."""
    if verifier is None or difference is None or not tokens:
        return []
    from knockcam.detect.reference import in_reach

    cfg = settings.load("detect")["verify"]
    beside = cfg["beside"]
    base = pair.board.token.base_diameter_mm
    apart, spacing = float(cfg["apart_mm"]), float(beside["spacing_mm"])
    angles = np.arange(int(beside["directions"])) * (2 * np.pi / int(beside["directions"]))
    ring = (base + float(beside["gap_mm"])) * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    found = [t.xy_mm for t in tokens]
    lying = [t.xy_mm for t in tokens if t.fallen]
    points: list[tuple[float, float]] = []
    for t in tokens:
        if t.fallen:
            continue
        for p in np.asarray(t.xy_mm) + ring:
            xy = (float(p[0]), float(p[1]))
            if near(xy, found, apart) or near(xy, points, spacing) or near(xy, lying, pair.board.token.height_mm) \
                    or not in_reach(xy, pair.board):
                continue
            share = difference.changed_share(xy, base / 2)
            if share is not None and share >= float(beside["changed_above"]):
                points.append(xy)
    if not points:
        return []
    p = verifier.chances(pair, points)
    present = 1.0 - p[:, NONE]
    added: list[Token] = []
    for k in np.argsort(-present, kind="stable"):
        xy = points[int(k)]
        if present[k] < float(beside["keep_above"]) or near(xy, [t.xy_mm for t in added], apart):
            continue
        added.append(Token(side=SIDES[int(np.argmax(p[k, :NONE]))], xy_mm=xy, confidence=float(present[k]),
                           source="verifier_only", unsure=True))
    return added


def last_look(tokens: list[Token], pair: PhotoPair, verifier: TokenVerifier | None,
              hidden: tuple[HiddenArea, ...] = ()) -> list[Token]:
    """``tokens`` looked at once more where the refiner has placed their bases (data/detect.yaml
    verify.last_look): those the verifier doubts dropped where a wrong drop costs least, the second
    sightings of a lying token dropped, and the colour of those it is sure of corrected.

    - A token one detector alone saw goes under ``drop_one_below``: most such are a card's edge or
      a figure's top (``second_look`` drops them under its lower ``drop_below`` before the refiner).
    - Any token within ``near_hidden_mm`` of a hidden area goes under ``drop_near_hidden_below``:
      mostly a hand or a cup both detectors took for a token; a real one dropped there is left to the
      human, who is sent to look at what the hidden area covers.
    - A token lying down is reported twice more often than any other: at its base and its top, or a
      standing figure's top is taken for a lying token. A lying token closer than ``lying_twice_mm``
      to a surer token of its side is that token seen again. Surer: one the verifier believes in
      (``believed_above``) over one it doubts, then one more detectors saw, then a greater chance; the
      surest are kept first, so of a lying token seen twice one report stays.
    - So is a standing one closer than ``standing_twice_mm`` to a surer token of its side: two bases
      25 mm across cannot be that close (mostly a weak candidate of the model beside a token both saw).
    - A token it believes in and gives another side, with at least ``recolour_share`` of its chance of
      a token, takes that side, flagged as a disagreement (source ``conflict``): where the refiner has
      centred the patch on the base, the network tells colours apart better than at ``second_look``.
    - A token it keeps although it gives it under ``unsure_below`` chance of a token (most are ones both
      detectors saw, which no rule above drops) is flagged ``unsure``: a human's call, as a photo alone's
      doubted token is (``alone_look``)."""
    if verifier is None or not tokens:
        return list(tokens)
    cfg = settings.load("detect")["verify"]["last_look"]
    believed = float(cfg["believed_above"])
    reach = {True: float(cfg["lying_twice_mm"]), False: float(cfg["standing_twice_mm"])}
    p = verifier.chances(pair, [t.xy_mm for t in tokens])
    present = 1.0 - p[:, NONE]
    doubted = [(t.source in ONE_DETECTOR and present[k] < float(cfg["drop_one_below"]))
               or (present[k] < float(cfg["drop_near_hidden_below"])
                   and near_hidden(t.xy_mm, hidden, float(cfg["near_hidden_mm"])))
               for k, t in enumerate(tokens)]

    def sureness(k: int) -> tuple:
        return present[k] >= believed, seen_by(tokens[k]), present[k]

    kept: list[int] = []
    for k in sorted(range(len(tokens)), key=sureness, reverse=True):
        t = tokens[k]
        seen_again = near(t.xy_mm, [tokens[j].xy_mm for j in kept if tokens[j].side == t.side], reach[t.fallen])
        if not (doubted[k] or seen_again):
            kept.append(k)
    likeliest = np.argmax(p[:, :NONE], axis=1)
    out = []
    for k in sorted(kept):
        t, side, chance = tokens[k], SIDES[int(likeliest[k])], p[k, likeliest[k]]
        if side != t.side and chance >= believed and chance >= float(cfg["recolour_share"]) * present[k]:
            t = replace(t, side=side, source="conflict")
        elif present[k] < float(cfg["unsure_below"]):
            t = replace(t, unsure=True)
        out.append(t)
    return out


def _asked(section: str, tokens: list[Token], weak: list[Token], pair: PhotoPair,
           verifier: TokenVerifier) -> tuple[dict, list[Token], np.ndarray]:
    """data/detect.yaml SECTION, and what the verifier says of ``tokens`` and of the ``weak`` candidates more
    than SECTION.apart_mm from them (those after the tokens): the tokens looked at and their chances (N, 5),
    of their patches and their mirror images where SECTION says ``mirrored``."""
    cfg = settings.load("detect")[section]
    looked = list(tokens) + [t for t in weak if not near(t.xy_mm, [u.xy_mm for u in tokens], float(cfg["apart_mm"]))]
    if not looked:
        return cfg, looked, np.zeros((0, NONE + 1))
    return cfg, looked, verifier.chances(pair, [t.xy_mm for t in looked], bool(cfg.get("mirrored", False)))


def _second_sight(k: int, tokens: list[Token], present: np.ndarray, board: Board, below: float) -> bool:
    """Whether token ``k`` is a second detection of a token beside it: closer than a base's diameter to
    a token of its side (two standing bases cannot be that close; a lying token or a figure's top is
    seen twice) that the network is surer of, while it gives ``k`` itself under ``below`` chance."""
    if present[k] >= below:
        return False
    t = tokens[k]
    return any(j != k and u.side == t.side and present[j] > present[k]
               and near(t.xy_mm, [u.xy_mm], board.token.base_diameter_mm) for j, u in enumerate(tokens))
