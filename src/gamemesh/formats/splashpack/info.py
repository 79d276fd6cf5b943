"""`gamemesh info` facts of a SPLASHPACK document: version, layout and what each section holds."""

from __future__ import annotations

from typing import Any

from .document import Document, ModernDocument


def _depths(widths: Any) -> dict[str, int]:
    depths: dict[str, int] = {}
    for w in widths:
        bpp = {64: 4, 128: 8, 256: 16}.get(int(w), 0)
        key = f"{bpp}bpp" if bpp else f"{int(w)}words"
        depths[key] = depths.get(key, 0) + 1
    return depths


def modern_info(doc: ModernDocument) -> dict[str, Any]:
    """Version, the sidecars found, and what each section holds."""
    vram = doc.vram
    sections = {
        "lua_files": len(doc.lua), "objects": len(doc.objects),
        "triangles": doc.triangle_count(),
        "untextured_triangles": int(sum(int((m["tpage"] == 0xFFFF).sum()) for m in doc.meshes)),
        "colliders": len(doc.colliders), "triggers": len(doc.triggers),
        "bvh_nodes": len(doc.bvh_nodes), "bvh_tri_refs": len(doc.bvh_refs),
        "interactables": len(doc.interactables), "agents": len(doc.agents),
        "nav_regions": len(doc.nav_regions), "nav_portals": len(doc.nav_portals),
        "rooms": len(doc.rooms), "cutscenes": len(doc.cutscenes),
        "animations": [{"name": s.name.decode("utf-8", "replace"), "tracks": len(s.tracks)}
                       for s in doc.animations],
        "skinned_meshes": [{"object": sk.go_index, "bones": sk.bone_count,
                            "clips": [{"name": c.name.decode("utf-8", "replace"), "fps": c.fps,
                                       "frames": int(c.matrices.shape[0])} for c in sk.clips]}
                           for sk in doc.skins],
        "point_lights": len(doc.lights),
        "opaque_blocks": sorted(k.removesuffix("_offset") for k in doc.opaque),
    }
    out: dict[str, Any] = {"version": doc.version, "layout": f"v{doc.version} (upstream psxsplash)",
                           "header_size": doc.header.dtype.itemsize,
                           "scene_type": "interior" if int(doc.hfield("scene_type")) else
                           "exterior", "sidecars": dict(doc.sidecars), **sections}
    if vram is not None:
        out["vram"] = {"atlases": len(vram.atlas_pixels),
                       "atlas_depths": _depths(vram.atlases["width"]),
                       "cluts": len(vram.clut_words), "fonts": len(vram.font_data)}
    else:
        out["vram"] = None
    out["object_names"] = [n.decode("utf-8", "replace") for n in doc.names[:50]]
    return out


def info(doc: Document) -> dict[str, Any]:
    if isinstance(doc, ModernDocument):
        return modern_info(doc)
    lay = doc.spec_layout
    depths = _depths(doc.atlases["width"])
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
