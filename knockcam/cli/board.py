"""`knockcam board`: show, export or draw the board file; `knockcam board check` overlays it on a photo.

    knockcam board [--board FILE] [--json] [--png OUT.png]
    knockcam board check PHOTO (--corners "x,y x,y x,y x,y" | --calibration FILE) [--board FILE] [--out OUT.png]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from knockcam.cli import add_board_option
from knockcam.errors import KnockcamError
from knockcam.files import load_photo, write_atomic



def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "board", help="show, export or draw the board layout; check it against a photo",
        description="Show the board file (spaces, kinds, colour sets, values), print it as JSON, draw it, "
                    "or overlay it on a photo of your board ('knockcam board check').")
    add_board_option(parser)
    parser.add_argument("--json", action="store_true", help="print the board as JSON (stable keys)")
    parser.add_argument("--png", metavar="OUT.png", help="draw the board top-down into this PNG")
    parser.add_argument("--px-per-mm", type=float, default=2.0, help="scale of --png (default 2)")
    parser.set_defaults(run=run)
    sub = parser.add_subparsers(dest="board_command", metavar="check")
    check = sub.add_parser(
        "check", help="overlay the layout on a photo of your board to see where it differs",
        description="Draw the board file's space outlines into a photo, placed by the board's four corners.")
    check.add_argument("photo", metavar="PHOTO", help="photo of the whole board")
    placed = check.add_mutually_exclusive_group(required=True)
    placed.add_argument("--corners", metavar='"x,y x,y x,y x,y"',
                        help="the board's corners in photo pixels: near-left (GO! end), near-right, far-right, far-left")
    placed.add_argument("--calibration", metavar="FILE",
                        help="a calibration file of this camera ('knockcam calibrate' with --corners, --click or the "
                             "marker sheet), instead of --corners")
    add_board_option(check, default=argparse.SUPPRESS)
    check.add_argument("--out", metavar="OUT.png", help="where to write the overlay (default PHOTO-board-check.png)")
    check.set_defaults(run=run_check)


def board_json(board) -> dict:
    """The board as the CLI contract's JSON object (keys kept stable for other tools)."""
    return {
        "name": board.name,
        "size_mm": [board.size_mm[0], board.size_mm[1]],
        "spaces": [{"id": s.id, "name": s.name, "kind": s.kind, "color_set": s.color_set, "value": s.value,
                    "polygon": [[x, y] for x, y in s.polygon]} for s in board.spaces],
        "set_bonus": dict(board.set_bonus),
        "token": {"base_diameter_mm": board.token.base_diameter_mm, "height_mm": board.token.height_mm},
    }


def run(args) -> int:
    from knockcam.board import load_board

    board = load_board(args.board)
    if args.png:
        if not 0.2 <= args.px_per_mm <= 10:  # a board a few pixels wide, or one picture of gigabytes
            raise KnockcamError(f"--px-per-mm must be between 0.2 and 10, not {args.px_per_mm}")
        from knockcam.board.drawing import draw_board

        _write_png(Path(args.png), draw_board(board, args.px_per_mm, margin_mm=10.0))
    if args.json:
        print(json.dumps(board_json(board), indent=2))
        return 0
    _print_table(board)
    if args.png:
        print(f"drew the board into {args.png}")
    return 0


def _print_table(board) -> None:
    """The spaces as a table; their ids are never cut short (commands take them), and in a terminal too
    narrow for everything the geometry columns (for editing a board file: --json has them) are left out."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    width, length = board.size_mm
    table = Table(title=f"{board.name}  ({width:g} x {length:g} mm, {board.source})")
    table.add_column("id", no_wrap=True, min_width=max(len(s.id) for s in board.spaces))
    geometry = console.width >= 110
    for column in ("name", "kind", "colour set", "value") + (("centre mm", "size mm") if geometry else ()):
        table.add_column(column, justify="right" if column == "value" else "left")
    for s in board.spaces:
        xs = [x for x, _ in s.polygon]
        ys = [y for _, y in s.polygon]
        row = [s.id, s.name, s.kind, s.color_set or "", f"M{s.value}" if s.kind == "property" else ""]
        if geometry:
            row += [f"{(min(xs) + max(xs)) / 2:.0f}, {(min(ys) + max(ys)) / 2:.0f}",
                    f"{max(xs) - min(xs):.0f} x {max(ys) - min(ys):.0f}"]
        table.add_row(*row)
    console.print(table)
    bonus = ", ".join(f"{k} M{v}" for k, v in board.set_bonus.items())
    console.print(f"set bonuses: {bonus}")
    console.print(f"token base {board.token.base_diameter_mm:g} mm, height {board.token.height_mm:g} mm; "
                  f"GO! line at y = {board.go_line_y_mm:g} mm")
    if not geometry:
        console.print("(each space's centre and size: in a terminal 110 columns wide, or 'knockcam board --json')")


def run_check(args) -> int:
    from knockcam.board import load_board
    from knockcam.calibrate.calibration import Calibration
    from knockcam.calibrate.choose import check_size
    from knockcam.calibrate.corners import calibrate_corners, parse_corners

    board = load_board(getattr(args, "board", None))
    photo = Path(args.photo)
    image = load_photo(photo)
    h, w = image.shape[:2]
    if args.calibration is not None:
        calibration = Calibration.load(args.calibration)
        check_size(calibration, image, str(args.calibration), str(photo),
                   "give the photo from that camera, or --corners")
        return _write_check(image, calibration, board, photo, args.out)
    # as given, not snapped to the printed lines: the outlines drawn show where this board file puts them
    calibration = calibrate_corners(parse_corners(args.corners), board, (w, h))
    return _write_check(image, calibration, board, photo, args.out)


def _write_check(image, calibration, board, photo: Path, out: str | None) -> int:
    """The board file's outlines drawn into the photo where ``calibration`` places them, written as PNG."""
    from knockcam.board.drawing import draw_layout_overlay

    path = Path(out) if out else Path(f"{photo.stem}-board-check.png")
    _write_png(path, draw_layout_overlay(image, calibration, board))
    print(f"wrote {path}: the board file's outlines (yellow), board edge (white) and GO! line (red) on your photo")
    return 0


def _write_png(path: Path, image) -> None:
    """Encode and write atomically (knockcam.files.write_atomic)."""
    import cv2

    suffix = path.suffix.lower()
    if suffix not in (".png", ".jpg", ".jpeg"):
        raise KnockcamError(f"{path}: a picture is written as .png or .jpg: give a path ending in .png")
    ok, data = cv2.imencode(suffix, image)
    if not ok:
        raise KnockcamError(f"cannot encode an image for {path}")
    write_atomic(path, data.tobytes())
