"""Batch conversion of a generated 1,000-file tree of every registered format (issue #8).

One full conversion serves three checks, to keep the suite fast on a shared machine: the CLI
is started on the tree and interrupted with Ctrl-C (SIGINT to its process group) once a few
hundred results are recorded; the manifest and DST must then be consistent. A restart must
finish the rest without redoing anything recorded, and the finished tree must hold the right
status, format, group and output for every file. A rerun then converts nothing.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import gamemesh
from gamemesh.batch import MANIFEST_NAME, BatchConfig, run_batch, summarize
from gamemesh.batch.sampletree import Tree, build_tree
from gamemesh.registry import formats

ROOT = Path(__file__).resolve().parent.parent
DONE = ("ok", "error")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    return build_tree(tmp_path_factory.mktemp("batch") / "src", 1000)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "gamemesh", *args]


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + e.get("PYTHONPATH", "")
    return e


# A post-step that sleeps per conversion in the subprocess (see slow_step), so a run lasts long
# enough to be interrupted on any machine: unpaced, the tree converts in about a second. The
# restarts name the same step (without the delay) so their options match the first run's.
PACE = "test_batch:slow_step"


def paced_env(delay: float) -> dict[str, str]:
    e = env()
    e["PYTHONPATH"] += os.pathsep + str(Path(__file__).parent)
    e["GAMEMESH_TEST_STEP_DELAY"] = str(delay)
    return e


def _select_inputs(uri: str) -> dict[str, dict[str, Any]]:
    db = sqlite3.connect(uri, uri=True, timeout=30)
    db.row_factory = sqlite3.Row
    try:
        return {r["path"]: dict(r) for r in db.execute("SELECT * FROM inputs")}
    finally:
        db.close()


def read_rows(dst: Path) -> dict[str, dict[str, Any]]:
    """The manifest as another process sees it mid-run (read-only, committed state only)."""
    try:
        rows = _select_inputs(f"file:{dst / MANIFEST_NAME}?mode=ro")
    except sqlite3.OperationalError as e:
        # After a SIGKILL the write-ahead log may need recovering, which a read-only connection
        # cannot do ("attempt to write a readonly database"); any writer (the restarted batch)
        # recovers it on open, and so does a read-write connection here.
        if "readonly" not in str(e):
            raise
        rows = _select_inputs(f"file:{dst / MANIFEST_NAME}")
    for r in rows.values():
        for c in ("outputs", "members", "notes"):
            r[c] = json.loads(r[c]) if r[c] else []
    return rows


def wait_for_done(dst: Path, proc: subprocess.Popen[bytes], n: int, timeout: float) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            pytest.fail(f"the batch ended (rc {proc.returncode}) before it could be interrupted")
        if (dst / MANIFEST_NAME).exists():
            try:
                done = sum(r["status"] in DONE for r in read_rows(dst).values())
            except sqlite3.OperationalError:  # schema not created yet, or a commit in progress
                done = 0
            if done >= n:
                return done
        time.sleep(0.05)
    pytest.fail(f"fewer than {n} results after {timeout} s")


def assert_consistent(dst: Path, rows: dict[str, dict[str, Any]]) -> None:
    """Every ok row's outputs exist; every output on disk belongs to an ok row; no partial
    (temporary) file anywhere."""
    assert not list(dst.rglob(".gamemesh-*.part"))
    claimed = {o for r in rows.values() if r["status"] == "ok" for o in r["outputs"]}
    for o in claimed:
        assert (dst / o).is_file(), o
    on_disk = {p.relative_to(dst).as_posix() for p in dst.rglob("*.glb")}
    assert on_disk == {o for o in claimed if o.endswith(".glb")}


def test_tree_has_every_format_damage_and_units(tree: Tree) -> None:
    assert tree.problems == {}, "a format's sample generator or writer failed"
    assert len(tree.expect) >= 1000
    inputs = tree.inputs()
    kinds = {(e.format, e.kind) for e in inputs.values()}
    importers = {s.name for s in formats() if s.can_import}
    assert importers <= {e.format for e in inputs.values()}
    for s in formats():
        if s.make_sample is not None:
            for k in ("truncated", "garbage", "empty"):
                assert (s.name, k) in kinds, (s.name, k)
    grouping = [s.name for s in formats() if s.siblings is not None]
    members = [e for e in inputs.values() if e.kind == "member"]
    if grouping:
        assert {e.group_of for e in members}, "no multi-file unit in the tree"
    assert any(e.kind == "renamed" for e in inputs.values())
    assert any(e.status is None for e in tree.expect.values())


def test_interrupted_run_resumes_and_converts_the_tree(tree: Tree, tmp_path: Path) -> None:
    dst = tmp_path / "dst"
    proc = subprocess.Popen(cli("batch", str(tree.root), str(dst), "--jobs", "2",
                                "--progress-interval", "0.2", "--post-step", PACE),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=paced_env(0.01), start_new_session=True)
    try:
        wait_for_done(dst, proc, 200, timeout=240)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole process group
        _, err_b = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = err_b.decode()
    assert proc.returncode == 130, err
    assert "stopping: finishing the running conversions" in err
    # Piped stderr: plain periodic lines with rates, never a redrawn bar.
    assert "files/s" in err and "ETA" in err and "\r" not in err
    assert "batch interrupted" in err

    first = read_rows(dst)
    assert_consistent(dst, first)
    done_before = {p: r for p, r in first.items() if r["status"] in DONE}
    pending = [p for p, r in first.items() if r["status"] == "pending"]
    assert len(done_before) >= 200 and pending, "the interrupt came too late to test a resume"
    runs = summarize(dst)["runs"]
    assert [r["status"] for r in runs] == ["interrupted"]

    res = run_batch(BatchConfig(tree.root, dst, jobs=2, quiet=True, post=[PACE]))
    assert not res.interrupted
    rows = read_rows(dst)
    units = {p for p, r in rows.items() if r["status"] in DONE}
    assert res.converted == len(units) - len(done_before)
    for p, r in done_before.items():  # nothing recorded before the interrupt was redone
        assert (rows[p]["run"], rows[p]["finished"], rows[p]["hash"]) == (
            r["run"], r["finished"], r["hash"]), p
    assert {rows[p]["run"] for p in units - set(done_before)} == {res.run}
    assert_consistent(dst, rows)
    check_tree_results(tree, dst, rows)

    again = run_batch(BatchConfig(tree.root, dst, jobs=2, quiet=True, post=[PACE]))
    assert (again.converted, again.skipped) == (0, res.units)
    assert read_rows(dst) == rows


def check_tree_results(tree: Tree, dst: Path, rows: dict[str, dict[str, Any]]) -> None:
    inputs = tree.inputs()
    assert set(rows) == set(inputs), "inputs found != recognised files in the tree"
    for rel, exp in inputs.items():
        r = rows[rel]
        assert r["format"] == exp.format, rel
        if exp.kind == "broken-member":
            # Whether a damaged model still names its parts is the format's call.
            assert r["status"] in ("grouped", "ok"), rel
            continue
        assert r["status"] == exp.status, (rel, r["error"])
        assert r["size"] == (tree.root / rel).stat().st_size
        assert r["hash"] and len(r["hash"]) == 64
        if exp.status == "grouped":
            assert r["group_of"] == exp.group_of
            assert rel in rows[exp.group_of]["members"]
        elif exp.status == "ok":
            stem = rel.rsplit(".", 1)[0]
            assert r["outputs"][0] == stem + ".glb", rel
            assert (dst / r["outputs"][0]).read_bytes()[:4] == b"glTF"
            assert r["error"] is None and r["seconds"] > 0
        else:
            assert r["error"] and r["error"].startswith(f"{exp.format}: "), (rel, r["error"])
            assert r["outputs"] == []
    # The outputs are what a single `gamemesh convert` makes, one file per format and kind.
    seen: set[tuple[str | None, str]] = set()
    for rel, exp in sorted(inputs.items()):
        if exp.status != "ok" or (exp.format, exp.kind) in seen:
            continue
        seen.add((exp.format, exp.kind))
        single = dst.parent / "single" / rel
        single = single.with_name(single.name.rsplit(".", 1)[0] + ".glb")
        gamemesh.convert(tree.root / rel, single, from_format=exp.format)
        assert (dst / rows[rel]["outputs"][0]).read_bytes() == single.read_bytes(), rel


def test_report_and_scan_cli(tree: Tree, tmp_path: Path) -> None:
    """``--report`` on a finished small batch, ``scan`` on the same folder: both as JSON."""
    small = build_tree(tmp_path / "src", 40, seed=3)
    dst = tmp_path / "dst"
    p = subprocess.run(cli("batch", str(small.root), str(dst), "-j", "1", "--quiet", "--json"),
                       capture_output=True, env=env(), timeout=240)
    errors = sum(e.status == "error" for e in small.inputs().values())
    assert p.returncode == (1 if errors else 0), p.stderr.decode()
    assert p.stderr == b""  # --quiet
    out = json.loads(p.stdout)
    assert out["errors"] == errors and out["converted"] == out["units"]

    rep = subprocess.run(cli("batch", "--report", str(dst), "--json"), capture_output=True,
                         env=env(), timeout=120)
    assert rep.returncode == 0, rep.stderr.decode()
    summary = json.loads(rep.stdout)
    assert summary["inputs"] == len(small.inputs())
    assert summary["status"].get("error", 0) == errors
    counts = [e["count"] for e in summary["errors"]]
    assert counts == sorted(counts, reverse=True) and 0 < len(counts) <= 10
    bad_inputs = {r for r, e in small.inputs().items() if e.status == "error"}
    assert {e["example"] for e in summary["errors"]} <= bad_inputs
    assert len(summary["slowest"]) == min(10, out["units"])
    text = subprocess.run(cli("batch", "--report", str(dst)), capture_output=True, env=env(),
                          timeout=120).stdout.decode()
    assert "most common errors:" in text and "slowest files:" in text

    sc = subprocess.run(cli("scan", str(small.root), "--json", "-j", "1"), capture_output=True,
                        env=env(), timeout=240)
    assert sc.returncode == 0, sc.stderr.decode()
    scan = json.loads(sc.stdout)
    assert scan["files"] == len(small.expect)
    assert scan["recognised"] == len(small.inputs())
    assert scan["unrecognised"] == sum(e.status is None for e in small.expect.values())
    bad = {u["path"] for u in scan["unreadable"]}
    for kind in ("garbage", "empty"):
        assert {r for r, e in small.inputs().items() if e.kind == kind} <= bad
    per = scan["formats"]
    for name, f in per.items():
        assert f["files"] == sum(e.format == name for e in small.inputs().values())
    assert not (dst / "scan").exists()  # scan writes nothing


def test_killed_hard_then_restarted(tmp_path: Path) -> None:
    """SIGKILL (no chance to clean up) mid-run at --jobs 1: the manifest still holds only
    finished work, and the restart finishes without redoing it and leaves no partial file."""
    small = build_tree(tmp_path / "src", 150, seed=5)
    dst = tmp_path / "dst"
    proc = subprocess.Popen(cli("batch", str(small.root), str(dst), "--jobs", "1", "-q",
                                "--post-step", PACE),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=paced_env(0.05))
    try:
        wait_for_done(dst, proc, 30, timeout=240)
        proc.kill()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    first = read_rows(dst)
    for r in first.values():
        if r["status"] == "ok":
            assert all((dst / o).is_file() for o in r["outputs"])
    done_before = {p: r for p, r in first.items() if r["status"] in DONE}
    res = run_batch(BatchConfig(small.root, dst, jobs=1, quiet=True, post=[PACE]))
    rows = read_rows(dst)
    for p, r in done_before.items():
        assert rows[p]["run"] == r["run"] and rows[p]["finished"] == r["finished"], p
    assert res.converted == sum(r["status"] in DONE for r in rows.values()) - len(done_before)
    assert_consistent(dst, rows)
    assert not any(r["status"] == "pending" for r in rows.values())


def slow_step(output: Path, source: Path) -> list[Path]:
    """A post-step that keeps conversions in flight long enough to interrupt them (only in
    the subprocess, which sets the delay)."""
    time.sleep(float(os.environ.get("GAMEMESH_TEST_STEP_DELAY", "0")))
    return []


def test_second_ctrl_c_aborts_running_conversions(tmp_path: Path) -> None:
    small = build_tree(tmp_path / "src", 40, seed=7)
    dst = tmp_path / "dst"
    e = env()
    e["PYTHONPATH"] += os.pathsep + str(Path(__file__).parent)
    e["GAMEMESH_TEST_STEP_DELAY"] = "0.4"
    proc = subprocess.Popen(cli("batch", str(small.root), str(dst), "--jobs", "2",
                                "--post-step", "test_batch:slow_step"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e,
                            start_new_session=True)
    try:
        wait_for_done(dst, proc, 1, timeout=240)
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        _, err_b = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err = err_b.decode()
    assert proc.returncode == 130, err
    assert "aborting: stopping the workers" in err
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):  # no worker outlives the driver
        os.killpg(proc.pid, 0)
    rows = read_rows(dst)
    # Killed mid-task: outputs a task finished before its post-step may lack a row (the next
    # run makes them again), but every recorded output exists and nothing is partial.
    assert not list(dst.rglob(".gamemesh-*.part"))
    for r in rows.values():
        assert all((dst / o).is_file() for o in r["outputs"] if r["status"] == "ok")
    for p in dst.rglob("*.glb"):
        assert p.read_bytes()[:4] == b"glTF"
    assert [r["status"] for r in summarize(dst)["runs"]] == ["aborted"]
    done_before = {p for p, r in rows.items() if r["status"] in DONE}
    # The same options (the post-step is part of them), so nothing recorded is redone.
    res = run_batch(BatchConfig(small.root, dst, jobs=2, quiet=True, post=[
        f"{__name__}:slow_step"]))
    after = read_rows(dst)
    assert res.converted == sum(r["status"] in DONE for r in after.values()) - len(done_before)
    assert not any(r["status"] == "pending" for r in after.values())
    assert_consistent(dst, after)
