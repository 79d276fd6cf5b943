"""Bytes -> :class:`PapaDocument`.

Tables and bulk payloads are numpy views over the input (no copy); the Python work is per table
entry, never per vertex or key. Every offset and count is checked against the file before use.
Where each block sat is recorded so :func:`write` can put the same bytes back.
"""

from __future__ import annotations

import bisect
import struct
from typing import Any

import numpy as np

from ...binary import Reader
from ...errors import CorruptDataError, TruncatedError, UnsupportedVersionError, hex_offset
from ...registry import Context
from . import layout as lay
from .document import (
    Animation,
    IndexBuffer,
    Material,
    Mesh,
    MeshBinding,
    Model,
    PapaDocument,
    PapaString,
    Skeleton,
    Texture,
    VertexBuffer,
)

Key = tuple[Any, ...]
Layout = dict[Key, tuple[int, int]]


def sniff(prefix: bytes) -> bool:
    return prefix[:4] == lay.MAGIC


def read(data: bytes, ctx: Context | None = None) -> PapaDocument:
    data = bytes(data)
    header = _header(data)
    blocks: Layout = {("header",): (0, lay.HEADER_SIZE)}
    tables = _tables(data, header, blocks)
    # Sections in file order (the layout records blocks as they are met); an absent section
    # costs no call.
    strings = _strings(data, tables[lay.S_STRING], blocks) if tables[lay.S_STRING] else []
    textures = _textures(data, tables[lay.S_TEXTURE], blocks) if tables[lay.S_TEXTURE] else []
    vbs = _vertex_buffers(data, tables[lay.S_VB], blocks) if tables[lay.S_VB] else []
    ibs = _index_buffers(data, tables[lay.S_IB], blocks) if tables[lay.S_IB] else []
    meshes = _meshes(data, tables[lay.S_MESH], blocks) if tables[lay.S_MESH] else []
    skeletons = _skeletons(data, tables[lay.S_SKELETON], blocks) \
        if tables[lay.S_SKELETON] else []
    models = _models(data, tables[lay.S_MODEL], header[13 + lay.S_MODEL], blocks) \
        if tables[lay.S_MODEL] else []
    animations = _animations(data, tables[lay.S_ANIMATION], blocks) \
        if tables[lay.S_ANIMATION] else []
    materials = _materials(data, tables[lay.S_MATERIAL], blocks, len(data)) \
        if tables[lay.S_MATERIAL] else []
    return PapaDocument(strings, textures, vbs, ibs, materials, meshes, skeletons, models,
                        animations, (header[1], header[2]), header[12], blocks, len(data),
                        data, list(blocks.values()))


def _header(data: bytes) -> tuple[Any, ...]:
    if len(data) >= lay.HEADER_SIZE and data[:4] == lay.MAGIC:
        header = lay.HEADER.unpack_from(data)
        if (header[1], header[2]) in lay.VERSIONS:
            return header
    return _bad_header(Reader(data, "papa"))


def _bad_header(r: Reader) -> tuple[Any, ...]:
    """The header through a checking reader, which names what is wrong with it."""
    if r.remaining() < lay.HEADER_SIZE:
        if r.peek(4) != lay.MAGIC[: r.remaining()]:
            r.magic(lay.MAGIC)
        raise r.truncated(expected=f"{lay.HEADER_SIZE}-byte header",
                          actual=f"{r.remaining()} bytes",
                          field="header")
    r.magic(lay.MAGIC, "header.magic")
    r.seek(0)
    header = r.unpack(lay.HEADER, "header")
    if (header[1], header[2]) not in lay.VERSIONS:
        raise r.error(UnsupportedVersionError, "only Papa versions 3.0 and 2.0 are read (2013 "
                      "alpha files had another layout)", expected="minor 0, major 3 or 2",
                      actual=f"minor {header[1]}, major {header[2]}", field="header.version",
                      offset=4)
    return header


Row = tuple[Any, ...]


def _tables(data: bytes, header: tuple[Any, ...], blocks: Layout) -> list[list[Row]]:
    """The nine sections' entries as tuples (``layout.ENTRY_STRUCTS``), from the header's
    counts (fields 3..11) and offsets (13..21)."""
    tables: list[list[Row]] = []
    for s, st in enumerate(lay.ENTRY_STRUCTS):
        count, offset = header[3 + s], header[13 + s]
        if count == 0 or offset < 0:
            # Absent (the spec: "count == 0 OR offset < 0"); the offset is kept as found.
            blocks[("table", s)] = (offset, 0)
            _declare(blocks, ("table", s), count)
            tables.append([])
            continue
        size = st.size * count
        if offset + size > len(data):
            raise _outside(data, offset, size, f"header.{lay.SECTIONS[s]}[]")
        blocks[("table", s)] = (offset, size)
        tables.append(_entries(st, data, offset, count))
    return tables


def _entries(st: struct.Struct, data: bytes, offset: int, count: int) -> list[Row]:
    """``count`` records of ``st`` at ``offset`` (bounds already checked) as tuples; one record,
    the usual case of most tables, without slicing and iterating."""
    if count == 1:
        return [st.unpack_from(data, offset)]
    return list(st.iter_unpack(data[offset:offset + st.size * count]))


def _matrix(data: bytes, offset: int) -> Any:
    """The 16 float32 at ``offset`` (inside an entry already checked), bits kept."""
    return np.frombuffer(data, dtype=_F4, count=16, offset=offset).copy()


def _declare(blocks: Layout, key: Key, count: int) -> None:
    """Remember a count whose data is absent (offset -1), to write the same bytes back."""
    if count:
        blocks[("n", *key)] = (count, 0)


def _view(data: bytes, offset: int, dt: np.dtype[Any], count: int) -> Any:
    """``count`` records at ``offset`` as a numpy view, or None when they are not all inside
    the file (the caller names the field: formatting it on every call cost more than the
    check)."""
    if offset < 0 or offset + dt.itemsize * count > len(data):
        return None
    return np.frombuffer(data, dtype=dt, count=count, offset=offset)


def _outside(data: bytes, offset: int, size: int, field: str) -> TruncatedError:
    return TruncatedError(lay.FMT, "block outside the file", offset=offset, field=field,
                          expected=f"0..0x{len(data):X}", actual=f"{hex_offset(offset)}+{size}")


def _block(data: bytes, offset: int, size: int, field: str) -> None:
    if offset < 0 or size < 0 or offset + size > len(data):
        raise _outside(data, offset, size, field)


def _strings(data: bytes, table: list[Row], blocks: Layout) -> list[PapaString]:
    out: list[PapaString] = []
    size = len(data)
    for i, (length, pad, off) in enumerate(table):
        end = off + length
        if off < 0 or end > size:
            raise TruncatedError(lay.FMT, "string data outside the file", offset=off,
                                 field=f"strings[{i}]", expected=f"<= 0x{size:X}",
                                 actual=f"{hex_offset(off)}+{length}")
        if end < size and data[end] == 0:  # the usual string: length bytes, then a NUL
            out.append(PapaString(data[off:end], length, pad, True))
            blocks[("str", i)] = (off, length + 1)
            continue
        # Blender-PAPA-IO counts code points, not bytes: the terminator is further on (at most
        # 4 UTF-8 bytes per code point).
        nul = data.find(b"\0", end, min(size, off + 4 * length + 1))
        if nul < 0:
            s = PapaString(data[off:end], length, pad, False)
        else:
            s = PapaString(data[off:nul], length, pad, True)
        blocks[("str", i)] = (off, len(s.raw) + int(s.terminated))
        out.append(s)
    return out


def _textures(data: bytes, table: list[Row], blocks: Layout) -> list[Texture]:
    out: list[Texture] = []
    for i, (name, fmt, ms, w, h, size, off) in enumerate(table):
        if fmt not in lay.TEXTURE_FORMATS:
            msg = "unknown texture format"
            raise UnsupportedVersionError(lay.FMT, msg, field=f"textures[{i}].format",
                                          expected="0..32", actual=fmt)
        tex = Texture(name, fmt, w, h, ms & 0x7F, bool(ms & 0x80), None, size)
        if off >= 0:
            _block(data, off, size, f"textures[{i}].data")
            tex.data = data[off:off + size]
            tex.linked_size = 0
        blocks[("tex", i)] = (off, 0 if tex.data is None else size)
        out.append(tex)
    return out


def _vertex_buffers(data: bytes, table: list[Row], blocks: Layout) -> list[VertexBuffer]:
    out: list[VertexBuffer] = []
    for i, (fmt, pad, count, size, off) in enumerate(table):
        field = ("vertex_buffers", i)
        if fmt in lay.UNSUPPORTED_VERTEX_FORMATS:
            name = lay.UNSUPPORTED_VERTEX_FORMATS[fmt]
            stride = size / count if count else 0
            msg = (f"vertex format {fmt} ({name}) has no known layout (stride from the file: "
                   f"{stride:g} bytes)")
            raise UnsupportedVersionError(lay.FMT, msg, field=f"vertex_buffers[{i}].format",
                                          expected="0..11", actual=fmt)
        if fmt not in lay.VERTEX_FORMATS:
            raise CorruptDataError(lay.FMT, "unknown vertex format",
                                   field=f"vertex_buffers[{i}].format", expected="0..11",
                                   actual=fmt)
        verts = _buffer(data, blocks, ("vb", i), field, lay.VERTEX_FORMATS[fmt][1], count,
                        size, off, "stride x num_vertices")
        out.append(VertexBuffer(fmt, verts, bytes(pad)))
    return out


def _index_buffers(data: bytes, table: list[Row], blocks: Layout) -> list[IndexBuffer]:
    out: list[IndexBuffer] = []
    for i, (fmt, pad, count, size, off) in enumerate(table):
        field = ("index_buffers", i)
        if fmt not in lay.INDEX_FORMATS:
            raise UnsupportedVersionError(lay.FMT, "unknown index format",
                                          field=f"index_buffers[{i}].format",
                                          expected="0 (UInt16) or 1 (UInt32)", actual=fmt)
        idx = _buffer(data, blocks, ("ib", i), field, lay.INDEX_FORMATS[fmt][1], count, size,
                      off, "index size x num_indices")
        out.append(IndexBuffer(fmt, idx, bytes(pad)))
    return out


def _buffer(data: bytes, blocks: Layout, key: Key, field: tuple[str, int], dt: np.dtype[Any],
            count: int, size: int, off: int, what: str) -> Any:
    """A vertex or index buffer's records: ``data_size`` must be exactly ``count`` records.
    ``field``: (table, index), formatted only for a message."""
    if size != dt.itemsize * count:
        raise CorruptDataError(lay.FMT, f"data_size is not {what}",
                               field=f"{field[0]}[{field[1]}].data_size",
                               expected=dt.itemsize * count, actual=size)
    blocks[key] = (off, size)
    if not count:
        return _empty(dt)
    arr = _view(data, off, dt, count)
    if arr is None:
        raise _outside(data, off, size, f"{field[0]}[{field[1]}]")
    return arr


def _array(data: bytes, offset: int, dt: np.dtype[Any], count: int) -> Any:
    """The records of an optional block (empty when absent), or None when outside the file
    (the caller names the field: formatting it on every call cost more than the check)."""
    if count == 0 or offset < 0:
        return _empty(dt)
    if offset + dt.itemsize * count > len(data):
        return None
    return np.frombuffer(data, dtype=dt, count=count, offset=offset)


_U2 = np.dtype("<u2")
_F4 = np.dtype("<f4")
_EMPTIES: dict[np.dtype[Any], Any] = {}


def _empty(dt: np.dtype[Any]) -> Any:
    """A zero-length array of ``dt``, one per dtype (read-only: documents share it)."""
    a = _EMPTIES.get(dt)
    if a is None:
        a = _EMPTIES[dt] = np.zeros(0, dtype=dt)
        a.flags.writeable = False
    return a


def _meshes(data: bytes, table: list[Row], blocks: Layout) -> list[Mesh]:
    out: list[Mesh] = []
    for i, (vb, ib, n, pad, off) in enumerate(table):
        groups = _array(data, off, lay.MATERIAL_GROUP, n)
        if groups is None:
            raise _outside(data, off, n * lay.MATERIAL_GROUP.itemsize,
                           f"meshes[{i}].material_groups")
        blocks[("groups", i)] = (off, groups.nbytes)
        if not len(groups):
            _declare(blocks, ("groups", i), n)
        out.append(Mesh(vb, ib, groups, pad))
    return out


def _skeletons(data: bytes, table: list[Row], blocks: Layout) -> list[Skeleton]:
    out: list[Skeleton] = []
    for i, (n, p0, p1, p2, off) in enumerate(table):
        bones = _array(data, off, lay.BONE, n)
        if bones is None:
            raise _outside(data, off, n * lay.BONE.itemsize, f"skeletons[{i}].bones")
        blocks[("bones", i)] = (off, bones.nbytes)
        if not len(bones):
            _declare(blocks, ("bones", i), n)
        out.append(Skeleton(bones, (p0, p1, p2)))
    return out


def _models(data: bytes, table: list[Row], base: int, blocks: Layout) -> list[Model]:
    out: list[Model] = []
    entry = lay.ENTRY_STRUCTS[lay.S_MODEL].size
    for i, (name, skeleton, n, pad, off) in enumerate(table):
        bindings = _bindings(data, i, n, off, blocks)
        m2s = _matrix(data, base + i * entry + lay.MATRIX_OFFSET)
        out.append(Model(name, skeleton, m2s, bindings, pad))
    return out


def _bindings(data: bytes, i: int, n: int, off: int, blocks: Layout) -> list[MeshBinding]:
    st = lay.MESH_BINDING_STRUCT
    if n == 0 or off < 0:
        blocks[("bindings", i)] = (off, 0)
        _declare(blocks, ("bindings", i), n)
        return []
    if off + st.size * n > len(data):
        raise _outside(data, off, st.size * n, f"models[{i}].mesh_bindings")
    blocks[("bindings", i)] = (off, st.size * n)
    bindings = []
    for j, (name, mesh, nmap, pad, moff) in enumerate(_entries(st, data, off, n)):
        bmap = _array(data, moff, _U2, nmap)
        if bmap is None:
            raise _outside(data, moff, 2 * nmap, f"models[{i}].mesh_bindings[{j}].bone_map")
        blocks[("bonemap", i, j)] = (moff, bmap.nbytes)
        m2m = _matrix(data, off + j * st.size + lay.MATRIX_OFFSET)
        b = MeshBinding(name, mesh, m2m, bmap, pad)
        if len(bmap) != nmap:
            b.num_bone_mappings = nmap
        bindings.append(b)
    return bindings


def _animations(data: bytes, table: list[Row], blocks: Layout) -> list[Animation]:
    out: list[Animation] = []
    for i, (name, nb, nf, num, den, boff, toff) in enumerate(table):
        field = f"animations[{i}]"
        bones = _array(data, boff, _U2, nb)
        if bones is None:
            raise _outside(data, boff, 2 * nb, f"{field}.bone_table")
        if nb and nf and toff < 0:
            raise CorruptDataError(lay.FMT, "animation has tracks but no transforms",
                                   field=f"{field}.transforms_offset", expected=">= 0",
                                   actual=toff)
        if nb == 0:
            tr = np.zeros((nf, 0), dtype=lay.TRANSFORM)
        else:
            if nf * nb * lay.TRANSFORM.itemsize > len(data):
                msg = "more transforms than the file holds"
                raise TruncatedError(lay.FMT, msg, field=f"{field}.num_frames",
                                     expected=f"<= {len(data)} bytes",
                                     actual=f"{nf} x {nb} x 28")
            tr = _array(data, toff, lay.TRANSFORM, nf * nb)
            if tr is None:
                raise _outside(data, toff, nf * nb * lay.TRANSFORM.itemsize,
                               f"{field}.transforms")
            tr = tr.reshape(nf, nb)
        blocks[("abones", i)] = (boff, bones.nbytes)
        if not len(bones):
            _declare(blocks, ("abones", i), nb)
        blocks[("atrans", i)] = (toff, tr.nbytes)
        out.append(Animation(name, bones, tr, num, den))
    return out


def _materials(data: bytes, table: list[Row], blocks: Layout, size: int) -> list[Material]:
    # Blender-PAPA-IO writes vector/matrix params at 24/72 bytes each; papatran (and every
    # reader) at 20/68. With more than one param the distance to the next block tells.
    starts: list[int] = []
    if any(t[1] > 1 or t[3] > 1 for t in table):
        starts = sorted({off for off, _ in blocks.values() if off >= 0} | {size}
                        | {x for t in table for x in t[4:7]})
    out: list[Material] = []
    for i, (shader, nv, nt, nm, voff, toff, moff) in enumerate(table):
        wide_v = nv > 1 and _wide(starts, voff, nv, 20, 24)
        wide_m = nm > 1 and _wide(starts, moff, nm, 68, 72)
        vdt = lay.VECTOR_PARAM_24 if wide_v else lay.VECTOR_PARAM
        mdt = lay.MATRIX_PARAM_72 if wide_m else lay.MATRIX_PARAM
        vec = _params(data, blocks, i, "vec", voff, vdt, nv)
        tex = _params(data, blocks, i, "texp", toff, lay.TEXTURE_PARAM, nt)
        mat = _params(data, blocks, i, "mat", moff, mdt, nm)
        out.append(Material(shader, vec.astype(lay.VECTOR_PARAM) if wide_v else vec, tex,
                            mat.astype(lay.MATRIX_PARAM) if wide_m else mat,
                            vdt.itemsize, mdt.itemsize))
    return out


_PARAM_FIELDS = {"vec": "vector_params", "texp": "texture_params", "mat": "matrix_params"}


def _params(data: bytes, blocks: Layout, i: int, kind: str, off: int, dt: np.dtype[Any],
            n: int) -> Any:
    """Material ``i``'s ``kind`` parameters (layout key ``(kind, i)``)."""
    if n == 0 or off < 0:  # absent, as most materials' texture and matrix parameters are
        blocks[(kind, i)] = (off, 0)
        _declare(blocks, (kind, i), n)
        return _empty(dt)
    arr = _array(data, off, dt, n)
    if arr is None:
        raise _outside(data, off, n * dt.itemsize, f"materials[{i}].{_PARAM_FIELDS[kind]}")
    blocks[(kind, i)] = (off, arr.nbytes)
    return arr


def _wide(starts: list[int], off: int, n: int, narrow: int, wide: int) -> bool:
    if n < 2 or off < 0:
        return False
    k = bisect.bisect_right(starts, off)
    nxt = starts[k] if k < len(starts) else off
    return nxt == lay.align8(off + wide * n) and nxt != lay.align8(off + narrow * n)
