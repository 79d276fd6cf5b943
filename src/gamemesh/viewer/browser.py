"""``gamemesh view DIR``: a folder browser. The first page lists every model under DIR; a click
opens the usual viewer page for that model at ``/m/N/``, converted on first view and kept.

The routing stays a lookup, never a path join: N indexes the list made when the server
started, and the rest of the URL is looked up in that model's own table (the same table the
one-file viewer serves), so nothing but the listed files can be reached.
"""

from __future__ import annotations

import html
import json
import re
import threading
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..registry import by_extension
from ..scene import InvalidSceneError
from .server import Resource, ViewerServer, ViewModel, _Handler, prepare, routes

__all__ = ["FolderServer", "find_models"]

MAX_MODELS = 20000
_MODEL_PATH = re.compile(r"^/m/(\d{1,6})(/.*)$")
# Files that are only ever parts of another file's model, or not models at all.
_NOT_MODELS = {"image", "ptx"}


def find_models(root: Path, limit: int = MAX_MODELS) -> list[Path]:
    """Every file under ``root`` a format claims by its extension, without the files another
    listed file reads as its siblings (a Papa unit's textures and animations), sorted."""
    found: list[Path] = []
    for p in sorted(root.rglob("*")):
        spec = by_extension(p)
        if spec is None or spec.name in _NOT_MODELS or not p.is_file():
            continue
        found.append(p)
        if len(found) >= limit:
            break
    parts: set[Path] = set()
    for p in found:
        spec = by_extension(p)
        if spec is not None and spec.siblings is not None:
            parts.update(spec.siblings(p))
    return [p for p in found if p not in parts]


def _listing(root: Path, models: list[Path]) -> bytes:
    rows = "\n".join(
        f'<li><a href="m/{k}/">{html.escape(str(p.relative_to(root)))}</a> '
        f'<small>{p.stat().st_size:,} bytes</small></li>' for k, p in enumerate(models))
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gamemesh: {html.escape(root.name)}</title>
<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/viewer.css"></head>
<body class="browser"><main style="padding:1em;overflow:auto;height:100vh">
<h1>{html.escape(str(root))}</h1><p>{len(models)} models; click one to view it.</p>
<ol id="models">
{rows}
</ol></main></body></html>
"""
    return page.encode()


class _FolderHandler(_Handler):
    folder: FolderServer

    def _lookup(self, path: str) -> Resource | None:
        hit = _MODEL_PATH.match(path)
        if hit is None:
            return self.table.get(path)
        return self.folder.resource(int(hit.group(1)), hit.group(2))


class FolderServer(ViewerServer):
    """Serves the list of models under ``root`` and each one's viewer page on 127.0.0.1."""

    def __init__(self, root: Path, port: int = 0, quiet: bool = True,
                 from_format: str | None = None, **options: Any) -> None:
        self.root = root.resolve()
        self.models = find_models(self.root)
        self.options = options
        self.from_format = from_format
        self._cache: dict[int, dict[str, Resource]] = {}
        self._lock = threading.Lock()
        table = routes(ViewModel("", b"", {}))
        for k in ("/model.glb", "/api/info.json"):
            table.pop(k, None)
        table["/"] = table["/index.html"] = Resource(_listing(self.root, self.models),
                                                     "text/html; charset=utf-8")
        table["/api/models.json"] = Resource(json.dumps(
            [str(p.relative_to(self.root)) for p in self.models]).encode(), "application/json")
        super().__init__(ViewModel("", b"", {}), port=port, quiet=quiet,
                         handler=type("Handler", (_FolderHandler,),
                                      {"table": table, "quiet": quiet, "folder": self}))

    def resource(self, index: int, rest: str) -> Resource | None:
        if not 0 <= index < len(self.models):
            return None
        with self._lock:  # one conversion per model, however many requests race for it
            if index not in self._cache:
                self._cache[index] = self._convert(self.models[index])
            table = self._cache[index]
        return table.get(rest)

    def _convert(self, path: Path) -> dict[str, Resource]:
        try:
            model = prepare(path, self.from_format, **self.options)
        except (FormatError, InvalidSceneError, OSError) as e:
            msg = f"<!doctype html><title>error</title><p>{html.escape(path.name)}: " \
                  f"{html.escape(str(e))}</p><p><a href=\"/\">back to the list</a></p>"
            page = Resource(msg.encode(), "text/html; charset=utf-8")
            return {"/": page, "/index.html": page}
        table = routes(model)
        # The page's assets are served from the top table; keep only this model's own data.
        return {k: v for k, v in table.items() if not k.startswith("/static/")}
