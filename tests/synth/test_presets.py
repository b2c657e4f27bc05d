"""Named changes to the renderer's ranges (synth.yaml presets), as 'knockcam synth --preset' renders them."""

import json

import cv2
import numpy as np
import pytest

from knockcam.board.layout import load_board
from knockcam.cli import main
from knockcam.errors import KnockcamError
from knockcam.synth.scene import config, sample_scene

BOARD = load_board()


def test_crowded_preset_changes_the_tokens_only():
    plain, crowded = config(), config("crowded")
    assert crowded["tokens"]["placement"]["touching"] > plain["tokens"]["placement"]["touching"]
    assert crowded["tokens"]["per_side_min"] == 2
    assert sum(crowded["tokens"]["placement"].values()) == pytest.approx(1.0)
    for key in plain:
        if key != "tokens":
            assert crowded[key] == plain[key]
    assert crowded["tokens"]["per_side_max"] == plain["tokens"]["per_side_max"]


def test_crowded_scenes_have_more_touching_bases():
    """Over the same seeds, crowded scenes put more pairs of bases within a base's diameter (+2 mm)."""
    def touching_pairs(cfg):
        pairs = 0
        for index in range(12):
            tokens = sample_scene(BOARD, np.random.default_rng([77, index]), cfg).tokens
            xy = np.array([t.xy_mm for t in tokens]).reshape(-1, 2)
            d = np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))
            pairs += int(np.sum(np.triu(d < BOARD.token.base_diameter_mm + 2, 1)))
        return pairs
    assert touching_pairs(config("crowded")) > touching_pairs(config())


def _own_colour_share(cfg) -> float:
    """Share of tokens whose base centre lies on a space printed in their own colour (the camouflage preset's)."""
    printed = config("camouflage")["tokens"]["own_colour"]
    on, total = 0, 0
    for index in range(12):
        for token in sample_scene(BOARD, np.random.default_rng([78, index]), cfg).tokens:
            total += 1
            on += any(set(printed[token.side]) & {space.color_set, space.kind}
                      and cv2.pointPolygonTest(np.float32(space.polygon), token.xy_mm, False) >= 0
                      for space in BOARD.spaces)
    return on / total


def test_camouflage_preset_puts_tokens_on_their_own_colour():
    """Camouflaged tokens (a yellow token on Chance, a red one on the red set) are what the token network
    misses most: the preset puts far more there than the plain ranges do, and nothing else changes."""
    plain, camouflage = config(), config("camouflage")
    assert sum(camouflage["tokens"]["placement"].values()) == pytest.approx(1.0)
    for key in plain:
        if key != "tokens":
            assert camouflage[key] == plain[key]
    assert _own_colour_share(camouflage) > 2 * _own_colour_share(plain)


def test_unknown_preset_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(KnockcamError, match="crowded"):
        config("no_such_preset")
    assert main(["synth", str(tmp_path / "x"), "--count", "1", "--preset", "no_such_preset"]) == 2
    assert "no synth preset" in capsys.readouterr().err
    assert main(["synth", str(tmp_path / "f"), "--fixtures", "--preset", "crowded"]) == 2


def test_preset_renders_a_yolo_set(tmp_path, capsys):
    assert main(["synth", str(tmp_path / "y"), "--count", "2", "--seed", "5", "--yolo", "--preset", "crowded",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["count"] == 2 and summary["labels"] > 0


def test_markers_preset_lays_the_cards_and_frames_them_and_changes_nothing_else():
    from knockcam.calibrate.markers import detect_markers
    from knockcam.synth.scene import make_photo

    plain, laid = config(), config("markers")
    assert laid["marker_cards"] and not plain["marker_cards"]
    assert laid["camera"]["frame_margin_mm"] > plain["camera"]["frame_margin_mm"] == 0
    for key in plain:
        if key not in ("marker_cards", "camera"):
            assert laid[key] == plain[key]
    photos = {}
    for name, cfg in (("plain", plain), ("laid", laid)):
        jpeg, truth, _ = make_photo(BOARD, 4243, 9, cfg)
        photos[name] = (cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR), truth)
    assert detect_markers(photos["plain"][0]).corners == {} and "marker_cards" not in photos["plain"][1]["info"]
    found = detect_markers(photos["laid"][0]).corners
    assert sorted(found) == [0, 1, 2, 3] and photos["laid"][1]["info"]["marker_cards"]
