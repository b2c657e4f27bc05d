"""``knockcam explain IMAGE --token SIDE|N``: one side's tokens (or token N of the score table) up close, with the
coverage numbers behind each call."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from knockcam.errors import KnockcamError


def register(subparsers) -> None:
    from knockcam.cli.score import add_scoring_options

    p = subparsers.add_parser("explain", help="zoom into a side's tokens, or token N, with the coverage numbers",
                              description="Score the photo as 'knockcam score' does, then show, for each token "
                                          "asked for (a side's, or one by its number in the score table), the "
                                          "share of its base on every space it touches, the margin, and a "
                                          "magnified top-down close-up.")
    p.add_argument("image", metavar="IMAGE", help="a photo of the board")
    p.add_argument("--token", action="append", metavar="SIDE|N", required=True,
                   help="what to explain: a side (red, yellow, green or blue) or a token's number in the "
                        "'knockcam score' table (repeat or comma-separate for more)")
    add_scoring_options(p, with_round=False)
    p.add_argument("--out", metavar="OUT.png", help="where to write the close-ups (default: IMAGE-SIDE-explain.png "
                                                   "or IMAGE-N-explain.png in the current folder)")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import cv2

    from knockcam.cli.score import options_from
    from knockcam.files import write_atomic
    from knockcam.pipeline import Scorer
    from knockcam.report.explain import explain, explain_image, parse_tokens

    sides, numbers = parse_tokens(args.token)
    image = Path(args.image)
    out = Path(args.out) if args.out else Path(f"{image.stem}-{'-'.join((*sides, *map(str, numbers)))}-explain.png")
    if out.suffix.lower() != ".png":
        raise KnockcamError(f"--out writes a PNG: give a path ending in .png, not {out}")
    scored = Scorer(options_from(args)).score(image)
    explanations = explain(scored, sides, numbers)
    if explanations:
        ok, data = cv2.imencode(".png", explain_image(scored, explanations))
        if not ok:
            raise KnockcamError(f"could not encode the close-ups for {out}")
        write_atomic(out, data.tobytes())
    else:  # no token of those sides in the photo: no picture of nothing
        out = None
    if args.json:
        print(json.dumps({"image": str(image), "sides": list(sides), "numbers": list(numbers),
                          "close_ups": None if out is None else str(out),
                          "tokens": [e.to_dict() for e in explanations]}, indent=2))
        return 0
    print_explanations(scored, explanations, sides, out)
    return 0


def print_explanations(scored, explanations, sides, out: Path | None) -> None:
    from rich.console import Console
    from rich.table import Table

    from knockcam.report.evidence import space_name

    console = Console()
    if not explanations:
        console.print(f"no {' or '.join(sides)} tokens found in {scored.image_path}")
    for e in explanations:
        style = "bold magenta" if e.ambiguous else "bold"
        verdict = ("CLOSE CALL: a human decides" if "close_call" in e.flags else
                   "a human decides" if e.ambiguous else "clear call")
        console.print(f"#{e.number} {e.side} at ({e.xy_mm[0]:.1f}, {e.xy_mm[1]:.1f}) mm: {e.call} ({verdict})",
                      style=style, highlight=False)
        table = Table()
        table.add_column("Where the base lies")
        table.add_column("Share of base", justify="right")
        for cat, share in e.shares:
            table.add_row(space_name(scored.board, cat), f"{share:.1%}")
        console.print(table)
        flags = ", ".join(f.replace("_", " ") for f in e.flags) or "none"
        console.print(f"  margin {e.margin_mm:.1f} mm (the base centre can move this far before the call changes; "
                      f"runner-up {space_name(scored.board, e.runner_up)}); uncertainty {e.sigma_mm:.1f} mm (a call is "
                      f"close within {e.close_within_mm:.1f} mm of a line); "
                      f"confidence {e.confidence:.2f}; detector {e.source}; flags: {flags}")
    if out is not None:
        console.print(f"close-ups: {out}", soft_wrap=True)
