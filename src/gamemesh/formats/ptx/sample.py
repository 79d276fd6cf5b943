"""The PTX benchmark sample: a gradient texture of a given size."""

from __future__ import annotations

import math

import numpy as np

from .document import PtxDocument
from .layout import HEADER_SIZE
from .write import write


def make_sample(size: int) -> bytes:
    """A square 32 bpp gradient texture of about ``size`` bytes."""
    side = max(1, int(math.sqrt(max(size - HEADER_SIZE, 4) / 4)))
    yy, xx = np.mgrid[0:side, 0:side]
    px = np.empty((side, side, 4), dtype=np.uint8)
    px[..., 0] = (xx * 255 // max(1, side - 1)).astype(np.uint8)
    px[..., 1] = (yy * 255 // max(1, side - 1)).astype(np.uint8)
    px[..., 2] = ((xx ^ yy) & 0xFF).astype(np.uint8)
    px[..., 3] = 255
    return write(PtxDocument(width=side, height=side, bpp=32, pixels=px))
