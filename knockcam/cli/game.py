"""``knockcam game GAME.json``: play a game's rounds in sequence (carried cash, pot, rotation) and rank the sides."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("game", help="play a game file's rounds in sequence and show the standings",
                                   description="Play the rounds of a game file (JSON or YAML) one after the other, "
                                               "carrying cash and pot and rotating the turn order (N1-N3), "
                                               "then rank the sides (W1).")
    parser.add_argument("file", metavar="GAME", help="game file, JSON or YAML (see docs/rules-engine.md)")
    parser.add_argument("--board", metavar="FILE", default=None, help="board file (default: the shipped board)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.board import load_board
    from knockcam.rules import Game, load_file

    board = load_board(args.board)
    game = Game.from_dict(load_file(args.file), board, where=Path(args.file).name)
    standings = [s.to_dict() for s in game.standings()]
    if args.json:
        print(json.dumps({"rounds": [r.to_dict() for r in game.history], "rounds_played": game.round_number,
                          "rounds_total": game.rounds_total, "final": game.over, "order": list(game.order),
                          "cash": dict(game.cash), "pot": game.pot, "standings": standings}, indent=2))
        return 0
    from rich.console import Console

    from knockcam.report.tables import round_tables, standings_table

    console = Console()
    for number, result in enumerate(game.history, start=1):
        for renderable in round_tables(result, board, title=f"Round {number}", width=console.width):
            console.print(renderable)
        console.print()
    console.print(standings_table(game, standings))
    return 0
