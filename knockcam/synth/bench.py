"""Benchmark of the renderer: stills, YOLO samples and video frames per second, written to bench/synth.md.

Each mode renders into a temporary folder through ``knockcam.synth.batch.generate`` -- the code path of
``knockcam synth`` -- and the figure counts what lands on disk (JPEG, truth JSON, labels), not just renders.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from knockcam.board.layout import Board
from knockcam.synth.batch import generate


def _video_frames(folder: Path) -> int:
    return sum(len(json.loads(p.read_text())["frames"]) for p in folder.glob("video_*.json"))


def run_bench(board: Board, count: int = 300, videos: int = 4, seed: int = 777, workers: int = 2) -> list[dict]:
    """Render ``count`` stills and YOLO samples and ``videos`` videos; one row per mode with its rate."""
    rows = []
    for mode, n in (("stills", count), ("yolo", count), ("video", videos)):
        with tempfile.TemporaryDirectory(prefix=f"knockcam-synth-bench-{mode}-") as tmp:
            result = generate(Path(tmp), board, n, seed, mode=mode, workers=workers)
            images = _video_frames(Path(tmp)) if mode == "video" else n
        rows.append({"mode": mode, "items": n, "images": images, "seconds": round(result.seconds, 2),
                     "images_per_second": round(images / result.seconds, 2)})
    return rows


def report(rows: list[dict], command: str, workers: int, size: tuple[int, int]) -> str:
    """The results as markdown, with the machine and the command that reproduces them."""
    from knockcam.bench import load_average, machine

    what = {"stills": "photo + empty-board reference JPEG + truth JSON",
            "yolo": "canonical-view training image + label file (no reference frame)",
            "video": "30 fps video frames with per-frame truth (MP4 + JSON)"}
    lines = [
        "# Renderer benchmark (knockcam synth)", "",
        f"Command: `{command}`", "",
        f"Machine: {machine()}, {workers} worker processes, photos {size[0]}x{size[1]}; load average at the end "
        f"{load_average()}. Times include process start-up, the table-texture "
        "bank each process fills on first use, and writing every file.", "",
        "| mode | what one item is | items | images | seconds | images per second |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['mode']} | {what[r['mode']]} | {r['items']} | {r['images']} | {r['seconds']} | "
                     f"**{r['images_per_second']}** |")
    lines += ["", "For stills, an image is the photo; its empty-board reference frame is rendered too but "
              "not counted.", ""]
    return "\n".join(lines)
