"""PlayStation 1 VRAM: 15-bit colour words, CLUTs, 4/8/16 bpp texture pages, palette
quantization. Everything is vectorized with numpy (no loop per texel).

VRAM is 1024 x 512 16-bit words. A colour word is R in bits 0-4, G in 5-9, B in 10-14 and the
semi-transparency bit (STP) in 15. The word 0x0000 is never drawn (transparent); any other word,
0x8000 (black with STP) included, is opaque on an opaque polygon. Texture pages are 256 x 256
texels at x = 64 * n, y = 0 or 256; a 4 bpp texel is a nibble (low nibble leftmost), an 8 bpp
texel a byte (low byte leftmost), both indices into a CLUT row; a 16 bpp texel is a colour word.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

U16 = npt.NDArray[np.uint16]
U8 = npt.NDArray[np.uint8]

VRAM_W, VRAM_H = 1024, 512
PAGE = 256
TRANSPARENT = 0x0000
OPAQUE_BLACK = 0x8000  # black that the GPU still draws: STP set

__all__ = ["OPAQUE_BLACK", "PAGE", "TRANSPARENT", "VRAM_H", "VRAM_W", "blit", "decode_indexed",
           "decode_page",
           "index_with_palette", "pack_indices", "page_origin", "quantize", "rgba_to_words",
           "tpage_depth", "unpack_indices", "vram_to_rgba", "words_per_row", "words_to_rgba"]


_SHIFTS = np.array([0, 5, 10], dtype=np.uint16)
# 5-bit channel -> 8 bits, (c << 3) | (c >> 2), for each of the 32 values.
_C8 = ((np.arange(32) << 3) | (np.arange(32) >> 2)).astype(np.uint8)


def _expand(w: U16) -> U8:
    """RGBA of colour words: the three channels in one pass (shift and mask all three, then
    one lookup of the 5-to-8-bit expansion); a few numpy calls whatever the shape, which is
    what a 16-entry palette costs."""
    out = np.empty((*w.shape, 4), dtype=np.uint8)
    out[..., :3] = _C8[(w[..., None] >> _SHIFTS) & 0x1F]
    out[..., 3] = np.where(w == TRANSPARENT, 0, 255)
    return out


_C8_INTS: list[int] = _C8.tolist()


def _rgba_word(w: int) -> int:
    """:func:`_expand` of one colour word as an int whose little-endian bytes are R, G, B, A."""
    return (_C8_INTS[w & 0x1F] | _C8_INTS[(w >> 5) & 0x1F] << 8 | _C8_INTS[(w >> 10) & 0x1F] << 16
            | (0 if w == TRANSPARENT else 255) << 24)


@cache
def _all_words() -> U8:
    """RGBA of every possible word (256 KiB, read-only): one gather decodes a whole page."""
    table = _expand(np.arange(0x10000, dtype=np.uint16))
    table.flags.writeable = False
    return table


def words_to_rgba(words: npt.ArrayLike) -> U8:
    """Colour words (any shape) to RGBA (shape + (4,)); alpha is 0 only for 0x0000."""
    w = np.asarray(words, dtype=np.uint16)
    if w.size < 4096:
        return _expand(w)
    return _gather_rgba(_all_words(), w)


def rgba_to_words(rgba: npt.ArrayLike, alpha_cutoff: int = 128) -> U16:
    """RGBA (…, 4) to colour words. Rounded to 5 bits (the exact inverse of
    :func:`words_to_rgba`), alpha below the cutoff becomes 0x0000, and opaque black becomes
    0x8000 so that it is not dropped as transparent (the v1 exporter's bug, spec §b.8)."""
    a = np.asarray(rgba, dtype=np.uint32)
    c5 = (a[..., :3] * 31 + 127) // 255
    w = c5[..., 0] | (c5[..., 1] << 5) | (c5[..., 2] << 10)
    w = np.where(w == 0, OPAQUE_BLACK, w)
    w = np.where(a[..., 3] < alpha_cutoff, TRANSPARENT, w)
    return w.astype(np.uint16)


def words_per_row(width_texels: int, bpp: int) -> int:
    return (width_texels * bpp + 15) // 16


def tpage_depth(tpage: int) -> int:
    """Bits per texel of a tpage attribute (mode 3 is 15-bit on hardware too)."""
    return {0: 4, 1: 8}.get((tpage >> 7) & 3, 16)


def page_origin(tpage: int) -> tuple[int, int]:
    return (tpage & 0xF) * 64, ((tpage >> 4) & 1) * 256


def blit(vram: U16, x: int, y: int, words: npt.ArrayLike) -> None:
    """Copy a (h, w) block of words into VRAM at (x, y), clipped to VRAM (as an upload of a
    rectangle crossing the edge would be cut)."""
    block = np.asarray(words, dtype=np.uint16)
    if block.ndim == 1:
        block = block[None, :]
    h = max(0, min(block.shape[0], VRAM_H - y))
    w = max(0, min(block.shape[1], VRAM_W - x))
    if h and w and x >= 0 and y >= 0:
        vram[y:y + h, x:x + w] = block[:h, :w]


def unpack_indices(words: npt.ArrayLike, bpp: int) -> U8:
    """(h, w) words to (h, w * 16 / bpp) palette indices, leftmost texel in the low bits."""
    w = np.ascontiguousarray(np.asarray(words, dtype="<u2"))
    # Little-endian bytes are already the texels left to right for 8 bpp.
    b = w.view(np.uint8).reshape(*w.shape[:-1], w.shape[-1] * 2)
    if bpp == 8:
        return b.copy()
    if bpp == 4:
        out: U8 = np.stack([b & 0x0F, b >> 4], axis=-1).reshape(*b.shape[:-1], -1)
        return out
    msg = f"palette indices are 4 or 8 bits, not {bpp}"
    raise ValueError(msg)


def pack_indices(indices: npt.ArrayLike, bpp: int) -> U16:
    """(h, w) palette indices to (h, ceil(w * bpp / 16)) words (the inverse of unpack)."""
    idx = np.asarray(indices, dtype=np.uint32)
    per = 16 // bpp
    pad = (-idx.shape[-1]) % per
    if pad:
        idx = np.pad(idx, ((0, 0), (0, pad)))
    grouped = idx.reshape(idx.shape[0], -1, per) & ((1 << bpp) - 1)
    shifts = np.arange(per, dtype=np.uint32) * bpp
    words: U16 = np.bitwise_or.reduce(grouped << shifts, axis=-1).astype(np.uint16)
    return words


def decode_page(vram: U16, tpage: int, clut_x: int, clut_y: int,
                clut_count: int | None = None) -> U8:
    """The 256 x 256 texture page a tpage and CLUT select, as RGBA, sampled the way the GPU
    samples it (coordinates wrap around VRAM). ``clut_x`` is in words (not /16). CLUT entries at
    or past ``clut_count`` read as transparent: what lies there in VRAM is not the palette's."""
    px0, py0 = page_origin(tpage)
    bpp = tpage_depth(tpage)
    band = vram[py0:py0 + PAGE]  # py0 is 0 or 256: rows never wrap
    n_words = PAGE * bpp // 16
    if px0 + n_words <= VRAM_W:
        raw = np.ascontiguousarray(band[:, px0:px0 + n_words])  # a slice: no index array
    else:
        raw = np.take(band, np.arange(px0, px0 + n_words) % VRAM_W, axis=1)
    if bpp == 16:
        return _gather_rgba(_all_words(), raw)
    palette = vram[clut_y % VRAM_H, (clut_x + np.arange(1 << bpp)) % VRAM_W]
    return decode_indexed(raw, bpp, palette, clut_count)


def decode_indexed(raw: U16, bpp: int, palette: U16, clut_count: int | None = None) -> U8:
    """A 4 or 8 bpp page's (256, 64 or 128) words through its CLUT row ``palette`` (1 << bpp
    words, changed in place), as :func:`decode_page` decodes it from VRAM."""
    if clut_count is not None:
        palette[min(clut_count, len(palette)):] = TRANSPARENT
    # Decode the palette once, then gather RGBA straight from the page's bytes: a 4 bpp byte
    # is two texels (low nibble leftmost), so its table entry is the two texels' RGBA side
    # by side (8 bytes) and the gather is half the texels' count.
    if bpp == 4:
        # 16 entries: their RGBA as little-endian words from plain ints (_expand's arithmetic;
        # its numpy calls cost more than the sixteen words).
        rgba = np.array([_rgba_word(w) for w in palette.tolist()], dtype="<u4")
        pairs = np.empty((16, 16, 2), "<u4")  # [high nibble, low nibble] -> (low, high)
        pairs[:, :, 0] = rgba[None, :]
        pairs[:, :, 1] = rgba[:, None]
        table = pairs.view(np.uint8).reshape(256, 8)
    else:
        table = _expand(palette)
    b = raw.astype("<u2", copy=False).view(np.uint8)  # little-endian: texels left to right
    return _gather_rgba(table, b).reshape(PAGE, PAGE, 4)


def _gather_rgba(table: U8, idx: npt.NDArray[np.integer]) -> U8:
    """``table[idx]`` for a (K, n) table of n-byte entries (n = 4 or 8), gathered as whole
    words instead of byte by byte."""
    size = table.shape[-1]
    packed = np.ascontiguousarray(table).view(np.uint32 if size == 4 else np.uint64).reshape(-1)
    # np.take, not fancy indexing: on numpy 2 it gathers a page in about 0.6 of the time
    # (4/8/16 bpp page 85/141/136 -> 61/94/83 us CPU), with the default or the tuned malloc,
    # in a fresh process or one that has converted the corpus first.
    out: U8 = packed.take(idx).view(np.uint8).reshape(*idx.shape, size)
    return out


def vram_to_rgba(vram: U16) -> U8:
    """The whole VRAM read as 16 bpp colour, fully opaque: what a VRAM viewer shows (index data
    of 4/8 bpp pages appears as coloured noise)."""
    out = words_to_rgba(vram)
    out[..., 3] = 255
    return out


def _keys(words: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """What a texel looks like once decoded: the 15-bit colour, plus 0x8000 for transparent."""
    w = np.asarray(words, dtype=np.int64)
    return np.where(w == TRANSPARENT, 0x8000, w & 0x7FFF)


def index_with_palette(rgba: npt.ArrayLike, palette: npt.ArrayLike) -> U8 | None:
    """Indices that reproduce ``rgba`` exactly through ``palette`` (the first matching entry),
    or None when some texel's colour is not in it."""
    pal = np.asarray(palette, dtype=np.uint16)
    if len(pal) == 0 or len(pal) > 256:
        return None
    lut = np.full(0x10000, -1, dtype=np.int64)
    keys, first = np.unique(_keys(pal), return_index=True)
    lut[keys] = first
    idx = lut[_keys(rgba_to_words(rgba))]
    if np.any(idx < 0):
        return None
    return idx.astype(np.uint8)


def quantize(rgba: npt.ArrayLike, max_colors: int) -> tuple[U8, U16, bool]:
    """Indices (h, w) and a palette of at most ``max_colors`` colour words for an RGBA image.

    Transparent texels (alpha < 128) share entry 0 = 0x0000. Images with few enough distinct
    colours get an exact palette (sorted words); others go through Pillow's median cut, whose
    result is returned with ``True`` (lossy)."""
    px = np.asarray(rgba, dtype=np.uint8)
    words = rgba_to_words(px)
    clear = words == TRANSPARENT
    reserve = 1 if clear.any() else 0
    room = max_colors - reserve
    solid = np.unique(words[~clear])
    if len(solid) <= room:
        palette = np.concatenate([np.zeros(reserve, np.uint16), solid]).astype(np.uint16)
        idx = index_with_palette(px, palette)
        assert idx is not None
        return idx, palette, False
    rgb = px[..., :3].copy()
    if reserve:
        rgb[clear] = rgb[~clear][0]
    im = PILImage.fromarray(rgb, "RGB").quantize(
        colors=room, method=PILImage.Quantize.MEDIANCUT, dither=PILImage.Dither.NONE)
    q = np.asarray(im, dtype=np.uint8)
    used = int(q.max()) + 1
    flat = im.getpalette() or []
    pal_rgb = np.asarray(flat[: used * 3], dtype=np.uint8).reshape(-1, 3)
    pal_rgba = np.concatenate([pal_rgb, np.full((used, 1), 255, np.uint8)], axis=1)
    pal_words = rgba_to_words(pal_rgba)
    if reserve:
        palette = np.concatenate([np.zeros(1, np.uint16), pal_words]).astype(np.uint16)
        idx = np.where(clear, 0, q.astype(np.uint16) + 1).astype(np.uint8)
    else:
        palette, idx = pal_words, q
    return idx, palette, True
