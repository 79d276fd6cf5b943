"""Output paths (issue 33, items 1-3): a device, FIFO or directory at the output's name is
refused, never replaced; temporary files of a writer killed outright are swept by the next
write to the folder, a live writer's are not; errors name the output, not a temporary file."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

import gamemesh
from gamemesh import fileio
from gamemesh.cli import main
from gamemesh.sample import sample_scene

fcntl = pytest.importorskip("fcntl", reason="parts are locked and swept with flock (POSIX)")


@pytest.fixture
def glb(tmp_path: Path) -> Path:
    path = tmp_path / "in" / "s.glb"
    gamemesh.save(sample_scene(), path)
    return path


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gamemesh: error: "), err
    return err[0]


def _mknod_null(path: Path) -> None:
    try:  # /dev/full's numbers (1, 7): a write to it fails, a rename over it replaces it
        os.mknod(path, 0o666 | 0o020000, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")


# -- 1: only regular files (or new names) are written ---------------------------------------------
@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_output_that_is_not_a_regular_file_is_refused(glb: Path, tmp_path: Path, kind: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.glb"
    words = {"device": "a character device", "fifo": "a FIFO", "directory": "a directory"}
    if kind == "device":
        _mknod_null(out)
    elif kind == "fifo":
        os.mkfifo(out)
    else:
        out.mkdir()
    mode = os.lstat(out).st_mode
    assert main(["convert", str(glb), str(out)]) == 1
    line = _one_line(capsys)
    assert line.startswith(f"gamemesh: error: {out}: the output is {words[kind]}"), line
    assert "'-' writes to stdout" in line
    assert os.lstat(out).st_mode == mode  # still the device, FIFO or folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in", "out.glb"]  # no part left


def test_link_to_a_device_is_refused_too(glb: Path, tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    _mknod_null(dev)
    (tmp_path / "out.glb").symlink_to(dev)
    with pytest.raises(OSError, match="a character device") as e:
        gamemesh.convert(glb, tmp_path / "out.glb")
    assert e.value.filename == str(tmp_path / "out.glb")
    assert (tmp_path / "out.glb").is_symlink()


def test_several_files_refused_before_any_is_written(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "b.png")
    with pytest.raises(OSError, match="FIFO"):
        fileio.write_files(tmp_path, {"a.bin": b"a", "b.png": b"b"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png"]


def test_regular_file_and_new_name_still_written(tmp_path: Path) -> None:
    (tmp_path / "old.bin").write_bytes(b"old")
    assert fileio.write_files(tmp_path, {"old.bin": b"new", "sub/new.bin": b"x"}) == \
        [str(tmp_path / "old.bin"), str(tmp_path / "sub" / "new.bin")]
    assert (tmp_path / "old.bin").read_bytes() == b"new"
    assert (tmp_path / "sub" / "new.bin").read_bytes() == b"x"


# -- 3: errors name the output --------------------------------------------------------------------
def test_unwritable_folder_names_the_output(glb: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A read-only file system refuses the temporary file's creation: the line names the
    output (root ignores a folder's mode bits, so the refusal is the file system's, as on a
    read-only mount)."""
    real = os.open

    def read_only(path: Any, flags: int, *a: Any, **k: Any) -> int:
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real(path, flags, *a, **k)

    monkeypatch.setattr(fileio.os, "open", read_only)
    out = tmp_path / "ro" / "out.glb"
    out.parent.mkdir()
    assert main(["convert", str(glb), str(out)]) == 1
    assert _one_line(capsys) == f"gamemesh: error: {out}: Read-only file system"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_read_only_folder_names_the_output(glb: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    assert main(["convert", str(glb), str(folder / "out.glb")]) == 1
    assert _one_line(capsys) == f"gamemesh: error: {folder / 'out.glb'}: Permission denied"


def test_directory_made_during_the_write_names_the_output(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The rename's own error (a folder appearing at the name after the check) names the
    output and leaves no temporary file."""
    out = tmp_path / "out.bin"
    real = fileio._stage

    def stage_then_mkdir(target: Path, data: bytes) -> Path:
        part = real(target, data)
        monkeypatch.setattr(fileio, "check_target", lambda t: None)
        target.mkdir()
        return part

    monkeypatch.setattr(fileio, "_stage", stage_then_mkdir)
    with pytest.raises(IsADirectoryError) as e:
        fileio.write_files(tmp_path, {"out.bin": b"x"})
    assert e.value.filename == str(out)
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


# -- 2: stale parts are swept, live ones are not ---------------------------------------------------
_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from gamemesh import fileio
    def hang(part, target):  # staged, never renamed: as a writer killed mid-write
        print("staged", flush=True)
        time.sleep(600)
    fileio._rename = hang
    fileio.write_files(Path(sys.argv[1]), {"big.glb": b"x" * 100000})
""")


def _start_writer(folder: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(folder)], text=True,
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "staged"
    return proc


def test_kill_9_part_swept_by_the_next_write_live_part_kept(tmp_path: Path) -> None:
    proc = _start_writer(tmp_path)
    try:
        parts = list(tmp_path.glob(fileio.PART_GLOB))
        assert len(parts) == 1 and parts[0].stat().st_size == 100000
        # The writer is alive (it holds the folder): another write leaves its part alone.
        fileio.write_files(tmp_path, {"other.glb": b"o"})
        assert fileio.sweep_parts(tmp_path) == 0
        assert parts[0].exists()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert parts[0].exists()  # kill -9: nothing of the writer ran
    fileio.write_files(tmp_path, {"next.glb": b"n"})  # the next write into the folder sweeps it
    assert not parts[0].exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["next.glb", "other.glb"]


def test_a_writer_in_progress_keeps_its_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """Two writers in one folder (threads here): the second's sweep does not take the first's
    staged file, whose rename then succeeds."""
    staged, go = threading.Event(), threading.Event()
    real = fileio._rename

    def slow(part: Path, target: Path) -> None:
        if target.name == "first.bin":
            staged.set()
            go.wait(30)
        real(part, target)

    monkeypatch.setattr(fileio, "_rename", slow)
    first = threading.Thread(target=fileio.write_files, args=(tmp_path, {"first.bin": b"1"}))
    first.start()
    assert staged.wait(30)
    fileio.write_files(tmp_path, {"second.bin": b"2"})
    go.set()
    first.join(30)
    assert (tmp_path / "first.bin").read_bytes() == b"1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.bin", "second.bin"]


def test_sweep_removes_only_gamemesh_parts(tmp_path: Path) -> None:
    stale = tmp_path / ".gamemesh-0123456789abcdef.part"
    stale.write_bytes(b"half")
    keep = [tmp_path / "x.part", tmp_path / ".gamemesh-notes.txt", tmp_path / "model.glb"]
    for k in keep:
        k.write_bytes(b"k")
    (tmp_path / ".gamemesh-link.part").symlink_to(tmp_path / "model.glb")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / ".gamemesh-1.part").write_bytes(b"deeper")
    assert fileio.sweep_parts(tmp_path) == 1  # this folder only, links left alone
    assert not stale.exists() and all(k.exists() for k in keep)
    assert (sub / ".gamemesh-1.part").exists()
    assert fileio.sweep_parts(tmp_path, recursive=True) == 1
    assert not (sub / ".gamemesh-1.part").exists()

