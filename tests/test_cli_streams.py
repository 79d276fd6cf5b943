"""Streams: `--to gltf` on stdout is one .gltf with its data embedded (not a GLB under a .gltf
name), stdin's format is sniffed from its content, and a load from stdin says that the files
beside it were not looked for."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import gamemesh
from gamemesh.sample import sample_scene

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "gamemesh", *args], capture_output=True,
                          input=stdin, timeout=120, env={"PYTHONPATH": str(ROOT / "src")})


@pytest.fixture
def unit(tmp_path: Path) -> Path:
    gamemesh.save(sample_scene(), tmp_path / "col.papa")
    return tmp_path / "col.papa"


def test_gltf_on_stdout_is_one_gltf_with_embedded_data(unit: Path, tmp_path: Path) -> None:
    r = run_cli("convert", str(unit), "-", "--to", "gltf")
    assert r.returncode == 0, r.stderr
    assert not r.stdout.startswith(b"glTF")
    doc = json.loads(r.stdout)
    buffers, images = doc["buffers"], doc["images"]
    assert len(buffers) == 1
    assert buffers[0]["uri"].startswith("data:application/octet-stream;base64,")
    assert len(base64.b64decode(buffers[0]["uri"].split(",", 1)[1])) == buffers[0]["byteLength"]
    assert images and all(i["uri"].startswith("data:image/png;base64,") for i in images)
    out = tmp_path / "x.gltf"
    out.write_bytes(r.stdout)
    back, orig = gamemesh.load(out), gamemesh.load(unit)
    assert back.summary()["vertices"] == orig.summary()["vertices"] == 20
    assert len(back.images) == len(orig.images) == 1 and back.images[0].data is not None
    assert [a.name for a in back.animations] == ["bend", "twist"]
    # `glb` is still the binary container.
    assert run_cli("convert", str(unit), "-", "--to", "glb").stdout[:4] == b"glTF"


def test_gltf_to_a_file_object_through_the_api(unit: Path) -> None:
    buf = io.BytesIO()
    gamemesh.convert(unit, buf, to_format="gltf")
    assert "data:" in json.loads(buf.getvalue())["buffers"][0]["uri"]


def test_stdin_is_sniffed_and_says_siblings_were_not_looked_for(unit: Path) -> None:
    r = run_cli("convert", "-", "-", "--to", "glb", stdin=unit.read_bytes())
    assert r.returncode == 0, r.stderr
    assert r.stdout[:4] == b"glTF"
    lines = [ln for ln in r.stderr.decode().splitlines() if "siblings_not_read" in ln]
    assert len(lines) == 1 and lines[0].startswith("gamemesh: -: warning: papa.siblings_not_read")
    info = run_cli("info", "-", "--json", stdin=unit.read_bytes())
    data = json.loads(info.stdout)
    assert data["format"] == "papa" and data["file"] == "-"
    assert "papa.siblings_not_read" in [n["code"] for n in data["notes"]]
    # A format without siblings gets no such note; --no-siblings turns it off.
    quiet = run_cli("convert", "-", "-", "--to", "glb", "--no-siblings", stdin=unit.read_bytes())
    assert b"siblings_not_read" not in quiet.stderr
    bad = run_cli("info", "-", stdin=b"nothing known")
    assert bad.returncode == 1
    assert bad.stderr.decode() == ("gamemesh: error: -: unknown file format (no format "
                                   "recognises its content or extension)\n")
