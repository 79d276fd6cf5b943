"""Record tables of the eight version-1 SPLASHPACK layouts (spec §b and §c).

Every layout is the same skeleton: a header, descriptor tables walked with one cursor in the order
Lua, GameObject, navmesh, atlas, CLUT, then data blocks in the same order, each aligned to 4. What
changes between layouts is the header, the GameObject record, the triangle record and where the
CLUT palettes live. The dtypes below name every field (padding included) so that a document keeps
everything it read and the writer can put it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

ClutKind = Literal["per_object", "inline", "data"]

# -- headers ----------------------------------------------------------------------------------
# Counts are rewritten from the document's lists on write; player fields and pads are kept.
HEADER_B = np.dtype([("magic", "S2"), ("version", "<u2"), ("go_count", "<u2"),
                     ("atlas_count", "<u2")])
HEADER_C = np.dtype([("magic", "S2"), ("version", "<u2"), ("go_count", "<u2"),
                     ("atlas_count", "<u2"), ("clut_count", "<u2"), ("pad", "<u2")])
HEADER_D = np.dtype([("magic", "S2"), ("version", "<u2"), ("go_count", "<u2"),
                     ("atlas_count", "<u2"), ("clut_count", "<u2"), ("pad", "<u2", (3,))])
HEADER_E = np.dtype([("magic", "S2"), ("version", "<u2"), ("go_count", "<u2"),
                     ("nav_count", "<u2"), ("atlas_count", "<u2"), ("clut_count", "<u2"),
                     ("pad", "<u2", (2,))])
HEADER_F = np.dtype([("magic", "S2"), ("version", "<u2"), ("go_count", "<u2"),
                     ("nav_count", "<u2"), ("atlas_count", "<u2"), ("clut_count", "<u2"),
                     ("player_pos", "<i2", (3,)), ("player_rot", "<i2", (3,)),
                     ("player_height", "<u2"), ("pad", "<u2")])
# G (the seed) and H share the 32-byte header; H gives 0x1C the scene Lua index (-1 = none).
HEADER_G = np.dtype([("magic", "S2"), ("version", "<u2"), ("lua_count", "<u2"),
                     ("go_count", "<u2"), ("nav_count", "<u2"), ("atlas_count", "<u2"),
                     ("clut_count", "<u2"), ("player_pos", "<i2", (3,)),
                     ("player_rot", "<i2", (3,)), ("player_height", "<u2"),
                     ("scene_lua", "<i2"), ("pad", "<u2")])

# -- GameObject descriptors -----------------------------------------------------------------
# B: the object carries its own tpage and a whole 256-entry CLUT inline.
GO_B = np.dtype([("pos", "<i4", (3,)), ("rot", "<i4", (9,)), ("tri_count", "<u2"),
                 ("tpage", "<u2"), ("clut_x", "<u2"), ("clut_y", "<u2"),
                 ("clut", "<u2", (256,)), ("mesh_offset", "<u4")])
# C: offset after the transform and a signed 32-bit triangle count.
GO_C = np.dtype([("pos", "<i4", (3,)), ("rot", "<i4", (9,)), ("mesh_offset", "<u4"),
                 ("tri_count", "<i4")])
# D..G: offset first; 0x36 is "reserved" until G names it the Lua file index.
GO_G = np.dtype([("mesh_offset", "<u4"), ("pos", "<i4", (3,)), ("rot", "<i4", (9,)),
                 ("tri_count", "<u2"), ("lua_index", "<i2")])
# H: + u32 flags (bit 0 = active).
GO_H = np.dtype([("mesh_offset", "<u4"), ("pos", "<i4", (3,)), ("rot", "<i4", (9,)),
                 ("tri_count", "<u2"), ("lua_index", "<i2"), ("flags", "<u4")])

# -- triangles ------------------------------------------------------------------------------
# B: 44 bytes, UVs (+pad) before the colours, no per-triangle tpage/CLUT.
TRI_B = np.dtype([("v", "<i2", (3, 3)), ("normal", "<i2", (3,)), ("uv", "u1", (3, 2)),
                  ("uv_pad", "<u2"), ("color", "u1", (3, 4))])
# C..H: the 52-byte seed triangle (spec §b.5).
TRI = np.dtype([("v", "<i2", (3, 3)), ("normal", "<i2", (3,)), ("color", "u1", (3, 4)),
                ("uv", "u1", (3, 2)), ("uv_pad", "<u2"), ("tpage", "<u2"), ("clut_x", "<u2"),
                ("clut_y", "<u2"), ("pad", "<u2")])

# -- navmesh, atlas, CLUT -------------------------------------------------------------------
LUA_DESC = np.dtype([("offset", "<u4"), ("length", "<u4")])
NAV_DESC = np.dtype([("offset", "<u4"), ("tri_count", "<u2"), ("pad", "<u2")])
NAV_TRI = np.dtype([("v", "<i4", (3, 3))])
ATLAS_DESC = np.dtype([("offset", "<u4"), ("width", "<u2"), ("height", "<u2"), ("x", "<u2"),
                       ("y", "<u2")])
# C: the palette sits inside the 520-byte descriptor.
CLUT_DESC_C = np.dtype([("palette", "<u2", (256,)), ("clut_x", "<u2"), ("clut_y", "<u2"),
                        ("count", "<u2"), ("pad", "<u2")])
CLUT_DESC = np.dtype([("offset", "<u4"), ("clut_x", "<u2"), ("clut_y", "<u2"),
                      ("count", "<u2"), ("pad", "<u2")])

for _dt, _size in ((HEADER_B, 8), (HEADER_C, 12), (HEADER_D, 16), (HEADER_E, 16),
                   (HEADER_F, 28), (HEADER_G, 32), (GO_B, 572), (GO_C, 56), (GO_G, 56),
                   (GO_H, 60), (TRI_B, 44), (TRI, 52), (NAV_TRI, 36), (CLUT_DESC_C, 520)):
    assert _dt.itemsize == _size, (_dt, _size)


@dataclass(frozen=True)
class Layout:
    """One version-1 layout: its records and which sections it has."""

    name: str
    header: np.dtype[np.void]
    go: np.dtype[np.void]
    tri: np.dtype[np.void]
    has_lua: bool
    has_nav: bool
    clut: ClutKind
    dates: str

    @property
    def clut_desc(self) -> np.dtype[np.void] | None:
        return {"per_object": None, "inline": CLUT_DESC_C, "data": CLUT_DESC}[self.clut]

    @property
    def has_player(self) -> bool:
        return "player_pos" in (self.header.names or ())


LAYOUTS: dict[str, Layout] = {
    "B": Layout("B", HEADER_B, GO_B, TRI_B, False, False, "per_object", "2025-03-23..26"),
    "C": Layout("C", HEADER_C, GO_C, TRI, False, False, "inline", "2025-03-30"),
    "D": Layout("D", HEADER_D, GO_G, TRI, False, False, "data", "2025-04-03"),
    "E": Layout("E", HEADER_E, GO_G, TRI, False, True, "data", "2025-04-03..07"),
    "F": Layout("F", HEADER_F, GO_G, TRI, False, True, "data", "2025-04-07"),
    "G": Layout("G", HEADER_G, GO_G, TRI, True, True, "data", "2025-04-09..15"),
    "H": Layout("H", HEADER_G, GO_H, TRI, True, True, "data", "2025-04-17..2025-09-04"),
}

# Detection tries the seed layout G first (a file with no objects is the same in G and H), then
# the newer H, then back through time.
DETECT_ORDER = ("G", "H", "F", "E", "D", "C", "B")

VERSION = 1
# The first public layout (A, 2025-03-22/23): 8-byte header like B, 56-byte GameObject
# {pos, rot, u16 tpage, u16 triCount, u32 meshOffset}, 44-byte triangles. No sample exists.
GO_A_SIZE = 56
