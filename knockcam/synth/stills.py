"""Still photos with truth on disk: NAME.jpg (the photo), NAME_ref.jpg (the empty board from the same
camera under slightly different light) and NAME.json (the ground truth)."""

from __future__ import annotations

from pathlib import Path

from knockcam.board.layout import Board
from knockcam.synth.output import write_bytes, write_json
from knockcam.synth.scene import make_photo


def still_name(seed: int, index: int) -> str:
    return f"scene_s{seed}_{index:05d}"


def write_still(out: Path, board: Board, seed: int, index: int, cfg: dict | None = None) -> Path:
    """Render scene ``index`` of run ``seed`` and write the JPEG and its truth; returns the JPEG path."""
    jpeg, truth, _, ref = make_photo(board, seed, index, cfg, reference=True)
    name = still_name(seed, index)
    truth["image"] = f"{name}.jpg"
    truth["reference_image"] = f"{name}_ref.jpg"
    write_bytes(Path(out) / f"{name}_ref.jpg", ref)
    write_bytes(Path(out) / f"{name}.jpg", jpeg)
    write_json(Path(out) / f"{name}.json", truth)
    return Path(out) / f"{name}.jpg"
