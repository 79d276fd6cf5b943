"""The command line: verbs, exit codes, one-line errors, atomic output, reports."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gamemesh
from gamemesh.cli import main
from gamemesh.sample import sample_scene


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gamemesh", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


@pytest.fixture
def sample_glb(tmp_path: Path) -> Path:
    path = tmp_path / "sample.glb"
    gamemesh.save(sample_scene(), path)
    return path


def test_formats_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formats", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    gltf = next(r for r in rows if r["name"] == "gltf")
    assert gltf["extensions"] == [".glb", ".gltf"]
    assert gltf["read"] and gltf["write"] and gltf["to_scene"] and gltf["from_scene"]


def test_info_json_counts(sample_glb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(sample_glb), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "gltf" and info["native"]["container"] == "glb"
    assert (info["nodes"], info["meshes"], info["vertices"], info["triangles"]) == (5, 1, 20, 36)
    assert (info["materials"], info["textures"], info["skins"], info["bones"]) == (1, 1, 1, 3)
    assert [(a["name"], a["keys"], a["duration"]) for a in info["animations"]] == [
        ("bend", 9, 1.0), ("twist", 9, 1.0)]


def test_info_text(sample_glb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(sample_glb)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  bones: +3$", out, re.M)
    assert re.search(r"^    bend +9 +1\.000 s +\d+$", out, re.M), out


def test_garbage_glb_exits_1_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.glb"
    bad.write_bytes(b"glTF\x02\0\0\0\xff\xff\0\0" + b"garbage" * 10)
    before = bad.read_bytes()
    r = run_cli("convert", str(bad), str(tmp_path / "out.glb"))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"gamemesh: error: {bad}: gltf: ")
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.glb"]  # nothing left behind
    assert bad.read_bytes() == before


def test_truncated_glb_exits_1(sample_glb: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.glb"
    cut.write_bytes(sample_glb.read_bytes()[:300])
    r = run_cli("info", str(cut))
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "gltf: " in r.stderr


def test_debug_shows_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.glb"
    bad.write_bytes(b"glTF\x01\0\0\0\x14\0\0\0" + b"\0" * 8)
    r = run_cli("--debug", "info", str(bad))
    assert r.returncode == 1 and "Traceback" in r.stderr and "expected 2, got 1" in r.stderr


def test_usage_errors_exit_2(sample_glb: Path, tmp_path: Path) -> None:
    assert run_cli("convert", str(sample_glb)).returncode == 2
    assert run_cli("frobnicate").returncode == 2
    r = run_cli("convert", str(sample_glb), str(tmp_path / "x.unknown"))
    assert r.returncode == 2 and "cannot tell the output format" in r.stderr
    assert run_cli("convert", str(sample_glb), str(tmp_path / "x"), "--to", "nope").returncode == 2


def test_unknown_input_exits_1(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    r = run_cli("info", str(f))
    assert r.returncode == 1 and "unknown file format" in r.stderr


def test_convert_report(sample_glb: Path, tmp_path: Path) -> None:
    img = tmp_path / "sample.gltf"
    assert main(["convert", str(sample_glb), str(img)]) == 0
    # A scene with two images written as one PNG loses one: the report says so.
    scene = gamemesh.load(img)
    scene.images.append(scene.images[0])
    gamemesh.save(scene, tmp_path / "two.glb")
    report = tmp_path / "r.json"
    assert main(["convert", str(tmp_path / "two.glb"), str(tmp_path / "t.png"),
                 "--report", str(report)]) == 0
    data: dict[str, Any] = json.loads(report.read_text())
    assert data["source_format"] == "gltf" and data["target_format"] == "image"
    assert [n["code"] for n in data["notes"]] == ["image.others_dropped", "image.texture_only"]
    assert data["summary"]["vertices"] == 20


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gamemesh import api

    real = os.replace
    calls = []

    def flaky(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 2:
            msg = "disk full"
            raise OSError(msg)
        real(src, dst)

    monkeypatch.setattr(api.os, "replace", flaky)
    with pytest.raises(OSError, match="disk full"):
        gamemesh.save(sample_scene(), tmp_path / "out.gltf")
    assert not any(p.name.startswith(".gamemesh-") for p in tmp_path.iterdir())


def test_python_m_and_version() -> None:
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("gamemesh ")


def test_demo(tmp_path: Path, gltf_validator: Any) -> None:
    r = run_cli("demo", str(tmp_path / "demo"), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)
    assert rows[0]["format"] == "gltf"
    for row in rows:
        glb = tmp_path / "demo" / row["glb"]
        gltf_validator(glb)
        assert gamemesh.load(glb).summary()["vertices"] > 0


def test_outputs_get_the_usual_file_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        gamemesh.save(sample_scene(), tmp_path / "s.glb")
    finally:
        os.umask(old)
    assert (tmp_path / "s.glb").stat().st_mode & 0o777 == 0o644


def test_closed_pipe_is_quiet(sample_glb: Path) -> None:
    """`gamemesh info x | head -1`: no traceback when the reader stops early."""
    import shlex

    # `true` exits without reading, long before gamemesh has started: every write hits a
    # closed pipe.
    cmd = (f"{shlex.quote(sys.executable)} -m gamemesh info {shlex.quote(str(sample_glb))} "
           "| true; echo ${PIPESTATUS[0]} >&2")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr
    assert r.stderr.strip() == "141"


def test_convert_never_overwrites_its_input(sample_glb: Path) -> None:
    before = sample_glb.read_bytes()
    r = run_cli("convert", str(sample_glb), str(sample_glb.parent / "." / sample_glb.name))
    assert r.returncode == 2 and "is the input itself" in r.stderr
    assert sample_glb.read_bytes() == before


def test_convert_and_info_read_and_parse_once(sample_glb: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """convert reads its input once (the export check and the load share it); info parses
    it once (the scene reuses the native document)."""
    from gamemesh import api
    from gamemesh.registry import by_name

    reads: list[object] = []
    real_read = api._read_source
    monkeypatch.setattr(api, "_read_source",
                        lambda src, *a: reads.append(src) or real_read(src, *a))
    gamemesh.convert(sample_glb, tmp_path / "out.gltf")
    assert len(reads) == 1

    spec = by_name("gltf")
    real_parse = spec.read
    assert real_parse is not None
    parses: list[int] = []
    # FormatSpec is frozen: swap its reader for a counting one for this test only.
    object.__setattr__(spec, "read", lambda d, c: parses.append(1) or real_parse(d, c))
    try:
        assert main(["info", str(sample_glb), "--json"]) == 0
    finally:
        object.__setattr__(spec, "read", real_parse)
    assert len(parses) == 1
