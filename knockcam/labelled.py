"""Accuracy on photos a person has labelled: which side's tokens rest where, as seen at the table,
against what knockcam calls in the photo. This is how real photos are measured (the detection
benchmark's scenes are synthetic); the fixtures' truth files read the same way.

A label file sits beside its photo, with the same name (``round3.yaml`` or ``round3.json`` for
``round3.jpg``)::

    tokens:                  # each side's tokens by resting place: a space id or name, no_space or off_board
      red: [boardwalk, no_space, Park Place]
      blue: [park_place, park_place, off_board]
    reference_image: empty.jpg   # optional: the empty board from the same camera, beside the photo
    corners_px: [[102, 655], [1180, 640], [930, 80], [310, 85]]   # optional: near-left, near-right,
                             # far-right, far-left, in pixels (knockcam calibrate --click --json prints them)
    order: [red, blue]       # optional: the turn order; the payouts are compared too
    pot: 500                 # optional: the Free Parking pot before the round (R4)

The synthetic truth files (``knockcam synth``, fixtures/scenes/*.json) read as they are: their
``tokens`` are a list of {side, space, state, ...}.

A label says where a token rests, not where its base centre is, so calls are matched to labels by
side and place: the same side on the same place first, then the same place in another colour (a
colour confusion), then the same side elsewhere (a wrong place). A call is right when its side and
place are the label's; a token not found is right only if it is labelled off the board (S2: out).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board, as_id
from knockcam.errors import KnockcamError
from knockcam.files import parse_json_or_yaml, read_text
from knockcam.pipeline import PHOTO_SUFFIXES, Detector, ScoredPhoto, ScoreOptions, Scorer, parse_order
from knockcam.rules.money import POT_START
from knockcam.sides import SIDES

NO_SPACE, OFF_BOARD = "no_space", "off_board"
LABEL_SUFFIXES = (".yaml", ".yml", ".json")
LABEL_FIELDS = ("tokens", "reference_image", "corners_px", "order", "pot")  # what a person's label file may say

# How each photo is scored: (row name, calibration from the labelled corners, with the empty-board frame).
CONFIGS = (("automatic calibration, photo alone", False, False),
           ("automatic calibration, empty-board frame", False, True),
           ("labelled corners, photo alone", True, False),
           ("labelled corners, empty-board frame", True, True))


@dataclass(frozen=True)
class LabelledPhoto:
    """A photo and what a person saw on the table when it was taken."""

    photo: Path
    labels: Path  # the label file
    tokens: tuple[tuple[str, str], ...]  # (side, place): a space id, no_space or off_board
    reference: Path | None = None  # the empty-board frame
    corners_px: tuple[tuple[float, float], ...] | None = None  # near-left, near-right, far-right, far-left
    order: tuple[str, ...] = ()
    pot: int = POT_START
    synthetic: bool = False  # the labels are a synthetic render's truth file (knockcam synth), not a person's


@dataclass
class PhotoCheck:
    """One photo scored one way, against its labels."""

    photo: str
    tokens: int = 0  # labelled tokens
    right: int = 0
    flagged: int = 0  # labelled tokens left to a human: a flagged call, a hidden area, or the photo refused
    unflagged_right: int = 0
    colour: int = 0  # labelled tokens called in another side's colour
    missed: int = 0  # labelled tokens on the board that no call matches
    false_on_board: int = 0  # calls on the board that match no labelled token
    refused: str | None = None  # why the photo was not scored (its calibration refused, say)
    payouts_right: bool | None = None  # the round's cash and pot as the labels' (None: no turn order labelled)
    sure: bool = False  # scored with nothing left to a human: no flagged call and no hidden area
    calibration_mm: float | None = None  # automatic calibration: the worst board corner's distance from the labelled one
    wrong: list[str] = field(default_factory=list)  # what was called wrong, in words

    @property
    def exact(self) -> bool:
        """Every labelled token right and no call where no token is (flags or not)."""
        return self.refused is None and self.right == self.tokens and not self.false_on_board


# --- label files -------------------------------------------------------------------------------
def find_labelled(folder: str | Path, board: Board,
                  order: tuple[str, ...] = ()) -> tuple[list[LabelledPhoto], list[Path], list[Path]]:
    """The labelled photos in ``folder`` (in name order), the photos there without a label file (empty-board
    frames the labels name left out), and the label files with no photo beside them; ``order``: the turn
    order of those whose labels give none. A label file is PHOTO.yaml, .yml or .json, in any case."""
    folder = Path(folder)
    _check_round(order, POT_START, board, "--order")
    if not folder.is_dir():
        raise KnockcamError(f"not a folder: {folder}", "give the folder that holds the photos and their label files")
    files = sorted(p for p in folder.iterdir() if p.is_file())
    labels = {(p.stem, p.suffix.lower()): p for p in files if p.suffix.lower() in LABEL_SUFFIXES}
    labelled, unlabelled, used = [], [], set()
    for photo in (p for p in files if p.suffix.lower() in PHOTO_SUFFIXES):
        label = next((labels[(photo.stem, s)] for s in LABEL_SUFFIXES if (photo.stem, s) in labels), None)
        if label is None:
            unlabelled.append(photo)
        else:
            labelled.append(read_labels(label, photo, board, order))
            used.add(label)
    if not labelled:
        raise KnockcamError(f"no labelled photo in {folder}",
                            "put a label file beside each photo (PHOTO.yaml: see docs/labelled-photos.md)")
    frames = {p.reference.resolve() for p in labelled if p.reference is not None}
    unlabelled = [p for p in unlabelled if p.resolve() not in frames]
    alone = [p for p in labels.values() if p not in used]
    return labelled, unlabelled, alone


def read_labels(path: str | Path, photo: str | Path, board: Board, order: tuple[str, ...] = ()) -> LabelledPhoto:
    """The label file ``path`` of ``photo`` (``order``: the turn order when it gives none); anything it gets
    wrong is a one-line KnockcamError naming it."""
    path, photo = Path(path), Path(photo)
    data = parse_json_or_yaml(read_text(path, "label file"), path)
    if not isinstance(data, dict) or "tokens" not in data:
        raise KnockcamError(f"{path}: no 'tokens' in this label file",
                            "write each side's resting places, e.g. tokens: {red: [boardwalk, no_space]}")
    tokens = tuple(_label_tokens(data["tokens"], path, board))
    synthetic = isinstance(data["tokens"], list) and bool(data.get("camera"))
    unknown = [str(key) for key in data if key not in LABEL_FIELDS]
    if unknown and not synthetic:  # a misspelt field would drop a way of scoring the photo without a word
        near = difflib.get_close_matches(unknown[0], LABEL_FIELDS, n=1)
        raise KnockcamError(f"{path}: unknown field {unknown[0]!r}" + (f" (did you mean {near[0]}?)" if near else ""),
                            f"a label file has {', '.join(LABEL_FIELDS)} (docs/labelled-photos.md)")
    per_side = int(settings.load("assign")["sanity"]["tokens_per_side"])
    for side in SIDES:
        n = sum(s == side for s, _ in tokens)
        if n > per_side:
            raise KnockcamError(f"{path}: {n} {side} tokens labelled, a side has {per_side} (RULES.md R2)")
    reference = data.get("reference_image")
    if reference:
        reference = photo.parent / str(reference)
        if not reference.is_file():
            raise KnockcamError(f"{path}: the empty-board frame {reference} is not there",
                                "put it beside the photo or drop reference_image")
    if data.get("order"):
        text = ",".join(map(str, data["order"])) if isinstance(data["order"], list) else str(data["order"])
        order = parse_order(text)
    pot = data.get("pot", POT_START)
    if order:
        _check_round(order, pot, board, str(path))
    elif isinstance(pot, bool) or not isinstance(pot, int) or pot < 0:
        raise KnockcamError(f"{path}: pot must be a whole number of M, at least 0, not {pot!r}")
    return LabelledPhoto(photo=photo, labels=path, tokens=tokens, reference=reference or None,
                         corners_px=_corners(data.get("corners_px"), path), order=order, pot=pot,
                         synthetic=synthetic)


def _check_round(order: tuple[str, ...], pot, board: Board, where: str) -> None:
    """A turn order (when there is one) and pot as the rules engine takes them (R1, R4); else its one-line
    KnockcamError naming ``where``. Checked here, not when a photo is scored: there it would read as a
    photo not scored."""
    if order:
        from knockcam.rules.round import RoundInput, validate_round

        validate_round(RoundInput(order=tuple(order), pot=pot, tokens=()), board, where)


def _label_tokens(tokens, path: Path, board: Board):
    """(side, place) for each labelled token: from {side: [places]} or from a truth file's list of dicts."""
    if isinstance(tokens, dict):
        items = [(side, place) for side, places in tokens.items()
                 for place in (places if isinstance(places, list) else [places] if places else [])]
    elif isinstance(tokens, list) and all(isinstance(t, dict) for t in tokens):
        items = [(t.get("side"), t.get("space") or t.get("state")) for t in tokens]
    else:
        raise KnockcamError(f"{path}: 'tokens' must map each side to its places, e.g. {{red: [boardwalk]}}")
    for side, place in items:
        if side not in SIDES:
            raise KnockcamError(f"{path}: {side!r} is not a side", f"sides are {', '.join(SIDES)}")
        yield side, _place(place, side, path, board)


def _place(place, side: str, path: Path, board: Board) -> str:
    """A labelled resting place as the labels compare it: a space id (given as its id or printed name, any
    case, as round files take it), no_space or off_board."""
    if not isinstance(place, str):
        raise KnockcamError(f"{path}: {side} token on {place!r}: not a resting place",
                            "give a space id or name (knockcam board lists them), no_space or off_board")
    if as_id(place) in (NO_SPACE, OFF_BOARD):
        return as_id(place)
    try:
        return board.space_id(place, (NO_SPACE, OFF_BOARD))
    except KnockcamError as error:
        raise KnockcamError(f"{path}: {side} token: {error}") from None


def _corners(value, path: Path) -> tuple[tuple[float, float], ...] | None:
    if value is None:
        return None
    try:
        pts = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        pts = np.zeros(0)
    if pts.shape != (4, 2) or not np.isfinite(pts).all():
        raise KnockcamError(f"{path}: corners_px must be four [x, y] pixel pairs",
                            "near-left, near-right, far-right, far-left")
    return tuple((float(x), float(y)) for x, y in pts)


# --- one photo against its labels --------------------------------------------------------------
def place(position) -> str:
    """A Position's resting place in the labels' words: its space id, no_space or off_board."""
    return position.space if position.state == "on_space" else position.state


def pair_up(calls: list[tuple[str, str]], labels: list[tuple[str, str]]) -> dict[int, int]:
    """Label index -> call index: the same side and place first, then the same place in another colour,
    then the same side elsewhere. Calls are taken in the order given (put the surest first)."""
    pairs: dict[int, int] = {}
    free = list(range(len(calls)))
    for alike in (lambda c, lab: c == lab, lambda c, lab: c[1] == lab[1], lambda c, lab: c[0] == lab[0]):
        for li, label in enumerate(labels):
            if li in pairs:
                continue
            ci = next((c for c in free if alike(calls[c], label)), None)
            if ci is not None:
                pairs[li] = ci
                free.remove(ci)
    return pairs


def check_photo(scored: ScoredPhoto, photo: LabelledPhoto) -> PhotoCheck:
    """The calls of a scored photo against its labels (and its payouts, when a turn order is labelled)."""
    positions = scored.positions
    surest = sorted(range(len(positions)), key=lambda i: (positions[i].ambiguous, -positions[i].token.confidence))
    pairs = {li: surest[ci] for li, ci in
             pair_up([(positions[i].side, place(positions[i])) for i in surest], list(photo.tokens)).items()}
    hidden = set(scored.hidden_spaces())
    check = PhotoCheck(photo=photo.photo.name, tokens=len(photo.tokens), sure=not scored.ambiguous and not scored.hidden)
    for li, (side, where) in enumerate(photo.tokens):
        ci = pairs.get(li)
        if ci is None:
            if where == OFF_BOARD:  # not seen and out: as the rules have it
                _count(check, right=True, flagged=False)
                continue
            check.missed += 1
            _count(check, right=False, flagged=where in hidden)
            check.wrong.append(f"{side} on {where}: not found" + (" (a hidden area there)" if where in hidden else ""))
            continue
        p = positions[ci]
        right = (p.side, place(p)) == (side, where)
        _count(check, right=right, flagged=p.ambiguous)
        if not right:
            check.colour += p.side != side
            check.wrong.append(f"{side} on {where}: called {p.side} on {place(p)}" + (" (flagged)" if p.ambiguous else ""))
    for i in sorted(set(range(len(positions))) - set(pairs.values())):
        p = positions[i]
        if p.state != OFF_BOARD:
            check.false_on_board += 1
            check.wrong.append(f"{p.side} on {place(p)}: no such token" + (" (flagged)" if p.ambiguous else ""))
    if photo.order:
        truth = labelled_round(photo, scored.board)
        check.payouts_right = (dict(scored.round.cash) == dict(truth.cash)
                               and scored.round.pot_after == truth.pot_after)
    return check


def refused_check(photo: LabelledPhoto, why: str) -> PhotoCheck:
    """A photo not scored (its calibration refused, say): every labelled token on the board is left to a human."""
    check = PhotoCheck(photo=photo.photo.name, tokens=len(photo.tokens), refused=why,
                       payouts_right=False if photo.order else None)
    for _, where in photo.tokens:
        _count(check, right=where == OFF_BOARD, flagged=where != OFF_BOARD)
        check.missed += where != OFF_BOARD
    return check


def _count(check: PhotoCheck, right: bool, flagged: bool) -> None:
    check.right += right
    check.flagged += flagged
    check.unflagged_right += right and not flagged


def labelled_round(photo: LabelledPhoto, board: Board):
    """The rules engine's round for the labelled places (sides not in the turn order left out)."""
    from knockcam.rules import RoundInput, TokenPlacement, score_round

    placements = tuple(TokenPlacement(side, where if board.has_space(where) else None)
                       for side, where in photo.tokens if side in photo.order)
    return score_round(RoundInput(order=photo.order, pot=photo.pot, tokens=placements), board,
                       where=str(photo.labels))


# --- a folder of labelled photos ----------------------------------------------------------------
def check_all(photos: list[LabelledPhoto], board_path: str | Path | None = None, detector: Detector | None = None,
              progress: Callable[[], None] | None = None) -> dict[str, list[PhotoCheck]]:
    """Every labelled photo scored each way it can be (CONFIGS), row name -> its photos' checks.

    The automatic calibration is also measured against labelled corners, where there are some."""
    from knockcam.calibrate.calibration import Calibration
    from knockcam.calibrate.quality import board_corners_mm, corner_errors_mm, homography_from_points

    rows: dict[str, list[PhotoCheck]] = {}
    for name, corners, frame in CONFIGS:
        for photo in photos:
            if not _allows(photo, corners, frame):
                continue
            text = " ".join(f"{x:.2f},{y:.2f}" for x, y in photo.corners_px) if corners else None
            options = ScoreOptions(corners=text, reference=photo.reference if frame else None, board=board_path,
                                   order=photo.order, pot=photo.pot)
            try:
                scored = Scorer(options, detector).score(photo.photo)
            except KnockcamError as exc:
                check = refused_check(photo, str(exc))
            else:
                check = check_photo(scored, photo)
                if not corners and photo.corners_px is not None:
                    board = scored.board
                    clicked = Calibration(method="labelled corners", image_size=scored.calibration.image_size,
                                          homography=homography_from_points(board_corners_mm(board), photo.corners_px))
                    check.calibration_mm = float(corner_errors_mm(scored.calibration, clicked, board).max())
            rows.setdefault(name, []).append(check)
            if progress is not None:
                progress()
    return rows


def _allows(photo: LabelledPhoto, corners: bool, frame: bool) -> bool:
    """Whether the photo's labels give what a way of scoring it needs (CONFIGS: corners, an empty-board frame)."""
    return (not corners or photo.corners_px is not None) and (not frame or photo.reference is not None)


def runs(photos: list[LabelledPhoto]) -> int:
    """How many times check_all scores a photo (for a progress bar)."""
    return sum(_allows(p, corners, frame) for _, corners, frame in CONFIGS for p in photos)


# --- the results file --------------------------------------------------------------------------
def report(rows: dict[str, list[PhotoCheck]], photos: list[LabelledPhoto], unlabelled: list[Path], folder: str | Path,
           command: str, alone: list[Path] = ()) -> str:
    """The results file (markdown): each way of scoring summed over the photos, then each photo's misses."""
    def pct(num: int, den: int) -> str:
        return f"{100.0 * num / den:.1f}%" if den else "n/a"

    synthetic = sum(p.synthetic for p in photos)
    if synthetic == len(photos):
        what = ("synthetic renders, labelled by their truth files (knockcam synth): not a measure of real photos")
    elif synthetic:
        what = f"{len(photos) - synthetic} labelled by a person, {synthetic} synthetic renders with their truth files"
    else:
        what = "photos labelled by a person (label files beside them)"
    lines = ["# Labelled photos", "", f"Made by: `{command}`", "",
             f"Photos: {len(photos)} in {folder}: {what}."]
    for paths, what in ((unlabelled, "Not scored, no label file beside them"),
                        (alone, "Label files with no photo beside them (nothing scored)")):
        if paths:
            names = ", ".join(p.name for p in paths[:8]) + (", ..." if len(paths) > 8 else "")
            lines.append(f"{what}: {len(paths)} ({names}).")
    lines += ["", "Calls are matched to labels by side and resting place (knockcam/labelled.py): a call is right when "
              "its side and place are the label's; a token not found is right only if it is labelled off the board. "
              "Flagged: left to a human (a flagged call, a labelled token not found under a hidden area, or the photo "
              "refused: not scored, the user is told what to give). Right among unflagged: among the labelled tokens "
              "not left to a human; a token missed without a flag is one of the wrong ones there, and missed counts "
              "it too, as it counts the tokens on the board of a photo not scored. Exactly right: every labelled "
              "token right and no "
              "call on the board where no token is, flags or not. Payouts right: the round scored from the calls "
              "(flagged ones as called) pays as the round scored from the labels (photos with a turn order); sure photos: "
              "those scored with nothing left to a human (no flagged call, no hidden area), where knockcam's payouts "
              "are its answer.", "",
              "| scoring | photos | tokens | right | right among unflagged | flagged | wrong and unflagged | "
              "missed | calls where no token is | colour confusions | exactly right | not scored | payouts right | "
              "sure photos: payouts right |",
              "|---" * 14 + "|"]
    for name, checks in rows.items():
        tok = sum(c.tokens for c in checks)
        flagged = sum(c.flagged for c in checks)
        ok = sum(c.unflagged_right for c in checks)
        paid = [c.payouts_right for c in checks if c.payouts_right is not None]
        sure = [c.payouts_right for c in checks if c.payouts_right is not None and c.sure]
        lines.append(f"| {name} | {len(checks)} | {tok} | {pct(sum(c.right for c in checks), tok)} | "
                     f"{pct(ok, tok - flagged)} | {pct(flagged, tok)} | {tok - flagged - ok} | "
                     f"{sum(c.missed for c in checks)} | {sum(c.false_on_board for c in checks)} | "
                     f"{sum(c.colour for c in checks)} | {sum(c.exact for c in checks)} | "
                     f"{sum(c.refused is not None for c in checks)} | "
                     + (f"{sum(paid)} of {len(paid)} | {sum(sure)} of {len(sure)}" if paid else "n/a | n/a") + " |")
    automatic = {name for name, corners, _ in CONFIGS if not corners}
    measured = [c.calibration_mm for name, checks in rows.items() if name in automatic
                for c in checks if c.calibration_mm is not None]
    if measured:
        lines += ["", f"Automatic calibration against the labelled corners (the board corner furthest from its "
                  f"label, board mm; as exact as the labels' corners): median {np.median(measured):.2f}, worst "
                  f"{max(measured):.2f}, over {len(measured)} calibrations kept."]
    lines += ["", "## Each photo", "", "| photo | scoring | right | flagged | calibration mm | what was called wrong |",
              "|---|---|---|---|---|---|"]
    for name, checks in rows.items():
        for c in checks:
            wrong = f"not scored: {c.refused}" if c.refused else "; ".join(c.wrong) or "-"
            mm = "-" if c.calibration_mm is None else f"{c.calibration_mm:.2f}"
            lines.append(f"| {c.photo} | {name} | {c.right} of {c.tokens} | {c.flagged} | {mm} | "
                         f"{wrong.replace('|', '/')} |")
    return "\n".join(lines) + "\n"
