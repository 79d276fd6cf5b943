"""Pixel codecs shared by formats: PNG in and out, BCn (DXT) through Pillow, plain RGBA layouts.

Everything returns (H, W, 4) uint8 RGBA arrays; nothing loops per pixel.
"""

from __future__ import annotations

import io
import re
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ..errors import CorruptDataError

RGBA = npt.NDArray[np.uint8]

__all__ = ["bcn_size", "decode_bcn", "decode_image", "encode_bcn", "encode_png", "to_rgba"]

# Pillow's "bcn" decoder takes 1 (DXT1), 2 (DXT3) or 3 (DXT5).
_BLOCK_BYTES = {1: 8, 2: 16, 3: 16}


def encode_png(pixels: npt.ArrayLike) -> bytes:
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.uint8))
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[arr.shape[2] if arr.ndim == 3 else 1]
    buf = io.BytesIO()
    # compress_level 6: a good size at a fraction of level 9's time on big atlases.
    PILImage.fromarray(arr, mode).save(buf, "PNG", compress_level=6)
    return buf.getvalue()


def decode_image(data: bytes, fmt: str = "image") -> RGBA:
    """Any image Pillow reads (PNG, JPEG, TGA, DDS, BMP) to RGBA."""
    try:
        with PILImage.open(io.BytesIO(data)) as im:
            im.load()
            # Bound decompression bombs by what the file could plausibly hold.
            return np.asarray(im.convert("RGBA"), dtype=np.uint8)
    except (OSError, ValueError, SyntaxError, PILImage.DecompressionBombError) as e:
        # Pillow names the stream object (with its address); keep messages the same every run.
        reason = re.sub(r" <_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(e))
        msg = f"image could not be decoded ({reason})"
        raise CorruptDataError(fmt, msg) from e


def bcn_size(width: int, height: int, n: int) -> int:
    return max(1, (width + 3) // 4) * max(1, (height + 3) // 4) * _BLOCK_BYTES[n]


def decode_bcn(data: bytes, width: int, height: int, n: int) -> RGBA:
    """DXT1 (n=1), DXT3 (n=2) or DXT5 (n=3) blocks to RGBA. Sizes that are not multiples of 4
    are decoded on the padded block grid and cropped."""
    pw, ph = max(4, (width + 3) // 4 * 4), max(4, (height + 3) // 4 * 4)
    need = bcn_size(width, height, n)
    if len(data) < need:
        raise CorruptDataError(format="bcn", message="texture data too short",
                               expected=f"{need} bytes", actual=len(data))
    im = PILImage.frombytes("RGBA", (pw, ph), bytes(data[:need]), "bcn", n)
    # tobytes + frombuffer is several times faster than np.asarray(im) on Pillow 13.
    px = np.frombuffer(bytearray(im.tobytes()), dtype=np.uint8).reshape(ph, pw, 4)
    if (pw, ph) == (width, height):
        return px
    return px[:height, :width].copy()


def encode_bcn(pixels: npt.ArrayLike, n: int) -> bytes:
    """RGBA to DXT1/3/5 blocks through Pillow's DDS writer (the payload after the header)."""
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.uint8))
    h, w = arr.shape[:2]
    pw, ph = max(4, (w + 3) // 4 * 4), max(4, (h + 3) // 4 * 4)
    if (pw, ph) != (w, h):
        arr = np.pad(arr, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")
    buf = io.BytesIO()
    PILImage.fromarray(arr, "RGBA").save(buf, "DDS", pixel_format={1: "DXT1", 2: "DXT3",
                                                                 3: "DXT5"}[n])
    raw = buf.getvalue()
    return raw[128:128 + bcn_size(w, h, n)]


def to_rgba(arr: npt.NDArray[Any], order: str = "RGBA") -> RGBA:
    """Reorder (H, W, C) channels named by ``order`` (e.g. "BGRA", "RGBX", "R") into RGBA."""
    a = np.asarray(arr, dtype=np.uint8)
    out = np.zeros((*a.shape[:2], 4), dtype=np.uint8)
    out[..., 3] = 255
    for i, ch in enumerate(order.upper()):
        if ch in "RGBA":
            out[..., "RGBA".index(ch)] = a[..., i]
    if order.upper() in ("R", "L"):
        out[..., 1] = out[..., 2] = out[..., 0]
    return out
