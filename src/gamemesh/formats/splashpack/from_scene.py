"""Scene -> a SPLASHPACK document of the version asked for (``v1/from_scene.py`` for version 1,
``modern/from_scene.py`` for 20..26), and a document -> its files (the main file, and a modern
one's ``.vram`` and ``.spu`` sidecars)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...registry import Context, Files
from ...scene import Scene
from .document import Document, SplashpackDocument
from .modern.from_scene import from_scene_modern
from .modern.layout import VERSIONS
from .modern.write import write_modern, write_spu, write_vram
from .v1.from_scene import from_scene as from_scene_v1
from .v1.write import write as write_v1

__all__ = ["from_scene", "save", "write_files"]


def source_pack(scene: Scene) -> dict[str, Any] | None:
    """The SPLASHPACK facts (version, layout) of the file a scene was read from: the scene's own
    extras (a read, or glTF written from one), else those the Blender extension keeps on an
    imported object (``extras.gamemesh.extras``, which its glTF export carries on the node)."""
    found: list[Any] = [scene.extras]
    found += [_dig(n.extras, "gamemesh", "extras") for n in scene.nodes if n.extras]
    for ex in found:
        if isinstance(ex, dict) and ex.get("format") == "splashpack":
            info = ex.get("splashpack")
            v = info.get("version") if isinstance(info, dict) else None
            if isinstance(v, int) and not isinstance(v, bool) and (v == 1 or v in VERSIONS):
                return info
    return None


def _dig(d: Any, *keys: str) -> Any:
    for k in keys:
        d = d.get(k) if isinstance(d, dict) else None
    return d


def _wanted(scene: Scene, ctx: Context) -> tuple[int | None, dict[str, Any] | None]:
    """The version to write and, when it comes from the SPLASHPACK the scene was read from,
    the options that say so: the options' own version first (an explicit v1 layout asks for
    version 1), else the source file's version and layout, else None (the modern default)."""
    v = ctx.opt("splash_version")
    if v is not None:
        return int(v), None
    if ctx.opt("layout") is not None:
        return 1, None
    src = source_pack(scene)
    if src is None:
        return None, None
    if src["version"] == 1:
        lay = src.get("layout")
        # Only G and H are written; an older layout's scene goes to G (the seed's), as before.
        return 1, {"splash_version": 1, "layout": lay} if lay in ("G", "H") else \
            {"splash_version": 1}
    return int(src["version"]), {"splash_version": int(src["version"])}


def from_scene(scene: Scene, ctx: Context) -> Document:
    """Version 1 (layout G or H) when asked or when the scene came from a version-1 file, else
    a modern file (the source file's version, else 21)."""
    version, chosen = _wanted(scene, ctx)
    if chosen is not None:
        lay = f" layout {chosen['layout']}" if "layout" in chosen else ""
        ctx.note("splashpack.source_version", f"written as version {version}{lay}, the version "
                 "of the SPLASHPACK the scene was read from (--splash-version chooses another)",
                 "info")
        ctx = Context(ctx.path, {**ctx.options, **chosen}, ctx.notes)
    if version == 1:
        return from_scene_v1(scene, ctx)
    return from_scene_modern(scene, ctx)


def save(scene: Scene, ctx: Context) -> Files:
    """The main file and, for a modern version, its ``.vram`` sidecar beside it."""
    name = ctx.path.name if ctx.path else "scene.splashpack"
    doc = from_scene(scene, ctx)
    if isinstance(doc, SplashpackDocument):
        return {name: write_v1(doc)}
    return write_files(doc, Context(Path(name), ctx.options, ctx.notes))


def write_files(doc: Document, ctx: Context) -> Files:
    """A native document as files: the main file and, for a modern version, the ``.vram`` and
    ``.spu`` sidecars it holds (``write_native`` uses this, so a rewrite keeps them too)."""
    name = ctx.path.name if ctx.path else "scene.splashpack"
    if isinstance(doc, SplashpackDocument):
        return {name: write_v1(doc)}
    files = {name: write_modern(doc, ctx)}
    stem = name.rsplit(".", 1)[0] if "." in name else name
    if doc.vram is not None:
        files[f"{stem}.vram"] = write_vram(doc.vram)
    if doc.spu is not None:
        files[f"{stem}.spu"] = write_spu(doc.spu)
    return files
