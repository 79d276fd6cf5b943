"""ModernDocument -> Scene (glTF conventions); the reverse is ``from_scene``.

Objects, triangles and textures convert as for v1 (``to_scene``: the same axes, winding and
(tpage, CLUT) pages decoded from VRAM, here the ``.vram`` sidecar's). New in v20+: names from the
name table, untextured triangles (tpage 0xFFFF) with vertex colours only, skinned meshes as glTF
skins (one flat joint per bone under the object, rest = identity so the mesh shows its bind
pose, clips as TRS keys decomposed from the baked matrices), object tracks of animations and
cutscenes as node channels, v24 point lights as KHR_lights_punctual, nav regions as a debug
mesh. What has no glTF meaning stays in the scene's extras as the file's own records.
"""

from __future__ import annotations

import base64
import bisect
import math
from functools import cache
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt

from ....errors import add_new_notes
from ....registry import Context
from ....scene import Animation, Channel, Light, Material, Mesh, Node, Primitive, Scene, Skin
from ..common import (
    bright_corners,
    bright_note,
    corner_colors,
    keep_bright,
    lua_extras,
    material_keys,
    primitive,
)
from ..conventions import AXES, DEFAULT_GTE, SWAP, bone_trs, object_rotations, track_to_quat
from ..vram import PageMaterials
from . import layout as ml
from .carry import audio_extras, in_scene_order, room_extras
from .document import ModernDocument, Sequence, SkinnedMesh
from .player import player_node

FMT = "splashpack"
UNTEXTURED = 0xFFFF
_EYE4 = np.eye(4, dtype=np.float32)
_AXES: list[float] = AXES.tolist()

__all__ = ["to_scene_modern"]


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _b64(a: npt.NDArray[Any] | bytes) -> str:
    raw = a if isinstance(a, bytes) else np.ascontiguousarray(a).tobytes()
    return base64.b64encode(raw).decode("ascii")


class _Builder:
    def __init__(self, doc: ModernDocument, ctx: Context, s: float) -> None:
        self.doc, self.ctx, self.s = doc, ctx, s
        self.scene = Scene(name=f"splashpack_v{doc.version}")
        self.tex = PageMaterials(doc, self.scene) if doc.vram is not None else None
        self.plain: int | None = None
        self.nodes: list[int] = []
        self.skinned_mesh_nodes: dict[int, int] = {}  # object -> the node holding its mesh
        self.by_name: dict[bytes, int] = {}
        self.bright: list[tuple[str, int]] = []  # meshes with colours clamped to 1.0
        # Objects whose triangles the scene holds in another order (grouped by material): the
        # file's triangle indices in scene order, for the references into them (carry.py).
        self.orders: dict[int, npt.NDArray[np.intp]] = {}

    def untextured(self) -> int:
        if self.plain is None:
            self.plain = self.scene.add_material(Material(
                name="vertex_colour", unlit=True, extras={FMT: {"tpage": UNTEXTURED,
                                                               "color_scale": 128}}))
        return self.plain

    def material(self, key: tuple[int, int, int], tris: npt.NDArray[np.void]) -> int:
        if key[0] == UNTEXTURED or self.tex is None:
            return self.untextured()
        return self.tex.material(key, tris["uv"])

    def mesh(self, i: int, batch: _Batch, bones: npt.NDArray[np.uint8] | None) -> int:
        mesh = Mesh(name=_text(self.doc.names[i]) or f"object_{i}")
        tris = self.doc.meshes[i]
        keys, inverse = batch.keys(i)
        if inverse is not None:
            self.orders[i] = np.argsort(inverse, kind="stable")
        for k, t in enumerate(keys):
            # One material (the common case): no mask and no copy of the records.
            sel = slice(None) if inverse is None else inverse == k
            prim = batch.primitive(i, sel)
            prim.material = self.material(t, tris if inverse is None else tris[sel])
            if t[0] == UNTEXTURED or self.tex is None:
                prim.texcoords = []
            if bones is not None:
                corner = np.take(bones.reshape(-1, 3)[sel], SWAP, axis=1).reshape(-1)
                prim.joints = np.zeros((len(corner), 4), np.uint16)
                prim.joints[:, 0] = corner
                prim.weights = np.zeros((len(corner), 4), np.float32)
                prim.weights[:, 0] = 1.0
            mesh.primitives.append(prim)
            if i in batch.bright:
                sub = tris if inverse is None else tris[sel]
                self.bright.append((mesh.name, keep_bright(mesh, k, corner_colors(sub))))
        return self.scene.add_mesh(mesh)


class _Batch:
    """Every object's triangles converted in one pass (``primitive`` on all of them at once:
    its operations are element by element, so each object's slice holds the bits a call on that
    object alone gives), and each object's material keys, told apart without a numpy call per
    object. A small scene has a few triangles per object, where numpy's cost per call was most
    of the conversion."""

    def __init__(self, meshes: list[npt.NDArray[np.void]], s: float) -> None:
        self.meshes = meshes
        lens = [len(m) for m in meshes]
        self.starts = [0] * len(lens)
        total = 0
        for i, n in enumerate(lens):
            self.starts[i], total = total, total + n
        parts = [m for m in meshes if len(m)]
        self.bright: set[int] = set()  # objects with a colour byte above 128
        if not parts:
            return
        if len(parts) == 1:
            tris = parts[0]
        elif all(m.dtype == ml.TRI for m in parts):
            # As bytes: numpy concatenates structured records field by field, far slower.
            tris = np.concatenate([np.ascontiguousarray(m).view(np.uint8) for m in parts]
                                  ).view(ml.TRI)
        else:
            tris = np.concatenate(parts)
        prim, words = primitive(tris, s)
        hit = bright_corners(words).reshape(-1, 3)
        over = np.flatnonzero(hit[:, 0] | hit[:, 1] | hit[:, 2])
        if over.size:
            owner = np.searchsorted(np.asarray(self.starts), over, side="right") - 1
            self.bright = set(owner.tolist())
        # (T, 3, ...) views: a triangle's three corners stay together under a mask.
        self.pos = prim.positions.reshape(total, 3, 3)
        self.nrm = prim.normals.reshape(total, 3, 3)  # type: ignore[union-attr]
        self.uv = prim.texcoords[0].reshape(total, 3, 2)
        self.col = prim.colors[0].reshape(total, 3, 3)
        # Where the key changes from one triangle to the next (an object has one material
        # unless a change falls inside it), and each object's first key.
        firsts = [st for st, n in zip(self.starts, lens, strict=True) if n]
        tp, cx, cy = tris["tpage"], tris["clut_x"], tris["clut_y"]
        key = (tp.astype(np.int64) << 32) | (cx.astype(np.int64) << 16) | cy.astype(np.int64)
        self.changes = (np.flatnonzero(key[1:] != key[:-1]) + 1).tolist()
        self.first = {st: (k >> 32, (k >> 16) & 0xFFFF, k & 0xFFFF)
                      for st, k in zip(firsts, key[firsts].tolist(), strict=True)}

    def keys(self, i: int) -> tuple[list[tuple[int, int, int]], npt.NDArray[np.intp] | None]:
        """:func:`material_keys` of object ``i``."""
        start, n = self.starts[i], len(self.meshes[i])
        k = bisect.bisect_right(self.changes, start)
        if k < len(self.changes) and self.changes[k] < start + n:
            return material_keys(self.meshes[i])
        return [self.first[start]], None

    def primitive(self, i: int, sel: slice | npt.NDArray[np.bool_]) -> Primitive:
        """Object ``i``'s triangles ``sel`` as ``primitive`` makes them."""
        a = slice(self.starts[i], self.starts[i] + len(self.meshes[i]))
        pos, nrm, uv, col = (x[a] for x in (self.pos, self.nrm, self.uv, self.col))
        if not isinstance(sel, slice):  # a slice is every triangle: the views as they are
            pos, nrm, uv, col = pos[sel], nrm[sel], uv[sel], col[sel]
        return Primitive(positions=pos.reshape(-1, 3), normals=nrm.reshape(-1, 3),
                         texcoords=[uv.reshape(-1, 2)], colors=[col.reshape(-1, 3)])


def _objects(b: _Builder) -> None:
    doc = b.doc
    skinned = {sk.go_index: sk for sk in doc.skins}
    objs = doc.objects
    n = len(objs)
    # Every object's fields as Python values in one pass each (not record by record), and
    # every rotation through one batched SVD.
    rots, errs = object_rotations(objs["rot"]) if n else ([], [])
    pos_list = (objs["pos"].astype(np.float64) * AXES * b.s).tolist()
    rot_raw, pos_raw = objs["rot"].tolist(), objs["pos"].tolist()
    lua, flags, inter = (objs[k].tolist() for k in ("lua_index", "flags", "interactable_index"))
    batch = _Batch(doc.meshes, b.s)
    for i in range(n):
        if errs[i] > 0.01:
            b.ctx.note("splashpack.rotation_not_orthonormal", f"object {i}: the stored matrix is "
                       f"{errs[i]:.3f} off a rotation; its nearest rotation is used")
        extras: dict[str, Any] = {"object": i, "rotation_raw": rot_raw[i],
                                  "position_raw": pos_raw[i], "lua_index": lua[i],
                                  "flags": flags[i], "interactable_index": inter[i]}
        name = _text(doc.names[i]) if i < len(doc.names) else ""
        x, y, z = pos_list[i]
        node = Node(name=name or f"object_{i}", translation=(x, y, z), rotation=rots[i],
                    extras={FMT: extras})
        sk = skinned.get(i)
        mesh = b.mesh(i, batch, sk.bone_index if sk is not None else None) \
            if len(doc.meshes[i]) else None
        node.mesh = mesh if sk is None else None
        ni = b.scene.add_node(node)
        if sk is not None and mesh is not None:
            # glTF ignores a skinned mesh node's transform: the object's transform stays on
            # this node (the joints' parent), the mesh goes on an untransformed root node (a
            # skinned mesh node under a transformed parent draws a validator warning).
            b.skinned_mesh_nodes[i] = b.scene.add_node(Node(
                name=f"{node.name}_mesh", mesh=mesh, extras={FMT: {"skinned_mesh_of": i}}))
        b.nodes.append(ni)
        b.by_name.setdefault(doc.names[i] if i < len(doc.names) else b"", ni)


def _joint_name(sk: SkinnedMesh, j: int, owner: str) -> str:
    """A v26 joint's own name, else one made from the object's."""
    own = _text(sk.joint_names[j]) if j < len(sk.joint_names) else ""
    return own or f"{owner}_bone_{j}"


def _joint_extras(sk: SkinnedMesh, j: int) -> dict[str, Any]:
    """The bone's index and, from v26, its stored bind position (so a rewrite keeps it)."""
    out: dict[str, Any] = {"bone": j}
    if sk.bind is not None and j < len(sk.bind):
        out["bind_raw"] = [int(v) for v in sk.bind[j]]
    return out


def _skin(b: _Builder, k: int, sk: SkinnedMesh) -> None:
    owner = b.nodes[sk.go_index]
    node = b.scene.nodes[owner]
    joints = [b.scene.add_node(Node(name=_joint_name(sk, j, node.name),
                                    extras={FMT: _joint_extras(sk, j)}),
                               parent=owner) for j in range(sk.bone_count)]
    holder = b.skinned_mesh_nodes.get(sk.go_index)
    if holder is None or not joints:
        return
    b.scene.nodes[holder].skin = b.scene.add_skin(Skin(joints=joints, name=f"{node.name}_skin",
                                      inverse_bind_matrices=np.repeat(
                                          _EYE4[None], len(joints), axis=0)))
    for c, clip in enumerate(sk.clips):
        frames = clip.matrices.shape[0]
        if frames == 0:
            continue
        fps = clip.fps or ml.FPS
        # A looping clip wraps from its last frame to its first (the runtime's frame % count):
        # the first pose again at frames / fps closes the loop, so the clip lasts what it
        # plays for (splashedit-ng: 15 frames at 15 fps is 1.0 s).
        wrap = bool(clip.flags & 1)
        times = (np.arange(frames + wrap) / fps).astype(np.float32)
        anim = Animation(name=_text(clip.name) or f"{node.name}_clip_{c}",
                         extras={FMT: {"skin": k, "clip": c, "fps": clip.fps,
                                       "loop": bool(clip.flags & 1)}})
        # Every bone of every frame in one batch (row by row, the same numbers as bone by
        # bone), then cut per joint.
        n = len(joints)
        rr, tt = clip.matrices["r"][:, :n], clip.matrices["t"][:, :n]
        trs = [a.reshape(frames, n, -1) for a in bone_trs(rr, tt, b.s)]
        scaled = np.abs(trs[2] - 1).max(axis=(0, 2)) > 1e-3
        # (joint, frame, value) in float32: each joint's keys contiguous.
        t, r, s = (a.transpose(1, 0, 2).astype(np.float32) for a in trs)
        if wrap:
            t, r, s = (np.concatenate([a, a[:, :1]], axis=1) for a in (t, r, s))
        for j, jn in enumerate(joints):
            anim.channels.append(Channel(jn, "translation", times, t[j]))
            anim.channels.append(Channel(jn, "rotation", times, r[j]))
            if scaled[j]:
                anim.channels.append(Channel(jn, "scale", times, s[j]))
        b.scene.animations.append(anim)


def _sequence(b: _Builder, seq: Sequence, kind: str, k: int) -> None:
    anim = Animation(name=_text(seq.name) or f"{kind}_{k}", extras={FMT: {kind: k}})
    kept = []
    for t, tr in enumerate(seq.tracks):
        node = b.by_name.get(tr.target)
        if tr.type not in (ml.TRACK_OBJ_POS, ml.TRACK_OBJ_ROT) or node is None or \
                not len(tr.keys):
            kept.append(t)
            continue
        order, times, rising, step = _key_order(tr.keys["frame"])
        if not rising:
            kept.append(t)  # repeated frames have no glTF meaning
            continue
        interp = "STEP" if step else "LINEAR"
        # Keys stored in time order (the usual case) need no reordering copy: every use
        # below makes new arrays from them.
        in_order = isinstance(order, list) and order == list(range(len(order)))
        vals = tr.keys["v"] if in_order else tr.keys["v"][order]
        if tr.type == ml.TRACK_OBJ_POS:
            ch = Channel(node, "translation", times,
                         (vals.astype(np.float64) * AXES * b.s).astype(np.float32), interp)  # type: ignore[arg-type]
        else:
            ch = Channel(node, "rotation", times, track_to_quat(vals).astype(np.float32),
                         interp)  # type: ignore[arg-type]
        anim.channels.append(ch)
    anim.extras[FMT]["native_tracks"] = kept
    if anim.channels:
        b.scene.animations.append(anim)


def _key_order(raw: npt.NDArray[np.uint16]) -> tuple[Any, npt.NDArray[np.float32], bool, bool]:
    """A track's keys in time order (a stable sort of the 13-bit frames), their times in
    seconds, whether those strictly increase, and whether every key is a step key. A track
    holds at most 64 keys: plain ints give the same order, times and tests (a stable sort,
    the same float64 division, comparisons of the same float32 values) for fewer numpy calls."""
    words: list[int] = raw.tolist()
    if len(words) <= ml.MAX_KEYS:
        frames = [w & 0x1FFF for w in words]
        order: Any = sorted(range(len(frames)), key=frames.__getitem__)
        times = np.array([frames[i] / ml.FPS for i in order], dtype=np.float64
                         ).astype(np.float32)
        ts = times.tolist()
        rising = all(b - a > 0 for a, b in pairwise(ts))
        return order, times, rising, all(w >> 13 == 1 for w in words)
    f = (raw & 0x1FFF).astype(np.float64)
    order = np.argsort(f, kind="stable")
    times = (f[order] / ml.FPS).astype(np.float32)
    return order, times, not np.any(np.diff(times) <= 0), bool(np.all(raw >> 13 == 1))


def _lights(b: _Builder) -> None:
    for k, lt in enumerate(b.doc.lights):
        # The record's fields as Python values in one call (a field read of a numpy record
        # costs about a microsecond); the arithmetic is the same on the same values.
        rec = dict(zip(ml.LIGHT.names or (), lt.record.tolist()[0], strict=True))
        # (pos * AXES) * s, each product rounded as numpy rounds it (plain float64 IEEE).
        x, y, z = (float(p) * a * b.s for p, a in zip(rec["pos"], _AXES, strict=True))
        r, g, bl = (float(c) / 255 for c in rec["rgb"])
        li = b.scene.add_light(Light(
            type="point", name=_text(lt.name), color=(r, g, bl),
            intensity=float(rec["intensity"]) / 4096, range=float(rec["radius"]) * b.s or None,
            extras={FMT: {"light": k, "flags": rec["flags"]}}))
        b.scene.add_node(Node(name=_text(lt.name) or f"light_{k}", light=li,
                              translation=(x, y, z), extras={FMT: {"light": k}}))


def _nav(b: _Builder) -> None:
    regs = b.doc.nav_regions
    if not len(regs):
        return
    tris: list[npt.NDArray[np.float64]] = []
    for reg in regs:
        n = int(reg["vert_count"])
        if n < 3:
            continue
        x = reg["verts_x"][:n].astype(np.float64)
        z = reg["verts_z"][:n].astype(np.float64)
        a, bb, d = (float(v) for v in reg["plane"])
        # Assumed floor plane (D23 §3 was not available): y = (A x + B z) / 4096 + D.
        y = (a * x + bb * z) / 4096.0 + d
        pts = np.stack([x, y, z], axis=1)
        fan = np.stack([np.zeros(n - 2, int), np.arange(2, n), np.arange(1, n - 1)], axis=1)
        tris.append(pts[fan])
    if not tris:
        return
    v = np.concatenate(tris) * AXES * b.s
    mat = b.scene.add_material(Material(name="navmesh", base_color_factor=(0.2, 0.8, 0.3, 1.0),
                                        unlit=True, double_sided=True,
                                        extras={FMT: {"navmesh": True}}))
    mesh = b.scene.add_mesh(Mesh(name="navmesh_regions", primitives=[
        Primitive(positions=v.reshape(-1, 3).astype(np.float32), material=mat)]))
    b.scene.add_node(Node(name="navmesh_regions", mesh=mesh,
                          extras={FMT: {"navmesh": "regions", "debug_only": True}}))
    b.ctx.note("splashpack.nav_regions", f"{len(regs)} nav region(s) shown as a debug mesh "
               "(floor height from an assumed plane equation); the regions themselves are kept "
               "in extras", "info")


def _native(doc: ModernDocument, orders: dict[int, npt.NDArray[np.intp]]) -> dict[str, Any]:
    """The records gamemesh does not convert, as the file holds them (triangle references in
    the scene's triangle order)."""
    out: dict[str, Any] = {}
    for name in ("colliders", "triggers", "bvh_nodes", "bvh_refs", "interactables", "agents",
                 "waypoints", "nav_header", "nav_regions", "nav_portals"):
        a = getattr(doc, name)
        if len(a):
            out[name] = _b64(in_scene_order(a, orders, [len(m) for m in doc.meshes])
                             if name == "bvh_refs" else a)
    out.update(room_extras(doc, orders))
    if len(doc.audio_clips):
        out["audio"] = audio_extras(doc)
    for kind in ("cutscenes", "animations"):
        seqs = getattr(doc, kind)
        if seqs:
            out[kind] = [{"name": _text(s.name), "header": _b64(s.header),
                          "tracks": [{"type": t.type, "light_index": t.light_index,
                                      "target": _text(t.target), "keys": _b64(t.keys)}
                                     for t in s.tracks],
                          "audio_events": _b64(s.audio_events),
                          "skin_events": _b64(s.skin_events)} for s in seqs]
    out["poly_counts"] = [len(m) for m in doc.meshes]
    for name, (off, raw) in doc.opaque.items():
        out.setdefault("opaque", {})[name] = {"offset": off, "data": _b64(raw)}
    if doc.spu is not None:
        out["spu"] = _b64(doc.spu)
    if doc.vram is not None and doc.vram.font_data:
        out["vram_fonts"] = {"records": _b64(doc.vram.fonts),
                             "data": [_b64(f) for f in doc.vram.font_data]}
    return out


@cache
def _kept_fields(dt: np.dtype[Any]) -> tuple[tuple[int, str], ...]:
    """(position, name) of the header fields kept in extras: not the magic, counts or offsets
    (the writer recomputes those)."""
    return tuple((k, name) for k, name in enumerate(dt.names or ())
                 if name not in ("magic",) and not name.endswith(("_count", "_offset")))


def _header_fields(doc: ModernDocument) -> dict[str, Any]:
    # The record's values in one tolist (a field lookup per name cost more than the rest).
    values = doc.header[0].tolist()
    out: dict[str, Any] = {}
    for k, name in _kept_fields(doc.header.dtype):
        v = values[k]
        out[name] = v.tolist() if isinstance(v, np.ndarray) else int(v)
    return out


def _notes(doc: ModernDocument, ctx: Context, gte: float) -> None:
    ctx.note("splashpack.gte_scaling", f"GTEScaling is not stored in the file; {gte:g} assumed "
             "(raw / 4096 x GTEScaling = units)", "info")
    if doc.vram is None and any(bool(np.any(m["tpage"] != UNTEXTURED))
                                for m in doc.meshes if len(m)):
        ctx.note("splashpack.vram_missing", "no .vram sidecar beside the file (scene.vram): the "
                 "textured triangles get a vertex-colour material")
    kept = [k for k in ("colliders", "triggers", "interactables", "agents", "rooms",
                        "bvh_nodes") if len(getattr(doc, k))]
    kept += [k for k in ("cutscenes",) if getattr(doc, k)]
    kept += ["audio"] if len(doc.audio_clips) else []
    kept += [k.removesuffix("_offset").removesuffix("_table") for k in doc.opaque]
    if kept:
        ctx.note("splashpack.native_kept", f"kept only as native records in extras (no glTF "
                 f"equivalent): {', '.join(kept)}", "info")


def to_scene_modern(doc: ModernDocument, ctx: Context) -> Scene:
    gte = float(ctx.opt("gte_scaling", DEFAULT_GTE))
    if not math.isfinite(gte) or gte <= 0:
        gte = DEFAULT_GTE
    b = _Builder(doc, ctx, gte / 4096.0)
    _objects(b)
    for k, sk in enumerate(doc.skins):
        _skin(b, k, sk)
    for k, seq in enumerate(doc.animations):
        _sequence(b, seq, "animation", k)
    for k, seq in enumerate(doc.cutscenes):
        _sequence(b, seq, "cutscene", k)
    _lights(b)
    _nav(b)
    player_node(b.scene, doc.header, b.s)
    info: dict[str, Any] = {"version": doc.version, "gte_scaling": gte, "color_scale": 128,
                            "lua": lua_extras(doc.lua), "header": _header_fields(doc),
                            "sidecars": dict(doc.sidecars), "native": _native(doc, b.orders)}
    info["scene_lua_index"] = int(doc.hfield("scene_lua"))
    b.scene.extras.update({"format": FMT, "version": doc.version,
                           "variant": f"v{doc.version}", FMT: info})
    _notes(doc, ctx, gte)
    bright_note(ctx, b.bright)
    add_new_notes(b.scene.notes, ctx.notes)
    return b.scene
