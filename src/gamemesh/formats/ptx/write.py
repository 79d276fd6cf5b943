""":class:`PtxDoc` -> PTX bytes, and the benchmark sample."""

from __future__ import annotations

import math

import numpy as np

from ...errors import CorruptDataError
from ...registry import Context
from .layout import FMT, HEADER, HEADER_SIZE, PtxDoc


def write(doc: PtxDoc, ctx: Context | None = None) -> bytes:
    px = np.ascontiguousarray(doc.pixels, dtype=np.uint8)
    if px.shape != (doc.height, doc.width, doc.bpp // 8):
        msg = "pixel array does not match the header"
        raise CorruptDataError(FMT, msg, field="pixels",
                               expected=(doc.height, doc.width, doc.bpp // 8), actual=px.shape)
    size = HEADER_SIZE + px.size + len(doc.trailing)
    length = size if doc.chunk_length is None else doc.chunk_length
    return (HEADER.pack(doc.chunk_id, length, doc.width, doc.height, doc.bpp) + px.tobytes()
            + doc.trailing)


def make_sample(size: int) -> bytes:
    """A square 32 bpp gradient texture of about ``size`` bytes."""
    side = max(1, int(math.sqrt(max(size - HEADER_SIZE, 4) / 4)))
    yy, xx = np.mgrid[0:side, 0:side]
    px = np.empty((side, side, 4), dtype=np.uint8)
    px[..., 0] = (xx * 255 // max(1, side - 1)).astype(np.uint8)
    px[..., 1] = (yy * 255 // max(1, side - 1)).astype(np.uint8)
    px[..., 2] = ((xx ^ yy) & 0xFF).astype(np.uint8)
    px[..., 3] = 255
    return write(PtxDoc(width=side, height=side, bpp=32, pixels=px))
