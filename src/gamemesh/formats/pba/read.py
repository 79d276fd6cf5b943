"""PBA bytes -> :class:`PbaDocument` (spec ``pba.md`` b.1-b.7).

Parsing goes by position inside chunks bounded by their lengths (which include the 6-byte
header). A mesh or sequence chunk that cannot be parsed is kept whole as raw bytes, with a note,
and skipped by its length: one odd chunk does not lose the rest of the model.
"""

from __future__ import annotations

import struct

import numpy as np

from ...binary import Reader
from ...errors import BadMagicError, FormatError, UnsupportedVersionError
from ...registry import Context
from .document import FaceGroup, NodeTrack, PbaDocument, PbaMesh, Sequence, VertexGroup, VertexTrack
from .layout import (
    ANIM_ROT,
    ANIM_ROTPOS,
    ANIMATED,
    BONE,
    CHUNK_ANIM,
    CHUNK_GEOM,
    CHUNK_HEADER,
    CHUNK_MAIN,
    FLEXIBLE,
    NAME,
    NAME_SIZE,
    NODES,
    RIGID,
    ROT_KEY,
    ROTPOS_KEY,
    VEC3,
    VERSIONS,
    VERTEX,
    vertex_key,
)

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
# A vertex-track key count of zero leaves its vertex count unbounded by the bytes; cap it.
_MAX_TRACK_VERTICES = 1 << 24


def sniff(prefix: bytes) -> bool:
    """Version 0, 1 or 2 then the main chunk id 0x0301 (or, rarely, after a second DWORD)."""
    if len(prefix) < 10:
        return False
    version = _U32.unpack_from(prefix, 0)[0]
    if version not in VERSIONS:
        return False
    if _U16.unpack_from(prefix, 4)[0] == CHUNK_MAIN:
        return True
    return len(prefix) >= 14 and _U16.unpack_from(prefix, 8)[0] == CHUNK_MAIN


def read(data: bytes, ctx: Context) -> PbaDocument:
    r = Reader(data, "pba")
    version = r.u32("version")
    header_extra: int | None = None
    if r.peek(2) != _U16.pack(CHUNK_MAIN):
        if len(data) >= 10 and data[8:10] == _U16.pack(CHUNK_MAIN):
            header_extra = r.u32("header_extra")
            ctx.note("pba.two_dword_header", "the file has the seed's two-DWORD header "
                     f"(second DWORD {header_extra}); the public readers expect one")
        else:
            raise r.error(BadMagicError, "not a Praetorians PBA model",
                          expected="main chunk id 0x0301 at offset 4",
                          actual=f"0x{int.from_bytes(r.peek(2), 'little'):04X}",
                          field="main.chunk_id")
    if version not in VERSIONS:
        raise r.error(UnsupportedVersionError, "unsupported PBA version", expected="0, 1 or 2",
                      actual=version, field="version", offset=0)
    start = r.tell()
    doc = _read_main(r, version >= 2, ctx) if version else _read_version0(r, start, ctx)
    doc.version = version
    doc.header_extra = header_extra
    return doc


def _read_version0(r: Reader, start: int, ctx: Context) -> PbaDocument:
    """Version 0: the map editor reads it like 1 (no civilisation lists), the viewers like 2.
    Try the editor's reading first (the spec's advice) and keep the other one if it fits better."""
    tries: list[tuple[int, PbaDocument, Context]] = []
    for civ in (False, True):
        r.seek(start)
        sub_ctx = Context(ctx.path, ctx.options)
        try:
            doc = _read_main(r, civ, sub_ctx)
        except FormatError:
            if civ:
                raise
            continue
        bad = _misfits(doc)
        tries.append((bad, doc, sub_ctx))
        if bad == 0:
            break
    bad, doc, sub_ctx = min(tries, key=lambda t: t[0])
    ctx.notes.extend(sub_ctx.notes)
    ctx.note("pba.version0", "version 0 read " + ("with" if doc.civ_lists else "without")
             + " civilisation texture lists", "info")
    return doc


def _misfits(doc: PbaDocument) -> int:
    """Meshes of the verified types that did not parse to the exact end of their chunk."""
    return sum(1 for m in doc.meshes
               if m.mesh_type in (RIGID, ANIMATED) and (m.raw is not None or m.tail))


_CHUNK_HEAD = struct.Struct("<HI")  # chunk id, length (header included)


def _chunk(r: Reader, field: str) -> tuple[int, Reader]:
    """A chunk header and a reader bounded by its length; ``r`` moves past the chunk. A whole,
    well-formed header is unpacked in one call (a model has a dozen chunks, and the two
    named reads cost more than the rest); otherwise the named reads word the error."""
    pos = r.pos
    if r.end - pos >= CHUNK_HEADER:
        cid, length = _CHUNK_HEAD.unpack_from(r.data, pos)
        if CHUNK_HEADER <= length <= r.end - pos:
            r.pos = pos + CHUNK_HEADER
            return cid, r.sub(length - CHUNK_HEADER, field)
    with r.field(field):
        cid = r.u16("chunk_id")
        length = r.u32("chunk_length")
        if length < CHUNK_HEADER:
            msg = "chunk shorter than its header"
            raise r.corrupt(msg, expected=f">= {CHUNK_HEADER}",
                            actual=length, field="chunk_length", offset=r.tell() - 4)
    return cid, r.sub(length - CHUNK_HEADER, field)


def _expect_id(cid: int, want: int, what: str, ctx: Context) -> None:
    if cid != want:
        ctx.note("pba.chunk_id", f"{what} chunk has id 0x{cid:04X}, expected 0x{want:04X}; "
                 "parsed by position", "info")


def _read_main(r: Reader, civ: bool, ctx: Context) -> PbaDocument:
    doc = PbaDocument(civ_lists=civ)
    doc.main_id, body = _chunk(r, "main")
    _expect_id(doc.main_id, CHUNK_MAIN, "main", ctx)
    doc.name = body.bytes(NAME_SIZE, "name")
    doc.bones_id, bb = _chunk(body, "bones")
    n = bb.count(bb.u32("num_bones"), BONE.itemsize, "num_bones")
    doc.bones = bb.array(BONE, n, "bones")
    doc.bones_tail = bb.rest()
    if doc.bones_tail:
        ctx.note("pba.bones_tail", f"{len(doc.bones_tail)} bytes after the bones inside their "
                 "chunk; skipped by the chunk length and kept")
    n = body.count(body.u32("num_textures"), NAME_SIZE, "num_textures")
    doc.textures = body.array(NAME, n, "textures")
    doc.geoms_id, gb = _chunk(body, "geometry")
    n = gb.count(gb.u32("num_meshes"), CHUNK_HEADER, "num_meshes")
    doc.meshes = [_read_mesh(gb, i, civ, ctx) for i in range(n)]
    doc.geoms_tail = gb.rest()
    doc.anims_id, ab = _chunk(body, "animations")
    n = ab.count(ab.u32("num_sequences"), CHUNK_HEADER, "num_sequences")
    doc.sequences = [_read_sequence(ab, i, ctx) for i in range(n)]
    doc.anims_tail = ab.rest()
    doc.main_tail = body.rest()
    doc.trailing = r.rest()
    return doc


# -- meshes ---------------------------------------------------------------------------------
def _read_mesh(r: Reader, i: int, civ: bool, ctx: Context) -> PbaMesh:
    cid, body = _chunk(r, f"meshes[{i}]")
    start = body.tell()
    if cid != CHUNK_GEOM:
        ctx.note("pba.unknown_chunk", f"meshes[{i}]: chunk id 0x{cid:04X} is not a mesh; kept "
                 "as raw bytes")
        return _raw_mesh(cid, body.rest())
    mesh_type = body.u32("mesh_type") if body.remaining() >= 4 else 0
    parse = _MESH_BODIES.get(mesh_type)
    if parse is None:
        ctx.note("pba.unknown_mesh_type", f"meshes[{i}]: mesh type {mesh_type} is unknown; kept "
                 "as raw bytes")
        body.seek(start)
        return _raw_mesh(cid, body.rest())
    try:
        mesh = PbaMesh(mesh_type=mesh_type, chunk_id=cid)
        mesh.name = body.bytes(NAME_SIZE, "name")
        mesh.center = body.array(VEC3, 1, "center")[0]
        mesh.radius = body.array("<f4", 1, "radius")
        parse(body, mesh, civ)
        if mesh_type in (FLEXIBLE, NODES) and not body.at_end():
            # A guessed layout that does not fill its chunk is a wrong guess: keep the bytes.
            msg = "layout does not end at the chunk end"
            raise body.corrupt(msg, expected=0,
                               actual=f"{body.remaining()} bytes left")
        mesh.tail = body.rest()
    except FormatError as e:
        ctx.note("pba.mesh_unparsed", f"meshes[{i}] (type {mesh_type}): {e}; kept as raw bytes")
        body.seek(start)
        return _raw_mesh(cid, body.rest())
    if mesh.tail:
        ctx.note("pba.mesh_tail", f"meshes[{i}] {mesh.label!r}: {len(mesh.tail)} bytes after "
                 "the mesh inside its chunk; kept")
    return mesh


def _raw_mesh(cid: int, raw: bytes) -> PbaMesh:
    mesh_type = int.from_bytes(raw[:4], "little") if len(raw) >= 4 else 0
    name = raw[4:4 + NAME_SIZE] if len(raw) >= 4 + NAME_SIZE else b"\0" * NAME_SIZE
    return PbaMesh(mesh_type=mesh_type, name=name, chunk_id=cid, raw=raw)


def _civ_list(r: Reader) -> np.ndarray:
    n = r.count(r.u32("num_civ_textures"), NAME_SIZE, "num_civ_textures")
    return r.array(NAME, n, "civ_textures")


def _group_head(r: Reader, g: int, alpha: bool, sliced: bool) -> FaceGroup:
    with r.field(f"groups[{g}]"):
        tex = r.i32("texture_id")
        flags = r.u32("alpha_flags") if alpha else 0
        nv = r.u32("num_vertices") if sliced else 0
        ni = r.u32("num_indices")
        idx = r.array("<u2", ni, "indices")
    return FaceGroup(texture_id=tex, alpha_flags=flags, indices=idx, num_vertices=nv)


def _rigid(r: Reader, mesh: PbaMesh, civ: bool) -> None:
    n = r.count(r.u32("num_face_groups"), 12, "num_face_groups")
    for g in range(n):
        group = _group_head(r, g, alpha=True, sliced=False)
        if civ:
            with r.field(f"groups[{g}]"):
                group.civ_textures = _civ_list(r)
        mesh.groups.append(group)
    for g, group in enumerate(mesh.groups):
        with r.field(f"groups[{g}]"):
            nv = r.u32("num_vertices")
            group.vertices = r.array(VERTEX, nv, "vertices")
            group.num_vertices = nv


def _animated(r: Reader, mesh: PbaMesh, civ: bool) -> None:
    nv = r.u32("num_vertices")
    mesh.vertices = r.array(VERTEX, nv, "vertices")
    n = r.count(r.u32("num_face_groups"), 16, "num_face_groups")
    for g in range(n):
        group = _group_head(r, g, alpha=True, sliced=True)
        if civ:
            with r.field(f"groups[{g}]"):
                group.civ_textures = _civ_list(r)
        mesh.groups.append(group)


def _flexible(r: Reader, mesh: PbaMesh, civ: bool) -> None:
    """[SEED only] blend positions, normals, vertices, then groups without alpha flags."""
    mesh.blend_positions = r.array(VEC3, r.u32("num_blend_positions"), "blend_positions")
    mesh.blend_normals = r.array(VEC3, r.u32("num_blend_normals"), "blend_normals")
    mesh.vertices = r.array(VERTEX, r.u32("num_blend_vertices"), "blend_vertices")
    n = r.count(r.u32("num_face_groups"), 8, "num_face_groups")
    mesh.groups = [_group_head(r, g, alpha=False, sliced=False) for g in range(n)]


def _nodes(r: Reader, mesh: PbaMesh, civ: bool) -> None:
    """[SEED only] face groups over slices, then named vertex groups, then one civ list."""
    mesh.num_vertices = r.u32("num_vertices")
    n = r.count(r.u32("num_face_groups"), 16, "num_face_groups")
    mesh.groups = [_group_head(r, g, alpha=True, sliced=True) for g in range(n)]
    n = r.count(r.u32("num_vertex_groups"), NAME_SIZE + 4, "num_vertex_groups")
    for g in range(n):
        with r.field(f"vertex_groups[{g}]"):
            name = r.bytes(NAME_SIZE, "name")
            verts = r.array(VERTEX, r.u32("num_vertices"), "vertices")
        mesh.vertex_groups.append(VertexGroup(name=name, vertices=verts))
    if civ:
        mesh.civ_textures = _civ_list(r)


_MESH_BODIES = {RIGID: _rigid, FLEXIBLE: _flexible, ANIMATED: _animated, NODES: _nodes}


# -- animations -----------------------------------------------------------------------------
def _read_sequence(r: Reader, i: int, ctx: Context) -> Sequence:
    cid, body = _chunk(r, f"sequences[{i}]")
    start = body.tell()
    if cid != CHUNK_ANIM:
        ctx.note("pba.unknown_chunk", f"sequences[{i}]: chunk id 0x{cid:04X} is not an "
                 "animation sequence; kept as raw bytes")
        return Sequence(chunk_id=cid, raw=body.rest())
    seq = Sequence(chunk_id=cid)
    try:
        seq.name = body.bytes(NAME_SIZE, "name")
        seq.duration = body.u32("duration")
        n = body.count(body.u32("num_node_tracks"), CHUNK_HEADER, "num_node_tracks")
        seq.node_tracks = [_read_node_track(body, k, ctx) for k in range(n)]
        n = body.count(body.u32("num_vertex_tracks"), CHUNK_HEADER, "num_vertex_tracks")
        seq.vertex_tracks = [_read_vertex_track(body, k) for k in range(n)]
        seq.tail = body.rest()
    except FormatError as e:
        ctx.note("pba.sequence_unparsed", f"sequences[{i}]: {e}; kept as raw bytes")
        body.seek(start)
        return Sequence(chunk_id=cid, name=_raw_name(body.peek(NAME_SIZE)), raw=body.rest())
    if seq.tail:
        ctx.note("pba.sequence_tail", f"sequence {seq.label!r}: {len(seq.tail)} bytes after "
                 "its tracks; kept")
    return seq


def _raw_name(raw: bytes) -> bytes:
    return raw if len(raw) == NAME_SIZE else b"\0" * NAME_SIZE


def _read_node_track(r: Reader, k: int, ctx: Context) -> NodeTrack:
    cid, body = _chunk(r, f"node_tracks[{k}]")
    start = body.tell()
    try:
        node_id = body.u32("node_id")
        nk = body.u32("num_keys")
        kind = body.u32("anim_type")
        if kind == ANIM_ROT:
            pos = body.array(VEC3, 1, "position")[0]
            track = NodeTrack(node_id, kind, body.array(ROT_KEY, nk, "keys"), pos, chunk_id=cid)
        elif kind == ANIM_ROTPOS:
            track = NodeTrack(node_id, kind, body.array(ROTPOS_KEY, nk, "keys"), chunk_id=cid)
        else:
            msg = "unknown node animation type"
            raise body.corrupt(msg, expected="1 (ROT) or 2 (ROTPOS)",
                               actual=kind, field="anim_type")
        if not body.at_end():
            msg = "node track does not end at its chunk end"
            raise body.corrupt(msg, expected=0,
                               actual=f"{body.remaining()} bytes left")
    except FormatError as e:
        ctx.note("pba.node_track_unparsed", f"node track {k}: {e}; kept as raw bytes")
        body.seek(start)
        return NodeTrack(-1, 0, np.zeros(0, ROT_KEY), chunk_id=cid, raw=body.rest())
    return track


def _read_vertex_track(r: Reader, k: int) -> VertexTrack:
    cid, body = _chunk(r, f"vertex_tracks[{k}]")
    with body.field(f"vertex_tracks[{k}]"):
        node_id = body.u32("node_id")
        nk = body.u32("num_keys")
        nv = body.u32("num_vertices")
        lo = body.array(VEC3, 1, "box_min")[0]
        hi = body.array(VEC3, 1, "box_max")[0]
        if nk:
            body.count(nv, 3, "num_vertices")
        elif nv > _MAX_TRACK_VERTICES:
            raise body.corrupt(expected=f"<= {_MAX_TRACK_VERTICES}", actual=nv,
                               field="num_vertices")
        keys = body.array(vertex_key(nv), nk, "keys")
    return VertexTrack(node_id=node_id, num_vertices=nv, box_min=lo, box_max=hi, keys=keys,
                       chunk_id=cid, tail=body.rest())

