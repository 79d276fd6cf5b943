"""SPLASHPACK: the scene file of psxsplash, a PlayStation 1 engine, written by the SplashEdit
Unity exporter and linked into the PS-EXE.

Versions: the version field is 1 for eight layouts (A..H, 2025-03-22 to 2025-09-04). Layouts B..H
are read and written back byte for byte, found by the file's own arithmetic; layout A (no public
sample) and versions 2 and later (17+, the 2026 rewrite) are refused with
UnsupportedVersionError. New files are written in layout G (the seed's), or H on request.

Spec: ``shared/specs/splashpack.md`` (it corrects the seed ``002_a0486480ea728084.txt``: 36-byte
navmesh triangles, signed player fields, GTEScaling not stored). Public sources of the facts:
psxsplash/splashedit ``Runtime/PSXSceneExporter.cs`` (writer), psxsplash/psxsplash
``src/splashpack.cpp`` (reader), psyqo (``TPageAttr``, ``Color``) and the ``output.bin`` samples
the psxsplash author committed from 2025-03-26 to 2025-09-04.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import FormatSpec, Option
from .build import from_scene
from .document import SplashpackDoc
from .layout import ATLAS_DESC, CLUT_DESC, LAYOUTS, LUA_DESC, NAV_DESC, TRI
from .read import read, sniff
from .scene import to_scene, vram_png
from .write import write

__all__ = ["SPEC", "SplashpackDoc", "info", "make_sample"]


def info(doc: SplashpackDoc) -> dict[str, Any]:
    lay = doc.spec_layout
    depths: dict[str, int] = {}
    for d in doc.atlases:
        bpp = {64: 4, 128: 8, 256: 16}.get(int(d["width"]), 0)
        key = f"{bpp}bpp" if bpp else f"{int(d['width'])}words"
        depths[key] = depths.get(key, 0) + 1
    out: dict[str, Any] = {
        "version": doc.version,
        "layout": doc.layout,
        "layout_dates": lay.dates,
        "lua_files": len(doc.lua),
        "objects": len(doc.meshes),
        "triangles": doc.triangle_count(),
        "navmeshes": len(doc.navmeshes),
        "navmesh_triangles": int(sum(len(n) for n in doc.navmeshes)),
        "atlases": len(doc.atlas_pixels),
        "atlas_depths": depths,
        "cluts": len(doc.clut_entries()),
    }
    if lay.has_player:
        out["player_start_raw"] = [int(x) for x in doc.hfield("player_pos")]
        out["player_height_raw"] = int(doc.hfield("player_height"))
    if doc.layout == "H":
        out["scene_lua_index"] = int(doc.hfield("scene_lua"))
    return out


def make_sample(size_bytes: int) -> bytes:
    """A layout-G file of about ``size_bytes``: random triangles over one 8 bpp atlas."""
    rng = np.random.default_rng(4)
    doc = SplashpackDoc(layout="G", header=np.zeros(1, LAYOUTS["G"].header))
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


SPEC = FormatSpec(
    name="splashpack",
    title="SPLASHPACK (psxsplash PS1 scene, version 1 layouts B..H)",
    extensions=(".splashpack", ".bin"),
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    info=info,
    document_type=SplashpackDoc,
    make_sample=make_sample,
    options=(
        Option("gte_scaling", "scene units per GTE unit (not stored in the file; reading "
               "assumes 100, writing picks one from the scene's bounds)", float),
        Option("layout", "layout of new files: G (the seed's) or H (60-byte objects, scene Lua)",
               str, "G", ("G", "H")),
        Option("extract", "also write the Lua sources as .lua files into this folder", str),
        Option("bpp", "texel depth for written textures (default: 4 or 8 from the colour count; "
               "16 = direct colour)", int, None, (4, 8, 16)),
        Option("lua", "a Lua source file to add to a written scene (repeatable)", str,
               multiple=True),
    ),
    exports={".png": vram_png},
    notes="The whole VRAM converts to PNG: gamemesh convert scene.bin vram.png",
)
