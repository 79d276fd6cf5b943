"""The native Papa document: one dataclass per record kind, bulk records as numpy arrays.

The document mirrors the file. Indices stay indices (string, texture, mesh, skeleton), and what
a byte-exact rewrite needs is kept: the header padding (exporter signatures), each string's raw
bytes and stored length, parameter strides, and the original block offsets (``layout``) with any
non-zero bytes found between blocks (``gaps``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from . import layout as lay

Arr = npt.NDArray[Any]
NONE16 = 0xFFFF

IDENTITY16 = np.eye(4, dtype="<f4").reshape(16)


def _empty(dt: np.dtype[Any]) -> Arr:
    return np.zeros(0, dtype=dt)


@dataclass(slots=True)
class PapaString:
    raw: bytes
    # The stored length field. Normally len(raw); Blender-PAPA-IO stores a code-point count.
    length: int = -1
    pad: int = 0
    terminated: bool = True

    def __post_init__(self) -> None:
        if self.length < 0:
            self.length = len(self.raw)

    @classmethod
    def of(cls, text: str) -> PapaString:
        return cls(text.encode("utf-8"))

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")


@dataclass(slots=True)
class Texture:
    name: int
    format: int
    width: int
    height: int
    mips: int
    srgb: bool
    data: bytes | None  # None: a linked texture (data_offset -1), ``name`` is its path
    linked_size: int = 0  # data_size field of a linked texture

    @property
    def linked(self) -> bool:
        return self.data is None


@dataclass(slots=True)
class VertexBuffer:
    format: int
    vertices: Arr  # structured array of layout.VERTEX_FORMATS[format]
    pad: bytes = b"\0\0\0"


@dataclass(slots=True)
class IndexBuffer:
    format: int
    indices: Arr  # <u2 or <u4
    pad: bytes = b"\0\0\0"


@dataclass(slots=True)
class Material:
    shader: int
    vectors: Arr = field(default_factory=lambda: _empty(lay.VECTOR_PARAM))
    textures: Arr = field(default_factory=lambda: _empty(lay.TEXTURE_PARAM))
    matrices: Arr = field(default_factory=lambda: _empty(lay.MATRIX_PARAM))
    vector_stride: int = 20
    matrix_stride: int = 68


@dataclass(slots=True)
class Mesh:
    vertex_buffer: int
    index_buffer: int
    groups: Arr = field(default_factory=lambda: _empty(lay.MATERIAL_GROUP))
    pad: int = 0


@dataclass(slots=True)
class Skeleton:
    bones: Arr = field(default_factory=lambda: _empty(lay.BONE))
    pad: tuple[int, int, int] = (0, 0, 0)


@dataclass(slots=True)
class MeshBinding:
    name: int
    mesh: int
    mesh2model: Arr = field(default_factory=lambda: IDENTITY16.copy())
    bone_map: Arr = field(default_factory=lambda: np.zeros(0, dtype="<u2"))
    pad: int = 0
    # The count field when it disagrees with the map (a count with offset -1).
    num_bone_mappings: int | None = None


@dataclass(slots=True)
class Model:
    name: int
    skeleton: int  # -1: none
    model2scene: Arr = field(default_factory=lambda: IDENTITY16.copy())
    bindings: list[MeshBinding] = field(default_factory=list)
    pad: int = 0


@dataclass(slots=True)
class Animation:
    name: int  # NONE16 in every sample: animations are named by their file
    bones: Arr  # <u2 string indices of the tracked bone names
    transforms: Arr  # (num_frames, num_bones) of layout.TRANSFORM, frame-major
    fps_num: int = 60
    fps_den: int = 1

    @property
    def num_frames(self) -> int:
        return int(self.transforms.shape[0])


@dataclass(slots=True)
class PapaDocument:
    strings: list[PapaString] = field(default_factory=list)
    textures: list[Texture] = field(default_factory=list)
    vertex_buffers: list[VertexBuffer] = field(default_factory=list)
    index_buffers: list[IndexBuffer] = field(default_factory=list)
    materials: list[Material] = field(default_factory=list)
    meshes: list[Mesh] = field(default_factory=list)
    skeletons: list[Skeleton] = field(default_factory=list)
    models: list[Model] = field(default_factory=list)
    animations: list[Animation] = field(default_factory=list)
    version: tuple[int, int] = lay.VERSION  # (minor, major)
    signature: bytes = b"\0" * 6  # header padding: zeros, or an exporter's credit
    # Where each block sat in the file read ({key: (offset, size)}), its total size, and the
    # non-zero bytes between blocks; None for documents built in code (papatran layout).
    layout: dict[tuple[Any, ...], tuple[int, int]] | None = None
    file_size: int = 0
    # The file read and where its blocks sat, from which ``gaps`` is found on first use: only a
    # rewrite in the same layout needs it, and a scan per read cost a tenth of the read.
    source: bytes | None = field(default=None, repr=False, compare=False)
    spans: list[tuple[int, int]] | None = field(default=None, repr=False, compare=False)
    _gaps: list[tuple[int, bytes]] | None = field(default=None, repr=False, compare=False)

    @property
    def gaps(self) -> list[tuple[int, bytes]]:
        """Non-zero bytes between the blocks of the file read (papatran leaves zeros)."""
        if self._gaps is None:
            self._gaps = [] if self.source is None or self.spans is None else \
                nonzero_gaps(self.source, self.spans)
        return self._gaps

    @gaps.setter
    def gaps(self, value: list[tuple[int, bytes]]) -> None:
        self._gaps = value

    # -- helpers -----------------------------------------------------------------------------
    def string(self, index: int, default: str = "") -> str:
        if 0 <= index < len(self.strings):
            return self.strings[index].text
        return default

    def add_string(self, text: str) -> int:
        """The index of ``text``, appended when new."""
        raw = text.encode("utf-8")
        for i, s in enumerate(self.strings):
            if s.raw == raw:
                return i
        self.strings.append(PapaString(raw))
        return len(self.strings) - 1

    @property
    def kind(self) -> str:
        """texture, animation, model, header-only or mixed (the spec's file kinds)."""
        has = {"texture": bool(self.textures), "animation": bool(self.animations),
               "model": bool(self.models or self.meshes or self.vertex_buffers)}
        kinds = [k for k, v in has.items() if v]
        if not kinds:
            return "header-only"
        return kinds[0] if len(kinds) == 1 else "mixed"


def nonzero_gaps(data: bytes, spans: list[tuple[int, int]]) -> list[tuple[int, bytes]]:
    """(offset, bytes) of every run outside the ``(offset, size)`` blocks that is not all
    zeros."""
    ends = sorted([(off, off + n) for off, n in spans if off >= 0 and n > 0])
    ends.append((len(data), len(data)))
    out: list[tuple[int, bytes]] = []
    cursor = 0
    for a, b in ends:
        if a > cursor and data.count(0, cursor, a) != a - cursor:
            out.append((cursor, data[cursor:a]))
        if b > cursor:
            cursor = b
    return out
