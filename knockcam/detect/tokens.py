"""What every detector returns: tokens with their side and where their base touches the board."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import cv2
import numpy as np

if TYPE_CHECKING:
    from knockcam.detect.reference import Difference


@dataclass(frozen=True)
class Token:
    """One detected token. ``xy_mm`` is the centre of its base (RULES.md S3), not its top."""

    side: str  # one of knockcam.sides.SIDES
    xy_mm: tuple[float, float]  # base centre, board millimetres
    confidence: float  # 0..1
    sigma_mm: float = 2.0  # 1-sigma uncertainty of xy_mm, for the ambiguity test
    xy_px: tuple[float, float] | None = None  # base centre in the image, when known
    source: str = "model"  # model | reference | both; combine: model_only | reference_only | conflict;
                           # verify: verified (one detector saw it, the second look confirmed it),
                           # verifier_only (neither detector reported it: found beside a token)
    fallen: bool = False
    maybe_fallen: bool = False  # the fallen network half believes it lies down (knockcam.detect.fallen): left where it
                                # was found, but its base is as uncertain as a lying token's
    unsure: bool = False  # a look doubts this token (a weak score, or another colour seen there): a human decides


# how many looks vouch for a token, by its source: both detectors, one and the verifier, the verifier
# alone; any other source (one detector) counts 1. Of two reports of one token the surer one stays.
BOTH = ("both", "conflict")  # knockcam.detect.combine: both detectors saw it (in one colour, or in two)
SEEN_BY = {**dict.fromkeys(BOTH, 3), "verified": 2, "verifier_only": 0}


def seen_by(token: Token) -> int:
    """How many looks vouch for ``token`` (SEEN_BY)."""
    return SEEN_BY.get(token.source, 1)


@dataclass(frozen=True)
class HiddenArea:
    """Part of the board covered by something that is no token (a hand, a cup, a card): a token
    under it may not be seen at all. Found by the reference-frame detector (knockcam.detect.reference)."""

    outline_mm: tuple[tuple[float, float], ...]  # polygon on the board (board mm)
    area_mm2: float


@dataclass(frozen=True)
class Detection:
    """What the detectors found in one photo: the tokens, and the parts of the board they could not see."""

    tokens: tuple[Token, ...]
    hidden: tuple[HiddenArea, ...] = ()
    difference: "Difference | None" = None  # the reference detector's comparison with the empty board, if made


def hidden_area(component: np.ndarray, view) -> HiddenArea:
    """The HiddenArea of one connected region (a bool raster of ``view``, a TopDown), its outline simplified
    to 1.5 raster pixels."""
    s = view.px_per_mm
    contours, _ = cv2.findContours(component.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    outline = cv2.approxPolyDP(max(contours, key=cv2.contourArea), 1.5 * s, True).reshape(-1, 2)
    mm = view.to_mm(outline.astype(np.float64))
    return HiddenArea(outline_mm=tuple((round(float(x), 1), round(float(y), 1)) for x, y in mm),
                      area_mm2=round(float(np.count_nonzero(component)) / (s * s), 1))


def near_hidden(xy_mm, areas: tuple[HiddenArea, ...] | list[HiddenArea], within_mm: float) -> bool:
    """Whether a board point lies in a hidden area or within ``within_mm`` of one."""
    point = (float(xy_mm[0]), float(xy_mm[1]))
    return any(cv2.pointPolygonTest(np.asarray(a.outline_mm, np.float32).reshape(-1, 1, 2), point, True) >= -within_mm
               for a in areas)
