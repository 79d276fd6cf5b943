"""A SPLASHPACK document -> the bytes of its main file, by its generation (``v1/write.py`` or
``modern/write.py``; a modern document's sidecars are ``from_scene.write_files``)."""

from __future__ import annotations

from ...registry import Context
from .document import Document, ModernDocument
from .modern.write import write_modern
from .v1.write import write as write_v1

__all__ = ["write"]


def write(doc: Document, ctx: Context | None = None) -> bytes:
    if isinstance(doc, ModernDocument):
        return write_modern(doc, ctx)
    return write_v1(doc)
