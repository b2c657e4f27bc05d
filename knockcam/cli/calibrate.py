"""``knockcam calibrate``: find the board in a photo and save the calibration; also lens, sheet, bench and tune."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from knockcam.cli import add_board_option, add_workers_option
from knockcam.cli.score import add_max_error
from knockcam.errors import KnockcamError
from knockcam.files import load_photo

HELP = """examples:
  knockcam calibrate photo.jpg                       automatic (marker cards if in view, else the board outline)
  knockcam calibrate photo.jpg --corners "102,655 1180,640 930,80 310,85"   near-left, near-right, far-right, far-left
  knockcam calibrate photo.jpg --click               click the four corners in a window
  knockcam calibrate photo.jpg --reference empty.jpg calibration/empty.yaml
  knockcam calibrate camera charuco1.jpg charuco2.jpg charuco3.jpg   lens calibration
  knockcam calibrate sheet                           write calibration/markers.png and charuco.png
  knockcam calibrate bench                           measure every method on synthetic scenes
  knockcam calibrate bench --speed                   time one photo here against bench/calibration.md's check
  knockcam calibrate tune --seed 3009 --out new.jsonl --compare old.jsonl
                                                     the automatic method render by render, against a run before"""


def register(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="find the board in a photo (corners, click, markers, reference, auto)",
                              epilog=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", nargs="+", metavar="IMAGE | camera IMAGES... | sheet | bench | tune",
                   help="the photo to calibrate, or a sub-command")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--corners", help='four "x,y" pixel corners: near-left, near-right, far-right, far-left')
    how.add_argument("--click", action="store_true", help="click the corners in a window (needs a display)")
    how.add_argument("--markers", action="store_true", help="use the marker cards (calibration/README.md)")
    how.add_argument("--reference", nargs=2, metavar=("REF_IMAGE", "REF_CALIB"),
                     help="register to a calibrated photo of the same board")
    how.add_argument("--auto", action="store_true", help="find the board outline automatically")
    add_board_option(p)
    p.add_argument("--camera", help="lens calibration file from 'knockcam calibrate camera'")
    p.add_argument("--out", help="where to write the calibration (default calibration/<image name>.yaml); "
                                 "bench: the results file; tune: the records (JSON lines); sheet: the folder")
    add_max_error(p)
    p.add_argument("--scenes", type=int, default=20, help="bench: scenes per method (calibrate's own scenes)")
    p.add_argument("--held-out", type=int, default=50, help="bench: held-out knockcam.synth photos for the automatic method")
    add_workers_option(p, help="bench: calibrate in N worker processes side by side (default: one per CPU; each "
                               "photo's seconds are then those of N at a time)")
    p.add_argument("--speed", action="store_true",
                   help="bench: only time one held-out photo's automatic calibration (about 20 s) and compare "
                        "with the speed check the results file (--out) recorded")
    p.add_argument("--seed", type=int, help="tune: the knockcam.synth run to render (not a benchmark's held-out one)")
    p.add_argument("--renders", type=int, default=180, help="tune: renders of that run, from --first (default 180)")
    p.add_argument("--first", type=int, default=0, help="tune: the first render's index (default 0)")
    p.add_argument("--lens-given", action="store_true", help="tune: give the automatic method the true lens")
    p.add_argument("--compare", metavar="RECORDS", help="tune: records of an earlier run (--out) to compare with")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(run=run)


def run(args) -> int:
    from knockcam.board import load_board

    board = load_board(args.board)
    verb, alone = args.target[0], len(args.target) == 1
    if verb == "bench" and alone:
        return _speed(board, args.out or "bench/calibration.md") if args.speed else _bench(board, args)
    if verb == "tune" and alone:
        return _tune(board, args)
    if verb == "sheet" and alone:
        return _sheet(Path(args.out or "calibration"))
    if verb == "camera" and not Path(verb).is_file():
        return _camera(args.target[1:], args.out)
    if not alone:
        raise KnockcamError("calibrate takes one image (or: camera IMAGES..., sheet, bench)")
    return _photo(board, verb, args)


def _bench(board, args) -> int:
    """``calibrate bench``: every method on synthetic scenes, written to the results file."""
    from knockcam.calibrate.bench import run_bench
    from knockcam.cli import worker_count
    from knockcam.files import check_writable

    if args.scenes < 1 or args.held_out < 0:
        raise KnockcamError(f"calibrate bench needs --scenes 1 or more and --held-out 0 or more, not "
                            f"{args.scenes} and {args.held_out}")
    workers = worker_count(args.workers)
    out = check_writable(args.out or "bench/calibration.md")  # before the quarter hour of scenes
    print(run_bench(board, args.scenes, out, held_out=args.held_out, workers=workers))
    return 0


def _sheet(folder: Path) -> int:
    """``calibrate sheet``: the marker sheet and the ChArUco board to print, in ``folder``."""
    from knockcam.calibrate.lens import charuco_image
    from knockcam.calibrate.markers import png_with_dpi, sheet_image
    from knockcam.files import write_atomic_all

    if folder.is_file() or folder.suffix.lower() in (".png", ".pdf", ".jpg", ".jpeg"):
        raise KnockcamError(f"calibrate sheet --out takes a folder (it writes markers.png and charuco.png "
                            f"there), not {folder.name}: give --out {folder.parent / folder.stem}")
    write_atomic_all({folder / "markers.png": png_with_dpi(sheet_image(300), 300),
                      folder / "charuco.png": png_with_dpi(charuco_image(300), 300)})
    print(f"wrote {folder / 'markers.png'} and {folder / 'charuco.png'} (300 dpi, print at 100%)")
    return 0


def _camera(photos: list[str], out: str | None) -> int:
    """``calibrate camera IMAGES...``: the lens from photos of the printed ChArUco board."""
    from knockcam.calibrate.lens import calibrate_lens

    out_path = _yaml_out(out or "calibration/camera.yaml")
    if not photos:
        raise KnockcamError("calibrate camera needs photos of the printed ChArUco board",
                            "print calibration/charuco.png, photograph it at 3 or more angles with the camera, "
                            "and give them: knockcam calibrate camera charuco1.jpg charuco2.jpg charuco3.jpg")
    cal = calibrate_lens([load_photo(p, "ChArUco photo") for p in photos])  # a missing one is named first
    cal.save(out_path)
    print(f"lens calibrated ({cal.error_source}); wrote {out_path}; pass --camera {out_path}")
    return 0


def _photo(board, path: str, args) -> int:
    """``calibrate IMAGE``: the board found in one photo by the method asked for, saved and said."""
    out = _yaml_out(args.out or f"calibration/{Path(path).stem}.yaml")
    image = load_photo(path)
    camera = None
    if args.camera:
        from knockcam.calibrate.calibration import Calibration

        camera = _lens_for(Calibration.load(args.camera, lens=True), image, args.camera)
    from knockcam.calibrate import calibrate

    k = None if camera is None else camera.camera_matrix
    d = None if camera is None else camera.dist_coeffs
    if args.click:
        from knockcam.calibrate.choose import calibrate_from_corners
        from knockcam.calibrate.click import click_corners

        cal = calibrate_from_corners(image, board, click_corners(image), "click", k, d, args.max_error)
    elif args.markers:
        from knockcam.calibrate.choose import calibrate_with_markers

        cal = calibrate_with_markers(image, board, k, d, args.max_error)
    elif args.auto:
        from knockcam.calibrate.choose import calibrate_automatically

        cal = calibrate_automatically(image, board, k, d, args.max_error)
    elif args.reference:
        reference = (load_photo(args.reference[0], "reference photo"), args.reference[1])
        cal = calibrate(image, board, reference=reference, camera=camera, max_error_mm=args.max_error)
    else:
        cal = calibrate(image, board, corners=args.corners, camera=camera, max_error_mm=args.max_error)
    cal.save(out, board.size_mm)
    if args.json:
        print(json.dumps({**cal.to_dict(board.size_mm), "file": str(out)}))
    else:
        _say_saved(cal, out, args)
    return 0


def _say_saved(cal, out: Path, args) -> None:
    """The calibration just saved, in words: its error against the limit, how it was found, what to do next."""
    from knockcam.calibrate.quality import error_limit

    print(f"{cal.method}: error {cal.error_mm:.2f} mm on the board (limit {error_limit(args.max_error):g} mm); "
          f"wrote {out}")
    print(f"  how: {cal.error_source}")
    if cal.unchecked and args.reference:  # the reference's calibration, used as given
        print(f"  not checked: {cal.unchecked}; if {args.reference[1]} is not that photo's own calibration, this "
              "one is wrong too")
    print(f"  next: knockcam score PHOTO --calibration {out}  (a photo from this camera, where it stands now)")


def _lens_for(lens, image, path: str):
    """The lens calibration for this photo: as made at the photo's size, or scaled to it from another resolution
    of the same view; a KnockcamError for another shape (a crop or another camera mode: the optical centre moves)."""
    w, h = (int(v) for v in lens.image_size)
    size = (int(image.shape[1]), int(image.shape[0]))
    if (w, h) == size:
        return lens
    if abs(w * size[1] - h * size[0]) > 0.01 * w * size[1]:
        raise KnockcamError(f"lens file {path} is for {w}x{h} images, this photo is {size[0]}x{size[1]} "
                            "(another shape)",
                            "run 'knockcam calibrate camera' on photos taken in this camera mode")
    return lens.resized(size)


def _yaml_out(path: str) -> Path:
    """Where a calibration file goes: a .yaml path (a .png there would hold YAML no viewer opens)."""
    if Path(path).suffix.lower() not in (".yaml", ".yml"):
        raise KnockcamError(f"--out {path}: a calibration file is YAML: give a path ending in .yaml")
    return Path(path)


def _speed(board, results: str) -> int:
    """``knockcam calibrate bench --speed``: this machine's speed check, and the one ``results`` recorded."""
    from knockcam.calibrate.bench import speed_check, speed_text
    from knockcam.cli.bench import print_speed

    here = speed_check(board)
    return print_speed(speed_text(here), here, results)


def _tune(board, args) -> int:
    """``knockcam calibrate tune``: the automatic method on tuning renders, render by render (records to
    ``--out`` as JSON lines), summed up under the 3 mm limit, and set against an earlier run's records."""
    from knockcam.calibrate.bench import tuning_changes, tuning_records, tuning_summary
    from knockcam.files import check_writable, write_atomic

    if args.out:
        check_writable(args.out)  # before the renders are calibrated
    if args.seed is None:
        raise KnockcamError("calibrate tune needs --seed: the knockcam.synth run to render (e.g. --seed 3009)")
    if args.renders < 1 or args.first < 0:
        raise KnockcamError(f"calibrate tune: --renders must be at least 1 and --first at least 0 "
                            f"(given {args.renders} and {args.first})")
    from rich.console import Console
    from rich.progress import Progress

    before = _records(Path(args.compare)) if args.compare else None
    records = []
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("renders", total=args.renders)
        for record in tuning_records(board, args.seed, range(args.first, args.first + args.renders), args.lens_given):
            records.append(record)
            bar.advance(task)
    if args.out:
        write_atomic(args.out, "".join(json.dumps(r) + "\n" for r in records))
    now = tuning_summary(records)
    if before is not None:
        done = {(r["seed"], r["index"]) for r in records}
        was = tuning_summary([r for r in before if (r["seed"], r["index"]) in done])
        for line in tuning_changes(before, records):
            print(line)
        print("; ".join(f"{k} {was[k]} -> {now[k]}" for k in now))
    else:
        print("; ".join(f"{k} {v}" for k, v in now.items()))
    return 0


def _records(path: Path) -> list[dict]:
    """Tuning records written by an earlier ``knockcam calibrate tune --out``."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as ex:
        raise KnockcamError(f"cannot read tuning records {path}: {ex}; give a file that "
                            f"'knockcam calibrate tune --out' wrote") from None
    if not all(isinstance(r, dict) and "seed" in r and "index" in r for r in records):
        raise KnockcamError(f"{path} holds no tuning records: give a file that 'knockcam calibrate tune --out' wrote")
    return records
