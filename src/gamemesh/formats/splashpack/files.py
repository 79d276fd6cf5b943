"""The files of one modern SPLASHPACK export (spec-modern §1): ``scene.splashpack`` with
``scene.vram`` (textures) and ``scene.spu`` (audio) beside it. PS1Godot names its sidecars
``scene.splashpack.vram`` / ``.splashpack.spu``, which is also how its files are told apart."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fork_sidecars", "siblings", "sidecar"]


def sidecar(path: Path, kind: str) -> Path | None:
    """The upstream sidecar (``kind`` = "vram" or "spu") of ``path`` when it exists."""
    # Path.with_suffix on the string (its suffix rule: the last dot, not leading, not
    # trailing), and os.path.isfile: the Path calls cost several times the stat on a small
    # load.
    full = os.fspath(path)
    head, name = os.path.split(full)
    dot = name.rfind(".")
    stem = name[:dot] if 0 < dot < len(name) - 1 else name
    p = os.path.join(head, f"{stem}.{kind}") if head else f"{stem}.{kind}"
    return Path(p) if p != full and os.path.isfile(p) else None


def fork_sidecars(path: Path) -> list[Path]:
    """PS1Godot's sidecars of ``path`` (``scene.splashpack.vram``) that exist."""
    name = os.fspath(path)
    return [Path(f) for f in (f"{name}.vram", f"{name}.spu") if os.path.isfile(f)]


def siblings(path: Path) -> list[Path]:
    """Every other file a default load of ``path`` reads."""
    return [p for p in (sidecar(path, "vram"), sidecar(path, "spu")) if p is not None]
