"""The PTX document and its fixed header."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

# u16 chunk id, u32 chunk length, u32 width, u32 height, u32 bits per pixel.
FMT = "ptx"
HEADER = struct.Struct("<HIIII")
HEADER_SIZE = HEADER.size  # 18
CHUNK_ID = 0x0007  # what we write; readers never check it (spec b.2/b.9, [OPEN])
BPP = (24, 32)
# Praetorians textures are small; this bounds what a corrupt header may ask for.
MAX_SIDE = 16384


@dataclass
class PtxDoc:
    """One PTX file. ``pixels`` is (height, width, bpp/8) uint8 in file order: BGR or BGRA."""

    width: int
    height: int
    bpp: int
    pixels: npt.NDArray[np.uint8]
    chunk_id: int = CHUNK_ID
    # The stored chunk length; None means "the file's size" (what our writer emits).
    chunk_length: int | None = None
    trailing: bytes = b""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def channels(self) -> int:
        return self.bpp // 8

    def rgba(self) -> npt.NDArray[np.uint8]:
        """(H, W, 4) RGBA, rows in file order (so v = 0 is the first row, as in glTF)."""
        px = self.pixels
        out = np.empty((self.height, self.width, 4), dtype=np.uint8)
        out[..., 0] = px[..., 2]
        out[..., 1] = px[..., 1]
        out[..., 2] = px[..., 0]
        out[..., 3] = px[..., 3] if self.channels == 4 else 255
        return out


def info(doc: PtxDoc) -> dict[str, Any]:
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
