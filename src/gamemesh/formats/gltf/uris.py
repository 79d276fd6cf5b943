"""Where a .gltf's external files may be: inside its own folder, nowhere else.

A URI is resolved against the folder of the .gltf. Refused, each with a FormatError naming the URI
and its JSON pointer: any scheme (``http:``, ``file:``), absolute paths (POSIX, Windows drive or
UNC), ``..`` segments (also percent-encoded, ``..%2F``), NUL bytes, and names whose real path
(symlinks followed) leaves the folder. ``allow_outside`` (``--allow-outside DIR``) names further
folders a user means to allow.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath

from ...errors import CorruptDataError

__all__ = ["UriRefusedError", "resolve_uri"]

FMT = "gltf"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


class UriRefusedError(CorruptDataError):
    """An external file the glTF may not read (outside its folder, not a regular file): always
    an error, even for an image, whose merely missing file is only a warning."""


def _refuse(uri: str, where: str, why: str) -> UriRefusedError:
    msg = f"external file {uri!r} refused: {why}"
    return UriRefusedError(FMT, msg, field=where,
                           expected="a relative path inside the glTF's folder", actual=uri)


def resolve_uri(uri: str, folder: Path, allow_outside: Iterable[str | os.PathLike[str]] | str,
                where: str) -> Path:
    """The real path ``uri`` names inside ``folder`` (or an allowed folder), or a FormatError."""
    if _SCHEME.match(uri):
        raise _refuse(uri, where, "only relative file names are read (no URI schemes)")
    name = urllib.parse.unquote(uri)
    if "\0" in name:
        raise _refuse(uri, where, "a NUL byte in the name")
    extra = [allow_outside] if isinstance(allow_outside, str | os.PathLike) else allow_outside
    allowed = [Path(d).resolve() for d in extra]
    absolute = (PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute()
                or bool(PureWindowsPath(name).drive) or name.startswith(("\\", "/")))
    target = (folder / name).resolve()
    if any(_inside(target, r) for r in allowed):
        return target  # the user allowed this folder, however the name reaches it
    if absolute:
        raise _refuse(uri, where, "an absolute path")
    if ".." in re.split(r"[\\/]", name):
        raise _refuse(uri, where, "'..' leads out of the glTF's folder")
    if not _inside(target, folder.resolve()):
        raise _refuse(uri, where, f"it resolves (through a symlink) to {target}, outside the "
                      "glTF's folder (allow a folder with --allow-outside DIR)")
    return target


def _inside(target: Path, root: Path) -> bool:
    return target == root or target.is_relative_to(root)
