"""What an install needs: a regular (non-editable) install ships every network models/ holds and the demo's
scene, and scoring runs on the runtime dependencies alone (torch and ultralytics come with the [train] extra
only)."""

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "fixtures" / "scenes"


def _installed(folder: str) -> set[Path]:
    """The repository's files a regular install copies to <prefix>/<folder> (pyproject.toml's data-files)."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"][folder]
    return {p for pattern in patterns for p in ROOT.glob(pattern)}


def test_every_shipped_network_is_installed_with_the_package():
    networks = set((ROOT / "models").glob("*.onnx"))
    assert networks and networks <= _installed("share/knockcam/models")


def test_the_demo_scene_is_installed_with_the_package_and_found_there(tmp_path, monkeypatch):
    """The scene the demo picks in fixtures/scenes, its empty-board frame and its ground truth are installed,
    and with no checkout beside the package (a regular install) the demo finds that copy under sys.prefix."""
    import shutil

    from knockcam.cli import demo
    from knockcam.errors import KnockcamError

    scene = demo.find_demo_scene()
    files = {scene.photo, scene.reference, scene.truth}
    assert None not in files and files == _installed("share/knockcam/demo")

    monkeypatch.setattr(demo, "repo_root", lambda: tmp_path / "site-packages")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    with pytest.raises(KnockcamError, match="demo photos not found"):
        demo.find_demo_scene()
    copy = tmp_path / "prefix" / "share" / "knockcam" / "demo"
    copy.mkdir(parents=True)
    for path in files:
        shutil.copy(path, copy / path.name)
    found = demo.find_demo_scene()
    assert (found.photo, found.reference, found.truth) == tuple(copy / p.name for p in
                                                                (scene.photo, scene.reference, scene.truth))


def test_scoring_a_photo_never_imports_the_training_stack(tmp_path):
    """A photo scored alone (automatic calibration) and with its empty-board frame, round and evidence
    included: any import of torch or ultralytics is recorded and refused, even one a caller would catch."""
    photo, reference = SCENES / "all_16_tokens.jpg", SCENES / "all_16_tokens_ref.jpg"
    code = textwrap.dedent(f"""
        import sys
        asked = []

        class RefuseTraining:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "torchvision", "ultralytics"):
                    asked.append(name)
                    raise ImportError("the runtime imported " + name)
                return None

        sys.meta_path.insert(0, RefuseTraining())
        from knockcam.cli import main
        codes = [main(["score", {str(photo)!r}, "--order", "red,yellow,green,blue", "--json",
                       "--evidence", {str(tmp_path / "alone.png")!r}]),
                 main(["score", {str(photo)!r}, "--reference", {str(reference)!r}, "--json",
                       "--evidence", {str(tmp_path / "pair.png")!r}])]
        print("exit codes", codes, "training imports", asked, file=sys.stderr)
        sys.exit(0 if codes == [0, 0] and not asked else 1)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "alone.png").is_file() and (tmp_path / "pair.png").is_file()
