"""The committed synthetic fixtures: present, small, self-consistent and reproducible."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from knockcam.board.layout import load_board
from knockcam.synth.camera import Camera
from knockcam.synth.fixtures import CASES, FIXTURE_SEED, VIDEO_INDEX, case_config
from knockcam.synth.scene import make_photo
from knockcam.synth.video import video_name

SCENES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
BOARD = load_board()


def _camera(truth: dict) -> Camera:
    c = truth["camera"]
    return Camera(k=np.array(c["camera_matrix"]), r=np.array(c["rotation"]), t=np.array(c["tvec_mm"]),
                  dist=np.array(c["dist_coeffs"]), image_size=tuple(c["image_size"]))


def _truth(name: str) -> dict:
    return json.loads((SCENES / f"{name}.json").read_text())


def test_every_case_is_committed_and_small():
    for name in CASES:
        for suffix in (".jpg", "_ref.jpg", ".json"):
            assert (SCENES / f"{name}{suffix}").is_file(), name + suffix
    video = video_name(FIXTURE_SEED, VIDEO_INDEX)
    assert (SCENES / f"{video}.mp4").is_file() and (SCENES / f"{video}.json").is_file()
    total = sum(p.stat().st_size for p in SCENES.rglob("*") if p.is_file())
    assert total <= 25 * 1024 * 1024


@pytest.mark.parametrize("name", list(CASES))
def test_fixture_truth_is_self_consistent(name):
    truth = _truth(name)
    cam = _camera(truth)
    image = cv2.imread(str(SCENES / truth["image"]))
    reference = cv2.imread(str(SCENES / truth["reference_image"]))
    assert image.shape[1::-1] == tuple(truth["image_size"]) == reference.shape[1::-1]
    w, l = truth["board_size_mm"]
    corners = cam.project(np.array([[0, 0, 0], [w, 0, 0], [w, l, 0], [0, l, 0]], dtype=float))
    assert np.allclose(corners, truth["corners_px"], atol=0.01)
    for tok in truth["tokens"]:
        px = cam.project(np.array([[*tok["xy_mm"], tok["z_mm"]]]))[0]
        assert np.allclose(px, tok["xy_px"], atol=0.01)
        assert sum(tok["coverages"].values()) <= 1.0 + 1e-9
        assert 0.0 <= tok["visible"] <= 1.0


def test_cases_show_what_they_say():
    assert not _truth("empty_board")["tokens"]
    assert len(_truth("all_16_tokens")["tokens"]) == 16
    assert any(t["fallen"] for t in _truth("off_board_and_fallen")["tokens"])
    assert any(t["state"] == "off_board" for t in _truth("off_board_and_fallen")["tokens"])
    assert [o["kind"] for o in _truth("hand")["occluders"]] == ["hand"]
    assert min(t["visible"] for t in _truth("hand")["tokens"]) < 0.9  # the hand hides part of a token
    assert {o["kind"] for o in _truth("cup_cards_banknotes")["occluders"]} == {"cup", "card", "banknote"}
    assert _truth("glare_crease_bowed")["board_bow_mm"][0] > 0
    assert any(abs(d) > 0.1 for d in _truth("lens_distortion")["camera"]["dist_coeffs"][:2])
    oblique = _camera(_truth("oblique_60"))
    assert np.degrees(np.arccos(-oblique.r[2, 2])) > 55


def test_a_fixture_regenerates_identically():
    name = "touching_and_lines"
    index = list(CASES).index(name)
    _, truth, _ = make_photo(BOARD, FIXTURE_SEED, index, case_config(name))
    committed = _truth(name)
    assert [t["xy_mm"] for t in truth["tokens"]] == [t["xy_mm"] for t in committed["tokens"]]
    assert [t["space"] for t in truth["tokens"]] == [t["space"] for t in committed["tokens"]]
    for a, b in zip(truth["tokens"], committed["tokens"]):
        assert a["xy_px"] == pytest.approx(b["xy_px"], abs=1e-3)


def test_fixture_video_truth_matches_its_frames():
    name = video_name(FIXTURE_SEED, VIDEO_INDEX)
    truth = json.loads((SCENES / f"{name}.json").read_text())
    cap = cv2.VideoCapture(str(SCENES / f"{name}.mp4"))
    count = 0
    while cap.read()[0]:
        count += 1
    assert count == len(truth["frames"]) and truth["fps"] == 30
    kinds = [e["type"] for e in truth["events"]]
    assert kinds[0] == "hand_enters" and "hand_leaves" in kinds and "slide_starts" in kinds
    assert "knocked" in kinds
    frames = [e["frame"] for e in truth["events"]]
    assert frames == sorted(frames)
    cam = _camera(truth)
    for frame in truth["frames"][::7]:
        for tok in frame["tokens"]:
            assert np.allclose(cam.project(np.array([[*tok["xy_mm"], tok["z_mm"]]]))[0], tok["xy_px"], atol=0.01)
    # a token that rests stops moving, and stays where the event says
    for e in truth["events"]:
        if e["type"] == "rests":
            last = truth["frames"][-1]["tokens"][e["token"]]
            assert not last["moving"] and last["space"] == e["space"]
