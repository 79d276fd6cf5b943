"""PBA record dtypes, chunk ids and the native document (spec ``pba.md`` section b).

The document mirrors the file: every chunk keeps its id and the bytes its declared length covers
beyond what was parsed (``tail``); names stay as their raw 32 bytes; what the reader cannot parse
(an unknown chunk id or mesh type, a layout that does not fit its chunk) is kept as raw bytes.
The writer recomputes every chunk length from the content, so ``write(read(b)) == b``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


@dataclass
class FaceGroup:
    texture_id: int
    alpha_flags: int
    indices: npt.NDArray[np.uint16]
    # Civilisation texture names (raw char[32]); None when the layout has no list.
    civ_textures: Arr | None = None
    # Type 1: the group's own vertex array. Types 3 and 4: the size of its slice.
    vertices: Arr | None = None
    num_vertices: int = 0


@dataclass
class VertexGroup:
    """Type 4 (nodes): vertices that belong to one named node."""

    name: bytes
    vertices: Arr


@dataclass
class PbaMesh:
    """One mesh chunk (0x0303). ``raw`` holds the body after the chunk header when it was not
    parsed (unknown type, or a layout that does not fit the chunk)."""

    mesh_type: int
    name: bytes = b"\0" * NAME_SIZE
    center: Arr = field(default_factory=lambda: np.zeros(3, dtype="<f4"))
    radius: Arr = field(default_factory=lambda: np.zeros(1, dtype="<f4"))
    groups: list[FaceGroup] = field(default_factory=list)
    vertices: Arr | None = None  # type 3 (and 4): the shared vertex array
    blend_positions: Arr | None = None  # type 2
    blend_normals: Arr | None = None  # type 2
    vertex_groups: list[VertexGroup] = field(default_factory=list)  # type 4
    civ_textures: Arr | None = None  # type 4: one list per mesh (seed order)
    num_vertices: int = 0  # type 4: the leading NumVertices
    chunk_id: int = CHUNK_GEOM
    raw: bytes | None = None
    tail: bytes = b""

    @property
    def label(self) -> str:
        return name_str(self.name)


@dataclass
class NodeTrack:
    """One node track: ROT (fixed position, rotation keys) or ROTPOS keys. [SEED only]"""

    node_id: int
    anim_type: int
    keys: Arr  # ROT_KEY or ROTPOS_KEY records
    position: Arr | None = None  # ROT: the fixed position
    chunk_id: int = CHUNK_NODE_TRACK
    raw: bytes | None = None  # the body when not parsed
    tail: bytes = b""


@dataclass
class VertexTrack:
    """Compressed animated-vertex track: v = box_min + byte * (box_max - box_min) / 255."""

    node_id: int
    num_vertices: int
    box_min: Arr
    box_max: Arr
    keys: Arr  # vertex_key(num_vertices) records
    chunk_id: int = CHUNK_NODE_TRACK
    tail: bytes = b""

    def positions(self) -> npt.NDArray[np.float32]:
        """(K, N, 3) decompressed positions in file (left-handed) axes."""
        lo = self.box_min.astype(np.float32)
        with np.errstate(all="ignore"):  # a non-finite box is the caller's to reject
            step = (self.box_max.astype(np.float32) - lo) / np.float32(255.0)
            return np.asarray(lo + self.keys["pos"].astype(np.float32) * step,
                              dtype=np.float32)


@dataclass
class Sequence:
    name: bytes = b"\0" * NAME_SIZE
    duration: int = 0  # milliseconds
    node_tracks: list[NodeTrack] = field(default_factory=list)
    vertex_tracks: list[VertexTrack] = field(default_factory=list)
    chunk_id: int = CHUNK_ANIM
    raw: bytes | None = None
    tail: bytes = b""

    @property
    def label(self) -> str:
        return name_str(self.name)


@dataclass
class PbaDoc:
    version: int = 2
    name: bytes = b"\0" * NAME_SIZE
    bones: Arr = field(default_factory=lambda: np.zeros(0, dtype=BONE))
    textures: Arr = field(default_factory=lambda: np.zeros(0, dtype=NAME))
    meshes: list[PbaMesh] = field(default_factory=list)
    sequences: list[Sequence] = field(default_factory=list)
    # Whether face groups carry civilisation lists: version >= 2, or what parsed for version 0.
    civ_lists: bool = True
    # The seed's second header DWORD, when a file has one (public readers break on it).
    header_extra: int | None = None
    main_id: int = CHUNK_MAIN
    bones_id: int = CHUNK_BONES
    geoms_id: int = CHUNK_POOLGEOMS
    anims_id: int = CHUNK_POOLANIMS
    bones_tail: bytes = b""
    geoms_tail: bytes = b""
    anims_tail: bytes = b""
    main_tail: bytes = b""
    trailing: bytes = b""  # after the main chunk
    # Not serialized: textures from_scene made, written as <name>.ptx beside the model.
    ptx_files: dict[str, bytes] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return name_str(self.name)
