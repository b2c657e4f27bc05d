"""Combining learned and reference detections: agreement fuses, disagreement is kept and flagged."""

import numpy as np
import pytest

from knockcam import settings
from knockcam.assign import DISAGREEMENT, assign
from knockcam.board import load_board
from knockcam.detect import detect
from knockcam.detect.combine import combine
from knockcam.detect.reference import in_reach
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError


def t(side, x, y, conf=0.9, sigma=1.0, source="model"):
    return Token(side=side, xy_mm=(x, y), confidence=conf, sigma_mm=sigma, source=source)


def test_the_same_token_seen_by_both_is_fused_by_uncertainty():
    (both,) = combine([t("red", 100.0, 400.0, sigma=2.0)], [t("red", 101.0, 400.0, sigma=1.0, source="reference")])
    assert both.source == "both" and both.side == "red"
    assert both.xy_mm[0] == pytest.approx(100.8)  # weights 1/4 and 1
    assert both.confidence > 0.9
    assert both.sigma_mm <= 1.0


def test_a_weak_model_score_the_reference_frame_confirms_is_no_longer_unsure():
    weak = Token(side="red", xy_mm=(100.0, 400.0), confidence=0.15, sigma_mm=2.0, unsure=True)
    (both,) = combine([weak], [t("red", 101.0, 400.0, source="reference")])
    assert both.source == "both" and not both.unsure
    (alone,) = combine([weak], [])
    assert alone.unsure and alone.source == "model_only"


def test_far_apart_estimates_do_not_pretend_to_agree_closely():
    (both,) = combine([t("red", 100.0, 400.0, sigma=1.0)], [t("red", 108.0, 400.0, sigma=1.0, source="reference")])
    assert both.sigma_mm >= 4.0


def test_one_colour_seen_by_both_detectors_up_to_the_same_side_radius_apart_is_one_token():
    (both,) = combine([t("red", 100.0, 400.0)], [t("red", 116.0, 400.0, source="reference")])
    assert both.source == "both" and both.sigma_mm >= 8.0  # their disagreement is its uncertainty
    apart = combine([t("red", 100.0, 400.0)], [t("red", 126.0, 400.0, source="reference")])  # two bases touching
    assert sorted(o.source for o in apart) == ["model_only", "reference_only"]
    colours = combine([t("red", 100.0, 400.0)], [t("blue", 116.0, 400.0, source="reference")])  # two tokens
    assert sorted((o.side, o.source) for o in colours) == [("blue", "reference_only"), ("red", "model_only")]


def test_a_colour_conflict_is_kept_once_and_marked():
    out = combine([t("red", 100.0, 400.0, conf=0.6)], [t("yellow", 100.5, 400.0, conf=0.8, source="reference")])
    assert len(out) == 1
    assert out[0].source == "conflict" and out[0].side == "yellow"


def test_tokens_one_detector_missed_are_kept_and_marked():
    model = [t("red", 100.0, 400.0), t("blue", 300.0, 700.0)]
    reference = [t("red", 100.5, 400.5, source="reference"), t("green", 50.0, 850.0, source="reference")]
    out = combine(model, reference)
    sources = sorted((o.side, o.source) for o in out)
    assert sources == [("blue", "model_only"), ("green", "reference_only"), ("red", "both")]


def test_a_model_token_where_the_reference_detector_never_looks_is_no_disagreement():
    board = load_board()
    width, length = board.size_mm
    model = [t("red", width + 40.0, 400.0), t("blue", width - 30.0, 400.0)]  # off the board; on it
    out = combine(model, [], reach=lambda xy: in_reach(xy, board))
    assert sorted((o.side, o.source) for o in out) == [("blue", "model_only"), ("red", "model")]
    positions = assign(out, board)
    off = next(p for p in positions if p.token.side == "red")
    assert off.state == "off_board" and DISAGREEMENT not in off.flags
    assert [o.source for o in combine(model, [])] == ["model_only", "model_only"]  # no reach given: everywhere


def test_unsupported_reference_only_blobs_in_a_crowd_are_dropped_a_lone_one_is_kept():
    model = [t("red", 100.0, 400.0)]
    reference = [t("red", 100.5, 400.0, source="reference"),
                 t("green", 50.0, 850.0, source="reference"),  # the model has a weak candidate here
                 t("yellow", 300.0, 200.0, source="reference"),  # two blobs, no candidate: a hand
                 t("yellow", 320.0, 230.0, source="reference"),
                 t("blue", 300.0, 700.0, source="reference")]  # one blob, no candidate: kept, flagged
    weak = [t("blue", 52.0, 849.0, conf=0.03)]
    out = combine(model, reference, weak)
    assert sorted((o.side, o.source) for o in out) == [
        ("blue", "reference_only"), ("green", "reference_only"), ("red", "both")]
    assert len(combine(model, reference)) == 5  # without the model's candidates nothing is vetted


def test_an_unsupported_blob_with_no_upright_base_is_dropped_an_upright_one_is_kept(monkeypatch):
    reference = [t("blue", 300.0, 700.0, source="reference"),  # upright base, no model candidate: kept, flagged
                 Token(side="red", xy_mm=(120.0, 200.0), confidence=0.42, sigma_mm=8.0, source="reference",
                       fallen=True)]  # no base in it, no candidate: a card or a shadow
    out = combine([], reference, weak=[])
    assert [(o.side, o.source) for o in out] == [("blue", "reference_only")]
    assert len(combine([], reference, weak=[t("red", 125.0, 204.0, conf=0.02)])) == 2  # a candidate vouches for it
    import knockcam.settings as settings
    load, real = settings.load, settings.load("detect")
    monkeypatch.setattr(settings, "load", lambda stage: {**real, "combine": {**real["combine"], "veto_fallen": False}}
                        if stage == "detect" else load(stage))
    assert len(combine([], reference, weak=[])) == 2


def test_a_reference_blob_in_doubt_is_dropped_alone_and_trusted_when_the_model_sees_it():
    doubt = Token(side="green", xy_mm=(200.0, 500.0), confidence=0.9, sigma_mm=1.0, source="reference", unsure=True)
    assert combine([], [doubt], weak=[]) == []  # stray plastic beside it and no model candidate: not a token
    (both,) = combine([t("green", 201.0, 500.0)], [doubt], weak=[])
    assert both.source == "both" and not both.unsure and not both.fallen  # the model confirms it: no flag


def test_same_side_partner_is_preferred_over_a_nearer_other_colour():
    model = [t("red", 100.0, 400.0)]
    reference = [t("blue", 100.5, 400.0, source="reference"), t("red", 105.0, 400.0, source="reference")]
    out = combine(model, reference)
    assert sorted(o.source for o in out) == ["both", "reference_only"]


def test_disagreements_are_flagged_by_assignment():
    board = load_board()
    out = combine([t("red", 50.0, 860.0)], [])
    (pos,) = assign(out, board)
    assert DISAGREEMENT in pos.flags and pos.ambiguous


def test_no_detector_at_all_is_a_clear_error():
    board = load_board()
    img = np.full((72, 128, 3), (40, 110, 60), np.uint8)  # a colour photo (a black one has no colour to detect by)
    from knockcam.calibrate.calibration import Calibration

    cal = Calibration(method="corners", image_size=(128, 72), homography=np.eye(3))
    with pytest.raises(KnockcamError, match="no token detector"):
        detect(img, cal, board, reference=None, model=None)


def test_the_model_alone_leaves_a_middling_score_to_a_human(monkeypatch):
    """With no empty-board frame nothing can confirm a weak token: under model.sure_conf_alone it is unsure."""
    from knockcam.calibrate.calibration import Calibration
    from knockcam.detect import fallen, refine, verify

    # no fallen classifier, placer, verifier or refiner: only the flags matter here
    monkeypatch.setattr(fallen, "load", lambda: None)
    monkeypatch.setattr(fallen, "load_placer", lambda: None)
    monkeypatch.setattr(refine, "load_alone", lambda: None)
    monkeypatch.setattr(verify, "load_alone", lambda: None)

    class Model:  # plays TokenModel: returns its tokens whatever the photo
        conf, sure_conf, sure_conf_alone, support_conf = 0.1, 0.25, 0.6, 0.01

        def detect(self, image, calibration, board, conf=None):
            return [t("red", 100.0, 400.0, conf=0.45), t("blue", 300.0, 700.0, conf=0.9),
                    t("green", 200.0, 200.0, conf=0.15)]

    board = load_board()
    cal = Calibration(method="corners", image_size=(128, 72), homography=np.eye(3))
    table = np.full((72, 128, 3), (40, 110, 60), np.uint8)  # a plain green table: a colour photo with nothing on it
    found = detect(table, cal, board, reference=None, model=Model()).tokens
    assert [(k.side, k.unsure) for k in found] == [("red", True), ("blue", False), ("green", True)]
    assert [p.ambiguous for p in assign(list(found), board)] == [True, False, True]


def test_the_calibration_error_is_added_once_after_combining():
    from knockcam.calibrate.calibration import Calibration
    from knockcam.detect import with_calibration_error

    cal = Calibration("auto", (1280, 720), np.eye(3), error_mm=5.0)
    share = settings.load("assign")["ambiguity"]["calibration_share"]
    assert 0 < share <= 1
    fused = combine([t("red", 100.0, 400.0, sigma=1.0)], [t("red", 100.5, 400.0, sigma=1.0, source="reference")])
    (token,) = with_calibration_error(fused, cal)
    # both detectors read the board through the same calibration: agreeing does not shrink its error
    assert token.sigma_mm == pytest.approx(np.hypot(fused[0].sigma_mm, share * 5.0), abs=1e-3)
    assert token.sigma_mm >= share * 5.0
    (model_only,) = with_calibration_error([t("blue", 50.0, 500.0, sigma=1.5)], cal)
    assert model_only.sigma_mm == pytest.approx(np.hypot(1.5, share * 5.0), abs=1e-3)
    exact = Calibration("truth", (1280, 720), np.eye(3))
    assert with_calibration_error(fused, exact) == fused


def test_a_call_the_calibration_error_alone_could_flip_is_a_close_call():
    from knockcam.calibrate.calibration import Calibration
    from knockcam.detect import with_calibration_error

    board = load_board()
    token = t("blue", 165.0, 350.0, sigma=0.3)  # 3 mm right of the Baltic | Oriental line, placed to 0.3 mm
    assert not assign([token], board)[0].ambiguous
    # the calibration reports 3 mm at its worst corner: the band reaches it, so the call goes to a human
    (bound,) = with_calibration_error([token], Calibration("auto", (1280, 720), np.eye(3), error_mm=3.0))
    assert assign([bound], board)[0].ambiguous
    # ... but an estimate of 1 mm cannot move the base 3 mm: the call stands
    (small,) = with_calibration_error([token], Calibration("auto", (1280, 720), np.eye(3), error_mm=1.0))
    assert not assign([small], board)[0].ambiguous


def _difference(changed_at=(), radius_mm=12.5):
    """A Difference on a 1 px/mm raster, changed in discs about the given board points."""
    from knockcam.board.topdown import TopDown
    from knockcam.detect.reference import Difference

    view = TopDown(load_board(), px_per_mm=1.0, margin_mm=20.0)
    yy, xx = np.mgrid[0:view.size[1], 0:view.size[0]]
    changed = np.zeros(xx.shape, bool)
    for xy in changed_at:
        c = view.to_px([xy])[0]
        changed |= np.hypot(xx - c[0], yy - c[1]) <= radius_mm
    return Difference(view=view, changed=changed)


def test_a_weak_model_only_token_where_the_photo_matches_the_empty_board_is_dropped():
    weak, strong = t("red", 100.0, 400.0, conf=0.3), t("blue", 300.0, 700.0, conf=0.8)
    nothing = _difference()
    assert combine([weak, strong], [], difference=nothing, base_radius_mm=12.5) == [
        Token(side="blue", xy_mm=(300.0, 700.0), confidence=0.8, sigma_mm=1.0, source="model_only")]
    changed = _difference(changed_at=[(100.0, 400.0)])  # something is there: the weak token stays, flagged
    assert [o.side for o in combine([weak], [], difference=changed, base_radius_mm=12.5)] == ["red"]
    assert [o.side for o in combine([weak], [])] == ["red"]  # no comparison made: nothing to check against
