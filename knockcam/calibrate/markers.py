"""ArUco marker cards laid at the board's corners: the printable sheet and their detection.

Each card is a square of ``card_mm`` with a marker in its middle. Lay it on the table outside the
board, one corner of the card touching the board's corner and its sides along the board's edges,
the printed arrow pointing to the far end. The marker's centre is then at ``offsets_mm`` from that
board corner (calibration/README.md). Sixteen marker corners give a least-squares homography of the
table, where the cards lie, and a residual; the cards' placement by hand (about 1 mm) is not in that
residual. The board's face lies a board's thickness above the table: seen obliquely, a few mm of it
move the corners by as much, so the board's printed lines measure that lift, and any hump of a board
that does not lie flat (``grid.fit_lift``). Cards a blur hides are looked for in the photo with the
blur read off it undone, and the face is then read in that sharpened photo (``_deblurred_look``).
Three cards only start the printed grid's fit, which measures the corner they leave out.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import cv2
import numpy as np

from knockcam import settings
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration, resize_matrix, unscaled_px, working_copy
from knockcam.calibrate.quality import board_corners_mm, homography_from_points, plausible, residual_mm
from knockcam.calibrate.sharpen import blur_readings, sharpened
from knockcam.errors import KnockcamError

CARD_MM = 80.0
CORNER_NAMES = ("near-left", "near-right", "far-right", "far-left")


def _cfg() -> dict:
    return settings.load("calibrate")["markers"]


@dataclass(frozen=True)
class Cards:
    """The sheet's marker cards found in a photo: id -> (4, 2) sub-pixel corners in the photo's pixels, and the
    grey photo the board's face is read in. That is the photo itself, or, when some cards were found only
    with the photo's blur undone, the photo sharpened for that blur: its printed lines, blurred, read the
    face several mm too high (``_deblurred_look``)."""

    corners: dict[int, np.ndarray]
    face_photo: np.ndarray
    sharpened_for: str = ""  # the blur undone, in words ("" for the photo itself)

    @property
    def seen(self) -> int:
        """How many of the sheet's cards were found (other ArUco ids are not the sheet's)."""
        return _seen(self.corners)

    @property
    def enough(self) -> bool:
        """Whether enough of the sheet's cards were found to calibrate on (``min_markers``)."""
        return self.seen >= int(_cfg()["min_markers"])


def dictionary():
    return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, _cfg()["dictionary"]))


def marker_corners_mm(board: Board) -> dict[int, np.ndarray]:
    """id -> the marker's 4 corners in board mm, in ArUco's order (its top-left, top-right, bottom-right,
    bottom-left, the top towards the board's far end)."""
    cfg = _cfg()
    w, l = board.size_mm
    s = float(cfg["marker_mm"]) / 2
    out = {}
    for marker_id, corner, off in zip(cfg["ids"], [(0, 0), (w, 0), (w, l), (0, l)], cfg["offsets_mm"]):
        cx, cy = corner[0] + off[0], corner[1] + off[1]
        out[int(marker_id)] = np.array([(cx - s, cy + s), (cx + s, cy + s), (cx + s, cy - s), (cx - s, cy - s)])
    return out


def detect_markers(image: np.ndarray, asked: bool = True) -> Cards:
    """The marker cards in the photo. Cards missed at first (small, blurred) are looked for again in the photo
    enlarged and sharpened (calibrate.yaml ``markers.second_look``), then with its blur undone
    (``_deblurred_look``). ``asked``: the user calibrates with the cards; otherwise (the default flow, which
    falls back to the automatic method) the blur is undone only when some card was seen, sparing every photo
    without cards its cost (0.1-0.3 s)."""
    gray = image if image.ndim == 2 else cv2.cvtColor(image[..., :3], cv2.COLOR_BGR2GRAY)
    found = _look(gray)
    if _seen(found) == len(_cfg()["ids"]) or not (asked or _seen(found)):
        return Cards(found, gray)
    return _deblurred_look(gray, found)


def _look(gray: np.ndarray) -> dict[int, np.ndarray]:
    """id -> corners of the cards found in ``gray`` as it is, and of those missed there found enlarged and sharpened."""
    found = _detect(gray)
    if _seen(found) < len(_cfg()["ids"]):
        again = _cfg()["second_look"]
        # enlarged, but not past max_px: a photo that large is searched as it is, sharpened
        scale = max(1.0, min(float(again["scale"]), float(again["max_px"]) / max(gray.shape)))
        weight = float(again["sharpen"])
        blurred = cv2.GaussianBlur(gray, (0, 0), float(again["sharpen_px"]))
        sharp = cv2.addWeighted(gray, 1 + weight, blurred, -weight, 0)
        big = cv2.resize(sharp, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC) if scale > 1 else sharp
        for i, corners in _detect(big, float(again["error_correction"])).items():
            found.setdefault(i, unscaled_px(corners, scale))
    return found


def _seen(corners: dict[int, np.ndarray]) -> int:
    return sum(int(i) in corners for i in _cfg()["ids"])


def _deblurred_look(gray: np.ndarray, found: dict[int, np.ndarray]) -> Cards:
    """The cards ``found`` in ``gray``, with those they lack taken from the photo sharpened for a blur read off
    it (knockcam.calibrate.sharpen: a shaken or unfocused photo smears a small card's squares together), the
    reading that finds the most cards first; the face is then read in that sharpened photo. The blur is read
    and undone at the size the automatic method searches (``working_copy``), where its reach is tuned. A blur
    undone with a symmetric kernel does not move the corners."""
    small = working_copy(gray)
    to_photo = np.linalg.inv(resize_matrix(gray.shape[::-1], small.shape[::-1]))
    looks = []
    for blur in blur_readings(small):
        sharp = sharpened(small, blur)
        looks.append(Cards({i: cv2.perspectiveTransform(c.reshape(-1, 1, 2), to_photo).reshape(-1, 2)
                            for i, c in _look(sharp).items()}, sharp, blur.describe()))
    looks.sort(key=lambda look: look.seen, reverse=True)
    corners = dict(found)
    for look in looks:
        for i, c in look.corners.items():
            corners.setdefault(i, c)
    if _seen(corners) == _seen(found):
        return Cards(found, gray)
    best = looks[0]
    face = best.face_photo if small is gray else cv2.resize(best.face_photo, gray.shape[::-1],
                                                            interpolation=cv2.INTER_CUBIC)
    return Cards(corners, face, best.sharpened_for)


def _detect(gray: np.ndarray, error_correction: float | None = None) -> dict[int, np.ndarray]:
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = getattr(cv2.aruco, _cfg()["corner_refinement"])
    if error_correction is not None:
        params.errorCorrectionRate = error_correction
    corners, ids, _ = cv2.aruco.ArucoDetector(dictionary(), params).detectMarkers(gray)
    found: dict[int, np.ndarray] = {}
    for c, i in zip(corners, [] if ids is None else ids.ravel()):
        found.setdefault(int(i), c.reshape(4, 2).astype(np.float64))
    return found


def _too_few(found: dict[int, np.ndarray], expected: dict[int, np.ndarray], image_size: tuple[int, int]) -> str:
    """The refusal when fewer than ``min_markers`` cards were found; from two on, ``_missing`` says why."""
    ids = [i for i in expected if i in found]
    advice = "frame all four cards, closer and in focus, or give --corners"
    if not ids:
        return ("markers: found none of the 4 marker cards: lay the sheet's cards at the board's corners "
                f"(calibration/README.md), {advice}")
    if len(ids) == 1:
        names = dict(zip(expected, CORNER_NAMES))
        why = (f"missing {_listed([names[i] for i in expected if i not in found])}; the one found is "
               f"{_side_px(found[ids[0]]):.0f} px across")
    else:
        why = _missing(found, expected, image_size)
    return f"markers: found {len(ids)} of 4 marker cards ({why}): {advice}"


def _missing(found: dict[int, np.ndarray], expected: dict[int, np.ndarray], image_size: tuple[int, int]) -> str:
    """Where the cards not found should be, as the table's homography through two or more found ones puts them:
    outside the photo, too small to read (under calibrate.yaml ``markers.small_card_px`` across), or in view and
    large enough (covered, blurred)."""
    ids = [i for i in expected if i in found]
    names = dict(zip(expected, CORNER_NAMES))
    table = homography_from_points(np.vstack([expected[i] for i in ids]), np.vstack([found[i] for i in ids]))
    small = float(_cfg()["small_card_px"])
    out, tiny, unread = [], [], []
    for i in expected:
        if i in found:
            continue
        where = cv2.perspectiveTransform(expected[i].reshape(-1, 1, 2), table).reshape(-1, 2)
        x, y = where.mean(axis=0)
        side = _side_px(where)
        if not (0 <= x < image_size[0] and 0 <= y < image_size[1]):
            out.append(names[i])
        else:
            (tiny if side < small else unread).append((names[i], f"{side:.0f}"))
    why = []
    if tiny:
        why.append(f"the {_listed([n for n, _ in tiny])} {_cards(tiny)} would be {_listed([s for _, s in tiny])} px "
                   f"across here, too small to read (under {small:.0f} px a card is often missed)")
    if out:
        why.append(f"the {_listed(out)} {_cards(out)} {'lies' if len(out) == 1 else 'lie'} outside the photo")
    if unread:
        why.append(f"the {_listed([n for n, _ in unread])} {_cards(unread)} would be "
                   f"{_listed([s for _, s in unread])} px across, in view: covered, or blurred?")
    return "; ".join(why)


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _cards(items: list) -> str:
    return "card" if len(items) == 1 else "cards"


def _side_px(corners: np.ndarray) -> float:
    """How large a card's marker looks in the photo: the square root of its area (px)."""
    return float(np.sqrt(abs(cv2.contourArea(np.asarray(corners, np.float32).reshape(-1, 2)))))


def calibrate_markers(image: np.ndarray, board: Board, camera_matrix=None, dist_coeffs=None,
                      cards: Cards | None = None) -> Calibration:
    """The homography through the four cards' marker corners; error = RMS residual of those corners in board mm.
    With three cards seen, the board's printed grid must confirm the corner they leave unmeasured.
    ``cards``: ``detect_markers``' answer for this photo, when the caller has it already."""
    cfg = _cfg()
    cards = detect_markers(image) if cards is None else cards
    found = cards.corners
    expected = marker_corners_mm(board)
    ids = [i for i in expected if i in found]
    size = (image.shape[1], image.shape[0])
    if len(ids) < int(cfg["min_markers"]):
        raise KnockcamError(_too_few(found, expected, size))
    mm = np.vstack([expected[i] for i in ids])
    px = np.vstack([found[i] for i in ids])
    if camera_matrix is not None and dist_coeffs is not None:
        px = cv2.undistortPoints(px.reshape(-1, 1, 2), camera_matrix, dist_coeffs, P=camera_matrix).reshape(-1, 2)
    on_table = homography_from_points(mm, px)
    why = plausible(on_table, board, size)
    if why:
        raise KnockcamError(f"markers: the cards do not sit at the board's corners ({why}); check calibration/README.md")
    rms, _ = residual_mm(on_table, mm, px)
    gray = cards.face_photo
    if camera_matrix is not None and dist_coeffs is not None:
        gray = cv2.undistort(gray, camera_matrix, dist_coeffs)
    face, lift_mm, lift_error, lift_source = face_above_table(gray, on_table, board)
    deblurred = (f"; the cards missed at first, and the face, found in the photo sharpened for {cards.sharpened_for} "
                 "read off it") if cards.sharpened_for else ""
    cal = Calibration(method="markers", image_size=size, homography=face.homography, hump=face.hump,
                      camera_matrix=camera_matrix, dist_coeffs=dist_coeffs, error_mm=float(np.hypot(rms, lift_error)),
                      error_source=f"residual: RMS of {len(px)} marker corners ({len(ids)} cards) mapped to "
                                   f"board mm ({rms:.2f} mm), with the board's face {lift_mm:.1f} mm above the cards "
                                   f"({lift_source}: {lift_error:.2f} mm at the worst corner); card placement by hand "
                                   f"not included{deblurred}")
    return _confirmed_by_grid(image, board, cal, found, expected) if len(ids) < len(expected) else cal


def face_above_table(gray: np.ndarray, on_table: np.ndarray, board: Board) -> tuple[Calibration, float, float, str]:
    """The board's face from the homography of the table the cards lie on: (a Calibration with its homography
    and hump, how far above the table it lies at the corners in mm, what that height's uncertainty moves the
    worst board corner by in mm, where the height came from). The printed lines give the height and the hump
    when they are seen (a height no board has, auto.thickness_mm, taken at the nearest one can: a hump read
    in its place pulled it there); otherwise calibrate.yaml's thickness, the face flat."""
    from knockcam.calibrate.calibration import Hump
    from knockcam.calibrate.edges import up_px
    from knockcam.calibrate.grid import fit_lift

    cfg = _cfg()["face"]
    size = (gray.shape[1], gray.shape[0])
    up = up_px(on_table, board, size)
    low, high = cfg["read_mm"]
    lift = fit_lift(gray, on_table, up, board, (low, high))
    if lift is not None and not _believed(lift, cfg):
        lift = fit_lift(gray, on_table, up, board, (low, high), hump=False)
    if lift is not None and _believed(lift, cfg):
        height, unsure, bow = lift.mm, float(cfg["se_factor"]) * lift.se_mm, lift.hump
        thinnest, thickest = (float(v) for v in settings.load("calibrate")["auto"]["thickness_mm"])
        taken = plus = ""
        if not thinnest <= lift.mm <= thickest:  # no board is that thin (thick): the height traded for a hump
            height = min(max(lift.mm, thinnest), thickest)
            moved = abs(lift.mm - height)
            unsure += moved  # the read's doubt, and how far the height was moved from it
            taken = (f" as {lift.mm:.2f} mm, taken at a board's {'thinnest' if lift.mm < thinnest else 'thickest'}"
                     f" (auto.thickness_mm)")
            plus = f", plus the {moved:.2f} mm it was moved"
            again = fit_lift(gray, on_table, up, board, (low, high), height_mm=height) if any(bow) else None
            bow = again.hump if again is not None and _believed(again, cfg) else (0.0, 0.0)
        humped = f", a hump of {bow[0]:.1f} mm along it and {bow[1]:.1f} mm across" if any(bow) else ""
        source = (f"read off {lift.samples} printed-line samples{taken}{humped}; {cfg['se_factor']} x its standard "
                  f"error{plus}")
    else:
        height, unsure, bow = float(cfg["thickness_mm"]), float(cfg["unsure_mm"]), (0.0, 0.0)
        seen = "not read" if lift is None else f"read as {lift.mm:.1f} mm, outside {low}-{high} mm"
        source = f"calibrate.yaml's, the printed lines {seen}; give or take {unsure:g} mm"
    step = np.outer(up, [0.0, 0.0, 1.0])
    raw = on_table + height * step
    hump = Hump(bow[0], bow[1], tuple(board.size_mm), tuple(float(v) for v in up / raw[2, 2])) if any(bow) else None
    face = Calibration(method="markers", image_size=size, homography=raw / raw[2, 2], hump=hump)
    # what ``unsure`` mm more of height would move the board's corners by, in board mm
    moved = cv2.perspectiveTransform(board_corners_mm(board).reshape(-1, 1, 2), on_table + (height + unsure) * step)
    back = cv2.perspectiveTransform(moved, np.linalg.inv(face.homography)).reshape(-1, 2)
    return face, float(height), float(np.linalg.norm(back - board_corners_mm(board), axis=1).max()), source


def _believed(lift, cfg: dict) -> bool:
    """Whether a read of the board's face is one a board can give: its height in ``read_mm``, and its hump
    none, or as high as the lines show one (auto.bow_min_mm) and a board may have (``max_hump_mm``)."""
    low, high = cfg["read_mm"]
    highest = max(abs(lift.hump[0]), abs(sum(lift.hump)))
    least = float(settings.load("calibrate")["auto"]["bow_min_mm"])
    shown = highest == 0 or least <= highest <= float(cfg["max_hump_mm"])
    return low <= lift.mm <= high and shown


def _confirmed_by_grid(image: np.ndarray, board: Board, cal: Calibration, found: dict[int, np.ndarray],
                       expected: dict[int, np.ndarray]) -> Calibration:
    """Three cards' calibration (the cards ``found`` of those ``expected``) placed by the board's printed grid,
    with the grid's error estimate; a refusal says where the missing card should be (``_missing``).

    Three cards leave the fourth corner extrapolated: their residual says nothing of it (a scene with
    0.7 mm of residual had that corner 6 mm off). The printed grid measures the whole board, so the
    cards only start it; where the grid does not confirm them, the calibration is refused.
    """
    from dataclasses import replace

    from knockcam.calibrate.auto import snap_to_grid

    placed = snap_to_grid(image, board, cal.corners_px(board.size_mm), cal.camera_matrix, cal.dist_coeffs)
    if placed is None:
        why = _missing(found, expected, (image.shape[1], image.shape[0]))
        raise KnockcamError(f"markers: found 3 of 4 marker cards ({why}), and the board's printed lines do not "
                            "confirm where that corner lies: frame all four cards, uncovered, closer and in focus, or "
                            "give --corners")
    missing = next(name for i, name in zip(expected, CORNER_NAMES) if i not in found)
    return replace(placed, method="markers",
                   error_source=f"3 of 4 cards ({missing} unseen), placed by the printed grid: {placed.error_source}")


def card_image(marker_id: int, px_per_mm: float, name: str = "") -> np.ndarray:
    """One card: white square, marker in the middle, an arrow to the far end, the corner to touch marked."""
    cfg = _cfg()
    size = int(round(CARD_MM * px_per_mm))
    card = np.full((size, size), 255, np.uint8)
    m = int(round(float(cfg["marker_mm"]) * px_per_mm))
    marker = cv2.aruco.generateImageMarker(dictionary(), int(marker_id), m, borderBits=1)
    o = (size - m) // 2
    card[o:o + m, o:o + m] = marker
    cv2.rectangle(card, (0, 0), (size - 1, size - 1), 0, max(1, int(0.3 * px_per_mm)))
    font = 0.09 * px_per_mm
    cv2.putText(card, f"{name} (id {marker_id})", (int(2 * px_per_mm), int(7 * px_per_mm)),
                cv2.FONT_HERSHEY_SIMPLEX, font, 0, max(1, int(0.25 * px_per_mm)), cv2.LINE_AA)
    cv2.arrowedLine(card, (size // 2, int(o - 2 * px_per_mm)), (size // 2, int(o - 8 * px_per_mm)) if o > 10 * px_per_mm
                    else (size // 2, 2), 0, max(1, int(0.4 * px_per_mm)), tipLength=0.4)
    cv2.putText(card, "far end", (size // 2 + int(2 * px_per_mm), int(o - 3 * px_per_mm)),
                cv2.FONT_HERSHEY_SIMPLEX, font * 0.8, 0, max(1, int(0.2 * px_per_mm)), cv2.LINE_AA)
    return card


def touch_corner(marker_index: int) -> tuple[int, int]:
    """Which corner of the card (0/1 for left/right, 0/1 for top/bottom) touches the board's corner."""
    off = _cfg()["offsets_mm"][marker_index]
    return (0 if off[0] > 0 else 1, 1 if off[1] > 0 else 0)


def sheet_image(dpi: int = 300) -> np.ndarray:
    """An A4 page (portrait) with the four cards at true size, cut lines and the touching corners marked."""
    ppm = dpi / 25.4
    page = np.full((int(round(297 * ppm)), int(round(210 * ppm))), 255, np.uint8)
    cfg = _cfg()
    for k, marker_id in enumerate(cfg["ids"]):
        card = card_image(int(marker_id), ppm, CORNER_NAMES[k])
        size = card.shape[0]
        col, row = k % 2, k // 2
        x0 = int(round((15 + col * (CARD_MM + 20)) * ppm))
        y0 = int(round((40 + row * (CARD_MM + 30)) * ppm))
        page[y0:y0 + size, x0:x0 + size] = card
        tx, ty = touch_corner(k)
        cx, cy = x0 + tx * (size - 1), y0 + ty * (size - 1)
        cv2.circle(page, (cx, cy), int(3 * ppm), 0, -1)
        cv2.putText(page, f"touch the board's {CORNER_NAMES[k]} corner here", (x0, y0 + size + int(8 * ppm)),
                    cv2.FONT_HERSHEY_SIMPLEX, 0.1 * ppm, 0, max(1, int(0.25 * ppm)), cv2.LINE_AA)
    cv2.putText(page, f"knockcam marker sheet - print at 100% (A4, {dpi} dpi). Black squares must measure "
                      f"{cfg['marker_mm']} mm.", (int(15 * ppm), int(20 * ppm)), cv2.FONT_HERSHEY_SIMPLEX, 0.1 * ppm,
                0, max(1, int(0.25 * ppm)), cv2.LINE_AA)
    # a 100 mm ruler to check the print scale
    y = int(round(270 * ppm))
    x0 = int(round(15 * ppm))
    cv2.line(page, (x0, y), (x0 + int(round(100 * ppm)), y), 0, max(1, int(0.4 * ppm)))
    for mm in range(0, 101, 10):
        x = x0 + int(round(mm * ppm))
        cv2.line(page, (x, y - int(3 * ppm)), (x, y), 0, max(1, int(0.3 * ppm)))
    cv2.putText(page, "100 mm", (x0 + int(104 * ppm), y), cv2.FONT_HERSHEY_SIMPLEX, 0.1 * ppm, 0,
                max(1, int(0.25 * ppm)), cv2.LINE_AA)
    return page


def png_with_dpi(image: np.ndarray, dpi: int) -> bytes:
    """A PNG that states its print resolution (pHYs chunk), so it prints at true size."""
    ok, buf = cv2.imencode(".png", image)
    if not ok:
        raise KnockcamError("cannot encode a PNG of the sheet")
    data = buf.tobytes()
    ppm = int(round(dpi / 0.0254))
    body = b"pHYs" + struct.pack(">IIB", ppm, ppm, 1)
    chunk = struct.pack(">I", 9) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    end_ihdr = 8 + 4 + 4 + 13 + 4  # signature, IHDR length, type, data, CRC
    return data[:end_ihdr] + chunk + data[end_ihdr:]
