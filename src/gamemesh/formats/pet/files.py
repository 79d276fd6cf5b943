"""The files around a PET model: the other files of its character (the name-prefix rule, §B.1),
and its textures, found case-insensitively beside the model, in ``--texture-dir`` folders and,
walking up the tree, in the shared texture folders the public importers search (§B.4)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import FormatError
from ...registry import Context
from ...safeio import folder_files, read_regular
from .layout import EXTENSIONS, FLAG_CHARS
from .read import read

# Shared folders the public importers search above the model (#1/#3/#7).
SHARED_DIRS = ("z_common", "map_source", "misc", "effect", "texture_dds", "npc", "ppl", "skybox")


# How many folders the texture search walks up from the model's (the model's own included).
_WALK_UP = 6
_MAX_ENTRIES = 20000  # a bound on the files indexed per search root


def _listing(folder: Path) -> dict[str, str]:
    """The files of ``folder`` by lower-case name (first wins), as path strings (a Path is made
    only for a file that is used)."""
    names = folder_files(folder, str.lower)
    base = os.fspath(folder)
    return {k: os.path.join(base, n) for k, n in names.items()}


@dataclass
class TextureFinder:
    """Case-insensitive file lookup with one directory listing per folder. A load keeps one
    finder per model folder, so the listings live as long as that conversion."""

    model_dir: Path | None
    extra_dirs: list[Path] = field(default_factory=list)
    _listing: dict[Path, dict[str, str]] = field(default_factory=dict)
    _trees: dict[Path, dict[str, str]] = field(default_factory=dict)
    _roots: list[Path] | None = None

    def _list(self, folder: Path) -> dict[str, str]:
        if folder not in self._listing:
            self._listing[folder] = _listing(folder)
        return self._listing[folder]

    def _tree(self, root: Path) -> dict[str, str]:
        """Every file under ``root`` by lower-case name (first found wins), bounded."""
        if root not in self._trees:
            found: dict[str, str] = {}
            stack: list[str | Path] = [root]
            seen = 0
            while stack and seen < _MAX_ENTRIES:
                d = stack.pop()
                try:
                    with os.scandir(d) as it:
                        for e in it:
                            seen += 1
                            if e.is_dir(follow_symlinks=False):
                                stack.append(e.path)
                            elif e.is_file():
                                found.setdefault(e.name.lower(), e.path)
                except OSError:
                    continue
            self._trees[root] = found
        return self._trees[root]

    def _shared_roots(self) -> Iterable[Path]:
        if self._roots is None:
            self._roots = _walk_up(self.model_dir) if self.model_dir is not None else []
        return self._roots

    def find(self, name: str) -> Path | None:
        """The file for a TEXT name: as given, then without its leading flag characters."""
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        stripped = base.lstrip(FLAG_CHARS)
        candidates = [c.lower() for c in dict.fromkeys((base, stripped)) if c]
        if not candidates:
            return None
        flat = [self.model_dir] if self.model_dir is not None else []
        for d in [*flat, *self.extra_dirs]:
            hit = _pick(self._list(d), candidates)
            if hit is not None:
                return hit
        for d in self.extra_dirs:
            hit = _pick(self._tree(d), candidates)
            if hit is not None:
                return hit
        for root in self._shared_roots():
            hit = _pick(self._tree(root), candidates)
            if hit is not None:
                return hit
        return None

    def mask_for(self, tex: Path) -> Path | None:
        """``<stem>_mask<ext>`` beside the texture (any of the usual extensions)."""
        listing = self._list(tex.parent)
        stem = tex.stem.lower()
        for ext in dict.fromkeys((tex.suffix.lower(), ".jpg", ".png", ".bmp", ".tga", ".dds")):
            hit = listing.get(f"{stem}_mask{ext}")
            if hit is not None:
                return Path(hit)
        return None


def _walk_up(model_dir: Path) -> list[Path]:
    """The shared texture folders in ``model_dir`` and up to :data:`_WALK_UP` - 1 folders
    above it, nearest first (each folder's sorted)."""
    roots: list[Path] = []
    d = model_dir
    for _ in range(_WALK_UP):
        roots += sorted(Path(p) for p in _shared_of(d))
        if d.parent == d:
            break
        d = d.parent
    return roots


def _shared_of(folder: Path) -> list[str]:
    """The shared texture folders (:data:`SHARED_DIRS`, any case, or links to folders) of
    ``folder``, from a ``scandir`` that looks only at entries with such a name: a big folder
    on the walk up (``/tmp``) is not indexed in full."""
    base = os.fspath(folder)
    shared: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.lower() not in SHARED_DIRS:
                    continue
                try:  # folder_entries' test: not a file, and a folder (or a link to one)
                    if not entry.is_file() and entry.is_dir():
                        shared.append(os.path.join(base, entry.name))
                except OSError:
                    continue
    except OSError:
        return []
    return shared


def _pick(listing: dict[str, str], names: list[str]) -> Path | None:
    for n in names:
        if n in listing:
            return Path(listing[n])
    return None


def character_files(path: Path) -> list[Path]:
    """The other files of the character (the spec's prefix rule: the text before the first
    ``_``): every .bpet, .mpet and .apet of that prefix in the folder, sorted."""
    path = Path(path)
    name = path.name.lower()
    if "_" not in name or not name.endswith(EXTENSIONS):
        return []
    prefix = name.split("_", 1)[0] + "_"
    # Names from one listing (the entry's own type: no stat for a plain file), sorted as
    # their Paths would sort; a Path only for those kept.
    parent, own = path.parent, path.name
    names = [n for n in folder_files(parent) if _is_part(n.lower(), prefix) and n != own]
    return [parent / n for n in sorted(names, key=os.path.normcase)]


def _is_part(low: str, prefix: str) -> bool:
    return low.startswith(prefix) and low.endswith((".bpet", ".mpet", ".apet"))


def siblings(path: Path) -> list[Path]:
    """The files a load of ``path`` reads besides it (with no options): for a skeleton
    (``.bpet``) its character's parts and motions, and for every file of the unit the
    textures (and their ``_mask`` companions) found beside it. So batch converts each
    character once, from its skeleton, with its textures. Shared textures found up the
    folder tree are not claimed: other models use them too."""
    parts = character_parts(Path(path))
    return parts + [t for t in _textures_beside([Path(path), *parts]) if t not in parts]


def character_parts(path: Path) -> list[Path]:
    """The part and motion files a plain load of ``path`` assembles: for a skeleton
    (``.bpet``) its character's .mpet and .apet files; other files stand alone."""
    if Path(path).suffix.lower() != ".bpet":
        return []
    return [p for p in character_files(path) if p.suffix.lower() != ".bpet"]


def _textures_beside(files: list[Path]) -> list[Path]:
    found: list[Path] = []
    for f in files:
        try:
            doc = read(read_regular(f), Context(f))
        except (OSError, FormatError):
            continue
        finder = TextureFinder(f.parent)
        for t in doc.textures:
            hit = finder.find(t.name)
            if hit is None or hit.parent != f.parent:
                continue
            for p in (hit, finder.mask_for(hit)):
                if p is not None and p not in found:
                    found.append(p)
    return found


def path_option(ctx: Context, name: str) -> list[Path]:
    """An option that takes one path or several, as a list."""
    given = ctx.opt(name, []) or []
    return [Path(p) for p in ([given] if isinstance(given, str | Path) else given)]


def part_paths(ctx: Context) -> list[Path]:
    # ``parts``: the API spelling of ``with`` (a Python keyword).
    paths = path_option(ctx, "with") + path_option(ctx, "parts")
    if ctx.path is None:
        return paths
    if ctx.opt("character", False):
        found = character_files(ctx.path)
    elif not paths and not ctx.opt("no_parts", False):
        found = character_parts(ctx.path)
    else:
        found = []
    return paths + [p for p in found if p not in paths]
