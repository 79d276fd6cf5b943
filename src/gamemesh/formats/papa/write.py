""":class:`PapaDocument` -> bytes.

A document that was read keeps its block offsets (``doc.layout``); while every block still has
its recorded size, the writer puts each one back where it was, so ``write(read(b)) == b`` even
for files whose string data is not in index order (stock ``transport.papa``) or that carry an
exporter signature. Anything else is laid out as papatran does it (spec "File layout"): header,
then model, mesh, material, texture, vertex buffer, index buffer, skeleton, animation and string
sections, each its table followed by its payloads, every block 8-aligned with zero fill, -1 for
absent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from . import layout as lay
from .document import Material, PapaDocument

Key = tuple[Any, ...]


def write(doc: PapaDocument, ctx: Context | None = None) -> bytes:
    _check_limits(doc)
    payloads = _payloads(doc)
    order = _order(doc, payloads)
    sizes = {k: _size(doc, k, payloads) for k in order}
    offsets = _kept_offsets(doc, order, sizes)
    fresh = offsets is None
    if offsets is None:
        offsets, end = _fresh_offsets(order, sizes)
    else:
        end = doc.file_size
    declared = {} if fresh or doc.layout is None else \
        {k[1:]: v[0] for k, v in doc.layout.items() if k[0] == "n"}
    for s in range(9):
        payloads[("table", s)] = _table(doc, s, offsets, declared)
    for i in range(len(doc.models)):
        payloads[("bindings", i)] = _bindings(doc, i, offsets)
    buf = bytearray(end)
    buf[:lay.HEADER_SIZE] = _header(doc, offsets, declared)
    for k in order:
        off, data = offsets[k], payloads[k]
        if off >= 0 and data:
            buf[off:off + len(data)] = data
    if not fresh:
        for off, gap in doc.gaps:
            buf[off:off + len(gap)] = gap
    return bytes(buf)


# -- limits ----------------------------------------------------------------------------------
def _check_limits(doc: PapaDocument) -> None:
    counts = {"strings": len(doc.strings), "textures": len(doc.textures),
              "vertex_buffers": len(doc.vertex_buffers), "index_buffers": len(doc.index_buffers),
              "materials": len(doc.materials), "meshes": len(doc.meshes),
              "skeletons": len(doc.skeletons), "models": len(doc.models),
              "animations": len(doc.animations)}
    for name, n in counts.items():
        if n > 0xFFFF:
            msg = f"too many {name} for a u16 count"
            raise LimitError(lay.FMT, msg, field=f"header.num_{name}", expected="<= 65535",
                             actual=n)
    for i, vb in enumerate(doc.vertex_buffers):
        if len(vb.vertices) > 0xFFFFFFFF:
            msg = "too many vertices"
            raise LimitError(lay.FMT, msg, field=f"vertex_buffers[{i}]", expected="< 2**32",
                             actual=len(vb.vertices))


# -- payload blocks --------------------------------------------------------------------------
def _params(m: Material) -> tuple[bytes, bytes, bytes]:
    vec = np.asarray(m.vectors, dtype=lay.VECTOR_PARAM)
    mat = np.asarray(m.matrices, dtype=lay.MATRIX_PARAM)
    if m.vector_stride == 24:
        vec = _widen(vec, lay.VECTOR_PARAM_24)
    if m.matrix_stride == 72:
        mat = _widen(mat, lay.MATRIX_PARAM_72)
    return vec.tobytes(), np.asarray(m.textures, dtype=lay.TEXTURE_PARAM).tobytes(), mat.tobytes()


def _widen(a: Any, dt: np.dtype[Any]) -> Any:
    out = np.zeros(len(a), dtype=dt)
    for name in ("name", "pad", "value"):
        out[name] = a[name]
    return out


def _payloads(doc: PapaDocument) -> dict[Key, bytes]:
    p: dict[Key, bytes] = {}
    for i, model in enumerate(doc.models):
        for j, b in enumerate(model.bindings):
            p[("bonemap", i, j)] = np.asarray(b.bone_map, dtype="<u2").tobytes()
    for i, mesh in enumerate(doc.meshes):
        p[("groups", i)] = np.asarray(mesh.groups, dtype=lay.MATERIAL_GROUP).tobytes()
    for i, mat in enumerate(doc.materials):
        p[("vec", i)], p[("texp", i)], p[("mat", i)] = _params(mat)
    for i, tex in enumerate(doc.textures):
        p[("tex", i)] = b"" if tex.data is None else bytes(tex.data)
    for i, vb in enumerate(doc.vertex_buffers):
        dt = lay.VERTEX_FORMATS[vb.format][1]
        p[("vb", i)] = np.ascontiguousarray(vb.vertices, dtype=dt).tobytes()
    for i, ib in enumerate(doc.index_buffers):
        p[("ib", i)] = np.ascontiguousarray(ib.indices, dtype=lay.INDEX_FORMATS[ib.format][1]) \
            .tobytes()
    for i, sk in enumerate(doc.skeletons):
        p[("bones", i)] = np.asarray(sk.bones, dtype=lay.BONE).tobytes()
    for i, anim in enumerate(doc.animations):
        p[("abones", i)] = np.asarray(anim.bones, dtype="<u2").tobytes()
        p[("atrans", i)] = np.ascontiguousarray(anim.transforms, dtype=lay.TRANSFORM).tobytes()
    for i, s in enumerate(doc.strings):
        p[("str", i)] = s.raw + (b"\0" if s.terminated else b"")
    return p


def _order(doc: PapaDocument, p: dict[Key, bytes]) -> list[Key]:
    """Every block in papatran's order."""
    per_section: dict[int, list[Key]] = {
        lay.S_MODEL: [k for i, m in enumerate(doc.models)
                      for k in [("bindings", i),
                                *[("bonemap", i, j) for j in range(len(m.bindings))]]],
        lay.S_MESH: [("groups", i) for i in range(len(doc.meshes))],
        lay.S_MATERIAL: [(kind, i) for i in range(len(doc.materials))
                       for kind in ("vec", "texp", "mat")],
        lay.S_TEXTURE: [("tex", i) for i in range(len(doc.textures))],
        lay.S_VB: [("vb", i) for i in range(len(doc.vertex_buffers))],
        lay.S_IB: [("ib", i) for i in range(len(doc.index_buffers))],
        lay.S_SKELETON: [("bones", i) for i in range(len(doc.skeletons))],
        lay.S_ANIMATION: [(kind, i) for i in range(len(doc.animations))
                        for kind in ("abones", "atrans")],
        lay.S_STRING: [("str", i) for i in range(len(doc.strings))],
    }
    order: list[Key] = []
    for s in lay.BUILD_ORDER:
        order.append(("table", s))
        order.extend(per_section[s])
    return order


def _count(doc: PapaDocument, s: int) -> int:
    return len((doc.strings, doc.textures, doc.vertex_buffers, doc.index_buffers, doc.materials,
                doc.meshes, doc.skeletons, doc.models, doc.animations)[s])


def _size(doc: PapaDocument, k: Key, p: dict[Key, bytes]) -> int:
    if k[0] == "table":
        return _count(doc, k[1]) * lay.ENTRY_DTYPES[k[1]].itemsize
    if k[0] == "bindings":
        return len(doc.models[k[1]].bindings) * lay.MESH_BINDING.itemsize
    return len(p[k])


def _kept_offsets(doc: PapaDocument, order: list[Key], sizes: dict[Key, int]) -> \
        dict[Key, int] | None:
    lay = doc.layout
    if lay is None:
        return None
    out: dict[Key, int] = {}
    for k in order:
        got = lay.get(k)
        if got is None or got[1] != sizes[k] or (sizes[k] and got[0] + sizes[k] > doc.file_size):
            return None
        out[k] = got[0]
    return out


def _fresh_offsets(order: list[Key], sizes: dict[Key, int]) -> tuple[dict[Key, int], int]:
    out: dict[Key, int] = {}
    pos = lay.HEADER_SIZE
    for k in order:
        n = sizes[k]
        # Empty blocks are absent (-1), except buffers whose data pointer papatran always sets.
        if n == 0 and k[0] not in ("vb", "ib"):
            out[k] = lay.ABSENT
            continue
        pos = lay.align8(pos)
        out[k] = pos
        pos += n
    return out, lay.align8(pos)


# -- tables ----------------------------------------------------------------------------------
def _n(declared: dict[Key, int], key: Key, actual: int) -> int:
    """The count to write: a count kept from a file whose data was absent, else the real one."""
    return declared.get(key, actual) if actual == 0 else actual


def _header(doc: PapaDocument, off: dict[Key, int], declared: dict[Key, int]) -> bytes:
    counts = [_n(declared, ("table", s), _count(doc, s)) for s in range(9)]
    offsets = [off[("table", s)] for s in range(9)]
    return lay.HEADER.pack(lay.MAGIC, doc.version[0], doc.version[1], *counts,
                         bytes(doc.signature[:6]).ljust(6, b"\0"), *offsets)


def _table(doc: PapaDocument, s: int, off: dict[Key, int], declared: dict[Key, int]) -> bytes:
    n = _count(doc, s)
    t = np.zeros(n, dtype=lay.ENTRY_DTYPES[s])
    if n == 0:
        return b""
    if s == lay.S_STRING:
        t["length"] = [x.length for x in doc.strings]
        t["pad"] = [x.pad for x in doc.strings]
        t["offset"] = [off[("str", i)] for i in range(n)]
    elif s == lay.S_TEXTURE:
        tx = doc.textures
        t["name"] = [x.name for x in tx]
        t["format"] = [x.format for x in tx]
        t["mips_srgb"] = [(x.mips & 0x7F) | (0x80 if x.srgb else 0) for x in tx]
        t["width"] = [x.width for x in tx]
        t["height"] = [x.height for x in tx]
        t["data_size"] = [x.linked_size if x.data is None else len(x.data) for x in tx]
        t["offset"] = [lay.ABSENT if x.data is None else off[("tex", i)] for i, x in enumerate(tx)]
    elif s in (lay.S_VB, lay.S_IB):
        bufs: list[Any] = doc.vertex_buffers if s == lay.S_VB else doc.index_buffers
        key = "vb" if s == lay.S_VB else "ib"
        t["format"] = [b.format for b in bufs]
        t["pad"] = [list(b.pad[:3].ljust(3, b"\0")) for b in bufs]
        arrays = [b.vertices if s == lay.S_VB else b.indices for b in bufs]
        t["count"] = [len(a) for a in arrays]
        t["data_size"] = [len(a) * _itemsize(s, b.format) for a, b in zip(arrays, bufs,
                                                                          strict=True)]
        t["offset"] = [off[(key, i)] for i in range(n)]
    else:
        _object_table(doc, s, t, off, declared)
    return t.tobytes()


def _object_table(doc: PapaDocument, s: int, t: npt.NDArray[np.void], off: dict[Key, int],
                  declared: dict[Key, int]) -> None:
    """:func:`_table`'s rows of the sections whose records count records of their own
    (materials, meshes, skeletons, models, animations), filled into ``t``."""
    n = len(t)
    if s == lay.S_MATERIAL:
        ms = doc.materials
        t["shader"] = [m.shader for m in ms]
        t["num_vector"] = [_n(declared, ("vec", i), len(m.vectors)) for i, m in enumerate(ms)]
        t["num_texture"] = [_n(declared, ("texp", i), len(m.textures))
                            for i, m in enumerate(ms)]
        t["num_matrix"] = [_n(declared, ("mat", i), len(m.matrices)) for i, m in enumerate(ms)]
        t["vector_offset"] = [off[("vec", i)] for i in range(n)]
        t["texture_offset"] = [off[("texp", i)] for i in range(n)]
        t["matrix_offset"] = [off[("mat", i)] for i in range(n)]
    elif s == lay.S_MESH:
        t["vertex_buffer"] = [m.vertex_buffer for m in doc.meshes]
        t["index_buffer"] = [m.index_buffer for m in doc.meshes]
        t["num_groups"] = [_n(declared, ("groups", i), len(m.groups))
                           for i, m in enumerate(doc.meshes)]
        t["pad"] = [m.pad for m in doc.meshes]
        t["offset"] = [off[("groups", i)] for i in range(n)]
    elif s == lay.S_SKELETON:
        t["num_bones"] = [_n(declared, ("bones", i), len(sk.bones))
                          for i, sk in enumerate(doc.skeletons)]
        t["pad"] = [list(sk.pad) for sk in doc.skeletons]
        t["offset"] = [off[("bones", i)] for i in range(n)]
    elif s == lay.S_MODEL:
        t["name"] = [m.name for m in doc.models]
        t["skeleton"] = [m.skeleton for m in doc.models]
        t["num_bindings"] = [_n(declared, ("bindings", i), len(m.bindings))
                             for i, m in enumerate(doc.models)]
        t["pad"] = [m.pad for m in doc.models]
        t["model2scene"] = [np.asarray(m.model2scene, dtype="<f4").reshape(16) for m in doc.models]
        t["offset"] = [off[("bindings", i)] for i in range(n)]
    else:
        an = doc.animations
        t["name"] = [a.name for a in an]
        t["num_bones"] = [_n(declared, ("abones", i), len(a.bones)) for i, a in enumerate(an)]
        t["num_frames"] = [a.num_frames for a in an]
        t["fps_num"] = [a.fps_num for a in an]
        t["fps_den"] = [a.fps_den for a in an]
        t["bone_table"] = [off[("abones", i)] for i in range(n)]
        t["transforms"] = [off[("atrans", i)] for i in range(n)]


def _itemsize(s: int, fmt: int) -> int:
    return (lay.VERTEX_FORMATS[fmt][1] if s == lay.S_VB else lay.INDEX_FORMATS[fmt][1]).itemsize


def _bindings(doc: PapaDocument, i: int, off: dict[Key, int]) -> bytes:
    bs = doc.models[i].bindings
    t = np.zeros(len(bs), dtype=lay.MESH_BINDING)
    for j, b in enumerate(bs):
        t[j]["name"] = b.name
        t[j]["mesh"] = b.mesh
        t[j]["num_bone_mappings"] = len(b.bone_map) if b.num_bone_mappings is None \
            else b.num_bone_mappings
        t[j]["pad"] = b.pad
        t[j]["mesh2model"] = np.asarray(b.mesh2model, dtype="<f4").reshape(16)
        t[j]["offset"] = off[("bonemap", i, j)]
    return t.tobytes()
