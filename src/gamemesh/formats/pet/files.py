"""The files around a PET model: the other files of its character (the name-prefix rule, §B.1),
and its textures, found case-insensitively beside the model, in ``--texture-dir`` folders and,
walking up the tree, in the shared texture folders the public importers search (§B.4)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import FormatError
from ...registry import Context
from ...safeio import folder_entries, folder_files, read_regular
from .layout import EXTENSIONS, FLAG_CHARS
from .read import read

# Shared folders the public importers search above the model (#1/#3/#7).
SHARED_DIRS = ("z_common", "map_source", "misc", "effect", "texture_dds", "npc", "ppl", "skybox")


_WALK_UP = 6


_MAX_ENTRIES = 20000  # a bound on the files indexed per search root

# Folder listings shared by every load: (the folder's mtime, its files by lower-case name, its
# sub-folders, those of them named as a shared texture folder), as path strings (a Path is
# made only for a file that is used: a big folder such as /tmp, met walking up the tree,
# would otherwise cost a Path per entry per load). A listing is reused while the folder's
# mtime is unchanged, and kept only when that mtime was over 2 s old when listed (a folder
# changed again within its timestamp's granularity would look unchanged: the rule git uses
# for its index).
_LISTINGS: dict[tuple[Path, str], tuple[int, dict[str, str], list[str], list[str]]] = {}
_MAX_LISTINGS = 4096
_RACY_NS = 2_000_000_000


def _scan(folder: Path) -> tuple[dict[str, str], list[str], list[str]]:
    """The files (by lower-case name, first wins), sub-folders and shared texture folders
    (:data:`SHARED_DIRS`) of ``folder``."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return {}, [], []
    # As given (the listing's paths are built on it) and absolute (after a chdir a relative
    # folder names another one).
    key = (folder, os.path.abspath(folder))
    hit = _LISTINGS.get(key)
    if hit is not None:
        if hit[0] == mtime:
            return hit[1], hit[2], hit[3]
        _LISTINGS.pop(key, None)
    names, sub_names = folder_entries(folder, str.lower)
    # Full paths as scandir's entries spell them (the folder as given, then the name).
    base = os.fspath(folder)
    files = {k: os.path.join(base, n) for k, n in names.items()}
    subs = [os.path.join(base, n) for n in sub_names]
    shared = [os.path.join(base, n) for n in sub_names if n.lower() in SHARED_DIRS]
    if time.time_ns() - mtime > _RACY_NS:
        if len(_LISTINGS) >= _MAX_LISTINGS:
            _LISTINGS.clear()
        _LISTINGS[key] = (mtime, files, subs, shared)
    return files, subs, shared


@dataclass
class TextureFinder:
    """Case-insensitive file lookup with one directory listing per folder."""

    model_dir: Path | None
    extra_dirs: list[Path] = field(default_factory=list)
    _listing: dict[Path, dict[str, str]] = field(default_factory=dict)
    _trees: dict[Path, dict[str, str]] = field(default_factory=dict)
    _roots: list[Path] | None = None

    def _list(self, folder: Path) -> dict[str, str]:
        if folder not in self._listing:
            self._listing[folder] = _scan(folder)[0]
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


# Walks up from a model's folder, per (folder, working folder): each folder walked with its
# mtime, and the shared texture folders found. A walk is reused while every folder in it
# keeps that mtime (the listings' rule, a stat each rather than a listing lookup, a Path
# and a comparison), and kept only when none was changed within the last 2 s.
_WALKS: dict[tuple[Path, str], tuple[list[tuple[str, int]], list[Path]]] = {}


def _mtime(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


def _walk_up(model_dir: Path) -> list[Path]:
    """The shared texture folders in ``model_dir`` and up to :data:`_WALK_UP` - 1 folders
    above it, nearest first (each folder's sorted)."""
    key = (model_dir, os.getcwd())
    hit = _WALKS.get(key)
    if hit is not None and all(_mtime(f) == m for f, m in hit[0]):
        return list(hit[1])
    walked: list[tuple[str, int]] = []
    roots: list[Path] = []
    keep = True
    now = time.time_ns()
    d = model_dir
    for _ in range(_WALK_UP):
        m = _mtime(str(d))
        if m is None or now - m <= _RACY_NS:
            keep = False
        else:
            walked.append((str(d), m))
        shared = _shared_of(d, m) if m is not None else []
        if shared:
            roots += sorted(Path(p) for p in shared)
        if d.parent == d:
            break
        d = d.parent
    if keep:
        if len(_WALKS) >= _MAX_LISTINGS:
            _WALKS.clear()
        _WALKS[key] = (walked, roots)
    return list(roots)


# The shared texture folders of folders met walking up (``_shared_of``), kept as the listings.
_SHARED: dict[tuple[Path, str], tuple[int, list[str]]] = {}


def _shared_of(folder: Path, mtime: int) -> list[str]:
    """:func:`_scan`'s shared texture folders of ``folder`` (whose mtime is ``mtime``) without
    listing it in full: from its kept listing when that is current, else from a ``scandir``
    that looks only at entries with a shared folder's name (kept by the listings' rule). A
    big folder on the walk up that changes all the time (``/tmp``) is too new to be kept, and
    indexing all its entries on every load cost more than the rest of the texture lookup."""
    key = (folder, os.path.abspath(folder))
    hit = _LISTINGS.get(key)
    if hit is not None and hit[0] == mtime:
        return hit[3]
    kept = _SHARED.get(key)
    if kept is not None and kept[0] == mtime:
        return kept[1]
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
    if time.time_ns() - mtime > _RACY_NS:
        if len(_SHARED) >= _MAX_LISTINGS:
            _SHARED.clear()
        _SHARED[key] = (mtime, shared)
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


def part_paths(ctx: Context) -> list[Path]:
    given = ctx.opt("with", []) or []
    paths = [Path(p) for p in ([given] if isinstance(given, str | Path) else given)]
    given_alias = ctx.opt("parts", []) or []  # the API spelling (``with`` is a keyword)
    paths += [Path(p) for p in ([given_alias] if isinstance(given_alias, str | Path)
                                else given_alias)]
    if ctx.path is None:
        return paths
    if ctx.opt("character", False):
        found = character_files(ctx.path)
    elif not paths and not ctx.opt("no_parts", False):
        found = character_parts(ctx.path)
    else:
        found = []
    return paths + [p for p in found if p not in paths]
