"""``knockcam replay LOG``: re-score a game from its log (no camera, no questions) and print it."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="re-score a live game from its game log and print it",
                                   description="Rebuild a game from the observations and answers in its game log, "
                                               "score every round again with the engine, check the result against "
                                               "what the log recorded, and print the rounds and the standings.")
    parser.add_argument("log", metavar="LOG", help="game log written by 'knockcam live'")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.errors import KnockcamError
    from knockcam.live.log import read_log
    from knockcam.live.session import replay

    live = replay(args.log)
    recorded = {e["round"]: e for e in read_log(args.log)
                if e["kind"] == "round" and isinstance(e.get("round"), int)}
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
                          "overrides": overrides, "incomplete": live.incomplete, "mismatches": mismatches},
                         indent=2))
    else:
        from rich.console import Console

        from knockcam.report.tables import round_tables, standings_table

        console = Console()
        for number, result in enumerate(game.history, start=1):
            for renderable in round_tables(result, live.board, title=f"Round {number}", width=console.width):
                console.print(renderable)
            console.print()
        for o in overrides:
            console.print(f"override in round {o['round']}: token {o['token'] + 1} ({o['side']}) "
                          f"{o['before']} -> {o['after']} (evidence {o.get('evidence')})", markup=False)
        console.print(standings_table(game, standings))
        if live.incomplete:
            console.print(f"incomplete: {live.incomplete}", markup=False)
    if mismatches:
        raise KnockcamError("replay does not match the log: " + "; ".join(mismatches))
    return 0
