"""`gamemesh info` facts of a SPLASHPACK document: version, layout and what each section holds."""

from __future__ import annotations

from typing import Any

from .document import SplashpackDocument


def info(doc: SplashpackDocument) -> dict[str, Any]:
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
