"""A synthetic photo with its truth, calibration file and empty-board frame, for pipeline, report and CLI tests.

Rendered once per test session (knockcam.synth, deterministic per seed and index) into a temporary folder,
removed when the session's process ends.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from knockcam.board.layout import load_board
from knockcam.detect.tokens import Token

SEED, INDEX = 11, 11  # a scene with all four sides and close calls


@dataclass(frozen=True)
class Scene:
    photo: Path
    empty: Path  # the same camera and light with no tokens
    truth: dict
    calibration: Path  # the true calibration as a knockcam calibration file

    def truth_detector(self, sigma_mm: float = 1.5):
        """A detector that returns the scene's true token bases (for tests of everything after detection)."""
        tokens = [Token(side=t["side"], xy_mm=tuple(t["xy_mm"]), confidence=0.9, sigma_mm=sigma_mm, source="truth")
                  for t in self.truth["tokens"]]

        def detect(image, calibration, board, reference=None):
            return list(tokens)

        return detect


@lru_cache(maxsize=4)
def scene(seed: int = SEED, index: int = INDEX) -> Scene:
    from knockcam.synth.scene import config, encode_jpeg, finish_photo, make_photo, render, sample_scene

    board = load_board()
    folder = Path(tempfile.mkdtemp(prefix="knockcam-scene-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    for index in range(index, index + 20):  # the first scene from ``index`` on with tokens of at least 3 sides
        jpeg, truth, _ = make_photo(board, seed, index)
        if len({t["side"] for t in truth["tokens"]}) >= 3 and len(truth["tokens"]) >= 8:
            break
    photo = folder / f"scene_{seed}_{index}.jpg"
    photo.write_bytes(jpeg)
    rng = np.random.default_rng([seed, index])
    spec = sample_scene(board, rng, config())
    empty_spec = replace(spec, tokens=())
    if hasattr(spec, "occluders"):
        empty_spec = replace(empty_spec, occluders=())
    empty = folder / f"scene_{seed}_{index}_empty.jpg"
    empty.write_bytes(encode_jpeg(finish_photo(render(empty_spec, board).image, spec.photo), spec.photo.jpeg_quality))
    calibration = folder / "truth-calibration.yaml"
    calibration.write_text(yaml.safe_dump(truth["calibration"]), encoding="utf-8")
    (folder / photo.with_suffix(".json").name).write_text(json.dumps(truth), encoding="utf-8")
    return Scene(photo=photo, empty=empty, truth=truth, calibration=calibration)
