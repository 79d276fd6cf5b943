"""The files beside a PBA model: its PTX textures (here and in ``texturas/``), found for
``to_scene`` and listed as ``SPEC.siblings`` so batch conversion groups them."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ...errors import FormatError
from ...registry import Context
from ...safeio import read_regular
from .layout import name_str
from .read import read


def siblings(path: Path) -> list[Path]:
    """The PTX files a load of ``path`` would read."""
    try:
        doc = read(read_regular(path), Context(path))
    except (OSError, FormatError):
        return []
    return sibling_textures(path, [name_str(t) for t in doc.textures.tolist()])


TEXTURE_FOLDER = "texturas"


def _listing(folder: Path) -> dict[str, Path]:
    try:
        return {p.name.lower(): p for p in folder.iterdir() if p.is_file()}
    except OSError:
        return {}


def search_dirs(model: Path | None, extra: list[str] | tuple[str, ...] = ()) -> list[Path]:
    dirs: list[Path] = []
    if model is not None:
        here = model.parent
        dirs.append(here)
        with contextlib.suppress(OSError):
            dirs += sorted(p for p in here.iterdir()
                           if p.is_dir() and p.name.lower() == TEXTURE_FOLDER)
    for d in extra:
        p = Path(d)
        if not p.is_absolute() and model is not None and not p.is_dir():
            p = model.parent / p
        dirs.append(p)
    return dirs


class TextureFinder:
    """Lists each search folder once, then answers ``find("name")`` -> ``name.ptx`` path."""

    def __init__(self, dirs: list[Path]) -> None:
        self.index: dict[str, Path] = {}
        for d in dirs:
            for key, path in _listing(d).items():
                self.index.setdefault(key, path)

    @classmethod
    def for_context(cls, ctx: Context) -> TextureFinder:
        extra = ctx.opt("texture_dir", ())
        if isinstance(extra, str):
            extra = (extra,)
        return cls(search_dirs(ctx.path, tuple(extra)))

    def find(self, name: str) -> Path | None:
        if not name:
            return None
        return self.index.get(f"{name}.ptx".lower())


def sibling_textures(path: Path, names: list[str]) -> list[Path]:
    finder = TextureFinder(search_dirs(path))
    found = (finder.find(n) for n in names)
    return sorted({p for p in found if p is not None})
