"""Whole-file loading: a PBA model with the PTX textures beside it (``SPEC.load``), and the
files such a load reads (``SPEC.siblings``), so batch conversion can group them."""

from __future__ import annotations

from pathlib import Path

from ...errors import FormatError
from ...registry import Context
from ...scene import Scene
from .layout import name_str
from .read import read
from .scene import to_scene
from .textures import sibling_textures


def load(data: bytes, ctx: Context) -> Scene:
    """Read and convert; to_scene finds the textures through ``ctx.path``."""
    return to_scene(read(data, ctx), ctx)


def siblings(path: Path) -> list[Path]:
    """The PTX files a load of ``path`` would read."""
    try:
        doc = read(path.read_bytes(), Context(path))
    except (OSError, FormatError):
        return []
    return sibling_textures(path, [name_str(t) for t in doc.textures.tolist()])

