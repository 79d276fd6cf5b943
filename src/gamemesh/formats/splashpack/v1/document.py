"""The native SPLASHPACK document: the file's records as numpy arrays, nothing converted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .layout import ATLAS_DESC, CLUT_DESC, LAYOUTS, LUA_DESC, NAV_DESC, Layout

Records = npt.NDArray[np.void]
U16 = npt.NDArray[np.uint16]
I32 = npt.NDArray[np.int32]


def _empty(dt: np.dtype[Any] | None) -> Records:
    return np.zeros(0, dtype=dt if dt is not None else CLUT_DESC)


@dataclass
class SplashpackDocument:
    """One version-1 file in one of the layouts B..H.

    Counts, offsets and lengths in ``header`` and the descriptor arrays are recomputed by the
    writer from the lists; every other field (player start, pads, flags, Lua indices, the inline
    CLUTs of layouts B and C) is written back as it is. ``gaps`` keeps the bytes between data
    blocks that are not the plain zero padding to 4 (by block number in file order), e.g. the tail
    of a Lua file that the exporter wrote but did not count.
    """

    layout: str = "G"
    header: Records = field(default_factory=lambda: np.zeros(1, LAYOUTS["G"].header))
    lua: list[bytes] = field(default_factory=list)
    lua_desc: Records = field(default_factory=lambda: _empty(LUA_DESC))
    objects: Records = field(default_factory=lambda: _empty(LAYOUTS["G"].go))
    meshes: list[Records] = field(default_factory=list)
    nav_desc: Records = field(default_factory=lambda: _empty(NAV_DESC))
    navmeshes: list[I32] = field(default_factory=list)  # (T, 3, 3) int32 each
    atlases: Records = field(default_factory=lambda: _empty(ATLAS_DESC))
    atlas_pixels: list[U16] = field(default_factory=list)  # (height, width) VRAM words each
    cluts: Records = field(default_factory=lambda: _empty(CLUT_DESC))
    clut_words: list[U16] = field(default_factory=list)  # layouts D..H
    gaps: dict[int, bytes] = field(default_factory=dict)

    @property
    def spec_layout(self) -> Layout:
        return LAYOUTS[self.layout]

    @property
    def version(self) -> int:
        return int(self.header["version"][0])

    def hfield(self, name: str, default: Any = 0) -> Any:
        """A header field, or ``default`` when this layout has no such field."""
        names = self.header.dtype.names or ()
        return self.header[name][0] if name in names else default

    def clut_entries(self) -> list[tuple[int, int, U16]]:
        """Every CLUT as (VRAM x, VRAM y, words), whatever layout stores it where."""
        lay = self.spec_layout
        if lay.clut == "per_object":
            return [(int(o["clut_x"]) * 16, int(o["clut_y"]), np.asarray(o["clut"]))
                    for o in self.objects]
        if lay.clut == "inline":
            return [(int(c["clut_x"]) * 16, int(c["clut_y"]),
                     np.asarray(c["palette"])[: min(256, int(c["count"]))]) for c in self.cluts]
        return [(int(c["clut_x"]) * 16, int(c["clut_y"]), w)
                for c, w in zip(self.cluts, self.clut_words, strict=False)]

    def triangle_count(self) -> int:
        return int(sum(len(m) for m in self.meshes))
