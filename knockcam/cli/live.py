"""``knockcam live``: follow a whole game from an overhead camera (or a video), with prompts and a game log."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from knockcam.cli import add_board_option

REVIEWS = ("always", "ambiguous", "never")


def register(subparsers: argparse._SubParsersAction) -> None:
    from knockcam.cli.score import add_max_error

    parser = subparsers.add_parser(
        "live", help="run a whole game from a camera or video: slides, jail, Chance, Railroad, scores",
        description="Follow a game from an overhead camera: wait while things move, detect every token when the "
                    "board is still, attribute new tokens to the side whose turn it is, ask when a rule needs a "
                    "choice, score each round with the engine and keep everything in a game log "
                    "(--resume continues after a crash). Exit code 3: the frames ended before the game did.")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--camera", metavar="N", type=int, help="OpenCV camera number (0 = the first webcam)")
    src.add_argument("--video", metavar="FILE", help="a video file instead of a camera")
    src.add_argument("--stream", metavar="URL", help="a network camera's stream: a phone over the board running a "
                     "camera app that serves its picture (e.g. http://192.168.1.20:8080/video, or rtsp://...)")
    parser.add_argument("--calibration", metavar="FILE", help="calibration file from 'knockcam calibrate' "
                        "(default: found automatically in the first frames); with --resume, one made again "
                        "(the camera moved), used from there on")
    parser.add_argument("--reference", metavar="IMAGE", help="empty-board photo from this camera "
                        "(default: the first still frame, so start with the board clear)")
    add_board_option(parser)
    add_max_error(parser)
    parser.add_argument("--sides", metavar="LIST", help="the sides playing, e.g. red,blue,green")
    parser.add_argument("--order", metavar="LIST", help="round 1's turn order (default: --sides drawn at random, R6)")
    parser.add_argument("--tokens", metavar="N", type=int, default=None,
                        help="tokens per side (default 4, RULES.md R2; fewer for a short practice game)")
    parser.add_argument("--reslide", choices=("none", "free", "paid"), default="none",
                        help="S2 variant: re-slide a token that went off the board (default none)")
    parser.add_argument("--review", choices=REVIEWS, default=None,
                        help="review positions before scoring a round: always, only when a call is close "
                             "(ambiguous, the default) or never")
    parser.add_argument("--log", metavar="LOG", help="game log to write (default: knockcam-game-<time>.jsonl)")
    parser.add_argument("--resume", metavar="LOG", help="continue the game in this log (after a crash or a stop)")
    parser.add_argument("--answers", metavar="FILE", help="scripted answers (YAML/JSON: key -> answer, or a list)")
    parser.add_argument("--show", action="store_true", help="overlay window (needs a display)")
    parser.add_argument("--serve", metavar="PORT", type=int, default=None,
                        help="also show the game on a web page at http://THIS-COMPUTER:PORT (the camera with the "
                             "tokens numbered, the scoreboard, the messages), for a TV or phones on the same network")
    parser.add_argument("--answer-on-page", action="store_true",
                        help="with --serve: the page may answer the waiting question and ask for a review too "
                             "(anyone on the network who opens it can)")
    parser.add_argument("--quiet", action="store_true", help="no scoreboards, only errors and the result")
    parser.add_argument("--json", action="store_true",
                        help="print the result as one JSON object at the end, alone on stdout (the rest: stderr)")
    parser.add_argument("--grab", metavar="FILE", help="save one frame of the camera (or stream) to FILE (.jpg or "
                        ".png) and stop: take it with the board empty, calibrate it with 'knockcam calibrate FILE' "
                        "and give it as --reference")
    parser.add_argument("--bench", action="store_true",
                        help="benchmark the loop on a synthetic 1280x720 game and write bench/live.md")
    parser.add_argument("--max-frames", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--crash-after", type=int, default=None, help=argparse.SUPPRESS)  # tests: simulated kill
    parser.add_argument("--no-model", action="store_true", help=argparse.SUPPRESS)  # reference detector only
    parser.set_defaults(run=run)


def _given_source(args) -> tuple[str, object] | None:
    """The frame source the command line names: ("camera", N), ("stream", URL) or ("video", FILE); None without
    one (a resumed game's is in its log, as {kind: where})."""
    return next(((kind, getattr(args, kind)) for kind in ("camera", "stream", "video")
                 if getattr(args, kind) is not None), None)


def _open_source(kind: str, where, start_index: int = 0):
    """The frames of a ``_given_source`` (or a game log's source): a camera, a stream, or a video from a frame on."""
    from knockcam.live.frames import camera_source, stream_source, video_source

    if kind == "video":
        return video_source(where, start_index=start_index)
    return stream_source(where) if kind == "stream" else camera_source(int(where))


def _grab(args) -> int:
    """``--grab FILE``: one good frame of the source (``first_good_frame``) written to FILE, and what to do next."""
    import cv2

    from knockcam.errors import KnockcamError
    from knockcam.files import check_writable, write_atomic
    from knockcam.live.frames import first_good_frame

    path = Path(args.grab)
    kind = path.suffix.lower()
    if kind not in (".jpg", ".jpeg", ".png"):
        raise KnockcamError(f"--grab writes a photo: give a file name ending in .jpg or .png, not {path}")
    if path.exists():
        raise KnockcamError(f"--grab {path}: the file exists already (give another name, or remove it)")
    check_writable(path)  # before the camera is opened
    given = _given_source(args)
    if given is None:
        raise KnockcamError("--grab takes its frame from --camera N, --stream URL or --video FILE")
    source = _open_source(*given)
    try:
        frame = first_good_frame(source)
    finally:
        source.close()
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if kind != ".png" else []
    write_atomic(path, cv2.imencode(kind, frame.image, params)[1].tobytes())
    h, w = frame.image.shape[:2]
    print(f"{path}: {w}x{h}, from {source.name}. With the board empty, calibrate it: 'knockcam calibrate {path}' "
          f"(or --click, --markers), then give both to live: --calibration calibration/{path.stem}.yaml "
          f"--reference {path}")
    return 0


def _check_frame_size(size: tuple[int, int] | None, name: str, calibration, reference, args) -> None:
    """A one-line KnockcamError when the given calibration or empty-board frame was made for frames of another
    size than the camera or video gives (``size``; not checked when it does not say): every token would be read
    at the wrong place, or the camera taken to have moved."""
    from knockcam.calibrate.choose import check_size
    from knockcam.errors import KnockcamError

    if size is None:
        return
    if calibration is not None:
        check_size(calibration, tuple(size), f"--calibration {args.calibration}", f"a frame of {name}",
                   "calibrate a frame of this camera at this size")
    if reference is not None and (reference.shape[1], reference.shape[0]) != tuple(size):
        raise KnockcamError(f"--reference {args.reference} is {reference.shape[1]}x{reference.shape[0]}, a frame of "
                            f"{name} is {size[0]}x{size[1]}: take the empty-board frame with this camera")


def _display(board, args: argparse.Namespace):
    """The terminal scoreboard, with the --show window and the --serve page when asked for."""
    from knockcam.errors import KnockcamError
    from knockcam.live.display import Display

    page = None
    if args.answer_on_page and args.serve is None:
        raise KnockcamError("--answer-on-page answers on the game's page: give --serve PORT too")
    if args.answer_on_page and args.answers:
        raise KnockcamError(f"--answers {args.answers} answers every question: leave out --answer-on-page")
    if args.serve is not None:
        from knockcam.live.web import GamePage

        if not 0 <= args.serve <= 65535:
            raise KnockcamError(f"--serve {args.serve}: a port is 0 to 65535, e.g. --serve 8765")
        page = args.page = GamePage(args.serve, answers=args.answer_on_page)  # run() closes it, whatever happens
        print(f"the game's page: http://{_address()}:{page.port}/ (phones and a TV on this network; "
              f"http://localhost:{page.port}/ on this computer)", file=sys.stderr)
    from rich.console import Console

    # with --json, stdout holds the JSON alone: the scoreboards and questions go to stderr
    return Display(board, console=Console(highlight=False, stderr=bool(args.json)), show=args.show, quiet=args.quiet,
                   page=page)


def _address() -> str:
    """This computer's address on its network, as phones at the table reach it (its name when unknown)."""
    import socket

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # a documentation address: nothing is sent, the route picks the interface
        return probe.getsockname()[0]
    except OSError:
        return socket.gethostname()
    finally:
        probe.close()


def run(args: argparse.Namespace) -> int:
    args.page = None
    try:
        code = _run(args)
        if args.page is not None and code == 0 and args.answers is None and sys.stdin.isatty():
            input("the final standings are on the game's page: press Enter to stop serving it ")
        return code
    finally:
        if args.page is not None:
            args.page.close()


def _run(args: argparse.Namespace) -> int:
    from knockcam.live.prompts import load_answers
    from knockcam.live.session import LiveGame

    if args.bench:
        from knockcam.live.bench import run_bench

        report = run_bench(Path("bench/live.md"))
        print(report)
        return 0

    if args.grab:
        return _grab(args)

    answers = load_answers(args.answers) if args.answers else None  # a bad answers file fails before any log is written
    start = _resumed(args, answers) if args.resume else _new_game(args, answers)
    live = LiveGame(start.log_path, _prompter(args, answers, start.answers_used), display=start.display,
                    board=start.board, model=None if args.no_model else "auto", max_error_mm=args.max_error)
    if args.resume:
        snap = live.tracker.snapshot()
        print(f"resumed {start.log_path}: round {snap['round']} of {snap['rounds']}, {snap['phase']}"
              + (f", next: {snap['expected']}" if snap["expected"] else ""), file=sys.stderr)
        start.display.status(snap, live.tracker.provisional())
    if live.tracker.phase == "over":
        print(f"{start.log_path}: this game is over", file=sys.stderr)
    elif not _play(args, live, start):
        return 130
    return _print_result(args, live, start.log_path)


@dataclass
class _Start:
    """Where a game is played from: its log, board and display, the frame source the log names, the calibration
    given, the frame source already open (a new game's camera or stream, opened to check it before the log was
    written) and how many of the scripted answers the log has used."""

    log_path: Path
    board: object
    display: object
    source_info: dict
    calibration: object
    source: object = None
    answers_used: int = 0


def _resumed(args: argparse.Namespace, answers) -> _Start:
    """A game continued from its log (--resume): what the log says, and a calibration made again if given."""
    from knockcam.board.layout import load_board
    from knockcam.calibrate.calibration import Calibration
    from knockcam.errors import KnockcamError
    from knockcam.live.log import read_game_log
    from knockcam.live.prompts import check_answer_sides

    log_path = Path(args.resume)
    entries = read_game_log(log_path)
    first = entries[0]
    check_answer_sides(answers, first["order"], args.answers)
    board = load_board(first.get("board"))
    display = _display(board, args)
    if args.sides or args.order:
        raise KnockcamError("--resume continues the logged game: --sides and --order cannot change it")
    if args.reference:
        raise KnockcamError("--resume continues the logged game with its empty-board frame: --reference cannot "
                            "change it (a new --calibration can)")
    calibration = Calibration.load(args.calibration) if args.calibration else None  # the camera calibrated again
    return _Start(log_path, board, display, first.get("source", {}), calibration,
                  answers_used=sum(1 for e in entries if e["kind"] == "answer"))


def _new_game(args: argparse.Namespace, answers) -> _Start:
    """A new game: its sides and order, board, frame source, calibration and empty-board frame checked, then its
    log written (nothing a bad argument refuses leaves a log behind)."""
    import datetime as dt
    import random

    from knockcam import settings
    from knockcam.board.layout import load_board
    from knockcam.calibrate.calibration import Calibration
    from knockcam.errors import KnockcamError
    from knockcam.files import load_photo
    from knockcam.live.frames import size_note
    from knockcam.live.log import check_new
    from knockcam.live.prompts import check_answer_sides
    from knockcam.live.session import new_log
    from knockcam.sides import parse_sides

    sides = parse_sides(args.sides, "sides")
    order = parse_sides(args.order, "order")
    if order is None and sides is None:
        raise KnockcamError("give --sides (e.g. --sides red,blue) or --order for a new game, or --resume LOG")
    if order is None:
        order = list(sides)
        random.SystemRandom().shuffle(order)  # R6: round 1's order is drawn
    elif sides is not None and sorted(sides) != sorted(order):
        raise KnockcamError("--order must list the same sides as --sides")
    check_answer_sides(answers, order, args.answers)
    given = _given_source(args)
    if given is None:
        raise KnockcamError("give --camera N, --stream URL or --video FILE")
    board = load_board(args.board)
    display = _display(board, args)  # --show without a display, or a port in use, fails here
    calibration = Calibration.load(args.calibration) if args.calibration else None
    reference = None
    if args.reference:
        reference = load_photo(args.reference, "empty-board frame")
    log_path = Path(args.log or f"knockcam-game-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl")
    check_new(log_path)
    kind, where = given
    source = None
    if kind == "video":  # a bad video path fails before any log is written (opened again to play it)
        probe = _open_source(kind, where)
        name, frame_size = probe.name, probe.frame_size()
        probe.close()
    else:  # likewise a camera or a stream that cannot be opened
        source = _open_source(kind, where)
        name, frame_size = source.name, source.frame_size()
    _check_frame_size(frame_size, name, calibration, reference, args)  # likewise files for another size
    size_line = size_note(name, frame_size)
    source_info = {kind: str(Path(where).resolve()) if kind == "video" else where}
    tokens = args.tokens if args.tokens is not None else int(settings.load("live")["tracking"]["tokens_per_side"])
    if not 1 <= tokens <= 4:
        raise KnockcamError("--tokens: 1 to 4 tokens per side (R2)")
    log = new_log(log_path, order=order, board_path=args.board and str(Path(args.board).resolve()),
                  tokens_per_side=tokens, reslide_off_board=args.reslide,
                  review=args.review or settings.load("live")["review"], source=source_info,
                  calibration=calibration, reference=reference)
    log.close()
    print(f"game log: {log_path} (round 1 order: {', '.join(order)})", file=sys.stderr)
    if size_line is not None and calibration is None:  # the board is to be found in these frames
        print(size_line, file=sys.stderr)
    return _Start(log_path, board, display, source_info, calibration, source)


def _prompter(args: argparse.Namespace, answers, answers_used: int):
    """Who answers the game's questions: the scripted answers (those the log has not used yet), else the
    terminal (and the game's page with --answer-on-page)."""
    from knockcam.live.prompts import ScriptedPrompter, TerminalPrompter

    if answers is not None:
        return ScriptedPrompter(answers, skip=answers_used if isinstance(answers, list) else 0,
                                echo=None if args.quiet else (sys.stderr if args.json else sys.stdout))
    return TerminalPrompter(stdout=sys.stderr if args.json else None, page=args.page if args.answer_on_page else None)


def _play(args: argparse.Namespace, live, start: _Start) -> bool:
    """Plays the game on from its frame source (the one given, else the one its log names); False when Ctrl-C
    stopped it (every line of the game is in its log already)."""
    from knockcam.errors import KnockcamError
    from knockcam.live.log import RESUME_LATER

    source, log_path = start.source, start.log_path
    if source is None:  # (a new game's camera or stream is open already) the one given, else the logged one
        kind, where = _given_source(args) or next(iter(start.source_info.items()), ("camera", 0))
        # the logged video again: on from where the game left it
        same = kind == "video" and args.resume and str(Path(where).resolve()) == start.source_info.get("video")
        source = _open_source(kind, where, start_index=live.last_frame + 1 if same else 0)
    if args.resume and start.calibration is not None:
        try:
            _check_frame_size(source.frame_size(), source.name, start.calibration, None, args)
        except KnockcamError:
            source.close()
            raise
        live.use_calibration(start.calibration, f"given at --resume: {args.calibration}")
    try:
        stats = live.run(source, max_frames=args.max_frames, crash_after=args.crash_after)
    except KnockcamError as exc:
        if exc.what_to_do != RESUME_LATER:
            raise
        raise KnockcamError(exc.reason, RESUME_LATER.replace("LOG", str(log_path))) from None
    except KeyboardInterrupt:
        print(f"knockcam: stopped in round {live.tracker.round}; nothing is lost: continue "
              f"with 'knockcam live --resume {log_path}'", file=sys.stderr)
        return False
    finally:
        source.close()
        start.display.close()
    if live.tracker.phase != "over":
        paused = " with the game paused (the camera moved and the board was not found again: put the camera " \
                 "back where it was, or give --calibration from where it is now)" if stats.paused_for_camera else ""
        print(f"the frames ended in round {live.tracker.round} ({live.tracker.phase}){paused}: continue with "
              f"'knockcam live --resume {log_path}'", file=sys.stderr)
    if not args.quiet:
        print(f"{stats.frames} frames, {stats.observations} still-board detections, {stats.fps:.1f} frames/s",
              file=sys.stderr)
    return True


def _print_result(args: argparse.Namespace, live, log_path: Path) -> int:
    """The game's result (JSON with --json, one line with --quiet); exit code 0 when the game is over, else 3."""
    result = {"log": str(log_path), "over": live.tracker.phase == "over", "round": live.game.round_number,
              "cash": dict(live.game.cash), "pot": live.game.pot,
              "standings": [s.to_dict() for s in live.game.standings()]}
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.quiet:  # no scoreboards: the result in one line
        cash = ", ".join(f"{side} {amount}" for side, amount in result["cash"].items())
        print(f"{'game over' if result['over'] else 'stopped'} in round {result['round']}: {cash}; pot {result['pot']}")
    return 0 if result["over"] else 3
