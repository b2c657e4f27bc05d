"""Benchmark of the live loop: frames/s through it at 1280x720 and "board still" -> updated score latency.

A synthetic game video (knockcam.live.compose's demo game, rendered at 1280x720) is written as an MJPG
file and played through the whole loop -- decoding, motion gate, detection on still frames (the real
detectors), tracker, engine, game log with fsync and evidence frames -- exactly as ``knockcam live``.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from knockcam import settings
from knockcam.bench import load_average, machine
from knockcam.board.layout import load_board
from knockcam.files import write_atomic
from knockcam.live.compose import DEMO_ANSWERS, DEMO_ORDER, DEMO_TOKENS, demo_expected, demo_video
from knockcam.live.frames import video_source
from knockcam.live.prompts import ScriptedPrompter
from knockcam.live.session import LiveGame, RunStats, new_log


def _pct(values, q) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def game_accuracy(seeds, order=("red", "yellow", "green", "blue"), tokens: int = 4, size=(640, 360),
                  model="auto") -> list[dict]:
    """Random whole games (knockcam.live.compose.random_game) through the live loop with the real detectors
    and nobody answering (every question takes its default): do the standings come out as the engine
    scores the script?"""
    from knockcam.live.compose import random_game
    from knockcam.live.frames import list_source

    board = load_board()
    rows = []
    for seed in seeds:
        composed, engine = random_game(board, seed, tuple(order), tokens, size=size)
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "game.jsonl"
            new_log(log, order=order, board_path=None, tokens_per_side=tokens, reslide_off_board="none",
                    review="ambiguous", source={"frames": "memory"}, calibration=composed.calibration).close()
            prompter = ScriptedPrompter({})
            live = LiveGame(log, prompter, model=model)
            stats = live.run(list_source(composed.frames, composed.fps))
        rounds_right = sum(dict(a.delta) == dict(b.delta) for a, b in zip(live.game.history, engine.history))
        rows.append({"seed": seed, "frames": len(composed.frames), "observations": stats.observations,
                     "over": live.tracker.phase == "over", "rounds_right": rounds_right,
                     "rounds": engine.round_number,
                     "standings_right": [s.to_dict() for s in live.game.standings()]
                     == [s.to_dict() for s in engine.standings()],
                     "questions": [k for k, _ in prompter.asked]})
    return rows


@dataclass(frozen=True)
class _Played:
    """The demo game played through the loop: the game, the loop's counters, its CPU seconds, and how fast the
    same video goes through decoding and the motion gate alone."""

    live: LiveGame
    stats: RunStats
    cpu_s: float
    gate_only_fps: float


def _play(board, composed, size: tuple[int, int], model) -> _Played:
    """Write ``composed`` as an MJPG video and play it through the whole loop, then through decoding and the
    motion gate alone (the loop without detection)."""
    from knockcam.live.motion import MotionGate

    with tempfile.TemporaryDirectory() as tmp:
        video = composed.write(Path(tmp) / "game.avi")
        log = Path(tmp) / "game.jsonl"
        new_log(log, order=DEMO_ORDER, board_path=None, tokens_per_side=DEMO_TOKENS, reslide_off_board="none",
                review="ambiguous", source={"video": str(video)}, calibration=composed.calibration).close()
        live = LiveGame(log, ScriptedPrompter(dict(DEMO_ANSWERS)), model=model)
        source = video_source(str(video))
        cpu0 = time.process_time()
        stats = live.run(source)
        cpu_s = time.process_time() - cpu0
        source.close()
        source = video_source(str(video))
        gate = MotionGate(composed.calibration, board, size)
        g0 = time.perf_counter()
        n = 0
        for frame in source:
            gate.update(frame.image, frame.t)
            n += 1
        gate_only_fps = n / (time.perf_counter() - g0)
        source.close()
    return _Played(live, stats, cpu_s, gate_only_fps)


def run_bench(out: Path | None = Path("bench/live.md"), size: tuple[int, int] = (1280, 720), seed: int = 5,
              model="auto", games: int = 3) -> str:
    """Run the benchmark, write ``out`` (markdown, atomically) and return the report."""
    board = load_board()
    t0 = time.perf_counter()
    composed = demo_video(board, seed=seed, size=size)
    compose_s = time.perf_counter() - t0
    played = _play(board, composed, size, model)
    lines = _loop_lines(board, composed, size, compose_s, played)
    if games:
        lines += _games_lines(games, model)
    report = "\n".join(lines)
    if out is not None:
        write_atomic(out, report)
    return report


def _loop_lines(board, composed, size: tuple[int, int], compose_s: float, played: _Played) -> list[str]:
    """The report's first part: the demo game's frames/s and latency through the loop."""
    stats, live = played.stats, played.live
    expected = [s.to_dict() for s in demo_expected(board).standings()]
    got = [s.to_dict() for s in live.game.standings()]
    still_s = float(settings.load("live")["motion"]["still_s"])
    lat = stats.latencies
    return [
        "# Live loop benchmark (knockcam live)",
        "",
        f"Command: `{' '.join(shlex.quote(a) for a in ['knockcam', 'live', '--bench'])}` "
        "(or `python -c 'from knockcam.live.bench import run_bench; run_bench()'`)",
        "",
        f"Data: synthetic only -- the demo game of knockcam/live/compose.py (2 sides, 2 rounds, jail, Chance, "
        f"Railroad, knock-offs) rendered at {size[0]}x{size[1]}, {len(composed.frames)} frames at "
        f"{composed.fps:g} fps, written as MJPG and decoded by OpenCV. Rendering took {compose_s:.1f} s (not timed "
        "below). Detector: reference-frame detector"
        + (" + learned model" if live.model and _model_exists() else " only (no trained model present)") + ".",
        "",
        f"Machine: {machine()}; load average at the end {load_average()} (shared with other jobs).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| frames through the whole loop (decode, gate, detection on still frames, tracker, engine, log) | "
        f"{stats.frames} frames in {stats.wall_s:.2f} s = **{stats.fps:.1f} frames/s** |",
        f"| CPU time of this process for the whole loop (both cores count) | {played.cpu_s:.2f} s = "
        f"{stats.frames / max(played.cpu_s, 1e-9):.1f} frames per CPU-second |",
        f"| decode + motion gate only | {played.gate_only_fps:.1f} frames/s |",
        f"| motion gate alone (per frame, mean) | {1000 * stats.gate_s / max(stats.frames, 1):.2f} ms |",
        f"| still-board detections | {stats.observations} |",
        f"| detection per still frame (median / max) | {1000 * _pct(stats.detect_s, 50):.0f} ms / "
        f"{1000 * max(stats.detect_s or [float('nan')]):.0f} ms |",
        f"| board declared still -> updated score (median / p90 / max) | **{1000 * _pct(lat, 50):.0f} ms** / "
        f"{1000 * _pct(lat, 90):.0f} ms / {1000 * max(lat or [float('nan')]):.0f} ms |",
        f"| the same in CPU seconds of this process (median / max): about the wall time on an idle machine | "
        f"{1000 * _pct(stats.latencies_cpu, 50):.0f} ms / {1000 * max(stats.latencies_cpu or [float('nan')]):.0f} ms |",
        f"| last motion -> updated score (adds the {still_s:g} s stillness wait) | "
        f"{1000 * (still_s + _pct(lat, 50)):.0f} ms median |",
        f"| final standings as the engine scores the script | {'match' if got == expected else 'MISMATCH'}: "
        + ", ".join(f"{s['place']}. {s['side']} M{s['cash']}" for s in got) + " |",
        "",
        "Latency is measured from the frame on which the gate declares the board still to the tracker's "
        "update and the provisional round score (detection, space assignment, log line with fsync, tracker, "
        "engine); the evidence JPEG is written just after. The empty-board reference is the video's first still "
        "frame, as at a real table. The gate declares the board still after `motion.still_s` without motion "
        "(knockcam/data/live.yaml).",
        "",
    ]


def _games_lines(games: int, model) -> list[str]:
    """The report's second part: whole random games through the loop, nobody answering."""
    g0 = time.perf_counter()
    rows = game_accuracy(range(1, games + 1), model=model)
    lines = [
        "## Whole random games (accuracy of the game, not only of the detector)",
        "",
        f"{games} random games (`knockcam.live.bench.game_accuracy(range(1, {games + 1}))`): 4 sides, 4 tokens "
        "a side, 4 rounds, every slide to a random spot at least 8 mm from a space line, a quarter of the "
        "slides knocking another token (a third of those off the board), Go to Jail, Chance re-slides, "
        "Railroad moves; rendered at 640x360 and played through the loop with the real detector. Nobody "
        "answers: every question takes its default (no to 'did it go off the board?', the suggested "
        f"Railroad move, ok at the review). {time.perf_counter() - g0:.0f} s in all.",
        "",
        "| seed | frames | still-board detections | rounds right | standings right | questions asked |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['frames']} | {r['observations']} | {r['rounds_right']} / {r['rounds']} | "
                     f"{'yes' if r['standings_right'] else 'NO'} | {', '.join(r['questions']) or '-'} |")
    lines.append("")
    return lines


def _model_exists() -> bool:
    try:
        from knockcam.detect.model import default_model_path

        return default_model_path().is_file()
    except Exception:  # the model module may not be importable without onnxruntime
        return False


if __name__ == "__main__":
    print(run_bench())
