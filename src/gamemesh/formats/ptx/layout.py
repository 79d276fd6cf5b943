"""The PTX fixed header: constants of the byte layout."""

from __future__ import annotations

import struct

# u16 chunk id, u32 chunk length, u32 width, u32 height, u32 bits per pixel.
FMT = "ptx"
HEADER = struct.Struct("<HIIII")
HEADER_SIZE = HEADER.size  # 18
CHUNK_ID = 0x0007  # what we write; readers never check it (spec b.2/b.9, [OPEN])
BPP = (24, 32)
# Praetorians textures are small; this bounds what a corrupt header may ask for.
MAX_SIDE = 16384


