"""`gamemesh info` facts of a modern SPLASHPACK document: version, the sidecars found, and what
each section holds."""

from __future__ import annotations

from typing import Any

from ..vram import atlas_depths
from .document import ModernDocument

__all__ = ["modern_info"]


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
        "audio_clips": [n.decode("utf-8", "replace") for n in doc.audio_names],
        "opaque_blocks": sorted(k.removesuffix("_offset") for k in doc.opaque),
    }
    out: dict[str, Any] = {"version": doc.version, "layout": f"v{doc.version} (upstream psxsplash)",
                           "header_size": doc.header.dtype.itemsize,
                           "scene_type": "interior" if int(doc.hfield("scene_type")) else
                           "exterior", "sidecars": dict(doc.sidecars), **sections}
    if vram is not None:
        out["vram"] = {"atlases": len(vram.atlas_pixels),
                       "atlas_depths": atlas_depths(vram.atlases["width"]),
                       "cluts": len(vram.clut_words), "fonts": len(vram.font_data)}
    else:
        out["vram"] = None
    out["object_names"] = [n.decode("utf-8", "replace") for n in doc.names[:50]]
    return out
