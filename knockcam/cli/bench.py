"""``knockcam bench``: detection accuracy and speed on held-out synthetic scenes, written to bench/results.md;
with ``--photos DIR``, accuracy on labelled photos (real ones: knockcam.labelled)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from knockcam.cli import add_board_option, add_workers_option
from knockcam.seeds import HELD_OUT_FIRST, HELD_OUT_LIMIT


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench", help="benchmark token detection on held-out synthetic scenes",
        description=f"Render held-out synthetic scenes (seeds below {HELD_OUT_LIMIT}; training uses the rest), run the "
                    "detectors with and without an empty-board reference frame, with true and automatic "
                    "calibration, and write accuracy, flags, colour confusions and speed to a markdown file.")
    parser.add_argument("--scenes", type=int, default=500, help="number of scenes (default 500)")
    parser.add_argument("--seed-start", type=int, default=HELD_OUT_FIRST,
                        help=f"first scene seed (default {HELD_OUT_FIRST}: bench/results.md's scenes)")
    parser.add_argument("--out", default=None,
                        help="results file (default bench/results.md; with --photos, DIR/knockcam-bench.md)")
    add_board_option(parser)
    parser.add_argument("--model", metavar="ONNX", default=None,
                        help="learned detector weights (default: the shipped model, if trained)")
    parser.add_argument("--json", action="store_true", help="also print the tallies as JSON")
    parser.add_argument("--speed", action="store_true",
                        help="only time one held-out scene (a few seconds) and compare with the speed check the "
                             "--out results file recorded: is this machine as fast as the one that made it?")
    parser.add_argument("--given-only", action="store_true",
                        help="only the configurations with the true calibration (minutes, not the whole run's half "
                             "hour: for looking into the detectors; needs its own --out)")
    parser.add_argument("--failures", metavar="FILE", default=None,
                        help="also write every token missed or called wrong and every false detection, one JSON "
                             "line each (configuration, scene seed, cause, flagged, the true token, the call)")
    add_workers_option(parser, help="find the automatic calibrations (most of the run's time) in N worker "
                                    "processes, a few scenes at a time, while the detectors wait; then the detectors "
                                    "are timed alone (default: one per CPU)")
    parser.add_argument("--calibration-cache", metavar="DIR", default=None,
                        help="keep the automatic calibrations found in DIR, and read those found before by the "
                             "same calibration code from there: the same answers, so a change to the detectors "
                             "alone reruns in minutes (knockcam/calibrate/cache.py)")
    parser.add_argument("--photos", metavar="DIR", default=None,
                        help="instead, score the labelled photos in DIR (a label file beside each: "
                             "docs/labelled-photos.md) every way they allow and write how many calls were right")
    parser.add_argument("--order", metavar="SIDES", default=None,
                        help="with --photos: the turn order for the photos whose labels give none (payouts compared)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import Progress

    from knockcam.bench import report, run as run_bench, speed_check
    from knockcam.cli import invoked_as, worker_count
    from knockcam.files import check_writable, write_atomic
    from knockcam.board import load_board
    from knockcam.detect import AUTO, load_model
    from knockcam.errors import KnockcamError

    if args.photos is not None:
        return _photos(args)
    if args.given_only and args.out is None:
        raise KnockcamError("--given-only measures part of the benchmark: name its results file with --out, "
                            "so that bench/results.md is not overwritten")
    args.out = str(check_writable(args.out or "bench/results.md"))  # before the hour of scenes, not after
    failures_path = str(check_writable(args.failures)) if args.failures else None
    if args.scenes < 1:
        raise KnockcamError(f"--scenes must be at least 1, not {args.scenes}")
    workers = worker_count(args.workers)
    cache_dir = None
    if args.calibration_cache:  # a folder that can be made and written in, or a one-line error now
        cache_dir = str(check_writable(Path(args.calibration_cache) / "calibration.json").parent)
    board = load_board(args.board)
    model = load_model(args.model if args.model else AUTO)
    if args.speed:
        return _speed(board, model, args.out)
    note = _models_used(model)
    console = Console(stderr=True)
    command = invoked_as("bench", f"knockcam bench --scenes {args.scenes} --seed-start {args.seed_start} --out {args.out}"
                                  + (" --given-only" if args.given_only else "")
                                  + (f" --workers {args.workers}" if args.workers else "")
                                  + (f" --failures {args.failures}" if args.failures else "")
                                  + (f" --calibration-cache {cache_dir}" if cache_dir else ""))
    failures: list[dict] = []

    def write_failures():
        if failures_path:
            write_atomic(failures_path, "".join(json.dumps(f) + "\n" for f in failures).encode("utf-8"))

    def checkpoint(tallies, facts, done):
        write_atomic(args.out, report(tallies, facts, command, args.scenes, args.seed_start, note, done).encode("utf-8"))
        write_failures()

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("scenes", total=args.scenes)
        tallies, facts = run_bench(board, args.scenes, args.seed_start, model,
                                   progress=lambda n: bar.update(task, completed=n), checkpoint=checkpoint,
                                   given_only=args.given_only, failures=failures.append if failures_path else None,
                                   workers=workers, cache_dir=cache_dir)
    text = report(tallies, facts, command, args.scenes, args.seed_start, note, speed=speed_check(board, model))
    write_atomic(args.out, text.encode("utf-8"))
    write_failures()
    if args.json:
        print(json.dumps([_tally_dict(t) for t in tallies], indent=2))
    else:
        Console().print(text)
    console.print(f"wrote {args.out}" + (f" and {failures_path} ({len(failures)} failures)" if failures_path else ""))
    return 0


def _models_used(model) -> str:
    """The results file's 'Learned model' line: the token model and every network beside it, or which are
    missing (the file says what was measured with what)."""
    from knockcam.detect import cover, fallen, refine, verify
    from knockcam.detect.model import default_model_path

    if model is None:
        note = (f"missing ({default_model_path()} not found): only the reference-frame detector was run; "
                "'without a reference frame' needs the learned model")
    else:
        note = f"{model.path}"
    refiners = [("base refiner" + (f" {n}" if n > 1 else ""), path) for n, path in enumerate(refine.default_paths(), 1)]
    for what, path in (("fallen-token classifier", fallen.default_path()),
                       ("fallen-token classifier for photo pairs", fallen.pair_path()),
                       ("token verifier", verify.default_path()),
                       ("token verifier of a photo alone", verify.alone_path()), *refiners,
                       ("base refiner of a photo alone", refine.alone_path()),
                       ("fallen-token placer", fallen.placer_path()),
                       ("fallen-token placer for photo pairs", fallen.pair_placer_path()),
                       ("cover network (what covers the board)", cover.path())):
        note += f"; {what}: {path if path.is_file() else 'none (' + str(path) + ' not found)'}"
    return note


def _tally_dict(t) -> dict:
    """One configuration's counts, as --json prints them."""
    return {"name": t.name, "tokens": t.tokens, "right": t.right, "flagged": t.flagged, "unflagged": t.unflagged,
            "unflagged_right": t.unflagged_right, "missed": t.missed, "false_detections": t.false_detections,
            "unflagged_false_detections": t.unflagged_false_detections, "scenes": t.scenes,
            "scenes_exact": t.scenes_exact, "scenes_sound": t.scenes_sound}


def _speed(board, model, results: str) -> int:
    """``knockcam bench --speed``: this machine's speed check, and the one ``results`` recorded."""
    from knockcam.bench import speed_check, speed_text

    here = speed_check(board, model)
    return print_speed(speed_text(here), here, results)


def print_speed(line: str, here: dict[str, float], results: str) -> int:
    """A benchmark's ``--speed``: the speed check's ``line`` for this machine (``here``: its medians), then how
    it compares with the one the results file ``results`` recorded."""
    from rich.console import Console

    from knockcam.bench import compare_speed

    console = Console(soft_wrap=True)  # a path or a figure is not broken across lines
    console.print(line)
    for compared in compare_speed(here, results):
        console.print(compared)
    return 0


def _photos(args: argparse.Namespace) -> int:
    """``knockcam bench --photos DIR``: the labelled photos in DIR against their labels."""
    from pathlib import Path

    from rich.console import Console
    from rich.progress import Progress

    from knockcam.board import load_board
    from knockcam.cli import invoked_as
    from knockcam.files import check_writable, write_atomic
    from knockcam.labelled import check_all, find_labelled, report, runs
    from knockcam.pipeline import parse_order

    board = load_board(args.board)
    photos, unlabelled, alone = find_labelled(args.photos, board, parse_order(args.order))
    out = check_writable(args.out or Path(args.photos) / "knockcam-bench.md")
    if alone:
        print(f"label files with no photo beside them, not scored: {', '.join(p.name for p in alone)}", file=sys.stderr)
    command = invoked_as("bench", f"knockcam bench --photos {args.photos} --out {out}"
                                  + (f" --order {args.order}" if args.order else ""))
    console = Console(stderr=True)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("photos", total=runs(photos))
        rows = check_all(photos, args.board, progress=lambda: bar.advance(task))
    text = report(rows, photos, unlabelled, args.photos, command, alone)
    write_atomic(out, text)
    Console(soft_wrap=True).print(text, markup=False, highlight=False)
    console.print(f"wrote {out}")
    return 0
