"""``knockcam round ROUND.json``: score one round from a file and show who gets paid, with the ledger."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from knockcam.cli import add_board_option


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("round", help="score one round from a round file (JSON or YAML)",
                                   description="Score one round of Monopoly Knockout exactly per RULES.md: "
                                               "cash change per side, the pot, and a ledger citing rule ids.")
    parser.add_argument("file", metavar="ROUND", help="round file, JSON or YAML (see docs/rules-engine.md)")
    add_board_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.board import load_board
    from knockcam.rules import load_file, parse_round, score_round

    board = load_board(args.board)
    where = Path(args.file).name
    result = score_round(parse_round(load_file(args.file), board, where), board, where)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        from rich.console import Console

        from knockcam.report.tables import round_tables

        console = Console()
        for renderable in round_tables(result, board, width=console.width):
            console.print(renderable)
    return 0
