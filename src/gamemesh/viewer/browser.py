"""``gamemesh view DIR``: a folder browser. The first page is a grid of every model under DIR
with its thumbnail, a filter, and grouping by folder, kind or format; a click opens the usual
viewer page for that model at ``/m/N/`` (converted on first view), which links back.

The routing stays a lookup, never a path join: N indexes the list made when the server
started, and the rest of the URL is looked up in that model's own table (the same table the
one-file viewer serves), so nothing but the listed files can be reached. Only files whose real
path lies inside DIR are listed: a symlink out of DIR is not followed.

Thumbnails are rendered once per file version (path, size, modification time, options) and kept
as PNG files in the user's cache folder, so a second visit shows the grid at once. Converted
models are kept in memory up to a bound, least recently used first out; each model has its own
lock, so a slow conversion holds up only the requests for that model.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..registry import by_extension
from .server import Resource, ViewerServer, ViewModel, _Handler, prepare, routes

__all__ = ["FolderServer", "ModelEntry", "find_models", "thumbnail_cache_dir"]

MAX_MODELS = 20000
# Converted models kept in memory (their GLB and textures), least recently viewed out first.
MAX_CACHED_MODELS = 16
MAX_CACHED_BYTES = 512 << 20
THUMB_SIZE = 192
_MODEL_PATH = re.compile(r"^/m/(\d{1,6})(/.*)$")
_THUMB_PATH = re.compile(r"^/thumbs/(\d{1,6})\.png$")
# Files that are only ever parts of another file's model, or not models at all.
_NOT_MODELS = {"image", "ptx"}
# Native kinds (``info``'s ``kind``) that hold no model of their own: a texture or animation
# file whose unit's model is not beside it, a PET motion file.
_PART_KINDS = {"texture", "animation", "header-only", "apet"}
# Files larger than this are taken for models without reading them to ask.
_KIND_READ_LIMIT = 32 << 20


@dataclass(frozen=True)
class ModelEntry:
    path: Path
    rel: str
    folder: str
    format: str
    kind: str
    size: int

    def to_dict(self, index: int) -> dict[str, Any]:
        return {"index": index, "path": self.rel, "folder": self.folder, "format": self.format,
                "kind": self.kind, "size": self.size}


def _inside(root: Path, p: Path) -> bool:
    """``p`` is a regular file whose real path (links resolved) lies inside ``root``."""
    try:
        real = p.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    return real.is_relative_to(root) and real.is_file()


def find_models(root: Path, limit: int = MAX_MODELS) -> list[Path]:
    """Every file under ``root`` a format claims by its extension, without the files another
    listed file reads as its siblings (a Papa unit's textures and animations) and without
    files that lead out of ``root`` through a symlink; sorted."""
    root = root.resolve()
    found: list[Path] = []
    for p in sorted(root.rglob("*")):
        spec = by_extension(p)
        if spec is None or spec.name in _NOT_MODELS or not _inside(root, p):
            continue
        found.append(p)
        if len(found) >= limit:
            break
    parts: set[Path] = set()
    for p in found:
        spec = by_extension(p)
        if spec is not None and spec.siblings is not None:
            try:
                parts.update(spec.siblings(p))
            except (OSError, FormatError):  # a damaged unit lists nothing; its view will say
                continue
    return [p for p in found if p not in parts]


def _kind(path: Path, fmt: str) -> str:
    """The file's own kind when its format names one (``model``, ``texture``...), else
    ``model``; unreadable files stay listed (their page says why)."""
    from ..api import read_native
    from ..registry import by_name

    spec = by_name(fmt)
    if spec.info is None or spec.read is None:
        return "model"
    try:
        if path.stat().st_size > _KIND_READ_LIMIT:
            return "model"
        kind = spec.info(read_native(path, fmt)).get("kind")
    except (OSError, ValueError):
        return "model"
    # The kind's words, without an explanation in brackets (PMF: "piece model (rigid ...)").
    return str(kind).split(" (")[0] if kind else "model"


def catalogue(root: Path) -> list[ModelEntry]:
    """The models to list: :func:`find_models` without files whose own kind holds no model
    (an orphan texture, an animation-only file)."""
    out = []
    for p in find_models(root):
        spec = by_extension(p)
        assert spec is not None
        kind = _kind(p, spec.name)
        if kind in _PART_KINDS:
            continue
        rel = p.relative_to(root).as_posix()
        out.append(ModelEntry(p, rel, rel.rpartition("/")[0] or ".", spec.name, kind,
                              p.stat().st_size))
    return out


def thumbnail_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/gamemesh/thumbnails`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gamemesh" / "thumbnails"


def _listing(root: Path) -> bytes:
    title = html.escape(root.name or str(root))
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gamemesh: {title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/viewer.css"></head>
<body class="browser"><main>
<h1>{html.escape(str(root))}</h1>
<div class="controls">
<input id="filter" type="search" placeholder="filter by name, folder, format, kind"
 aria-label="filter">
<label>group by <select id="group" aria-label="group by">
<option value="folder">folder</option><option value="kind">kind</option>
<option value="format">format</option></select></label>
<span id="shown"></span></div>
<div id="groups"></div></main>
<script type="module" src="/static/browser.js"></script></body></html>
"""
    return page.encode()


class _FolderHandler(_Handler):
    folder: FolderServer

    def _lookup(self, path: str) -> Resource | None:
        thumb = _THUMB_PATH.match(path)
        if thumb is not None:
            return self.folder.thumbnail(int(thumb.group(1)))
        hit = _MODEL_PATH.match(path)
        if hit is None:
            return self.table.get(path)
        return self.folder.resource(int(hit.group(1)), hit.group(2))


class _Cache:
    """Converted models by index, bounded in count and bytes, least recently used out first;
    one lock per model so conversions of different models run in parallel."""

    def __init__(self, max_models: int, max_bytes: int) -> None:
        self.max_models, self.max_bytes = max_models, max_bytes
        self._tables: OrderedDict[int, dict[str, Resource]] = OrderedDict()
        self._guard = threading.Lock()  # held only to look up or store, never to convert
        self._locks: dict[int, threading.Lock] = {}

    def lock(self, index: int) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(index, threading.Lock())

    def get(self, index: int) -> dict[str, Resource] | None:
        with self._guard:
            table = self._tables.get(index)
            if table is not None:
                self._tables.move_to_end(index)
            return table

    def put(self, index: int, table: dict[str, Resource]) -> None:
        with self._guard:
            self._tables[index] = table
            self._tables.move_to_end(index)
            while len(self._tables) > 1 and (len(self._tables) > self.max_models
                                             or self.bytes > self.max_bytes):
                self._tables.popitem(last=False)

    @property
    def bytes(self) -> int:
        return sum(len(r.body) for t in self._tables.values() for r in t.values())

    def __len__(self) -> int:
        return len(self._tables)


class FolderServer(ViewerServer):
    """Serves the grid of models under ``root`` and each one's viewer page on 127.0.0.1."""

    def __init__(self, root: Path, port: int = 0, quiet: bool = True,
                 from_format: str | None = None, *, cache_dir: Path | None = None,
                 max_cached_models: int = MAX_CACHED_MODELS,
                 max_cached_bytes: int = MAX_CACHED_BYTES, **options: Any) -> None:
        self.root = root.resolve()
        self.entries = catalogue(self.root)
        self.options = options
        self.from_format = from_format
        self.cache_dir = cache_dir if cache_dir is not None else thumbnail_cache_dir()
        self.cache = _Cache(max_cached_models, max_cached_bytes)
        table = routes(ViewModel("", b"", {}))
        for k in ("/model.glb", "/api/info.json"):
            table.pop(k, None)
        table["/"] = table["/index.html"] = Resource(_listing(self.root),
                                                     "text/html; charset=utf-8")
        table["/api/models.json"] = Resource(json.dumps(
            [e.to_dict(i) for i, e in enumerate(self.entries)]).encode(), "application/json")
        super().__init__(ViewModel("", b"", {}), port=port, quiet=quiet,
                         handler=type("Handler", (_FolderHandler,),
                                      {"table": table, "quiet": quiet, "folder": self}))

    @property
    def models(self) -> list[Path]:
        return [e.path for e in self.entries]

    def resource(self, index: int, rest: str) -> Resource | None:
        if not 0 <= index < len(self.entries):
            return None
        table = self.cache.get(index)
        if table is None:
            with self.cache.lock(index):  # one conversion per model, however many requests
                table = self.cache.get(index)
                if table is None:
                    table = self._convert(self.entries[index].path)
                    self.cache.put(index, table)
        return table.get(rest)

    def _convert(self, path: Path) -> dict[str, Resource]:
        try:
            model = prepare(path, self.from_format, **self.options)
        except (FormatError, OSError, ValueError) as e:
            msg = f"<!doctype html><title>error</title><p>{html.escape(path.name)}: " \
                  f"{html.escape(str(e))}</p><p><a href=\"/\">back to the list</a></p>"
            page = Resource(msg.encode(), "text/html; charset=utf-8")
            return {"/": page, "/index.html": page}
        table = routes(model)
        # The page's assets are served from the top table; keep only this model's own data.
        return {k: v for k, v in table.items() if not k.startswith("/static/")}

    def thumbnail(self, index: int) -> Resource | None:
        """The model's thumbnail PNG, rendered once per file version and kept on disk."""
        if not 0 <= index < len(self.entries):
            return None
        entry = self.entries[index]
        target = self.cache_dir / f"{self._thumb_key(entry)}.png"
        if target.is_file():
            return Resource(target.read_bytes(), "image/png")
        with self.cache.lock(-1 - index):
            if target.is_file():
                return Resource(target.read_bytes(), "image/png")
            png = self._render(entry)
            if png is None:
                return None
            from ..fileio import write_files

            # A read-only cache: serve it anyway, render again next time.
            with contextlib.suppress(OSError):
                write_files(target.parent, {target.name: png})
            return Resource(png, "image/png")

    def _thumb_key(self, entry: ModelEntry) -> str:
        st = entry.path.stat()
        key = json.dumps([str(entry.path), st.st_size, st.st_mtime_ns, THUMB_SIZE,
                          self.from_format, sorted(self.options.items())], default=str)
        return hashlib.sha256(key.encode()).hexdigest()[:32]

    def _render(self, entry: ModelEntry) -> bytes | None:
        from ..api import load
        from .thumbnail import thumbnail_png

        try:
            scene = load(entry.path, self.from_format, **self.options)
            return thumbnail_png(scene, size=THUMB_SIZE)
        except (FormatError, OSError, ValueError):
            return None
