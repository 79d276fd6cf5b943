"""The PMF document: pieces in pre-order and baked animations, as the file holds them."""

from __future__ import annotations

from dataclasses import dataclass, field

from .layout import (
    ANIM_LOOP,
    F32,
    MAGIC,
    Arr,
    name_text,
)


@dataclass
class Piece:
    """One piece node. ``name`` is the 32 raw bytes (length byte included) so the undefined tail
    a Pascal ShortString leaves behind survives a round trip. ``translation`` is kept as float32
    bits (a NaN payload too)."""

    name: bytes
    translation: F32
    vertices: Arr  # VERTEX records
    parent: int = -1  # index of the parent piece in pre-order, -1 for the root
    children: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return name_text(self.name)

    @property
    def vertex_count(self) -> int:
        return len(self.vertices)


@dataclass
class Animation:
    """One animation: flags (bit 0 loop), fps, and every frame baked (``frame_dtype(N)``)."""

    name: bytes
    flags: int
    fps: int
    frames: Arr

    @property
    def text(self) -> str:
        return name_text(self.name)

    @property
    def loop(self) -> bool:
        return bool(self.flags & ANIM_LOOP)

    @property
    def frame_count(self) -> int:
        return len(self.frames)


@dataclass
class PmfDocument:
    """A whole file: the pieces in pre-order (index 0 is the root; this order is the order of the
    rotations in every frame), the animations, and whatever followed the last frame."""

    pieces: list[Piece]
    animations: list[Animation] = field(default_factory=list)
    magic: bytes = MAGIC
    trailing: bytes = b""

    @property
    def vertex_count(self) -> int:
        return sum(p.vertex_count for p in self.pieces)
