"""Bytes -> :class:`ModernDocument` for versions 20..26, and the ``.vram`` / ``.spu`` sidecars.

The header size follows from the version (§2); the cursor region is walked in its fixed order
(§3); data blocks are reached by their absolute offsets (§4) and every offset, count and length
is checked against the file before it is used. Files of the PS1Godot fork, whose versions 21..26
collide with upstream (§9, §13), fail the sanity checks of §8 and are refused by name; its
versions 27..32 are its own and refused by name at once.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ....binary import Reader
from ....errors import FormatError, UnsupportedVersionError
from ....registry import Context
from ....safeio import read_regular
from ..files import fork_sidecars, sidecar
from . import layout as ml
from .document import (
    ModernDocument,
    PointLight,
    Sequence,
    SkinClip,
    SkinnedMesh,
    Track,
    VramFile,
    empty_table,
)

FMT = "splashpack"
FORK = "PS1Godot (BuffJesus/PS1Godot)"

_VRAM_HEADER = struct.Struct("<2sHHBB")  # VRAM_HEADER: magic, atlas/clut/font counts, pad

__all__ = ["is_modern", "read_modern", "read_modern_file", "read_spu", "read_vram", "spu_clips"]


def is_modern(prefix: bytes) -> bool:
    """Magic ``SP`` and a modern (or fork) version number."""
    if len(prefix) < 4 or prefix[:2] != ml.MAGIC:
        return False
    v = int.from_bytes(prefix[2:4], "little")
    return v in ml.VERSIONS or v in ml.FORK_VERSIONS


_U1, _U2 = np.dtype("u1"), np.dtype("<u2")


def _own(r: Reader, dt: np.dtype[Any], n: int, field: str | None = None) -> npt.NDArray[Any]:
    """``n`` records of ``dt`` at the cursor as an array of its own (the document outlives the
    file's bytes), checked as ``Reader.array`` checks them. The bytes are copied as bytes: numpy
    copies a structured array field by field, some 25 times slower (4 us for three records,
    3.7 ms for 100k triangles)."""
    size = dt.itemsize * n
    if n < 0 or size > r.end - r.pos:
        r.count(n, dt.itemsize, field)  # raises the reader's own error
    start = r.pos
    r.pos = start + size
    return np.frombuffer(bytearray(r.data[start:start + size]), dt)


def _table(r: Reader, name: str, dt: np.dtype[Any], n: int) -> npt.NDArray[Any]:
    if n == 0:
        return empty_table(dt)  # nothing to check or copy (most tables of a small scene)
    with r.field(name):
        return _own(r, dt, n)


# -- cursor region (§3) ------------------------------------------------------------------------
def _header_values(doc: ModernDocument) -> dict[str, Any]:
    """The header's fields as Python values by name, from one ``tolist``: the walk reads some
    forty counts and offsets, and a field of a structured array costs a microsecond a read."""
    return dict(zip(doc.header.dtype.names or (), doc.header[0].tolist(), strict=True))


def _cursor(r: Reader, doc: ModernDocument, h: dict[str, Any]) -> None:
    doc.lua_desc = _table(r, "lua", ml.LUA_DESC, h["lua_count"])
    doc.objects = _table(r, "objects", ml.GO, h["go_count"])
    doc.colliders = _table(r, "colliders", ml.COLLIDER, h["collider_count"])
    doc.triggers = _table(r, "triggers", ml.TRIGGER, h["trigger_count"])
    nodes, refs = h["bvh_node_count"], h["bvh_ref_count"]
    if nodes == 0 and refs:
        msg = "BVH triangle refs without BVH nodes"
        raise r.corrupt(msg, field="header.bvh_ref_count", expected=0, actual=refs, offset=34)
    doc.bvh_nodes = _table(r, "bvh_nodes", ml.BVH_NODE, nodes)
    doc.bvh_refs = _table(r, "bvh_refs", ml.BVH_REF, refs)
    doc.interactables = _table(r, "interactables", ml.INTERACTABLE, h["interactable_count"])
    if h["version"] >= 22:
        doc.agents = _table(r, "agents", ml.AGENT, h["agent_count"])
        # At most 8 waypoints an agent (no numpy reduction for the usual no agents).
        wp = sum(min(c, 8) for c in doc.agents["waypoint_count"].tolist())
        doc.waypoints = _table(r, "waypoints", ml.WAYPOINT, wp)
    if h["world_col_mesh_count"] or h["world_col_tri_count"]:
        msg = "legacy world-collision block (no writer of versions 20+ emits it)"
        raise r.error(UnsupportedVersionError, msg, field="header.world_col_mesh_count",
                      expected=0, actual=h["world_col_mesh_count"], offset=40)
    _nav(r, doc, h)
    _rooms(r, doc, h)
    doc.atlas_desc = _table(r, "atlas_desc", ml.ATLAS_DESC, h["atlas_count"])
    doc.clut_desc = _table(r, "clut_desc", ml.CLUT_DESC, h["clut_count"])


def _nav(r: Reader, doc: ModernDocument, h: dict[str, Any]) -> None:
    regions, portals = h["nav_region_count"], h["nav_portal_count"]
    if regions == 0:
        if portals:
            msg = "nav portals without nav regions"
            raise r.corrupt(msg, field="header.nav_portal_count", expected=0, actual=portals,
                            offset=46)
        return
    doc.nav_header = _table(r, "nav", ml.NAV_HEADER, 1)
    got = (int(doc.nav_header["region_count"][0]), int(doc.nav_header["portal_count"][0]))
    if got != (regions, portals):
        msg = "the nav block's counts disagree with the header's"
        raise r.corrupt(msg, field="nav.region_count", expected=(regions, portals), actual=got,
                        offset=r.tell() - 8)
    doc.nav_regions = _table(r, "nav_regions", ml.NAV_REGION, regions)
    if np.any(doc.nav_regions["vert_count"] > 8):
        msg = "a nav region has more than 8 vertices"
        raise r.corrupt(msg, field="nav_regions.vert_count", expected="<= 8",
                        actual=int(doc.nav_regions["vert_count"].max()))
    doc.nav_portals = _table(r, "nav_portals", ml.NAV_PORTAL, portals)


def _rooms(r: Reader, doc: ModernDocument, h: dict[str, Any]) -> None:
    counts = [h[k] for k in ("room_count", "portal_count", "room_tri_ref_count",
                                     "room_cell_count", "room_portal_ref_count")]
    if counts[0] == 0:
        if any(counts):
            msg = "room data without rooms"
            raise r.corrupt(msg, field="header.room_count", expected=0, actual=counts, offset=78)
        return
    doc.rooms = _table(r, "rooms", ml.ROOM, counts[0])
    doc.room_portals = _table(r, "room_portals", ml.ROOM_PORTAL, counts[1])
    doc.room_tri_refs = _table(r, "room_tri_refs", ml.ROOM_TRI_REF, counts[2])
    doc.room_cells = _table(r, "room_cells", ml.ROOM_CELL, counts[3])
    doc.room_portal_refs = _table(r, "room_portal_refs", ml.ROOM_PORTAL_REF, counts[4])


# -- data region (§4) --------------------------------------------------------------------------
def _at(r: Reader, offset: int, what: str, floor: int) -> Reader:
    """A reader at an absolute offset that must be 4-aligned and past the cursor region."""
    if offset % 4 or offset < floor or offset > r.end:
        msg = "offset is not a 4-aligned position in the data region"
        raise r.corrupt(msg, field=what, expected=f"4-aligned in {floor}..{r.end}",
                        actual=offset)
    return r.window(offset, field=what)


def _own_at(r: Reader, offset: int, what: str, floor: int, dt: np.dtype[Any], n: int,
            field: str | None = None) -> npt.NDArray[Any]:
    """``n`` records of ``dt`` of their own at an offset checked as :func:`_at` checks it."""
    return _own(_at(r, offset, what, floor), dt, n, field)


def _lua_and_meshes(r: Reader, doc: ModernDocument, floor: int) -> None:
    for i, d in enumerate(doc.lua_desc):
        w = _at(r, int(d["offset"]), f"lua[{i}].offset", floor)
        doc.lua.append(w.bytes(int(d["length"]), "length"))
    objs = doc.objects
    for i, (n, off) in enumerate(zip(objs["poly_count"].tolist(), objs["mesh_offset"].tolist(),
                                     strict=True)):
        if n == 0:
            doc.meshes.append(empty_table(ml.TRI))
            continue
        doc.meshes.append(_own_at(r, off, f"objects[{i}].mesh_offset", floor, ml.TRI, n,
                                  "poly_count"))


def _names(r: Reader, doc: ModernDocument, floor: int, h: dict[str, Any]) -> None:
    w = _at(r, h["name_table_offset"], "header.name_table_offset", floor)
    for i in range(len(doc.objects)):
        with w.field(f"names[{i}]"):
            n = w.u8("len")
            doc.names.append(w.bytes(n, "bytes"))
            end = w.u8("nul")
            if end != 0:
                msg = "name is not NUL-terminated"
                raise w.corrupt(msg, expected=0, actual=end, offset=w.tell() - 1)


def _cstring(r: Reader, offset: int, n: int, what: str) -> bytes:
    raw = r.window(offset, field=what).bytes(n + 1)
    if raw[-1] != 0:
        msg = "name is not NUL-terminated"
        raise r.corrupt(msg, field=what, expected=0, actual=raw[-1], offset=offset + n)
    return raw[:-1]


def _table_entries(r: Reader, offset: int, count: int, what: str, floor: int
                   ) -> npt.NDArray[np.void]:
    if count > ml.MAX_TABLE:
        msg = "the runtime reads at most 16 entries"
        raise r.corrupt(msg, field=f"header.{what}_count", expected=f"<= {ml.MAX_TABLE}",
                        actual=count)
    if count == 0:
        return empty_table(ml.TABLE_ENTRY)
    return _own_at(r, offset, f"{what}_table", floor, ml.TABLE_ENTRY, count)


def _rows(a: npt.NDArray[np.void]) -> list[dict[str, Any]]:
    """The records of ``a`` as dicts of Python values by field name, from one ``tolist``: a
    field read from a numpy record costs about a microsecond, and a sequence reads a dozen."""
    names = a.dtype.names or ()
    return [dict(zip(names, row, strict=True)) for row in a.tolist()]


def _sequence(r: Reader, e: dict[str, Any], cutscene: bool, where: str,
              floor: int) -> Sequence:
    name = _cstring(r, e["name_offset"], e["name_len"], f"{where}.name")
    dt = ml.CUTSCENE_HEADER if cutscene else ml.ANIM_HEADER
    hdr = _own_at(r, e["offset"], f"{where}.offset", floor, dt, 1)
    seq = Sequence(name=name, header=hdr)
    h = _rows(hdr)[0]
    n = h["track_count"]
    if n:
        tracks = _at(r, h["tracks_offset"], f"{where}.tracks_offset", floor)
        for k, t in enumerate(_rows(tracks.array(ml.TRACK, n))):
            tw = f"{where}.tracks[{k}]"
            target = _cstring(r, t["target_offset"], t["target_len"], f"{tw}.target")
            keys = _own_at(r, t["keys_offset"], f"{tw}.keys_offset", floor, ml.KEY,
                           t["key_count"])
            seq.tracks.append(Track(t["type"], t["light_index"], target, keys))
    if cutscene and h["audio_event_count"]:
        seq.audio_events = _own_at(r, h["audio_events_offset"], f"{where}.audio_events_offset",
                                   floor, ml.AUDIO_EVENT, h["audio_event_count"])
    if h["skin_event_count"]:
        seq.skin_events = _own_at(r, h["skin_events_offset"], f"{where}.skin_events_offset",
                                  floor, ml.SKIN_EVENT, h["skin_event_count"])
    return seq


def _sequences(r: Reader, doc: ModernDocument, floor: int, h: dict[str, Any]) -> None:
    for kind, cut in (("cutscene", True), ("animation", False)):
        entries = _table_entries(r, h[f"{kind}_table_offset"], h[f"{kind}_count"], kind, floor)
        out = [_sequence(r, e, cut, f"{kind}s[{i}]", floor) for i, e in enumerate(_rows(entries))]
        setattr(doc, f"{kind}s", out)


def _skin(r: Reader, doc: ModernDocument, e: dict[str, Any], where: str,
          floor: int) -> SkinnedMesh:
    w = _at(r, e["offset"], f"{where}.offset", floor)
    go, bones, clips = w.u16("go_index"), w.u8("bone_count"), w.u8("clip_count")
    if go >= len(doc.objects) or bones > ml.MAX_BONES or clips > ml.MAX_CLIPS:
        msg = "skinned mesh header out of range"
        raise w.corrupt(msg, field="go_index/bone_count/clip_count",
                        expected=f"< {len(doc.objects)} / <= 64 / <= 16",
                        actual=(go, bones, clips), offset=w.tell() - 4)
    n = int(doc.objects["poly_count"][go]) * 3
    idx = _own(w, _U1, n, "bone_index")
    if n and bones and int(idx.max()) >= bones:
        msg = "bone index out of range"
        raise w.corrupt(msg, field="bone_index", expected=f"< {bones}", actual=int(idx.max()))
    w.align(4)
    skin = SkinnedMesh(go_index=go, bone_count=bones, bone_index=idx)
    for c in range(clips):
        with w.field(f"clips[{c}]"):
            name = w.bytes(w.u8("name_len"), "name")
            if w.u8("nul") != 0:
                msg = "clip name is not NUL-terminated"
                raise w.corrupt(msg, expected=0, offset=w.tell() - 1)
            flags, fps = w.u8("flags"), w.u8("fps")
            w.align(2)
            frames = w.u16("frame_count")
            mats = _own(w, ml.BONE_MATRIX, frames * bones, "matrices")
        skin.clips.append(SkinClip(name, flags, fps, mats.reshape(frames, bones)))
    if doc.version >= ml.SKIN_TAIL_VERSION:
        _skin_tail(w, skin, bones)
    skin.name = _cstring(r, e["name_offset"], e["name_len"], f"{where}.name")
    return skin


def _skin_tail(w: Reader, skin: SkinnedMesh, bones: int) -> None:
    """v26: after the clips, align 2, each bone's bind position, then each bone's name."""
    w.align(2)
    skin.bind = _own(w, ml.BIND_POS, bones * 3, "bind").reshape(bones, 3)
    for b in range(bones):
        with w.field(f"joint_names[{b}]"):
            skin.joint_names.append(w.bytes(w.u8("len"), "bytes"))
            if w.u8("nul") != 0:
                msg = "joint name is not NUL-terminated"
                raise w.corrupt(msg, expected=0, offset=w.tell() - 1)


def _lights(r: Reader, doc: ModernDocument, floor: int, h: dict[str, Any]) -> None:
    off = h.get("light_table_offset", 0)
    if h["version"] < 24 or off == 0:
        return
    w = _at(r, off, "header.light_table_offset", floor)
    n, doc.light_pad = w.u16("light_count"), w.u16("pad")
    if n > ml.MAX_TABLE:
        msg = "the runtime reads at most 16 lights"
        raise w.corrupt(msg, field="light_count", expected="<= 16", actual=n, offset=off)
    recs = _own(w, ml.LIGHT, n, "lights")
    for k, at in enumerate(recs["name_offset"].tolist()):
        head = r.window(at).peek(ml.MAX_NAME + 1)
        end = head.find(b"\0")
        if end < 0:
            msg = "light name is not NUL-terminated within 24 bytes"
            raise r.corrupt(msg, field=f"lights[{k}].name_offset", actual=at)
        # The name is the bytes before that NUL: already read, not read a second time.
        doc.lights.append(PointLight(recs[k:k + 1], head[:end]))


def _audio(r: Reader, doc: ModernDocument, floor: int, h: dict[str, Any]) -> None:
    """The audio table (§4 item 4) and each clip's name, as the runtime reads them: the table
    only when both the count and the offset are set (``splashpack.cpp``), a name only when its
    length and offset are."""
    n, off = h["audio_count"], h["audio_table_offset"]
    if n == 0 and off == 0:
        return
    if n == 0 or off == 0:
        msg = "the audio table's count and offset must both be set or both be 0"
        raise r.corrupt(msg, field="header.audio_count", expected="both or neither",
                        actual=(n, off), offset=64)
    doc.audio_clips = _own_at(r, off, "header.audio_table_offset", floor, ml.AUDIO_CLIP, n)
    for k, (length, at) in enumerate(zip(doc.audio_clips["name_len"].tolist(),
                                         doc.audio_clips["name_offset"].tolist(), strict=True)):
        doc.audio_names.append(_cstring(r, at, length, f"audio[{k}].name") if at else b"")


@cache
def _block_offsets(dt: np.dtype[Any]) -> tuple[str, ...]:
    """The header fields of ``dt`` that point at a data block (pixel data is not one)."""
    return tuple(n for n in dt.names or () if n.endswith("_offset") and n != "pixel_data_offset")


def _opaque(r: Reader, doc: ModernDocument, floor: int, h: dict[str, Any]) -> None:
    """Blocks gamemesh does not model, each up to the next block the header points at."""
    starts = {n: v for n in _block_offsets(doc.header.dtype) if (v := h[n])}
    bounds = sorted({*starts.values(), r.end})
    for name in ml.OPAQUE_FIELDS:
        off = starts.get(name)
        if off is None:
            continue
        _at(r, off, f"header.{name}", floor)
        end = next(b for b in bounds if b > off) if off < r.end else off
        doc.opaque[name] = (off, r.window(off, end - off).rest())


def read_modern(data: bytes) -> ModernDocument:
    r = Reader(data, FMT)
    r.magic(ml.MAGIC)
    version = r.u16("header.version")
    _check_version(r, version)
    r.seek(0)
    doc = ModernDocument(header=_table(r, "header", ml.HEADERS[version], 1))
    h = _header_values(doc)
    try:
        _cursor(r, doc, h)
        floor = r.tell()
        _lua_and_meshes(r, doc, floor)
        _names(r, doc, floor, h)
        _sequences(r, doc, floor, h)
        entries = _table_entries(r, h["skin_table_offset"], h["skin_count"], "skin", floor)
        doc.skins = [_skin(r, doc, e, f"skins[{i}]", floor)
                     for i, e in enumerate(_rows(entries))]
        _lights(r, doc, floor, h)
        _audio(r, doc, floor, h)
        _opaque(r, doc, floor, h)
    except FormatError as e:
        if version != 20 and (e.offset is None or e.offset >= 120):
            detail = (f"{e.detail}; if this file came from PS1Godot, whose version {version} is "
                      "another layout, it is not supported") if e.detail else e.detail
            raise type(e)(FMT, detail, offset=e.offset, field=e.field, expected=e.expected,
                          actual=e.actual) from None
        raise
    return doc


def _check_version(r: Reader, version: int) -> None:
    if version in ml.VERSIONS:
        return
    if version in ml.FORK_VERSIONS:
        msg = (f"version {version} is only written by the {FORK} fork, whose layouts gamemesh "
               "does not read")
        raise r.error(UnsupportedVersionError, msg, field="header.version", offset=2,
                      expected="20..26", actual=version)
    msg = (f"version {version}: gamemesh reads versions 1 and 20..26 (2..19 were development "
           "versions no public file uses)")
    raise r.error(UnsupportedVersionError, msg, field="header.version", offset=2,
                  expected="1 or 20..26", actual=version)


# -- sidecars (§6, §7) -------------------------------------------------------------------------
_ATLAS = struct.Struct("<4H")  # VRAM_ATLAS: x, y, width, height
_CLUT = struct.Struct("<4H")  # VRAM_CLUT: clut_x, clut_y, length, pad
_FONT = struct.Struct("<BBHHHI")  # VRAM_FONT: ..., data_size


def _record(r: Reader, st: struct.Struct, raws: list[bytes]) -> tuple[int, ...]:
    """One sidecar record's fields through ``st`` (checked as ``Reader.array`` checks one
    record), its bytes kept in ``raws`` for the document's table: a struct unpack per record
    and one array per table, not a numpy record per entry."""
    r.count(1, st.size)
    raws.append(bytes(r.data[r.pos:r.pos + st.size]))
    v = st.unpack_from(r.data, r.pos)
    r.pos += st.size
    return v


def read_vram(data: bytes) -> VramFile:
    r = Reader(data, FMT)
    with r.field("vram"):
        r.magic(ml.VRAM_MAGIC)
        r.seek(0)
        vf = VramFile(header=_own(r, ml.VRAM_HEADER, 1))
        _, atlases, cluts, fonts, _ = _VRAM_HEADER.unpack_from(r.data, 0)
        raws: list[bytes] = []
        for i in range(atlases):
            with r.field(f"atlases[{i}]"):
                _, _, w, h = _record(r, _ATLAS, raws)
                vf.atlas_pixels.append(_own(r, _U2, w * h, "pixels").reshape(h, w))
                r.align(4)
        vf.atlases = np.frombuffer(bytearray(b"".join(raws)), ml.VRAM_ATLAS)
        raws = []
        for i in range(cluts):
            with r.field(f"cluts[{i}]"):
                _, _, n, _ = _record(r, _CLUT, raws)
                vf.clut_words.append(_own(r, _U2, n, "words"))
                r.align(4)
        vf.cluts = np.frombuffer(bytearray(b"".join(raws)), ml.VRAM_CLUT)
        raws = []
        for i in range(fonts):
            with r.field(f"fonts[{i}]"):
                size = _record(r, _FONT, raws)[-1]
                vf.font_data.append(r.bytes(size, "data"))
                r.align(4)
        vf.fonts = np.frombuffer(bytearray(b"".join(raws)), ml.VRAM_FONT)
        if not r.at_end():
            msg = "bytes after the last record"
            raise r.corrupt(msg, field="eof", expected=r.tell(), actual=r.end)
    return vf


def spu_clips(data: bytes) -> npt.NDArray[np.void]:
    """The ``.spu``'s clip headers (§7), walked as SceneManager's upload loop walks them: magic,
    count, then per clip its 8-byte header, its ADPCM bytes and an align to 4."""
    r = Reader(data, FMT)
    with r.field("spu"):
        r.magic(ml.SPU_MAGIC)
        n = r.u16("clip_count")
        out = np.zeros(n, ml.SPU_CLIP)
        for i in range(n):
            with r.field(f"clips[{i}]"):
                out[i] = r.array(ml.SPU_CLIP, 1)[0]
                r.skip(int(out[i]["size"]))
                r.align(4)
    return out


def read_spu(data: bytes) -> bytes:
    """The ``.spu`` is kept opaque; its clip table is walked only to reject a damaged file."""
    spu_clips(data)
    return data


def read_modern_file(data: bytes, ctx: Context) -> ModernDocument:
    """The main file and, unless ``no_siblings``, the ``.vram`` and ``.spu`` beside it."""
    doc = read_modern(data)
    path = ctx.path
    if path is None or ctx.opt("no_siblings", False):
        return doc
    vram, spu = sidecar(path, "vram"), sidecar(path, "spu")
    # The fork's names matter only without an upstream .vram (two stats saved otherwise).
    fork = fork_sidecars(path) if vram is None else []
    if fork and vram is None and doc.version != 20:
        msg = (f"{fork[0].name} is how the {FORK} fork names its sidecar; its version "
               f"{doc.version} is another layout than upstream's, which gamemesh does not read")
        raise UnsupportedVersionError(FMT, msg, offset=2, field="header.version",
                                      expected="upstream psxsplash", actual=FORK)
    if vram is None and fork:
        vram = next((p for p in fork if p.suffix == ".vram"), None)
    if vram is not None:
        doc.vram = _sidecar_doc(vram, read_vram)
        doc.sidecars["vram"] = vram.name
    if spu is not None:
        doc.spu = _sidecar_doc(spu, read_spu)
        doc.sidecars["spu"] = spu.name
    return doc


def _sidecar_doc(path: Path, parse: Callable[[bytes], Any]) -> Any:
    try:
        return parse(read_regular(path))
    except FormatError as e:
        raise e.with_path(str(path)) from None
