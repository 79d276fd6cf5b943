"""DDS files around texture data as it is: BCn (DXT1/3/5) blocks with every mip level, or plain
RGBA8 pixels. Nothing is re-encoded, so a DXT texture written here is bit-for-bit what the game
file held.

The header is the legacy one (a FourCC, no DX10 extension): every DDS reader takes it, Pillow
included. Its limit: it cannot mark data as sRGB; callers note that where the source did.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt

__all__ = ["encode_dds_bcn", "encode_dds_rgba"]

_FOURCC = {1: b"DXT1", 2: b"DXT3", 3: b"DXT5"}
_BLOCK_BYTES = {1: 8, 2: 16, 3: 16}

# Header flags (DDSD_*), pixel-format flags (DDPF_*) and caps (DDSCAPS_*), from the DDS spec.
_CAPS, _HEIGHT, _WIDTH, _PITCH, _PIXELFORMAT = 0x1, 0x2, 0x4, 0x8, 0x1000
_MIPMAPCOUNT, _LINEARSIZE = 0x20000, 0x80000
_PF_ALPHAPIXELS, _PF_FOURCC, _PF_RGB = 0x1, 0x4, 0x40
_CAPS_COMPLEX, _CAPS_TEXTURE, _CAPS_MIPMAP = 0x8, 0x1000, 0x400000


def bcn_level_sizes(width: int, height: int, n: int, mips: int) -> list[int]:
    """Bytes of each mip level of BCn data (``n`` as Pillow: 1 DXT1, 2 DXT3, 3 DXT5)."""
    out = []
    for i in range(max(mips, 1)):
        w, h = max(width >> i, 1), max(height >> i, 1)
        out.append(max(1, (w + 3) // 4) * max(1, (h + 3) // 4) * _BLOCK_BYTES[n])
    return out


def _header(width: int, height: int, flags: int, pitch: int, mips: int,
            pixel_format: bytes) -> bytes:
    caps = _CAPS_TEXTURE | (_CAPS_COMPLEX | _CAPS_MIPMAP if mips > 1 else 0)
    if mips > 1:
        flags |= _MIPMAPCOUNT
    head = struct.pack("<7I", 124, _CAPS | _HEIGHT | _WIDTH | _PIXELFORMAT | flags, height,
                       width, pitch, 0, mips if mips > 1 else 0)
    return (b"DDS " + head + b"\0" * 44 + pixel_format
            + struct.pack("<5I", caps, 0, 0, 0, 0))


def encode_dds_bcn(width: int, height: int, n: int, data: bytes, mips: int = 1) -> bytes:
    """A DDS file of BCn blocks: ``data`` holds ``mips`` levels, largest first (as DDS and the
    game formats store them). Bytes past the last level are left out; too few is an error."""
    if n not in _FOURCC:
        msg = f"BCn kind {n} has no legacy DDS FourCC (1, 2 or 3: DXT1, DXT3, DXT5)"
        raise ValueError(msg)
    sizes = bcn_level_sizes(width, height, n, mips)
    if len(data) < sum(sizes):
        msg = f"{_FOURCC[n].decode()} data of {len(data)} bytes is shorter than its " \
              f"{max(mips, 1)} level(s) ({sum(sizes)} bytes)"
        raise ValueError(msg)
    pf = struct.pack("<2I4s5I", 32, _PF_FOURCC, _FOURCC[n], 0, 0, 0, 0, 0)
    return _header(width, height, _LINEARSIZE, sizes[0], max(mips, 1), pf) + \
        bytes(data[: sum(sizes)])


def encode_dds_rgba(pixels: npt.ArrayLike) -> bytes:
    """A DDS file of one (H, W, 4) RGBA8 level, bytes in R, G, B, A order."""
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.uint8))
    h, w = int(arr.shape[0]), int(arr.shape[1])
    pf = struct.pack("<2I4s5I", 32, _PF_RGB | _PF_ALPHAPIXELS, b"\0\0\0\0", 32,
                     0x000000FF, 0x0000FF00, 0x00FF0000, 0xFF000000)
    return _header(w, h, _PITCH, w * 4, 1, pf) + arr.tobytes()
