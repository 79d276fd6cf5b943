"""The PBA document: header, bones, textures, geometry and animation pools, as in the file."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .layout import (
    BONE,
    CHUNK_ANIM,
    CHUNK_BONES,
    CHUNK_GEOM,
    CHUNK_MAIN,
    CHUNK_NODE_TRACK,
    CHUNK_POOLANIMS,
    CHUNK_POOLGEOMS,
    NAME,
    NAME_SIZE,
    Arr,
    name_str,
)


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
class PbaDocument:
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
