"""What the command says to people: info in words and tables, one line per demo sample, error
lines with one prefix, sidecars named, capabilities in the table's words, units grouped, the
files written listed, format values completed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gamemesh
from gamemesh.cli import build_parser, main
from gamemesh.cli.completion import fish, offer_formats
from gamemesh.sample import sample_scene

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gamemesh", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def unit(tmp_path: Path) -> Path:
    """col.papa with its diffuse texture and two animation files, and a lone PMF."""
    gamemesh.save(sample_scene(), tmp_path / "units" / "col.papa")
    gamemesh.save(sample_scene(), tmp_path / "units" / "other.pmf")
    return tmp_path / "units"


def test_info_prints_words_and_tables_not_python_reprs(
        unit: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(unit / "col.papa")]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"[\[\]{}]|'\w+'", out.split("siblings attached")[0]), out
    assert re.search(r"^  vertex formats: +8 Position3Weights4bBones4bNormal3TexCoord2$", out,
                     re.M)
    # A list of records is a table under its key, with a header row.
    assert re.search(r"^  model list:\n    name +skeleton +mesh bindings\n    \S+ +0 +1$", out,
                     re.M)
    # Values of one section start in one column.
    section = out.split("file (papa's own records):\n")[1].split("scene (")[0]
    columns = {m.start(2) - m.start(0) for m in re.finditer(r"^  ([a-z ]+:) +(\S)", section, re.M)}
    assert len(columns) == 1, section


def test_demo_prints_one_line_per_sample_with_a_count_of_notes(tmp_path: Path) -> None:
    r = run_cli("demo", str(tmp_path / "d"))
    assert r.returncode == 0 and r.stderr == ""
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 8 and lines[-1].startswith("wrote 7 sample(s)")
    papa = next(ln for ln in lines if ln.startswith("papa "))
    count = int(re.search(r", (\d+) notes? \(-v lists them\)$", papa).group(1))  # type: ignore[union-attr]
    assert count > 0
    v = run_cli("demo", str(tmp_path / "e"), "-v")
    block = v.stdout.split("papa ", 1)[1].split("\npba ")[0].splitlines()[1:]
    assert len(block) == count and all(ln.startswith(" " * 12) for ln in block)


def test_errors_have_one_prefix_and_no_made_up_format(tmp_path: Path) -> None:
    r = run_cli("info", str(tmp_path))
    assert r.returncode == 1
    assert r.stderr == (f"gamemesh: error: {tmp_path}: the input is a directory, not a regular "
                        "file; only regular files are read\n")
    odd = tmp_path / "x.unknown"
    odd.write_bytes(b"nothing we know")
    r = run_cli("info", str(odd), "--json")
    err = json.loads(r.stdout)["error"]
    assert "format" not in err and not err["message"].startswith("gamemesh:")
    assert r.stderr.count("gamemesh:") == 1
    r = run_cli("convert", "a.papa")
    assert r.returncode == 2
    assert r.stderr == ("gamemesh: usage error: convert needs SRC and DST, or several SRC and "
                        "-o OUT/ (got 1 path)\n")


def test_a_lone_vram_is_named_as_a_splashpack_sidecar(tmp_path: Path) -> None:
    vram = tmp_path / "scene.vram"
    vram.write_bytes(bytes(4096))
    r = run_cli("info", str(vram))
    assert r.returncode == 1
    assert "a SPLASHPACK VRAM sidecar" in r.stderr and "open its .splashpack" in r.stderr
    (tmp_path / "scene.splashpack").write_bytes(b"")
    r = run_cli("convert", str(vram), str(tmp_path / "o.glb"))
    assert "open its scene.splashpack" in r.stderr and r.stderr.count("\n") == 1


def test_formats_name_says_to_and_from_gltf(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["formats", "papa"]) == 0
    out = capsys.readouterr().out
    assert "  can: read, write, to glTF, from glTF\n" in out
    assert main(["formats", "ptx", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["to_scene"] is True  # the JSON keeps its keys


def test_convert_several_groups_units_as_batch_does(unit: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    inputs = sorted(str(p) for p in unit.iterdir())
    assert len(inputs) == 5  # the model, its texture, two clips, and the PMF
    r = run_cli("convert", *inputs, "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["col.glb", "other.glb"]
    assert r.stdout.split() == [str(out / "col.glb"), str(out / "other.glb")]
    assert "3 inputs read as part of 1 unit, not converted alone" in r.stderr
    scene = gamemesh.load(out / "col.glb")
    assert [a.name for a in scene.animations] == ["bend", "twist"] and scene.images


def test_thumbnail_lists_what_it_wrote(unit: Path, tmp_path: Path) -> None:
    out = tmp_path / "th"
    r = run_cli("thumbnail", str(unit / "col.papa"), str(unit / "other.pmf"), "-o", str(out),
                "--size", "32")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(out / "col.png"), str(out / "other.png")]
    assert run_cli("thumbnail", str(unit / "other.pmf"), str(out / "q.png"), "--size", "32",
                   "-q").stdout == ""


def test_completion_offers_format_values() -> None:
    parser = build_parser(all_options_shown=True)
    offer_formats(parser)
    script = fish(parser)
    to = next(ln for ln in script.splitlines()
              if "from convert" in ln and " -l to " in ln)
    values = re.search(r"-a '([^']*)'", to).group(1).split()  # type: ignore[union-attr]
    assert {"glb", "gltf", "papa", "pmf", "splashpack", "pet"} <= set(values)
    r = run_cli("completion", "bash")
    assert re.search(r"_convert___from_choices=\([^)]*\bpapa\b", r.stdout)
