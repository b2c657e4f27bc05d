"""``knockcam train``: train the token model on a synthetic canonical dataset and export models/tokens.onnx;
with ``--fallen``, the fallen-token classifier (models/fallen.onnx), with ``--fallen-pair`` the one for photo
pairs (models/fallen_pair.onnx), with ``--verify`` the token verifier (models/verify.onnx; with ``--verify-alone``
the one for a photo alone, models/verify_alone.onnx), with ``--refine``
the base refiners (models/refine.onnx, models/refine_2.onnx), with ``--refine-alone`` the one for a photo
alone (models/refine_alone.onnx), with ``--fallen-base`` where a lying token's base is
(models/fallen_base.onnx; with ``--fallen-base-pair`` the one that sees the empty frame too), with ``--cover``
what covers the board, seen in the photo (models/cover.onnx), each on renders it makes itself.

Needs the optional extra: ``pip install 'knockcam[train]'`` (ultralytics; weights are AGPL-3.0).
``--evaluate MODEL.onnx`` measures a model on a held-out dataset instead, with the runtime only.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train the token detector (needs the [train] extra) or measure one (--evaluate)",
        description="Train the learned token detector from scratch on a canonical YOLO dataset made by "
                    "'knockcam synth OUT --yolo', export it to OUT/tokens.onnx; or, with --evaluate, "
                    "measure an exported model on a held-out dataset. Recipe: knockcam/data/detect.yaml.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("dataset", metavar="DATASET_DIR", type=Path, nargs="?",
                        help="dataset with images/ and labels/ (optional with --resume)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default: detect.yaml train.epochs)")
    parser.add_argument("--hours", type=float, default=None,
                        help="train for this wall-clock time instead of --epochs (epochs fitted after the first)")
    parser.add_argument("--imgsz", type=int, default=None,
                        help="training size, long side in px (default: the canonical view's, rounded to 32)")
    parser.add_argument("--batch", type=int, default=None, help="batch size (default: detect.yaml)")
    parser.add_argument("--workers", type=int, default=None, help="dataloader workers (default: detect.yaml)")
    parser.add_argument("--device", default="cpu",
                        help="where the token model trains: cpu, or CUDA GPU numbers such as 0 or 0,1 (the recipe is "
                             "the same; only the time per epoch changes)")
    parser.add_argument("--out", type=Path, default=Path("models"), help="folder for tokens.onnx")
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="folder for checkpoints and logs")
    parser.add_argument("--name", default="tokens", help="run name under --runs")
    parser.add_argument("--resume", action="store_true", help="continue RUNS/NAME/weights/last.pt")
    parser.add_argument("--weights", type=Path, metavar="INIT.pt", default=None,
                        help="start from these weights instead of from scratch (fine-tune, e.g. models/last.pt)")
    parser.add_argument("--export", type=Path, metavar="WEIGHTS.pt", default=None,
                        help="only export these weights to OUT/tokens.onnx")
    parser.add_argument("--evaluate", type=Path, metavar="MODEL.onnx", default=None,
                        help="only measure this model on DATASET_DIR (held-out scenes)")
    parser.add_argument("--conf", type=float, default=None, help="with --evaluate: score threshold (default: detect.yaml)")
    parser.add_argument("--limit", type=int, default=None, help="with --evaluate: at most this many images")
    parser.add_argument("--fallen", action="store_true",
                        help="train the fallen-token classifier instead: renders its own scenes, learns on the "
                             "token model's detections, exports OUT/fallen.onnx (recipe: detect.yaml fallen.train)")
    parser.add_argument("--verify", action="store_true",
                        help="train the token verifier instead: renders its own scenes with empty-board frames, "
                             "learns on both detectors' candidates, exports OUT/verify.onnx (recipe: detect.yaml "
                             "verify.train)")
    parser.add_argument("--refine", action="store_true",
                        help="train the base refiners instead: each renders its own scenes with empty-board frames, "
                             "learns where the true base lies from both detectors' candidates, exports "
                             "OUT/refine.onnx and OUT/refine_2.onnx (recipe: detect.yaml refine.train)")
    parser.add_argument("--member", type=int, default=None, metavar="N",
                        help="with --refine: train only the Nth of detect.yaml refine.train.members (default: each "
                             "in turn)")
    parser.add_argument("--refine-alone", action="store_true",
                        help="train the base refiner of a photo alone (no empty-board frame) instead: renders photos, "
                             "exports OUT/refine_alone.onnx (recipe: detect.yaml refine_alone.train)")
    parser.add_argument("--verify-alone", action="store_true",
                        help="train the token verifier of a photo alone (no empty-board frame) instead: renders photos, "
                             "exports OUT/verify_alone.onnx (recipe: detect.yaml verify_alone.train)")
    parser.add_argument("--fallen-pair", action="store_true",
                        help="train the fallen-token classifier for photo pairs instead: renders its own scenes "
                             "with empty-board frames, learns on both detectors' candidates, exports "
                             "OUT/fallen_pair.onnx (recipe: detect.yaml fallen_pair.train)")
    parser.add_argument("--fallen-base", action="store_true",
                        help="train the fallen-token placer instead: renders its own scenes with empty-board "
                             "frames, learns where a lying token's base is from both detectors' candidates, "
                             "exports OUT/fallen_base.onnx (recipe: detect.yaml fallen_base.train)")
    parser.add_argument("--fallen-base-pair", action="store_true",
                        help="train the fallen-token placer for photo pairs instead: as --fallen-base, with the "
                             "empty frame's patches too; exports OUT/fallen_base_pair.onnx")
    parser.add_argument("--cover", action="store_true",
                        help="train the network that finds what covers the board (a hand, a cup) in the photo itself "
                             "instead: renders photos, exports OUT/cover.onnx (recipe: detect.yaml cover.train)")
    parser.add_argument("--scenes", type=int, default=None,
                        help="with --fallen, --fallen-pair, --verify, --verify-alone, --refine, --refine-alone, "
                             "--fallen-base, --fallen-base-pair or --cover: training renders (default: the recipe's "
                             "train.scenes)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def run(args) -> int:
    from knockcam.errors import KnockcamError

    if args.epochs is not None and args.epochs < 1:
        raise KnockcamError(f"--epochs must be at least 1, not {args.epochs}")
    if args.hours is not None and not 0 < args.hours <= 48:
        raise KnockcamError(f"--hours must be between 0 and 48, not {args.hours}")
    if args.weights is not None and args.resume:
        raise KnockcamError("--weights starts a new run and --resume continues one: give one of them")
    if not re.fullmatch(r"cpu|\d+(,\d+)*", args.device):
        raise KnockcamError(f"--device must be cpu or GPU numbers such as 0 or 0,1, not {args.device!r}")
    if args.imgsz is not None and (args.imgsz < 32 or args.imgsz % 32):
        raise KnockcamError(f"--imgsz must be a positive multiple of 32, not {args.imgsz}")
    networks = (args.fallen + args.fallen_pair + args.verify + args.verify_alone + args.refine + args.refine_alone
                + args.fallen_base + args.fallen_base_pair + args.cover)
    if args.device != "cpu" and (networks or args.evaluate is not None or args.export is not None):
        raise KnockcamError(f"--device {args.device} trains the token model only: the other networks train, and "
                            "--evaluate and --export run, on the CPU (leave --device out)")
    if networks > 1:
        raise KnockcamError("--fallen, --fallen-pair, --verify, --verify-alone, --refine, --refine-alone, --fallen-base, "
                            "--fallen-base-pair and --cover train different networks: give one of them")
    if args.member is not None and not args.refine:
        raise KnockcamError("--member chooses one of the base refiners: give it with --refine")
    if args.fallen or args.fallen_pair:
        return _train_fallen(args)
    if args.fallen_base or args.fallen_base_pair:
        return _train_fallen_base(args)
    if args.verify or args.verify_alone:
        return _train_verify(args)
    if args.refine:
        return _train_refine(args)
    if args.refine_alone:
        from knockcam.detect.refine_train import train_alone

        return _train_patch_network(args, train_alone, _refine_held_out)
    if args.cover:
        from knockcam.detect.cover_train import train as train_cover

        return _train_patch_network(args, train_cover, lambda r: (
            f"held out ({r['val_scenes']} renders): {r['covered_caught']:.1%} of covered cells caught, "
            f"{r['clear_marked']:.2%} of clear ones marked; a covered area reported in {r['reported_with_cover']} "
            f"of {r['renders_with_cover']} renders with a hand or a cup on the board, in {r['reported_without']} of "
            f"the {r['renders_without']} without"))
    from knockcam.detect import train as training

    if args.evaluate is not None:
        if args.dataset is None:
            raise KnockcamError("--evaluate needs a DATASET_DIR of held-out scenes")
        result = training.evaluate(args.evaluate, args.dataset, limit=args.limit, conf=args.conf)
        _print_evaluation(result, args.json, training)
        return 0
    if args.export is not None:
        from knockcam.board.layout import load_board
        from knockcam.detect.canonical import canonical_view
        from knockcam.detect.model import input_hw_for

        onnx = training.export_onnx(args.export, args.out, input_hw_for(canonical_view(load_board())))
        print(onnx)
        return 0
    if args.dataset is not None and not args.dataset.is_dir():
        raise KnockcamError(f"dataset folder not found: {args.dataset} (make one with 'knockcam synth OUT --yolo')")
    result = training.train(args.dataset, epochs=args.epochs, imgsz=args.imgsz, out=args.out, runs=args.runs,
                            name=args.name, resume=args.resume, batch=args.batch, workers=args.workers,
                            hours=args.hours, init=args.weights, device=args.device)
    if args.json:
        import json

        print(json.dumps({"run_dir": str(result.run_dir), "weights": str(result.weights),
                          "onnx": str(result.onnx), "seconds": round(result.seconds, 1)}))
    else:
        print(f"trained in {result.seconds / 60:.1f} min: {result.weights}\nexported: {result.onnx}")
    return 0


def _train_fallen(args) -> int:
    from functools import partial

    from knockcam.detect.fallen_train import train

    return _train_patch_network(args, partial(train, empty_frame=args.fallen_pair), lambda r: (
        f"held out ({r['val_scenes']} renders: {r['lying']} lying, {r['standing']} standing "
        f"tokens): at threshold {r['threshold']:g}, {r['lying_caught']:.1%} of lying tokens "
        f"caught, {r['standing_marked']:.2%} of standing ones marked; "
        f"1% marked at {r['threshold_1pct']:.3f} ({r['lying_caught_1pct']:.1%} caught), "
        f"2% at {r['threshold_2pct']:.3f} ({r['lying_caught_2pct']:.1%} caught)"))


def _train_fallen_base(args) -> int:
    from functools import partial

    from knockcam.detect.fallen_train import train_placer

    def held_out(r):
        lying, standing = r["lying"], r["standing"]
        return (f"held out ({r['val_scenes']} renders): base error near {lying['candidates']} lying tokens median "
                f"{lying['error_mm_before']['median']:.1f} -> {lying['error_mm_after']['median']:.1f} mm, p90 "
                f"{lying['error_mm_before']['p90']:.1f} -> {lying['error_mm_after']['p90']:.1f} mm; near "
                f"{standing['candidates']} standing ones median {standing['error_mm_before']['median']:.1f} -> "
                f"{standing['error_mm_after']['median']:.1f} mm")

    return _train_patch_network(args, partial(train_placer, empty_frame=args.fallen_base_pair), held_out)


def _train_verify(args) -> int:
    from knockcam.detect.verify_train import train, train_alone

    return _train_patch_network(args, train_alone if args.verify_alone else train, lambda r: (
        f"held out ({r['val_scenes']} renders, {r['candidates']} candidates: {r['real']} tokens, {r['none']} "
        f"none): weak candidates kept {r['weak_real_kept']}/{r['weak_real']} real, {r['weak_none_kept']}/"
        f"{r['weak_none']} none; others dropped {r['strong_real_dropped']}/{r['strong_real']} real, "
        f"{r['strong_none_dropped']}/{r['strong_none']} none; side right for {r['side_right']:.2%} of tokens"))


def _train_refine(args) -> int:
    from functools import partial

    from knockcam.detect.refine_train import members, train

    for n in [args.member] if args.member is not None else range(1, len(members()) + 1):
        _train_patch_network(args, partial(train, member=n), _refine_held_out)
    return 0


def _refine_held_out(r: dict) -> str:
    return (
        f"held out ({r['val_scenes']} renders, {r['candidates']} candidates near a standing token): base error "
        f"median {r['error_mm_before']['median']:.2f} -> {r['error_mm_after']['median']:.2f} mm, p90 "
        f"{r['error_mm_before']['p90']:.2f} -> {r['error_mm_after']['p90']:.2f} mm; sigma median "
        f"{r['sigma_mm']['median']:.2f} mm (factor {r['sigma_per_scale']:.3f} on the error the network expects), "
        f"{r['beyond_2sigma']:.1%} beyond 2 sigma; {r['moved_too_far']} would move too far")


def _train_patch_network(args, train, held_out) -> int:
    """Train one of the patch networks (``train``: its module's train) and print what it measured
    (``held_out``: the result -> one line), or the result as JSON."""
    import json

    from knockcam.board.layout import load_board
    from knockcam.errors import KnockcamError

    if args.scenes is not None and args.scenes < 10:
        raise KnockcamError(f"--scenes must be at least 10, not {args.scenes}")
    log = (lambda line: None) if args.json else print
    result = train(load_board(), args.out, scenes=args.scenes, epochs=args.epochs, workers=args.workers or 2, log=log)
    print(json.dumps(result) if args.json else f"exported: {result['model']}\n{held_out(result)}")
    return 0


def _print_evaluation(result, as_json: bool, training) -> None:
    if as_json:
        print(training.evaluation_json(result))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"token model on {result.images} held-out images, {result.tokens} tokens")
    table.add_column("metric")
    table.add_column("value", justify="right")
    rows = [
        ("recall (base within %.1f mm)" % result.match_mm, f"{result.recall:.2%}"),
        ("precision", f"{result.precision:.2%}"),
        ("side accuracy (matched)", f"{result.side_accuracy:.2%}"),
        ("tokens right (place and side)", f"{result.token_accuracy:.2%}"),
        ("scenes exactly right", f"{result.scenes_exact:.2%}"),
        ("base error median / p95 / max", f"{result.error_mm_median:.2f} / {result.error_mm_p95:.2f} / "
                                          f"{result.error_mm_max:.2f} mm"),
        ("ms per canonical image median / p95", f"{result.ms_median:.1f} / {result.ms_p95:.1f}"),
        ("colour confusions", ", ".join(f"{k}: {v}" for k, v in result.confusions.items()) or "none"),
    ]
    for band in result.error_by_score:  # what detect.yaml's model.sigma_by_score is set from
        if band["tokens"]:
            rows.append((f"base error, score >= {band['score_min']:g}",
                         f"{band['tokens']} tokens: median {band['median_mm']:.2f}, p90 {band['p90_mm']:.2f}, "
                         f"sigma {band['sigma_mm']:.2f} mm"))
    for key, value in rows:
        table.add_row(key, value)
    Console().print(table)
