"""`gamemesh info` facts of a PET document: version, kind, sections and counts."""

from __future__ import annotations

from typing import Any

from .document import PetDocument


def info(doc: PetDocument) -> dict[str, Any]:
    out: dict[str, Any] = {"version": "{}.{}".format(*doc.version), "kind": doc.kind,
                           "sections": [s.fourcc.decode("latin-1") for s in doc.sections]}
    bones = doc.bones
    out["bones"] = bones.count if bones is not None else 0
    out["bone_layout"] = ("none" if bones is None else
                          "names only (apet)" if bones.matrices is None else "matrices")
    out["textures"] = len(doc.textures)
    mesh = doc.mesh
    if mesh is not None:
        out.update(vertices=mesh.vertex_count, triangles=mesh.poly_count, uv_sets=mesh.uv_sets,
                   max_influences=int(mesh.inf_count.max()) if mesh.vertex_count else 0,
                   mesh_layout="skin list (mpet)" if mesh.skins is not None else "plain")
    anim = doc.anim
    if anim is not None:
        out["tracks"] = len(anim.tracks)
        out["keys"] = int(sum(len(t.pos) + len(t.rot) + len(t.scale) for t in anim.tracks))
    for fourcc, attr, key in ((b"MOTI", "motions", "motions"), (b"COLL", "boxes", "boxes"),
                              (b"FRAM", "frames", "frames")):
        body = doc.get(fourcc)
        if body is not None and hasattr(body, attr):
            out[key] = len(getattr(body, attr))
    return out
