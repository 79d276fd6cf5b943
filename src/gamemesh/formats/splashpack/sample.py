"""The SPLASHPACK benchmark sample: a generated scene of a given size."""

from __future__ import annotations

import numpy as np

from .v1.document import SplashpackDocument
from .v1.layout import ATLAS_DESC, CLUT_DESC, LAYOUTS, LUA_DESC, NAV_DESC, TRI
from .v1.write import write


def make_sample(size_bytes: int) -> bytes:
    """A layout-G file of about ``size_bytes``: random triangles over one 8 bpp atlas."""
    rng = np.random.default_rng(4)
    doc = SplashpackDocument(layout="G", header=np.zeros(1, LAYOUTS["G"].header))
    doc.header["magic"], doc.header["version"] = b"SP", 1
    doc.header["player_height"] = 200
    doc.lua = [b"function onCreate(self)\n  print('sample')\nend\n"]
    doc.lua_desc = np.zeros(1, LUA_DESC)
    atlas = rng.integers(0, 0x10000, size=(256, 128), dtype=np.uint16)
    doc.atlas_pixels = [atlas]
    doc.atlases = np.zeros(1, ATLAS_DESC)
    doc.atlases["x"] = 320
    clut = rng.integers(1, 0x8000, size=256, dtype=np.uint16)
    doc.clut_words = [clut]
    doc.cluts = np.zeros(1, CLUT_DESC)
    doc.cluts["clut_y"] = 240
    doc.navmeshes = [np.array([[[-4000, 0, -4000], [-4000, 0, 4000], [4000, 0, 4000]]],
                              dtype=np.int32)]
    doc.nav_desc = np.zeros(1, NAV_DESC)
    total = max(1, (size_bytes - 32 - len(atlas.tobytes()) - 600) // TRI.itemsize)
    sizes = [min(0xFFFF, total - k) for k in range(0, total, 0xFFFF)]
    objs = np.zeros(len(sizes), LAYOUTS["G"].go)
    objs["rot"] = [4096, 0, 0, 0, 4096, 0, 0, 0, 4096]
    objs["lua_index"] = -1
    objs[0]["lua_index"] = 0
    doc.objects = objs
    for n in sizes:
        t = np.zeros(n, TRI)
        base = rng.integers(-8000, 8000, size=(n, 1, 3))
        t["v"] = base + rng.integers(-200, 200, size=(n, 3, 3))
        t["normal"] = [0, -4096, 0]
        t["color"][:, :, :3] = 128
        t["uv"] = rng.integers(0, 256, size=(n, 3, 2))
        t["tpage"], t["clut_y"] = 0x0285, 240
        doc.meshes.append(t)
    return write(doc)
