"""The benchmark entry point runs for every format with a sample generator and reports real
figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gamemesh import bench
from gamemesh import benchcorpus as bc
from gamemesh.registry import formats

ROOT = Path(__file__).resolve().parent.parent


def test_bench_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--size", "0.3", "--repeat", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["format"] for r in rows}
    assert names == {s.name for s in formats() if s.make_sample is not None}
    assert {"gltf", "papa", "pba", "pet", "pmf", "ptx", "splashpack"} <= names
    for r in rows:
        assert r["bytes"] > 100_000, r["format"]
        assert r["read_MBps"] > 0 and r["to_glb_MBps"] > 0 and r["peak_MiB"] > 0
        assert r["glb_bytes"] > 0


def test_bench_corpus_times_every_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    """--corpus on the checked-in fixtures: every format's files are found, grouped and timed,
    none is refused, and the texture-only files are told apart from the models."""
    fixtures = ROOT / "tests" / "fixtures"
    assert bench.main(["--corpus", str(fixtures), "--repeat", "1", "--min-time", "0",
                       "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] == []
    groups = {(g["format"], g["kind"]): g for g in out["groups"]}
    for fmt in ("papa", "pba", "pet", "pmf", "ptx"):
        assert any(f == fmt for f, _ in groups), fmt
    for g in out["groups"]:
        assert g["files"] > 0 and g["bytes"] > 0
        assert g["load_total_s"] > 0 and g["load_median_ms"] > 0
        assert g["glb_total_s"] > 0 and g["read_total_s"] > 0
    assert ("papa", "texture") in groups and ("papa", "model") in groups
    assert "cores" in out["machine"]


def test_bench_small_files_table(capsys: pytest.CaptureFixture[str]) -> None:
    """The small-file table counts each format's files under 30 KB, names the slowest load and
    counts those over 1 ms, from the same per-file loads as the groups."""
    papa = ROOT / "tests" / "fixtures" / "papa"
    assert bench.main(["--corpus", str(papa), "--repeat", "1", "--min-time", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (row,) = out["small"]
    sizes = {p.name: p.stat().st_size for p in papa.glob("*.papa")}
    assert row["format"] == "papa" and row["files"] == sum(s < 30_000 for s in sizes.values())
    assert row["slowest"] in sizes
    assert 0 < row["load_median_ms"] <= row["load_max_ms"]
    assert row["over_1ms"] == 0 or row["load_max_ms"] > 1
    assert bench.main(["--corpus", str(papa), "--repeat", "1", "--min-time", "0",
                       "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "| files under 30 KB | files | load median |" in text and "| papa | 4 |" in text


def test_bench_corpus_peer_ratio(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--peer reads per-file times (oracle_papa.py's JSON lines) and compares the same files;
    files the peer failed on and its summary line are left out."""
    papa = ROOT / "tests" / "fixtures" / "papa"
    files = sorted(papa.glob("*.papa"))
    lines = [json.dumps({"file": str(f), "parse_s": 0.5, "ok": True}) for f in files]
    lines.append(json.dumps({"file": str(files[0]), "parse_s": 9.0, "ok": False}))
    lines.append(json.dumps({"summary": {"files": len(files)}}))
    peer = tmp_path / "peer.jsonl"
    peer.write_text("\n".join(lines), encoding="utf-8")
    assert bench.main(["--corpus", str(papa), "--repeat", "1", "--peer", str(peer),
                       "--min-time", "0", "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "| files | peer parse total / median |" in text
    assert "(read_native)" in text and "(load)" in text
    assert "load average" in text


def test_best_of_runs_until_min_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """best_of runs at least ``repeat`` times, then on until the runs add up to ``min_time``,
    never past MAX_RUNS; the best is the fastest run, whatever its place."""
    ticks = iter(range(10**6))
    monkeypatch.setitem(bc.CLOCKS, "fake", lambda: next(ticks) * 0.001)  # each run: 1 ms
    calls: list[int] = []
    best, _, out = bc.best_of(lambda: calls.append(1) or len(calls), 3, "fake", 0.0095)
    assert len(calls) == 10 and out == 10 and best == pytest.approx(0.001)
    calls.clear()
    bc.best_of(lambda: calls.append(1), 3, "fake", 0.0)
    assert len(calls) == 3
    calls.clear()
    bc.best_of(lambda: calls.append(1), 3, "fake", 60.0)
    assert len(calls) == bc.MAX_RUNS


def test_bench_markdown_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--size", "0.2", "--repeat", "1", "--format", "papa",
                       "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "| papa | 0.2 MB |" in text and "**to-GLB**" in text and "cores" in text


def test_bench_cpu_clock(capsys: pytest.CaptureFixture[str]) -> None:
    """--clock cpu times the same work on this process's CPU time and says so."""
    assert bench.main(["--size", "0.2", "--repeat", "1", "--format", "pmf", "--clock", "cpu",
                       "--markdown"]) == 0
    text = capsys.readouterr().out
    assert "cpu time" in text and "| pmf |" in text


def test_startup_rows_time_each_command_against_numpy(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--startup", "--repeat", "1", "--json"]) == 0
    rows = {r["command"]: r for r in json.loads(capsys.readouterr().out)["startup"]}
    assert set(rows) == {'python -c "import numpy"', "gamemesh --version", "gamemesh --help",
                         "gamemesh info", "gamemesh convert"}
    assert rows['python -c "import numpy"']["x_numpy"] == 1.0
    assert all(r["cpu_s"] > 0 for r in rows.values())
    assert rows["gamemesh convert"]["goal_x_numpy"] == 3.0
