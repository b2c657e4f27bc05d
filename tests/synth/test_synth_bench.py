"""The renderer benchmark writes its results file with one row per mode, rates from what it wrote."""

import json

from knockcam.cli import main


def test_bench_writes_a_row_per_mode(tmp_path, capsys):
    out = tmp_path / "synth.md"
    assert main(["synth", "--bench", str(out), "--count", "2", "--seed", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in rows] == ["stills", "yolo", "video"]
    assert rows[0]["images"] == rows[1]["images"] == 2
    assert rows[2]["images"] > 30  # two videos of 30 fps frames
    assert all(r["images_per_second"] > 0 for r in rows)
    text = out.read_text()
    assert "| stills |" in text and "| video |" in text and "knockcam synth" in text


def test_synth_without_out_dir_is_a_one_line_error(capsys):
    assert main(["synth", "--count", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "OUT_DIR" in err and len(err.splitlines()) == 1
