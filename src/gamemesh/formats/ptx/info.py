"""`gamemesh info` facts of a PTX document."""

from __future__ import annotations

from typing import Any

from .document import PtxDocument
from .layout import HEADER_SIZE


def info(doc: PtxDocument) -> dict[str, Any]:
    size = HEADER_SIZE + doc.pixels.size + len(doc.trailing)
    return {
        "format": "ptx",
        "kind": "texture",
        "layout": "BGRA" if doc.bpp == 32 else "BGR",
        "width": doc.width,
        "height": doc.height,
        "bits_per_pixel": doc.bpp,
        "chunk_id": doc.chunk_id,
        "chunk_length": size if doc.chunk_length is None else doc.chunk_length,
        "chunk_length_matches_file": doc.chunk_length in (None, size),
        "trailing_bytes": len(doc.trailing),
    }
