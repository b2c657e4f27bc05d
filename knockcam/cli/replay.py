"""``knockcam replay LOG``: re-score a game from its log (no camera, no questions) and print it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="re-score a live game from its game log and print it",
                                   description="Rebuild a game from the observations and answers in its game log, "
                                               "score every round again with the engine, check the result against "
                                               "what the log recorded, and print each round as it happened (slides, "
                                               "knocks, questions and answers, fixes, each with the saved frame "
                                               "that shows it), its payouts and the standings.")
    parser.add_argument("log", metavar="LOG", help="game log written by 'knockcam live'")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.errors import KnockcamError
    from knockcam.live.log import read_log
    from knockcam.live.session import replay
    from knockcam.live.story import story

    live = replay(args.log)
    entries = read_log(args.log)
    happenings = story(entries, live.board)
    recorded = {e["round"]: e for e in entries if e["kind"] == "round" and isinstance(e.get("round"), int)}
    mismatches = []
    for number, result in enumerate(live.game.history, start=1):
        if number not in recorded:
            continue
        logged = recorded[number].get("result")
        logged = logged.get("cash") if isinstance(logged, dict) else None
        if logged is None:
            mismatches.append(f"round {number}: the log's record of it is damaged")
        elif logged != dict(result.cash):
            mismatches.append(f"round {number}: the log recorded {logged}, re-scoring gives {dict(result.cash)}")
    game = live.game
    standings = [s.to_dict() for s in game.standings()]
    overrides = [data for kind, data in live.events if kind == "override"]
    if args.json:
        print(json.dumps({"log": args.log, "over": game.over, "rounds_played": game.round_number,
                          "rounds_total": game.rounds_total, "rounds": [r.to_dict() for r in game.history],
                          "cash": dict(game.cash), "pot": game.pot, "standings": standings,
                          "overrides": overrides, "story": [h.to_dict() for h in happenings],
                          "incomplete": live.incomplete, "mismatches": mismatches},
                         indent=2))
    else:
        from rich.console import Console

        from knockcam.report.tables import round_tables, standings_table

        console = Console()
        folder = Path(args.log).parent
        for number in range(0, max([len(game.history)] + [h.round for h in happenings]) + 1):
            told = [h for h in happenings if h.round == number]
            if told:
                console.print(happened_table(told, number, folder))
            if 1 <= number <= len(game.history):
                for renderable in round_tables(game.history[number - 1], live.board, title=f"Round {number}",
                                               width=console.width):
                    console.print(renderable)
                console.print()
        console.print(standings_table(game, standings))
        if live.incomplete:
            console.print(f"incomplete: {live.incomplete}", markup=False)
    if mismatches:
        raise KnockcamError("replay does not match the log: " + "; ".join(mismatches))
    return 0


def happened_table(told: list, number: int, folder: Path):
    """One round's happenings (knockcam.live.story) as a table: what, and the saved frame that shows it."""
    from rich.table import Table

    folders = {str(Path(h.evidence).parent) for h in told if h.evidence}
    one = folders.pop() if len(folders) == 1 else None  # then named once, under the table
    table = Table(title=f"Round {number}, as it happened" if number else "Before round 1", title_justify="left",
                  caption=f"frames in {folder / one}" if one else None, caption_justify="left")
    table.add_column("what happened")
    table.add_column("frame", no_wrap=True)
    for h in told:
        frame = "-" if not h.evidence else Path(h.evidence).name if one else str(folder / h.evidence)
        table.add_row(h.text, frame)
    return table
