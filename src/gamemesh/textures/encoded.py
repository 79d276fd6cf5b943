"""PNG and JPEG files read without decoding their pixels: size, whether they carry alpha, and
whether glTF can embed the bytes as they are.

A glTF file may hold PNG and JPEG images unchanged, so a PNG or JPEG that becomes a texture need
not be decoded to RGBA and encoded again (which cost most of a small image's load, and turned a
JPEG photo into a PNG several times its size). Skipping the decode also skips the check that the
file is whole, so the structure is checked here instead, cheaply: every PNG chunk's length and
CRC-32 (zlib.crc32 runs at several GB/s) up to IEND, and every JPEG marker segment up to the
end-of-image marker (entropy-coded data is scanned for the next marker by one regular expression
in C). What this cannot see is a body whose checksums are right but whose compressed stream is
not (a file made that way on purpose, not a damaged one): such a file stays bytes, and whatever
decodes it later (a thumbnail, a PTX or Papa texture) reports it then.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass

from PIL import PngImagePlugin

from ..errors import CorruptDataError, TruncatedError
from . import MAX_IMAGE_PIXELS

__all__ = ["EncodedImage", "encoded_size", "probe_encoded"]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"

# Bit depths each PNG colour type allows (PNG spec, table 11.1).
_PNG_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_PNG_MODES = {0: "L", 2: "RGB", 3: "P", 4: "LA", 6: "RGBA"}
# cHRM values of sRGB (white point and primaries x 100000), and gAMA's 1/2.2: the colour space
# glTF assumes. Any other colour-space chunk, an embedded ICC profile, non-square pixels or an
# animation (APNG) is a feature glTF says images should not have (the Khronos validator warns
# on each): such a PNG is decoded and written again as a plain one, as before.
_SRGB_CHRM = struct.pack(">8I", 31270, 32900, 64000, 33000, 30000, 60000, 15000, 6000)
_SRGB_GAMA = struct.pack(">I", 45455)
_MAX_CHUNK = (1 << 31) - 1  # PNG chunk lengths are at most 2^31 - 1
_TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")

# JPEG start-of-frame markers: 0xC0..0xCF but DHT (C4), JPG (C8) and DAC (CC). Only Huffman
# baseline, extended and progressive (C0, C1, C2) are what browsers and glTF viewers decode;
# lossless, hierarchical and arithmetic-coded frames are decoded here (or refused) instead.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_SOF_PASSTHROUGH = frozenset((0xC0, 0xC1, 0xC2))
# Markers without a length: TEM, RST0..7 (SOI and EOI are handled on their own).
_STANDALONE = frozenset((0x01, *range(0xD0, 0xD8)))
# The next marker after entropy-coded data: 0xFF then a byte that is not a stuffed zero, a
# restart marker or another fill 0xFF.
_NEXT_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")


@dataclass(frozen=True)
class EncodedImage:
    """What a PNG or JPEG header says. ``alpha`` is the file's declared transparency (an alpha
    channel or a tRNS chunk), not whether any pixel is actually below 255. ``passthrough`` is
    False when the file is valid but glTF should not embed it as it is (see the module doc)."""

    kind: str  # "PNG" or "JPEG", as Pillow names the format
    mime_type: str
    width: int
    height: int
    mode: str  # Pillow's name of the colour layout: L, LA, P, RGB, RGBA, CMYK
    alpha: bool
    passthrough: bool

    @property
    def deferrable(self) -> bool:
        """Whether the pixels may wait for a writer to decode them. A save decodes under its own
        ``max_image_pixels``, the default unless the caller gives it again, so an image that
        only a raised limit admits is decoded at load, under the limit the load was given."""
        return self.width * self.height <= MAX_IMAGE_PIXELS


def probe_encoded(data: bytes, fmt: str = "image") -> EncodedImage | None:
    """The header of a PNG or JPEG file, its structure checked end to end (see the module
    doc); None for any other file. A damaged file raises :class:`FormatError`."""
    if data.startswith(PNG_MAGIC):
        return _probe_png(data, fmt)
    if data.startswith(JPEG_MAGIC):
        return _probe_jpeg(data, fmt)
    return None


def encoded_size(data: bytes | None) -> tuple[int, int] | None:
    """(width, height) of PNG or JPEG bytes, or None when they are neither or are damaged."""
    if data is None:
        return None
    try:
        head = probe_encoded(data)
    except (CorruptDataError, TruncatedError):
        return None
    return None if head is None else (head.width, head.height)


# -- PNG ----------------------------------------------------------------------------------------
@dataclass
class _PngState:
    ihdr: tuple[int, int, int, int] | None = None  # width, height, depth, colour type
    idat: bool = False
    plte: bool = False
    trns: bool = False
    plain: bool = True  # no colour-space, ICC, pixel-aspect or animation feature
    text: int = 0  # bytes of text in tEXt, zTXt and iTXt chunks so far (decompressed)


def _probe_png(data: bytes, fmt: str) -> EncodedImage:
    view = memoryview(data)
    state = _PngState()
    pos, end = len(PNG_MAGIC), len(data)
    while True:
        if pos + 12 > end:
            raise TruncatedError(fmt, "PNG ends before its IEND chunk", offset=pos,
                                 field="PNG.chunk", expected="12 more bytes",
                                 actual=end - pos)
        length, tag = struct.unpack_from(">I4s", data, pos)
        name = tag.decode("latin-1")
        if length > _MAX_CHUNK or pos + 12 + length > end:
            raise TruncatedError(fmt, f"PNG chunk {name!r} runs past the end of the file",
                                 offset=pos, field=f"PNG.{name}.length",
                                 expected=f"<= {end - pos - 12}", actual=length)
        (crc,) = struct.unpack_from(">I", data, pos + 8 + length)
        actual = zlib.crc32(view[pos + 4:pos + 8 + length])
        if crc != actual:
            raise CorruptDataError(fmt, f"PNG chunk {name!r} is damaged (its CRC does not "
                                   "match)", offset=pos + 8 + length, field=f"PNG.{name}.crc",
                                   expected=f"0x{actual:08X}", actual=f"0x{crc:08X}")
        if tag == b"IEND":
            break
        _png_chunk(state, tag, view[pos + 8:pos + 8 + length], pos, fmt)
        pos += 12 + length
    return _png_result(state, pos, fmt)


def _png_chunk(state: _PngState, tag: bytes, body: memoryview, pos: int, fmt: str) -> None:
    """Record what one chunk (its CRC already checked) says."""
    if state.ihdr is None:
        if tag != b"IHDR" or len(body) != 13:
            raise CorruptDataError(fmt, "PNG does not start with a 13-byte IHDR chunk",
                                   offset=pos, field="PNG.IHDR", expected="IHDR (13 bytes)",
                                   actual=f"{bytes(tag)!r} ({len(body)} bytes)")
        state.ihdr = _png_header(bytes(body), pos, fmt)
    elif tag == b"IDAT":
        state.idat = True
    elif tag == b"PLTE":
        state.plte = True
    elif tag == b"tRNS":
        state.trns = True
    elif tag in (b"iCCP", b"acTL"):
        state.plain = False
    elif tag == b"gAMA":
        state.plain &= bytes(body) == _SRGB_GAMA
    elif tag == b"cHRM":
        state.plain &= bytes(body) == _SRGB_CHRM
    elif tag == b"pHYs" and len(body) == 9:
        state.plain &= body[0:4] == body[4:8]
    elif tag in _TEXT_CHUNKS:
        state.text += _png_text(tag, bytes(body), pos, fmt)
        limit = PngImagePlugin.MAX_TEXT_MEMORY
        if state.text > limit:
            raise CorruptDataError(fmt, "PNG text chunks hold more text than a decoder takes",
                                   offset=pos, field=f"PNG.{tag.decode('latin-1')}",
                                   expected=f"<= {limit} bytes of text in all",
                                   actual=state.text)


def _png_text(tag: bytes, body: bytes, pos: int, fmt: str) -> int:
    """The bytes of text one tEXt, zTXt or iTXt chunk holds, with Pillow's bounds (what the
    decoder later refuses is refused here, so every path through an image agrees): a
    compressed text may inflate to at most ``MAX_TEXT_CHUNK`` bytes, all text together to
    ``MAX_TEXT_MEMORY``. A text Pillow skips (no key, a damaged stream) counts nothing."""
    key, _, value = body.partition(b"\0")
    if tag == b"zTXt":
        if value[:1] not in (b"", b"\0"):  # deflate (0) is the only method PNG has
            raise CorruptDataError(fmt, "PNG zTXt chunk names an unknown compression method",
                                   offset=pos, field="PNG.zTXt.compression", expected=0,
                                   actual=value[0])
        value = _inflate_text(value[1:], tag, pos, fmt)
    elif tag == b"iTXt":
        flag, method, rest = value[:1], value[1:2], value[2:]
        value = rest.split(b"\0", 2)[-1] if rest.count(b"\0") >= 2 else b""
        if flag not in (b"", b"\0"):
            value = _inflate_text(value, tag, pos, fmt) if method == b"\0" else b""
    return len(value) if key else 0


def _inflate_text(data: bytes, tag: bytes, pos: int, fmt: str) -> bytes:
    most = PngImagePlugin.MAX_TEXT_CHUNK
    inflate = zlib.decompressobj()
    try:
        text = inflate.decompress(data, most)
    except zlib.error:
        return b""
    if inflate.unconsumed_tail:
        name = tag.decode("latin-1")
        raise CorruptDataError(fmt, f"PNG {name} chunk inflates to more text than a decoder "
                               "takes", offset=pos, field=f"PNG.{name}",
                               expected=f"<= {most} bytes", actual="more")
    return text


def _png_header(ihdr: bytes, pos: int, fmt: str) -> tuple[int, int, int, int]:
    w, h, depth, color, compression, filt, interlace = struct.unpack(">IIBBBBB", ihdr)
    problems = [
        ("width", w, "1..2^31-1", 0 < w <= _MAX_CHUNK),
        ("height", h, "1..2^31-1", 0 < h <= _MAX_CHUNK),
        ("color_type", color, "0, 2, 3, 4 or 6", color in _PNG_DEPTHS),
        ("bit_depth", depth, f"one of {_PNG_DEPTHS.get(color, ())}",
         depth in _PNG_DEPTHS.get(color, ())),
        ("compression", compression, 0, compression == 0),
        ("filter", filt, 0, filt == 0),
        ("interlace", interlace, "0 or 1", interlace in (0, 1)),
    ]
    for field, value, expected, ok in problems:
        if not ok:
            raise CorruptDataError(fmt, "PNG header holds a value no PNG has", offset=pos + 8,
                                   field=f"PNG.IHDR.{field}", expected=expected, actual=value)
    return w, h, depth, color


def _png_result(state: _PngState, iend: int, fmt: str) -> EncodedImage:
    if state.ihdr is None or not state.idat:
        what = "IHDR" if state.ihdr is None else "IDAT"
        raise CorruptDataError(fmt, f"PNG has no {what} chunk", offset=iend, field=f"PNG.{what}",
                               expected=f"an {what} chunk before IEND", actual="none")
    w, h, _, color = state.ihdr
    if color == 3 and not state.plte:
        raise CorruptDataError(fmt, "palette PNG has no PLTE chunk", offset=iend,
                               field="PNG.PLTE", expected="a PLTE chunk", actual="none")
    return EncodedImage("PNG", "image/png", w, h, _PNG_MODES[color],
                        color in (4, 6) or state.trns, state.plain)


# -- JPEG ---------------------------------------------------------------------------------------
@dataclass
class _JpegFrame:
    marker: int
    width: int
    height: int
    components: int


def _probe_jpeg(data: bytes, fmt: str) -> EncodedImage:
    frame: _JpegFrame | None = None
    pos, end = 2, len(data)
    while True:
        pos = _jpeg_marker_at(data, pos, fmt)
        marker = data[pos + 1]
        if marker == 0xD9:  # EOI: whatever follows (an MPO's second picture) is kept as it is
            break
        if marker in _STANDALONE:
            pos += 2
            continue
        if pos + 4 > end:
            raise _jpeg_truncated(pos, end, fmt)
        (length,) = struct.unpack_from(">H", data, pos + 2)
        if length < 2 or pos + 2 + length > end:
            raise TruncatedError(fmt, f"JPEG segment 0x{marker:02X} runs past the end of the "
                                 "file", offset=pos + 2, field=f"JPEG.0x{marker:02X}.length",
                                 expected=f"2..{end - pos - 2}", actual=length)
        if marker in _SOF and frame is None:
            frame = _jpeg_frame(data, pos, marker, length, fmt)
        pos += 2 + length
        if marker == 0xDA:  # start of scan: entropy-coded data up to the next marker
            if frame is None:
                raise CorruptDataError(fmt, "JPEG scan before its frame header", offset=pos,
                                       field="JPEG.SOF", expected="SOF before SOS",
                                       actual="SOS")
            found = _NEXT_MARKER.search(data, pos)
            if found is None:
                raise _jpeg_truncated(end, end, fmt, f" (the scan from 0x{pos:X} runs to the end)")
            pos = found.start()
    if frame is None:
        raise CorruptDataError(fmt, "JPEG has no frame header", offset=pos, field="JPEG.SOF",
                               expected="a SOF segment", actual="none")
    mode = {1: "L", 3: "RGB", 4: "CMYK"}.get(frame.components, "unknown")
    # Grey or YCbCr in a Huffman frame is what every glTF viewer decodes (the validator
    # refuses any other component count).
    ok = frame.marker in _SOF_PASSTHROUGH and frame.components in (1, 3)
    return EncodedImage("JPEG", "image/jpeg", frame.width, frame.height, mode, False, ok)


def _jpeg_marker_at(data: bytes, pos: int, fmt: str) -> int:
    """The offset of the marker at ``pos`` (after any fill bytes 0xFF)."""
    end = len(data)
    if pos >= end:
        raise _jpeg_truncated(pos, end, fmt)
    if data[pos] != 0xFF:
        raise CorruptDataError(fmt, "JPEG segment does not start with a marker", offset=pos,
                               field="JPEG.marker", expected="0xFF", actual=f"0x{data[pos]:02X}")
    while pos + 1 < end and data[pos + 1] == 0xFF:
        pos += 1
    if pos + 1 >= end:
        raise _jpeg_truncated(pos, end, fmt)
    return pos


def _jpeg_frame(data: bytes, pos: int, marker: int, length: int, fmt: str) -> _JpegFrame:
    if length < 8:
        raise CorruptDataError(fmt, "JPEG frame header too short", offset=pos + 2,
                               field=f"JPEG.0x{marker:02X}.length", expected=">= 8",
                               actual=length)
    _, height, width, n = struct.unpack_from(">BHHB", data, pos + 4)
    if length < 8 + 3 * n or n == 0:
        raise CorruptDataError(fmt, "JPEG frame header does not hold its components",
                               offset=pos + 9, field="JPEG.SOF.components",
                               expected=f"1..{(length - 8) // 3}", actual=n)
    if width == 0 or height == 0:
        # A height of 0 defers it to a DNL marker after the first scan; no viewer supports it.
        raise CorruptDataError(fmt, "JPEG frame header has no size", offset=pos + 5,
                               field="JPEG.SOF.size", expected="width and height > 0",
                               actual=f"{width} x {height}")
    return _JpegFrame(marker, width, height, n)


def _jpeg_truncated(pos: int, end: int, fmt: str, why: str = "") -> TruncatedError:
    msg = f"JPEG ends before its end-of-image marker{why}"
    return TruncatedError(fmt, msg, offset=pos, field="JPEG.EOI", expected="0xFFD9",
                          actual=f"end of file at {end} bytes")
