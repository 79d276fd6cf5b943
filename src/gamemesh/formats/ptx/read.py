"""PTX bytes -> :class:`PtxDocument`."""

from __future__ import annotations

import numpy as np

from ...binary import Reader
from ...errors import UnsupportedVersionError
from ...registry import Context
from .document import PtxDocument
from .layout import BPP, HEADER, HEADER_SIZE, MAX_SIDE


def sniff(prefix: bytes) -> bool:
    """No magic: a plausible header (sizes, 24/32 bpp, a length that covers the pixels)."""
    if len(prefix) < HEADER_SIZE:
        return False
    _cid, length, w, h, bpp = HEADER.unpack_from(prefix)
    if bpp not in BPP or not (0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE):
        return False
    return bool(length >= HEADER_SIZE + w * h * (bpp // 8))


def read(data: bytes, ctx: Context) -> PtxDocument:
    r = Reader(data, "ptx")
    chunk_id = r.u16("chunk_id")
    length = r.u32("chunk_length")
    width = r.u32("width")
    height = r.u32("height")
    bpp = r.u32("bits_per_pixel")
    if bpp not in BPP:
        raise r.error(UnsupportedVersionError, "unsupported PTX pixel layout",
                      expected="24 or 32 bits per pixel", actual=bpp, field="bits_per_pixel",
                      offset=14)
    for name, v, off in (("width", width, 6), ("height", height, 10)):
        if not 0 < v <= MAX_SIDE:
            raise r.corrupt(expected=f"1..{MAX_SIDE}", actual=v, field=name, offset=off)
    ch = bpp // 8
    px = r.array(np.uint8, width * height * ch, "pixels").reshape(height, width, ch)
    trailing = r.rest()
    size = len(data)
    if length != size:
        ctx.note("ptx.chunk_length", f"chunk length {length} differs from the file size {size}; "
                 "kept as stored", "info")
    return PtxDocument(width=width, height=height, bpp=bpp, pixels=px, chunk_id=chunk_id,
                  chunk_length=None if length == size else length, trailing=trailing)
