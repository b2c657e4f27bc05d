"""The committed test fixtures: one still (with its reference frame) per case of issue 4, and one video.

Each case is the normal renderer with some randomisation ranges pinned (synth.yaml overrides), so
the fixtures show every case at least once while staying small.
"""

from __future__ import annotations

from pathlib import Path

from knockcam.board.layout import Board
from knockcam.synth.output import write_bytes, write_json
from knockcam.synth.scene import config, make_photo, merge

FIXTURE_SEED = 4
NO_OCCLUDERS = {"occluders": {"hand_p": 0.0, "cup_p": 0.0, "card_p": 0.0, "banknote_p": 0.0}}
CLEAN_PHOTO = {"photo": {"motion_blur_p": 0.0, "defocus_p": 0.0, "glare_p": 0.0}}

CASES: dict[str, dict] = {
    "overhead": {"camera": {"tilt_deg": [0, 3]}, **NO_OCCLUDERS, **CLEAN_PHOTO},
    "oblique_60": {"camera": {"tilt_deg": [58, 60]}, **NO_OCCLUDERS, **CLEAN_PHOTO},
    "lens_distortion": {"camera": {"strong_distortion_p": 1.0, "no_distortion_p": 0.0}, **NO_OCCLUDERS},
    "touching_and_lines": {"camera": {"board_fill": [0.92, 0.97], "tilt_deg": [0, 30]}, "tokens": {"placement": {"space": 0.1, "near_line": 0.45, "touching": 0.45, "go_area": 0.0,
                                                    "off_board": 0.0}, "per_side_min": 3}, **NO_OCCLUDERS},
    "off_board_and_fallen": {"tokens": {"placement": {"space": 0.4, "near_line": 0.0, "touching": 0.0, "go_area": 0.2,
                                                      "off_board": 0.4}, "fallen_p": 0.35, "per_side_min": 2},
                             **NO_OCCLUDERS},
    "hand": {"occluders": {"hand_p": 1.0, "hand_over_token_p": 1.0, "cup_p": 0.0, "card_p": 0.0, "banknote_p": 0.0}},
    "cup_cards_banknotes": {"occluders": {"hand_p": 0.0, "cup_p": 1.0, "card_p": 1.0, "banknote_p": 1.0}},
    "motion_blur": {"photo": {"motion_blur_p": 1.0, "defocus_p": 0.0}, **NO_OCCLUDERS},
    "defocus": {"photo": {"motion_blur_p": 0.0, "defocus_p": 1.0}, **NO_OCCLUDERS},
    "glare_crease_bowed": {"photo": {"glare_p": 1.0}, "crease_p": 1.0, "bow_p": 1.0, **NO_OCCLUDERS},
    "all_16_tokens": {"tokens": {"per_side_min": 4, "side_present_p": 1.0}, **NO_OCCLUDERS},
    "empty_board": {"tokens": {"side_present_p": 0.0}, **NO_OCCLUDERS},
}
VIDEO_INDEX = 3  # video 3 of run FIXTURE_SEED: a flick from behind GO! knocks a token onto Luxury Tax


def case_config(name: str) -> dict:
    return merge(config(), CASES[name])


def write_fixtures(out: Path, board: Board) -> list[Path]:
    """Write every case's still, reference frame and truth, and the fixture video, into ``out``."""
    from knockcam.synth.video import write_video

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for i, name in enumerate(CASES):
        jpeg, truth, _, ref = make_photo(board, FIXTURE_SEED, i, case_config(name), reference=True)
        truth["case"] = name
        truth["image"] = f"{name}.jpg"
        truth["reference_image"] = f"{name}_ref.jpg"
        write_bytes(out / f"{name}.jpg", jpeg)
        write_bytes(out / f"{name}_ref.jpg", ref)
        write_json(out / f"{name}.json", truth)
        written.append(out / f"{name}.jpg")
    written.append(write_video(out, board, FIXTURE_SEED, VIDEO_INDEX))
    return written
