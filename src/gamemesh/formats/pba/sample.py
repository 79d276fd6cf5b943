"""Document facts for ``gamemesh info`` and a large generated model for the benchmark."""

from __future__ import annotations

from typing import Any

import numpy as np

from .layout import (
    ANIM_ROT,
    ANIM_ROTPOS,
    ANIMATED,
    BONE,
    MESH_TYPES,
    NAME,
    RIGID,
    UNVERIFIED_TYPES,
    VERTEX,
    FaceGroup,
    PbaDoc,
    PbaMesh,
    Sequence,
    VertexTrack,
    name_str,
    vertex_key,
)


def info(doc: PbaDoc) -> dict[str, Any]:
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


def _grid(n: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    """An (n x n) vertex grid in the XY plane at depth ``z`` and its triangles (file winding:
    clockwise seen from the normal, -Z, the Direct3D default front)."""
    ys, xs = np.mgrid[0:n, 0:n]
    v = np.zeros(n * n, dtype=VERTEX)
    v["pos"][:, 0] = xs.reshape(-1) / max(n - 1, 1)
    v["pos"][:, 1] = ys.reshape(-1) / max(n - 1, 1)
    v["pos"][:, 2] = z
    v["normal"][:, 2] = -1.0
    v["color"] = (200, 180, 160, 255)
    v["uv"][:, 0] = v["pos"][:, 0]
    v["uv"][:, 1] = 1.0 - v["pos"][:, 1]
    a = (ys[:-1, :-1] * n + xs[:-1, :-1]).reshape(-1)
    tris = np.stack([a, a + n, a + 1, a + 1, a + n, a + n + 1], axis=1).reshape(-1)
    return v, tris.astype(np.uint16)


def make_doc(size: int) -> PbaDoc:
    """Rigid groups of 255 x 255 grids (~2.7 MB each) plus a small animated mesh with a vertex
    track, filling about ``size`` bytes."""
    doc = PbaDoc(version=2, name=b"sample".ljust(32, b"\0"))
    doc.textures = np.array([b"sample"], dtype=NAME)
    bones = np.zeros(2, dtype=BONE)
    bones["name"] = [b"ANIM", b"BASE"]
    bones["parent"] = -1
    bones["rot"][:, 0] = 1.0
    doc.bones = bones
    av, at = _grid(16, 0.0)
    anim = PbaMesh(mesh_type=ANIMATED, name=b"ANIM".ljust(32, b"\0"), vertices=av,
                   groups=[FaceGroup(0, 0, at, np.zeros(0, NAME), num_vertices=len(av))])
    keys = np.zeros(8, dtype=vertex_key(len(av)))
    keys["time"] = np.arange(8) * 100
    keys["pos"] = np.random.default_rng(1).integers(0, 256, keys["pos"].shape, dtype=np.uint8)
    track = VertexTrack(0, len(av), np.zeros(3, "<f4"), np.ones(3, "<f4"), keys)
    doc.sequences = [Sequence(name=b"wave".ljust(32, b"\0"), duration=700,
                              vertex_tracks=[track])]
    rigid = PbaMesh(mesh_type=RIGID, name=b"BASE".ljust(32, b"\0"))
    fill = max(size - 20000, 0)
    # Per grid vertex: 36 bytes plus about two triangles of three u16 indices.
    side = int(min(255, max(2, np.sqrt(fill / 48))))
    per_group = side * side * VERTEX.itemsize + (side - 1) ** 2 * 12 + 16
    groups = max(1, round(fill / per_group))
    gv, gt = _grid(side, 0.0)
    for k in range(groups):
        v = gv.copy()
        v["pos"][:, 2] = k * 0.01
        rigid.groups.append(FaceGroup(0, 0, gt, np.zeros(0, NAME), vertices=v,
                                      num_vertices=len(v)))
    rigid.radius = np.array([2.0], "<f4")
    doc.meshes = [anim, rigid]
    return doc


def make_sample(size: int) -> bytes:
    from .write import write

    return write(make_doc(size))
