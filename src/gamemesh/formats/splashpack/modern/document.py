"""The native document of a modern SPLASHPACK (versions 20..26) and its ``.vram`` sidecar.

Records are numpy arrays of the dtypes in ``layout``; nothing is converted. Counts and
absolute offsets are recomputed by the writer; every other field is written back as read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from . import layout as ml

Records = npt.NDArray[np.void]
U16 = npt.NDArray[np.uint16]
U8 = npt.NDArray[np.uint8]


def empty_table(dt: np.dtype[Any]) -> Records:
    """The empty table of ``dt`` (a document has some twenty, most empty in a small scene)."""
    return np.zeros(0, dtype=dt)


def _empty(dt: np.dtype[Any]) -> Callable[[], Records]:
    """A default factory making a new :func:`empty_table` of ``dt`` for each document."""
    return functools.partial(empty_table, dt)


@dataclass
class VramFile:
    """The ``.vram`` sidecar (§6): atlases, CLUTs and font bitmaps, uploaded in that order."""

    header: Records = field(default_factory=lambda: np.zeros(1, ml.VRAM_HEADER))
    atlases: Records = field(default_factory=_empty(ml.VRAM_ATLAS))
    atlas_pixels: list[U16] = field(default_factory=list)  # (height, width) words each
    cluts: Records = field(default_factory=_empty(ml.VRAM_CLUT))
    clut_words: list[U16] = field(default_factory=list)
    fonts: Records = field(default_factory=_empty(ml.VRAM_FONT))
    font_data: list[bytes] = field(default_factory=list)


@dataclass
class SkinClip:
    name: bytes
    flags: int  # bit 0: loop
    fps: int
    matrices: Records  # (frames, bones) BONE_MATRIX


@dataclass
class SkinnedMesh:
    """§4.2: one bone per triangle corner, and per clip the baked bone matrices of every frame."""

    go_index: int
    bone_count: int
    bone_index: U8  # (poly_count * 3,)
    clips: list[SkinClip] = field(default_factory=list)
    name: bytes = b""
    # v26: each bone's bind position (bones, 3) int16 in the vertices' space, and its name.
    bind: npt.NDArray[np.int16] | None = None
    joint_names: list[bytes] = field(default_factory=list)


@dataclass
class Track:
    type: int
    light_index: int
    target: bytes
    keys: Records  # KEY


@dataclass
class Sequence:
    """An animation or a cutscene (§4.3); ``header`` counts and offsets are rewritten."""

    name: bytes
    header: Records  # ANIM_HEADER or CUTSCENE_HEADER, one record
    tracks: list[Track] = field(default_factory=list)
    audio_events: Records = field(default_factory=_empty(ml.AUDIO_EVENT))
    skin_events: Records = field(default_factory=_empty(ml.SKIN_EVENT))


@dataclass
class PointLight:
    record: Records  # one LIGHT
    name: bytes


@dataclass
class ModernDocument:
    """One file of version 20..26 with the sidecars found beside it."""

    header: Records = field(default_factory=lambda: np.zeros(1, ml.HEADERS[23]))
    lua: list[bytes] = field(default_factory=list)
    lua_desc: Records = field(default_factory=_empty(ml.LUA_DESC))
    objects: Records = field(default_factory=_empty(ml.GO))
    meshes: list[Records] = field(default_factory=list)  # TRI per object
    names: list[bytes] = field(default_factory=list)  # UTF-8, one per object
    colliders: Records = field(default_factory=_empty(ml.COLLIDER))
    triggers: Records = field(default_factory=_empty(ml.TRIGGER))
    bvh_nodes: Records = field(default_factory=_empty(ml.BVH_NODE))
    bvh_refs: Records = field(default_factory=_empty(ml.BVH_REF))
    interactables: Records = field(default_factory=_empty(ml.INTERACTABLE))
    agents: Records = field(default_factory=_empty(ml.AGENT))
    waypoints: Records = field(default_factory=_empty(ml.WAYPOINT))
    nav_header: Records = field(default_factory=_empty(ml.NAV_HEADER))  # 0 or 1
    nav_regions: Records = field(default_factory=_empty(ml.NAV_REGION))
    nav_portals: Records = field(default_factory=_empty(ml.NAV_PORTAL))
    rooms: Records = field(default_factory=_empty(ml.ROOM))
    room_portals: Records = field(default_factory=_empty(ml.ROOM_PORTAL))
    room_tri_refs: Records = field(default_factory=_empty(ml.ROOM_TRI_REF))
    room_cells: Records = field(default_factory=_empty(ml.ROOM_CELL))
    room_portal_refs: Records = field(default_factory=_empty(ml.ROOM_PORTAL_REF))
    atlas_desc: Records = field(default_factory=_empty(ml.ATLAS_DESC))
    clut_desc: Records = field(default_factory=_empty(ml.CLUT_DESC))
    cutscenes: list[Sequence] = field(default_factory=list)
    animations: list[Sequence] = field(default_factory=list)
    skins: list[SkinnedMesh] = field(default_factory=list)
    light_pad: int = 0
    lights: list[PointLight] = field(default_factory=list)
    audio_clips: Records = field(default_factory=_empty(ml.AUDIO_CLIP))
    audio_names: list[bytes] = field(default_factory=list)  # one per clip
    # Offset-bearing blocks not modelled (UI, sprites, tilemap, stream, memcard): by
    # header field, the offset they were read from and their bytes up to the next block.
    opaque: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    vram: VramFile | None = None
    spu: bytes | None = None
    sidecars: dict[str, str] = field(default_factory=dict)  # kind -> file name found

    @property
    def version(self) -> int:
        return int(self.header["version"][0])

    @property
    def layout(self) -> str:
        return f"v{self.version}"

    def hfield(self, name: str, default: Any = 0) -> Any:
        names = self.header.dtype.names or ()
        return self.header[name][0] if name in names else default

    # What the VRAM decoder reads (vram.VramSource).
    @property
    def atlases(self) -> Records:
        return self.vram.atlases if self.vram is not None else empty_table(ml.VRAM_ATLAS)

    @property
    def atlas_pixels(self) -> list[U16]:
        return self.vram.atlas_pixels if self.vram is not None else []

    def clut_entries(self) -> list[tuple[int, int, U16]]:
        if self.vram is None:
            return []
        cl = self.vram.cluts  # its columns as Python ints, not a field read per record
        return [(x * 16, y, w) for x, y, w in zip(cl["clut_x"].tolist(), cl["clut_y"].tolist(),
                                                  self.vram.clut_words, strict=False)]

    def triangle_count(self) -> int:
        return int(sum(len(m) for m in self.meshes))
