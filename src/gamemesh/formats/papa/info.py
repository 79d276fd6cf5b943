"""`gamemesh info` facts of a Papa document: version, counts and texture formats."""

from __future__ import annotations

from typing import Any

from . import layout as lay
from .document import PapaDocument
from .textures import format_name


def info(doc: PapaDocument) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version": f"{doc.version[1]}.{doc.version[0]}",
        "kind": doc.kind,
        # Every file read keeps its own block layout, so only a document built from a scene
        # (laid out as papatran lays files out) has a layout worth naming.
        **({} if doc.layout is not None else {"layout": "papatran"}),
        "strings": len(doc.strings), "textures": len(doc.textures),
        "vertex_buffers": len(doc.vertex_buffers), "index_buffers": len(doc.index_buffers),
        "materials": len(doc.materials), "meshes": len(doc.meshes),
        "skeletons": len(doc.skeletons), "models": len(doc.models),
        "animations": len(doc.animations),
        "vertices": sum(len(vb.vertices) for vb in doc.vertex_buffers),
        "indices": sum(len(ib.indices) for ib in doc.index_buffers),
        "bones": sum(len(s.bones) for s in doc.skeletons),
    }
    sig = doc.signature.rstrip(b"\0")
    if sig:
        out["signature"] = sig.decode("ascii", errors="replace")
    if doc.vertex_buffers:
        out["vertex_formats"] = sorted({f"{vb.format} {lay.VERTEX_FORMATS[vb.format][0]}"
                                        for vb in doc.vertex_buffers})
    if doc.index_buffers:
        out["index_formats"] = sorted({lay.INDEX_FORMATS[ib.format][0] for ib in doc.index_buffers})
    if doc.textures:
        out["texture_list"] = [
            {"name": doc.string(t.name), "format": format_name(t.format), "width": t.width,
             "height": t.height, "mips": t.mips, "srgb": t.srgb, "linked": t.linked}
            for t in doc.textures]
    if doc.materials:
        out["shaders"] = sorted({doc.string(m.shader) for m in doc.materials})
    if doc.models:
        out["model_list"] = [{"name": doc.string(m.name), "skeleton": m.skeleton,
                              "mesh_bindings": len(m.bindings)} for m in doc.models]
    if doc.animations:
        out["animation_list"] = [{"tracks": len(a.bones), "frames": a.num_frames,
                                  "fps": f"{a.fps_num}/{a.fps_den}"} for a in doc.animations]
    return out
