"""The files of one modern SPLASHPACK export (spec-modern §1): ``scene.splashpack`` with
``scene.vram`` (textures) and ``scene.spu`` (audio) beside it. PS1Godot names its sidecars
``scene.splashpack.vram`` / ``.splashpack.spu``, which is also how its files are told apart."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fork_sidecars", "siblings", "sidecar"]


def sidecar(path: Path, kind: str) -> Path | None:
    """The upstream sidecar (``kind`` = "vram" or "spu") of ``path`` when it exists."""
    p = Path(path).with_suffix(f".{kind}")
    # os.path.isfile on the string: Path.is_file costs several times its stat on a small load.
    return p if p != Path(path) and os.path.isfile(p) else None


def fork_sidecars(path: Path) -> list[Path]:
    """PS1Godot's sidecars of ``path`` (``scene.splashpack.vram``) that exist."""
    name = os.fspath(path)
    return [Path(f) for f in (f"{name}.vram", f"{name}.spu") if os.path.isfile(f)]


def siblings(path: Path) -> list[Path]:
    """Every other file a default load of ``path`` reads."""
    return [p for p in (sidecar(path, "vram"), sidecar(path, "spu")) if p is not None]
