"""``knockcam calibrate bench``: every method on synthetic scenes against ground truth, in board mm.

Errors are measured at the board's four true corners: where the estimate puts the pixel where the
true corner is, compared with where it really is (board millimetres).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from knockcam.bench import SPEED_LINE, load_average, machine
from knockcam.board.layout import Board
from knockcam.calibrate.calibration import Calibration
from knockcam.calibrate.grid import nominal_camera
from knockcam.calibrate.quality import board_corners_mm, board_errors_mm, corner_errors_mm, error_limit
from knockcam.errors import KnockcamError
from knockcam.files import write_atomic
from knockcam.workers import in_workers


HELD_OUT_SEED = 2026  # knockcam.synth run for the held-out photos (the fixtures are run 4)


SPEED_PHOTO = 0  # the held-out photo the speed check calibrates (the benchmark's first) ...
SPEED_REPEATS = 5  # ... this many times, after a warm-up

PHONE_SIZE = (4032, 3024)  # a phone's 12 MP photo: the held-out scenes are also rendered at this size
WEBCAM_SIZE = (640, 480)  # what OpenCV opens most webcams at: the held-out scenes are also rendered at this size


def _synth_photo(board: Board, index: int, seed: int = HELD_OUT_SEED, size: tuple[int, int] | None = None,
                 preset: str | None = None):
    """A knockcam.synth photo (decoded JPEG, at ``size`` or synth.yaml's, with its ``preset``) and its truth
    Calibration, or None when synth is absent."""
    try:
        import cv2

        from knockcam.synth.scene import config, make_photo
    except ImportError:
        return None
    cfg = None
    if size is not None or preset is not None:
        cfg = config(preset)
        cfg = {**cfg, "image_size": list(size)} if size is not None else cfg
    jpeg, truth, _ = make_photo(board, seed, index, cfg)
    img = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    cal = Calibration.from_dict(truth["calibration"])
    return img, cal


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"


def _fixture_cases() -> list[str]:
    """The committed synth fixtures with a true calibration, a photo and an empty-board frame."""
    import json

    return [path.stem for path in sorted(FIXTURES.glob("*.json"))
            if json.loads(path.read_text()).get("calibration")
            and (FIXTURES / f"{path.stem}.jpg").exists() and (FIXTURES / f"{path.stem}_ref.jpg").exists()]


def _fixture(case: str):
    """Fixture ``case``'s (photo, empty-board frame, true Calibration)."""
    import json

    import cv2

    truth = Calibration.from_dict(json.loads((FIXTURES / f"{case}.json").read_text())["calibration"])
    return cv2.imread(str(FIXTURES / f"{case}.jpg")), cv2.imread(str(FIXTURES / f"{case}_ref.jpg")), truth


RESAVE_QUALITY = 90  # the "saved again" rows: a photo opened and saved again as JPEG (an editor, a messaging app)


def resaved(image: np.ndarray, quality: int = RESAVE_QUALITY) -> np.ndarray:
    """``image`` saved again as a JPEG at ``quality`` and read back: the same photo with other compression noise."""
    import cv2

    return cv2.imdecode(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])[1], cv2.IMREAD_COLOR)


THICKNESS_MM = (1.5, 6.0)  # the thick-board markers row: the board's thickness, drawn per scene in this range


def _thickness_mm(seed: int) -> float:
    return float(np.random.default_rng(seed).uniform(*THICKNESS_MM))


CUT_SIDES = ("top", "left", "bottom", "right")  # the cut rows: which side of the photo, by scene number ...
CUT_PX = (20, 60)  # ... and how far past it the board's outermost corner there lies, alternating every four scenes


def cut_photo(image: np.ndarray, truth: Calibration, board: Board, side: str, cut_px: int):
    """``image`` cropped at ``side`` so the board's outermost corner there lies ``cut_px`` past the photo's edge, as
    in a photo taken too close; and its true calibration in the cropped photo."""
    h, w = image.shape[:2]
    px = truth.mm_to_px(board_corners_mm(board))
    x0, y0, x1, y1 = 0, 0, w, h
    if side == "left":
        x0 = int(px[:, 0].min()) + cut_px
    elif side == "top":
        y0 = int(px[:, 1].min()) + cut_px
    elif side == "right":
        x1 = int(np.ceil(px[:, 0].max())) - cut_px
    else:
        y1 = int(np.ceil(px[:, 1].max())) - cut_px
    x0, y0 = max(x0, 0), max(y0, 0)
    g = np.array([[1.0, 0.0, -x0], [0.0, 1.0, -y0], [0.0, 0.0, 1.0]])
    k = None if truth.camera_matrix is None else g @ np.asarray(truth.camera_matrix, np.float64)
    return (np.ascontiguousarray(image[y0:y1, x0:x1]),
            truth.moved(g, image_size=(x1 - x0, y1 - y0), camera_matrix=k))


def turned_photo(image: np.ndarray, truth: Calibration, clockwise: bool):
    """``image`` turned a quarter (as a phone held upright shows its photo: portrait where the sensor is
    landscape) and its true calibration in the turned photo. The lens turns with it: the focal lengths and the
    centre swap axes, radial distortion stays, the tangential terms (p1, p2) become (p2, -p1) clockwise and
    (-p2, p1) the other way."""
    import cv2

    h, w = image.shape[:2]
    if clockwise:  # (x, y) -> (h - 1 - y, x)
        g = np.array([[0.0, -1.0, h - 1.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    else:  # (x, y) -> (y, w - 1 - x)
        g = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, w - 1.0], [0.0, 0.0, 1.0]])
    k = dist = None
    if truth.camera_matrix is not None:
        k0 = np.asarray(truth.camera_matrix, np.float64)
        centre = g @ np.array([k0[0, 2], k0[1, 2], 1.0])
        k = np.array([[k0[1, 1], 0.0, centre[0]], [0.0, k0[0, 0], centre[1]], [0.0, 0.0, 1.0]])
    if truth.dist_coeffs is not None:
        dist = np.array(truth.dist_coeffs, np.float64).ravel()  # a copy: np.array copies
        if len(dist) >= 4:
            p1, p2 = dist[2], dist[3]
            dist[2], dist[3] = (p2, -p1) if clockwise else (-p2, p1)
    turned = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE if clockwise else cv2.ROTATE_90_COUNTERCLOCKWISE)
    return turned, truth.moved(g, image_size=(h, w), camera_matrix=k, dist_coeffs=dist)


def _known_lens(truth: Calibration) -> tuple[np.ndarray, np.ndarray]:
    """The true lens of a scene, for the "lens known" rows: a camera with no distortion (the truth has
    no lens model then) is told so, rather than left for the automatic method to read off the lines."""
    if truth.camera_matrix is not None and truth.dist_coeffs is not None:
        return truth.camera_matrix, truth.dist_coeffs
    return nominal_camera(truth.image_size), np.zeros(5)


def run_methods(board: Board, n: int, held_out: int = 0, workers: int = 1) -> dict[str, dict]:
    """Per method: corner errors (mm), reported errors, failures, seconds per image. ``workers`` > 1: the
    fixtures and scenes are calibrated in that many worker processes side by side, the same answers (each
    scene's corner noise is drawn here, in the scenes' order)."""
    rng = np.random.default_rng(0)
    units = [(_fixture_records, (board, case)) for case in _fixture_cases()]
    units += [(_own_scene_records, (board, i, rng.normal(0, 1.5, (4, 2)))) for i in range(n)]
    for i in range(held_out):  # rendered here: whether every corner is in view decides if noise is drawn for it
        photo = _synth_photo(board, i)
        corners = None if photo is None else photo[1].corners_px(board.size_mm)
        in_view = corners is not None and bool(np.all((corners >= 0) & (corners < photo[1].image_size)))
        units.append((_held_out_records, (board, i, held_out, photo, rng.normal(0, 3.0, (4, 2)) if in_view else None)))
    parts = in_workers(_unit, units, workers) if workers > 1 else (_unit(fn, args) for fn, args in units)
    results: dict[str, dict] = {}
    for part in parts:  # each method's rows in the order of the scenes, the methods in the order first met
        for name, r in part.items():
            into = results.setdefault(name, _no_records())
            into["failed"] += r["failed"]
            for key in ("errors", "board", "reported", "offered", "seconds"):
                into[key] += r[key]
    return results


def _unit(fn, args) -> dict[str, dict]:
    return fn(*args)


def _no_records() -> dict:
    return {"errors": [], "board": [], "reported": [], "offered": [], "failed": 0, "seconds": []}


def _record(results: dict[str, dict], board: Board, name: str, truth: Calibration, fn) -> None:
    """``fn``'s calibration measured against ``truth`` into ``results[name]`` (a failure counted when it raises)."""
    from knockcam.calibrate.choose import offered_max_error

    r = results.setdefault(name, _no_records())
    t = time.perf_counter()
    try:
        cal = fn()
    except KnockcamError:
        r["failed"] += 1
        return
    r["seconds"].append(time.perf_counter() - t)
    r["errors"].append(corner_errors_mm(cal, truth, board))
    r["board"].append(board_errors_mm(cal, truth, board))
    r["reported"].append(cal.error_mm if cal.error_mm is not None else np.nan)
    r["offered"].append(offered_max_error(cal) is not None)


def _fixture_records(board: Board, case: str) -> dict[str, dict]:
    """The committed fixture ``case``: automatic (lens known, not, and the photo saved again) and reference."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.reference import calibrate_reference

    results: dict[str, dict] = {}
    photo, ref_frame, truth = _fixture(case)
    _record(results, board, "auto (fixtures/scenes, lens known)", truth,
            lambda: calibrate_auto(photo, board, *_known_lens(truth)))
    _record(results, board, "auto (fixtures/scenes, lens unknown: read off the printed lines)", truth,
            lambda: calibrate_auto(photo, board))
    _record(results, board, f"auto (fixtures/scenes saved again as JPEG at quality {RESAVE_QUALITY}; lens unknown)",
            truth, lambda: calibrate_auto(resaved(photo), board))
    _record(results, board, "reference (fixtures/scenes: CASE_ref.jpg + its true calibration -> CASE.jpg)", truth,
            lambda: calibrate_reference(photo, ref_frame, truth, board))
    return results


def _own_scene_records(board: Board, i: int, noise_px: np.ndarray) -> dict[str, dict]:
    """Own scene ``i`` (knockcam.calibrate.scene): given corners (``noise_px`` added), automatic, reference from
    another camera, and markers (the cards in the board's plane, and on the table below a thick board)."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.corners import calibrate_corners, snap
    from knockcam.calibrate.markers import calibrate_markers
    from knockcam.calibrate.reference import calibrate_reference
    from knockcam.calibrate.scene import make_scene

    results: dict[str, dict] = {}
    s = make_scene(board, 500 + i)
    noisy = s.truth.mm_to_px(board_corners_mm(board)) + noise_px
    _record(results, board, "corners (true corners + 1.5 px noise, own scenes)", s.truth,
            lambda: snap(s.image, calibrate_corners(noisy, board, s.truth.image_size), board))
    _record(results, board, "corners as given, not snapped to the printed lines (the same own scenes and noise)",
            s.truth, lambda: calibrate_corners(noisy, board, s.truth.image_size))
    _record(results, board, "auto (own scenes)", s.truth, lambda: calibrate_auto(s.image, board))
    ref = make_scene(board, 900 + i, art_seed=500 + i, tokens=0)
    _record(results, board, "reference (own scenes, other camera)", s.truth,
            lambda: calibrate_reference(s.image, ref.image, ref.truth, board))
    m = make_scene(board, 700 + i, markers=True)
    _record(results, board, "markers (own scenes)", m.truth, lambda: calibrate_markers(m.image, board))
    thick = make_scene(board, 1100 + i, markers=True, thickness_mm=_thickness_mm(1100 + i))
    _record(results, board, f"markers (own scenes, the cards on the table: the board's face {THICKNESS_MM[0]}-"
            f"{THICKNESS_MM[1]} mm above them)", thick.truth, lambda: calibrate_markers(thick.image, board))
    return results


def _held_out_records(board: Board, i: int, held_out: int, photo, noise_px: np.ndarray | None) -> dict[str, dict]:
    """Held-out knockcam.synth photo ``i`` of run HELD_OUT_SEED (``photo``: its image and truth, None without
    knockcam.synth) every way the benchmark takes it: automatic (lens known and not; cut, turned, saved again, at
    a phone's and a webcam's size), given corners (``noise_px`` added; None: a corner is out of view) and markers
    laid on the table."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.corners import calibrate_corners, snap
    from knockcam.calibrate.markers import calibrate_markers

    results: dict[str, dict] = {}
    last = held_out - 1
    if photo is not None:
        img, truth = photo
        _record(results, board, f"auto (held-out knockcam.synth photos: run {HELD_OUT_SEED}, 0-{last}; lens known)",
                truth, lambda: calibrate_auto(img, board, *_known_lens(truth)))
        _record(results, board, f"auto (held-out knockcam.synth photos: run {HELD_OUT_SEED}, 0-{last}; lens unknown)",
                truth, lambda: calibrate_auto(img, board))
        if noise_px is not None:
            noisy = truth.corners_px(board.size_mm) + noise_px
            _record(results, board, "corners (the same held-out photos, every corner in view: true corners + 3 px "
                    "noise; lens unknown)", truth,
                    lambda: snap(img, calibrate_corners(noisy, board, truth.image_size), board))
            _record(results, board, "corners as given, not snapped to the printed lines (the same held-out photos "
                    "and noise)", truth, lambda: calibrate_corners(noisy, board, truth.image_size))
        side, cut = CUT_SIDES[i % 4], CUT_PX[(i // 4) % 2]
        cut_img, cut_truth = cut_photo(img, truth, board, side, cut)
        _record(results, board, f"auto (the same held-out photos cut: a board corner {CUT_PX[0]} or {CUT_PX[1]} px "
                "past the photo's edge; lens unknown)", cut_truth, lambda: calibrate_auto(cut_img, board))
        turned_img, turned_truth = turned_photo(img, truth, clockwise=i % 2 == 0)
        _record(results, board, "auto (the same held-out photos turned upright, portrait as a phone held upright "
                "shows it; lens unknown)", turned_truth, lambda: calibrate_auto(turned_img, board))
        _record(results, board, f"auto (the same held-out photos saved again as JPEG at quality {RESAVE_QUALITY}; "
                "lens unknown)", truth, lambda: calibrate_auto(resaved(img), board))
    laid = _synth_photo(board, i, preset="markers")
    if laid is not None:
        laid_img, laid_truth = laid
        for lens, what in ((_known_lens(laid_truth), "lens known"), ((), "lens unknown")):
            _record(results, board, f"markers (the held-out scenes rendered with the cards laid on the table, synth "
                    f"preset markers: run {HELD_OUT_SEED}, 0-{last}; {what})", laid_truth,
                    lambda: calibrate_markers(laid_img, board, *lens))
    for size, what in ((PHONE_SIZE, "a phone's size"), (WEBCAM_SIZE, "a webcam's as OpenCV opens most")):
        photo = _synth_photo(board, i, size=size)
        if photo is not None:
            img, truth = photo
            _record(results, board, f"auto (the same held-out scenes at {size[0]}x{size[1]}, {what}; lens unknown)",
                    truth, lambda: calibrate_auto(img, board))
    return results


def speed_check(board: Board, repeats: int = SPEED_REPEATS) -> dict[str, float]:
    """Median ms of the automatic calibration, lens not given, of held-out photo SPEED_PHOTO, ``repeats`` times
    after a warm-up: a few seconds' measure of how fast a machine runs this benchmark's own work (the same run
    has taken 816 s one day and 2151 s another on one machine), so that its seconds per image can be read."""
    from knockcam.calibrate.auto import calibrate_auto

    photo = _synth_photo(board, SPEED_PHOTO)
    if photo is None:
        return {}
    image, _ = photo
    times = []
    for _ in range(1 + repeats):
        t = time.perf_counter()
        try:
            calibrate_auto(image, board)
        except KnockcamError:  # refused or not found: the work done is what is timed
            pass
        times.append((time.perf_counter() - t) * 1000)
    return {"automatic": float(np.median(times[1:]))}


def speed_text(speed: dict[str, float]) -> str:
    """The results file's line about a speed check (``speed_check``'s medians), read back by
    ``knockcam.bench.committed_speed``."""
    timed_ways = ", ".join(f"{name} {ms:.0f} ms" for name, ms in speed.items())
    return (f"{SPEED_LINE} (`knockcam calibrate bench --speed`: held-out photo {SPEED_PHOTO} of run {HELD_OUT_SEED}, "
            f"lens not given, median of {SPEED_REPEATS} after a warm-up, on this machine): {timed_ways}. Run "
            "`knockcam calibrate bench --speed` on another machine, or on another day, to compare its speed with "
            "this run's before comparing seconds.")


def report(results: dict[str, dict], n: int, seconds: float, held_out: int = 0,
           speed: dict[str, float] | None = None, workers: int = 1) -> str:
    """The results file (markdown); ``workers``: how many processes calibrated side by side."""
    rows, gated = _error_rows(results)
    lines = [*_header(n, seconds, held_out, speed, workers), *rows, ""]
    lines += [
        "What `calibrate()` does with them: it stops (\"error over the limit\") when a calibration reports more than "
        f"{error_limit():g} mm (knockcam/data/calibrate.yaml). "
        "Kept = reported error within that limit; 'bad kept' = kept although a true corner is more than 3 mm off "
        "(the reported error was too low); 'good refused' = refused although every corner is within 3 mm. "
        "A row 'offers of --max-error accepted' keeps also the calibrations refused with an offer to accept them "
        "(docs/calibration.md, \"Accepting a larger error\").",
        "",
        "| method | kept | median mm (kept) | worst mm (kept) | bad kept | refused | good refused |",
        "|---|---|---|---|---|---|---|",
        *gated,
        "",
        _notes(),
    ]
    return "\n".join(lines) + "\n"


def _header(n: int, seconds: float, held_out: int, speed: dict[str, float] | None, workers: int) -> list[str]:
    """The results file's title, how it was made, and what its error figures mean, up to the error table's head."""
    side_by_side = workers > 1
    return [
        "# Calibration benchmark",
        "",
        f"Made by: `knockcam calibrate bench --scenes {n} --held-out {held_out}"
        + (f" --workers {workers}" if side_by_side else "") + f"` ({seconds:.0f} s on {machine()}; load average at the "
        f"end {load_average(note_busy=not side_by_side)}"
        + (f", its own {workers} worker processes counted in it" if side_by_side else "")
        + "). Synthetic data only; no real photos yet.",
        "",
        *([f"Seconds per image (s / image): timed in {workers} worker processes calibrating side by side, each slower "
           "than it is alone; the speed check below times one photo alone.", ""] if side_by_side else []),
        *([speed_text(speed), ""] if speed else []),
        "Error = distance in board mm between each true board corner and where the calibration puts it "
        "(4 corners per scene). Targets (issue 5): median <= 1 mm, worst <= 3 mm for auto and reference. "
        "'On the board' is the same over a 25 mm grid of points on the board's face, where tokens rest (on a "
        "humped board the face rises up to 8 mm between its corners: only a calibration that knows the hump "
        "puts those points right).",
        "",
        "| method | scenes | not found | median mm | 90% mm | worst mm | share > 3 mm | on the board: median / worst mm "
        "| median reported mm | s / image |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]


def _error_rows(results: dict[str, dict]) -> tuple[list[str], list[str]]:
    """Each method's row of the error table, and its rows of the table of what the limit keeps (with a row for
    accepting the --max-error its refusals offer, where they offer one)."""
    rows, gated = [], []
    for name, r in results.items():
        total = len(r["errors"]) + r["failed"]
        if not r["errors"]:
            rows.append(f"| {name} | {total} | {r['failed']} | - | - | - | - | - | - | - |")
            continue
        e = np.concatenate(r["errors"])
        worst_per_scene = np.array([x.max() for x in r["errors"]])
        on = np.concatenate(r["board"])
        rows.append(f"| {name} | {total} | {r['failed']} | {np.median(e):.2f} | {np.percentile(e, 90):.2f} | "
                    f"{e.max():.2f} | {np.mean(worst_per_scene > 3):.0%} | {np.median(on):.2f} / {on.max():.2f} | "
                    f"{np.nanmedian(r['reported']):.2f} | {np.median(r['seconds']):.2f} |")
        gated.append(_gate_row(name, r))
        reported = np.asarray(r["reported"], np.float64)
        offered = np.asarray(r.get("offered") or [False] * len(reported), bool) & (reported > error_limit())
        if offered.any():  # what accepting every --max-error the refusals offer keeps
            gated.append(_gate_row(f"{name}, {int(offered.sum())} offers of --max-error accepted", r, offered))
    return rows, gated


def _notes() -> str:
    """The results file's closing notes: what each row's photos are."""
    from knockcam import settings

    asked = "x".join(str(int(v)) for v in settings.load("live")["camera"]["frame_size"])  # what live asks a webcam for
    return (
        "Notes: 'own scenes' are knockcam/calibrate/scene.py (random print styles, tables, distractor sheets, "
        "tokens, tilt 0-50 deg, no board thickness: the board and the marker cards in one plane, except in the "
        "thick-board markers row, where the cards lie on the table, the board's face a thickness drawn per scene "
        "above them, its sides drawn where they show). 'held-out' photos are knockcam.synth renders (board "
        "thickness, bowed boards, occluders, blur, lens distortion) from a run that is not the fixtures'. "
        "'share > 3 mm' counts scenes whose worst corner is over 3 mm. 'reported' is the calibration's own "
        "error_mm (residual or estimate, see error_source). The phone-size row renders the same held-out scenes "
        "at 12 MP, as sharp as the renderer draws them (a phone's photo is often softer); the automatic method "
        "searches a photo that large scaled down (calibrate.yaml photo.max_px). The webcam row renders them at "
        f"{WEBCAM_SIZE[0]}x{WEBCAM_SIZE[1]}, which the method searches as it is (`knockcam live` asks a camera for "
        f"{asked}). The cut row crops the same "
        f"held-out photos at one side ({', '.join(CUT_SIDES)} in turn), {CUT_PX[0]} px past the board's outermost "
        f"corner there for four scenes, then {CUT_PX[1]} px for the next four: part of the board is out of the photo "
        "(the other rows' renders always show the whole board). The upright row turns the same held-out photos a "
        "quarter, clockwise for even scene numbers and the other way for odd ones: the board then runs along the "
        "photo's other side, as in a phone's portrait photo (the renders are all landscape; none is a real photo). "
        "The held-out markers rows render the same run with synth.yaml's preset `markers`: the four cards on the "
        "table at the board's corners, the board's face its thickness above them, the camera drawn to frame the "
        "cards too (so these are other photos, the board smaller in them, than the automatic rows')."
    )


def _gate_row(name: str, r: dict, accepted: np.ndarray | None = None) -> str:
    """One row of what the limit keeps; ``accepted``: calibrations kept although over it."""
    limit = error_limit()
    rep = np.asarray(r["reported"], np.float64)
    worst = np.array([x.max() for x in r["errors"]])
    kept = rep <= limit
    if accepted is not None:
        kept = kept | accepted
    refused = ~kept
    if kept.any():
        e = np.concatenate([x for x, k in zip(r["errors"], kept) if k])
        med, top = f"{np.median(e):.2f}", f"{e.max():.2f}"
    else:
        med = top = "-"
    return (f"| {name} | {kept.sum()} | {med} | {top} | {int((kept & (worst > 3)).sum())} | "
            f"{int(refused.sum()) + r['failed']} | {int((refused & (worst <= 3)).sum())} |")


def run_bench(board: Board, n: int, out: Path, held_out: int = 0, workers: int = 1) -> str:
    """Every method on its scenes (in ``workers`` processes side by side), then the speed check alone; the report
    written to ``out`` and returned."""
    t = time.perf_counter()
    results = run_methods(board, n, held_out, workers)
    seconds = time.perf_counter() - t
    text = report(results, n, seconds, held_out, speed=speed_check(board), workers=workers)
    write_atomic(out, text)
    return text


# Seeds the benchmarks hold out: the detection benchmark's committed scenes (bench/results*.md, index 0) and
# this benchmark's held-out run. Tuning on them would make those results no longer held out.
BENCHMARK_SEEDS = (range(1000, 2000), range(HELD_OUT_SEED, HELD_OUT_SEED + 1))


def tuning_records(board: Board, seed: int, indexes, lens_given: bool = False):
    """Per knockcam.synth render (``seed``, each of ``indexes``): how the automatic method did against its
    truth, as a dict (``index``, ``worst_mm``, ``estimate_mm``, ``grid_share``, ``offered``, ``source``,
    ``lens_k1``, ``true_k1``, or ``failed`` with the message; ``offered``: refused with an offer of
    --max-error; ``lens_k1``: the lens read off the printed lines and used, None where none was, and
    ``true_k1`` the render's, both at the nominal focal length); the lens is not given unless
    ``lens_given``. What a change to the automatic method is tuned on, render by render
    (``knockcam calibrate tune``)."""
    from knockcam.calibrate.auto import calibrate_auto
    from knockcam.calibrate.choose import offered_max_error

    if any(seed in seeds for seeds in BENCHMARK_SEEDS):
        raise KnockcamError(f"seed {seed} is held out for a benchmark (detection 1000-1999, calibration "
                            f"{HELD_OUT_SEED}): tune on another seed")
    for i in indexes:
        photo = _synth_photo(board, int(i), seed)
        if photo is None:
            raise KnockcamError("tuning renders need knockcam.synth (install the package with its synth module)")
        img, truth = photo
        rec: dict = {"seed": seed, "index": int(i)}
        try:
            cal = calibrate_auto(img, board, *_known_lens(truth)) if lens_given else calibrate_auto(img, board)
        except KnockcamError as ex:
            rec["failed"] = str(ex)
        else:
            refused = float(cal.error_mm) > error_limit()
            read = not lens_given and cal.dist_coeffs is not None
            rec.update(worst_mm=float(corner_errors_mm(cal, truth, board).max()), estimate_mm=float(cal.error_mm),
                       grid_share=cal.grid_share, offered=refused and offered_max_error(cal) is not None,
                       source=cal.error_source, lens_k1=k1_at_nominal_focal(cal) if read else None,
                       true_k1=k1_at_nominal_focal(truth))
        yield rec


def k1_at_nominal_focal(cal: Calibration) -> float:
    """``cal``'s first radial lens term for a camera of the nominal focal length (grid.nominal_camera), as the
    automatic method reads a lens off the printed lines: comparable across photos whatever focal length
    their camera has; 0 with no lens."""
    if cal.camera_matrix is None or cal.dist_coeffs is None:
        return 0.0
    f_nominal = float(nominal_camera(cal.image_size)[0, 0])
    return float(np.ravel(cal.dist_coeffs)[0]) * (f_nominal / float(np.asarray(cal.camera_matrix)[0, 0])) ** 2


def _kept_and_bad(record: dict, limit: float) -> tuple[bool, bool]:
    """Whether a tuning record's board is kept under ``limit`` (its estimate within it) and whether it is bad
    (a true corner over 3 mm off); for a record with a board (no ``failed``)."""
    return record["estimate_mm"] <= limit, record["worst_mm"] > 3.0


def tuning_summary(records) -> dict[str, int]:
    """What the 3 mm limit (calibrate.yaml quality.max_error_mm) makes of tuning records: renders, kept,
    bad kept (a corner over 3 mm), good refused (every corner within 3 mm), over 3 mm or not found, and the
    refusals offering --max-error with a good and with a bad board."""
    limit = error_limit()
    out = dict.fromkeys(("renders", "kept", "bad kept", "good refused", "over 3 mm or not found", "good offers",
                         "bad offers"), 0)
    for r in records:
        out["renders"] += 1
        if "failed" in r:
            out["over 3 mm or not found"] += 1
            continue
        kept, bad = _kept_and_bad(r, limit)
        out["kept"] += kept
        out["bad kept"] += kept and bad
        out["good refused"] += not kept and not bad
        out["over 3 mm or not found"] += bad
        if not kept and r["offered"]:
            out["bad offers" if bad else "good offers"] += 1
    return out


def tuning_changes(before: list[dict], after: list[dict], min_mm: float = 0.3) -> list[str]:
    """One line per render (in both lists) whose fate under the limit changed or whose worst corner moved
    at least ``min_mm``."""
    limit = error_limit()

    def fate(r):
        if "failed" in r:
            return "not found"
        kept, bad = _kept_and_bad(r, limit)
        return ("kept" if kept else "refused") + (", bad" if bad else ", good")

    def said(r):
        return fate(r) if "failed" in r else f"{fate(r)} {r['worst_mm']:.2f} mm (estimated {r['estimate_mm']:.2f})"

    old = {(r["seed"], r["index"]): r for r in before}
    lines = []
    for r in after:
        b = old.get((r["seed"], r["index"]))
        if b is None:
            continue
        moved = "failed" not in b and "failed" not in r and abs(b["worst_mm"] - r["worst_mm"]) >= min_mm
        if fate(b) != fate(r) or moved:
            lines.append(f"{r['seed']}/{r['index']}: {said(b)} -> {said(r)}")
    return lines
