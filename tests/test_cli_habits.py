"""The command line and the API as users of glTF-Transform, meshio, assimp and ImageMagick
expect them (issue 15): short per-verb help, --version, several inputs with -o, '-' for
stdin/stdout, what was written, sectioned info, JSON errors, textures as files, file objects in
the API, the folder browser, completion scripts and docs/cli.md made from the parser."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.cli import build_parser, main
from gamemesh.cli.completion import _subparsers
from gamemesh.sample import sample_scene

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, stdin: bytes | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "gamemesh", *args], capture_output=True,
                          input=stdin, cwd=cwd, timeout=180, env=env)


@pytest.fixture
def sample_glb(tmp_path: Path) -> Path:
    path = tmp_path / "sample.glb"
    gamemesh.save(sample_scene(), path)
    return path


@pytest.fixture
def papa_unit(tmp_path: Path) -> Path:
    """A Papa unit written by gamemesh: col.papa, col_diffuse.papa (DXT5, 4 mips), clips."""
    unit = tmp_path / "unit"
    gamemesh.save(sample_scene(), unit / "col.papa")
    return unit / "col.papa"


# -- 1. help -------------------------------------------------------------------------------

def _verbs() -> list[str]:
    return list(_subparsers(build_parser()))


@pytest.mark.parametrize("verb", _verbs())
def test_every_verb_help_fits_one_screen(verb: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as e:
        main([verb, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 60, out
    # Each verb's own options only: no format's flags (they are under `formats NAME`).
    assert "--gte-scaling" not in out and "--pet-version" not in out and "[papa]" not in out
    if verb not in ("completion", "demo", "formats", "scan", "batch"):
        assert out.count("gamemesh " + verb) >= 2, "two or three examples"


def test_format_options_are_listed_by_formats_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formats", "pba"]) == 0
    out = capsys.readouterr().out
    assert "--state STATE" in out and "--drop-shadows" in out and "[state]" in out
    assert "--pet-version" not in out
    assert main(["formats", "papa", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    flags = {o["flag"]: o for o in row["options"]}
    assert flags["--anim"]["repeatable"] and not flags["--team-color"]["help"].startswith("papa")


def test_convert_help_points_at_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    assert "format options: see `gamemesh formats NAME`" in capsys.readouterr().out


def test_option_of_an_uninvolved_format_is_a_usage_error(sample_glb: Path,
                                                         tmp_path: Path) -> None:
    r = run_cli("convert", str(sample_glb), str(tmp_path / "b.glb"), "--state", "BASE")
    assert r.returncode == 2
    assert b"--state is an option of pba" in r.stderr and b"gltf" in r.stderr
    assert not (tmp_path / "b.glb").exists()
    # The same flag is fine where a format involved takes it (pet is the target here).
    r = run_cli("convert", str(sample_glb), str(tmp_path / "b.pet"), "--pet-version", "1.1")
    assert r.returncode == 0, r.stderr
    assert gamemesh.read_native(tmp_path / "b.pet").version == (1, 1)
    r = run_cli("info", str(sample_glb), "--gte-scaling", "2")
    assert r.returncode == 2 and b"--gte-scaling is an option of splashpack" in r.stderr


# -- 2. --version ---------------------------------------------------------------------------

def test_version_is_the_programs_and_pet_has_its_own() -> None:
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.decode().strip() == f"gamemesh {gamemesh.__version__}"
    pet = gamemesh.formats()
    flags = {o.flag for s in pet for o in s.options}
    assert "--version" not in flags and "--pet-version" in flags


def test_pet_version_keyword_in_the_api(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "old.pet", pet_version="1.0")
    assert gamemesh.read_native(tmp_path / "old.pet").version == (1, 0)


# -- 3. several inputs ----------------------------------------------------------------------

def test_convert_several_inputs_to_a_folder_and_go_on_after_a_failure(
        sample_glb: Path, tmp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    gamemesh.save(sample_scene(), src / "a.pmf")
    gamemesh.save(sample_scene(), src / "b.pet")
    (src / "c.pmf").write_bytes(b"not a model at all")
    out = tmp_path / "out"
    # The glob is expanded by gamemesh too (quoted patterns, shells that do not).
    r = run_cli("convert", str(src / "*.pmf"), str(src / "*.pet"), str(sample_glb), "-o",
                str(out), "--to", "glb")
    assert r.returncode == 1  # c.pmf failed ...
    assert sorted(p.name for p in out.iterdir()) == ["a.glb", "b.glb", "sample.glb"]  # ... rest
    printed = r.stdout.decode().splitlines()
    assert sorted(Path(p).name for p in printed) == ["a.glb", "b.glb", "sample.glb"]
    errors = [ln for ln in r.stderr.decode().splitlines() if "error" in ln]
    assert len(errors) == 1 and "c.pmf" in errors[0]
    for name, source in (("a", src / "a.pmf"), ("b", src / "b.pet"), ("sample", sample_glb)):
        want = gamemesh.load(source).summary()["vertices"]
        assert gamemesh.load(out / f"{name}.glb").summary()["vertices"] == want > 0


def test_convert_clashing_output_names_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    gamemesh.save(sample_scene(), tmp_path / "a.pmf")
    gamemesh.save(sample_scene(), tmp_path / "x" / "a.pmf")
    r = run_cli("convert", str(tmp_path / "a.pmf"), str(tmp_path / "x" / "a.pmf"), "-o",
                str(tmp_path / "o"))
    assert r.returncode == 2 and b"would both write" in r.stderr
    assert not (tmp_path / "o").exists()


def test_info_and_thumbnail_take_several_inputs(sample_glb: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.pmf"
    gamemesh.save(sample_scene(), other)
    r = run_cli("info", str(sample_glb), str(other), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [row["format"] for row in rows] == ["gltf", "pmf"]
    thumbs = tmp_path / "thumbs"
    r = run_cli("thumbnail", str(sample_glb), str(other), str(tmp_path / "nope.glb"),
                "-o", str(thumbs), "--size", "32")
    assert r.returncode == 1 and b"nope.glb" in r.stderr
    assert sorted(p.name for p in thumbs.iterdir()) == ["other.png", "sample.png"]
    with PILImage.open(thumbs / "sample.png") as im:
        assert im.size == (32, 32)


# -- 4. '-' ---------------------------------------------------------------------------------

def test_dash_is_stdin_and_stdout(sample_glb: Path, tmp_path: Path) -> None:
    r = run_cli("convert", "-", "-", "--from", "glb", "--to", "pmf",
                stdin=sample_glb.read_bytes())
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "-").exists() and not Path("-").exists()
    scene = gamemesh.load(r.stdout, "pmf")
    assert scene.summary()["triangles"] == 36
    r = run_cli("convert", str(sample_glb), "-", "--to", "glb")
    assert r.returncode == 0 and r.stdout[:4] == b"glTF"
    assert gamemesh.load(r.stdout, "gltf").summary()["bones"] == 3
    r = run_cli("convert", str(sample_glb), "-")
    assert r.returncode == 2 and b"needs --to" in r.stderr
    r = run_cli("info", "-", "--from", "glb", "--json", stdin=sample_glb.read_bytes())
    assert json.loads(r.stdout)["vertices"] == 20


# -- 5. saying what was done ------------------------------------------------------------------

def test_convert_prints_files_written_quiet_and_verbose(papa_unit: Path, tmp_path: Path) -> None:
    dst = tmp_path / "o" / "col.papa"
    r = run_cli("convert", str(papa_unit.with_name("col_diffuse.papa")), str(tmp_path / "d.glb"))
    assert r.stdout.decode().splitlines() == [str(tmp_path / "d.glb")]
    r = run_cli("convert", str(tmp_path / "d.glb"), str(dst))
    assert r.returncode == 0, r.stderr
    written = r.stdout.decode().splitlines()
    assert sorted(Path(w).name for w in written) == ["col.papa", "col_diffuse.papa"]
    assert all(Path(w).is_file() for w in written)
    r = run_cli("convert", str(papa_unit), str(tmp_path / "q.glb"), "-q")
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b""
    quiet = run_cli("convert", str(papa_unit), str(tmp_path / "v.glb"))
    loud = run_cli("convert", str(papa_unit), str(tmp_path / "v.glb"), "-v")
    assert b"info:" not in quiet.stderr and b"info:" in loud.stderr


def test_info_text_is_sectioned(papa_unit: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(papa_unit)]) == 0
    out = capsys.readouterr().out
    file_part, rest = out.split("scene (as converted, siblings included):")
    scene_part, siblings = rest.split("siblings attached (read with it):")
    assert "file (papa's own records):" in file_part
    assert re.search(r"^  textures: +0$", file_part, re.M)
    assert re.search(r"^  textures: +1$", scene_part, re.M)
    assert re.search(r"^    bend +\d+ +\d\.\d{3} s +\d+$", scene_part, re.M)
    assert "col_diffuse.papa" in siblings and "col_anim_twist.papa" in siblings


def test_json_errors_are_json_on_stdout(tmp_path: Path) -> None:
    bad = tmp_path / "bad.glb"
    bad.write_bytes(b"glTF\x01\0\0\0\x14\0\0\0" + b"\0" * 8)
    r = run_cli("info", str(bad), "--json")
    assert r.returncode == 1
    err = json.loads(r.stdout)["error"]
    assert err["file"] == str(bad) and err["format"] == "gltf"
    assert (err["expected"], err["actual"], err["offset"]) == (2, 1, 4)
    r = run_cli("info", str(tmp_path / "missing.glb"), "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["type"] == "FileNotFoundError"


# -- 6. textures ----------------------------------------------------------------------------

def _dds_header(data: bytes) -> dict[str, Any]:
    assert data[:4] == b"DDS "
    size, _flags, h, w, linear, _depth, mips = struct.unpack_from("<7I", data, 4)
    fourcc = data[84:88]
    return {"size": size, "w": w, "h": h, "linear": linear, "mips": mips, "fourcc": fourcc}


def test_textures_as_dds_keep_the_dxt_blocks_and_mips(papa_unit: Path, tmp_path: Path) -> None:
    out = tmp_path / "tex"
    r = run_cli("textures", str(papa_unit), str(out), "--format", "dds")
    assert r.returncode == 0, r.stderr
    assert [Path(p).name for p in r.stdout.decode().splitlines()] == ["col_diffuse.dds"]
    tex = gamemesh.read_native(papa_unit.with_name("col_diffuse.papa")).textures[0]
    assert tex.format == 6 and tex.mips == 4  # DXT5, 16x16 and its mips
    data = (out / "col_diffuse.dds").read_bytes()
    head = _dds_header(data)
    assert head == {"size": 124, "w": 16, "h": 16, "linear": 256, "mips": 4, "fourcc": b"DXT5"}
    assert data[128:] == tex.data  # every level, bit for bit: nothing re-encoded
    with PILImage.open(out / "col_diffuse.dds") as im:
        dds_px = np.asarray(im.convert("RGBA"))
    scene_px = gamemesh.load(papa_unit.with_name("col_diffuse.papa")).images[0].pixels
    assert np.array_equal(dds_px, scene_px)


def test_textures_as_png_from_scene_images(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "m.pmf")
    glb = tmp_path / "m.glb"
    gamemesh.save(sample_scene(), glb)
    r = run_cli("textures", str(glb), str(tmp_path / "t"))
    assert r.returncode == 0, r.stderr
    pngs = sorted((tmp_path / "t").iterdir())
    assert len(pngs) == 1 and pngs[0].suffix == ".png"
    expected = gamemesh.load(glb).images[0]
    with PILImage.open(pngs[0]) as im:
        got = np.asarray(im.convert("RGBA"))
    want = expected.pixels if expected.pixels is not None else np.asarray(
        PILImage.open(io.BytesIO(expected.data or b"")).convert("RGBA"))
    assert np.array_equal(got, want)
    r = run_cli("textures", str(tmp_path / "m.pmf"), str(tmp_path / "none"))
    assert r.returncode == 1 and b"no texture found" in r.stderr


def test_convert_model_to_png_names_the_textures_verb(papa_unit: Path, tmp_path: Path) -> None:
    r = run_cli("convert", str(papa_unit), str(tmp_path / "x.png"))
    assert r.returncode == 1 and b"gamemesh textures" in r.stderr
    assert not (tmp_path / "x.png").exists()


# -- 7. API file objects --------------------------------------------------------------------

def test_api_accepts_file_objects_and_bytes(sample_glb: Path) -> None:
    buf = io.BytesIO()
    notes = gamemesh.save(sample_scene(), buf, format="glb")
    assert notes == [] and buf.getvalue()[:4] == b"glTF"
    assert gamemesh.load(io.BytesIO(buf.getvalue())).summary()["vertices"] == 20
    assert gamemesh.load(buf.getvalue(), "gltf").summary()["triangles"] == 36
    with sample_glb.open("rb") as f:
        doc = gamemesh.read_native(f, format="gltf")
    assert doc.json["asset"]["version"] == "2.0"
    out = io.BytesIO()
    report = gamemesh.convert(sample_glb.open("rb"), out, to_format="pmf")
    assert report.target_format == "pmf" and report.destination == "-"
    assert gamemesh.load(out.getvalue(), "pmf").summary()["triangles"] == 36
    with pytest.raises(ValueError, match="needs the format"):
        gamemesh.save(sample_scene(), io.BytesIO())
    with pytest.raises(ValueError, match="a stream holds one"):
        gamemesh.save(sample_scene(), io.BytesIO(), format="papa")


def test_py_typed_and_public_surface() -> None:
    assert (ROOT / "src" / "gamemesh" / "py.typed").is_file()
    assert gamemesh.save.__doc__ and "file object" in gamemesh.save.__doc__


# -- 8. batch and the folder browser --------------------------------------------------------

def test_eta_counts_bytes_not_files() -> None:
    from gamemesh.batch.progress import Progress

    p = Progress(10, 1000, stream=io.StringIO(), quiet=True)
    p.advance(9, 100)  # nine small files done, one big one left
    _, _, eta = p.rates(now=p.start + 10.0)
    assert eta == pytest.approx(90.0)  # 900 bytes left at 10 B/s; by files it would be 1.1 s
    assert p.fraction() == pytest.approx(0.1)


def test_batch_lock_is_removed_after_a_clean_run(tmp_path: Path) -> None:
    from gamemesh.batch.run import _LOCK_NAME

    src = tmp_path / "src"
    src.mkdir()
    gamemesh.save(sample_scene(), src / "a.pmf")
    r = run_cli("batch", str(src), str(tmp_path / "dst"), "-j", "1", "-q")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "dst" / "a.glb").is_file()
    assert not (tmp_path / "dst" / _LOCK_NAME).exists()


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_view_dir_is_a_folder_browser(papa_unit: Path, tmp_path: Path) -> None:
    from gamemesh.viewer.browser import FolderServer

    root = papa_unit.parent
    (root / "sub").mkdir()
    gamemesh.save(sample_scene(), root / "sub" / "m.pmf")
    (root / "notes.txt").write_text("not a model")
    with FolderServer(root) as srv:
        status, page = _get(srv.url)
        assert status == 200
        # The unit once (its textures and clips are its parts), the PMF, nothing else.
        models = json.loads(_get(srv.url + "api/models.json")[1])
        assert [m["path"] for m in models] == ["col.papa", "sub/m.pmf"]
        assert b"/static/browser.js" in page  # the grid links m/N/ (tests/test_viewer_folder.py)
        status, viewer_page = _get(srv.url + "m/1/")
        assert status == 200 and b"/static/viewer.js" in viewer_page
        status, glb = _get(srv.url + "m/1/model.glb")
        assert status == 200 and glb[:4] == b"glTF"
        assert gamemesh.load(glb, "gltf").summary()["triangles"] == 36
        info = json.loads(_get(srv.url + "m/0/api/info.json")[1])
        assert info["format"] == "papa" and info["textures"] == 1
        assert _get(srv.url + "static/viewer.js")[0] == 200
        for bad in ("m/2/model.glb", "m/0/../../etc/passwd", "m/-1/", "m/0/static/viewer.js"):
            assert _get(srv.url + bad)[0] == 404, bad


# -- 9. completion and docs -----------------------------------------------------------------

def test_completion_scripts_come_from_the_parser() -> None:
    r = run_cli("completion", "fish")
    assert r.returncode == 0
    fish = r.stdout.decode()
    assert "-a convert" in fish and "-a textures" in fish
    assert "__fish_seen_subcommand_from convert' -l pet-version -r -f -a '1.0 1.1 1.2 1.3'" in fish
    for shell in ("bash", "zsh"):
        r = run_cli("completion", shell)
        assert r.returncode == 0 and b"--pet-version" in r.stdout and b"textures" in r.stdout
    if shutil.which("bash"):
        script = r"""source <(python -m gamemesh completion bash)
COMP_WORDS=(gamemesh conv); COMP_CWORD=1; _shtab_gamemesh; echo "${COMPREPLY[@]}"
COMP_WORDS=(gamemesh textures x --format ""); COMP_CWORD=4; _shtab_gamemesh
echo "${COMPREPLY[@]}"
"""
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        out = subprocess.run(["bash", "-c", script.replace("python", shlex_quote(sys.executable))],
                             capture_output=True, text=True, env=env, timeout=120)
        assert out.stdout.splitlines() == ["convert", "png dds"], out.stderr


def shlex_quote(s: str) -> str:
    import shlex

    return shlex.quote(s)


def test_docs_cli_md_matches_the_parser() -> None:
    from gamemesh.cli._reference import render

    doc = (ROOT / "docs" / "cli.md").read_text()
    assert doc == render(), "docs/cli.md is stale: python -m gamemesh.cli._reference > docs/cli.md"
