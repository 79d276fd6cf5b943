"""What a scene read from a modern SPLASHPACK carries back into one: the audio clips (their table
and the ``.spu`` that holds their ADPCM) and the rooms (spec-modern §3.9, D23 §2.9).

Rooms cannot be built from a scene (the room volumes are SplashEdit components no scene holds), so
they are carried: their triangle references (object, triangle: psxsplash ``bvh.hh``
``TriangleRef``, resolved by ``Renderer::RenderWithRooms`` as ``objects[o]->polygons[t]``) are
stored in the scene's own triangle order (``to_scene`` groups an object's triangles by material,
which reorders them when materials interleave), with a digest of each referenced object's
transform and vertices. On the way back the references follow their objects to their new indices,
and the rooms are written only when every referenced object comes back with the same digest and no
new static object appears (the runtime draws an interior scene's static triangles only through
its rooms, so a new object would be invisible): otherwise a warning names the room set and why.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import numpy as np
import numpy.typing as npt

from ....errors import FormatError
from ....registry import Context
from . import layout as ml
from .document import ModernDocument
from .read import spu_clips

FMT = "splashpack"
_ROOMS = {"rooms": ml.ROOM, "room_portals": ml.ROOM_PORTAL, "room_tri_refs": ml.ROOM_TRI_REF,
          "room_cells": ml.ROOM_CELL, "room_portal_refs": ml.ROOM_PORTAL_REF}

__all__ = ["audio_extras", "check_audio_events", "in_scene_order", "records", "restore_audio",
           "restore_rooms", "room_extras"]


def _b64(a: npt.NDArray[Any]) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def records(raw: Any, dt: np.dtype[Any]) -> npt.NDArray[np.void] | None:
    """Records of ``dt`` from a base64 string in a scene's extras (None: not such records)."""
    if not isinstance(raw, str):
        return None
    try:
        data = base64.b64decode(raw, validate=True)
    except ValueError:
        return None
    return np.frombuffer(data, dt).copy() if len(data) % dt.itemsize == 0 else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# -- triangle references -----------------------------------------------------------------------
def in_scene_order(refs: npt.NDArray[np.void], orders: dict[int, npt.NDArray[np.intp]],
                   counts: list[int]) -> npt.NDArray[np.void]:
    """(object, tri) references renumbered to the order the scene holds each object's triangles
    in: ``orders[o]`` lists object ``o``'s file triangles in scene order (absent: unchanged);
    ``counts`` are the objects' triangle counts (a reference past them is left as it is)."""
    if not orders or not len(refs):
        return refs
    starts = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    rank = np.arange(starts[-1])  # every triangle's place in its object's scene order, flat
    for o, order in orders.items():
        rank[starts[o] + order] = starts[o] + np.arange(len(order))
    obj, tri = refs["object"].astype(np.int64), refs["tri"].astype(np.int64)
    ok = obj < len(counts)
    ok[ok] = tri[ok] < np.asarray(counts, np.int64)[obj[ok]]
    out = refs.copy()
    out["tri"][ok] = rank[starts[obj[ok]] + tri[ok]] - starts[obj[ok]]
    return out


def _digest(obj: npt.NDArray[np.void], tris: npt.NDArray[np.void]) -> str:
    """What a room's boxes and references rest on: the object's stored position and rotation and
    its triangles' vertices (all in GTE units, so another GTEScaling changes it too)."""
    h = hashlib.blake2b(digest_size=12)
    h.update(np.ascontiguousarray(obj["pos"]).tobytes())
    h.update(np.ascontiguousarray(obj["rot"]).tobytes())
    h.update(np.ascontiguousarray(tris["v"]).tobytes())
    return h.hexdigest()


def room_extras(doc: ModernDocument, orders: dict[int, npt.NDArray[np.intp]]) -> dict[str, Any]:
    """The room records for the scene's extras, references in scene order, and the digest of
    every object they reference."""
    if not len(doc.rooms):
        return {}
    out: dict[str, Any] = {name: _b64(getattr(doc, name)) for name in _ROOMS}
    refs = in_scene_order(doc.room_tri_refs, orders, [len(m) for m in doc.meshes])
    out["room_tri_refs"] = _b64(refs)
    digests = {}
    for o in sorted(set(refs["object"].tolist())):
        if o < len(doc.objects):
            tris = doc.meshes[o]
            digests[str(o)] = _digest(doc.objects[o], tris[orders[o]] if o in orders else tris)
    out["room_objects"] = digests
    return out


def _rooms_of(rooms: npt.NDArray[np.void], refs: npt.NDArray[np.void], obj: int) -> list[int]:
    """The rooms whose range of references includes object ``obj``."""
    first = rooms["first_tri_ref"].astype(np.int64)
    count = rooms["tri_ref_count"].astype(np.int64)
    hits = np.flatnonzero(refs["object"] == obj)
    return [r for r in range(len(rooms))
            if np.any((hits >= first[r]) & (hits < first[r] + count[r]))]


def restore_rooms(doc: ModernDocument, native: dict[str, Any], sources: list[int],
                  ctx: Context) -> None:
    """Put the scene's rooms back when every object they reference came back unchanged;
    ``sources[k]``: the file object index written object ``k`` was read as (-1: a new one)."""
    recs = {name: records(native.get(name), dt) for name, dt in _ROOMS.items()}
    rooms, refs = recs["rooms"], recs["room_tri_refs"]
    if rooms is None or refs is None or not len(rooms):
        return
    digests = native.get("room_objects")
    why: list[str] = []
    if not isinstance(digests, dict):
        why.append("the scene keeps no digest of the objects they reference, so whether those "
                   "changed cannot be told")
        digests = {}
    new_of: dict[int, int] = {}
    for k, src in enumerate(sources):
        static = len(doc.meshes[k]) and not int(doc.objects[k]["flags"]) & ml.GO_SKINNED
        if src < 0 or src in new_of:
            if static:
                why.append(f"object {doc.names[k].decode('utf-8', 'replace')!r} is new since "
                           "the file was read (no room holds its triangles)")
            continue
        new_of[src] = k
    for o in sorted(set(refs["object"].tolist())):
        now = new_of.get(o)
        where = f"rooms {_rooms_of(rooms, refs, o)}"
        if str(o) not in digests:
            continue  # no object of the source: the runtime skipped it there, and will again
        if now is None:
            why.append(f"file object {o}, referenced by {where}, is not in the scene")
        elif digests.get(str(o)) != _digest(doc.objects[now], doc.meshes[now]):
            why.append(f"object {doc.names[now].decode('utf-8', 'replace')!r}, referenced by "
                       f"{where}, changed since the file was read")
    if why:
        ctx.note("splashpack.rooms_dropped", f"the room set ({len(rooms) - 1} room(s) and the "
                 f"catch-all, {len(recs['room_portals'] or [])} portal(s), {len(refs)} triangle "
                 f"reference(s)) is left out: {'; '.join(why)}. Rooms cannot be rebuilt from a "
                 "scene; the runtime draws this interior scene without room/portal culling")
        return
    for name, a in recs.items():
        if a is not None:
            setattr(doc, name, a)
    # A reference to no object of the source goes to 0xFFFF, which names no object either.
    lookup = np.full(0x10000, ml.NO_INDEX, np.uint16)
    lookup[list(new_of)] = list(new_of.values())
    doc.room_tri_refs["object"] = lookup[refs["object"]]


# -- audio -------------------------------------------------------------------------------------
def audio_extras(doc: ModernDocument) -> list[dict[str, Any]]:
    """Each audio clip's table fields (names as text; the ADPCM stays in the ``.spu``)."""
    recs = doc.audio_clips
    return [{"name": name.decode("utf-8", "replace"), "size": size, "sample_rate": rate,
             "loop": loop, "data_offset": off}
            for name, size, rate, loop, off in zip(
                doc.audio_names, recs["size"].tolist(), recs["rate"].tolist(),
                recs["loop"].tolist(), recs["data_offset"].tolist(), strict=True)]


def _clip(entry: Any) -> tuple[int, int, int, int, bytes] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        return None
    vals = [_int(entry.get(k)) for k in ("data_offset", "size", "sample_rate", "loop")]
    most = (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFF, 0xFF)
    if any(v is None or not 0 <= v <= m for v, m in zip(vals, most, strict=True)):
        return None
    off, size, rate, loop = (int(v or 0) for v in vals)
    return off, size, rate, loop, entry["name"].encode("utf-8")[:255]


def _spu(native: dict[str, Any], ctx: Context) -> npt.NDArray[np.void] | None:
    """The ``.spu`` the scene kept, back into the document, and its clip headers."""
    raw = native.get("spu")
    if not isinstance(raw, str):
        return None
    try:
        data = base64.b64decode(raw, validate=True)
        clips = spu_clips(data)
    except (ValueError, FormatError) as e:
        ctx.note("splashpack.spu_dropped", f"the scene's .spu is damaged ({e}); not written")
        return None
    return clips


def restore_audio(doc: ModernDocument, native: dict[str, Any], ctx: Context) -> None:
    """The audio table and the ``.spu`` a scene read from a modern file kept."""
    spu = _spu(native, ctx)
    if spu is not None:
        doc.spu = base64.b64decode(native["spu"])
    entries = native.get("audio")
    clips = [_clip(e) for e in entries] if isinstance(entries, list) else []
    if any(c is None for c in clips):
        bad = [k for k, c in enumerate(clips) if c is None]
        ctx.note("splashpack.audio_dropped", f"audio clip entries {bad} in the scene's extras are "
                 "not clips (name, size, sample_rate, loop, data_offset); no audio table written")
        clips = []
    kept = [c for c in clips if c is not None]
    doc.audio_clips = np.zeros(len(kept), ml.AUDIO_CLIP)
    for k, (off, size, rate, loop, _) in enumerate(kept):
        doc.audio_clips[k] = (off, size, rate, loop, 0, 0)
    doc.audio_names = [c[4] for c in kept]
    _audio_notes(doc, spu, ctx)


def _audio_notes(doc: ModernDocument, spu: npt.NDArray[np.void] | None, ctx: Context) -> None:
    n = len(doc.audio_clips)
    if n and spu is None:
        ctx.note("splashpack.spu_missing", f"{n} audio clip(s) are named but the source had no "
                 ".spu beside it: the runtime will know their names and play nothing")
    elif spu is not None and (len(spu) != n or not np.array_equal(
            spu["size"], doc.audio_clips["size"])):
        ctx.note("splashpack.audio_mismatch", f"the .spu holds {len(spu)} clip(s) of "
                 f"{spu['size'].tolist()} bytes and the audio table {n} of "
                 f"{doc.audio_clips['size'].tolist()}: both are written as the source had them")
    if n > ml.MAX_AUDIO_CLIPS:
        ctx.note("splashpack.audio_clips", f"{n} audio clips: the runtime loads the first "
                 f"{ml.MAX_AUDIO_CLIPS} only", "info")


def check_audio_events(doc: ModernDocument, ctx: Context) -> None:
    """A cutscene's audio event names a clip by its number: events naming no clip of the table
    written are left out (the runtime would play a clip it never loaded)."""
    n = len(doc.audio_clips)
    for seq in doc.cutscenes:
        bad = seq.audio_events["clip"] >= n
        if bad.any():
            ctx.note("splashpack.audio_events_dropped", f"cutscene "
                     f"{seq.name.decode('utf-8', 'replace')!r}: {int(bad.sum())} audio event(s) "
                     f"name clips {sorted(set(seq.audio_events['clip'][bad].tolist()))} and the "
                     f"audio table written holds {n}; they are left out")
            seq.audio_events = seq.audio_events[~bad]
