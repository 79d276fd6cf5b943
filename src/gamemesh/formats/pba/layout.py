"""PBA record dtypes and chunk ids (spec ``pba.md`` section b).

The document mirrors the file: every chunk keeps its id and the bytes its declared length covers
beyond what was parsed (``tail``); names stay as their raw 32 bytes; what the reader cannot parse
(an unknown chunk id or mesh type, a layout that does not fit its chunk) is kept as raw bytes.
The writer recomputes every chunk length from the content, so ``write(read(b)) == b``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

# Chunk ids (the seed's BASE_CHUNK_PBA = 0x300 plus 1..7).
CHUNK_MAIN = 0x0301
CHUNK_POOLGEOMS = 0x0302
CHUNK_GEOM = 0x0303
CHUNK_POOLANIMS = 0x0304
CHUNK_ANIM = 0x0305
CHUNK_BONES = 0x0306
CHUNK_NODE_TRACK = 0x0307  # also written for vertex tracks: no reader checks their id
CHUNK_HEADER = 6
NAME_SIZE = 32

RIGID, FLEXIBLE, ANIMATED, NODES = 1, 2, 3, 4
MESH_TYPES = {RIGID: "rigid", FLEXIBLE: "flexible", ANIMATED: "animated", NODES: "nodes"}
# Types 2 and 4 come from the OCR-damaged seed alone; no public reader parses them.
UNVERIFIED_TYPES = (FLEXIBLE, NODES)

ANIM_ROT, ANIM_ROTPOS = 1, 2

ALPHA_NONE, ALPHA_BLEND, ALPHA_TEST, ALPHA_SHADOW = 0, 1, 2, 3
ALPHA_NAMES = {0: "MATERIAL_NONE", 1: "MATERIAL_ALPHA", 2: "MATERIAL_ALPHATEST",
               3: "MATERIAL_ALPHASOMBRA"}

VERSIONS = (0, 1, 2)

NAME = np.dtype("S32")
# TD3DVERTEXT1VC: position, normal, D3DCOLOR (bytes B, G, R, A in the file), uv.
VERTEX = np.dtype([("pos", "<f4", (3,)), ("normal", "<f4", (3,)), ("color", "u1", (4,)),
                   ("uv", "<f4", (2,))])
# szNodeName, idNodoPadre, TTransform (quaternion w, x, y, z first, then translation).
BONE = np.dtype([("name", "S32"), ("parent", "<i4"), ("rot", "<f4", (4,)),
                 ("pos", "<f4", (3,))])
ROT_KEY = np.dtype([("time", "<u4"), ("rot", "<f4", (4,))])
ROTPOS_KEY = np.dtype([("time", "<u4"), ("rot", "<f4", (4,)), ("pos", "<f4", (3,))])
VEC3 = np.dtype(("<f4", (3,)))
# Flexible (type 2) blend arrays: the seed gives no element sizes. Assumed [OPEN]: positions
# and normals are Vector3, blend vertices are TD3DVERTEXT1VC.
BLEND_POS = VEC3
BLEND_NORMAL = VEC3

assert VERTEX.itemsize == 36 and BONE.itemsize == 64
assert ROT_KEY.itemsize == 20 and ROTPOS_KEY.itemsize == 32

U8 = npt.NDArray[np.uint8]
Arr = npt.NDArray[Any]


def vertex_key(num_vertices: int) -> np.dtype[Any]:
    """One animated-vertex key: u32 time (ms), then x, y, z bytes per vertex, packed."""
    return np.dtype([("time", "<u4"), ("pos", "u1", (num_vertices, 3))])


def name_str(raw: bytes) -> str:
    """A char[32] field as text: up to the first NUL (what every reader does)."""
    return bytes(raw).split(b"\0", 1)[0].decode("latin-1")


