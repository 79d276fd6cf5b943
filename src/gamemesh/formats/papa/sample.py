"""A generated skinned model of about a given size, for the benchmark and the demo."""

from __future__ import annotations

import numpy as np

from . import layout as lay
from .document import (
    NONE16,
    IndexBuffer,
    Material,
    Mesh,
    MeshBinding,
    Model,
    PapaDocument,
    Skeleton,
    VertexBuffer,
)
from .write import write


def make_sample(size_bytes: int = 1 << 20) -> bytes:
    """A wavy grid in vertex format 8 (skinned to a 4-bone chain), u32 indices when needed,
    laid out as papatran does. Vertex + index data is about ``size_bytes``."""
    # Per grid vertex: 40 bytes of vertex data + ~6 indices of 2 or 4 bytes.
    side = max(2, int(np.sqrt(max(size_bytes, 1024) / 64.0)))
    n = side * side
    u, v = np.meshgrid(np.linspace(0.0, 1.0, side), np.linspace(0.0, 1.0, side))
    verts = np.zeros(n, dtype=lay.VERTEX_FORMATS[8][1])
    x, y = (u.reshape(-1) - 0.5) * 10.0, (v.reshape(-1) - 0.5) * 10.0
    z = 0.3 * np.sin(x) * np.cos(y)
    verts["position"] = np.stack([x, y, z], 1)
    nrm = np.stack([-0.3 * np.cos(x) * np.cos(y), 0.3 * np.sin(x) * np.sin(y), np.ones(n)], 1)
    verts["normal"] = nrm / np.linalg.norm(nrm, axis=1, keepdims=True)
    verts["texcoord0"] = np.stack([u.reshape(-1), v.reshape(-1)], 1)
    bone = np.clip((u.reshape(-1) * 4).astype(np.int64), 0, 3)
    verts["bones"][:, 0] = bone
    verts["weights"][:, 0] = 255
    r = np.arange(side - 1)
    a = (r[:, None] * side + r[None, :]).reshape(-1)
    quads = np.stack([a, a + 1, a + side + 1, a, a + side + 1, a + side], 1).reshape(-1)
    ifmt = 1 if n > 0xFFFF else 0
    doc = PapaDocument()
    doc.vertex_buffers.append(VertexBuffer(8, verts))
    doc.index_buffers.append(IndexBuffer(ifmt, quads.astype(lay.INDEX_FORMATS[ifmt][1])))
    groups = np.zeros(1, dtype=lay.MATERIAL_GROUP)
    groups[0] = (NONE16, 0, 0, len(quads) // 3, 2, (0, 0, 0))
    doc.meshes.append(Mesh(0, 0, groups))
    vec = np.zeros(1, dtype=lay.VECTOR_PARAM)
    vec[0] = (doc.add_string("DiffuseColor"), 0, (0.8, 0.8, 0.8, 1.0))
    doc.materials.append(Material(doc.add_string("solid"), vec))
    bones = np.zeros(4, dtype=lay.BONE)
    bones["parent"] = [-1, 0, 1, 2]
    bones["translation"] = [[-5.0, 0, 0], [2.5, 0, 0], [2.5, 0, 0], [2.5, 0, 0]]
    bones["rotation"] = [0, 0, 0, 1]
    bones["shear_scale"] = np.eye(3).reshape(9)
    b2b = np.tile(np.eye(4), (4, 1, 1))
    b2b[:, 0, 3] = -(np.arange(4) * 2.5 - 5.0)
    bones["bind2bone"] = b2b.transpose(0, 2, 1).reshape(4, 16)
    bones["name"] = [doc.add_string(f"bone_{k}") for k in range(4)]
    doc.skeletons.append(Skeleton(bones))
    name = doc.add_string("sample_mesh")
    doc.models.append(Model(name, 0, bindings=[MeshBinding(name, 0,
                                                           bone_map=np.arange(4, dtype="<u2"))]))
    return write(doc)
