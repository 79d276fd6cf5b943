"""A SPLASHPACK document -> Scene, by its generation (``v1/to_scene.py`` or
``modern/to_scene.py``); the reverse is ``from_scene``."""

from __future__ import annotations

from ...registry import Context
from ...scene import Scene
from .document import Document, ModernDocument
from .modern.to_scene import to_scene_modern
from .v1.to_scene import to_scene as to_scene_v1

__all__ = ["to_scene"]


def to_scene(doc: Document, ctx: Context) -> Scene:
    if isinstance(doc, ModernDocument):
        return to_scene_modern(doc, ctx)
    return to_scene_v1(doc, ctx)
