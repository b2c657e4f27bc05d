"""The evidence picture for one scored photo: what a referee looks at when a call is disputed.

Left, the photo as taken with the board outline, every token's base and the space it was given
(with its coverage); below it a close-up of each close call. Middle, the photo rectified to a
top-down view with the board file's layout over it and every base drawn to scale. Right, the
token list, the payout table of ``knockcam round`` (same table function), the Free Parking split,
what each close call is worth, and a legend. Close calls are magenta everywhere: both candidate
spaces dashed, the margin in mm written beside them and drawn as a ring.
"""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import cv2
import numpy as np

from knockcam.assign import NOT_A_TOKEN, doubt_words
from knockcam.board.geometry import NO_SPACE, OFF_BOARD
from knockcam.board.topdown import TopDown
from knockcam.report import draw as d
from knockcam.sides import SIDES

BODY_H = 980  # pixels of the three columns under the header
HEADER_H = 84
PHOTO_W = 1120
TEXT_W = 1000
GAP = 16
TILE = 250  # close-up size in pixels
TILE_HALF_MM = 32.0  # a close-up shows 64 mm of board around the base centre
TEXT_BGR = {"red": (30, 30, 190), "yellow": (0, 135, 185), "green": (40, 125, 20), "blue": (185, 85, 10)}


# --- words ------------------------------------------------------------------------------------
def space_name(board, category: str | None) -> str:
    """A category in words: a space's printed name, 'no space' or 'off the board'."""
    if category is None or category == NO_SPACE:
        return "no space"
    if category == OFF_BOARD:
        return "off the board"
    return board.space(category).name if board.has_space(category) else category


def call_words(board, position) -> str:
    """Where a token was called, in words: the space, or no space / off the board (or not a token at all)."""
    if "not_a_token" in position.flags:
        return "not a token"
    if position.state == "on_space":
        return space_name(board, position.space)
    return space_name(board, position.state)


def human_call_words(board, position) -> str:
    """A person's call in words, with the camera's beside it (``knockcam.assign.human_call`` kept it as runner-up)."""
    return f"a human's call (the camera's: {space_name(board, position.runner_up)} {position.runner_up_coverage:.0%})"


def token_notes(board, position) -> list[str]:
    """Why a token's call needs a look, in words: the close call with its rival space, then its other flags."""
    notes = []
    if "close_call" in position.flags:
        share = f" ({position.runner_up_coverage:.0%})" if position.runner_up_coverage >= 0.005 else ""
        notes.append(f"CLOSE CALL vs {space_name(board, position.runner_up)}{share}")
    for flag in position.flags:
        if flag == "human_call":
            notes.append(human_call_words(board, position))
        elif flag not in ("close_call", "off_board", "not_a_token"):
            notes.append(flag.replace("_", " "))
    return notes


def token_lines(scored) -> list[str]:
    """The token list as fixed-width lines: number, side, call, coverage, margin, confidence, notes."""
    board = scored.board
    out = [f"{'#':>2}  {'side':<6} {'rests on (S3)':<24} {'cover':>5} {'margin':>7} {'conf':>4}  note"]
    for i, p in enumerate(scored.positions, 1):
        out.append(f"{i:>2}  {p.side:<6} {call_words(board, p)[:24]:<24} {p.coverage:>5.0%} "
                   f"{p.margin_mm:>5.1f}mm {p.token.confidence:>4.2f}  {'; '.join(token_notes(board, p))}")
    if not scored.positions:
        out.append("    no tokens found")
    return out


def round_text(scored, width: int) -> list[str]:
    """The payout table and pot line of ``knockcam round`` (its own table function), as plain ASCII lines."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from knockcam.report.tables import round_tables

    sides, pot, ledger = round_tables(scored.round, scored.board, title="Payout", width=width)
    console = Console(file=io.StringIO(), width=width, record=True, color_system=None, emoji=False,
                      legacy_windows=False)
    for renderable in (sides, pot, ledger):
        if isinstance(renderable, Table):
            renderable.box = box.ASCII2
            renderable.title_style = ""
        console.print(renderable)
    return [line.rstrip() for line in console.export_text(styles=False).splitlines()]


def free_parking_line(scored) -> str:
    """E4 in one line: who took the pot and how it was split."""
    r = scored.round
    winners = {side: amount for side, amount in r.free_parking.items() if amount}
    if not winners:
        return f"Free Parking (E4): no winner, the pot stays at M{r.pot_after:,d}"
    split = ", ".join(f"{side} M{amount:,d}" for side, amount in winners.items())
    kept = f", M{r.pot_after - r.refill:,d} stays" if r.pot_after - r.refill else ""
    return f"Free Parking (E4): {split}{kept}" + (f"; bank refills to M{r.pot_after:,d} (N2)" if r.refill else "")


def stake_lines(scored) -> list[str]:
    """For each call for a human: what the payouts would be if it went the other way (a close call to its
    runner-up, a token in doubt itself to no token at all)."""
    out = []
    for call in scored.close_calls:
        p = scored.positions[call.index]
        change = ", ".join(f"{side} {amount:+,d}" for side, amount in call.cash_change.items()) or "no payout changes"
        if call.other == NOT_A_TOKEN:
            out.append(f"#{call.index + 1} {p.side} ({doubt_words(p)}) no token at all: {change}")
            continue
        where = "off the board" if call.other == OFF_BOARD else f"on {space_name(scored.board, call.other)}"
        out.append(f"#{call.index + 1} {p.side} {where} instead: {change}")
    return out


def hidden_lines(scored) -> list[str]:
    """For each hidden area: where it is, and what to do (a token under it may not be seen)."""
    out = []
    for area in scored.hidden:
        spaces = [space_name(scored.board, s) for s in scored.hidden_spaces(area)]
        where = ", ".join(spaces) if spaces else "a part of the board with no space"
        out.append(f"something covers the board ({area.area_mm2 / 100:.0f} cm2) over {where}: a token there may not be "
                   "seen; look, or move what covers it and score again")
    return out


def unseen_line(scored) -> str | None:
    """The tokens of the playing sides the photo does not show (counted as out), and what to do; None if none."""
    unseen = scored.unseen
    if not unseen:
        return None
    what = ", ".join(f"{side} {n}" for side, n in unseen.items())
    return (f"not in the photo: {what} token{'s' if sum(unseen.values()) > 1 else ''}, counted as out (off the "
            "board); if one is hidden on the board (under a hand, behind a cup), move what hides it and score again, "
            "or add it with --add SIDE=SPACE")


def _paid_sides(scored) -> dict[str, str]:
    """Space id -> the side it pays in the round (E3a: on a shared property, the side higher in turn order)."""
    if scored.round is None:
        return {}
    return {e.space: e.side for e in scored.round.ledger if e.rule == "E3a" and e.kind == "money" and e.space}


# --- marks on a picture -----------------------------------------------------------------------
def draw_hidden(image: np.ndarray, scored, to_px: d.ToPx, px_per_mm: float) -> None:
    """The hidden areas: hatched in magenta, so the eye goes there (in place)."""
    line = max(2, int(round(px_per_mm * 0.6)))
    for area in scored.hidden:
        poly = to_px(np.asarray(area.outline_mm, np.float64))
        d.fill_alpha(image, [poly], d.CLOSE, 0.2)
        d.dashed(image, poly, d.CLOSE, line + 1, halo=1)


def draw_calls(image: np.ndarray, scored, to_px: d.ToPx, px_per_mm: float, *, label_scale: float = 0.5,
               only: set[int] | None = None, numbers: bool = True, fills: bool = True) -> None:
    """Given spaces, close-call candidates, bases, margins and labels, drawn through ``to_px`` (in place)."""
    board = scored.board
    radius = board.token.base_diameter_mm / 2.0
    chosen = [i for i in range(len(scored.positions)) if only is None or i in only]
    line = max(2, int(round(px_per_mm * 0.6)))
    # the space each token was given, in its side's colour; a property tokens of several sides share, in the
    # colour of the side it pays (E3a), as the ledger says (close calls: both candidates, dashed magenta)
    paid, drawn = _paid_sides(scored), set()
    for i in chosen:
        p = scored.positions[i]
        if p.ambiguous or "not_a_token" in p.flags or p.state != "on_space" or p.space in drawn:
            continue
        drawn.add(p.space)
        colour = d.side_bgr(paid.get(p.space, p.side))
        poly = to_px(d.densify(board.space(p.space).polygon))
        if fills:
            d.fill_alpha(image, [poly], colour, 0.28)
        d.polyline(image, poly, colour, line, halo=1)
    for i in chosen:
        p = scored.positions[i]
        if not p.ambiguous:
            continue
        for category in (p.space, p.runner_up):
            if category and board.has_space(category):
                d.dashed(image, to_px(d.densify(board.space(category).polygon)), d.CLOSE, line + 1, halo=1)
    # bases: the ring of the base disc (its side's colour; magenta for a close call) and its centre; the
    # labels after every ring, beside their own and clear of the others' (a ring drawn later never covers one)
    rings: list[tuple[str, np.ndarray, float, object]] = []
    for i in chosen:
        p = scored.positions[i]
        xy = np.asarray(p.token.xy_mm, dtype=np.float64)
        ring = to_px(d.circle_mm(xy, radius))
        centre = to_px([xy])[0]
        if not (np.isfinite(centre).all() and np.abs(centre).max() < 1e5):
            continue  # not in this picture (a wild calibration puts it at infinity)
        c = tuple(int(v) for v in d.as_int([centre])[0])
        if p.ambiguous and p.margin_mm * px_per_mm >= 3:
            d.dashed(image, to_px(d.circle_mm(xy, p.margin_mm, 64)), d.CLOSE, 1, dash=5, gap=4)
        ink = d.MUTED if "not_a_token" in p.flags else d.CLOSE if p.ambiguous else d.side_bgr(p.side)
        d.polyline(image, ring, ink, max(2, line), halo=1)
        cv2.circle(image, c, max(2, line), (0, 0, 0), -1, cv2.LINE_AA)
        cv2.circle(image, c, max(1, line - 1), d.side_bgr(p.side), -1, cv2.LINE_AA)
        if p.state == OFF_BOARD:
            r = max(4, int(radius * px_per_mm * 0.7))
            cv2.line(image, (c[0] - r, c[1] - r), (c[0] + r, c[1] + r), (0, 0, 0), 2, cv2.LINE_AA)
            cv2.line(image, (c[0] - r, c[1] + r), (c[0] + r, c[1] - r), (0, 0, 0), 2, cv2.LINE_AA)
        if numbers:
            rings.append((_label_text(p, i), centre, float(np.max(np.linalg.norm(ring - centre, axis=1))), p))
    boxes = [(c[0] - r, c[1] - r, c[0] + r, c[1] + r) for _, c, r, _ in rings]
    for text, centre, extent, p in rings:
        _place_label(image, text, centre, extent, boxes, p, label_scale)


def _label_text(p, i: int) -> str:
    if "not_a_token" in p.flags:
        return f"#{i + 1} not a token"
    if "human_call" in p.flags:
        return f"#{i + 1} human's call"
    if "added_by_hand" in p.flags:
        return f"#{i + 1} added by hand"
    if "close_call" in p.flags:  # a lying token's base is placed from its body: said, as the close-ups say it
        lying = " fallen" if "fallen" in p.flags else " maybe fallen" if "maybe_fallen" in p.flags else ""
        return f"#{i + 1} {p.coverage:.0%} close {p.margin_mm:.1f}mm{lying}"
    if p.ambiguous:  # in doubt for another reason: a disagreement, a doubted or extra token
        return f"#{i + 1} {p.coverage:.0%} look: {doubt_words(p)}"
    if p.state == OFF_BOARD:
        return f"#{i + 1} off"
    if p.state == NO_SPACE:
        return f"#{i + 1} no space"
    return f"#{i + 1} {p.coverage:.0%}"


def _place_label(image, text, centre, extent, boxes, p, scale) -> None:
    """Put a label beside a base where it overlaps no earlier label: right, left, below, above, then further out."""
    w, h, base = d.text_size(text, scale)
    H, W = image.shape[:2]

    def box_of(org):
        return (org[0] - 3, org[1] - h / 2 - 3, org[0] + w + 3, org[1] + h / 2 + base + 2)

    def free(b):
        inside = b[0] >= 0 and b[1] >= 0 and b[2] < W and b[3] < H
        return inside and all(b[2] < o[0] or b[0] > o[2] or b[3] < o[1] or b[1] > o[3] for o in boxes)

    cx, cy = centre
    candidates = []
    for ring in range(4):
        gap, step = extent + 5 + ring * (h + 8), ring * (h + 8)
        candidates += [(cx + gap, cy), (cx - gap - w, cy), (cx - w / 2, cy + gap + h), (cx - w / 2, cy - gap - h),
                       (cx + gap, cy + step), (cx + gap, cy - step), (cx - gap - w, cy + step), (cx - gap - w, cy - step)]
    org = next((c for c in candidates if free(box_of(c))), candidates[0])
    pushed = org[0] > cx + extent + 6 + h or org[0] + w < cx - extent - 6 - h or abs(org[1] - cy) > extent + h
    if pushed:
        # a label pushed away from its base gets a leader line back to it
        near = (min(max(centre[0], org[0]), org[0] + w), org[1])
        cv2.line(image, tuple(int(v) for v in d.as_int([centre])[0]), tuple(int(v) for v in d.as_int([near])[0]),
                 (0, 0, 0), 1, cv2.LINE_AA)
    if p.ambiguous:
        bg, fg = d.CLOSE, (255, 255, 255)
    elif p.state != "on_space":
        bg, fg = (40, 40, 40), (255, 255, 255)
    else:
        bg, fg = d.side_bgr(p.side), d.side_ink(p.side)
    boxes.append(d.label(image, text, org, scale, color=fg, bg=bg, border=(0, 0, 0)))


def draw_layout(image: np.ndarray, board, to_px: d.ToPx, color=(255, 255, 0), thickness: int = 1) -> None:
    """The board file's space outlines (thin) and the board edge (thicker), through ``to_px``."""
    for space in board.spaces:
        d.polyline(image, to_px(d.densify(space.polygon)), color, thickness)
    d.polyline(image, to_px(d.densify(d.board_outline(board), 5.0)), (255, 255, 255), thickness + 1, halo=1)
    bw = board.size_mm[0]
    go = to_px(d.densify([(0, board.go_line_y_mm), (bw, board.go_line_y_mm)], 5.0, closed=False))
    d.polyline(image, go, (0, 0, 255), thickness + 1, closed=False)


# --- the panels -------------------------------------------------------------------------------
def photo_panel(scored, max_w: int, max_h: int) -> np.ndarray:
    """The photo, cropped to the board and its tokens, scaled to fit, with the outline, given spaces, bases, labels."""
    h, w = scored.image.shape[:2]
    x0, y0, x1, y1 = _board_box(scored, w, h)
    crop = scored.image[y0:y1, x0:x1]
    scale = min(max_w / crop.shape[1], max_h / crop.shape[0])
    photo = cv2.resize(crop, (int(round(crop.shape[1] * scale)), int(round(crop.shape[0] * scale))),
                       interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    to_px = d.photo_to_px(scored.calibration, scale, offset=(-x0 * scale, -y0 * scale))
    outline = to_px(d.densify(d.board_outline(scored.board), 5.0))
    d.polyline(photo, outline, (255, 255, 255), 2, halo=1)
    ppm = _local_scale(scored, to_px)
    draw_hidden(photo, scored, to_px, ppm)
    draw_calls(photo, scored, to_px, ppm, label_scale=0.5)
    return photo


def _board_box(scored, w: int, h: int) -> tuple[int, int, int, int]:
    """The part of the photo showing the board and every token, with a margin (the whole photo at most)."""
    pts = scored.calibration.mm_to_px(d.densify(d.board_outline(scored.board), 20.0))
    if scored.positions:
        pts = np.vstack([pts, scored.calibration.mm_to_px([p.token.xy_mm for p in scored.positions])])
    pts = pts[np.isfinite(pts).all(axis=1)]
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    pad = 0.08 * (hi - lo).max() + 20
    x0, y0 = (max(0, int(lo[0] - pad)), max(0, int(lo[1] - pad)))
    x1, y1 = (min(w, int(np.ceil(hi[0] + pad))), min(h, int(np.ceil(hi[1] + pad))))
    if x1 - x0 < 32 or y1 - y0 < 32:
        return 0, 0, w, h
    return x0, y0, x1, y1


def _local_scale(scored, to_px) -> float:
    """Pixels per board millimetre near the middle of the board (for line widths and ring sizes)."""
    w, length = scored.board.size_mm
    a, b = to_px([(w / 2 - 50, length / 2), (w / 2 + 50, length / 2)])
    return float(np.linalg.norm(b - a) / 100.0)


def topdown_panel(scored, height: int) -> np.ndarray:
    """The photo rectified top-down, with the board file's layout and every base to scale."""
    board = scored.board
    margin_mm = _topdown_margin_mm(scored)
    view = TopDown(board, px_per_mm=height / (board.size_mm[1] + 2 * margin_mm), margin_mm=margin_mm)
    image = d.rectify(scored.image, scored.calibration, view)
    to_px = d.view_to_px(view)
    draw_layout(image, board, to_px)
    draw_hidden(image, scored, to_px, view.px_per_mm)
    draw_calls(image, scored, to_px, view.px_per_mm, label_scale=0.45)
    return image


def _topdown_margin_mm(scored, least: float = 25.0, most: float = 90.0) -> float:
    """Table around the board in the top-down view: enough for the tokens off the board near it, ring and label
    (``least`` at least), but never more than ``most``: one further out is seen in the photo panel."""
    width, length = scored.board.size_mm
    need = least
    for p in scored.positions:
        x, y = p.token.xy_mm
        out = max(-x, x - width, -y, y - length)
        if out <= most:
            need = max(need, out + scored.board.token.base_diameter_mm / 2.0 + 12.0)
    return float(min(need, most))


def close_up(scored, index: int, size: int = TILE, half_mm: float = TILE_HALF_MM, number: int | None = None
             ) -> np.ndarray:
    """A top-down close-up of one token: its base, the spaces around it, and (a close call) the margin; labelled
    with ``number`` (default: its place in the score table, ``index + 1``)."""
    p = scored.positions[index]
    ppm = size / (2 * half_mm)
    image, to_px = d.rectify_window(scored.image, scored.calibration, p.token.xy_mm, half_mm, ppm)
    draw_layout(image, scored.board, to_px, thickness=1)
    draw_calls(image, scored, to_px, ppm, label_scale=0.45, only={index}, numbers=False, fills=False)
    _name_candidates(image, scored, p, to_px, ppm)
    d.label(image, f"#{number or index + 1} {p.side}", (6, 12), 0.5, color=d.side_ink(p.side), bg=d.side_bgr(p.side),
            border=(0, 0, 0))
    cv2.rectangle(image, (0, 0), (size - 1, size - 1), d.CLOSE if p.ambiguous else (80, 80, 80), 2)
    return image


def _name_candidates(image: np.ndarray, scored, p, to_px: d.ToPx, ppm: float) -> None:
    """In a close-up, the name of the space given and of the runner-up, each where most of it shows, clear of the
    base and the number: which side of the line is which space, seen without reading the caption (in place)."""
    board = scored.board
    size = image.shape[0]
    clear = np.full(image.shape[:2], 255, np.uint8)
    base = tuple(int(v) for v in d.as_int(to_px([p.token.xy_mm]))[0])
    cv2.circle(clear, base, int(board.token.base_diameter_mm / 2 * ppm) + 6, 0, -1)
    cv2.rectangle(clear, (0, 0), (size // 2, 26), 0, -1)  # the token's number, top left
    for category in dict.fromkeys((p.space, p.runner_up)):
        if not (category and board.has_space(category)):
            continue
        inside = np.zeros_like(clear)
        cv2.fillPoly(inside, [d.as_int(to_px(d.densify(board.space(category).polygon)))], 255)
        depth = cv2.distanceTransform(cv2.bitwise_and(inside, clear), cv2.DIST_L2, 3)
        if depth.max() < 6:
            continue  # too little of it shows
        v, u = np.unravel_index(int(np.argmax(depth)), depth.shape)
        name = board.space(category).name
        d.label(image, name, (u, v), d.fitted(name, size - 16, 0.42), color=(255, 255, 255), bg=(50, 50, 50),
                anchor="center")


def close_up_caption(scored, index: int) -> list[str]:
    """Three short lines under a close-up: the call with its coverage, the runner-up with its, and the margin
    (the number a close call turns on, on a line of its own so that a long space name never hides it)."""
    p = scored.positions[index]
    board = scored.board
    first = f"{call_words(board, p)} {p.coverage:.0%}" + (" (a human's call)" if "human_call" in p.flags else "")
    why = "" if "close_call" in p.flags or not p.ambiguous else f"{doubt_words(p)}, "
    return [first, f"vs {space_name(board, p.runner_up)} {p.runner_up_coverage:.0%}",
            f"{why}margin {p.margin_mm:.1f} mm"]


def legend_panel(width: int, height: int) -> np.ndarray:
    """What the marks mean."""
    img = np.full((height, width, 3), d.PAPER, np.uint8)
    y = 24
    d.put(img, "Legend", (10, y), 0.6, d.INK, 2)
    rows = [
        ("space", "space given to a token (shared: the side paid)"),
        ("ring", "token base, drawn to scale; dot = base centre"),
        ("close", "a human decides: candidate spaces dashed"),
        ("margin", "dashed ring: how far the base can move"),
        ("label", "#n  number, % of the base on the space"),
        ("look", "a token itself in doubt: its note says why"),
        ("off", "x: off the board (S2), scores nothing"),
        ("hidden", "shaded: something covers the board, look"),
        ("layout", "board file's spaces (top-down view)"),
        ("go", "GO! line"),
    ]
    step = max(20, min(30, (height - y - 8) // len(rows)))  # every row fits a short panel too
    sx = 16
    def text_x(kind: str) -> int:  # a row's text starts after its mark; a label's mark is wider
        return 80 if kind in ("label", "look") else 52

    room = min(width - sx - text_x(kind) - 8 for kind, _ in rows)
    scale = min(d.fitted(text, room, 0.45) for _, text in rows)  # every line ends inside a narrow panel too
    for kind, text in rows:
        y += step
        sy = y - 6
        if kind == "space":
            cv2.rectangle(img, (sx, sy - 9), (sx + 28, sy + 9), d.side_bgr("blue"), 2)
            d.fill_alpha(img, [np.array([[sx, sy - 9], [sx + 28, sy - 9], [sx + 28, sy + 9], [sx, sy + 9]])],
                         d.side_bgr("blue"), 0.3)
        elif kind == "ring":
            cv2.circle(img, (sx + 14, sy), 9, d.side_bgr("red"), 2, cv2.LINE_AA)
            cv2.circle(img, (sx + 14, sy), 2, (0, 0, 0), -1)
        elif kind == "close":
            d.dashed(img, np.array([[sx, sy - 9], [sx + 28, sy - 9], [sx + 28, sy + 9], [sx, sy + 9]]), d.CLOSE, 2,
                     dash=6, gap=4)
        elif kind == "margin":
            d.dashed(img, d.circle_mm((sx + 14, sy), 10, 40), d.CLOSE, 1, dash=4, gap=3)
        elif kind == "label":
            d.label(img, "#3 87%", (sx - 2, sy), 0.4, color=(255, 255, 255), bg=d.side_bgr("green"), pad=2)
        elif kind == "look":
            d.label(img, "#5 look", (sx - 2, sy), 0.4, color=(255, 255, 255), bg=d.CLOSE, pad=2)
        elif kind == "hidden":
            blob = np.array([[sx, sy - 6], [sx + 12, sy - 10], [sx + 28, sy - 4], [sx + 24, sy + 9], [sx + 4, sy + 8]])
            d.fill_alpha(img, [blob], d.CLOSE, 0.2)
            d.dashed(img, blob, d.CLOSE, 2, dash=5, gap=3)
        elif kind == "off":
            cv2.line(img, (sx + 6, sy - 8), (sx + 22, sy + 8), (0, 0, 0), 2, cv2.LINE_AA)
            cv2.line(img, (sx + 6, sy + 8), (sx + 22, sy - 8), (0, 0, 0), 2, cv2.LINE_AA)
        elif kind == "layout":
            cv2.rectangle(img, (sx, sy - 9), (sx + 28, sy + 9), (40, 40, 40), -1)
            cv2.rectangle(img, (sx + 3, sy - 6), (sx + 25, sy + 6), (255, 255, 0), 1)
        elif kind == "go":
            cv2.line(img, (sx, sy), (sx + 28, sy), (0, 0, 255), 2)
        d.put(img, text, (sx + text_x(kind), y), scale, d.INK)
    return img


def text_panel(scored, width: int, height: int) -> np.ndarray:
    """Token list, payout table, Free Parking, what the close calls are worth."""
    img = np.full((height, width, 3), d.PAPER, np.uint8)
    scale = 0.75
    char_w = d.text_size("0", scale, 1, d.MONO)[0] + 1
    line_h = 14
    cols = (width - 20) // char_w
    y = 6

    def heading(text: str, color=d.INK) -> None:
        nonlocal y
        y += 26
        d.put(img, text, (10, y), 0.6, color, 2)
        y += 2

    def block(lines: list[str], color=d.INK) -> None:
        nonlocal y
        room = (height - y - 8) // line_h
        if len(lines) > room:
            lines = lines[:max(0, room - 1)] + [f"... {len(lines) - room + 1} more lines: see --json"]
        y = d.mono_block(img, [ln[:cols] for ln in lines], (10, y), char_w, line_h, scale, color,
                         colours=_side_tints(lines))

    n_close = len(scored.ambiguous)
    heading(f"Tokens ({len(scored.positions)})" + (f" - {n_close} call{'s' if n_close != 1 else ''} for a human "
                                                    "to decide" if n_close else ""),
            d.CLOSE if n_close else d.INK)
    block(token_lines(scored))
    unseen = unseen_line(scored)
    if unseen:
        block(textwrap.wrap(unseen, cols, subsequent_indent="  "), d.CLOSE)
    hidden = hidden_lines(scored)
    if hidden:
        block([piece for line in hidden for piece in textwrap.wrap(line, cols, subsequent_indent="  ")], d.CLOSE)
    if scored.left_out:
        reasons: dict[str, list[int]] = {}
        for i, why in scored.left_out:
            reasons.setdefault(why, []).append(i + 1)
        block([piece for why, numbers in reasons.items()
               for piece in textwrap.wrap(f"not scored ({', '.join(f'#{n}' for n in numbers)}): {why}", cols,
                                          subsequent_indent="  ")], d.MUTED)
    if scored.round is None:
        heading("No payouts")
        block(["No turn order given: these are positions only.",
               "Score the round with --order red,blue,... (and --pot M)."], d.MUTED)
        return img
    y += 4
    lines = round_text(scored, cols)
    start = next((k for k, ln in enumerate(lines) if ln.strip().startswith("Ledger")), len(lines))
    block(lines[:start])
    heading(free_parking_line(scored))
    stakes = stake_lines(scored)
    if stakes:
        heading("If a call for a human went the other way", d.CLOSE)
        block(stakes)
    heading("Ledger (rule by rule)")
    block(lines[start + 1:])
    return img


def _side_tints(lines: list[str]) -> dict[int, dict[int, tuple]]:
    tints: dict[int, dict[int, tuple]] = {}
    pattern = re.compile(r"\b(" + "|".join(SIDES) + r")\b")
    for li, line in enumerate(lines):
        for m in pattern.finditer(line):
            tints.setdefault(li, {}).update({c: TEXT_BGR[m.group(1)] for c in range(m.start(), m.end())})
    return tints


def header(scored, width: int) -> np.ndarray:
    img = np.full((HEADER_H, width, 3), (45, 45, 45), np.uint8)
    name = Path(scored.image_path).name
    d.put(img, f"knockcam evidence: {name}", (14, 34), 0.9, (255, 255, 255), 2)
    cal = scored.calibration
    err = f"{cal.error_mm:.1f} mm" if cal.error_mm is not None else "unknown"
    counts = ", ".join(f"{side} {sum(1 for p in scored.tokens if p.side == side)}" for side in SIDES)
    n_close = len(scored.ambiguous)
    human = [f"#{i + 1}" for i, p in enumerate(scored.positions) if {"human_call", "added_by_hand"} & set(p.flags)]
    line = (f"calibration: {cal.method}, error {err}   detector: {scored.detector}   tokens: {counts}   "
            f"calls for a human: {n_close}" + (f"   a human's calls: {', '.join(human)}" if human else ""))
    d.put(img, line, (14, 66), 0.55, (230, 230, 230), 1)
    return img


def evidence_image(scored) -> np.ndarray:
    """The whole evidence picture (BGR) for a scored photo."""
    body_h, left_w = BODY_H, PHOTO_W
    top = topdown_panel(scored, body_h)
    text = text_panel(scored, TEXT_W, body_h)
    # a landscape crop goes on top of the legend and close-ups; a portrait one beside them
    h, w = scored.image.shape[:2]
    x0, y0, x1, y1 = _board_box(scored, w, h)
    crop_w, crop_h = x1 - x0, y1 - y0
    wide = min(left_w / crop_w, 0.64 * body_h / crop_h) >= min(0.62 * left_w / crop_w, body_h / crop_h)
    photo = photo_panel(scored, left_w, int(0.64 * body_h)) if wide else photo_panel(scored, int(0.62 * left_w), body_h)
    width = GAP + left_w + GAP + top.shape[1] + GAP + TEXT_W + GAP
    canvas = np.full((HEADER_H + body_h + 2 * GAP, width, 3), (215, 215, 215), np.uint8)
    canvas[:HEADER_H] = header(scored, width)
    y = HEADER_H + GAP
    x = GAP
    canvas[y:y + photo.shape[0], x:x + photo.shape[1]] = photo
    legend_w, legend_h = 330, 290
    if wide:
        below = y + photo.shape[0] + GAP
        room = y + body_h - below
        if room >= 120:
            canvas[below:below + room, x:x + legend_w] = legend_panel(legend_w, room)
            _close_ups(canvas, scored, x + legend_w + GAP, below, left_w - legend_w - GAP, room)
    else:
        side_x = x + photo.shape[1] + GAP
        side_w = left_w - photo.shape[1] - GAP
        canvas[y:y + legend_h, side_x:side_x + min(side_w, legend_w)] = legend_panel(min(side_w, legend_w), legend_h)
        _close_ups(canvas, scored, side_x, y + legend_h + GAP, side_w, body_h - legend_h - GAP)
    x += left_w + GAP
    canvas[y:y + top.shape[0], x:x + top.shape[1]] = top
    x += top.shape[1] + GAP
    canvas[y:y + body_h, x:x + TEXT_W] = text
    return canvas


def _close_ups(canvas, scored, x0: int, y0: int, width: int, height: int) -> None:
    """Close-ups of the close calls (or, with none, of the tightest calls) in a grid filling the area."""
    panel = np.full((height, width, 3), d.PAPER, np.uint8)
    ambiguous = list(scored.ambiguous)
    if ambiguous:
        title, color, picks = "Calls for a human (top-down, magnified)", d.CLOSE, ambiguous
    else:
        picks = sorted(range(len(scored.positions)), key=lambda i: scored.positions[i].margin_mm)
        title, color, picks = "No close calls; the tightest calls:", d.INK, picks[:4]
    d.put(panel, title, (10, 24), 0.6, color, 2)
    title_h, caption_h = 36, 58
    size, cols, rows = _grid(len(picks), width - 10, height - title_h, caption_h)
    shown = min(len(picks), cols * rows)
    for k, index in enumerate(picks[:shown]):
        x = 10 + (k % cols) * (size + 12)
        y = title_h + (k // cols) * (size + caption_h)
        panel[y:y + size, x:x + size] = close_up(scored, index, size=size)
        cap_scale = 0.4 if size >= 180 else 0.33
        for j, text in enumerate(close_up_caption(scored, index)):
            d.put(panel, d.fit_words(text, size, cap_scale), (x, y + size + 15 + 14 * j), cap_scale, d.INK)
    if len(picks) > shown:
        d.put(panel, f"+{len(picks) - shown} more: knockcam explain IMAGE --token N", (10, height - 8), 0.45,
              d.CLOSE, 1)
    canvas[y0:y0 + height, x0:x0 + width] = panel


def _grid(n: int, width: int, height: int, caption_h: int) -> tuple[int, int, int]:
    """The largest tile size (and columns, rows) that fits ``n`` close-ups in the area, or as many as fit."""
    n = max(1, n)
    for size in range(TILE, 79, -6):
        cols = max(1, width // (size + 12))
        rows = max(1, height // (size + caption_h))
        if cols * rows >= n and size + caption_h <= height:
            return size, cols, rows
    size = 80
    return size, max(1, width // (size + 12)), max(1, height // (size + caption_h))


def evidence_png(scored) -> bytes:
    """The evidence picture, encoded as PNG."""
    from knockcam.errors import KnockcamError

    ok, data = cv2.imencode(".png", evidence_image(scored))
    if not ok:
        raise KnockcamError(f"could not encode the evidence image of {scored.image_path}")
    return data.tobytes()


def write_evidence(scored, path: str | Path) -> Path:
    """Render the evidence picture and write it as PNG, atomically."""
    from knockcam.errors import KnockcamError
    from knockcam.files import write_atomic

    path = Path(path)
    if path.suffix.lower() != ".png":
        raise KnockcamError(f"evidence is written as PNG: give a path ending in .png, not {path.name}")
    return write_atomic(path, evidence_png(scored))


__all__ = ["evidence_image", "evidence_png", "write_evidence", "token_lines", "round_text", "free_parking_line",
           "stake_lines", "unseen_line", "close_up", "draw_calls"]
