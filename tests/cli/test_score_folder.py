"""``knockcam score DIR``: a night's folder of photos scored, in worker processes or one after another, the
summary and evidence pictures; Ctrl-C keeps what is done."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_run import knockcam
from knockcam.cli import main
from processes import HAS_PROC, children_of, press_ctrl_c

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "scenes"
POSIX = pytest.mark.skipif(os.name != "posix", reason="signals and /proc as on Linux")


def test_folder_scores_every_photo_and_summarises(tmp_path, scene):
    photos = tmp_path / "night"
    photos.mkdir()
    shutil.copy(scene.photo, photos / "a.jpg")
    shutil.copy(scene.photo, photos / "b.jpg")
    (photos / "c.jpg").write_bytes(scene.photo.read_bytes()[:5000])
    (photos / "notes.txt").write_text("not a photo, not looked at\n")
    (photos / "d.HEIC").write_bytes(b"\x00\x00\x00\x18ftypheic" + bytes(64))  # an iPhone's photo: a row, refused
    (photos / "round3.MOV").write_bytes(b"\x00\x00\x00\x14ftypqt  " + bytes(64))  # a video: named, not scored
    out = tmp_path / "scores"
    result = knockcam("score", photos, "--calibration", scene.calibration, "--reference", scene.empty,
                      "--order", "red,yellow,green,blue", "--out", out)
    assert result.returncode == 1, result.stderr  # two photos could not be scored
    assert "Traceback" not in result.stderr and "c.jpg" in result.stderr
    assert "1 video (round3.MOV) not scored here: 'knockcam live --video FILE'" in result.stderr
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [(r["image"], r["status"]) for r in rows] == [("a.jpg", "ok"), ("b.jpg", "ok"), ("c.jpg", "error"),
                                                         ("d.HEIC", "error")]
    assert "damaged" in rows[2]["error"] and "export it as JPEG" in rows[3]["error"] and rows[0]["red"] != ""
    assert rows[0]["tokens"] == rows[1]["tokens"] and int(rows[0]["tokens"]) > 0
    tokens = list(csv.DictReader((out / "tokens.csv").open()))
    assert len(tokens) == 2 * int(rows[0]["tokens"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["photos"] == 4 and summary["scored"] == 2
    assert summary["results"][0]["result"]["tokens"] == summary["results"][1]["result"]["tokens"]
    assert sorted(p.name for p in (out / "evidence").iterdir()) == ["a.png", "b.png"]
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


def test_photos_sharing_a_name_get_evidence_pictures_of_their_own():
    from knockcam.cli.score_folder import _evidence_names

    photos = [Path(n) for n in ("a.jpg", "round1.jpg", "round1.png", "round2.JPG", "round2.jpg", "round2-jpg.jpg")]
    names = _evidence_names(photos)
    assert names[Path("a.jpg")] == "a.png" and names[Path("round1.png")] == "round1-png.png"
    assert len({n.lower() for n in names.values()}) == len(photos)  # none overwrites another, on any disk


def test_folder_of_no_photos(tmp_path):
    (tmp_path / "readme.txt").write_text("empty\n")
    result = knockcam("score", tmp_path)
    assert result.returncode == 2 and "no photos" in result.stderr and "Traceback" not in result.stderr
    (tmp_path / "game.mp4").write_bytes(b"\x00\x00\x00\x20ftypisom" + bytes(64))
    result = knockcam("score", tmp_path)
    assert result.returncode == 2 and "no photos" in result.stderr and "1 video (game.mp4)" in result.stderr


def test_folder_summary_says_which_photos_show_the_board_covered(tmp_path):
    """A referee scanning the night's summary sees the photo with a hand over the board (the empty-board frame,
    kept in the same folder, is the reference and not one of the photos scored)."""
    photos = _night(tmp_path / "night", {"hand.jpg": "hand", "hand_ref.jpg": "hand_ref"})
    out = tmp_path / "scores"
    result = knockcam("score", photos, "--reference", photos / "hand_ref.jpg", "--out", out)
    assert result.returncode == 0, result.stderr
    (row,) = list(csv.DictReader((out / "summary.csv").open()))
    assert row["status"] == "ok" and row["hidden_areas"] == "1"
    assert row["hidden_spaces"] == ""  # the hand reaches in at the edge of the GO! end, over no space


def _night(folder: Path, photos: dict[str, str]) -> Path:
    """A folder of fixture photos: {name in the folder: fixture case}."""
    folder.mkdir()
    for name, case in photos.items():
        shutil.copy(FIXTURES / f"{case}.jpg", folder / name)
    return folder


def _results(out: Path) -> list[dict]:
    """summary.json's records without what differs from run to run (the times) or by folder (--out)."""
    records = json.loads((out / "summary.json").read_text())["results"]
    for r in records:
        r.pop("timings_ms", None)
        r["evidence"] = r["evidence"] and Path(r["evidence"]).name
    return records


def test_workers_score_the_folder_as_one_process_does(tmp_path):
    """Photos scored side by side in worker processes (found automatically, each its own board) give the summary,
    tokens and evidence pictures, byte for byte, that scoring them one after another here gives, in the folder's
    order, a damaged photo's row included."""
    night = _night(tmp_path / "night", {"a.jpg": "overhead", "b.jpg": "all_16_tokens", "d.jpg": "off_board_and_fallen"})
    (night / "c.jpg").write_bytes((FIXTURES / "hand.jpg").read_bytes()[:4000])
    one, two = tmp_path / "one", tmp_path / "two"
    for out, workers in ((one, 1), (two, 2)):
        result = knockcam("score", night, "--order", "red,blue,green,yellow", "--out", out, "--workers", workers)
        assert result.returncode == 1, result.stderr  # the damaged photo
        assert "Traceback" not in result.stderr and "c.jpg" in result.stderr
    records = _results(two)
    assert [(Path(r["image"]).name, r["status"]) for r in records] == [("a.jpg", "ok"), ("b.jpg", "ok"),
                                                                        ("c.jpg", "error"), ("d.jpg", "ok")]
    assert records == _results(one)
    assert (two / "tokens.csv").read_bytes() == (one / "tokens.csv").read_bytes()
    assert (two / "summary.csv").read_text().replace(str(two), "") == (one / "summary.csv").read_text().replace(
        str(one), "")
    pictures = sorted(p.name for p in (two / "evidence").iterdir())
    assert pictures == ["a.png", "b.png", "d.png"]
    assert all((two / "evidence" / n).read_bytes() == (one / "evidence" / n).read_bytes() for n in pictures)


def test_workers_is_for_a_folder_and_a_number(tmp_path, scene):
    for args, words in (((scene.photo, "--workers", "2"), "--workers is for a folder of photos"),
                        ((tmp_path, "--workers", "0"), "give a number of processes, 1 or more, not '0'")):
        result = knockcam("score", *args)
        assert result.returncode == 2 and words in result.stderr and "Traceback" not in result.stderr


def _one_after_another_with_ctrl_c(tmp_path, scene, monkeypatch, presses: int) -> tuple[int, list, Path]:
    """Three photos scored one after another, Ctrl-C pressed ``presses`` times while the second is scored:
    (exit code, summary rows, evidence folder)."""
    from knockcam.pipeline import Scorer

    night = tmp_path / "night"
    night.mkdir()
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        shutil.copy(scene.photo, night / name)
    score, calls = Scorer.score, []

    def ctrl_c_at_the_second(self, path, *rest):
        calls.append(path)
        if len(calls) == 2:
            for _ in range(presses):
                press_ctrl_c()  # taken while the photo is scored
        return score(self, path, *rest)

    monkeypatch.setattr(Scorer, "score", ctrl_c_at_the_second)
    out = tmp_path / "scores"
    code = main(["score", str(night), "--calibration", str(scene.calibration), "--out", str(out), "--workers", "1"])
    return code, list(csv.DictReader((out / "summary.csv").open())), out / "evidence"


@POSIX
def test_ctrl_c_one_after_another_finishes_the_photo_being_scored(tmp_path, scene, monkeypatch, capfd):
    """Scoring one after another, Ctrl-C during the second photo: it is finished and in the summary with its
    evidence, the third is marked stopped (none is lost without a word), and the exit code says it was stopped.
    Before, the second was dropped at once, or (Ctrl-C just after its picture was written) left a picture with
    no row."""
    code, rows, evidence = _one_after_another_with_ctrl_c(tmp_path, scene, monkeypatch, presses=1)
    err = capfd.readouterr().err
    assert code == 130, err
    assert "stopped: 2 of 3 photos done, the other 1 marked 'stopped'" in err and "Traceback" not in err
    assert [(r["image"], r["status"]) for r in rows] == [("a.jpg", "ok"), ("b.jpg", "ok"), ("c.jpg", "stopped")]
    assert "before this photo was done; score it again" in rows[2]["error"] and int(rows[1]["tokens"]) > 0
    assert sorted(p.name for p in evidence.iterdir()) == ["a.png", "b.png"]


@POSIX
def test_a_second_ctrl_c_one_after_another_stops_at_once(tmp_path, scene, monkeypatch, capfd):
    """A second Ctrl-C does not wait for the photo being scored: it is marked stopped with the rest."""
    code, rows, evidence = _one_after_another_with_ctrl_c(tmp_path, scene, monkeypatch, presses=2)
    err = capfd.readouterr().err
    assert code == 130, err
    assert "stopped: 1 of 3 photos done, the other 2 marked 'stopped'" in err and "Traceback" not in err
    assert [(r["image"], r["status"]) for r in rows] == [("a.jpg", "ok"), ("b.jpg", "stopped"), ("c.jpg", "stopped")]
    assert [p.name for p in evidence.iterdir()] == ["a.png"]


@POSIX
def test_a_second_ctrl_c_as_a_picture_is_written_leaves_no_picture_of_a_stopped_photo(tmp_path, scene, monkeypatch,
                                                                                       capfd):
    """Two Ctrl-C just after the second photo's picture is put in place (and a temporary file of a write cut short
    beside it): the photo is marked stopped, and neither its picture nor the temporary file is left to be taken
    for its result. Before, the picture stayed beside a row saying the photo was not scored."""
    from knockcam.report import evidence as evidence_module

    night = tmp_path / "night"
    night.mkdir()
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        shutil.copy(scene.photo, night / name)
    write, calls = evidence_module.write_evidence, []

    def ctrl_c_twice_after_the_second(scored, path):
        calls.append(path)
        written = write(scored, path)
        if len(calls) == 2:
            (written.parent / f".{written.name}.99999.tmp").write_bytes(b"cut short")
            press_ctrl_c()
            press_ctrl_c()
        return written

    monkeypatch.setattr(evidence_module, "write_evidence", ctrl_c_twice_after_the_second)
    out = tmp_path / "scores"
    code = main(["score", str(night), "--calibration", str(scene.calibration), "--out", str(out), "--workers", "1"])
    err = capfd.readouterr().err
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert code == 130 and "Traceback" not in err, err
    assert [(r["image"], r["status"]) for r in rows] == [("a.jpg", "ok"), ("b.jpg", "stopped"), ("c.jpg", "stopped")]
    assert sorted(p.name for p in (out / "evidence").iterdir()) == ["a.png"]


@POSIX
def test_a_ctrl_c_as_the_summary_is_written_leaves_it_whole(tmp_path, scene, monkeypatch, capfd):
    """Ctrl-C just as the summary's three files are to be written: all three are written (from this run), then
    the command stops as interrupted. Before, it stopped there with none of them written."""
    from knockcam import files

    night = tmp_path / "night"
    night.mkdir()
    shutil.copy(scene.photo, night / "a.jpg")
    real = files.write_atomic_all  # the folder scorer takes it from knockcam.files when it writes

    def ctrl_c_then_write(written):
        press_ctrl_c()
        return real(written)

    monkeypatch.setattr(files, "write_atomic_all", ctrl_c_then_write)
    out = tmp_path / "scores"
    code = main(["score", str(night), "--calibration", str(scene.calibration), "--out", str(out), "--workers", "1"])
    err = capfd.readouterr().err
    assert code == 130 and "knockcam: interrupted" in err and "Traceback" not in err, err
    assert sorted(p.name for p in out.iterdir()) == ["evidence", "summary.csv", "summary.json", "tokens.csv"]
    assert [r["status"] for r in csv.DictReader((out / "summary.csv").open())] == ["ok"]


def test_a_photo_not_scored_again_keeps_no_picture_of_an_earlier_run(tmp_path, scene):
    """Scoring the folder again into the same --out, a photo that now fails (damaged since) has no picture left
    from the first run: the evidence folder shows only what this summary says."""
    night = tmp_path / "night"
    night.mkdir()
    for name in ("a.jpg", "b.jpg"):
        shutil.copy(scene.photo, night / name)
    out = tmp_path / "scores"
    args = ("score", night, "--calibration", scene.calibration, "--out", out, "--workers", "1")
    first = knockcam(*args)
    assert first.returncode == 0 and sorted(p.name for p in (out / "evidence").iterdir()) == ["a.png", "b.png"]
    (night / "b.jpg").write_bytes(scene.photo.read_bytes()[:5000])
    (out / "evidence" / "notes.txt").write_text("the referee's own file: not this summary's, left alone\n")
    again = knockcam(*args)
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert again.returncode == 1 and [(r["image"], r["status"]) for r in rows] == [("a.jpg", "ok"), ("b.jpg", "error")]
    assert sorted(p.name for p in (out / "evidence").iterdir()) == ["a.png", "notes.txt"]


def _start(args: list, cwd: Path) -> subprocess.Popen:
    """``knockcam ARGS`` in a process group of its own, Ctrl-C working in it (a test runner may ignore it)."""
    return subprocess.Popen([sys.executable, "-m", "knockcam", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _first_picture(folder: Path, process: subprocess.Popen, timeout: float = 120.0) -> None:
    """Wait until the first evidence picture is written (a photo scored by a worker)."""
    end = time.monotonic() + timeout
    while not (folder.is_dir() and any(folder.iterdir())):
        assert process.poll() is None and time.monotonic() < end, "no photo scored"
        time.sleep(0.02)


@POSIX
@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_with_workers_keeps_a_picture_for_each_photo_done(tmp_path, presses):
    """Ctrl-C (to the whole process group, as a terminal sends it) while workers score: photos not started are
    not started, and nothing prints a traceback. Once, the photos being scored are finished and in the summary;
    twice, they are stopped at once, and no picture a worker wrote as it was stopped is left beside their rows."""
    night = _night(tmp_path / "night", {f"p{i:02d}.jpg": "all_16_tokens" for i in range(10)})
    out = tmp_path / "scores"
    process = _start(["score", night, "--out", out, "--workers", 2], tmp_path)
    _first_picture(out / "evidence", process)
    for _ in range(presses):
        os.killpg(process.pid, signal.SIGINT)
        time.sleep(0.3)
    _, err = process.communicate(timeout=120)
    # a second Ctrl-C landing once the folder is done (its summary written) ends the process by the signal itself
    assert process.returncode in ((130,) if presses == 1 else (130, -signal.SIGINT)), err
    assert "stopping: finishing the" in err and "Traceback" not in err
    rows = list(csv.DictReader((out / "summary.csv").open()))
    done = [r["image"] for r in rows if r["status"] == "ok"]
    assert len(done) < 10 and {r["status"] for r in rows} <= {"ok", "stopped"} and len(done) >= 2 - presses
    assert sorted(p.name for p in (out / "evidence").iterdir()) == [n.replace(".jpg", ".png") for n in done]
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]


@POSIX
def test_ctrl_c_just_as_a_photo_is_handed_to_a_worker_loses_no_photo(tmp_path, monkeypatch, capfd):
    """A Ctrl-C landing between a photo's hand-over to a worker and its bookkeeping: that photo is still
    finished and in the summary with its evidence, and no other is started (before, it was scored by the
    worker but marked 'stopped')."""
    from knockcam.cli import score_folder

    night = _night(tmp_path / "night", {f"p{i:02d}.jpg": "all_16_tokens" for i in range(4)})
    out = tmp_path / "scores"
    real_pool = score_folder.spawned_pool

    def interrupted_pool(*args):
        pool = real_pool(*args)
        submit = pool.submit

        def submit_then_ctrl_c(*call):
            future = submit(*call)
            press_ctrl_c()  # taken before the caller has noted the photo as running
            return future

        pool.submit = submit_then_ctrl_c
        return pool

    monkeypatch.setattr(score_folder, "spawned_pool", interrupted_pool)
    code = main(["score", str(night), "--out", str(out), "--workers", "2"])
    err = capfd.readouterr().err
    assert code == 130, err
    assert "stopping: finishing the 1 photos being scored" in err and "Traceback" not in err
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [r["status"] for r in rows] == ["ok", "stopped", "stopped", "stopped"]
    assert [p.name for p in (out / "evidence").iterdir()] == ["p00.png"]


@pytest.mark.skipif(not HAS_PROC, reason="finds the workers in /proc")
def test_a_worker_killed_mid_folder_leaves_no_photo_unscored(tmp_path):
    """A worker killed (as the system kills one out of memory): the photos left are scored in the main process,
    said in one line, and every photo is in the summary, scored."""
    night = _night(tmp_path / "night", {f"p{i:02d}.jpg": "all_16_tokens" for i in range(6)})
    out = tmp_path / "scores"
    process = _start(["score", night, "--out", out, "--workers", 2], tmp_path)
    _first_picture(out / "evidence", process)
    os.kill(children_of(process.pid, b"spawn_main")[0], signal.SIGKILL)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert "the worker processes stopped (out of memory?)" in err and "Traceback" not in err
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [r["status"] for r in rows] == ["ok"] * 6
    assert sorted(p.name for p in (out / "evidence").glob("*.png")) == [f"p{i:02d}.png" for i in range(6)]


def test_workers_by_default_only_where_each_photo_is_searched_for_its_board():
    """One per CPU when each photo's board is searched for (single-threaded, seconds a photo); one process when
    the calibration is given or found once in the empty-board frame (detection already uses both cores)."""
    from argparse import Namespace

    from knockcam.cli.score_folder import default_workers
    from knockcam.workers import available_cpus

    alone = dict(calibration=None, corners=None, reference=None)
    assert default_workers(Namespace(**alone)) == available_cpus() >= 1
    for given in ({"calibration": "c.yaml"}, {"corners": "1,2 3,4 5,6 7,8"}, {"reference": "empty.jpg"}):
        assert default_workers(Namespace(**{**alone, **given})) == 1
