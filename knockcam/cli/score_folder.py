"""``knockcam score DIR``: every photo of a night's folder scored, a summary (CSV and JSON) and an evidence
picture each.

Where each photo's board is searched for (seconds a photo on one core), the photos are scored side by
side in worker processes (``default_workers``, or ``--workers``): each scores a photo from start to end
as ``knockcam score PHOTO`` would, so the answers are those of one after another, and the summary lists
them in the folder's order. Ctrl-C stops it: the photos being scored are finished, those done by then are in
the summary, the others marked "stopped".
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from knockcam.cli.score import options_from
from knockcam.errors import KnockcamError
from knockcam.workers import FirstCtrlC, available_cpus, close_pool, spawned_pool

if TYPE_CHECKING:
    from knockcam.pipeline import ScoreOptions, Scorer

SUMMARY_FIELDS = ("image", "status", "tokens", "close_calls", "hidden_areas", "hidden_spaces", "calibration",
                  "calibration_error_mm", "red", "yellow", "green", "blue", "pot_after", "evidence", "error")
TOKEN_FIELDS = ("image", "n", "side", "space", "state", "coverage", "margin_mm", "x_mm", "y_mm", "ambiguous",
                "confidence")
STOPPED = "stopped"  # the status of a photo not scored because Ctrl-C stopped the folder first
STOPPED_WHY = "not scored: the folder was stopped (Ctrl-C) before this photo was done; score it again"


# Files in a night's folder that are not scored but not passed over in silence: a phone's HEIC photos get a row
# of their own (with load_photo's "export it as JPEG"), its videos a line naming the command that reads them.
HEIC_SUFFIXES = (".heic", ".heif")
VIDEO_SUFFIXES = (".mp4", ".mov", ".m4v", ".3gp", ".avi", ".mkv", ".webm")


def photos_in(folder: Path) -> tuple[list[Path], list[Path]]:
    """The photos in ``folder`` (HEIC ones included, to be refused each in its row) and the videos beside them."""
    from knockcam.pipeline import PHOTO_SUFFIXES

    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    return ([p for p in files if p.suffix.lower() in PHOTO_SUFFIXES + HEIC_SUFFIXES],
            [p for p in files if p.suffix.lower() in VIDEO_SUFFIXES])


def default_workers(args) -> int:
    """One worker process per CPU when the board is found anew in every photo (no --calibration, --corners or
    --reference): that search, 1-8 s a photo, runs on one core. Otherwise one process: detection with the
    empty-board frame already uses two cores, and side by side the photos were scored slower (36 photos with a
    saved calibration and the frame, 2 cores: 15.7 s in one process, 17.7 s in two)."""
    return 1 if (args.calibration or args.corners or args.reference) else available_cpus()


def run_folder(folder: Path, args) -> int:
    """Score every photo in ``folder``; write summary.csv, tokens.csv, summary.json and evidence/ in --out."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from knockcam.files import check_writable, write_atomic_all
    from knockcam.pipeline import Scorer

    photos, videos = photos_in(folder)
    if args.reference:  # the empty-board frame kept among the night's photos is not one of them
        photos = [p for p in photos if p.resolve() != Path(args.reference).resolve()]
    video_note = ""
    if videos:
        names = ", ".join(p.name for p in videos[:3]) + (", ..." if len(videos) > 3 else "")
        video_note = (f"{len(videos)} video{'s' if len(videos) > 1 else ''} ({names}) not scored here: "
                      "'knockcam live --video FILE' follows a game in one")
    if not photos:
        raise KnockcamError(f"no photos in {folder} (looked for .jpg, .jpeg, .png, .bmp, .tif, .tiff, .webp)"
                            + (f"; {video_note}" if video_note else ""))
    out = Path(args.out) if args.out else folder / "knockcam-scores"
    if out.exists() and not out.is_dir():
        raise KnockcamError(f"--out {out} is a file, not a folder")
    for name in ("summary.csv", "tokens.csv", "summary.json"):  # before the night's photos are scored, not after
        check_writable(out / name)
    scorer = Scorer(options_from(args))  # the options checked here, before any photo is read
    workers = min(args.workers or default_workers(args), len(photos))
    pictures = _evidence_names(photos)
    jobs = [(photo, out / "evidence" / pictures[photo]) for photo in photos]
    records: dict[int, dict] = {}
    err_console = Console(stderr=True)
    if video_note:
        err_console.print(video_note, style="yellow", markup=False, highlight=False, soft_wrap=True)
    with Progress(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[name]}"),
                  TimeRemainingColumn(), console=err_console, transient=False) as progress:
        task = progress.add_task("score", total=len(photos), name="")

        def keep(index: int, record: dict) -> None:
            records[index] = record
            photo = photos[index]
            if record["error"]:
                where = "" if str(photo) in record["error"] else f"{photo.name}: "
                progress.console.print(f"{where}{record['error']}", style="yellow", markup=False, highlight=False,
                                       soft_wrap=True)
            progress.update(task, name=photo.name)
            progress.advance(task)

        stopped = _score_all(jobs, scorer, workers, progress.console, keep)
    ordered = [records.get(i) or _record(photo, STOPPED, STOPPED_WHY) for i, photo in enumerate(photos)]
    _remove_stale_pictures(jobs, ordered, err_console)
    summary = {"folder": str(folder), "photos": len(photos), "scored": sum(r["status"] == "ok" for r in ordered),
               "order": list(scorer.options.order), "results": ordered}
    token_rows = [row for record in ordered for row in _token_rows(record)]
    with FirstCtrlC() as ctrl_c:  # the three files from one run, not a Ctrl-C between their renames
        write_atomic_all({out / "summary.csv": _csv([_summary_row(r) for r in ordered], SUMMARY_FIELDS),
                          out / "tokens.csv": _csv(token_rows, TOKEN_FIELDS),
                          out / "summary.json": json.dumps(summary, indent=1) + "\n"})
    if ctrl_c.pressed:
        raise KeyboardInterrupt
    if stopped:
        err_console.print(f"knockcam: stopped: {len(records)} of {len(photos)} photos done, the other "
                          f"{len(photos) - len(records)} marked '{STOPPED}' in {out / 'summary.csv'}", markup=False,
                          highlight=False, soft_wrap=True)
        return 130
    failed = len(photos) - summary["scored"]
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        Console().print(f"scored {summary['scored']} of {len(photos)} photos; summary: {out / 'summary.csv'}, "
                        f"{out / 'tokens.csv'}, {out / 'summary.json'}; evidence: {out / 'evidence'}/", soft_wrap=True)
    if failed == len(photos):
        raise KnockcamError(f"none of the {len(photos)} photos in {folder} could be scored: see {out / 'summary.csv'}")
    return 1 if failed else 0


def _remove_stale_pictures(jobs: list[tuple[Path, Path]], ordered: list[dict], console) -> None:
    """The evidence folder shows no picture for a photo whose row names none: a photo stopped, or not scored
    this time, has its picture removed, be it one a second Ctrl-C let be written just as it stopped, or an
    earlier run's in the same --out (a result the summary no longer gives), with any temporary file of a write
    cut short."""
    from knockcam.files import remove_written

    for (photo, picture), record in zip(jobs, ordered):
        if not record["evidence"]:
            try:
                remove_written(picture)
            except OSError as exc:
                console.print(f"{picture}: an evidence picture this summary does not name could not be removed "
                              f"({exc.strerror or exc}): delete it", style="yellow", markup=False, highlight=False,
                              soft_wrap=True)


# --- scoring the photos: here, or in worker processes ------------------------------------------
def _score_all(jobs: list[tuple[Path, Path]], scorer: "Scorer", workers: int, console, keep) -> bool:
    """Score each (photo, evidence path) of ``jobs`` and hand ``keep(index, record)`` its record as it is done:
    one after another in this process (``workers`` 1), else in that many worker processes, in the order they
    finish. Returns whether Ctrl-C stopped it: photos not started by then are not scored, those being scored are
    finished and kept (a second Ctrl-C stops them too). Should the workers die (one killed for memory), the
    photos left are scored here."""
    todo = list(range(len(jobs)))
    try:
        if workers > 1:
            todo = _score_in_workers(jobs, scorer.options, workers, console, keep)
        _score_here(jobs, todo, scorer, keep)
    except KeyboardInterrupt:
        return True
    return False


def _score_here(jobs: list[tuple[Path, Path]], todo: list[int], scorer: "Scorer", keep) -> None:
    """``_score_all`` one photo after another in this process. A first Ctrl-C is read between photos
    (``FirstCtrlC``): the photo being scored is finished and kept, its row in the summary with its evidence
    picture; a second stops it at once (marked stopped; a picture it let be written is removed after)."""
    with FirstCtrlC() as ctrl_c:
        for index in todo:
            if ctrl_c.pressed:
                break
            keep(index, score_photo(scorer, *jobs[index]))
    if ctrl_c.pressed:
        raise KeyboardInterrupt


def _score_in_workers(jobs: list[tuple[Path, Path]], options: "ScoreOptions", workers: int, console, keep) -> list[int]:
    """``_score_all`` in worker processes, each given a photo only when it is free (so Ctrl-C has none queued to
    wait for); returns the photos left to score here (none, unless the workers died). A first Ctrl-C is read
    between photos (``FirstCtrlC``): one landing while a photo is handed to a worker would otherwise leave it
    scored there but not in the summary."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    waiting = list(range(len(jobs)))[::-1]
    running: dict = {}

    def collect(finished) -> None:
        for future in finished:
            record = future.result()  # a dead worker's raises here: its photo stays among those running
            keep(running.pop(future), record)

    with FirstCtrlC() as ctrl_c:  # from before the workers start: a Ctrl-C while they do is read like any other
        pool = spawned_pool(workers, _start_worker, (options,))
        try:
            told = False
            while running or (waiting and not ctrl_c.pressed):
                while waiting and len(running) < workers and not ctrl_c.pressed:
                    index = waiting.pop()
                    running[pool.submit(_score_in_worker, *jobs[index])] = index
                if ctrl_c.pressed and not told:
                    console.print(f"stopping: finishing the {len(running)} photos being scored (Ctrl-C again stops "
                                  "them at once)", style="yellow", markup=False, highlight=False, soft_wrap=True)
                    told = True
                collect(wait(running, timeout=0.2, return_when=FIRST_COMPLETED)[0])
        except BrokenProcessPool:
            if ctrl_c.pressed:  # while the photos being scored were finished after a Ctrl-C: none is scored here
                raise KeyboardInterrupt from None
            left = sorted(waiting + list(running.values()))
            console.print(f"the worker processes stopped (out of memory?): the {len(left)} photos left are scored "
                          "here, one after another (--workers 1 does that from the start)", style="yellow",
                          markup=False, highlight=False, soft_wrap=True)
            return left
        finally:  # a second Ctrl-C, or the workers dead: the photos being scored are lost
            close_pool(pool, at_once=bool(running))
    if ctrl_c.pressed:  # the photos being scored were finished; those waiting were not started
        raise KeyboardInterrupt
    return []


_WORKER_SCORER: "Scorer | None" = None  # each worker process's own Scorer (its board, frame and models)


def _start_worker(options: "ScoreOptions") -> None:
    """A worker process's start: it loads what scoring needs once."""
    from knockcam.pipeline import Scorer

    global _WORKER_SCORER
    _WORKER_SCORER = Scorer(options)


def _score_in_worker(photo: Path, evidence: Path) -> dict:
    return score_photo(_WORKER_SCORER, photo, evidence)


def score_photo(scorer: "Scorer", photo: Path, evidence: Path) -> dict:
    """One photo's record for the summary: its result and evidence picture, or why there is none. Never
    raises for a photo: a bad one, or a bug, must not cost the rest of the night's photos."""
    from knockcam.report.evidence import write_evidence

    record = _record(photo)
    try:
        scored = scorer.score(photo)
        record.update(status="ok", result=scored.to_dict(), timings_ms=scored.timings_ms)
        try:  # a picture that cannot be written (a full disk) does not cost the photo its score
            record["evidence"] = str(write_evidence(scored, evidence))
        except KnockcamError as exc:
            record["error"] = f"scored, but no evidence picture: {exc}"
    except KnockcamError as exc:
        record["error"] = str(exc)
    except Exception as exc:  # recorded, with what to do
        record["error"] = f"internal error ({type(exc).__name__}: {exc}); please report it"
    return record


def _record(photo: Path, status: str = "error", error: str | None = None) -> dict:
    return {"image": str(photo), "status": status, "evidence": None, "error": error, "result": None}


def _token_rows(record: dict) -> list[dict]:
    if not record["result"]:
        return []
    name = Path(record["image"]).name
    return [{"image": name, "n": n, "side": t["side"], "space": t["space"] or "", "state": t["state"],
             "coverage": t["coverage"], "margin_mm": t["margin_mm"], "x_mm": t["xy_mm"][0], "y_mm": t["xy_mm"][1],
             "ambiguous": t["ambiguous"], "confidence": t["confidence"]}
            for n, t in enumerate(record["result"]["tokens"], 1)]


# --- the summary ------------------------------------------------------------------------------
def _evidence_names(photos: list[Path]) -> dict[Path, str]:
    """Each photo's evidence file name: its stem, or for photos sharing one (round1.jpg and round1.png) the
    stem with the extension, numbered if still taken; never two the same, even on a case-blind disk."""
    stems = Counter(p.stem.lower() for p in photos)
    names, taken = {}, set()
    for p in photos:
        name = p.stem if stems[p.stem.lower()] == 1 else f"{p.stem}-{p.suffix.lstrip('.')}"
        unique, n = name, 1
        while unique.lower() in taken:
            n += 1
            unique = f"{name}-{n}"
        taken.add(unique.lower())
        names[p] = f"{unique}.png"
    return names


def _summary_row(record: dict) -> dict:
    row = {"image": Path(record["image"]).name, "status": record["status"], "evidence": record["evidence"] or "",
           "error": record["error"] or ""}
    result = record["result"]
    if result:
        row.update(tokens=len(result["tokens"]), close_calls=sum(t["ambiguous"] for t in result["tokens"]),
                   hidden_areas=len(result["hidden"]),
                   hidden_spaces=";".join(dict.fromkeys(s for area in result["hidden"] for s in area["spaces"])),
                   calibration=result["calibration"]["method"],
                   calibration_error_mm=result["calibration"]["error_mm"])
        if result["round"]:
            row.update({side: delta for side, delta in result["round"]["delta"].items()})
            row["pot_after"] = result["round"]["pot_after"]
    return row


def _csv(rows: list[dict], fields: tuple[str, ...]) -> bytes:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if row.get(k) is None else row.get(k, "")) for k in fields})
    return buf.getvalue().encode("utf-8")
