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
    parser.add_argument("--pictures", metavar="DIR", help="write each round's frame as it was scored, every token "
                        "numbered (as the round-end review numbers them) with its space and any doubt, to "
                        "DIR/round-N.jpg")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from knockcam.errors import KnockcamError
    from knockcam.live.log import read_log
    from knockcam.live.session import replay
    from knockcam.live.story import story

    if args.pictures:
        from knockcam.files import check_writable

        check_writable(Path(args.pictures) / "round-1.jpg")  # a folder that cannot be written fails first
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
    pictures = round_pictures(live, Path(args.pictures)) if args.pictures else {}
    overrides = [data for kind, data in live.events if kind == "override"]
    if args.json:
        print(json.dumps({"log": args.log, "over": game.over, "rounds_played": game.round_number,
                          "rounds_total": game.rounds_total, "rounds": [r.to_dict() for r in game.history],
                          "cash": dict(game.cash), "pot": game.pot, "standings": standings,
                          "overrides": overrides, "story": [h.to_dict() for h in happenings],
                          "pictures": {str(n): p for n, p in pictures.items()},
                          "incomplete": live.incomplete, "mismatches": mismatches},
                         indent=2))
    else:
        from rich.console import Console

        from knockcam.report.tables import round_tables, standings_table

        console = Console()
        folder = Path(args.log).parent
        # the rounds played and any a log line names (a hand-edited round number is told, not counted up to)
        for number in sorted(set(range(len(game.history) + 1)) | {h.round for h in happenings}):
            told = [h for h in happenings if h.round == number]
            if told:
                console.print(happened_table(told, number, folder))
            if 1 <= number <= len(game.history):
                for renderable in round_tables(game.history[number - 1], live.board, title=f"Round {number}",
                                               width=console.width):
                    console.print(renderable)
                console.print()
        console.print(standings_table(game, standings))
        for number, picture in pictures.items():
            console.print(f"round {number} as scored: {picture}", markup=False)
        if live.incomplete:
            console.print(f"incomplete: {live.incomplete}", markup=False)
    if mismatches:
        raise KnockcamError("replay does not match the log: " + "; ".join(mismatches))
    return 0


PICTURE_WIDTH = 1280  # replay --pictures draws a smaller frame at this width


def round_pictures(live, out: Path) -> dict[int, str]:
    """Each scored round's frame with the tokens as the game scored them (the live overlay, words included),
    written to OUT/round-N.jpg: {round: path, or why there is none}."""
    import cv2

    from knockcam.calibrate.calibration import Calibration
    from knockcam.errors import KnockcamError
    from knockcam.files import load_photo, write_atomic
    from knockcam.live.display import Display

    display = Display(live.board, quiet=True)
    pictures = {}
    for number, result in enumerate(live.game.history, start=1):
        scored = live.scored.get(number, {})
        if not scored.get("evidence") or scored.get("calibration") is None:
            pictures[number] = "none: the log saved no frame or calibration for it"
            continue
        try:
            image = load_photo(live.log_path.parent / scored["evidence"], f"round {number}'s frame")
            calibration = Calibration.load(scored["calibration"])
        except KnockcamError as error:
            pictures[number] = f"none: {error}"
            continue
        if image.shape[1] < PICTURE_WIDTH:  # a small camera's frame: drawn on larger, so the words can be read
            size = (PICTURE_WIDTH, round(image.shape[0] * PICTURE_WIDTH / image.shape[1]))
            image, calibration = cv2.resize(image, size), calibration.resized(size)
        snapshot = {"round": number, "rounds": live.game.rounds_total, "phase": "scored", "order": list(result.order),
                    "cash": dict(result.cash), "pot": result.pot_after, "tokens": scored["tokens"]}
        ok, data = cv2.imencode(".jpg", display.overlay(image, calibration, snapshot))
        if ok:
            pictures[number] = str(write_atomic(out / f"round-{number}.jpg", data.tobytes()))
    return pictures


def happened_table(told: list, number: int, folder: Path):
    """One round's happenings (knockcam.live.story) as a table: what, and the saved frame that shows it."""
    from rich.table import Table

    folders = {str(Path(h.evidence).parent) for h in told if h.evidence}
    one = folders.pop() if len(folders) == 1 else None  # then named once, under the table
    table = Table(title=f"Round {number}, as it happened" if number else "Before round 1", title_justify="left",
                  caption=f"frames in {folder / one}" if one else None, caption_justify="left")
    table.add_column("time", no_wrap=True)
    table.add_column("what happened")
    table.add_column("frame", no_wrap=True)
    for h in told:
        frame = "-" if not h.evidence else Path(h.evidence).name if one else str(folder / h.evidence)
        table.add_row(h.time, h.text, frame)
    return table
