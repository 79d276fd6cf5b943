""":class:`ModernDocument` -> bytes (main file and ``.vram``), in the writers' block order.

The header, then the cursor region back to back (§3), then the data blocks, each aligned to 4
with zeros (§4): Lua, meshes, names, audio, cutscenes, animations, skins, the other opaque blocks,
lights; no padding after the last. Every count and absolute offset is recomputed here. Inside a
cutscene, animation or skin block the order is gamemesh's own (the spec fixes the records, not
their order): header, tracks, target names, keys, events, then the name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ....binary import Writer
from ....errors import LimitError
from ....registry import Context
from . import layout as ml
from .document import ModernDocument, Sequence, SkinnedMesh, VramFile

FMT = "splashpack"

__all__ = ["write_modern", "write_spu", "write_vram"]


def _limit(field: str, n: int, most: int, why: str = "too many for the runtime's counter") -> None:
    if n > most:
        raise LimitError(FMT, why, field=field, expected=f"<= {most}", actual=n)


def _cursor_tables(doc: ModernDocument) -> list[tuple[str, npt.NDArray[Any], np.dtype[Any]]]:
    out = [("lua", doc.lua_desc, ml.LUA_DESC), ("objects", doc.objects, ml.GO),
           ("colliders", doc.colliders, ml.COLLIDER), ("triggers", doc.triggers, ml.TRIGGER),
           ("bvh_nodes", doc.bvh_nodes, ml.BVH_NODE), ("bvh_refs", doc.bvh_refs, ml.BVH_REF),
           ("interactables", doc.interactables, ml.INTERACTABLE)]
    if doc.version >= 22:
        out += [("agents", doc.agents, ml.AGENT), ("waypoints", doc.waypoints, ml.WAYPOINT)]
    if len(doc.nav_regions):
        hdr = np.array(doc.nav_header if len(doc.nav_header) else np.zeros(1, ml.NAV_HEADER),
                       dtype=ml.NAV_HEADER).reshape(-1)[:1].copy()
        hdr["region_count"], hdr["portal_count"] = len(doc.nav_regions), len(doc.nav_portals)
        out += [("nav", hdr, ml.NAV_HEADER), ("nav_regions", doc.nav_regions, ml.NAV_REGION),
                ("nav_portals", doc.nav_portals, ml.NAV_PORTAL)]
    if len(doc.rooms):
        out += [("rooms", doc.rooms, ml.ROOM), ("room_portals", doc.room_portals, ml.ROOM_PORTAL),
                ("room_tri_refs", doc.room_tri_refs, ml.ROOM_TRI_REF),
                ("room_cells", doc.room_cells, ml.ROOM_CELL),
                ("room_portal_refs", doc.room_portal_refs, ml.ROOM_PORTAL_REF)]
    out += [("atlas_desc", doc.atlas_desc, ml.ATLAS_DESC),
            ("clut_desc", doc.clut_desc, ml.CLUT_DESC)]
    return out


def _header(doc: ModernDocument) -> npt.NDArray[np.void]:
    v = doc.version
    if v not in ml.VERSIONS:
        msg = "modern files are versions 20..26"
        raise LimitError(FMT, msg, field="header.version", expected="20..26", actual=v)
    hdr = np.zeros(1, ml.HEADERS[v])
    src = doc.header
    for name in hdr.dtype.names or ():
        if name in (src.dtype.names or ()):
            hdr[name] = src[name]
    hdr["magic"] = ml.MAGIC
    counts = {"lua_count": len(doc.lua), "go_count": len(doc.objects),
              "atlas_count": len(doc.atlas_desc), "clut_count": len(doc.clut_desc),
              "collider_count": len(doc.colliders), "interactable_count": len(doc.interactables),
              "bvh_node_count": len(doc.bvh_nodes), "bvh_ref_count": len(doc.bvh_refs),
              "trigger_count": len(doc.triggers), "nav_region_count": len(doc.nav_regions),
              "nav_portal_count": len(doc.nav_portals), "room_count": len(doc.rooms),
              "portal_count": len(doc.room_portals), "room_tri_ref_count": len(doc.room_tri_refs),
              "room_cell_count": len(doc.room_cells),
              "room_portal_ref_count": len(doc.room_portal_refs),
              "cutscene_count": len(doc.cutscenes), "animation_count": len(doc.animations),
              "audio_count": len(doc.audio_clips),
              "skin_count": len(doc.skins)}
    if v >= 22:
        counts["agent_count"] = len(doc.agents)
    for name, n in counts.items():
        _limit(f"header.{name}", n, 0xFFFF)
        hdr[name] = n
    for name in ("cutscene", "animation", "skin"):
        _limit(f"header.{name}_count", counts[f"{name}_count"], ml.MAX_TABLE)
    for name in ml.OPAQUE_FIELDS:
        if name in (hdr.dtype.names or ()):
            hdr[name] = doc.opaque[name][0] if name in doc.opaque else 0
        elif name in doc.opaque:
            msg = f"version {v} has no {name.removesuffix('_offset')} block"
            raise LimitError(FMT, msg, field=f"header.{name}", expected=0,
                             actual=doc.opaque[name][0])
    return hdr


def _check_lists(doc: ModernDocument) -> None:
    n = len(doc.objects)
    for what, got in (("meshes", len(doc.meshes)), ("names", len(doc.names))):
        if got != n:
            msg = f"{what} and objects disagree"
            raise LimitError(FMT, msg, field=what, expected=n, actual=got)
    if len(doc.lua_desc) != len(doc.lua):
        doc.lua_desc = np.zeros(len(doc.lua), ml.LUA_DESC)


def _name(w: Writer, raw: bytes, field: str) -> tuple[int, int]:
    _limit(field, len(raw), 255, "a name is at most 255 bytes")
    at = w.tell()
    w.write(raw + b"\0")
    return at, len(raw)


def _sequence(w: Writer, seq: Sequence, cutscene: bool, where: str) -> int:
    w.align(4)
    dt = ml.CUTSCENE_HEADER if cutscene else ml.ANIM_HEADER
    hdr = np.array(seq.header, dtype=dt).reshape(-1)[:1].copy()
    start = w.tell()
    w.pad(dt.itemsize)
    _limit(f"{where}.track_count", len(seq.tracks), 255)
    tracks = np.zeros(len(seq.tracks), ml.TRACK)
    tracks_at = w.tell()
    w.pad(tracks.nbytes)
    for k, t in enumerate(seq.tracks):
        tracks[k]["type"], tracks[k]["light_index"] = t.type, t.light_index
        tracks[k]["target_offset"], tracks[k]["target_len"] = _name(
            w, t.target, f"{where}.tracks[{k}].target")
    for k, t in enumerate(seq.tracks):
        _limit(f"{where}.tracks[{k}].key_count", len(t.keys), 255)
        w.align(4)
        tracks[k]["keys_offset"], tracks[k]["key_count"] = w.tell(), len(t.keys)
        w.array(np.asarray(t.keys), ml.KEY)
    hdr["track_count"], hdr["tracks_offset"] = len(seq.tracks), tracks_at if len(
        seq.tracks) else 0
    if cutscene:
        _limit(f"{where}.audio_event_count", len(seq.audio_events), 255)
        hdr["audio_event_count"] = len(seq.audio_events)
        hdr["audio_events_offset"] = w.tell() if len(seq.audio_events) else 0
        w.array(np.asarray(seq.audio_events), ml.AUDIO_EVENT)
    _limit(f"{where}.skin_event_count", len(seq.skin_events), 255)
    hdr["skin_event_count"] = len(seq.skin_events)
    hdr["skin_events_offset"] = w.tell() if len(seq.skin_events) else 0
    w.array(np.asarray(seq.skin_events), ml.SKIN_EVENT)
    w.buf[start:start + dt.itemsize] = hdr.tobytes()
    w.buf[tracks_at:tracks_at + tracks.nbytes] = tracks.tobytes()
    return start


def _sequences(w: Writer, seqs: list[Sequence], cutscene: bool, kind: str) -> int:
    if not seqs:
        return 0
    w.align(4)
    table_at = w.tell()
    table = np.zeros(len(seqs), ml.TABLE_ENTRY)
    w.pad(table.nbytes)
    for i, seq in enumerate(seqs):
        where = f"{kind}s[{i}]"
        table[i]["offset"] = _sequence(w, seq, cutscene, where)
        table[i]["name_offset"], table[i]["name_len"] = _name(w, seq.name, f"{where}.name")
    w.buf[table_at:table_at + table.nbytes] = table.tobytes()
    return table_at


def _skin(w: Writer, doc: ModernDocument, skin: SkinnedMesh, where: str) -> int:
    w.align(4)
    at = w.tell()
    if not 0 <= skin.go_index < len(doc.objects):
        msg = "skinned mesh names no object"
        raise LimitError(FMT, msg, field=f"{where}.go_index", expected=f"< {len(doc.objects)}",
                         actual=skin.go_index)
    _limit(f"{where}.bone_count", skin.bone_count, ml.MAX_BONES)
    _limit(f"{where}.clip_count", len(skin.clips), ml.MAX_CLIPS)
    want = len(doc.meshes[skin.go_index]) * 3
    if len(skin.bone_index) != want:
        msg = "one bone index per triangle corner of the object"
        raise LimitError(FMT, msg, field=f"{where}.bone_index", expected=want,
                         actual=len(skin.bone_index))
    w.u16(skin.go_index)
    w.u8(skin.bone_count)
    w.u8(len(skin.clips))
    w.array(np.asarray(skin.bone_index, dtype=np.uint8))
    w.align(4)
    for c, clip in enumerate(skin.clips):
        _limit(f"{where}.clips[{c}].name", len(clip.name), 255, "a name is at most 255 bytes")
        w.u8(len(clip.name))
        w.write(clip.name + b"\0")
        w.u8(clip.flags)
        w.u8(clip.fps)
        w.align(2)
        mats = np.asarray(clip.matrices)
        if mats.ndim != 2 or mats.shape[1] != skin.bone_count:
            msg = "matrices are (frames, bones)"
            raise LimitError(FMT, msg, field=f"{where}.clips[{c}]", expected=skin.bone_count,
                             actual=mats.shape)
        _limit(f"{where}.clips[{c}].frame_count", mats.shape[0], 0xFFFF)
        w.u16(mats.shape[0])
        w.array(mats.reshape(-1), ml.BONE_MATRIX)
    if doc.version >= ml.SKIN_TAIL_VERSION:
        _skin_tail(w, skin, where)
    return at


def _skin_tail(w: Writer, skin: SkinnedMesh, where: str) -> None:
    """v26: align 2, each bone's bind position, each bone's name (zeros and empty names when
    the document has none); the skin's own name follows at once (where its readers expect)."""
    bones = skin.bone_count
    bind = np.zeros((bones, 3), np.int16) if skin.bind is None else np.asarray(skin.bind)
    names = skin.joint_names or [b""] * bones
    if bind.shape != (bones, 3) or len(names) != bones:
        msg = "one bind position and one joint name per bone"
        raise LimitError(FMT, msg, field=f"{where}.bind", expected=bones,
                         actual=(bind.shape, len(names)))
    w.align(2)
    w.array(bind.reshape(-1), ml.BIND_POS)
    for b, name in enumerate(names):
        _limit(f"{where}.joint_names[{b}]", len(name), 255, "a name is at most 255 bytes")
        w.u8(len(name))
        w.write(name + b"\0")


def _skins(w: Writer, doc: ModernDocument) -> int:
    if not doc.skins:
        return 0
    w.align(4)
    table_at = w.tell()
    table = np.zeros(len(doc.skins), ml.TABLE_ENTRY)
    w.pad(table.nbytes)
    for i, skin in enumerate(doc.skins):
        table[i]["offset"] = _skin(w, doc, skin, f"skins[{i}]")
        table[i]["name_offset"], table[i]["name_len"] = _name(w, skin.name, f"skins[{i}].name")
    w.buf[table_at:table_at + table.nbytes] = table.tobytes()
    return table_at


def _lights(w: Writer, doc: ModernDocument) -> int:
    if not doc.lights:
        return 0
    _limit("lights", len(doc.lights), ml.MAX_TABLE)
    w.align(4)
    at = w.tell()
    w.u16(len(doc.lights))
    w.u16(doc.light_pad)
    recs = np.concatenate([np.asarray(lt.record, ml.LIGHT).reshape(-1)[:1] for lt in doc.lights])
    rec_at = w.tell()
    w.pad(recs.nbytes)
    for k, lt in enumerate(doc.lights):
        _limit(f"lights[{k}].name", len(lt.name), ml.MAX_NAME)
        recs[k]["name_offset"] = _name(w, lt.name, f"lights[{k}].name")[0]
    w.buf[rec_at:rec_at + recs.nbytes] = recs.tobytes()
    return at


def _audio(w: Writer, doc: ModernDocument) -> int:
    """The audio table, then every clip's name in clip order (D23 §2.14), offsets recomputed."""
    n = len(doc.audio_clips)
    if not n:
        return 0
    if len(doc.audio_names) != n:
        msg = "one name per audio clip"
        raise LimitError(FMT, msg, field="audio_names", expected=n, actual=len(doc.audio_names))
    w.align(4)
    at = w.tell()
    recs = np.array(doc.audio_clips, dtype=ml.AUDIO_CLIP).reshape(-1).copy()
    w.pad(recs.nbytes)
    for k, name in enumerate(doc.audio_names):
        recs[k]["name_offset"], recs[k]["name_len"] = _name(w, name, f"audio[{k}].name")
    w.buf[at:at + recs.nbytes] = recs.tobytes()
    return at


def _opaque(w: Writer, doc: ModernDocument, names: list[str]) -> None:
    for name in sorted(names, key=lambda n: doc.opaque[n][0]):
        off, raw = doc.opaque[name]
        w.align(4)
        if w.tell() != off:
            msg = ("this block holds absolute offsets of its own and gamemesh does not model "
                   "it, so it can only be written back where it was read")
            raise LimitError(FMT, msg, field=f"header.{name}", expected=off, actual=w.tell())
        w.write(raw)


def _data(w: Writer, doc: ModernDocument, hdr: npt.NDArray[np.void],
          objs: npt.NDArray[np.void], lua: npt.NDArray[np.void]) -> None:
    for i, src in enumerate(doc.lua):
        w.align(4)
        lua[i]["offset"], lua[i]["length"] = w.tell(), len(src)
        w.write(src)
    for i, tris in enumerate(doc.meshes):
        _limit(f"objects[{i}].poly_count", len(tris), 0xFFFF)
        objs[i]["poly_count"] = len(tris)
        if len(tris):
            w.align(4)
            objs[i]["mesh_offset"] = w.tell()
            w.array(np.asarray(tris), ml.TRI)
    w.align(4)
    hdr["name_table_offset"] = w.tell()
    for i, name in enumerate(doc.names):
        _limit(f"names[{i}]", len(name), 255, "a name is at most 255 bytes")
        w.u8(len(name))
        w.write(name + b"\0")
    hdr["audio_table_offset"] = _audio(w, doc)
    hdr["cutscene_table_offset"] = _sequences(w, doc.cutscenes, True, "cutscene")
    hdr["animation_table_offset"] = _sequences(w, doc.animations, False, "animation")
    hdr["skin_table_offset"] = _skins(w, doc)
    _opaque(w, doc, list(doc.opaque))
    if doc.version >= 24:
        hdr["light_table_offset"] = _lights(w, doc)
    elif doc.lights:
        msg = "point lights need version 24"
        raise LimitError(FMT, msg, field="lights", expected="version 24", actual=doc.version)


def write_modern(doc: ModernDocument, ctx: Context | None = None) -> bytes:
    _check_lists(doc)
    hdr = _header(doc)
    tables = _cursor_tables(doc)
    copies = {name: np.array(a, dtype=dt).reshape(-1).copy() for name, a, dt in tables}
    w = Writer()
    w.pad(hdr.nbytes)
    cursor_at = w.tell()
    w.pad(sum(a.nbytes for a in copies.values()))
    _data(w, doc, hdr, copies["objects"], copies["lua"])
    out = w.buf
    out[0:hdr.nbytes] = hdr.tobytes()
    pos = cursor_at
    for name, _, _ in tables:
        raw = copies[name].tobytes()
        out[pos:pos + len(raw)] = raw
        pos += len(raw)
    return bytes(out)


# -- sidecars ----------------------------------------------------------------------------------
def write_vram(vf: VramFile) -> bytes:
    hdr = np.array(vf.header, dtype=ml.VRAM_HEADER).reshape(-1)[:1].copy()
    hdr["magic"] = ml.VRAM_MAGIC
    _limit("vram.atlas_count", len(vf.atlas_pixels), 0xFFFF)
    _limit("vram.clut_count", len(vf.clut_words), 0xFFFF)
    _limit("vram.font_count", len(vf.font_data), 0xFF)
    hdr["atlas_count"], hdr["clut_count"] = len(vf.atlas_pixels), len(vf.clut_words)
    hdr["font_count"] = len(vf.font_data)
    w = Writer()
    w.write(hdr.tobytes())
    for i, px in enumerate(vf.atlas_pixels):
        d = np.array(vf.atlases[i:i + 1], dtype=ml.VRAM_ATLAS).copy()
        d["height"], d["width"] = np.asarray(px).shape
        w.write(d.tobytes())
        w.array(np.asarray(px), "<u2")
        w.align(4)
    for i, words in enumerate(vf.clut_words):
        d = np.array(vf.cluts[i:i + 1], dtype=ml.VRAM_CLUT).copy()
        _limit(f"vram.cluts[{i}].length", len(words), 0xFFFF)
        d["length"] = len(words)
        w.write(d.tobytes())
        w.array(np.asarray(words), "<u2")
        w.align(4)
    for i, data in enumerate(vf.font_data):
        d = np.array(vf.fonts[i:i + 1], dtype=ml.VRAM_FONT).copy()
        d["data_size"] = len(data)
        w.write(d.tobytes())
        w.write(data)
        w.align(4)
    return bytes(w.buf)


def write_spu(data: bytes) -> bytes:
    return bytes(data)
