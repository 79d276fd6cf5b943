"""Pixel codecs shared by formats: PNG in and out, BCn (DXT) through Pillow, plain RGBA layouts.

Everything returns (H, W, 4) uint8 RGBA arrays; nothing loops per pixel.
"""

from __future__ import annotations

import io
import re
import struct
import warnings
import zlib
from contextlib import AbstractContextManager
from contextvars import ContextVar, Token
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ..errors import CorruptDataError, LimitError

if TYPE_CHECKING:
    from ..scene.model import Image

RGBA = npt.NDArray[np.uint8]

__all__ = ["MAX_IMAGE_PIXELS", "bcn_size", "decode_bcn", "decode_image", "encode_bcn",
           "encode_png", "image_pixel_limit", "image_rgba", "to_rgba"]

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


class _PixelLimit:
    """The block of :func:`image_pixel_limit`: a plain context manager (a generator-based one
    cost a twentieth of a small file's read) that leaves the variable alone when it already
    holds the value."""

    __slots__ = ("token", "value")

    def __init__(self, value: int) -> None:
        self.value = value
        self.token: Token[int] | None = None

    def __enter__(self) -> None:
        if _PIXEL_LIMIT.get() != self.value:
            self.token = _PIXEL_LIMIT.set(self.value)

    def __exit__(self, *exc: object) -> None:
        if self.token is not None:
            _PIXEL_LIMIT.reset(self.token)
            self.token = None


def image_pixel_limit(pixels: int | None) -> AbstractContextManager[None]:
    """Decode images under a limit of ``pixels`` (None: the default) within the block."""
    return _PixelLimit(MAX_IMAGE_PIXELS if pixels is None else int(pixels))


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


_PNG_COLOR = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type (grey, grey+alpha, RGB, RGBA)


def encode_png(pixels: npt.ArrayLike) -> bytes:
    """8-bit PNG of (H, W) or (H, W, C) pixels, zlib level 1, every row with one filter: "up"
    or "none", whichever packs a sample stripe of the image smaller. Written here rather than
    by Pillow, whose adaptive filters at level 6 took several times as long (GLB writing of
    textured files was mostly PNG encoding): smooth images pack well with "up", palette art
    (PSX pages) with "none"."""
    arr = np.asarray(pixels, dtype=np.uint8)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    h, w, c = arr.shape
    rows = np.ascontiguousarray(arr).reshape(h, w * c)
    mid = h // 2
    sample = (max(0, mid - 16), min(h, mid + 16))
    filt = min((0, 2), key=lambda f: len(zlib.compress(_png_rows(rows, *sample, f).data, 1)))
    # Rows are framed and compressed ~1 MB at a time, so no second copy of the whole image
    # exists: peak memory stays near pixels + PNG.
    z = zlib.compressobj(1)
    step = max(1, (1 << 20) // (w * c + 1))
    parts = [z.compress(_png_rows(rows, y, min(h, y + step), filt).data)
             for y in range(0, h, step)]
    parts.append(z.flush())
    ihdr = struct.pack(">IIBBBBB", w, h, 8, _PNG_COLOR[c], 0, 0, 0)
    return b"".join([b"\x89PNG\r\n\x1a\n", *_png_chunk(b"IHDR", ihdr),
                     *_png_chunk(b"IDAT", b"".join(parts)), *_png_chunk(b"IEND", b"")])


def _png_rows(rows: RGBA, y0: int, y1: int, filt: int) -> RGBA:
    """Rows y0..y1 framed for the IDAT stream: a filter byte, then the filtered bytes (filter
    2, "up": each byte minus the one above it, mod 256; the row above the image is zeros)."""
    out = np.empty((y1 - y0, rows.shape[1] + 1), dtype=np.uint8)
    out[:, 0] = filt
    if filt == 0 or y1 == y0:
        out[:, 1:] = rows[y0:y1]
        return out
    if y0 == 0:
        out[0, 1:] = rows[0]
    else:
        np.subtract(rows[y0], rows[y0 - 1], out=out[0, 1:])
    np.subtract(rows[y0 + 1:y1], rows[y0:y1 - 1], out=out[1:, 1:])
    return out


def _png_chunk(tag: bytes, body: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    return (struct.pack(">I", len(body)), tag, body,
            struct.pack(">I", zlib.crc32(body, zlib.crc32(tag))))


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
            # convert() of an image already RGBA is a full copy: skip it.
            rgba = im if im.mode == "RGBA" else im.convert("RGBA")
            return np.asarray(rgba, dtype=np.uint8)
    except CorruptDataError:
        raise
    except (OSError, ValueError, SyntaxError, PILImage.DecompressionBombError,
            NotImplementedError, EOFError, struct.error, IndexError, KeyError) as e:
        # Pillow names the stream object (with its address); keep messages the same every run.
        reason = re.sub(r" <_io\.BytesIO object at 0x[0-9a-fA-F]+>", "", str(e))
        msg = f"{kind} could not be decoded ({type(e).__name__}: {reason})"
        raise CorruptDataError(fmt, msg, field=f"{kind}.data") from e


def image_rgba(image: Image, fmt: str = "image") -> RGBA | None:
    """A scene image's RGBA pixels: ``pixels``, else its encoded bytes decoded (readers keep a
    PNG or JPEG encoded until a writer needs its pixels); None when it has neither. Bytes that
    do not decode raise :class:`CorruptDataError`."""
    if image.pixels is not None:
        return np.asarray(image.pixels, dtype=np.uint8)
    if image.data is not None:
        return decode_image(image.data, fmt)
    return None


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
    px = np.empty((ph, pw, 4), dtype=np.uint8)
    _bcn_into(px, memoryview(data)[:need], n)  # the top level, not copied
    if (pw, ph) == (width, height):
        return px
    return px[:height, :width].copy()


def _bcn_into(px: RGBA, data: bytes | memoryview, n: int) -> None:
    """Decode BCn blocks straight into ``px`` (C-contiguous (H, W, 4) uint8): Pillow's C decoder
    writes into an image that shares ``px``'s memory, so the pixels are never copied (going
    through ``frombytes`` + ``tobytes`` + a numpy buffer made three copies, and most of the time
    went to page faults on them)."""
    ph, pw = px.shape[:2]
    decoder = PILImage._getdecoder("RGBA", "bcn", (n,))
    try:
        decoder.setimage(_rgba_core(px), (0, 0, pw, ph))
        _, err = decoder.decode(data)  # any bytes-like object: no copy
    finally:
        decoder.cleanup()
    if err < 0:
        msg = f"DXT blocks could not be decoded (Pillow error {err})"
        raise CorruptDataError(format="bcn", message=msg)


def _rgba_core(px: RGBA) -> Any:
    """Pillow's core image over ``px``'s memory: what ``Image.frombuffer`` maps, without the
    Python image around it (that wrapper cost a tenth of a small texture's load)."""
    ph, pw = px.shape[:2]
    map_buffer = getattr(getattr(PILImage, "core", None), "map_buffer", None)
    if map_buffer is None:
        return PILImage.frombuffer("RGBA", (pw, ph), px, "raw", "RGBA", 0, 1).im
    return map_buffer(px, (pw, ph), "raw", 0, ("RGBA", 0, 1))


def encode_bcn(pixels: npt.ArrayLike, n: int) -> bytes:
    """RGBA to DXT1/3/5 blocks through Pillow's DDS writer (the payload after the header)."""
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.uint8))
    h, w = arr.shape[:2]
    pw, ph = max(4, (w + 3) // 4 * 4), max(4, (h + 3) // 4 * 4)
    if (pw, ph) != (w, h):
        arr = np.pad(arr, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge")
    buf = io.BytesIO()
    fourcc = {1: "DXT1", 2: "DXT3", 3: "DXT5"}[n]
    PILImage.fromarray(arr, "RGBA").save(buf, "DDS", pixel_format=fourcc)
    raw = buf.getvalue()
    # Pillow before 11.2 takes pixel_format and writes uncompressed pixels anyway: blocks read
    # from that would be noise, so the header's FourCC and the size are checked first.
    got = (raw[84:88], len(raw) - 128)
    if got != (fourcc.encode(), bcn_size(pw, ph, n)):
        msg = (f"Pillow {getattr(PILImage, '__version__', '?')}'s DDS writer did not compress "
               f"to {fourcc} (Pillow >= 11.2.1 does)")
        fmt = "dds"
        raise LimitError(fmt, msg, field="pixel_format",
                         expected=f"{fourcc}, {bcn_size(pw, ph, n)} bytes",
                         actual=f"{got[0]!r}, {got[1]} bytes")
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
