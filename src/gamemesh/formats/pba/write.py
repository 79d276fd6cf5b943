""":class:`PbaDocument` -> PBA bytes. Every chunk length is computed from what is written (header
included); parsed chunks append their kept ``tail``, unparsed ones their raw body."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...binary import Writer
from ...registry import Context
from .document import FaceGroup, NodeTrack, PbaDocument, PbaMesh, Sequence, VertexTrack
from .layout import (
    ANIM_ROT,
    ANIMATED,
    BONE,
    FLEXIBLE,
    NAME,
    NODES,
    RIGID,
    ROT_KEY,
    ROTPOS_KEY,
    VERTEX,
    vertex_key,
)


def write(doc: PbaDocument, ctx: Context | None = None) -> bytes:
    w = Writer()
    w.u32(doc.version)
    if doc.header_extra is not None:
        w.u32(doc.header_extra)
    _chunk(w, doc.main_id, lambda: _main(w, doc))
    w.write(doc.trailing)
    return w.getvalue()


def _chunk(w: Writer, cid: int, body: Callable[..., None], *args: Any) -> None:
    """Chunk id, length (patched once the body is written: it includes the 6-byte header)."""
    start = w.tell()
    w.u16(cid)
    slot = w.reserve("u32")
    body(*args)
    w.patch(slot, w.tell() - start)


def _names(w: Writer, names: np.ndarray) -> None:
    w.u32(len(names))
    w.array(np.asarray(names, dtype=NAME))


def _main(w: Writer, doc: PbaDocument) -> None:
    w.write(doc.name)

    def bones() -> None:
        w.u32(len(doc.bones))
        w.array(np.asarray(doc.bones, dtype=BONE))
        w.write(doc.bones_tail)

    def geoms() -> None:
        w.u32(len(doc.meshes))
        for mesh in doc.meshes:
            _chunk(w, mesh.chunk_id, _mesh, w, mesh, doc.civ_lists)
        w.write(doc.geoms_tail)

    def anims() -> None:
        w.u32(len(doc.sequences))
        for seq in doc.sequences:
            _chunk(w, seq.chunk_id, _sequence, w, seq)
        w.write(doc.anims_tail)

    _chunk(w, doc.bones_id, bones)
    _names(w, doc.textures)
    _chunk(w, doc.geoms_id, geoms)
    _chunk(w, doc.anims_id, anims)
    w.write(doc.main_tail)


# -- meshes ---------------------------------------------------------------------------------
def _mesh(w: Writer, mesh: PbaMesh, civ: bool) -> None:
    if mesh.raw is not None:
        w.write(mesh.raw)
        return
    w.u32(mesh.mesh_type)
    w.write(mesh.name)
    w.array(np.asarray(mesh.center), "<f4")
    w.array(np.asarray(mesh.radius).reshape(1), "<f4")
    _BODIES[mesh.mesh_type](w, mesh, civ)
    w.write(mesh.tail)


def _group_head(w: Writer, g: FaceGroup, alpha: bool, sliced: bool) -> None:
    w.i32(g.texture_id)
    if alpha:
        w.u32(g.alpha_flags)
    if sliced:
        w.u32(g.num_vertices)
    w.u32(len(g.indices))
    w.array(np.asarray(g.indices), "<u2")


def _civ(w: Writer, names: np.ndarray | None) -> None:
    _names(w, names if names is not None else np.zeros(0, dtype=NAME))


def _vertices(w: Writer, verts: np.ndarray | None) -> None:
    v = verts if verts is not None else np.zeros(0, dtype=VERTEX)
    w.u32(len(v))
    w.array(np.asarray(v, dtype=VERTEX))


def _rigid(w: Writer, mesh: PbaMesh, civ: bool) -> None:
    w.u32(len(mesh.groups))
    for g in mesh.groups:
        _group_head(w, g, alpha=True, sliced=False)
        if civ:
            _civ(w, g.civ_textures)
    for g in mesh.groups:
        _vertices(w, g.vertices)


def _animated(w: Writer, mesh: PbaMesh, civ: bool) -> None:
    _vertices(w, mesh.vertices)
    w.u32(len(mesh.groups))
    for g in mesh.groups:
        _group_head(w, g, alpha=True, sliced=True)
        if civ:
            _civ(w, g.civ_textures)


def _flexible(w: Writer, mesh: PbaMesh, civ: bool) -> None:
    for arr in (mesh.blend_positions, mesh.blend_normals):
        a = np.zeros((0, 3), "<f4") if arr is None else np.asarray(arr, "<f4").reshape(-1, 3)
        w.u32(len(a))
        w.array(a, "<f4")
    _vertices(w, mesh.vertices)
    w.u32(len(mesh.groups))
    for g in mesh.groups:
        _group_head(w, g, alpha=False, sliced=False)


def _nodes(w: Writer, mesh: PbaMesh, civ: bool) -> None:
    w.u32(mesh.num_vertices)
    w.u32(len(mesh.groups))
    for g in mesh.groups:
        _group_head(w, g, alpha=True, sliced=True)
    w.u32(len(mesh.vertex_groups))
    for vg in mesh.vertex_groups:
        w.write(vg.name)
        _vertices(w, vg.vertices)
    if civ:
        _civ(w, mesh.civ_textures)


_BODIES: dict[int, Callable[[Writer, PbaMesh, bool], None]] = {
    RIGID: _rigid, FLEXIBLE: _flexible, ANIMATED: _animated, NODES: _nodes}


# -- animations -----------------------------------------------------------------------------
def _sequence(w: Writer, seq: Sequence) -> None:
    if seq.raw is not None:
        w.write(seq.raw)
        return
    w.write(seq.name)
    w.u32(seq.duration)
    w.u32(len(seq.node_tracks))
    for t in seq.node_tracks:
        _chunk(w, t.chunk_id, _node_track, w, t)
    w.u32(len(seq.vertex_tracks))
    for v in seq.vertex_tracks:
        _chunk(w, v.chunk_id, _vertex_track, w, v)
    w.write(seq.tail)


def _node_track(w: Writer, t: NodeTrack) -> None:
    if t.raw is not None:
        w.write(t.raw)
        return
    w.u32(t.node_id)
    w.u32(len(t.keys))
    w.u32(t.anim_type)
    if t.anim_type == ANIM_ROT:
        pos = np.zeros(3, "<f4") if t.position is None else t.position
        w.array(np.asarray(pos), "<f4")
        w.array(np.asarray(t.keys, dtype=ROT_KEY))
    else:
        w.array(np.asarray(t.keys, dtype=ROTPOS_KEY))


def _vertex_track(w: Writer, v: VertexTrack) -> None:
    w.u32(v.node_id)
    w.u32(len(v.keys))
    w.u32(v.num_vertices)
    w.array(np.asarray(v.box_min), "<f4")
    w.array(np.asarray(v.box_max), "<f4")
    w.array(np.asarray(v.keys, dtype=vertex_key(v.num_vertices)))
    w.write(v.tail)
