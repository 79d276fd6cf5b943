"""The PET document: its sections, in file order, as the file holds them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .layout import F32, FANM_DT, I32, U8, corner_dtype, fixstr


# -- sections --------------------------------------------------------------------------------
@dataclass
class RawSection:
    """A section gamemesh does not parse (unknown FourCC), or one it could not (SMTL
    MATRIXARRAY), kept as its bytes."""

    fourcc: bytes
    data: bytes


@dataclass
class Vers:
    raw: bytes = b"\x03\x01\xfe\xff"  # minor, major, tag 0xFFFE (2 to 4 bytes)

    @property
    def version(self) -> tuple[int, int]:
        return (self.raw[1], self.raw[0])


@dataclass
class Texture:
    name_raw: bytes  # 32 bytes, garbage after the NUL kept
    flag: int = 0
    group: int = 0
    pad: bytes = b"\0\0"
    diffuse: int = 0xFFFFFFFF
    handle: int = 0

    @property
    def name(self) -> str:
        return fixstr(self.name_raw)


@dataclass
class TextSection:
    textures: list[Texture] = field(default_factory=list)
    trailing: bytes = b""


@dataclass
class SmtlValue:
    name: bytes
    type: int
    value: bytes  # the value's bytes (for TEXTURE: the lstr's text bytes)


@dataclass
class SmtlMaterial:
    name: bytes
    values: list[SmtlValue] = field(default_factory=list)


@dataclass
class SmtlSection:
    materials: list[SmtlMaterial] = field(default_factory=list)
    trailing: bytes = b""


@dataclass
class BoneSection:
    """Bones as columns: names (raw CP949, no NUL), parent ids, the parents' id encoding and,
    except in .apet files, the (B, 12) row-vector 4x3 matrices and the 1.3 float."""

    names: list[bytes] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    parent_wide: list[bool] = field(default_factory=list)
    matrices: F32 | None = None  # (B, 12); None = .apet layout
    extra: F32 | None = None  # (B,) the 1.3 float, None before 1.3
    wide_count: bool = False  # count written as 00 + u16
    trailing: bytes = b""

    @property
    def count(self) -> int:
        return len(self.names)


@dataclass
class Track:
    bone: int
    wide: bool = False
    pos: F32 = field(default_factory=lambda: np.zeros((0, 4), np.float32))  # t, x, y, z
    rot: F32 = field(default_factory=lambda: np.zeros((0, 5), np.float32))  # t, x, y, z, w
    scale: F32 = field(default_factory=lambda: np.zeros((0, 4), np.float32))  # t, sx, sy, sz
    flags: F32 | None = None  # (K, 2) t, value (1.3 only)


@dataclass
class AnimSection:
    tracks: list[Track] = field(default_factory=list)
    terminator: bytes = b"\xff"  # FF, FE FF FF, or empty when the section just ends
    trailing: bytes = b""


@dataclass
class MeshSection:
    """Vertices (each in its main bone's space) with their influences, and triangle corners
    with per-corner normals and UV sets."""

    positions: F32  # (N, 3)
    inf_count: I32  # (N,) influences read until the byte weights reach 255
    inf_weight: U8  # (N, P)
    inf_bone: I32  # (N, P); -1 = none
    inf_wide: npt.NDArray[np.bool_]  # (N, P) id written with the 0xFE escape
    pad: U8  # (N, 2) the two bytes after a single influence
    # (3M,) corner records (:func:`corner_records`): the file's own records where their UV-set
    # count is fixed (often a read-only view of the input, the count field left out), else
    # padded to the largest count.
    corners: npt.NDArray[np.void]
    texture: U8  # (M,)
    specular: U8 | None = None  # (M,) ≥1.2
    skins: npt.NDArray[Any] | None = None  # SKIN_DT records: .mpet layout
    global_weight: F32 | None = None  # (N,) .mpet only
    trailing: bytes = b""

    @property
    def vertex_count(self) -> int:
        return len(self.positions)

    @property
    def poly_count(self) -> int:
        return len(self.texture)

    @property
    def uv_sets(self) -> int:
        return int(self.corners.dtype["uv"].shape[0])

    @property
    def corner_vertex(self) -> npt.NDArray[np.uint32]:
        """(3M,) each corner's vertex index."""
        return self.corners["vertex"]

    @property
    def corner_normal(self) -> F32:
        """(3M, 3) each corner's stored normal."""
        return self.corners["normal"]

    @property
    def corner_uv(self) -> F32:
        """(3M, U, 2) each corner's UV sets, zeros past its own count."""
        return self.corners["uv"]

    @property
    def corner_nuv(self) -> U8 | None:
        """(3M,) each corner's UV-set count where they differ (≥1.2); None where every corner
        has all the sets (a file from 1.2 still writes the count in each record)."""
        return self.corners["nuv"] if "nuv" in (self.corners.dtype.names or ()) else None


def corner_records(vertex: npt.ArrayLike, normal: npt.ArrayLike, uv: npt.ArrayLike,
                   nuv: npt.ArrayLike | None = None) -> npt.NDArray[np.void]:
    """Corner fields packed as :func:`corner_dtype` records: (N,) vertex indices, (N, 3)
    normals, (N, U, 2) UV sets and, where the corners' counts differ, (N,) UV-set counts."""
    v = np.asarray(vertex)
    sets = np.asarray(uv, np.float32).reshape(len(v), -1, 2)
    recs = np.zeros(len(v), corner_dtype(sets.shape[1], nuv is not None))
    recs["vertex"], recs["normal"], recs["uv"] = v, normal, sets
    if nuv is not None:
        recs["nuv"] = nuv
    return recs


@dataclass
class FanmSection:
    entries: npt.NDArray[Any] = field(default_factory=lambda: np.zeros(0, FANM_DT))
    trailing: bytes = b""


@dataclass
class Frame:
    index: int
    chunks: tuple[bytes, bytes, bytes]
    check: int | None = 0


@dataclass
class FramSection:
    frames: list[Frame] = field(default_factory=list)
    trailing: bytes = b""


@dataclass
class Motion:
    name: bytes
    frame_start: int
    frame_end: int
    next_move: bytes = b""
    connection_method: bytes = b""
    connection_time: float = 0.0
    root_bone: bytes = b""


@dataclass
class MotiSection:
    motions: list[Motion] = field(default_factory=list)
    trailing: bytes = b""


@dataclass
class CollBox:
    shape: int
    show: int
    box_name: bytes
    bone_name: bytes
    option1: bytes = b""
    option2: bytes = b""
    box: F32 = field(default_factory=lambda: np.zeros(6, np.float32))  # min xyz, max xyz


@dataclass
class CollSection:
    boxes: list[CollBox] = field(default_factory=list)
    trailing: bytes = b""


@dataclass
class ExtrSection:
    bones: list[int] = field(default_factory=list)
    wide: list[bool] = field(default_factory=list)
    trailing: bytes = b""


Payload = (Vers | TextSection | SmtlSection | BoneSection | AnimSection | MeshSection
           | FanmSection | FramSection | MotiSection | CollSection | ExtrSection | RawSection)


@dataclass
class Section:
    fourcc: bytes
    body: Payload


@dataclass
class PetDocument:
    """A PET file: its kind (from the extension), version and sections in file order."""

    kind: str = "pet"
    version: tuple[int, int] = (1, 3)
    sections: list[Section] = field(default_factory=list)
    tail: bytes = b""  # fewer than 8 bytes after the last section (ignored by readers)

    def get(self, fourcc: bytes) -> Payload | None:
        """The last section with this FourCC (#1 keeps the last MESH when there are several)."""
        for s in reversed(self.sections):
            if s.fourcc == fourcc and not isinstance(s.body, RawSection):
                return s.body
        return None

    @property
    def bones(self) -> BoneSection | None:
        b = self.get(b"BONE")
        return b if isinstance(b, BoneSection) else None

    @property
    def mesh(self) -> MeshSection | None:
        b = self.get(b"MESH")
        return b if isinstance(b, MeshSection) else None

    @property
    def anim(self) -> AnimSection | None:
        b = self.get(b"ANIM")
        return b if isinstance(b, AnimSection) else None

    @property
    def textures(self) -> list[Texture]:
        b = self.get(b"TEXT")
        return b.textures if isinstance(b, TextSection) else []
