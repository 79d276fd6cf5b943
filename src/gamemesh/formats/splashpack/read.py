"""Bytes -> a SPLASHPACK document of either generation, chosen by the version after the magic.

Version 1 (every layout B..H writes 1) goes to ``v1/read.py``, which finds the layout by the
file's own arithmetic; the versions ``modern/read.py`` knows (20..26, and the PS1Godot fork's
numbers, which it refuses by name) go there with the sidecars; any other version is refused by
the version-1 reader, whose message names what it is.
"""

from __future__ import annotations

from ...registry import Context
from .document import Document
from .layout import MAGIC
from .modern.read import is_modern, read_modern_file
from .v1.read import detect_layout
from .v1.read import sniff as sniff_v1

__all__ = ["read", "sniff"]


def sniff(prefix: bytes) -> bool:
    if len(prefix) < 8 or prefix[:2] != MAGIC:
        return False
    return is_modern(prefix) or sniff_v1(prefix)


def read(data: bytes, ctx: Context) -> Document:
    """Version 1 (layouts B..H, found by arithmetic) or 20..26 (with the sidecars)."""
    if is_modern(bytes(data[:4])):
        return read_modern_file(bytes(data), ctx)
    return detect_layout(bytes(data))
