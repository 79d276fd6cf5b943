"""`gamemesh info` facts of a SPLASHPACK document, by its generation (``v1/info.py`` or
``modern/info.py``)."""

from __future__ import annotations

from typing import Any

from .document import Document, ModernDocument
from .modern.info import modern_info
from .v1.info import info as info_v1

__all__ = ["info"]


def info(doc: Document) -> dict[str, Any]:
    if isinstance(doc, ModernDocument):
        return modern_info(doc)
    return info_v1(doc)
