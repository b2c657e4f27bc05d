"""``knockcam demo``: score a photo shipped with knockcam, print the payouts and write the evidence picture.

The photo is a committed synthetic scene (fixtures/scenes/) with its ground truth beside it, so
the demo can say how many calls it got right. A regular install carries a copy of it (pyproject.toml's
data-files), so the demo needs nothing else.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from knockcam.errors import KnockcamError

# the shipped scene the demo scores (four tokens of every side); any of these names wins, else the first photo
DEMO_NAMES = ("all_16_tokens.jpg", "demo.jpg", "demo.png")
REFERENCE_TAGS = ("_ref", "_empty")  # CASE_ref.jpg: the empty board from the same camera (fixtures/README.md)


@dataclass(frozen=True)
class DemoScene:
    """The shipped photo, its empty-board frame (if any) and its ground truth (if any)."""

    photo: Path
    reference: Path | None
    truth: Path | None


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def demo_folder() -> Path:
    """fixtures/scenes of this checkout (an editable install), else the copy a regular install put under
    <prefix>/share/knockcam/demo (a KnockcamError saying what to do when there is neither)."""
    checkout = repo_root() / "fixtures" / "scenes"
    installed = Path(sys.prefix) / "share" / "knockcam" / "demo"
    for folder in (checkout, installed):
        if folder.is_dir():
            return folder
    raise KnockcamError(f"demo photos not found in {checkout} or {installed}: install knockcam again "
                        "(pip install -e . in a clone of its repository)")


def find_demo_scene(folder: Path | None = None) -> DemoScene:
    """The demo photo in ``folder`` (default: ``demo_folder()``), its empty-board frame and ground truth."""
    folder = folder or demo_folder()
    photos = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")
                    and not _is_reference(p))
    named = [p for p in photos if p.name in DEMO_NAMES]
    if not photos:
        raise KnockcamError(f"no demo photo in {folder}")
    named.sort(key=lambda p: DEMO_NAMES.index(p.name))
    photo = (named or photos)[0]
    reference = next((c for c in (folder / f"{photo.stem}{tag}{photo.suffix}" for tag in REFERENCE_TAGS)
                      if c.is_file()), None)
    truth = photo.with_suffix(".json")
    return DemoScene(photo=photo, reference=reference, truth=truth if truth.is_file() else None)


def _is_reference(path: Path) -> bool:
    return path.stem.lower().endswith(REFERENCE_TAGS)


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="score a shipped example photo: payouts and an evidence picture",
                              description="Score a photo shipped with knockcam (a synthetic scene with known "
                                          "truth): find the board, the tokens and their spaces, pay out the "
                                          "round, and write the evidence picture.")
    p.add_argument("--out", metavar="DIR", default="knockcam-demo",
                   help="folder for the evidence picture and the JSON result (default: ./knockcam-demo)")
    p.add_argument("--pot", metavar="M", type=int, default=500, help="Free Parking pot before the round (default 500)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from knockcam.cli.score import print_scored, same_tokens_options
    from knockcam.files import write_atomic_all
    from knockcam.pipeline import ScoreOptions, Scorer
    from knockcam.report.evidence import evidence_png
    from knockcam.sides import SIDES

    console = Console()
    scene = find_demo_scene()
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise KnockcamError(f"--out {out} is a file, not a folder")
    order = tuple(SIDES)
    calibration, note = choose_calibration(scene, Scorer(ScoreOptions(reference=scene.reference)))
    scorer = Scorer(ScoreOptions(calibration=calibration, reference=scene.reference, order=order, pot=int(args.pot)))
    scored = scorer.score(scene.photo)
    console.print(f"[bold]knockcam demo[/bold]: {_shown(scene.photo)} (synthetic photo, turn order "
                  f"{', '.join(order)}, pot M{args.pot})", soft_wrap=True)
    console.print(note + (f"; empty-board frame {scene.reference.name}" if scene.reference else ""), soft_wrap=True)
    evidence = out / f"{scene.photo.stem}-evidence.png"
    write_atomic_all({evidence: evidence_png(scored), out / f"{scene.photo.stem}.json":
                      json.dumps(scored.to_dict(), indent=2) + "\n"})
    reference = _typed(scene.reference) if scene.reference else None
    print_scored(scored, console=console, again=same_tokens_options(_typed(scene.photo), reference=reference))
    check = truth_check(scored, scene)
    if check:
        console.print(check)
    console.print(f"[bold]evidence picture written to {evidence}[/bold] (JSON: {out / (scene.photo.stem + '.json')})",
                  soft_wrap=True)
    return 0


AGREE_MM = 3.0  # the automatic calibration is used when it is this close to the photo's own everywhere on the board


def choose_calibration(scene: DemoScene, scorer) -> tuple[object, str]:
    """The automatic calibration when it agrees with the one saved with the photo, else the saved one; and why.

    The shipped photo comes with its camera's calibration (as ``knockcam calibrate`` would have
    saved it on game night); the demo says plainly which one it used and how far apart they were.
    """
    from knockcam.calibrate.quality import board_errors_mm
    from knockcam.files import load_photo

    saved = _saved_calibration(scene)
    try:
        auto = scorer.calibrate(load_photo(scene.photo))  # the empty-board frame first, when the scorer has one
    except KnockcamError as exc:
        if saved is None:
            raise
        return saved, f"automatic calibration failed ({exc}); scored with the calibration saved with the photo"
    if saved is None:
        return auto, f"board found automatically (estimated error {auto.error_mm:.1f} mm)"
    off = float(board_errors_mm(auto, saved, scorer.board).max())
    if off <= AGREE_MM:
        return auto, f"board found automatically: within {off:.1f} mm of the camera's saved calibration everywhere"
    return saved, (f"the automatic board finder was off by up to {off:,.0f} mm on this photo: scored with the "
                   "calibration saved with it (see docs/calibration.md)")


def _saved_calibration(scene: DemoScene):
    """The calibration noted in the photo's truth file, as a Calibration (None without one)."""
    if scene.truth is None:
        return None
    from knockcam.calibrate.calibration import Calibration

    data = json.loads(scene.truth.read_text(encoding="utf-8")).get("calibration")
    if not data:
        return None
    return replace(Calibration.from_dict(data), method="saved", error_mm=0.0,
                   error_source="the synthetic camera's own calibration")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(repo_root()))
    except ValueError:
        return str(path)


def _typed(path: Path) -> str:
    """``path`` as typed in a command from the current folder: relative below it, else in full."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def truth_check(scored, scene: DemoScene) -> str | None:
    """How the calls compare with the photo's ground truth (tokens matched by side and nearest base, within 15 mm)."""
    if scene.truth is None:
        return None
    import numpy as np

    truth = json.loads(scene.truth.read_text(encoding="utf-8"))
    wanted = list(truth.get("tokens", []))
    used: set[int] = set()
    right = wrong = close = 0
    for t in wanted:
        best, best_d = None, 15.0
        for i, p in enumerate(scored.positions):
            if i in used or p.side != t["side"]:
                continue
            dist = float(np.hypot(p.token.xy_mm[0] - t["xy_mm"][0], p.token.xy_mm[1] - t["xy_mm"][1]))
            if dist < best_d:
                best, best_d = i, dist
        if best is None:
            continue
        used.add(best)
        p = scored.positions[best]
        if p.ambiguous:
            close += 1
        elif (p.space if p.state == "on_space" else None) == t.get("space"):
            right += 1
        else:
            wrong += 1
    missed = len(wanted) - len(used)
    extra = len(scored.positions) - len(used)
    parts = [f"{right} on the right space", f"{wrong} on a wrong one", f"{_count(close, 'close call')} left to a human",
             f"{missed} not found"] + ([f"{_count(extra, 'detection')} matching no token"] if extra else [])
    return f"ground truth of this synthetic photo ({len(wanted)} tokens): " + ", ".join(parts)


def _count(n: int, thing: str) -> str:
    """``n`` things, in words: '1 close call', '2 close calls'."""
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"
