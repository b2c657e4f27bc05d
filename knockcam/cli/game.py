"""``knockcam game GAME.json``: play a game's rounds in sequence (carried cash, pot, rotation) and rank the sides."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from knockcam.cli import add_board_option


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("game", help="play a game file's rounds in sequence and show the standings",
                                   description="Play the rounds of a game file (JSON or YAML) one after the other, "
                                               "carrying cash and pot and rotating the turn order (N1-N3), "
                                               "then rank the sides (W1).")
    parser.add_argument("file", metavar="GAME", help="game file, JSON or YAML (see docs/rules-engine.md); a round "
                                                    "may name a photo of the board instead of its tokens")
    add_board_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.board import load_board
    from knockcam.rules import Game, load_file

    board = load_board(args.board)
    where = Path(args.file).name
    data = load_file(args.file)
    photos: dict[int, dict] = {}
    if _has_photos(data):
        from knockcam.photo_rounds import photo_rounds  # the vision stack, only for a game scored from photos

        data, photos = photo_rounds(data, Path(args.file), args.board, where)
    game = Game.from_dict(data, board, where=where)
    standings = [s.to_dict() for s in game.standings()]
    if args.json:
        print(json.dumps({"rounds": [r.to_dict() for r in game.history], "rounds_played": game.round_number,
                          "rounds_total": game.rounds_total, "final": game.over, "order": list(game.order),
                          "cash": dict(game.cash), "pot": game.pot, "standings": standings,
                          "photos": [{"round": i + 1, **photos[i]} for i in sorted(photos)]}, indent=2))
        return 0
    from rich.console import Console

    from knockcam.report.tables import round_tables, standings_table

    console = Console()
    for number, result in enumerate(game.history, start=1):
        if number - 1 in photos:
            seen = photos[number - 1]
            console.print(f"Round {number}: tokens found in {seen['photo']}", soft_wrap=True)
            for note in seen["notes"]:
                console.print(f"[magenta]  {note}[/magenta]", soft_wrap=True)
        for renderable in round_tables(result, board, title=f"Round {number}", width=console.width):
            console.print(renderable)
        console.print()
    console.print(standings_table(game, standings))
    return 0


def _has_photos(data) -> bool:
    """Whether any round of this game file names a photo (``photo:``) instead of typing its tokens."""
    rounds = data.get("rounds") if isinstance(data, dict) else None
    return isinstance(rounds, list) and any(isinstance(r, dict) and "photo" in r for r in rounds)
