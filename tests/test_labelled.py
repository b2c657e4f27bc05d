"""Labelled photos: label files, calls matched to labels by side and place, and `knockcam bench --photos`."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from knockcam.board.layout import load_board
from knockcam.cli import main
from knockcam.detect.tokens import Token
from knockcam.errors import KnockcamError
from knockcam.labelled import (CONFIGS, LabelledPhoto, check_all, check_photo, find_labelled, pair_up,
                               read_labels, refused_check, report)
from knockcam.pipeline import ScoreOptions, score_photo

sys.path.insert(0, str(Path(__file__).resolve().parent / "report"))
from synthetic_scene import scene  # noqa: E402

BOARD = load_board()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scenes"


def _centre(space_id: str) -> tuple[float, float]:
    pts = np.asarray(BOARD.space(space_id).polygon)
    return float(pts[:, 0].mean()), float(pts[:, 1].mean())


def _fixed(*tokens: Token):
    def detect(image, calibration, board, reference=None):
        return list(tokens)
    return detect


def _token(side: str, space: str, confidence: float = 0.9) -> Token:
    return Token(side=side, xy_mm=_centre(space), confidence=confidence, sigma_mm=0.5)


def _labelled(photo: Path, tokens, **more) -> LabelledPhoto:
    return LabelledPhoto(photo=photo, labels=photo.with_suffix(".yaml"), tokens=tuple(tokens), **more)


def _scored(*tokens: Token, order=()):
    s = scene()
    return score_photo(s.photo, ScoreOptions(calibration=s.calibration, order=order), detector=_fixed(*tokens))


# --- matching calls to labels --------------------------------------------------------------------
def test_calls_pair_with_labels_same_place_first_then_colour_then_side():
    calls = [("red", "boardwalk"), ("blue", "park_place"), ("green", "no_space")]
    labels = [("green", "chance"), ("red", "park_place"), ("red", "boardwalk")]
    # red on boardwalk is itself; blue on park_place is red's place in another colour; green is green elsewhere
    assert pair_up(calls, labels) == {2: 0, 1: 1, 0: 2}


def test_a_call_no_label_explains_stays_unpaired_and_a_label_no_call_explains_too():
    assert pair_up([("red", "boardwalk"), ("red", "boardwalk")], [("red", "boardwalk"), ("blue", "chance")]) == {0: 0}


# --- one photo against its labels ----------------------------------------------------------------
def test_calls_that_match_the_labels_are_right_and_the_round_pays_as_the_labels_say():
    order = ("red", "blue")
    scored = _scored(_token("red", "boardwalk"), _token("blue", "park_place"), order=order)
    labels = _labelled(scene().photo, [("red", "boardwalk"), ("blue", "park_place"), ("blue", "off_board")], order=order)
    check = check_photo(scored, labels)
    assert (check.tokens, check.right, check.flagged, check.unflagged_right) == (3, 3, 0, 3)
    assert check.exact and check.payouts_right and check.sure and check.wrong == []


def test_a_wrong_place_a_colour_confusion_a_miss_and_a_phantom_are_each_counted():
    order = ("red", "blue", "green")
    scored = _scored(_token("red", "boardwalk"), _token("blue", "park_place"), _token("green", "chance"), order=order)
    labels = _labelled(scene().photo, [("red", "baltic_avenue"), ("yellow", "park_place"), ("green", "illinois_avenue")],
                       order=order)
    check = check_photo(scored, labels)
    assert check.right == 0 and check.colour == 1 and check.missed == 0 and check.false_on_board == 0
    assert any("yellow on park_place: called blue on park_place" in w for w in check.wrong)
    assert not check.exact and check.payouts_right is False
    missed = check_photo(_scored(_token("red", "boardwalk")), _labelled(scene().photo, [("blue", "chance")]))
    assert (missed.missed, missed.false_on_board, missed.right) == (1, 1, 0)
    assert missed.tokens - missed.flagged - missed.unflagged_right == 1  # the miss is a wrong call left unflagged


def test_a_call_on_a_line_is_flagged_and_counted_as_left_to_a_human():
    edge = np.asarray(BOARD.space("boardwalk").polygon)[:2]
    on_line = tuple(float(v) for v in edge.mean(axis=0))  # on boardwalk's outline: no call can be sure there
    scored = _scored(Token(side="red", xy_mm=on_line, confidence=0.9, sigma_mm=0.5))
    check = check_photo(scored, _labelled(scene().photo, [("red", "boardwalk")]))
    assert check.flagged == 1 and check.unflagged_right == 0 and not check.sure


def test_a_refused_photo_leaves_every_token_on_the_board_to_a_human():
    labels = _labelled(Path("p.jpg"), [("red", "boardwalk"), ("blue", "off_board")], order=("red", "blue"))
    check = refused_check(labels, "calibration error 9 mm is over the 3 mm limit")
    assert (check.right, check.flagged, check.missed, check.payouts_right) == (1, 1, 1, False)
    assert not check.exact


# --- label files -----------------------------------------------------------------------------------
def _write(tmp_path: Path, data, name="round.yaml") -> Path:
    (tmp_path / "round.jpg").write_bytes(b"")
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False) if name.endswith(".yaml") else json.dumps(data), encoding="utf-8")
    return path


def test_a_label_file_maps_each_side_to_its_places(tmp_path):
    (tmp_path / "empty.jpg").write_bytes(b"")
    path = _write(tmp_path, {"tokens": {"red": ["boardwalk", "no_space"], "blue": "off_board", "green": None},
                             "order": ["red", "blue"],
                             "pot": 300, "reference_image": "empty.jpg",
                             "corners_px": [[1, 2], [3, 2], [3, 4], [1, 4]]})
    photo = read_labels(path, tmp_path / "round.jpg", BOARD)
    assert photo.tokens == (("red", "boardwalk"), ("red", "no_space"), ("blue", "off_board"))
    assert photo.order == ("red", "blue") and photo.pot == 300 and photo.reference == tmp_path / "empty.jpg"
    assert photo.corners_px == ((1, 2), (3, 2), (3, 4), (1, 4)) and not photo.synthetic


def test_a_label_file_takes_places_as_the_board_prints_them(tmp_path):
    path = _write(tmp_path, {"tokens": {"red": ["Park Place", "go to jail"], "blue": ["No Space", "OFF_BOARD"]}})
    photo = read_labels(path, tmp_path / "round.jpg", BOARD)
    assert photo.tokens == (("red", "park_place"), ("red", "go_to_jail"), ("blue", "no_space"), ("blue", "off_board"))


def test_the_fixtures_truth_files_read_as_labels():
    photos, unlabelled, alone = find_labelled(FIXTURES, BOARD)
    assert len(photos) == 12 and all(p.synthetic for p in photos)
    # the photos' _ref.jpg frames are their labels' empty-board frames, not photos left out; the video's is left
    assert [p.name for p in unlabelled] == ["video_s4_0003_ref.jpg"]
    assert [p.name for p in alone] == ["video_s4_0003.json"]  # the video's truth: no photo beside it
    hand = next(p for p in photos if p.photo.name == "hand.jpg")
    truth = json.loads((FIXTURES / "hand.json").read_text())
    assert len(hand.tokens) == len(truth["tokens"]) and hand.reference == FIXTURES / "hand_ref.jpg"
    assert hand.order == () and hand.corners_px is not None
    ordered, _, _ = find_labelled(FIXTURES, BOARD, ("blue", "red"))  # a turn order for labels that give none
    assert {p.order for p in ordered} == {("blue", "red")}


@pytest.mark.parametrize("data, says", [
    ({"tokens": {"purple": ["boardwalk"]}}, "'purple' is not a side"),
    ({"tokens": {"red": ["mayfair"]}}, "red token: 'mayfair' is not a space of this board: one of no_space, "
                                       "off_board, a space id"),
    ({"tokens": {"red": ["bordwalk"]}}, "red token: 'bordwalk' is not a space of this board: did you mean boardwalk?"),
    ({"tokens": {"red": [7]}}, "red token on 7: not a resting place"),
    ({"tokens": {"red": ["no_space"] * 5}}, "5 red tokens labelled"),
    ({"tokens": {"red": []}, "reference_image": "gone.jpg"}, "gone.jpg is not there"),
    ({"tokens": {"red": []}, "corners_px": [[1, 2]]}, "corners_px must be four"),
    ({"tokens": {"red": []}, "pot": -5}, "pot must be a whole number"),
    ({"tokens": {"red": []}, "order": ["red", "pink"]}, "order[1]: unknown side 'pink'"),
    ({"tokens": {"red": []}, "order": ["red"]}, "order: a game has 2 to 4 sides, not 1"),  # the engine's checks
    ({"tokens": {"red": []}, "order": ["red", "red"]}, "side 'red' listed twice"),
    ({"tokens": {"red": []}, "order": ["red", "blue"], "pot": -5}, "pot: must be a whole number"),
    ({"cards": []}, "no 'tokens'"),
    ({"tokens": {"red": []}, "refrence_image": "empty.jpg"}, "unknown field 'refrence_image' (did you mean "
                                                             "reference_image?): a label file has tokens, "),
    ({"tokens": {"red": []}, "note": "round 3"}, "unknown field 'note': a label file has tokens, reference_image"),
])
def test_a_bad_label_file_is_one_line_naming_it(tmp_path, data, says):
    path = _write(tmp_path, data)
    with pytest.raises(KnockcamError) as err:
        read_labels(path, tmp_path / "round.jpg", BOARD)
    assert says in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


# --- a folder ---------------------------------------------------------------------------------------
def test_every_way_a_photo_allows_is_scored_and_reported(tmp_path):
    s = scene()
    shutil.copy(s.photo, tmp_path / "round.jpg")
    shutil.copy(s.empty, tmp_path / "empty.jpg")
    wanted = [(t["side"], t["space"] or t["state"]) for t in s.truth["tokens"]]
    labels = {"tokens": {}, "reference_image": "empty.jpg", "corners_px": s.truth["corners_px"]}
    for side, where in wanted:
        labels["tokens"].setdefault(side, []).append(where)
    (tmp_path / "round.yaml").write_text(yaml.safe_dump(labels), encoding="utf-8")
    photos, unlabelled, alone = find_labelled(tmp_path, BOARD)
    assert unlabelled == [] and alone == []  # empty.jpg is the labels' empty-board frame
    truth = [Token(side=t["side"], xy_mm=tuple(t["xy_mm"]), confidence=0.9, sigma_mm=0.3) for t in s.truth["tokens"]]
    rows = check_all(photos, detector=_fixed(*truth))
    assert list(rows) == [name for name, _, _ in CONFIGS]
    for name, (check,) in rows.items():
        assert check.tokens == len(wanted)
        if check.refused is None:  # the true bases: every call the calibration places well is right
            assert check.right + check.flagged >= check.tokens - 1, (name, check.wrong)
    auto = rows["automatic calibration, photo alone"][0]
    assert auto.refused is not None or auto.calibration_mm is not None
    text = report(rows, photos, unlabelled, tmp_path, "knockcam bench --photos X")
    assert "photos labelled by a person" in text and "| labelled corners, empty-board frame | 1 |" in text
    assert all(line.count("|") == 15 for line in text.splitlines() if line.startswith("| automatic calibration"))
    assert "Not scored" not in text and "with no photo beside them" not in text


def test_label_files_are_found_in_any_case_and_those_with_no_photo_are_said(tmp_path):
    """A label with no photo beside it (a typo in its name, a photo OpenCV cannot read) was skipped unsaid, and
    round.YAML beside round.JPG was not found: "no labelled photo"."""
    s = scene()
    shutil.copy(s.photo, tmp_path / "round.JPG")
    shutil.copy(s.photo, tmp_path / "other.jpg")
    (tmp_path / "round.YAML").write_text(yaml.safe_dump({"tokens": {"red": ["boardwalk"]}}), encoding="utf-8")
    (tmp_path / "roud2.yaml").write_text(yaml.safe_dump({"tokens": {"red": ["go_to_jail"]}}), encoding="utf-8")
    photos, unlabelled, alone = find_labelled(tmp_path, BOARD)
    assert [p.labels.name for p in photos] == ["round.YAML"] and [p.name for p in unlabelled] == ["other.jpg"]
    assert [p.name for p in alone] == ["roud2.yaml"]
    text = report({}, photos, unlabelled, tmp_path, "knockcam bench --photos X", alone)
    assert "Label files with no photo beside them (nothing scored): 1 (roud2.yaml)." in text


def test_bench_photos_on_a_folder_without_labels_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "a.jpg").write_bytes(b"")
    assert main(["bench", "--photos", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "no labelled photo" in err and len(err.splitlines()) == 1
    assert main(["bench", "--photos", str(tmp_path), "--order", "red,pink"]) == 2
    assert "--order: order[1]: unknown side 'pink'" in capsys.readouterr().err
    assert not (tmp_path / "knockcam-bench.md").exists()
