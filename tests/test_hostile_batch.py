"""Full disks and hard kills (issue 13, items 3 and 6): one line naming the output, and every
finished result recorded the moment it finishes."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import gamemesh
from gamemesh import fileio
from gamemesh.batch import MANIFEST_NAME, BatchConfig, run_batch
from gamemesh.batch.sampletree import build_tree
from gamemesh.cli import main
from gamemesh.sample import sample_scene
from test_batch import PACE, cli, paced_env, read_rows


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every output write fails as on a full disk (ENOSPC names no file)."""
    real = fileio.os.fdopen

    def fdopen(fd: int, mode: str = "r", *a: Any, **k: Any) -> Any:
        f = real(fd, mode, *a, **k)
        if "w" not in mode:
            return f

        class Full:
            def __enter__(self) -> Full:
                return self

            def __exit__(self, *exc: object) -> None:
                f.close()

            def write(self, data: bytes) -> int:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return Full()

    monkeypatch.setattr(fileio.os, "fdopen", fdopen)


def test_convert_full_disk_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "s.glb"
    gamemesh.save(sample_scene(), src)
    _full_disk(monkeypatch)
    out = tmp_path / "out" / "model.pmf"
    assert main(["convert", str(src), str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gamemesh: error: {out}: No space left on device"]
    assert not list((tmp_path / "out").iterdir())  # no partial file


def test_batch_full_disk_names_each_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    small = build_tree(tmp_path / "src", 12, seed=3)
    dst = tmp_path / "dst"
    _full_disk(monkeypatch)
    rc = main(["batch", str(small.root), str(dst), "--jobs", "1", "-q"])
    assert rc == 1
    rows = read_rows(dst)
    full = [r for r in rows.values() if r["error"] and "No space left on device" in r["error"]]
    assert full, rows
    for r in full:  # each names the output it could not write
        assert r["error_type"] == "OSError"
        assert str(dst) in r["error"] and r["error"].split(":")[0].endswith(".glb")
    assert not list(dst.rglob("*.glb"))
    assert "Traceback" not in capsys.readouterr().err


def test_manifest_full_disk_is_one_line(tmp_path: Path) -> None:
    from gamemesh.batch.manifest import Manifest

    with Manifest(tmp_path / MANIFEST_NAME) as m:
        m.db.execute("PRAGMA max_page_count = 1")  # the database cannot grow: "full"
        with pytest.raises(OSError, match="manifest cannot be written") as e, m.transaction():
            m.db.execute("INSERT INTO meta VALUES (?, ?)", ("k", "v" * 100_000))
        assert e.value.errno == errno.ENOSPC
        assert e.value.filename == str(tmp_path / MANIFEST_NAME)


def test_kill_9_keeps_every_finished_result(tmp_path: Path) -> None:
    """A real SIGKILL mid-run: every output on disk but the one in flight is in the manifest,
    and the next start shows the killed run as interrupted, not running."""
    small = build_tree(tmp_path / "src", 60, seed=7)
    dst = tmp_path / "dst"
    proc = subprocess.Popen(cli("batch", str(small.root), str(dst), "--jobs", "1", "-q",
                                "--post-step", PACE),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=paced_env(0.1))
    try:
        end = time.monotonic() + 240
        while len(list(dst.rglob("*.glb"))) < 10:
            assert proc.poll() is None, "the batch ended before it could be killed"
            assert time.monotonic() < end, "no outputs after 240 s"
            time.sleep(0.05)
        proc.kill()  # SIGKILL: no handler runs, nothing is flushed
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    on_disk = {p.relative_to(dst).as_posix() for p in dst.rglob("*.glb")}
    rows = read_rows(dst)
    recorded = {o for r in rows.values() if r["status"] == "ok" for o in r["outputs"]}
    assert len(on_disk) >= 10
    # One output may be written and still in its post-step (not finished) at the kill.
    assert len(on_disk - recorded) <= 1, sorted(on_disk - recorded)
    db = sqlite3.connect(f"file:{dst / MANIFEST_NAME}?mode=ro", uri=True)
    assert [r[0] for r in db.execute("SELECT status FROM runs")] == ["running"]
    db.close()
    run_batch(BatchConfig(small.root, dst, jobs=1, quiet=True, post=[PACE]))
    db = sqlite3.connect(f"file:{dst / MANIFEST_NAME}?mode=ro", uri=True)
    runs = [(r[0], r[1]) for r in db.execute("SELECT status, finished FROM runs ORDER BY id")]
    db.close()
    assert runs[0] == ("interrupted", None)
    assert runs[1][0] == "done"
