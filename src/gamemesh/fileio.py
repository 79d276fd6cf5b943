"""Writing output files safely: names from files never leave the output folder, and a failure
leaves nothing half-written. Shared by the front ends and the formats (below both)."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path, PurePosixPath


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
    is left behind."""
    folder.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[str, Path]] = []
    try:
        for name, data in files.items():
            target = folder / safe_name(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            # Not mkstemp: its 0600 mode would survive the rename. O_EXCL with a random name
            # is as safe and lets the umask decide, as for any file the user writes.
            tmp = target.parent / f".gamemesh-{secrets.token_hex(8)}.part"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            staged.append((str(target), tmp))
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            except OSError as e:
                if e.filename is not None:
                    raise
                # A full disk (ENOSPC) names no file: name the output, for the one-line error.
                raise OSError(e.errno, e.strerror, str(target)) from e
        for final, part in staged:
            os.replace(part, final)
    except BaseException:
        for _, part in staged:
            with contextlib.suppress(OSError):
                part.unlink()
        raise
    return [t for t, _ in staged]
