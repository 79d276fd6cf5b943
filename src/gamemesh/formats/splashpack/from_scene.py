"""Scene -> a SPLASHPACK document of the version asked for (``v1/from_scene.py`` for version 1,
``modern/from_scene.py`` for 20..26), and a document -> its files (the main file, and a modern
one's ``.vram`` and ``.spu`` sidecars)."""

from __future__ import annotations

from pathlib import Path

from ...registry import Context, Files
from ...scene import Scene
from .document import Document, SplashpackDocument
from .modern.from_scene import from_scene_modern
from .modern.write import write_modern, write_spu, write_vram
from .v1.from_scene import from_scene as from_scene_v1
from .v1.write import write as write_v1

__all__ = ["from_scene", "save", "write_files"]


def _wanted(ctx: Context) -> int | None:
    """1 when asked for (an explicit v1 layout asks for it too), the modern version asked for,
    else None (the modern writer's default)."""
    v = ctx.opt("splash_version")
    if v is None:
        return 1 if ctx.opt("layout") is not None else None
    return int(v)


def from_scene(scene: Scene, ctx: Context) -> Document:
    """Version 1 (layout G or H) when asked, else a modern file (21 unless asked)."""
    if _wanted(ctx) == 1:
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
