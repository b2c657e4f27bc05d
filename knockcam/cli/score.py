"""``knockcam score IMAGE|DIR``: which token rests where in a photo and, with a turn order, who gets paid.

One photo: a table (or ``--json``, the contract other tools read) and, with ``--evidence``, the
evidence picture. A folder: every photo in it, with a progress bar, a summary (CSV and JSON) and an
evidence picture per photo in ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from knockcam.cli import add_board_option, add_workers_option
from knockcam.errors import KnockcamError

if TYPE_CHECKING:
    from knockcam.pipeline import ScoreOptions

EPILOG = """examples:
  knockcam score photo.jpg                                   automatic calibration, positions only
  knockcam score photo.jpg --order red,blue,green --pot 500  positions and payouts (knockcam round)
  knockcam score photo.jpg --corners "102,655 1180,640 930,80 310,85" --evidence evidence.png
  knockcam score photo.jpg --calibration calibration/table.yaml --reference empty.jpg --json
  knockcam score photos/ --order red,blue --out scores/      every photo: summary.csv, summary.json, evidence/
                                                             (several at once: --workers N; Ctrl-C keeps those done)
  knockcam score photo.jpg --order red,blue --call 5=chance  token #5 settled by a person: it rests on Chance
  knockcam score photo.jpg --order red,blue --add red=park_place   a red token the camera missed, on Park Place

exit codes: 0 scored; 2 bad input (one line on stderr says what and what to do);
            1 a folder where some photos could not be scored (summary.csv says which and why);
            130 a folder stopped with Ctrl-C (summary.csv lists the photos scored by then)"""


def register(subparsers) -> None:
    p = subparsers.add_parser("score", help="score a photo (or a folder of photos): positions, payouts, evidence",
                              description="Find the board and the tokens in a photo, say which space each "
                                          "token's base rests on (RULES.md S3), flag close calls, and with "
                                          "--order score the round.",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="IMAGE|DIR", help="a photo of the board, or a folder of photos")
    add_scoring_options(p)
    p.add_argument("--json", action="store_true", help="print JSON (the contract in docs/scoring.md) instead of tables")
    p.add_argument("--evidence", metavar="OUT.png", help="write the evidence picture for this photo")
    p.add_argument("--out", metavar="DIR", help="folder mode: where summary.csv, summary.json and evidence/ go "
                                               "(default: DIR/knockcam-scores)")
    add_workers_option(p, help="folder mode: score this many photos at once, each in a process of its own "
                               "holding its photo and the models (0.24 GB for a 1280x720 photo, 0.55 GB for 12 MP); "
                               "default: one per CPU when the board is found anew in every photo, else 1 (one after "
                               "another here)")
    p.set_defaults(run=run)


def add_scoring_options(p: argparse.ArgumentParser, with_round: bool = True) -> None:
    """The options every scoring verb shares (score, explain): calibration, empty frame, board (and round)."""
    how = p.add_mutually_exclusive_group()
    how.add_argument("--calibration", metavar="FILE", help="a saved calibration (knockcam calibrate)")
    how.add_argument("--corners", metavar='"x,y x,y x,y x,y"',
                     help="the board's corners in pixels: near-left, near-right, far-right, far-left")
    p.add_argument("--reference", metavar="EMPTY_IMAGE",
                   help="the empty board from the same camera: turns on the reference-frame detector")
    add_board_option(p)
    add_max_error(p)
    if not with_round:
        p.set_defaults(order=None, pot=None)
        return
    p.add_argument("--order", metavar="SIDES", help="turn order, e.g. red,blue,green: score the round too")
    p.add_argument("--pot", metavar="M", type=int, default=None, help="Free Parking pot before the round (default 500)")
    p.add_argument("--call", metavar="N=WHERE", action="append", type=_call, default=[],
                   help="settle token N (its number in the tokens table) where you see it rest: a space id or "
                        "name, no_space or off_board, or none when it is no token at all; e.g. --call 5=chance; "
                        "once per token")
    p.add_argument("--add", metavar="SIDE=SPACE", action="append", type=_added, default=[],
                   help="a token the camera did not see, on a space (id or name): e.g. --add red=park_place; "
                        "numbered after the camera's tokens")


def add_max_error(p: argparse.ArgumentParser) -> None:
    """``--max-error MM``: accept a calibration estimated up to MM off (a refusal says when that is worth it)."""
    from knockcam import settings

    limit = settings.load("calibrate")["quality"]["max_error_mm"]
    p.add_argument("--max-error", metavar="MM", type=_millimetres, default=None,
                   help=f"accept a calibration estimated up to MM millimetres off (default {limit:g}): every token "
                        "then carries that error, so more close calls are flagged for you to look at")


def _call(text: str) -> tuple[int, str]:
    """``N=WHERE`` -> (N, WHERE): a person's call on token N (checked against the board by the Scorer)."""
    number, _, where = text.partition("=")
    if not number.strip().isdigit() or not where.strip():
        raise argparse.ArgumentTypeError(f"give the token's number and where it rests, e.g. 5=chance, not {text!r}")
    return int(number), where.strip()


def _added(text: str) -> tuple[str, str]:
    """``SIDE=SPACE`` -> (side, space): a token added by a person (checked against the board by the Scorer)."""
    side, _, where = text.partition("=")
    if not side.strip() or not where.strip():
        raise argparse.ArgumentTypeError(f"give the token's side and its space, e.g. red=park_place, not {text!r}")
    return side.strip().lower(), where.strip()


def _millimetres(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"give a number of millimetres above 0, e.g. 4.5, not {text!r}")
    return value


def options_from(args) -> "ScoreOptions":
    from knockcam.pipeline import ScoreOptions, parse_order
    from knockcam.rules.money import POT_START

    order = parse_order(args.order)
    if args.order is not None and not order:  # "" or ",": a shell variable left empty?
        raise KnockcamError("--order is empty: give the turn order, e.g. --order red,blue,green, or leave it out to "
                            "score the positions only")
    if args.pot is not None and not order:
        raise KnockcamError("--pot needs --order (the pot only matters when the round is scored)")
    return ScoreOptions(calibration=args.calibration, corners=args.corners, reference=args.reference,
                        board=args.board, order=order, max_error_mm=args.max_error,
                        pot=POT_START if args.pot is None else int(args.pot), calls=tuple(getattr(args, "call", ())),
                        added=tuple(getattr(args, "add", ())))


def run(args: argparse.Namespace) -> int:
    target = Path(args.target)
    if not target.exists():
        raise KnockcamError(f"photo not found: {target} (check the path; a folder of photos is scored too)")
    if args.corners is not None and not args.corners.strip():
        raise KnockcamError('--corners is empty: give four "x,y" pixel corners (near-left, near-right, far-right, '
                            'far-left), or leave it out to find the board automatically')
    if args.evidence and Path(args.evidence).suffix.lower() != ".png":
        raise KnockcamError(f"--evidence writes a PNG: give a path ending in .png, not {args.evidence}")
    if target.is_dir():
        if args.evidence:
            raise KnockcamError("--evidence is for one photo; for a folder the pictures go to --out DIR/evidence/")
        if args.call or args.add:
            raise KnockcamError(f"--{'call' if args.call else 'add'} settles a token of one photo: score that photo "
                                "on its own")
        from knockcam.cli.score_folder import run_folder

        return run_folder(target, args)
    if args.out:
        raise KnockcamError("--out is for a folder of photos; for one photo use --evidence OUT.png")
    if args.workers is not None:
        raise KnockcamError("--workers is for a folder of photos; one photo is scored in this process")
    from knockcam.pipeline import Scorer

    scorer = Scorer(options_from(args))
    scored = scorer.score(target)
    written = None
    if args.evidence:
        from knockcam.report.evidence import write_evidence

        written = write_evidence(scored, args.evidence)
    if args.json:
        print(json.dumps(scored.to_dict(), indent=2))
        return 0
    print_scored(scored, evidence=written, again=same_tokens_options(target, args.calibration, args.corners,
                                                                          args.reference, args.board, args.max_error))
    return 0


# --- tables -----------------------------------------------------------------------------------
def tokens_table(scored):
    """The tokens as a rich table: number, side, where it rests, coverage, margin, confidence, notes."""
    from rich.table import Table
    from rich.text import Text

    from knockcam.report.evidence import call_words, token_notes

    board = scored.board
    table = Table(title=f"Tokens in {Path(scored.image_path).name}", title_justify="left")
    for header in ("#", "Side", "Rests on (S3)", "Coverage", "Margin", "Conf.", "Note"):
        table.add_column(header, justify="right" if header in ("#", "Coverage", "Margin", "Conf.") else "left")
    for i, p in enumerate(scored.positions, 1):
        notes = token_notes(board, p)
        if p.ambiguous and notes:
            notes[-1] += ": a human decides"
        style = "bold magenta" if p.ambiguous else None
        table.add_row(str(i), Text(p.side, style=_side_style(p.side)), call_words(board, p), f"{p.coverage:.0%}",
                      f"{p.margin_mm:.1f} mm", f"{p.token.confidence:.2f}", "; ".join(notes), style=style)
    return table


def _side_style(side: str) -> str:
    return {"red": "red", "yellow": "yellow", "green": "green", "blue": "blue"}.get(side, "")


def same_tokens_options(photo, calibration=None, corners=None, reference=None, board=None, max_error=None) -> str:
    """The photo and the options that decide which tokens are found and how they are numbered, as typed on a
    command line: what 'knockcam explain' and a second 'knockcam score' need to number the tokens alike."""
    import shlex

    words = [str(photo)]
    for flag, value in (("--calibration", calibration), ("--corners", corners), ("--reference", reference),
                        ("--board", board), ("--max-error", max_error)):
        if value is not None:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return " ".join(shlex.quote(w) for w in words)


def print_scored(scored, evidence: Path | None = None, console=None, again: str = "IMAGE") -> None:
    """Tokens, then (with an order) the payout table of ``knockcam round``, Free Parking and the close calls.
    ``again``: the photo and options to repeat (``same_tokens_options``) in the commands suggested."""
    from rich.console import Console
    from rich.markup import escape

    from knockcam.assign import NOT_A_TOKEN
    from knockcam.report.evidence import free_parking_line, hidden_lines, stake_lines, unseen_line
    from knockcam.report.tables import round_tables

    console = console or Console()
    cal = scored.calibration
    err = f"{cal.error_mm:.1f} mm" if cal.error_mm is not None else "unknown"
    console.print(f"calibration: {cal.method} (error {err}), detector: {scored.detector}")
    if cal.unchecked:  # a saved file this photo could not confirm
        console.print(f"[yellow]calibration file used as given: {escape(cal.unchecked)}; if the camera moved since "
                      "it was made, every token is read elsewhere[/yellow]")
    console.print(tokens_table(scored))
    for i, why in scored.left_out:
        console.print(f"[dim]#{i + 1} not scored in the round: {why}[/dim]")
    if scored.round is not None:
        sides, pot, _ledger = round_tables(scored.round, scored.board, title="Payout", width=console.width)
        console.print(sides)
        console.print(pot)
        console.print(free_parking_line(scored))
        for call, line in zip(scored.close_calls, stake_lines(scored)):
            p = scored.positions[call.index]
            kept = p.space if p.state == "on_space" else p.state
            doubt = call.other == NOT_A_TOKEN  # a token in doubt itself, weighed against no token at all
            other = "none" if doubt else call.other
            console.print(f"[magenta]{'in doubt' if doubt else 'close call'}: {line} (settle it: --call "
                          f"{call.index + 1}={other}, or "
                          f"--call {call.index + 1}={kept} to keep the camera's)[/magenta]", soft_wrap=True)
    unseen = unseen_line(scored)
    if unseen:
        console.print(f"[magenta]{unseen}[/magenta]")
    for line in hidden_lines(scored):
        console.print(f"[magenta]{line}[/magenta]")
    n_close = len(scored.ambiguous)
    if n_close:
        console.print(f"[bold magenta]{n_close} call{'s' if n_close > 1 else ''} for a human: look at the evidence and "
                      f"decide; 'knockcam explain {escape(again)} --token N' shows the numbers; to settle one, "
                      "score again with --call N=WHERE added.[/bold magenta]", soft_wrap=True)
    if evidence is not None:
        console.print(f"evidence: {evidence}", soft_wrap=True)
