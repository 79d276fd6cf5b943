"""`gamemesh info` facts of a PBA document."""

from __future__ import annotations

from typing import Any

from .document import PbaDocument
from .layout import (
    ANIM_ROT,
    ANIM_ROTPOS,
    MESH_TYPES,
    RIGID,
    UNVERIFIED_TYPES,
    name_str,
)


def info(doc: PbaDocument) -> dict[str, Any]:
    meshes = []
    for m in doc.meshes:
        kind = MESH_TYPES.get(m.mesh_type, f"unknown ({m.mesh_type})")
        entry: dict[str, Any] = {"name": m.label, "type": m.mesh_type, "kind": kind,
                                 "groups": len(m.groups)}
        if m.raw is not None:
            entry["kept_raw_bytes"] = len(m.raw)
        if m.mesh_type in UNVERIFIED_TYPES:
            entry["unverified"] = True  # layout from the OCR-damaged seed only
        if m.mesh_type == RIGID:
            entry["vertices"] = sum(len(g.vertices) for g in m.groups if g.vertices is not None)
        elif m.vertices is not None:
            entry["vertices"] = len(m.vertices)
        elif m.vertex_groups:
            entry["vertices"] = sum(len(v.vertices) for v in m.vertex_groups)
        entry["triangles"] = sum(len(g.indices) // 3 for g in m.groups)
        meshes.append(entry)
    seqs = [{"name": s.label, "duration_ms": s.duration,
             "node_tracks": len(s.node_tracks), "vertex_tracks": len(s.vertex_tracks),
             "node_track_types": sorted({{ANIM_ROT: "ROT", ANIM_ROTPOS: "ROTPOS"}.get(
                 t.anim_type, "raw") for t in s.node_tracks}),
             **({"kept_raw_bytes": len(s.raw)} if s.raw is not None else {})}
            for s in doc.sequences]
    return {
        "format": "pba",
        "version": doc.version,
        "kind": "model",
        "layout": "civilisation lists" if doc.civ_lists else "no civilisation lists",
        "header_dwords": 1 if doc.header_extra is None else 2,
        "name": doc.label,
        "bones": len(doc.bones),
        "textures": [name_str(t) for t in doc.textures.tolist()],
        "meshes": meshes,
        "mesh_types": sorted({MESH_TYPES.get(m.mesh_type, "unknown") for m in doc.meshes}),
        "unverified_mesh_types": sorted({MESH_TYPES[m.mesh_type] for m in doc.meshes
                                         if m.mesh_type in UNVERIFIED_TYPES}),
        "sequences": seqs,
        "trailing_bytes": len(doc.trailing),
    }
