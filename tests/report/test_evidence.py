"""The evidence picture: marks land on the right board points, close calls are distinct, text matches the round."""

from __future__ import annotations

from dataclasses import replace

import cv2
import numpy as np
import pytest

from knockcam.board.layout import load_board
from knockcam.board.topdown import TopDown
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError
from knockcam.pipeline import ScoreOptions, score_photo
from knockcam.report import draw as d
from knockcam.report.evidence import (_label_text, close_up, close_up_caption, draw_calls, evidence_image, free_parking_line,
                                      header, legend_panel, round_text, stake_lines, token_lines,
                                      write_evidence)
from synthetic_scene import scene

BOARD = load_board()
SIDES4 = ("red", "yellow", "green", "blue")


def _centre(space_id):
    pts = np.asarray(BOARD.space(space_id).polygon)
    return float(pts[:, 0].mean()), float(pts[:, 1].mean())


def _scored(tokens, order=("red", "blue"), pot=500, calls=()):
    s = scene()

    def detect(image, calibration, board, reference=None):
        return list(tokens)

    return score_photo(s.photo, ScoreOptions(calibration=s.calibration, order=order, pot=pot, calls=calls),
                       detector=detect)


def _boundary_token(side="red"):
    """A token centred on the line between two neighbouring properties (a close call by construction)."""
    props = BOARD.properties
    for i, a in enumerate(props):
        for b in props[i + 1:]:
            common = {tuple(np.round(p, 6)) for p in a.polygon} & {tuple(np.round(p, 6)) for p in b.polygon}
            if len(common) >= 2:
                mid = np.mean(np.array(sorted(common)[:2]), axis=0)
                return Token(side, (float(mid[0]), float(mid[1])), 0.9, 2.0), a, b
    raise AssertionError("no neighbouring properties")


def test_marks_land_on_the_board_points_they_describe():
    """On a top-down raster: the given space is tinted in the side's colour, the base ring sits at the base."""
    space = BOARD.properties[3].id
    scored = _scored([Token("blue", _centre(space), 0.9, 1.0)])
    view = TopDown(BOARD, px_per_mm=2.0, margin_mm=10.0)
    w, h = view.size
    canvas = np.full((h, w, 3), 255, np.uint8)
    draw_calls(canvas, scored, d.view_to_px(view), view.px_per_mm, numbers=False)
    blue = np.array(d.side_bgr("blue"), float)
    # inside the space, away from the base: tinted towards blue
    poly = np.asarray(BOARD.space(space).polygon)
    corner_in = poly.min(axis=0) + 4.0
    u, v = np.round(view.to_px([corner_in])[0]).astype(int)
    tinted = canvas[v, u].astype(float)
    assert np.linalg.norm(tinted - blue) < np.linalg.norm(np.array([255.0, 255, 255]) - blue)
    assert not np.array_equal(canvas[v, u], [255, 255, 255])
    # on the base ring: the side's colour; elsewhere on the table: untouched
    r = BOARD.token.base_diameter_mm / 2
    cx, cy = _centre(space)
    u, v = np.round(view.to_px([(cx + r, cy)])[0]).astype(int)
    ring = canvas[v - 1:v + 2, u - 1:u + 2].reshape(-1, 3).astype(float)
    assert min(np.linalg.norm(ring - blue, axis=1)) < 40
    assert np.array_equal(canvas[2, 2], [255, 255, 255])


def test_a_property_two_sides_share_is_tinted_for_the_side_it_pays():
    """E3a: red before blue in the turn order, so the property pays red, as the ledger says; the box was tinted
    for whichever token was drawn last, blue here, and a referee read it as blue's."""
    space = BOARD.properties[3].id
    cx, cy = _centre(space)
    poly = np.asarray(BOARD.space(space).polygon)
    offset = 0.25 * (poly[:, 0].max() - poly[:, 0].min())
    tokens = [Token("red", (cx - offset, cy), 0.9, 0.3), Token("blue", (cx + offset, cy), 0.9, 0.3)]
    view = TopDown(BOARD, px_per_mm=2.0, margin_mm=10.0)
    u, v = np.round(view.to_px([poly.min(axis=0) + 2.0])[0]).astype(int)  # inside the space, away from both bases
    for order, paid in ((("red", "blue"), "red"), (("blue", "red"), "blue")):
        scored = _scored(tokens, order=order)
        assert [e.side for e in scored.round.ledger if e.rule == "E3a" and e.kind == "money"] == [paid]
        canvas = np.full((view.size[1], view.size[0], 3), 255, np.uint8)
        draw_calls(canvas, scored, d.view_to_px(view), view.px_per_mm, numbers=False)
        tint = canvas[v, u].astype(float)
        other = "blue" if paid == "red" else "red"
        assert np.linalg.norm(tint - d.side_bgr(paid)) < np.linalg.norm(tint - d.side_bgr(other)), (order, tint)


def test_close_calls_are_magenta_with_both_candidates():
    token, a, b = _boundary_token()
    scored = _scored([token])
    assert scored.positions[0].ambiguous
    view = TopDown(BOARD, px_per_mm=2.0, margin_mm=10.0)
    w, h = view.size
    canvas = np.full((h, w, 3), 255, np.uint8)
    draw_calls(canvas, scored, d.view_to_px(view), view.px_per_mm, numbers=False)
    magenta = np.all(canvas == d.CLOSE, axis=2)
    for space in (a, b):  # both candidate outlines carry magenta dashes, far from the token too
        pts = d.densify(space.polygon, 2.0)
        far = pts[np.linalg.norm(pts - np.asarray(token.xy_mm), axis=1) > 20]
        px = np.round(view.to_px(far)).astype(int)
        near = [magenta[max(0, y - 2):y + 3, max(0, x - 2):x + 3].any() for x, y in px]
        assert np.mean(near) > 0.3
    clear = _scored([Token("red", _centre(BOARD.properties[0].id), 0.9, 1.0)])
    assert not np.all(close_up(clear, 0) == d.CLOSE, axis=2).any()
    assert np.all(close_up(scored, 0) == d.CLOSE, axis=2).any()
    # another number (the live review's) changes the label in the corner alone
    changed = np.any(close_up(scored, 0, number=7) != close_up(scored, 0), axis=2)
    ys, xs = np.nonzero(changed)
    assert changed.any() and ys.max() < 30 and xs.max() < 80


def test_a_close_up_names_each_candidate_space_on_its_side_of_the_line(monkeypatch):
    token, a, b = _boundary_token()
    scored = _scored([token])
    placed = {}
    label = d.label
    monkeypatch.setattr(d, "label", lambda image, text, org, *args, **kw: placed.setdefault(text, org) and
                        label(image, text, org, *args, **kw))
    size, half = 250, 32.0
    close_up(scored, 0, size=size, half_mm=half)
    assert {a.name, b.name} <= set(placed)
    for space in (a, b):  # each name sits inside its own space, as the close-up shows it
        u, v = placed[space.name]
        mm = (token.xy_mm[0] - half + u * 2 * half / size, token.xy_mm[1] + half - v * 2 * half / size)
        assert cv2.pointPolygonTest(np.asarray(space.polygon, np.float32), mm, False) >= 0


def test_a_label_keeps_clear_of_the_other_tokens_rings(monkeypatch):
    x, y = _centre(BOARD.properties[4].id)
    r = BOARD.token.base_diameter_mm / 2
    tokens = [Token("red", (x, y), 0.9, 1.0), Token("blue", (x + 2.6 * r, y), 0.9, 1.0)]  # a label's width apart
    scored = _scored(tokens)
    view = TopDown(BOARD, px_per_mm=2.0, margin_mm=10.0)
    w, h = view.size
    placed = []
    label = d.label
    monkeypatch.setattr(d, "label", lambda *args, **kw: placed.append(label(*args, **kw)) or placed[-1])
    draw_calls(np.full((h, w, 3), 255, np.uint8), scored, d.view_to_px(view), view.px_per_mm)
    rings = [(u - r * 2.0, v - r * 2.0, u + r * 2.0, v + r * 2.0) for u, v in view.to_px([t.xy_mm for t in tokens])]
    assert len(placed) == 2
    for a in placed:
        for b in rings:
            assert a[2] < b[0] or a[0] > b[2] or a[3] < b[1] or a[1] > b[3], (a, b)


def test_text_lines_match_the_positions_and_the_round():
    token, a, b = _boundary_token("red")
    tokens = [token, Token("blue", _centre(BOARD.of_kind("free_parking")[0].id), 0.9, 1.0)]
    scored = _scored(tokens, order=("red", "blue"), pot=600)
    lines = token_lines(scored)
    assert len(lines) == 1 + len(scored.positions)
    assert "CLOSE" in lines[1] and "CLOSE" not in lines[2]
    text = "\n".join(round_text(scored, 110))
    for side, summary in scored.round.per_side.items():
        assert side in text and f"{summary.cash_after:,d}" in text
    assert "E4" in text
    assert free_parking_line(scored) == "Free Parking (E4): blue M600; bank refills to M500 (N2)"


def test_a_humans_call_is_drawn_and_written_as_theirs_beside_the_cameras():
    """A close call settled with --call: no longer magenta; the text, the close-up and the header say whose call."""
    token, a, b = _boundary_token("red")
    camera = _scored([token]).positions[0]
    scored = _scored([token], calls=((1, camera.runner_up),))
    p = scored.positions[0]
    assert not p.ambiguous and p.space == camera.runner_up
    assert f"a human's call (the camera's: {BOARD.space(camera.space).name}" in token_lines(scored)[1]
    assert close_up_caption(scored, 0)[0].endswith("(a human's call)")
    assert not np.all(close_up(scored, 0) == d.CLOSE, axis=2).any()
    from dataclasses import replace

    unmarked = replace(scored, positions=(replace(p, flags=tuple(f for f in p.flags if f != "human_call")),))
    assert not np.array_equal(header(scored, 1600), header(unmarked, 1600))  # "a human's calls: #1" added


def test_a_token_called_none_is_drawn_grey_with_no_space_given():
    """--call N=none: the ring grey, its space not tinted, the text says 'not a token' beside the camera's call."""
    space = BOARD.properties[3].id
    token = Token("blue", _centre(space), 0.9, 1.0)
    view = TopDown(BOARD, px_per_mm=2.0, margin_mm=10.0)
    pictures = []
    for calls in ((), ((1, "none"),)):
        scored = _scored([token], calls=calls)
        canvas = np.full((view.size[1], view.size[0], 3), 255, np.uint8)
        draw_calls(canvas, scored, d.view_to_px(view), view.px_per_mm, numbers=False)
        pictures.append(canvas)
    corner_in = np.asarray(BOARD.space(space).polygon).min(axis=0) + 4.0
    u, v = np.round(view.to_px([corner_in])[0]).astype(int)
    assert not np.array_equal(pictures[0][v, u], [255, 255, 255]) and np.array_equal(pictures[1][v, u], [255, 255, 255])
    assert np.all(pictures[1] == d.MUTED, axis=2).any() and not np.all(pictures[0] == d.MUTED, axis=2).any()
    line = token_lines(scored)[1]
    assert "not a token" in line and f"a human's call (the camera's: {BOARD.space(space).name}" in line


def test_a_token_added_by_hand_is_labelled_so():
    scored = score_photo(scene().photo, ScoreOptions(calibration=scene().calibration, added=(("red", "chance"),)),
                         detector=lambda image, calibration, board, reference=None: [])
    (line,) = token_lines(scored)[1:]
    assert "Chance" in line and "added by hand" in line


def test_free_parking_split_is_spelled_out():
    fp = BOARD.of_kind("free_parking")[0].id
    tokens = [Token("red", _centre(fp), 0.9, 1.0), Token("blue", (_centre(fp)[0] + 30, _centre(fp)[1]), 0.9, 1.0),
              Token("green", (_centre(fp)[0] - 30, _centre(fp)[1]), 0.9, 1.0)]
    scored = _scored(tokens, order=("red", "blue", "green"), pot=500)
    assert [p.space for p in scored.positions] == [fp, fp, fp]
    assert free_parking_line(scored) == "Free Parking (E4): red M150, blue M150, green M150, M50 stays"


def test_evidence_picture_is_written_whole(tmp_path):
    s = scene()
    scored = score_photo(s.photo, ScoreOptions(calibration=s.calibration, order=SIDES4), detector=s.truth_detector())
    image = evidence_image(scored)
    assert image.ndim == 3 and image.shape[0] > 900 and image.shape[1] > 2000
    out = write_evidence(scored, tmp_path / "sub" / "evidence.png")
    back = cv2.imread(str(out))
    assert back is not None and back.shape == image.shape
    assert sorted(p.name for p in out.parent.iterdir()) == ["evidence.png"]  # no temporary file left
    with pytest.raises(KnockcamError, match="PNG"):
        write_evidence(scored, tmp_path / "evidence.jpg")


def test_evidence_without_an_order_or_tokens():
    scored = _scored([], order=())
    image = evidence_image(scored)
    assert image.shape[0] > 900
    assert token_lines(scored)[-1].strip() == "no tokens found"


def test_a_wild_calibration_still_draws(tmp_path):
    """A calibration that sends part of the board to infinity must give a picture (showing it is wrong), not a crash."""
    from dataclasses import replace as _replace

    scored = _scored([Token("red", _centre(BOARD.properties[0].id), 0.9, 1.0)])
    h = np.array([[0.5, 0.0, 600.0], [0.0, 0.5, 300.0], [0.0, -0.0015, 1.0]])  # the horizon crosses the board
    wild = _replace(scored, calibration=_replace(scored.calibration, homography=h, camera_matrix=None,
                                                  dist_coeffs=None))
    image = evidence_image(wild)
    assert image.shape[0] > 900


@pytest.mark.parametrize("width", [330, 260])
def test_every_legend_line_ends_inside_its_panel(width):
    panel = legend_panel(width, 290)
    edge = panel[:, -6:].reshape(-1, 3)
    assert (edge == np.array(d.PAPER, np.uint8)).all()  # no text runs into (or past) the panel's right edge


def test_a_close_ups_caption_keeps_its_numbers_however_long_the_space_names():
    scored = _scored([_boundary_token()[0]])
    call, runner_up, margin = close_up_caption(scored, 0)
    assert call.endswith("%") and runner_up.startswith("vs ") and runner_up.endswith("%")
    assert margin == f"margin {scored.positions[0].margin_mm:.1f} mm"  # a line of its own: never cut off
    short = d.fit_words("vs North Carolina Avenue 29%", 120, 0.4)
    assert short.endswith(".. 29%") and short.startswith("vs North") and d.text_size(short, 0.4)[0] <= 120
    assert d.fit_words("vs Go 42%", 120, 0.4) == "vs Go 42%"
    mine = d.fit_words("North Carolina Avenue 71% (a human's call)", 180, 0.4)
    assert mine.endswith(".. 71% (a human's call)") and d.text_size(mine, 0.4)[0] <= 180
    assert d.text_size(d.fit_words("a_very_long_word_with_no_number_at_all", 60, 0.4), 0.4)[0] <= 60


def test_a_call_left_to_a_human_for_another_reason_than_a_close_call_says_which():
    lone = Token("blue", _centre("park_place"), 0.3, 0.5, source="reference_only")  # one detector alone saw it
    scored = _scored([lone])
    (p,) = scored.positions
    assert p.ambiguous and "close_call" not in p.flags and "disagreement" in p.flags
    assert _label_text(p, 0) == f"#1 {p.coverage:.0%} look: disagreement"  # not "close 17.8mm"
    assert close_up_caption(scored, 0)[2] == f"disagreement, margin {p.margin_mm:.1f} mm"
    close = _scored([_boundary_token()[0]])
    assert " close " in _label_text(close.positions[0], 0) and close_up_caption(close, 0)[2].startswith("margin ")
    lying, maybe = (_scored([replace(_boundary_token()[0], **{kind: True})]) for kind in ("fallen", "maybe_fallen"))
    assert _label_text(lying.positions[0], 0).endswith("mm fallen")
    assert _label_text(maybe.positions[0], 0).endswith("mm maybe fallen")


def test_a_token_in_doubt_itself_is_staked_as_no_token_at_all():
    lone = Token("blue", _centre("park_place"), 0.3, 0.5, source="reference_only")
    scored = _scored([lone, Token("red", _centre("boardwalk"), 0.95, 0.3, source="both")])
    (call,) = scored.close_calls
    assert scored.positions[call.index].side == "blue" and call.other == "not_a_token"
    gain = scored.round.per_side["blue"].delta
    assert gain > 0 and call.cash_change == {"blue": -gain}  # without it, blue is paid nothing for Park Place
    assert stake_lines(scored) == [f"#{call.index + 1} blue (disagreement) no token at all: blue {-gain:+,d}"]


def test_tokens_not_in_the_photo_are_said_in_the_picture_as_in_the_printout():
    """The printout said "not in the photo: red 3" and the picture only counted the tokens it saw."""
    from knockcam.report.evidence import text_panel, unseen_line

    one = [Token("red", _centre(BOARD.properties[0].id), 0.9, 1.0)]
    scored, alone = _scored(one, order=("red", "blue")), _scored(one, order=())
    assert unseen_line(scored).startswith("not in the photo: red 3, blue 4 tokens, counted as out")
    assert unseen_line(alone) is None and not scored.ambiguous  # no other magenta line in the panel
    assert np.all(text_panel(scored, 900, 700) == d.CLOSE, axis=2).any()  # the line, in magenta
    assert not np.all(text_panel(alone, 900, 700) == d.CLOSE, axis=2).any()


def test_the_top_down_view_has_room_for_tokens_off_the_board_beside_it():
    from knockcam.report.evidence import _topdown_margin_mm, topdown_panel

    width, length = BOARD.size_mm
    beside, far = Token("red", (width + 55.0, length / 2), 0.9, 1.0), Token("blue", (width + 400.0, 100.0), 0.9, 1.0)
    scored = _scored([beside, far])
    margin = _topdown_margin_mm(scored)
    assert 55.0 + BOARD.token.base_diameter_mm / 2 < margin <= 90.0  # the far one is left to the photo panel
    assert _topdown_margin_mm(_scored([Token("red", _centre(BOARD.properties[0].id), 0.9, 1.0)])) == 25.0
    panel = topdown_panel(scored, 600)
    view = TopDown(BOARD, px_per_mm=600 / (length + 2 * margin), margin_mm=margin)
    assert panel.shape[:2] == view.size[::-1]
    ring = view.to_px(d.circle_mm(np.array(beside.xy_mm), BOARD.token.base_diameter_mm / 2))
    assert (ring >= 0).all() and (ring[:, 0] < panel.shape[1]).all()  # the whole base ring is in the picture
