"""Full disks and hard kills (issue 13, items 3 and 6): one line naming the output, and every
finished result recorded the moment it finishes."""

from __future__ import annotations

import errno
import io
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


# -- issue 33: no output on an input; symbolic links confined to SRC --------------------------

def _glb(path: Path, rings: int = 5) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    gamemesh.save(sample_scene(3, rings), path)
    return path.read_bytes()


def test_dst_that_contains_src_is_refused(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """SRC = S3/a, DST = S3: the mirror of the input a/x.glb is S3/a/x.glb, itself an input.
    The run used to overwrite it and exit 0; now it is refused before DST is touched."""
    s3 = tmp_path / "S3"
    before = {p: _glb(p, n) for p, n in ((s3 / "a" / "x.glb", 5), (s3 / "a" / "a" / "x.glb", 6),
                                          (s3 / "y.glb", 7))}
    code = main(["batch", str(s3 / "a"), str(s3)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "contains SRC" in err, err
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in s3.iterdir()) == ["a", "y.glb"]  # no lock, no manifest
    with pytest.raises(ValueError, match="contains SRC"):  # also one folder further up
        run_batch(BatchConfig(s3 / "a" / "a", tmp_path, quiet=True))
    # DST inside SRC stays allowed: it is left out of the walk, so no output is an input.
    res = run_batch(BatchConfig(s3, s3 / "out", quiet=True))
    assert (res.units, res.ok) == (3, 3)
    assert {p: p.read_bytes() for p in before} == before


def test_symlinks_leading_out_of_src_are_left_out(tmp_path: Path) -> None:
    """A file link is followed only when it resolves inside SRC and outside DST: ``batch`` and
    ``scan`` read nothing outside the tree they were given (issue 33, item 8's sentence)."""
    from gamemesh.batch import ScanConfig, format_scan, scan_tree

    _glb(tmp_path / "secret" / "model.glb")
    src = tmp_path / "src"
    _glb(src / "inside.glb")
    (src / "sub").mkdir()
    (src / "sub" / "out.glb").symlink_to(Path("..", "..", "secret", "model.glb"))
    (src / "sub" / "in.glb").symlink_to(Path("..", "inside.glb"))
    (src / "abs.glb").symlink_to(tmp_path / "secret" / "model.glb")
    log = io.StringIO()
    res = run_batch(BatchConfig(src, src / "dst", quiet=True, stream=log))
    assert (res.units, res.ok, res.links_out) == (2, 2, 2)
    assert "left out 2 symbolic links leading out of SRC (the first: abs.glb)" in log.getvalue()
    assert sorted(p.relative_to(src / "dst").as_posix() for p in (src / "dst").rglob("*.glb")
                  ) == ["inside.glb", "sub/in.glb"]
    # A link into DST (here inside SRC) would make an output an input of the next run.
    (src / "loop.glb").symlink_to(Path("dst", "inside.glb"))
    again = run_batch(BatchConfig(src, src / "dst", quiet=True, stream=io.StringIO()))
    assert (again.units, again.converted, again.links_out) == (2, 0, 3)
    scan = scan_tree(ScanConfig(src, quiet=True, jobs=1))
    # A scan leaves no folder out: the link into dst/ stays inside the scanned tree.
    assert scan["links_out"] == ["abs.glb", "sub/out.glb"]
    assert scan["recognised"] == 5  # inside, sub/in, loop and the two outputs in dst/
    assert "left out sub/out.glb: a symbolic link that leads out of the folder" in format_scan(
        scan)


def test_output_folder_linked_into_src_is_not_written(tmp_path: Path) -> None:
    """DST/sub is a symbolic link to SRC/other: the mirror of sub/x.glb would be written through
    it over the input other/x.glb. That unit is an error (nothing written); the others
    convert."""
    src = tmp_path / "src"
    before = {p: _glb(p, n) for p, n in ((src / "sub" / "x.glb", 5),
                                         (src / "other" / "x.glb", 6))}
    (tmp_path / "dst").mkdir()
    (tmp_path / "dst" / "sub").symlink_to(Path("..", "src", "other"))
    res = run_batch(BatchConfig(src, tmp_path / "dst", quiet=True, jobs=1))
    assert (res.units, res.ok, res.errors) == (2, 1, 1)
    assert res.failed[0][0] == "sub/x.glb" and "leads out of DST" in res.failed[0][1]
    assert {p: p.read_bytes() for p in before} == before
    assert (tmp_path / "dst" / "other" / "x.glb").is_file()
    assert read_rows(tmp_path / "dst")["sub/x.glb"]["error_type"] == "OutputOutsideDst"
