""":class:`PtxDocument` -> PTX bytes, and the benchmark sample."""

from __future__ import annotations

import numpy as np

from ...errors import CorruptDataError
from ...registry import Context
from .document import PtxDocument
from .layout import FMT, HEADER, HEADER_SIZE


def write(doc: PtxDocument, ctx: Context | None = None) -> bytes:
    px = np.ascontiguousarray(doc.pixels, dtype=np.uint8)
    if px.shape != (doc.height, doc.width, doc.bpp // 8):
        msg = "pixel array does not match the header"
        raise CorruptDataError(FMT, msg, field="pixels",
                               expected=(doc.height, doc.width, doc.bpp // 8), actual=px.shape)
    size = HEADER_SIZE + px.size + len(doc.trailing)
    length = size if doc.chunk_length is None else doc.chunk_length
    return (HEADER.pack(doc.chunk_id, length, doc.width, doc.height, doc.bpp) + px.tobytes()
            + doc.trailing)


