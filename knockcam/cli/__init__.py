"""The one command line: ``knockcam <verb>``. Each verb lives in its own module here.

A verb module defines ``register(subparsers)``; it adds its parser and sets ``run`` to a
function taking the parsed arguments and returning an exit code. Verb modules import the
heavy pipeline (OpenCV, onnxruntime) inside ``run`` so that ``knockcam --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys

from knockcam import __version__
from knockcam.errors import KnockcamError

# Verb modules, in the order ``knockcam --help`` lists them.
VERBS = ("demo", "score", "explain", "round", "game", "board", "calibrate", "live", "replay",
         "synth", "train", "bench")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line like every other knockcam error (not a usage block):
    what is wrong, and where the options are listed. The verbs' parsers are made of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="knockcam",
        description="Score Monopoly Knockout from a photo or a camera: who landed where, who gets paid.",
    )
    parser.add_argument("--version", action="version", version=f"knockcam {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERBS:
        try:
            module = importlib.import_module(f"knockcam.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"knockcam.cli.{name}":
                continue  # verb not built yet
            raise
        module.register(sub)
    return parser


def add_board_option(parser: argparse.ArgumentParser, **kwargs) -> None:
    """``--board FILE``, worded the same for every verb that reads the board (``kwargs``: add_argument's)."""
    parser.add_argument("--board", metavar="FILE", help="board file (YAML; default: the reconstruction shipped with "
                        "knockcam, see docs/board-file.md)", **kwargs)


def add_workers_option(parser: argparse.ArgumentParser, help: str, default: int | None = None) -> None:
    """``--workers N``, read the same for every verb that runs worker processes: a count of 1 or more, refused as
    the command line is read (``worker_count`` makes None one per CPU)."""
    parser.add_argument("--workers", metavar="N", type=_process_count, default=default, help=help)


def _process_count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"give a number of processes, 1 or more, not {text!r}")
    return int(text)


def worker_count(given: int | None) -> int:
    """The worker processes a ``--workers`` option asks for: one per CPU when not given."""
    from knockcam.workers import available_cpus

    return available_cpus() if given is None else given


def invoked_as(verb: str, fallback: str) -> str:
    """The command line that ran ``verb``, for a results file; ``fallback`` when called some other way."""
    import shlex

    if sys.argv[1:2] == [verb]:
        return "knockcam " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    return fallback


def joined_corners(argv: list[str]) -> list[str]:
    """``--corners 102,655 1180,640 930,80 310,85`` typed without quotes, as one argument: the shell splits
    the four pairs, and argparse would stop at the second one (or at a first one like ``-5,12``)."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg != "--corners":
            continue
        j = i + 1
        while j < len(out) and j < i + 5 and _PAIR.match(out[j]):
            j += 1
        if j > i + 1:
            out[i + 1:j] = [" ".join(out[i + 1:j])]
    return out


_PAIR = re.compile(r"^-?\d+(\.\d+)?,-?\d+(\.\d+)?$")  # one x,y pixel pair


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(joined_corners(sys.argv[1:] if argv is None else argv))
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except KnockcamError as exc:
        print(f"knockcam: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("knockcam: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
