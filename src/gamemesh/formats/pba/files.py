"""The files beside a PBA model: its PTX textures (here and in ``texturas/``), found for
``to_scene`` and listed as ``SPEC.siblings`` so batch conversion groups them."""

from __future__ import annotations

from pathlib import Path

from ...errors import FormatError
from ...registry import Context
from ...safeio import folder_entries, folder_files, read_regular
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


def _listing(folder: Path) -> dict[str, str]:
    """The files of ``folder``: lower-case name -> name (the game's file names ignore case; a
    path is made only for a file that is asked for)."""
    return folder_files(folder, str.lower)


def search_dirs(model: Path | None, extra: list[str] | tuple[str, ...] = (),
                listings: dict[Path, dict[str, str]] | None = None) -> list[Path]:
    """The folders searched for textures: the model's, its ``texturas/`` and the ``extra``
    ones. The model's folder is listed once: its files go into ``listings`` (when given) for
    the texture index, which then does not list it again."""
    dirs: list[Path] = []
    if model is not None:
        here = model.parent
        dirs.append(here)
        files, subs = folder_entries(here, str.lower)
        if listings is not None:
            listings[here] = files
        dirs += sorted(here / name for name in subs if name.lower() == TEXTURE_FOLDER)
    for d in extra:
        p = Path(d)
        if not p.is_absolute() and model is not None and not p.is_dir():
            p = model.parent / p
        dirs.append(p)
    return dirs


class TextureFinder:
    """Answers ``find("name")`` -> ``name.ptx`` path from the search folders, first folder
    first. Nothing is looked at before the first question (a model without textures, or one
    read for its geometry only, costs no directory listing); then each folder is listed once.
    The folders are given, or found from the model's path and the ``--texture-dir`` values."""

    def __init__(self, dirs: list[Path] | None = None, model: Path | None = None,
                 extra: tuple[str, ...] = ()) -> None:
        self._dirs = dirs
        self._model = model
        self._extra = extra
        self._index: dict[str, tuple[Path, str]] | None = None  # lower name -> folder, name
        self._listings: dict[Path, dict[str, str]] = {}  # folders already listed by ``dirs``

    @property
    def dirs(self) -> list[Path]:
        if self._dirs is None:
            self._dirs = search_dirs(self._model, self._extra, self._listings)
        return self._dirs

    @property
    def index(self) -> dict[str, tuple[Path, str]]:
        if self._index is None:
            self._index = {}
            for d in self.dirs:
                listing = self._listings.get(d)
                for key, name in (_listing(d) if listing is None else listing).items():
                    self._index.setdefault(key, (d, name))
        return self._index

    @classmethod
    def for_context(cls, ctx: Context) -> TextureFinder:
        extra = ctx.opt("texture_dir", ())
        if isinstance(extra, str):
            extra = (extra,)
        return cls(model=ctx.path, extra=tuple(extra))

    def find(self, name: str) -> Path | None:
        if not name:
            return None
        hit = self.index.get(f"{name}.ptx".lower())
        return hit[0] / hit[1] if hit is not None else None


def sibling_textures(path: Path, names: list[str]) -> list[Path]:
    finder = TextureFinder(model=path)  # lists the model's folder once
    found = (finder.find(n) for n in names)
    return sorted({p for p in found if p is not None})
