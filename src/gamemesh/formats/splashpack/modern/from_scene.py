"""Scene -> :class:`ModernDocument` (version 21, the newest the public runtime loads, or the one
asked for).

Every mesh node becomes one GameObject named after the node (its world rotation kept, scale
baked into the vertices, spec-modern §3.2); textures go into the ``.vram`` sidecar with CLUTs
(placed as for v1, ``vram.py``); a skinned mesh keeps its rest pose in object space with one bone
per corner (the heaviest) and, per clip, the baked bone matrices sampled at 30 fps (§4.2);
translation and rotation channels of objects become animation tracks (§4.3); point lights become
the v24 light table (§4.4). An exterior scene gets a BVH built by ``bvh.py`` (SAH, 64 per leaf,
depth 16, breadth-first numbering, §3.5); nav regions are built from navmesh nodes
(``navbuild.py``). Rooms cannot be built from a scene: those, the audio clips and the other
records a modern file's scene kept come back from its extras (``carry.py``), and a warning says
what the runtime lacks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ....errors import LimitError
from ....registry import Context
from ....scene import Animation, Primitive, Scene
from ....scene.math import (
    local_matrix,
    quat_normalize,
    trs_to_matrices,
    world_matrices,
)
from ....scene.sampling import sample_channel
from ....scene.skinning import limit_influences, safe_inverse
from ....textures import psx
from ..common import (
    Part,
    choose_gte,
    color_scale,
    is_navmesh,
    part,
    part_records,
    scene_lua,
    uv_boxes,
)
from ..conventions import (
    AXES,
    SWAP,
    bone_trs,
    matrix_to_bone,
    quat_to_track,
    stored_rotation,
)
from ..vram import Tex, Textures, atlas_pixels, ext, merge_pages, place
from . import bvh, carry, navbuild
from . import layout as ml
from .document import (
    ModernDocument,
    Sequence,
    SkinClip,
    SkinnedMesh,
    Track,
    VramFile,
)
from .lights import runtime_lights
from .player import player_fields
from .tracks import posed_worlds, world_tracks

FMT = "splashpack"
RAW_MAX = 32767  # int16 vertices and keys (fp12 GTE units)
FIT = 30000
SETTLE_ROUNDS = 4  # re-roundings of baked bone matrices (they settle in one or two)

__all__ = ["from_scene_modern"]


@dataclass
class _Obj:
    name: str
    node: int
    rot: npt.NDArray[np.float64]  # 3x3 glTF world rotation
    raw_rot: npt.NDArray[np.int32]
    pos: npt.NDArray[np.float64]  # glTF world position
    parts: list[Part] = field(default_factory=list)
    bones: list[npt.NDArray[np.int64]] = field(default_factory=list)  # (T, 3) per part
    skin: int | None = None
    flags: int = ml.GO_ACTIVE
    lua_index: int = -1
    source: int = -1  # the object index of the file the scene was read from (-1: none)

    def corners(self) -> npt.NDArray[np.float64]:
        c = [p.corners for p in self.parts]
        return np.concatenate(c) if c else np.zeros((0, 3, 3))

    def matrix(self) -> npt.NDArray[np.float64]:
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = self.rot, self.pos
        return m


# -- gathering ---------------------------------------------------------------------------------
def _int(v: Any, default: int) -> int:
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else default


def _skinned(scene: Scene, prim: Primitive, skin_i: int, worlds: list[npt.NDArray[np.float64]],
             obj: npt.NDArray[np.float64]) -> tuple[Primitive, npt.NDArray[np.int64]]:
    """The primitive posed at rest in world space minus the object's position, and each
    vertex's heaviest joint (the runtime has one bone per vertex)."""
    skin = scene.skins[skin_i]
    n = len(prim.positions)
    joints: npt.NDArray[Any] = np.zeros((n, 1), np.int64)
    weights: npt.NDArray[Any] = np.ones((n, 1))
    if prim.joints is not None and prim.weights is not None:
        joints, weights = prim.joints, prim.weights
    inf = limit_influences(joints, weights)
    ibm = (np.asarray(skin.inverse_bind_matrices, np.float64) if skin.inverse_bind_matrices
           is not None else np.tile(np.eye(4), (len(skin.joints), 1, 1)))
    jm = np.stack([worlds[j] for j in skin.joints]) @ ibm  # (J, 4, 4)
    slot = np.clip(inf.joints, 0, len(skin.joints) - 1)
    p = np.asarray(prim.positions, np.float64)
    ph = np.concatenate([p, np.ones((n, 1))], axis=1)
    posed = np.einsum("nk,nkij,nj->ni", inf.weights, jm[slot], ph)[:, :3]
    best = slot[np.arange(n), np.argmax(inf.weights, axis=1)]
    out = Primitive(positions=(posed - obj[:3, 3]).astype(np.float32), texcoords=prim.texcoords,
                    colors=prim.colors, indices=prim.indices, mode=prim.mode,
                    material=prim.material, normals=_posed_normals(prim, inf.weights, jm[slot]))
    return out, best


def _posed_normals(prim: Primitive, weights: npt.NDArray[np.float64],
                   mats: npt.NDArray[np.float64]) -> npt.NDArray[np.float32] | None:
    """The primitive's normals through the blended joint matrices (their cofactor, which is
    the inverse transpose up to a scale ``_part`` normalizes away), so the glTF's own normals
    are written rather than ones recomputed from the posed triangles."""
    if prim.normals is None or len(prim.normals) != len(weights):
        return None
    lin = np.einsum("nk,nkij->nij", weights, mats[:, :, :3, :3])
    c0, c1, c2 = lin[:, :, 0], lin[:, :, 1], lin[:, :, 2]
    cof = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=2)
    sign = np.where(np.linalg.det(lin) < 0, -1.0, 1.0)[:, None]
    nrm = np.asarray(prim.normals, np.float64)
    out: npt.NDArray[np.float32] = (np.einsum("nij,nj->ni", cof, nrm) * sign).astype(np.float32)
    return out


def _owner(scene: Scene, i: int) -> int:
    """The node that stands for the GameObject: a skinned mesh node that names its object
    (``skinned_mesh_of``, a root, how to_scene writes one) or sits untransformed under a
    mesh-less node (how earlier versions wrote one) is that object node's."""
    node = scene.nodes[i]
    of = ext(node).get("skinned_mesh_of")
    if node.skin is not None and isinstance(of, int) and not isinstance(of, bool):
        for k, other in enumerate(scene.nodes):
            if k != i and other.mesh is None and ext(other).get("object") == of:
                return k
    parent = scene.parents()[i]
    if node.skin is None or parent is None or scene.nodes[parent].mesh is not None:
        return i
    if not np.allclose(local_matrix(node), np.eye(4), atol=1e-9):
        return i
    return parent


def _blend_note(prim: Primitive, name: str, ctx: Context) -> None:
    """The runtime moves each vertex with one bone: say so when the glTF blends several."""
    if prim.weights is None:
        return
    w = np.asarray(prim.weights, np.float64)
    blended = int(((w > 1e-6).sum(axis=1) > 1).sum()) if w.ndim == 2 else 0
    if blended:
        ctx.note("splashpack.skin_rigid", f"{name!r}: {blended} vertices blend several joints; "
                 "each follows only its heaviest (the runtime has one bone per vertex)")


def _node_object(scene: Scene, i: int, worlds: list[npt.NDArray[np.float64]], tex: Textures,
                 ctx: Context) -> _Obj | None:
    node = scene.nodes[i]
    mesh = scene.meshes[node.mesh] if node.mesh is not None else None
    if mesh is None:
        return None
    owner = _owner(scene, i)
    m = worlds[owner]
    rot, raw_rot = stored_rotation(ext(scene.nodes[owner]).get("rotation_raw"), m[:3, :3])
    info = ext(scene.nodes[owner])
    obj = _Obj(name=scene.nodes[owner].name or f"object_{i}", node=i, rot=rot, raw_rot=raw_rot,
               pos=m[:3, 3].copy(), flags=_int(info.get("flags"), ml.GO_ACTIVE),
               lua_index=_int(info.get("lua_index"), -1),
               source=_int(info.get("object"), -1))
    skinned = node.skin is not None and 0 <= node.skin < len(scene.skins)
    obj.skin = node.skin if skinned else None
    for pi, prim in enumerate(mesh.primitives):
        if prim.mode != 4:
            ctx.note("splashpack.dropped", f"{obj.name!r} primitive {pi}: points/lines are not "
                     "in the format")
            continue
        mat = scene.materials[prim.material] if prim.material is not None and \
            0 <= prim.material < len(scene.materials) else None
        # No base-colour texture: an untextured triangle (tpage 0xFFFF), vertex colours only.
        t, texcoord = (tex.for_material(mat) if mat is not None and
                       mat.base_color_texture is not None else (-1, 0))
        bake, src, best = rot.T @ m[:3, :3], prim, None
        if obj.skin is not None:
            src, best = _skinned(scene, prim, obj.skin, worlds, obj.matrix())
            bake = rot.T
        got = part(src, bake, mat, t, texcoord, color_scale(scene, mat), ctx,
                   f"node {obj.name!r} primitive {pi}", (mesh, pi))
        if got is None:
            continue
        obj.parts.append(got)
        if best is not None:
            obj.bones.append(best[src.triangles().astype(np.int64)])
            _blend_note(prim, obj.name, ctx)
    if any(p.targets for p in mesh.primitives):
        ctx.note("splashpack.dropped", f"{obj.name!r}: morph targets are not in the format")
    obj.flags = (obj.flags | ml.GO_SKINNED) if obj.skin is not None else (
        obj.flags & ~ml.GO_SKINNED)
    return obj if obj.parts else None


def _gather(scene: Scene, ctx: Context, tex: Textures) -> list[_Obj]:
    worlds = world_matrices(scene)
    out: list[_Obj] = []
    for i in scene.walk():
        node = scene.nodes[i]
        if node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        if is_navmesh(node):
            continue  # nav regions (_nav), not a GameObject
        obj = _node_object(scene, i, worlds, tex, ctx)
        if obj is not None:
            out.append(obj)
    return out


def _nav(doc: ModernDocument, scene: Scene, fx: _Fixed, ctx: Context) -> None:
    """Nav regions from the scene's navmesh nodes (a v1 pack's navmeshes, or a glTF's), unless
    the scene kept a modern file's own (to_scene's debug mesh of those is only a view)."""
    if len(doc.nav_regions):
        return
    nodes = [i for i in scene.walk() if scene.nodes[i].mesh is not None and
             0 <= (scene.nodes[i].mesh or 0) < len(scene.meshes) and
             is_navmesh(scene.nodes[i]) and not ext(scene.nodes[i]).get("debug_only")]
    if nodes:
        navbuild.nav_from_triangles(doc, navbuild.scene_nav_triangles(scene, nodes),
                                    fx.raw, ctx)


# -- fixed point -------------------------------------------------------------------------------


class _Fixed:
    def __init__(self, gte: float) -> None:
        self.gte, self.s, self.clamped = gte, gte / 4096.0, 0

    def raw(self, v: npt.ArrayLike, most: int = RAW_MAX) -> npt.NDArray[np.int64]:
        r = np.nan_to_num(np.rint(np.asarray(v, np.float64) * AXES / self.s))
        self.clamped += int((np.abs(r) > most).sum())
        out: npt.NDArray[np.int64] = np.clip(r, -most, most).astype(np.int64)
        return out


# -- records -----------------------------------------------------------------------------------
def _tris(obj: _Obj, textures: list[Tex], atlases: list[tuple[int, int, int]],
          fx: _Fixed) -> npt.NDArray[np.void]:
    recs = [part_records(p, textures, atlases, fx.raw, ml.TRI) for p in obj.parts]
    return np.concatenate(recs) if recs else np.zeros(0, ml.TRI)


def _aabb(tris: npt.NDArray[np.void], rot: npt.NDArray[np.int32],
          pos: npt.NDArray[np.int32]) -> list[int]:
    """The world bounds (PSX frame) from the stored integers, the 4.12 rotation applied to the
    int16 vertices, so the same records always give the same box (float world corners differ
    by a rounding from trip to trip)."""
    v = tris["v"].reshape(-1, 3).astype(np.float64)
    world = np.rint(v @ (rot.reshape(3, 3).astype(np.float64) / 4096.0).T +
                    pos.astype(np.float64))
    lo = np.clip(world.min(axis=0), -0x80000000, 0x7FFFFFFF).astype(np.int64)
    hi = np.clip(world.max(axis=0), -0x80000000, 0x7FFFFFFF).astype(np.int64)
    return [int(x) for x in (*lo, *hi)]


def _name(name: str, ctx: Context, what: str) -> bytes:
    cut = name[:ml.MAX_NAME]
    if cut != name:
        ctx.note("splashpack.name_cut", f"{what} {name!r}: cut to {ml.MAX_NAME} characters "
                 "(the exporters' limit)")
    return cut.encode("utf-8")[:255]


def _objects(doc: ModernDocument, objs: list[_Obj], textures: list[Tex],
             atlases: list[tuple[int, int, int]], fx: _Fixed, ctx: Context) -> None:
    if len(objs) > 0xFFFF:
        msg = "too many objects"
        raise LimitError(FMT, msg, field="header.go_count", expected="<= 65535", actual=len(objs))
    recs = np.zeros(len(objs), ml.GO)
    for k, o in enumerate(objs):
        tris = _tris(o, textures, atlases, fx)
        if len(tris) > 0xFFFF:
            msg = "a GameObject holds at most 65535 triangles"
            raise LimitError(FMT, msg, field=f"objects[{k}].poly_count ({o.name!r})",
                             expected="<= 65535", actual=len(tris))
        doc.meshes.append(tris)
        doc.names.append(_name(o.name, ctx, "object name"))
        rec = recs[k]
        rec["pos"] = fx.raw(o.pos, 0x7FFFFFFF)
        rec["rot"] = o.raw_rot
        rec["lua_index"], rec["flags"] = o.lua_index, o.flags & 0xFFFFFFFF
        rec["interactable_index"] = ml.NO_INDEX
        if len(tris):
            rec["aabb"] = _aabb(tris, o.raw_rot, rec["pos"])
    doc.objects = recs


def _vram(doc: ModernDocument, atlases: list[tuple[int, int, int]], textures: list[Tex]) -> None:
    vf = VramFile()
    vf.atlas_pixels = atlas_pixels(atlases, textures)
    vf.atlases = np.zeros(len(atlases), ml.VRAM_ATLAS)
    doc.atlas_desc = np.zeros(len(atlases), ml.ATLAS_DESC)
    for k, ((x, y, _), px) in enumerate(zip(atlases, vf.atlas_pixels, strict=True)):
        vf.atlases[k] = (x, y, px.shape[1], px.shape[0])
        doc.atlas_desc[k] = (0, px.shape[1], psx.PAGE, x, y)
    cluts: dict[tuple[int, int], npt.NDArray[np.uint16]] = {}
    for t in textures:
        if t.palette is not None:
            cluts.setdefault(t.clut, t.palette)
    vf.cluts = np.zeros(len(cluts), ml.VRAM_CLUT)
    doc.clut_desc = np.zeros(len(cluts), ml.CLUT_DESC)
    for k, ((x, y), words) in enumerate(cluts.items()):
        vf.cluts[k] = (x // 16, y, len(words), 0)
        doc.clut_desc[k] = (0, x // 16, y, len(words), 0)
    vf.clut_words = list(cluts.values())
    vf.header["magic"] = ml.VRAM_MAGIC
    doc.vram = vf


# -- animation ---------------------------------------------------------------------------------
def _times(anim: Animation, fps: int, loop: bool) -> npt.NDArray[np.float64]:
    """Sample times of a baked clip. The runtime loops with ``frame % frameCount``, so a
    looping clip stores no copy of its first pose at the end (splashedit-ng: 1.0 s at 15 fps
    is 15 frames, spec-modern §13); a one-shot clip ends on its last pose, ceil(length x
    fps) + 1 frames."""
    start, end = anim.start, anim.duration
    span = max(end - start, 0.0) * fps
    # The 1e-6 keeps a length that is a whole number of frames in float32 from gaining one.
    frames = max(1, int(np.ceil(span - 1e-6))) if loop else int(np.ceil(span)) + 1
    return start + np.arange(min(frames, 0xFFFF)) / fps


def _as_read(r: npt.NDArray[np.int16], t: npt.NDArray[np.int16], s: float,
             bones: int) -> npt.NDArray[np.float64]:
    """The matrices a reader rebuilds from these bone matrices: to_scene's TRS per joint
    and frame, stored as glTF float32 (unit quaternions), its scale dropped when within 1e-3."""
    tt, qq, ss = bone_trs(r, t, s)
    ss = ss.reshape(-1, bones, 3)
    ss[:, np.abs(ss - 1).max(axis=(0, 2)) <= 1e-3] = 1.0
    f32 = np.float32
    q = quat_normalize(qq.astype(f32)).astype(f32)
    return trs_to_matrices(tt.astype(f32).astype(np.float64), q.astype(np.float64),
                           ss.reshape(-1, 3).astype(f32).astype(np.float64))


def _settled(m: npt.NDArray[np.float64], s: float, bones: int
             ) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.int16], int]:
    """Fixed-point bone matrices that map to themselves through a read and a write: a glTF
    holds a rotation and a scale per joint, not the shear of a rounded 4.12 matrix, so the
    rounding is repeated on what a reader makes of it until it stops changing (item 11 of
    issue 12: glb -> F -> glb -> F writes the first F's bytes again)."""
    r, t, over = matrix_to_bone(m, s)
    for _ in range(SETTLE_ROUNDS):
        r2, t2, _ = matrix_to_bone(_as_read(r, t, s, bones), s)
        if np.array_equal(r2, r) and np.array_equal(t2, t):
            break
        r, t = r2, t2
    return r, t, over


def _skin_clips(scene: Scene, obj: _Obj, fx: _Fixed, ctx: Context) -> list[SkinClip]:
    assert obj.skin is not None
    joints = scene.skins[obj.skin].joints
    rest = world_matrices(scene)
    rest_inv = np.stack([safe_inverse(rest[j]) for j in joints])
    o = obj.matrix()
    o_inv = safe_inverse(o)
    clips: list[SkinClip] = []
    for ai, anim in enumerate(scene.animations):
        if not any(ch.node in joints for ch in anim.channels):
            continue
        fps = _int(ext(anim).get("fps"), ml.FPS)
        loop = ext(anim).get("loop", True) is not False
        times = _times(anim, max(1, min(fps, 255)), loop)
        worlds = posed_worlds(scene, anim, times)
        jf = np.stack([worlds[j] for j in joints], axis=1)  # (F, J, 4, 4)
        m = o_inv @ jf @ rest_inv[None] @ o
        r, t, over = _settled(m.reshape(-1, 4, 4), fx.s, len(joints))
        fx.clamped += over
        mats = np.zeros(len(r), ml.BONE_MATRIX)
        mats["r"], mats["t"] = r, t
        clips.append(SkinClip(_name(anim.name or f"clip_{ai}", ctx, "clip name"),
                              1 if loop else 0, fps, mats.reshape(len(times), len(joints))))
    if len(clips) > ml.MAX_CLIPS:
        msg = "a skinned mesh has at most 16 clips"
        raise LimitError(FMT, msg, field=f"skins ({obj.name!r}).clip_count", expected="<= 16",
                         actual=len(clips))
    return clips


def _skins(doc: ModernDocument, scene: Scene, objs: list[_Obj], fx: _Fixed,
           ctx: Context) -> None:
    for k, o in enumerate(objs):
        if o.skin is None:
            continue
        joints = scene.skins[o.skin].joints
        if len(joints) > ml.MAX_BONES:
            msg = "a skinned mesh has at most 64 bones"
            raise LimitError(FMT, msg, field=f"skins ({o.name!r}).bone_count", expected="<= 64",
                             actual=len(joints))
        bones = np.concatenate(o.bones)[:, SWAP].reshape(-1).astype(np.uint8)
        doc.skins.append(SkinnedMesh(go_index=k, bone_count=len(joints), bone_index=bones,
                                     clips=_skin_clips(scene, o, fx, ctx), name=doc.names[k]))
        if doc.version >= ml.SKIN_TAIL_VERSION:
            _skin_tail(doc.skins[-1], scene, joints, o, fx, ctx)
        elif names := _v26_joint_names(scene, joints, o.name):
            ctx.note("splashpack.joint_names_dropped", f"skin "
                     f"{scene.skins[o.skin].name or o.name!r} of {o.name!r}: joint names "
                     f"{names} not written (version {doc.version} has no joint names; "
                     f"--splash-version {ml.SKIN_TAIL_VERSION} keeps them)")
    if len(doc.skins) > ml.MAX_TABLE:
        msg = "the runtime reads at most 16 skinned meshes"
        raise LimitError(FMT, msg, field="header.skin_count", expected="<= 16",
                         actual=len(doc.skins))


def _v26_joint_names(scene: Scene, joints: list[int], owner: str) -> list[str]:
    """The joint names a v26 skin block gave (its joints keep the block's bind positions in
    extras), not the ones to_scene makes up for a joint the block left unnamed."""
    return [scene.nodes[j].name for b, j in enumerate(joints)
            if "bind_raw" in ext(scene.nodes[j]) and
            scene.nodes[j].name not in ("", f"{owner}_bone_{b}")]


def _skin_tail(skin: SkinnedMesh, scene: Scene, joints: list[int], obj: _Obj, fx: _Fixed,
               ctx: Context) -> None:
    """v26: each joint's rest position in the vertices' space (object space, PSX frame, as the
    skinned vertices are written) and its name; a joint read from a v26 file keeps its own."""
    worlds = world_matrices(scene)
    local = (np.stack([worlds[j][:3, 3] for j in joints]) - obj.pos) @ obj.rot
    bind = fx.raw(local).astype(np.int16)
    for b, j in enumerate(joints):
        kept = ext(scene.nodes[j]).get("bind_raw")
        if isinstance(kept, list) and len(kept) == 3 and all(isinstance(v, int) for v in kept):
            bind[b] = kept
    skin.bind = bind
    skin.joint_names = [_name(scene.nodes[j].name or f"joint_{b}", ctx, "joint name")
                        for b, j in enumerate(joints)]


def _track(ch: Any, name: bytes, fx: _Fixed, ctx: Context, where: str) -> Track | None:
    times = np.asarray(ch.times, np.float64)
    if ch.interpolation == "CUBICSPLINE" or len(times) > ml.MAX_KEYS:
        ctx.note("splashpack.track_resampled", f"{where}: resampled to linear keys (the runtime "
                 f"has at most {ml.MAX_KEYS} linear or step keys per track)")
        times = np.linspace(times[0], times[-1], min(ml.MAX_KEYS, max(2, len(times))))
    vals = sample_channel(ch, times)
    keys = np.zeros(len(times), ml.KEY)
    frames = np.clip(np.rint(times * ml.FPS), 0, 0x1FFF).astype(np.uint16)
    interp = 1 if ch.interpolation == "STEP" else 0
    keys["frame"] = frames | (interp << 13)
    if ch.path == "translation":
        keys["v"] = fx.raw(vals)
        kind = ml.TRACK_OBJ_POS
    else:
        keys["v"] = quat_to_track(vals)
        kind = ml.TRACK_OBJ_ROT
    return Track(kind, 0, name, keys)


def _sequences(doc: ModernDocument, scene: Scene, objs: list[_Obj], fx: _Fixed,
               ctx: Context) -> None:
    names = {o.node: doc.names[k] for k, o in enumerate(objs)}
    parents = scene.parents()
    for ai, anim in enumerate(scene.animations):
        seq = Sequence(name=_name(anim.name or f"anim_{ai}", ctx, "animation name"),
                       header=np.zeros(1, ml.ANIM_HEADER))
        for ch in anim.channels:
            # A child's keys are local: world_tracks writes what the runtime needs instead.
            if ch.node not in names or ch.path not in ("translation", "rotation") or \
                    not len(ch.times) or parents[ch.node] is not None:
                continue
            tr = _track(ch, names[ch.node], fx, ctx, f"animation {anim.name!r}")
            if tr is not None:
                seq.tracks.append(tr)
        seq.tracks += world_tracks(scene, anim, names, fx.raw, ctx)
        if seq.tracks:
            last = max(int(t.keys["frame"].max() & 0x1FFF) for t in seq.tracks)
            seq.header["duration"] = last
            doc.animations.append(seq)
    if len(doc.animations) > ml.MAX_TABLE:
        msg = "the runtime reads at most 16 animations"
        raise LimitError(FMT, msg, field="header.animation_count", expected="<= 16",
                         actual=len(doc.animations))


# -- header ----------------------------------------------------------------------------
def _header(doc: ModernDocument, scene: Scene, version: int, fx: _Fixed, ctx: Context) -> None:
    hdr = np.zeros(1, ml.HEADERS[version])
    kept = ext(scene).get("header")
    names = hdr.dtype.names or ()
    for k, v in (kept.items() if isinstance(kept, dict) else []):
        if k in names and k not in ("magic", "version") and not k.endswith(("_count", "_offset")):
            try:
                hdr[k] = v
            except (TypeError, ValueError, OverflowError):
                continue
    if not isinstance(kept, dict):
        hdr["scene_lua"] = -1
    player_fields(hdr, scene, ctx, fx.gte, fx.raw)
    hdr["magic"], hdr["version"] = ml.MAGIC, version
    doc.header = hdr


# Cursor tables a scene read from a modern file carries in extras (to_scene._native).
_KEPT = {"colliders": ml.COLLIDER, "triggers": ml.TRIGGER, "interactables": ml.INTERACTABLE,
         "agents": ml.AGENT, "waypoints": ml.WAYPOINT, "nav_header": ml.NAV_HEADER,
         "nav_regions": ml.NAV_REGION, "nav_portals": ml.NAV_PORTAL}
# These point at (object, triangle) pairs: only valid while every object's triangles are too
# (rooms, which cannot be rebuilt, are checked object by object: carry.py).
_DERIVED = {"bvh_nodes": ml.BVH_NODE, "bvh_refs": ml.BVH_REF}


def _sequence(entry: Any, cutscene: bool) -> Sequence | None:
    if not isinstance(entry, dict):
        return None
    hdr = carry.records(entry.get("header"), ml.CUTSCENE_HEADER if cutscene else ml.ANIM_HEADER)
    if hdr is None or len(hdr) != 1:
        return None
    seq = Sequence(name=str(entry.get("name", "")).encode("utf-8"), header=hdr)
    for t in entry.get("tracks", []) if isinstance(entry.get("tracks"), list) else []:
        keys = carry.records(t.get("keys") if isinstance(t, dict) else None, ml.KEY)
        if keys is None:
            return None
        seq.tracks.append(Track(_int(t.get("type"), 0) & 0xFF, _int(t.get("light_index"), 0)
                                & 0xFF, str(t.get("target", "")).encode("utf-8"), keys))
    ev = carry.records(entry.get("audio_events"), ml.AUDIO_EVENT)
    sk = carry.records(entry.get("skin_events"), ml.SKIN_EVENT)
    seq.audio_events = ev if ev is not None and cutscene else seq.audio_events
    seq.skin_events = sk if sk is not None else seq.skin_events
    return seq


def _restore(doc: ModernDocument, scene: Scene, objs: list[_Obj], ctx: Context) -> list[str]:
    """Put back what a scene read from a modern file kept as native records; returns the
    derived structures that could not come back."""
    native = ext(scene).get("native")
    native = native if isinstance(native, dict) else {}
    for name, dt in _KEPT.items():
        recs = carry.records(native.get(name), dt)
        if recs is not None:
            setattr(doc, name, recs)
    if doc.version < 22 and (len(doc.agents) or len(doc.waypoints)):
        ctx.note("splashpack.agents_dropped", f"{len(doc.agents)} AI agent(s) not written: "
                 f"agents need version {ml.AGENTS_VERSION} or later (--splash-version "
                 f"{ml.AGENTS_VERSION} keeps them)")
        doc.agents, doc.waypoints = np.zeros(0, ml.AGENT), np.zeros(0, ml.WAYPOINT)
    same = native.get("poly_counts") == [len(m) for m in doc.meshes]
    missing = []
    for name, dt in _DERIVED.items():
        recs = carry.records(native.get(name), dt)
        if recs is not None and same:
            setattr(doc, name, recs)
        elif recs is not None:
            missing.append(name)
    cuts = native.get("cutscenes")
    for entry in cuts if isinstance(cuts, list) else []:
        seq = _sequence(entry, True)
        if seq is not None:
            doc.cutscenes.append(seq)
    carry.restore_audio(doc, native, ctx)
    carry.check_audio_events(doc, ctx)
    carry.restore_rooms(doc, native, [o.source for o in objs], ctx)
    if isinstance(native.get("opaque"), dict) and native["opaque"]:
        ctx.note("splashpack.opaque_dropped", "UI/sprite/tilemap/stream/memcard blocks "
                 f"({', '.join(sorted(native['opaque']))}) hold absolute offsets gamemesh does "
                 "not model; they are not written from a scene")
    return missing


def _bvh(doc: ModernDocument) -> bool:
    """An exterior scene (sceneType 0) culls with the BVH: build it unless the scene kept one
    whose triangles are unchanged (then the kept one is written, so a rewrite is byte-exact)."""
    if len(doc.bvh_nodes) or int(doc.header["scene_type"][0]) != 0:
        return False
    boxes, refs = bvh.triangle_boxes(doc.meshes, [o["rot"] for o in doc.objects],
                                     [o["pos"] for o in doc.objects])
    doc.bvh_nodes, doc.bvh_refs = bvh.build(boxes, refs)
    return True


def _missing(doc: ModernDocument, stale: list[str], ctx: Context) -> None:
    lacks = []  # what the runtime will lack, and why (an exterior scene's BVH is built)
    if not len(doc.rooms) and int(doc.header["scene_type"][0]) == 1:
        lacks.append("room/portal culling (rooms are not built from a scene)")
    if not len(doc.nav_regions):
        lacks.append("navigation regions, for player walking and collision with the floor "
                     "(built only from a navmesh: a v1 pack's, or a node flagged or named "
                     "navmesh)")
    if stale:
        ctx.note("splashpack.derived_dropped", f"{', '.join(stale)} point at triangles that "
                 "changed since the file was read; they are left out")
    if lacks:
        ctx.note("splashpack.not_built", f"the runtime will lack {'; '.join(lacks)}")


def _renderer_sizes(doc: ModernDocument, scene: Scene) -> None:
    """v25+: the renderer's buffer sizes, kept from the scene's file, else the sizes psxsplash's
    renderer fixed before they became fields (a 0 would leave the runtime no buffers)."""
    if doc.version < 25:
        return
    kept = ext(scene).get("header")
    kept = kept if isinstance(kept, dict) else {}
    for name, default in (("ordering_table_size", ml.DEFAULT_OT_SIZE),
                          ("bump_allocator_size", ml.DEFAULT_BUMP_SIZE)):
        v = kept.get(name)
        doc.header[name] = v if isinstance(v, int) and 0 < v <= 0xFFFFFFFF else default


def _version(scene: Scene, ctx: Context) -> int:
    """The option's version, else the public runtime's (21); a version that runtime cannot
    load is said in a note naming who reads it."""
    v = ctx.opt("splash_version")
    version = ml.DEFAULT_VERSION if v is None else int(v)
    if version not in ml.RUNTIME_VERSIONS:
        ctx.note("splashpack.runtime_version", f"version {version}: the public runtime, "
                 f"{ml.PUBLIC_RUNTIME}, loads versions 20 and 21 only; {version} is read by "
                 f"{ml.READERS.get(version, 'no known runtime')}", "info")
    return version


def from_scene_modern(scene: Scene, ctx: Context) -> ModernDocument:
    version = _version(scene, ctx)
    tex = Textures(scene, ctx)
    objs = _gather(scene, ctx, tex)
    extent = max([0.0, *(float(np.abs(o.corners()).max()) for o in objs if o.parts)])
    fx = _Fixed(choose_gte(scene, ctx, extent, RAW_MAX, FIT, try_default=True,
                           what="fits the int16 vertices"))
    merge_pages(tex.items, uv_boxes(p for o in objs for p in o.parts))
    atlases, textures = place(tex.items)
    doc = ModernDocument()
    _header(doc, scene, version, fx, ctx)
    _renderer_sizes(doc, scene)
    doc.lua, lua_index = scene_lua(scene, ctx)
    doc.lua_desc = np.zeros(len(doc.lua), ml.LUA_DESC)
    doc.header["scene_lua"] = lua_index if -1 <= lua_index < len(doc.lua) else -1
    _objects(doc, objs, textures, atlases, fx, ctx)
    _vram(doc, atlases, textures)
    _skins(doc, scene, objs, fx, ctx)
    _sequences(doc, scene, objs, fx, ctx)
    if version >= 24:
        kept = [isinstance(ext(scene.nodes[o.node]).get("flags"), int) for o in objs]
        runtime_lights(doc, scene, kept, fx.s, fx.raw, _name, ctx)
    elif scene.lights:
        ctx.note("splashpack.lights_dropped", f"{len(scene.lights)} light(s) not written: point "
                 f"lights need version {ml.LIGHTS_VERSION} or later (--splash-version "
                 f"{ml.LIGHTS_VERSION} keeps them; the public runtime reads 20 and 21 only)")
    stale = _restore(doc, scene, objs, ctx)
    _nav(doc, scene, fx, ctx)
    if _bvh(doc):
        stale = [k for k in stale if not k.startswith("bvh_")]
    _missing(doc, stale, ctx)
    if fx.clamped:
        ctx.note("splashpack.clamped", f"{fx.clamped} value(s) did not fit their fixed-point "
                 f"field at GTEScaling {fx.gte:g} and were clamped")
    if ext(scene).get("gte_scaling") != fx.gte:
        ctx.note("splashpack.gte_scaling", f"written with GTEScaling {fx.gte:g}", "info")
    return doc
