"""Pixel codecs shared by formats: PNG in and out, BCn (DXT) through Pillow, plain RGBA layouts.

Everything returns (H, W, 4) uint8 RGBA arrays; nothing loops per pixel.
"""

from __future__ import annotations

import io
import re
import struct
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ..errors import CorruptDataError

RGBA = npt.NDArray[np.uint8]

__all__ = ["MAX_IMAGE_PIXELS", "bcn_size", "decode_bcn", "decode_image", "encode_bcn",
           "encode_png", "image_pixel_limit", "to_rgba"]

# Decoded pixels an image may have (64 Mpx = 256 MiB as RGBA), as Pillow's MAX_IMAGE_PIXELS;
# ``image_pixel_limit`` (the ``max_image_pixels`` option, ``--max-image-pixels``) changes it.
MAX_IMAGE_PIXELS = 64 << 20
_PIXEL_LIMIT: ContextVar[int] = ContextVar("gamemesh_pixel_limit", default=MAX_IMAGE_PIXELS)

# The most pixels one byte of each format can honestly decode to, so a header claiming far more
# than its file holds (a 681-byte JPEG of 65535 rows, which libjpeg fills with grey) is refused
# before decoding: PNG's deflate expands at most 1032:1 and a 1-bit image packs 8 pixels a byte;
# a JPEG spends at least 1 bit on each 8x8 block's DC term; BMP and TGA run-lengths take 2 bytes
# for at most 255 and 128 pixels. Other formats get PNG's bound.
_PIXELS_PER_BYTE = {"PNG": 8256, "JPEG": 512, "BMP": 128, "TGA": 64, "DDS": 2}
_DEFAULT_PER_BYTE = 8256
_SMALL = 1 << 12  # any image this small is cheap whatever its file


@contextmanager
def image_pixel_limit(pixels: int | None) -> Iterator[None]:
    """Decode images under a limit of ``pixels`` (None: the default) within the block."""
    token = _PIXEL_LIMIT.set(MAX_IMAGE_PIXELS if pixels is None else int(pixels))
    try:
        yield
    finally:
        _PIXEL_LIMIT.reset(token)


def check_pixels(width: int, height: int, fmt: str, field: str = "size",
                 file_bytes: int | None = None, kind: str = "") -> None:
    """CorruptDataError unless ``width`` x ``height`` is within the pixel limit and, given the
    file's size, within what that many bytes of ``kind`` can decode to."""
    n = int(width) * int(height)
    limit = _PIXEL_LIMIT.get()
    what = f"{kind} image" if kind else "image"
    if n > limit:
        msg = (f"{what} of {width} x {height} pixels is over the limit (raise it with "
               "--max-image-pixels)")
        raise CorruptDataError(fmt, msg, field=field, expected=f"<= {limit} pixels", actual=n)
    if file_bytes is not None and n > _SMALL:
        most = file_bytes * _PIXELS_PER_BYTE.get(kind.upper(), _DEFAULT_PER_BYTE)
        if n > most:
            msg = (f"{what} header claims {width} x {height} pixels, more than its "
                   f"{file_bytes} bytes can hold")
            raise CorruptDataError(fmt, msg, field=field, expected=f"<= {most} pixels",
                                   actual=n)

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
    """Any image Pillow reads (PNG, JPEG, TGA, DDS, BMP) to RGBA. Its size is checked from the
    header, before any pixel is decoded (:func:`check_pixels`)."""
    kind = "image"
    try:
        # Pillow's own bomb warning would print a second line; check_pixels decides instead.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PILImage.DecompressionBombWarning)
            im = PILImage.open(io.BytesIO(data))
        with im:
            kind = im.format or "image"
            w, h = im.size
            check_pixels(w, h, fmt, f"{kind}.size", len(data), kind)
            im.load()
            return np.asarray(im.convert("RGBA"), dtype=np.uint8)
    except CorruptDataError:
        raise
    except (OSError, ValueError, SyntaxError, PILImage.DecompressionBombError,
            NotImplementedError, EOFError, struct.error, IndexError, KeyError) as e:
        # Pillow names the stream object (with its address); keep messages the same every run.
        reason = re.sub(r" <_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(e))
        msg = f"{kind} could not be decoded ({type(e).__name__}: {reason})"
        raise CorruptDataError(fmt, msg, field=f"{kind}.data") from e


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
