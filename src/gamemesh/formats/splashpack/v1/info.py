"""`gamemesh info` facts of a version-1 SPLASHPACK document: its layout and what each section
holds."""

from __future__ import annotations

from typing import Any

from ..vram import atlas_depths
from .document import SplashpackDocument

__all__ = ["info"]


def info(doc: SplashpackDocument) -> dict[str, Any]:
    """Version, layout (and its dates) and what each section holds."""
    lay = doc.spec_layout
    depths = atlas_depths(doc.atlases["width"])
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
