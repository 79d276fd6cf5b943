"""The PBA benchmark sample: a large generated model of every mesh kind."""

from __future__ import annotations

import numpy as np

from .document import FaceGroup, PbaDocument, PbaMesh, Sequence, VertexTrack
from .layout import (
    ANIMATED,
    BONE,
    NAME,
    RIGID,
    VERTEX,
    vertex_key,
)


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


def make_doc(size: int) -> PbaDocument:
    """Rigid groups of 255 x 255 grids (~2.7 MB each) plus a small animated mesh with a vertex
    track, filling about ``size`` bytes."""
    doc = PbaDocument(version=2, name=b"sample".ljust(32, b"\0"))
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
