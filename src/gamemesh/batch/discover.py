"""Finding the inputs of a batch: every file a format recognises, by content first.

A walk of SRC in sorted order (so plans, output names and manifests are reproducible), filtered
by ``--include``/``--exclude`` globs on the path relative to SRC. Each file's first bytes go
through :func:`gamemesh.sniff` (content, then extension), so a model renamed ``.bin`` or pulled
from an archive without a name is still found, and a damaged file that still has its extension
is an input that fails with its error rather than a silent omission.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import api
from ..errors import FormatError

__all__ = ["Candidate", "Discovery", "discover", "matches"]


@dataclass(frozen=True)
class Candidate:
    """One file a format recognises."""

    path: Path  # absolute
    rel: str  # relative to SRC, POSIX separators: the manifest key
    size: int
    mtime_ns: int
    format: str


@dataclass
class Discovery:
    candidates: list[Candidate] = field(default_factory=list)
    # Files no format recognises (by content or extension): relative paths.
    unrecognised: list[str] = field(default_factory=list)
    unrecognised_bytes: int = 0
    # Files that could not even be opened: (relative path, error).
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    # Symbolic links that lead out of the tree (or into a folder left out, DST): never read.
    links_out: list[str] = field(default_factory=list)


def matches(rel: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """``--include``/``--exclude`` globs against the relative path; a pattern without a slash
    also matches the bare file name (``*.papa`` finds files in every folder)."""
    name = PurePosixPath(rel).name

    def hit(pat: str) -> bool:
        return fnmatch.fnmatchcase(rel, pat) or ("/" not in pat and fnmatch.fnmatchcase(name, pat))

    if include and not any(hit(p) for p in include):
        return False
    return not any(hit(p) for p in exclude)


def discover(src: Path, include: Sequence[str] = (), exclude: Sequence[str] = (),
             skip: Sequence[Path] = ()) -> Discovery:
    """Walk ``src`` (not following directory symlinks, so no loops) and sniff every file.
    ``skip`` lists folders to leave out entirely (DST when it lies inside SRC). A file symlink
    counts only when it resolves inside ``src`` (and outside ``skip``), as glTF URIs are
    confined to their folder: a tree handed to a batch or a scan is all it reads, and a link
    into DST could make an output its own input."""
    src = src.resolve()
    skipped = {p.resolve() for p in skip}
    out = Discovery()
    for root, dirs, files in os.walk(src):
        here = Path(root)
        dirs[:] = sorted(d for d in dirs if (here / d).resolve() not in skipped)
        for name in sorted(files):
            path = here / name
            rel = path.relative_to(src).as_posix()
            if not matches(rel, include, exclude):
                continue
            if path.is_symlink() and not _confined(path, src, skipped):
                out.links_out.append(rel)
                continue
            _classify(path, rel, out)
    return out


def _confined(link: Path, src: Path, skipped: set[Path]) -> bool:
    target = link.resolve()  # a broken link stays in: it fails to open, reported as such
    return target.is_relative_to(src) and not any(target.is_relative_to(s) for s in skipped)


def _classify(path: Path, rel: str, out: Discovery) -> None:
    try:
        st = path.stat()
        if not path.is_file():
            return
        fmt = api.sniff(path)
    except OSError as e:
        out.unreadable.append((rel, e.strerror or str(e)))
        return
    except FormatError as e:  # swapped for a FIFO or device since the look: refused
        out.unreadable.append((rel, e.detail or str(e)))
        return
    if fmt is None:
        out.unrecognised.append(rel)
        out.unrecognised_bytes += st.st_size
        return
    out.candidates.append(Candidate(path, rel, st.st_size, st.st_mtime_ns, fmt))
