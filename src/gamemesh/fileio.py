"""Writing output files safely: names from files never leave the output folder, a failure
leaves nothing half-written, only regular files (or new names) are written, and the temporary
files of writers that died are swept. Shared by the front ends and the formats (below both).

A write stages each file as ``.gamemesh-<hex>.part`` beside its target and renames them all at
the end. A writer killed outright (kill -9, a power cut) cannot remove its parts, so every write
sweeps the parts in the folders it writes to, but only those no live writer can still rename:
while staging, a writer holds a shared ``flock`` on each folder it writes to, and a sweep takes
the folder's lock exclusively, without waiting. The kernel drops a dead process's locks, so a
folder nobody holds has only stale parts; a folder some writer holds is left for a later sweep.
Where ``fcntl`` is missing (Windows) nothing is locked and nothing is swept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from .safeio import file_kind

__all__ = ["PART_GLOB", "safe_name", "sweep_parts", "write_files"]

# The temporary names write_files stages under (and the only names a sweep removes).
PART_GLOB = ".gamemesh-*.part"

try:
    import fcntl
except ImportError:  # Windows: no advisory locks (see the module's docstring)
    fcntl = None  # type: ignore[assignment]


def safe_name(name: str) -> str:
    """A relative output name that cannot leave the output folder (names come from files)."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts
             if p not in ("", ".", "..", "/") and ":" not in p]
    if not parts:
        msg = f"unusable output name {name!r}"
        raise ValueError(msg)
    return "/".join(parts)


def write_files(folder: Path, files: dict[str, bytes]) -> list[str]:
    """Write every file to a temporary name, then rename them all: on any failure nothing new
    is left behind. A target that exists and is not a regular file (a device, a FIFO, a
    directory; also through a symlink) is refused before anything is written."""
    folder.mkdir(parents=True, exist_ok=True)
    targets = [folder / safe_name(name) for name in files]
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        check_target(target)
    staged: list[tuple[Path, Path]] = []
    with _writing({t.parent for t in targets}):
        try:
            for target, data in zip(targets, files.values(), strict=True):
                staged.append((target, _stage(target, data)))
            for target, part in staged:
                check_target(target)  # again: the stage may have taken a while
                _rename(part, target)
        except BaseException:
            for _, part in staged:
                with contextlib.suppress(OSError):
                    part.unlink()
            raise
    return [str(t) for t, _ in staged]


def check_target(target: Path) -> None:
    """Refuse an output path that names anything but a regular file or nothing: renaming over
    a device node or a FIFO would replace it (``/dev/null`` for root) instead of writing to it.
    The error (an OSError) names the output, for the CLI's one line."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:  # a new name (or a link to nowhere, replaced as a link)
        return
    except OSError as e:
        raise _naming(e, target) from None
    if stat.S_ISREG(mode):
        return
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    msg = (f"the output is {file_kind(mode)}, not a regular file; only regular files are "
           "written ('-' writes to stdout)")
    raise OSError(code, msg, str(target))


def _stage(target: Path, data: bytes) -> Path:
    """``data`` in a new temporary file beside ``target``; errors name the target (the user
    never chose the temporary name)."""
    # Not mkstemp: its 0600 mode would survive the rename. O_EXCL with a random name
    # is as safe and lets the umask decide, as for any file the user writes.
    part = target.parent / f".gamemesh-{secrets.token_hex(8)}.part"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:  # a read-only folder, no permission
        raise _naming(e, target) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException as e:
        with contextlib.suppress(OSError):
            part.unlink()
        if isinstance(e, OSError):  # a full disk (ENOSPC) names no file, or the part
            raise _naming(e, target) from e
        raise
    return part


def _rename(part: Path, target: Path) -> None:
    try:
        os.replace(part, target)
    except OSError as e:  # a directory created at the name since the check, a vanished folder
        raise _naming(e, target) from None


def _naming(e: OSError, target: Path) -> OSError:
    """``e`` naming the output the user chose (its same kind: IsADirectoryError stays one);
    an error without an errno (raised by hand, not by the system) stays as it is."""
    if e.errno is None:
        return e
    return type(e)(e.errno, e.strerror, str(target))


@contextlib.contextmanager
def _writing(folders: set[Path]) -> Iterator[None]:
    """Hold a shared lock on each folder while its parts exist, sweeping each folder first
    when no other writer holds it."""
    with contextlib.ExitStack() as stack:
        for folder in sorted(folders):
            fd = _open_folder(folder)
            if fd is None:
                continue
            stack.callback(os.close, fd)
            if _try_exclusive(fd):
                _sweep_locked(folder)
            with contextlib.suppress(OSError):  # a file system without flock: no lock
                fcntl.flock(fd, fcntl.LOCK_SH)  # waits only for a sweep in progress
        yield


def _open_folder(folder: Path) -> int | None:
    if fcntl is None:
        return None
    try:
        return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:  # a folder we may write to but not list: no lock, no sweep
        return None


def _try_exclusive(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # another writer stages here (BlockingIOError) or flock is unsupported
        return False
    return True


def _sweep_locked(folder: Path) -> int:
    """Remove the parts in ``folder`` (whose lock the caller holds exclusively: they are all
    stale). Only regular files of gamemesh's own naming; a link is never followed."""
    n = 0
    for part in folder.glob(PART_GLOB):
        with contextlib.suppress(OSError):
            if stat.S_ISREG(part.lstat().st_mode):
                part.unlink()
                n += 1
    return n


def sweep_parts(folder: Path, recursive: bool = False) -> int:
    """Remove the stale parts in ``folder`` (and, with ``recursive``, in every folder below
    it): those of writers that died. A folder where a live writer stages is left alone.
    Returns the number of parts removed."""
    folders = [folder]
    if recursive:
        folders += sorted({p.parent for p in folder.rglob(PART_GLOB)} - {folder})
    n = 0
    for f in folders:
        fd = _open_folder(f)
        if fd is None:
            continue
        try:
            if _try_exclusive(fd):
                n += _sweep_locked(f)
        finally:
            os.close(fd)
    return n
