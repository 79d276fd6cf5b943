"""The PTX document: one texture chunk, every field kept for a byte-exact rewrite."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .layout import CHUNK_ID


@dataclass
class PtxDocument:
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


