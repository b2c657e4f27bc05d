"""``knockcam synth OUT_DIR``: synthetic photos (or videos, a whole game, or a YOLO dataset) with exact ground
truth."""

from __future__ import annotations

import argparse
import json

from knockcam.cli import add_board_option, add_workers_option


def register(subparsers) -> None:
    p = subparsers.add_parser("synth", help="render synthetic board photos/videos with ground truth",
                              description="Render synthetic scenes of the board with exact ground truth "
                                          "(deterministic per --seed).")
    p.add_argument("out_dir", metavar="OUT_DIR", nargs="?", help="folder to write into (created if missing)")
    p.add_argument("--count", type=int, default=None,
                   help="how many photos (or videos) to render (default 10; with --bench 300)")
    p.add_argument("--seed", type=int, default=0, help="run seed: the same seed gives the same scenes")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--video", action="store_true", help="write 30 fps videos with per-frame truth and events")
    mode.add_argument("--game", action="store_true",
                      help="write one whole random game to play with 'knockcam live --video': game.avi (tokens drawn "
                           "simply, 640x360), its calibration, an answers file and the standings the rules give it "
                           "(truth.json); --seed picks the game")
    mode.add_argument("--yolo", action="store_true",
                      help="write an ultralytics dataset in the detector's canonical view (images/, labels/, data.yaml)")
    mode.add_argument("--fixtures", action="store_true",
                      help="write the committed test fixtures (one still per case + a video; --count/--seed ignored)")
    mode.add_argument("--bench", metavar="RESULTS.md", nargs="?", const="bench/synth.md",
                      help="measure images/s of each mode in a temporary folder and write RESULTS.md "
                           "(default bench/synth.md; --count stills and YOLO samples, 4 videos)")
    add_board_option(p)
    add_workers_option(p, default=1, help="processes to render with (default 1)")
    p.add_argument("--preset", metavar="NAME",
                   help="render with a named change to the ranges (knockcam/data/synth.yaml presets: crowded, "
                        "camouflage)")
    p.add_argument("--order", help="with --game: the sides in round 1's turn order (default red,yellow,green,blue)")
    p.add_argument("--tokens", metavar="N", type=int, help="with --game: tokens per side (default 4)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.board.layout import load_board
    from knockcam.errors import KnockcamError
    from knockcam.synth.batch import generate
    from knockcam.synth.scene import config

    if args.count is None:
        args.count = 300 if args.bench else 10
    if args.count < 1:
        raise KnockcamError(f"--count must be at least 1, not {args.count}")
    if args.seed < 0:
        raise KnockcamError(f"--seed must be 0 or more, not {args.seed}")
    if (args.order is not None or args.tokens is not None) and not args.game:
        raise KnockcamError("--order and --tokens are for --game (a whole game): add --game, or leave them out")
    if args.preset and (args.bench or args.fixtures):
        raise KnockcamError("--preset changes what --yolo, --video or plain stills render; the fixtures and --bench "
                            "use the renderer's own ranges")
    board = load_board(args.board)
    if args.bench:
        return _bench(args, board)
    if args.out_dir is None:
        raise KnockcamError("give an OUT_DIR to write the scenes into (or --bench to measure the renderer)")
    if args.game:
        return _game(args, board)
    if args.fixtures:
        import time
        from pathlib import Path

        from knockcam.synth.fixtures import write_fixtures

        start = time.perf_counter()
        try:
            written = write_fixtures(Path(args.out_dir), board)
        except OSError as exc:
            raise KnockcamError(f"cannot write to {args.out_dir}: {exc.strerror or exc} (choose a writable OUT_DIR)") from None
        total = sum(p.stat().st_size for p in Path(args.out_dir).iterdir() if p.is_file())
        print(json.dumps({"mode": "fixtures", "files": len(written), "bytes": total,
                          "seconds": round(time.perf_counter() - start, 1)}))
        return 0
    mode = "yolo" if args.yolo else "video" if args.video else "stills"
    try:
        result = generate(args.out_dir, board, args.count, args.seed, mode=mode, workers=args.workers,
                          cfg=config(args.preset))
    except OSError as exc:
        raise KnockcamError(f"cannot write to {args.out_dir}: {exc.strerror or exc} (choose a writable OUT_DIR)") from None
    summary = {"mode": result.mode, "count": result.count, "out_dir": result.out_dir,
               "seconds": round(result.seconds, 2), "per_second": round(result.per_second, 2)}
    if mode == "yolo":
        summary["labels"] = result.labels
    if args.json:
        print(json.dumps(summary))
    else:
        from rich.console import Console

        extra = f", {result.labels} labels" if mode == "yolo" else ""
        Console().print(f"wrote {result.count} {mode} to {result.out_dir} in {result.seconds:.1f} s "
                        f"({result.per_second:.1f}/s{extra})")
    return 0


def _bench(args: argparse.Namespace, board) -> int:
    """``--bench``: render every mode into temporary folders and write the rates to a markdown file."""
    from rich.console import Console

    from knockcam.cli import invoked_as
    from knockcam.files import write_atomic
    from knockcam.synth.bench import report, run_bench
    from knockcam.synth.scene import config

    rows = run_bench(board, count=args.count, videos=min(4, args.count), seed=args.seed, workers=args.workers)
    command = invoked_as("synth", f"knockcam synth --bench {args.bench} --count {args.count} --workers {args.workers}")
    text = report(rows, command, args.workers, tuple(config()["image_size"]))
    write_atomic(args.bench, text.encode("utf-8"))
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            Console().print(f"{r['mode']}: {r['images']} images in {r['seconds']} s ({r['images_per_second']}/s)")
        Console().print(f"wrote {args.bench}")
    return 0


def _game(args: argparse.Namespace, board) -> int:
    """``--game``: one random whole game (knockcam.live.compose.random_game: every slide to a free spot, some
    knocking another token, jail, Chance) written for ``knockcam live --video``, with the standings the rules
    give its script when every question takes its default (the answers file written beside it)."""
    import shlex
    from pathlib import Path

    from knockcam.errors import KnockcamError
    from knockcam.files import write_atomic
    from knockcam.live.compose import random_game
    from knockcam.sides import SIDES, TOKENS_PER_SIDE, parse_sides

    order = tuple(parse_sides(args.order or ",".join(SIDES), "order"))
    tokens = TOKENS_PER_SIDE if args.tokens is None else args.tokens
    if not 1 <= tokens <= TOKENS_PER_SIDE:
        raise KnockcamError(f"--tokens must be 1 to {TOKENS_PER_SIDE} (RULES.md R2), not {tokens}")
    out = Path(args.out_dir)
    composed, engine = random_game(board, args.seed, order, tokens)
    try:
        out.mkdir(parents=True, exist_ok=True)
        video = composed.write(out / "game.avi")
        composed.calibration.save(out / "calibration.yaml", board.size_mm)
        write_atomic(out / "answers.yaml", "{}  # every question takes its default answer\n")
        truth = {"seed": args.seed, "order": list(order), "tokens": tokens, "frames": len(composed.frames),
                 "rounds": [dict(r.delta) for r in engine.history],
                 "standings": [s.to_dict() for s in engine.standings()]}
        write_atomic(out / "truth.json", json.dumps(truth, indent=2) + "\n")
    except (OSError, RuntimeError) as exc:  # RuntimeError: no video writer opens there
        raise KnockcamError(f"cannot write to {out}: {getattr(exc, 'strerror', None) or exc} (choose a writable "
                            "OUT_DIR)") from None
    play = shlex.join(["knockcam", "live", "--video", str(video), "--calibration", str(out / "calibration.yaml"),
                       "--order", ",".join(order), "--tokens", str(tokens), "--answers", str(out / "answers.yaml")])
    if args.json:
        print(json.dumps({"mode": "game", "out_dir": str(out), "frames": len(composed.frames), "play": play}))
    else:
        print(f"wrote a {len(order)}-side game of {len(composed.frames)} frames to {out}; play it with\n  {play}\n"
              f"and compare the standings with {out / 'truth.json'}")
    return 0
