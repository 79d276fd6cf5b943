"""PMF record layouts (numpy dtypes, struct formats) and the native document.

Everything is little-endian and byte-packed (the seed gives every size as an explicit byte count:
a frame is 1 + 12 + 12 * N bytes). See ``shared/specs/pmf.md`` section (b).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

MAGIC = b"PMF1"
NAME_SIZE = 32  # a Pascal string[31]: one length byte and 31 characters
NAME_MAX = NAME_SIZE - 1

VERTEX = np.dtype([("position", "<f4", (3,)), ("normal", "<f4", (3,)), ("uv", "<f4", (2,))])
assert VERTEX.itemsize == 32

# name[32], translation f32[3], numVertices i32
PIECE_HEAD = struct.Struct("<32s12si")
I32 = struct.Struct("<i")
# name[32], flags u8, fps u8, numFrames u16
ANIM_HEAD = struct.Struct("<32sBBH")

# The smallest a piece can be: header + numChildren, no vertices.
MIN_PIECE = PIECE_HEAD.size + I32.size  # 52
FRAME_FIXED = 13  # flags u8 + rootPos f32[3]

ANIM_LOOP = 0x01  # animation flags bit 0
FRAME_KEY = 0x01  # frame flags bit 0
FRAME_EVENT = 0x02  # frame flags bit 1

# Writers keep counts readable as signed values whatever the real reader does (spec b.4).
MAX_VERTICES = 2**31 - 1
MAX_FRAMES = 32767

F32 = npt.NDArray[np.float32]
Arr = npt.NDArray[Any]


def frame_dtype(pieces: int) -> np.dtype[Any]:
    """One baked frame for a model of ``pieces`` pieces: 13 + 12 * pieces bytes, no padding."""
    return np.dtype([("flags", "u1"), ("root", "<f4", (3,)), ("rot", "<f4", (pieces, 3))])


def pack_name(text: str | bytes, tail: bytes = b"") -> bytes:
    """A 32-byte ShortString: length byte, the characters, then ``tail`` (or zeros) to fill."""
    raw = text.encode("ascii") if isinstance(text, str) else bytes(text)
    if len(raw) > NAME_MAX:
        msg = f"name {raw!r} is longer than {NAME_MAX} bytes"
        raise ValueError(msg)
    body = bytes([len(raw)]) + raw
    return (body + tail[len(body):] + b"\0" * NAME_SIZE)[:NAME_SIZE]


def name_text(raw: bytes) -> str:
    """The meaningful part of a ShortString (Latin-1: lossless for any byte). A length byte
    above 31 is clamped, as the spec says; the caller notes it."""
    n = min(raw[0], NAME_MAX) if raw else 0
    return raw[1:1 + n].decode("latin-1")


def make_vertices(positions: Any, normals: Any = None, uvs: Any = None) -> Arr:
    """VERTEX records from (N, 3) positions and optional (N, 3) normals and (N, 2) UVs."""
    pos = np.asarray(positions, dtype=np.float32).reshape(-1, 3)
    out = np.zeros(len(pos), dtype=VERTEX)
    out["position"] = pos
    if normals is not None:
        out["normal"] = np.asarray(normals, dtype=np.float32).reshape(-1, 3)
    if uvs is not None:
        out["uv"] = np.asarray(uvs, dtype=np.float32).reshape(-1, 2)
    return out


def make_frames(pieces: int, rot: Any, root: Any = None, flags: Any = None) -> Arr:
    """Frame records from (F, pieces, 3) Euler triples, optional (F, 3) root positions and (F,)
    flags (default: every frame a keyframe)."""
    r = np.asarray(rot, dtype=np.float32).reshape(-1, pieces, 3)
    out = np.zeros(len(r), dtype=frame_dtype(pieces))
    out["rot"] = r
    if root is not None:
        out["root"] = np.asarray(root, dtype=np.float32).reshape(-1, 3)
    out["flags"] = FRAME_KEY if flags is None else np.asarray(flags, dtype=np.uint8)
    return out
