"""``calibrate()``: the one entry point the pipeline calls; it picks the method from what it is given."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.quality import Blurred, check
from knockcam.errors import KnockcamError

AUTO_OPTIONS = ["give --corners", "lay the marker sheet"]  # what helps when the automatic calibration is refused


def calibrate(image: np.ndarray, board: Board, corners=None, calibration_file: str | Path | None = None,
              reference=None, camera: Calibration | None = None, max_error_mm: float | None = None) -> Calibration:
    """The board's calibration in this photo.

    ``calibration_file``: a saved calibration, used as is (checked against the image size).
    ``corners``: four pixel corners (near-left, near-right, far-right, far-left) or their text form.
    ``reference``: a ``Reference`` or (reference image, its Calibration or calibration file).
    Nothing given: the marker cards if they are in view, else the automatic outline finder.
    ``camera``: a lens calibration (camera_matrix, dist_coeffs) applied first.
    Raises KnockcamError saying what to do when the board is not found or the error is too large.
    """
    if image is None or not hasattr(image, "shape") or image.ndim < 2:
        raise KnockcamError("no image to calibrate on")
    k = None if camera is None else camera.camera_matrix
    d = None if camera is None else camera.dist_coeffs
    if calibration_file is not None:
        cal = Calibration.load(calibration_file)
        check_size(cal, image, str(calibration_file), "this one", "run 'knockcam calibrate' on this camera's image")
        return check_file_fits(image, cal, board, str(calibration_file), max_error_mm)
    if corners is not None:
        from knockcam.calibrate.corners import parse_corners

        pts = parse_corners(corners) if isinstance(corners, str) else corners
        return calibrate_from_corners(image, board, pts, "corners", k, d, max_error_mm)
    if reference is not None:
        from knockcam.calibrate.reference import Reference, make_reference, register

        if not isinstance(reference, Reference):
            ref_image, ref_cal = reference
            reference = make_reference(ref_image, _reference_calibration(ref_image, ref_cal, board), board)
        registered = check(register(image, reference, board), max_error_mm,
                           "retake the photo with the board better in view, or calibrate the reference again")
        # a reference calibration its photo could not check stays unchecked in every photo registered to it
        return replace(registered, unchecked=reference.calibration.unchecked)
    from knockcam.calibrate.markers import detect_markers

    cards = detect_markers(image, asked=False)
    if cards.enough:
        return calibrate_with_markers(image, board, k, d, max_error_mm, cards)
    try:
        return calibrate_automatically(image, board, k, d, max_error_mm)
    except KnockcamError as exc:
        seen = cards.seen
        if not seen:
            raise
        raise KnockcamError(f"{exc.reason} (and {seen} of the 4 marker cards only, too few to calibrate on)",
                            "frame all four cards, closer and in focus, or " + exc.what_to_do if exc.what_to_do
                            else "frame all four cards, closer and in focus") from None


def check_size(cal: Calibration, image: np.ndarray | tuple[int, int], name: str, photo: str, fix: str) -> None:
    """KnockcamError unless the calibration ``name`` is for images of this one's size (an image, or its
    width and height)."""
    w, h = (int(v) for v in image) if isinstance(image, tuple) else (int(image.shape[1]), int(image.shape[0]))
    if tuple(int(v) for v in cal.image_size) != (w, h):
        raise KnockcamError(f"{name} is for {cal.image_size[0]}x{cal.image_size[1]} images, {photo} is {w}x{h}: {fix}")


def _reference_calibration(ref_image: np.ndarray, ref_cal, board: Board) -> Calibration:
    """The reference photo's calibration, checked against that photo: a file made from another photo would
    register every later photo onto the wrong board while its residual stays small."""
    name = "the reference's calibration"
    if not isinstance(ref_cal, Calibration):
        name, ref_cal = str(ref_cal), Calibration.load(ref_cal)
    fix = "give the calibration file that 'knockcam calibrate' wrote for the reference photo itself"
    check_size(ref_cal, ref_image, name, "the reference photo", fix)
    return check_file_fits(ref_image, ref_cal, board, name, cause="it is not the reference photo's calibration",
                           fix=fix, photo="the reference photo")


def check_file_fits(image: np.ndarray, cal: Calibration, board: Board, name: str, max_error_mm: float | None = None,
                    cause: str = "the camera moved since it was made", fix: str | None = None,
                    photo: str = "this photo") -> Calibration:
    """A saved calibration, unchanged, or KnockcamError when this photo's printed lines put the board further
    from where it says than the error limit, even allowing for their own estimated error: the camera moved
    since the file was made (or, as ``cause`` says, the file is another photo's), and every token would be
    read elsewhere without a flag. The lines are registered from the file's corners (quick), else the board
    is found automatically; where neither places it (a blurred photo, a covered board), nothing says the
    file is wrong and it is used, saying so (``unchecked``)."""
    from knockcam.calibrate.quality import plausible

    why = plausible(cal.homography, board, (image.shape[1], image.shape[0]))
    if why is not None:  # an edited or damaged file: no board a camera could see
        raise KnockcamError(f"{name} does not place the board in {photo} ({why})",
                            fix or "run 'knockcam calibrate' again, or score without --calibration")
    lines = _printed_lines_check(image, cal, board, max_error_mm)
    if not lines.placed:
        return replace(cal, unchecked=f"{photo} shows too little of the board's printed lines to check it")
    if lines.apart_mm is not None:
        raise KnockcamError(f"{name} does not fit {photo}: its printed lines put the board {lines.apart_mm:.0f} mm "
                            f"from where the file does ({cause})", fix or "run 'knockcam calibrate' on a photo from "
                                                                         "where the camera is now, or score without "
                                                                         "--calibration")
    return cal


@dataclass(frozen=True)
class LinesCheck:
    """What a photo's printed lines say of a calibration: whether they placed the board at all (not in a
    blurred photo, nor a covered board), and if so how far (board mm, worst corner) from where the calibration
    does, when that is further than the error limit even allowing for their own estimated error (None: it fits)."""

    placed: bool
    apart_mm: float | None = None


def _printed_lines_check(image: np.ndarray, cal: Calibration, board: Board, max_error_mm: float | None,
                         snap_first: bool = True) -> LinesCheck:
    """``cal`` checked against the photo's printed lines, registered from ``cal``'s corners (quick;
    ``snap_first``), else by finding the board automatically."""
    from knockcam.calibrate.auto import snap_to_grid
    from knockcam.calibrate.quality import corner_errors_mm, error_limit

    limit = error_limit(max_error_mm)
    placed = snap_to_grid(image, board, cal.corners_px(board.size_mm), cal.camera_matrix, cal.dist_coeffs) \
        if snap_first else None
    allowance = 1.0
    if placed is None or placed.error_mm is None or placed.error_mm > limit:
        try:
            placed = calibrate_automatically(image, board, max_error_mm=limit)
        except KnockcamError:
            return LinesCheck(placed=False)
        allowance = float(settings.load("calibrate")["file_check"]["auto_error_factor"])
    apart = float(corner_errors_mm(placed, cal, board).max())
    beyond = apart - allowance * float(placed.error_mm or 0.0) > limit
    return LinesCheck(placed=True, apart_mm=apart if beyond else None)


def calibrate_with_markers(image: np.ndarray, board: Board, camera_matrix=None, dist_coeffs=None,
                           max_error_mm: float | None = None, cards=None) -> Calibration:
    """The marker cards' calibration, checked: a refusal says to lay the cards again, not to lay them.
    ``cards``: the ``Cards`` ``detect_markers`` found in ``image``, when the caller has looked already."""
    from knockcam.calibrate.markers import calibrate_markers

    return check(calibrate_markers(image, board, camera_matrix, dist_coeffs, cards), max_error_mm,
                 "lay the cards flat against the board's corners (calibration/README.md) and retake the photo "
                 "in focus, or give --corners")


def calibrate_automatically(image: np.ndarray, board: Board, camera_matrix=None, dist_coeffs=None,
                            max_error_mm: float | None = None) -> Calibration:
    """The automatic method, checked: a KnockcamError saying what to do when the board is not found, its error
    is over the limit (in a photo far too dark, with no colour or blurred: retake it) or the photo is mirrored."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.mirror import Mirrored, check_not_mirrored

    try:
        cal = calibrate_auto(image, board, camera_matrix, dist_coeffs)
    except KnockcamError as exc:
        raise _named_cause(image, exc) from None
    options = _larger(image) + AUTO_OPTIONS
    try:
        cal = check(cal, max_error_mm, _what_to_do(cal, options, _closer(cal, board)))
    except KnockcamError as exc:
        named = _named_cause(image, exc)
        if named is not exc:
            raise named from None
        if _mirrored_near(image, cal, board, max_error_mm):
            raise Mirrored() from None
        _refuse_if_blurred(image, cal, board, max_error_mm, options)
        raise
    return check_not_mirrored(image, cal, board)


def _refuse_if_blurred(image: np.ndarray, refused: Calibration, board: Board, max_error_mm: float | None,
                       options: list[str]) -> None:
    """Refuses ``refused`` again as a blurred photo's (``Blurred``) when its printed lines look blurred where it
    puts them (auto.blurred_lines_px), retaking the photo in focus before ``options``; returns when they look
    sharp."""
    from knockcam.calibrate.auto import blurred_lines_px

    width = blurred_lines_px(image, refused, board)
    if width is None:
        return
    sharp = float(settings.load("calibrate")["quality"]["sharp_line_px"])
    shown = "no printed line shows" if np.isinf(width) else f"its printed lines are {width:.0f} px wide"
    # a blurred board can still be one an offer of --max-error fits (the glare_crease_bowed fixture: 1.04 mm
    # off, estimated 3.002 mm): the offer is kept beside the advice to retake the photo
    check(refused, max_error_mm, _what_to_do(refused, ["retake it in focus, holding the camera still"] + options),
          because=f"the photo is blurred ({shown}; sharp photos show at most {sharp:g} px)", refusal=Blurred)


def _named_cause(image: np.ndarray, exc: KnockcamError) -> KnockcamError:
    """``exc`` with what in the photo made the search fail named first: its darkness, else its lack of colour."""
    named = _named_dark(image, exc)
    return named if named is not exc else _named_colourless(image, exc)


def _named_dark(image: np.ndarray, exc: KnockcamError) -> KnockcamError:
    """``exc`` with the photo's darkness named first when the board was not found in a photo whose brightest
    parts (auto.photo_light) are under what a photo is scored from (detect.yaml photo.min_light): light is what
    helps there. The search still ran: it finds some boards that dark (docs/calibration-measured.md,
    "2. Calibrate automatically")."""
    from knockcam.calibrate.auto import photo_light
    from knockcam.calibrate.outline import NOT_FOUND

    light = photo_light(image)
    if exc.reason != NOT_FOUND[0] or light >= float(settings.load("detect")["photo"]["min_light"]):
        return exc
    return KnockcamError(f"{exc.reason} in a photo this dark (its brightest parts at {light:.0f} of 255)",
                         f"light the board and take it again, or {exc.what_to_do}")


def _named_colourless(image: np.ndarray, exc: KnockcamError) -> KnockcamError:
    """``exc`` with the photo's lack of colour named first when it has none (exposure.without_colour, at
    detect.yaml photo.min_chroma): its tokens could not be scored, and the board is found less often (fixtures
    made grey: oblique_60 estimated 83 mm against 2.6, defocus 11.9 against 2.1; the easy views much as in colour)."""
    from knockcam.exposure import without_colour

    if not without_colour(image, float(settings.load("detect")["photo"]["min_chroma"])):
        return exc
    return KnockcamError(f"{exc.reason} in a photo with no colour (black and white, or a camera's night mode)",
                         "take it in colour: the tokens' sides are told apart by colour (and the board is found "
                         "more often)")


def _mirrored_near(image: np.ndarray, refused: Calibration, board: Board, max_error_mm: float | None) -> bool:
    """Whether a photo whose board was ``refused`` is a mirror image: a mirrored photo's board is often placed
    just over the limit (the oblique_60 fixture mirrored: 3.4 mm against 2.57 as taken). Its colour sets then
    agree better mirrored (mirror.mirror_evidence), but only a board placed near where it lies says so: one
    found in the wrong place can agree mirrored by chance (tuning render 3933, as taken: 10.5 mm, -226). So
    only a board refused within calibrate.yaml mirror.refused_within times the limit counts."""
    from knockcam.calibrate.mirror import mirror_evidence
    from knockcam.calibrate.quality import error_limit

    cfg = settings.load("calibrate")["mirror"]
    near = float(cfg["refused_within"]) * error_limit(max_error_mm)
    return (refused.error_mm is not None and refused.error_mm <= near
            and mirror_evidence(image, refused, board) < -float(cfg["min_evidence"]))


def _larger(image: np.ndarray) -> list[str]:
    """Taking the photo larger, when it is smaller than the automatic method is tuned for (``tuned_px`` across):
    the board is found less often there (calibrate.yaml photo.max_px says how much less). A phone photo cropped
    around the board is often that small: the photo as taken is the one to give."""
    from knockcam.calibrate.calibration import smaller_than_tuned, tuned_px

    w, h = int(image.shape[1]), int(image.shape[0])
    return [f"take it at {tuned_px()} px across or more, not cropped (this one is {w}x{h})"] \
        if smaller_than_tuned((w, h)) else []


def small_in_view(cal: Calibration, board: Board, photo: str = "photo") -> str | None:
    """How much of the ``photo`` (a photo, a camera's frame) the board's end further from the camera spans, when
    ``cal`` places it across less than calibrate.yaml quality.small_end_share of its longer side: the automatic
    method refuses a board that small in a sharp photo far more often (the yaml says how much). None when it
    is larger, not plausibly placed, or the photo itself is smaller than the method is tuned for (``_larger``
    says to take it larger)."""
    from knockcam.calibrate.calibration import smaller_than_tuned
    from knockcam.calibrate.quality import plausible_quad

    most = float(settings.load("calibrate")["quality"]["small_end_share"])
    if smaller_than_tuned(cal.image_size):
        return None
    with np.errstate(all="ignore"):
        corners = cal.corners_px(board.size_mm)  # near-left, near-right, far-right, far-left
    if plausible_quad(corners, cal.image_size) is not None:
        return None
    share = min(np.hypot(*(corners[1] - corners[0])), np.hypot(*(corners[2] - corners[3]))) / max(cal.image_size)
    return None if share >= most else (f"its end further from the camera spans {share:.0%} of the {photo}'s longer "
                                       f"side; {most:.0%} or more is best")


def _closer(cal: Calibration, board: Board) -> str:
    """Retaking the photo closer, when the board is small in it (``small_in_view``); else ""."""
    small = small_in_view(cal, board)
    return "" if small is None else f"retake it closer, the board filling more of the photo ({small})"


def calibrate_from_corners(image: np.ndarray, board: Board, corners_px, method: str = "corners",
                           camera_matrix=None, dist_coeffs=None, max_error_mm: float | None = None) -> Calibration:
    """Four corners the user gave (``method``: typed "corners" or "click"ed), snapped to the printed
    lines where they confirm them (knockcam.calibrate.corners), checked by ``check_corners``."""
    from knockcam.calibrate.corners import ORDER, calibrate_corners, corners_text, snap

    size = (int(image.shape[1]), int(image.shape[0]))
    try:
        given = calibrate_corners(corners_px, board, size, method, camera_matrix, dist_coeffs)
        placed = check_corners(snap(image, given, board), board, image, max_error_mm)
        if placed.grid_share is None:  # accepted unconfirmed: its estimate counts a click error, not a corner far off
            _check_not_far_off(image, board, placed, max_error_mm)
        return placed
    except KnockcamError as exc:  # a refusal: perhaps only the order is wrong
        fits = _another_order(image, board, corners_px, method, camera_matrix, dist_coeffs, max_error_mm)
        if fits is None:
            raise
        again = "click them again in that order, or " if method == "click" else ""
        raise KnockcamError(f"these corners fit the board's printed lines only in another order ({ORDER}; "
                            "near-left is at the GO! end)", f"{again}give --corners \"{corners_text(fits)}\"") from exc


def _check_not_far_off(image: np.ndarray, board: Board, cal: Calibration, max_error_mm: float | None) -> None:
    """KnockcamError when the board, found automatically, lies further from the given corners than the error
    limit allows: the corners' own estimate assumes each is within a click of the board's corner, and a
    typo or a corner clicked on the wrong thing was accepted with ``--max-error`` hundreds of mm off."""
    from knockcam.calibrate.corners import ORDER

    apart = _printed_lines_check(image, cal, board, max_error_mm, snap_first=False).apart_mm
    if apart is not None:
        raise KnockcamError(f"these corners are {apart:.0f} mm from where the board's printed lines put it",
                            f"check that each is on the board's outer corner ({ORDER}), or give no corners (the "
                            "automatic calibration finds this board)")


def _another_order(image: np.ndarray, board: Board, corners_px, method: str, camera_matrix, dist_coeffs,
                   max_error_mm: float | None) -> np.ndarray | None:
    """The given corners in the order the photo's printed lines confirm within the error limit, when the
    order given was refused (started at another corner, mirrored or crossed); the lowest estimate if
    several are (on fixture all_16_tokens only the true order is). None when no other order is."""
    from knockcam.calibrate.corners import calibrate_corners, orders, snap

    size = (int(image.shape[1]), int(image.shape[0]))
    given = np.asarray(corners_px, dtype=np.float64).reshape(-1, 2)
    best, best_error = None, math.inf
    for order in orders(given):
        if np.array_equal(order, given):
            continue
        try:
            placed = snap(image, calibrate_corners(order, board, size, method, camera_matrix, dist_coeffs), board)
            check(placed, max_error_mm)
        except KnockcamError:
            continue
        if placed.grid_share is not None and placed.error_mm < best_error:
            best, best_error = order, placed.error_mm
    return best


def check_corners(cal: Calibration, board: Board, image: np.ndarray,
                  max_error_mm: float | None = None) -> Calibration:
    """Given or clicked corners (snapped or not, knockcam.calibrate.corners), checked: the refusal says
    what helps. Clicking again does not: the estimate counts a fixed click error, or the printed lines,
    which a blurred ``image`` shows poorly and a board small in it (``small_in_view``) at too few pixels."""
    if cal.grid_share is not None:
        try:
            return check(cal, max_error_mm, "the printed lines place the board no better in this photo: "
                                            + _what_to_do(cal, ["lay the marker sheet"], _closer(cal, board)))
        except KnockcamError:
            _refuse_if_blurred(image, cal, board, max_error_mm, ["lay the marker sheet"])
            raise
    from knockcam.calibrate.corners import ORDER

    # the printed lines did not confirm the corners: a corner off the board's outer corner, or a photo too
    # small or unsharp to show them; four points alone are then a few millimetres off at the far end
    return check(cal, max_error_mm, "the board's printed lines did not place it from these corners: check that each is "
                                    f"on the board's outer corner ({ORDER}), retake the photo closer and in "
                                    "focus, or lay the marker sheet")


def offered_max_error(cal: Calibration) -> float | None:
    """The ``--max-error`` a refusal of this calibration offers, or None. Offered when the printed grid
    placed the board (automatic, or corners snapped to it), most of the grid was seen on its lines,
    and the estimate is within calibrate.yaml quality.accept_max_mm: a steep or distant view, whose
    far end is small in the photo. The estimate rounded up to half a millimetre. Never in a photo smaller
    than the automatic method is tuned for (``tuned_px`` across), where the estimate under-reads: on
    calibration tuning renders 3906/0-59 (lens not given), of the refused boards estimated 3-6 mm, 7 of
    15 lay further off than their estimate at 640x480 (one 1175 mm), 4 of 12 at 960x540, 1 of 5 at 1280x720."""
    from knockcam.calibrate.calibration import smaller_than_tuned

    cfg = settings.load("calibrate")["quality"]
    share = cal.grid_share
    if share is None or share < float(cfg["accept_min_grid_share"]) or cal.error_mm is None \
            or cal.error_mm > float(cfg["accept_max_mm"]) or smaller_than_tuned(cal.image_size):
        return None
    return math.ceil(cal.error_mm * 2) / 2


def _what_to_do(cal: Calibration, options: list[str], closer: str = "") -> str:
    """``options`` joined into one hint, after ``closer`` (retaking a photo whose board is small in it,
    ``_closer``) when given; with ``offered_max_error``, also retaking the photo from closer and higher
    above (unless ``closer`` said so), or accepting it with ``--max-error`` (its tokens then carry the error)."""
    accept = offered_max_error(cal)
    options = ([closer] if closer else []) + options
    if accept is not None:
        options = options + ([] if closer else ["retake it closer and from higher above"]) + [
            f"accept this one with --max-error {accept:g} (more close calls are then flagged)"]
    if len(options) == 1:
        return options[0]
    serial = len(options) > 2 or "," in options[0]  # "retake it in focus, holding the camera still, or ..."
    return ", ".join(options[:-1]) + (", or " if serial else " or ") + options[-1]
