"""Reading files we did not make: only regular files, never more than a limit.

A path can name a character device (``/dev/zero`` never ends), a FIFO (a read blocks until a
writer comes) or a socket; none of them is a model. A size from ``stat`` is a hint, not a promise
(a file can grow between the look and the read), so a read takes at most ``limit + 1`` bytes and
the one extra byte tells that the file is larger than allowed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from .errors import FormatError

__all__ = ["MAX_INPUT_BYTES", "file_kind", "folder_entries", "folder_files", "read_prefix",
           "read_regular"]

# Inputs are read whole; nothing in these formats is near this, and a larger "model" is a
# mistake (a disc image, a video) we would rather refuse than page through.
MAX_INPUT_BYTES = 4 << 30

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


# O_NONBLOCK: a path swapped for a FIFO after the look does not block the open (see _read_open).
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_BINARY", 0)


def folder_files(folder: Path, key: Callable[[str], str] = str) -> dict[str, str]:
    """The regular files (or links to them) directly in ``folder``: ``key(name)`` -> name, the
    first entry winning a shared key; empty when the folder cannot be listed. One ``scandir``:
    the directory gives each entry's type, so there is no ``stat`` per file, and a format finds
    a unit's or a model's sibling files by name in it."""
    return folder_entries(folder, key)[0]


def folder_entries(folder: Path, key: Callable[[str], str] = str
                   ) -> tuple[dict[str, str], list[str]]:
    """:func:`folder_files` of ``folder`` and the names of its sub-folders (or links to them),
    from the same single ``scandir``: a format that looks for a sub-folder beside the model
    (PBA's ``texturas/``) does not list the model's folder twice."""
    files: dict[str, str] = {}
    subs: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file():
                        files.setdefault(key(entry.name), entry.name)
                    elif entry.is_dir():
                        subs.append(entry.name)
                except OSError:  # a link to nowhere, or an entry gone since the listing
                    continue
    except OSError:
        return {}, []
    return files, subs


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO (named pipe)")."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(path: Path, mode: int, fmt: str, what: str | None) -> FormatError:
    kind = file_kind(mode)
    msg = f"{what or 'the input'} is {kind}, not a regular file; only regular files are read"
    return FormatError(format=fmt, message=msg, field=what, path=str(path))


def read_regular(path: Path, limit: int | None = None, fmt: str = "gamemesh",
                 what: str | None = None, take: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (FormatError beyond),
    or, with ``take``, its first ``take`` bytes whatever its size. Missing or unreadable files
    raise the usual OSError; ``what`` names the file in messages."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    if take is not None and take <= limit:
        return _read_open(path, take, fmt, what, None)
    data = _read_open(path, limit + 1, fmt, what, limit)
    if len(data) > limit:
        raise _too_large(path, limit, f"more than {limit}", fmt, what)
    return data


def _read_open(path: Path, n: int, fmt: str, what: str | None, limit: int | None) -> bytes:
    """At most ``n`` bytes of ``path``, refusing it unless the opened file is regular (and, with
    ``limit``, when its size is over it)."""
    # Look before opening: opening a device can act on it (a tape rewinds) and a socket cannot
    # be opened at all. O_NONBLOCK: should the path have been swapped for a FIFO since the look,
    # the open does not wait for a writer; fstat on the open file then decides.
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode, fmt, what)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode, fmt, what)
        if limit is not None and st.st_size > limit:
            raise _too_large(path, limit, st.st_size, fmt, what)
        return _read_fd(fd, st.st_size, n)
    finally:
        os.close(fd)


def _read_fd(fd: int, size: int, n: int) -> bytes:
    """At most ``n`` bytes from ``fd``, whose stat said ``size``. The size is a hint: the first
    read asks for one byte more than it (a read of n bytes would allocate n up front, and n may
    be the 4 GiB limit); getting exactly ``size`` back is the end, so a file that did not
    change costs one read. Otherwise (it grew, shrank, or a read came back short) reads go on
    to the end or ``n``."""
    first = min(n, size + 1, 1 << 30)  # a single read returns at most ~2 GiB on Linux
    data = os.read(fd, first)
    if len(data) == size < first:
        return data
    parts, total = [data], len(data)
    while total < n:
        chunk = os.read(fd, min(n - total, 1 << 30))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts) if len(parts) > 1 else data


def _too_large(path: Path, limit: int, actual: object, fmt: str, what: str | None) -> FormatError:
    msg = f"{what or 'the input'} is too large (raise the limit with --max-input-size)"
    return FormatError(format=fmt, message=msg, field=what, expected=f"<= {limit} bytes",
                      actual=f"{actual} bytes", path=str(path))


def read_prefix(path: Path, n: int, fmt: str = "gamemesh") -> bytes:
    """The first ``n`` bytes of the regular file ``path`` (for sniffing): a FIFO is refused
    before it is opened, so a look at it never blocks."""
    return _read_open(path, n, fmt, None, None)
