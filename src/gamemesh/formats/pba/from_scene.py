"""Scene -> PBA document (version 2), following the spec's writer rules (``pba.md`` §e).

* Bones: every node that is not written as a vertex-animated mesh, in depth-first order, with
  ``parentId`` from the hierarchy and a *model-space* initial transform (the public readers apply
  each bone alone, so a bone carries its node's world placement).
* Meshes: rigid (type 1), or animated (type 3) when an animation drives the mesh's morph targets.
  Animated meshes come first, and every sequence with vertex tracks has one track per animated
  mesh in that order, with ``nodeId`` = the mesh index (rule 3: both readings then agree).
  A rigid mesh is named as its node's bone, so readers place it; an animated mesh is baked into
  model space. Groups above 65 535 vertices are split (u16 indices).
* Animations: node tracks are ROTPOS keys sampled at the union of the clip's key times (model
  space); morph weights are sampled into vertex keys quantised to the track's box (1/255).
* Textures: each material's base colour image becomes ``<stem>_<name>.ptx`` beside the model
  (``<stem>`` is the output's: two models in one folder never share a texture file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError
from ...registry import Context
from ...scene import Animation, Channel, Material, Mesh, Primitive, Scene
from ...scene.bake import clip_key_times, moves_skin, skinned_positions
from ...scene.math import (
    local_matrix,
    matrix_to_quat,
    snap,
    snap_quat,
    vertex_normals,
    world_matrices,
)
from ...scene.sampling import sample_channel
from ...scene.skinning import safe_inverse
from ..ptx.from_scene import image_pixels, rgba_to_doc
from ..ptx.write import write as write_ptx
from .document import FaceGroup, NodeTrack, PbaDocument, PbaMesh, Sequence, VertexTrack
from .layout import (
    ALPHA_BLEND,
    ALPHA_NONE,
    ALPHA_SHADOW,
    ALPHA_TEST,
    ANIM_ROTPOS,
    ANIMATED,
    BONE,
    NAME,
    NAME_SIZE,
    RIGID,
    ROTPOS_KEY,
    VERTEX,
    vertex_key,
)

F64 = npt.NDArray[np.float64]
MAX_GROUP_VERTICES = 0xFFFF
_FLIP = np.array([1.0, 1.0, -1.0])
_TRS = ("translation", "rotation", "scale")
# Bone transforms and node keys are composed (world placements), so they are snapped to a grid
# finer than float32 shows at these sizes: a second trip through glTF writes the same bytes.
QUAT_BITS, POS_BITS = 21, 20


@dataclass
class _Out:
    scene: Scene
    ctx: Context
    doc: PbaDocument
    rest: list[F64]
    bone_of: dict[int, int] = field(default_factory=dict)
    bone_mats: dict[int, F64] = field(default_factory=dict)  # node -> bone matrix (T.R)
    textures: dict[int, int] = field(default_factory=dict)  # scene image -> texture id
    tex_names: list[bytes] = field(default_factory=list)
    bone_names: set[str] = field(default_factory=set)
    tex_used: set[str] = field(default_factory=set)
    # Animated meshes are placed by no bone, so they may share a bone's name (as in the game).
    anim_names: set[str] = field(default_factory=set)
    cut_names: int = 0


def fixed_name(text: str, out: _Out | None = None) -> bytes:
    """A char[32] name: latin-1, cut to 31 bytes so a NUL always ends it."""
    raw = text.encode("latin-1", errors="replace")
    if len(raw) > NAME_SIZE - 1:
        raw = raw[: NAME_SIZE - 1]
        if out is not None:
            out.cut_names += 1
    return raw.ljust(NAME_SIZE, b"\0")


def _unique(used: set[str], text: str) -> str:
    """``text`` (cut to 31 bytes), with ``_2``, ``_3``... when ``used`` already has it."""
    base = text.encode("latin-1", errors="replace")[: NAME_SIZE - 1].decode("latin-1")
    name, k = base, 2
    while name.upper() in used:
        suffix = f"_{k}"
        name = base[: NAME_SIZE - 1 - len(suffix)] + suffix
        k += 1
    used.add(name.upper())
    return name


def _name(out: _Out, used: set[str], text: str) -> bytes:
    """A unique char[32] name; a cut is counted for the ``pba.names_cut`` note."""
    if len(text.encode("latin-1", errors="replace")) > NAME_SIZE - 1:
        out.cut_names += 1
    return fixed_name(_unique(used, text))


def from_scene(scene: Scene, ctx: Context) -> PbaDocument:
    doc = PbaDocument(version=2, civ_lists=True, name=b"")
    out = _Out(scene, ctx, doc, world_matrices(scene))
    doc.name = fixed_name(scene.name or "model", out)
    morph = _morph_nodes(scene)
    _bones(out, morph)
    anim_meshes = [n for n in scene.walk() if n in morph]
    rigid_meshes = [n for n in scene.walk() if scene.nodes[n].mesh is not None and n not in morph]
    keys: dict[int, list[tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]] | None]] = {}
    for n in anim_meshes:
        mesh, sel = _mesh(out, n, ANIMATED)
        doc.meshes.append(mesh)
        keys[n] = [_morph_keys(out, n, a, sel) for a in range(len(scene.animations))]
    for n in rigid_meshes:
        doc.meshes.append(_mesh(out, n, RIGID)[0])
    doc.textures = np.array(out.tex_names, dtype=NAME)
    doc.sequences = [_sequence(out, a, anim_meshes, keys) for a in range(len(scene.animations))]
    if not doc.meshes:
        ctx.note("pba.no_meshes", "the scene has no mesh; the map editor cannot load a PBA "
                 "without one")
    if out.cut_names:
        ctx.note("pba.names_cut", f"{out.cut_names} name(s) cut to 31 bytes", covers=("names",))
    return doc


def _morph_nodes(scene: Scene) -> set[int]:
    """Nodes written as animated meshes: a mesh whose morph targets an animation's weights
    channel drives, or a skinned mesh a clip moves (PBA has no skin: its motion is baked into
    vertex keys, so the model still moves in the game)."""
    driven = {c.node for a in scene.animations for c in a.channels if c.path == "weights"}
    out = {n for n, node in enumerate(scene.nodes) if node.mesh is not None and
           any(moves_skin(scene, n, a) for a in scene.animations)}
    for n in driven:
        mi = scene.nodes[n].mesh if 0 <= n < len(scene.nodes) else None
        if mi is not None and any(p.targets for p in scene.meshes[mi].primitives):
            out.add(n)
    return out


# -- bones ----------------------------------------------------------------------------------
def _split(m: F64) -> tuple[F64, F64, F64]:
    """(..., 4, 4) matrices -> translation, xyzw rotation, per-axis scale (no shear kept)."""
    t = m[..., :3, 3]
    basis = m[..., :3, :3]
    s = np.linalg.norm(basis, axis=-2)
    det = np.linalg.det(basis)
    s[..., 0] = np.where(det < 0, -s[..., 0], s[..., 0])
    safe = np.where(np.abs(s) < 1e-12, 1.0, s)
    return t, matrix_to_quat(basis / safe[..., None, :]), s


def _rt_matrix(t: F64, q: F64) -> F64:
    from ...scene.math import quat_to_matrix

    m = np.zeros((*t.shape[:-1], 4, 4))
    m[..., :3, :3] = quat_to_matrix(q)
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def to_file_quat(xyzw: F64) -> F64:
    """glTF (x, y, z, w) -> file (w, x, y, z) in left-handed axes: (w, -x, -y, z)."""
    q = np.asarray(xyzw, dtype=np.float64)
    return np.stack([q[..., 3], -q[..., 0], -q[..., 1], q[..., 2]], axis=-1)


def _bones(out: _Out, morph: set[int]) -> None:
    scene = out.scene
    parents = scene.parents()
    # The model root to_scene adds is no bone: its children become roots again.
    order = [n for n in scene.walk() if n not in morph
             and not scene.nodes[n].extras.get("pba_root")]
    recs = np.zeros(len(order), dtype=BONE)
    scaled = False
    for b, n in enumerate(order):
        out.bone_of[n] = b
    for b, n in enumerate(order):
        t, q, s = _split(out.rest[n])
        scaled |= bool(np.any(np.abs(np.abs(s) - 1) > 1e-4))
        out.bone_mats[n] = _rt_matrix(t, q)
        p = parents[n]
        while p is not None and p not in out.bone_of:
            p = parents[p]
        recs[b]["name"] = _name(out, out.bone_names, scene.nodes[n].name or f"node{n}")
        recs[b]["parent"] = -1 if p is None else out.bone_of[p]
        recs[b]["rot"] = snap_quat(to_file_quat(q), QUAT_BITS)
        recs[b]["pos"] = snap(t * _FLIP, POS_BITS)
    out.doc.bones = recs
    if scaled:
        out.ctx.note("pba.scale_baked", "bones hold no scale: node scale is baked into the "
                     "mesh vertices (and dropped from animations)")


# -- materials and textures -----------------------------------------------------------------
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _texture(out: _Out, image: int) -> int:
    if image in out.textures:
        return out.textures[image]
    img = out.scene.images[image]
    base = img.name or (img.uri.rsplit("/", 1)[-1].rsplit(".", 1)[0] if img.uri else "")
    raw = _name(out, out.tex_used, owned_name(out.ctx, _SAFE.sub("_", base).strip("._")
                                              or f"texture{len(out.tex_names)}"))
    name = raw.rstrip(b"\0").decode("latin-1")
    tid = len(out.tex_names)
    out.tex_names.append(raw)
    try:
        px = image_pixels(img)
    except FormatError:
        px = None
    if px is None:
        out.ctx.note("pba.texture_not_written", f"image {img.name!r} has no pixels; the model "
                     f"names {name}.ptx but no file is written",
                     covers=("textures",))
    else:
        bpp = out.ctx.opt("ptx_bpp")
        ptx = rgba_to_doc(px, int(bpp) if bpp is not None else None)
        out.doc.ptx_files[f"{name}.ptx"] = write_ptx(ptx)
    out.textures[image] = tid
    return tid


def owned_name(ctx: Context, base: str) -> str:
    """``<output stem>_<base>``: texture files are named after the model they belong to, so a
    second model converted into the same folder never writes over the first one's textures. A
    name that already carries the stem (a model read back and written again) keeps it once."""
    stem = _SAFE.sub("_", ctx.path.stem if ctx.path is not None else "model").strip("._")
    stem = stem or "model"
    return base if base.lower().startswith(stem.lower() + "_") else f"{stem}_{base}"


_MODE_FLAGS = {"OPAQUE": ALPHA_NONE, "BLEND": ALPHA_BLEND, "MASK": ALPHA_TEST}


def _group_material(out: _Out, mat_index: int | None) -> tuple[int, int, npt.NDArray[Any]]:
    if mat_index is None or not 0 <= mat_index < len(out.scene.materials):
        return -1, ALPHA_NONE, np.zeros(0, dtype=NAME)
    mat: Material = out.scene.materials[mat_index]
    flags = _MODE_FLAGS.get(mat.alpha_mode, ALPHA_NONE)
    if mat.extras.get("pba_alpha_as_mask"):
        flags = ALPHA_BLEND  # MATERIAL_ALPHA that --alpha-mask exported as MASK
    if mat.alpha_mode == "BLEND" and mat.extras.get("pba_shadow"):
        flags = ALPHA_SHADOW
    tex = -1
    ref = mat.base_color_texture
    if ref is not None and 0 <= ref.image < len(out.scene.images):
        tex = _texture(out, ref.image)
    civ = [fixed_name(str(c), out) for c in mat.extras.get("pba_civ_textures", ()) or ()]
    return tex, flags, np.array(civ, dtype=NAME)


# -- geometry -------------------------------------------------------------------------------
def _vertices(prim: Primitive, m: F64) -> npt.NDArray[Any]:
    """A primitive's vertices as TD3DVERTEXT1VC records in file axes, moved by ``m``."""
    n = prim.vertex_count
    pos = np.asarray(prim.positions, dtype=np.float64)
    normals = prim.normals
    if normals is None:
        normals = vertex_normals(pos, prim.triangles())
    nrm = np.asarray(normals, dtype=np.float64) @ safe_inverse(m[:3, :3])
    nrm /= np.maximum(np.linalg.norm(nrm, axis=1, keepdims=True), 1e-20)
    v = np.zeros(n, dtype=VERTEX)
    v["pos"] = (pos @ m[:3, :3].T + m[:3, 3]) * _FLIP
    v["normal"] = nrm * _FLIP
    if prim.texcoords:
        v["uv"] = np.asarray(prim.texcoords[0], dtype=np.float32)[:, :2]
    rgba = np.ones((n, 4))
    # PBA holds one colour per vertex: the first set that is not all white (Blender writes a
    # white COLOR_0 before the user's layer); the loss check names any further set.
    real = [c for c in prim.colors if len(c) and not np.all(np.asarray(c)[:, :4] == 1.0)]
    if real:
        c = np.asarray(real[0], dtype=np.float64)
        rgba[:, : c.shape[1]] = c[:, :4]
    v["color"] = np.clip(np.rint(rgba[:, [2, 1, 0, 3]] * 255), 0, 255).astype(np.uint8)
    return v


def split_triangles(tris: npt.NDArray[np.uint32], n: int) -> list[tuple[npt.NDArray[np.int64],
                                                                         npt.NDArray[np.uint16]]]:
    """(vertex selection, local u16 indices) per group, each group under 65 536 vertices."""
    flat = tris.reshape(-1)
    if n <= MAX_GROUP_VERTICES:
        return [(np.arange(n, dtype=np.int64), flat.astype(np.uint16))]
    per = MAX_GROUP_VERTICES // 3  # triangles per group: at most 3 new vertices each
    parts = []
    for s in range(0, len(tris), per):
        chunk = tris[s:s + per].reshape(-1)
        sel, local = np.unique(chunk, return_inverse=True)
        parts.append((sel.astype(np.int64), local.astype(np.uint16)))
    return parts


def _mesh(out: _Out, n: int, kind: int) -> tuple[PbaMesh, list[npt.NDArray[np.int64]]]:
    """One node's mesh; the per-group vertex selections (into each primitive) in order."""
    scene = out.scene
    node = scene.nodes[n]
    assert node.mesh is not None
    smesh: Mesh = scene.meshes[node.mesh]
    world = np.eye(4) if node.skin is not None else out.rest[n]
    if node.skin is not None and kind == ANIMATED:
        out.ctx.note("pba.skin_baked", f"mesh {smesh.name!r}: PBA has no skinning; its clips "
                     "are baked into vertex animation (the skeleton's clips move the mesh, "
                     "not bones)", covers=("skins", "joints", "channels"))
    elif node.skin is not None:
        out.ctx.note("pba.skin_dropped", f"mesh {smesh.name!r}: PBA has no skinning; written "
                     "in its bind pose",
                     covers=("skins", "joints"))
    # Rigid meshes are stored in their bone's space; animated ones in model space.
    m = safe_inverse(out.bone_mats[n]) @ world if kind == RIGID else world
    name = out.doc.bones["name"][out.bone_of[n]] if kind == RIGID else _name(
        out, out.anim_names, node.name or smesh.name or f"mesh{n}")
    mesh = PbaMesh(mesh_type=kind, name=bytes(name).ljust(NAME_SIZE, b"\0"))
    sels: list[npt.NDArray[np.int64]] = []
    shared: list[npt.NDArray[Any]] = []
    for pi, prim in enumerate(smesh.primitives):
        if prim.mode != 4:
            out.ctx.note("pba.primitive_mode", f"mesh {smesh.name!r} primitive {pi}: mode "
                         f"{prim.mode} is not triangles; skipped",
                     covers=("primitives",))
            continue
        verts = _vertices(prim, m)
        tex, flags, civ = _group_material(out, prim.material)
        for sel, local in split_triangles(_lh_tris(prim), len(verts)):
            gv = verts[sel]
            g = FaceGroup(texture_id=tex, alpha_flags=flags, indices=local, civ_textures=civ,
                          num_vertices=len(gv))
            if kind == RIGID:
                g.vertices = gv
            else:
                shared.append(gv)
                sels.append(sel + _prim_offset(smesh, pi))
            mesh.groups.append(g)
        if len(verts) > MAX_GROUP_VERTICES:
            out.ctx.note("pba.group_split", f"mesh {smesh.name!r} primitive {pi}: "
                         f"{len(verts)} vertices split into groups of <= 65535 (u16 indices)")
    if kind == ANIMATED:
        mesh.vertices = np.concatenate(shared) if shared else np.zeros(0, VERTEX)
    _bounds(mesh)
    return mesh, sels


def _prim_offset(smesh: Mesh, pi: int) -> int:
    return sum(p.vertex_count for p in smesh.primitives[:pi])


def _lh_tris(prim: Primitive) -> npt.NDArray[np.uint32]:
    return np.ascontiguousarray(prim.triangles()[:, [0, 2, 1]])


def _bounds(mesh: PbaMesh) -> None:
    """Bounding sphere: the box centre and the farthest vertex from it."""
    if mesh.vertices is not None:
        pos = mesh.vertices["pos"]
    else:
        arrs = [g.vertices["pos"] for g in mesh.groups if g.vertices is not None]
        pos = np.concatenate(arrs) if arrs else np.zeros((0, 3), np.float32)
    if not len(pos):
        return
    c = (pos.min(axis=0).astype(np.float64) + pos.max(axis=0)) / 2
    mesh.center = c.astype("<f4")
    mesh.radius = np.array([np.sqrt(((pos - c) ** 2).sum(axis=1).max())], dtype="<f4")


# -- sampling -------------------------------------------------------------------------------
def _values(ch: Channel) -> npt.NDArray[np.float64]:
    v = np.asarray(ch.values, dtype=np.float64)
    v = v.reshape(len(ch.times) * (3 if ch.interpolation == "CUBICSPLINE" else 1), -1)
    return v[1::3] if ch.interpolation == "CUBICSPLINE" else v


def _ms(times: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """Seconds -> strictly increasing u32 milliseconds, and which input times were kept."""
    ms = np.clip(np.rint(np.asarray(times) * 1000.0), 0, 0xFFFFFFFF).astype(np.int64)
    uniq, first = np.unique(ms, return_index=True)
    return uniq.astype(np.uint32), first.astype(np.int64)


def _node_tracks(out: _Out, a: int) -> list[NodeTrack]:
    """ROTPOS keys (model space) for every bone the clip moves, at the union of its times."""
    scene = out.scene
    chans = [c for c in scene.animations[a].channels
             if c.path in _TRS and 0 <= c.node < len(scene.nodes) and len(c.times)]
    if not chans:
        return []
    times = np.unique(np.concatenate([np.asarray(c.times, dtype=np.float64) for c in chans]))
    ms, keep = _ms(times)
    times = times[keep]
    by_node: dict[int, dict[str, Channel]] = {}
    for c in chans:
        by_node.setdefault(c.node, {})[c.path] = c
    parents = scene.parents()
    worlds: dict[int, F64] = {}
    tracks = []
    for n in scene.walk():  # parents before children
        p = parents[n]
        if n not in by_node and (p is None or p not in worlds):
            continue
        local = _local_at(scene.nodes[n], by_node.get(n, {}), times)
        worlds[n] = (worlds[p] if p in worlds else out.rest[p]) @ local if p is not None \
            else local
        if n in out.bone_of:
            t, q, _ = _split(worlds[n])
            keys = np.zeros(len(times), dtype=ROTPOS_KEY)
            keys["time"] = ms
            keys["rot"] = snap_quat(to_file_quat(q), QUAT_BITS)
            keys["pos"] = snap(t * _FLIP, POS_BITS)
            tracks.append(NodeTrack(out.bone_of[n], ANIM_ROTPOS, keys))
    return tracks


def _local_at(node: Any, chans: dict[str, Channel], times: F64) -> F64:
    from ...scene.math import quat_to_matrix

    k = len(times)
    if node.matrix is not None and not chans:
        return np.broadcast_to(local_matrix(node), (k, 4, 4)).copy()
    t = sample_channel(chans["translation"], times) if "translation" in chans else \
        np.tile(np.asarray(node.translation, dtype=np.float64), (k, 1))
    r = sample_channel(chans["rotation"], times) if "rotation" in chans else \
        np.tile(np.asarray(node.rotation, dtype=np.float64), (k, 1))
    s = sample_channel(chans["scale"], times) if "scale" in chans else \
        np.tile(np.asarray(node.scale, dtype=np.float64), (k, 1))
    m = np.zeros((k, 4, 4))
    m[:, :3, :3] = quat_to_matrix(r) * s[:, None, :]
    m[:, :3, 3] = t
    m[:, 3, 3] = 1.0
    return m


def _morph_keys(out: _Out, n: int, a: int, sels: list[npt.NDArray[np.int64]]
                ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]] | None:
    """(K, N, 3) file-space positions of a morph-animated mesh at each weights key, and the
    key times in ms, or None when clip ``a`` does not drive this node's weights."""
    anim = out.scene.animations[a]
    if out.scene.nodes[n].skin is not None:
        return _skinned_keys(out, n, anim, sels)
    chans = [c for c in anim.channels if c.node == n and c.path == "weights" and len(c.times)]
    if not chans:
        return None
    ch = chans[0]
    times = np.asarray(ch.times, dtype=np.float64)
    ms, keep = _ms(times)
    weights = _values(ch)[keep]
    node = out.scene.nodes[n]
    assert node.mesh is not None
    smesh = out.scene.meshes[node.mesh]
    world = np.eye(4) if node.skin is not None else out.rest[n]
    per_prim = []
    for prim in smesh.primitives:
        base = np.asarray(prim.positions, dtype=np.float64)
        deltas = np.stack([np.asarray(t.positions, dtype=np.float64) if t.positions is not None
                           else np.zeros_like(base) for t in prim.targets]) \
            if prim.targets else np.zeros((0, *base.shape))
        w = weights[:, : len(deltas)]
        per_prim.append(base[None] + np.einsum("kt,tnc->knc", w, deltas[: w.shape[1]]))
    pos = np.concatenate(per_prim, axis=1) if per_prim else np.zeros((len(ms), 0, 3))
    pos = (pos @ world[:3, :3].T + world[:3, 3]) * _FLIP
    sel = np.concatenate(sels) if sels else np.zeros(0, np.int64)
    return pos[:, sel].astype(np.float32), ms.astype(np.int64)


def _skinned_keys(out: _Out, n: int, anim: Animation, sels: list[npt.NDArray[np.int64]]
                  ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]] | None:
    """A skinned mesh posed at each key of a clip that moves its skin, in file space."""
    if not moves_skin(out.scene, n, anim):
        return None
    times = clip_key_times(anim)
    ms, keep = _ms(times)
    pos = skinned_positions(out.scene, n, anim, times[keep]) * _FLIP
    sel = np.concatenate(sels) if sels else np.zeros(0, np.int64)
    return pos[:, sel].astype(np.float32), ms.astype(np.int64)


def quantize(pos: npt.NDArray[np.float32], times: npt.NDArray[np.int64], node_id: int
             ) -> VertexTrack:
    """Keys as bytes against the track's box: byte = round((v - min) * 255 / (max - min))."""
    k, nv = pos.shape[:2]
    lo = pos.reshape(-1, 3).min(axis=0) if pos.size else np.zeros(3, np.float32)
    hi = pos.reshape(-1, 3).max(axis=0) if pos.size else np.zeros(3, np.float32)
    # The box is composed (decoded keys plus morph deltas on the next trip): snapped like the
    # bone transforms, so that trip's float noise gives the same box and the same bytes.
    lo, hi = snap(lo, POS_BITS).astype("<f4"), snap(hi, POS_BITS).astype("<f4")
    span = (hi.astype(np.float64) - lo)
    scale = np.where(span > 0, 255.0 / np.where(span > 0, span, 1.0), 0.0)
    keys = np.zeros(k, dtype=vertex_key(nv))
    keys["time"] = times
    keys["pos"] = np.clip(np.rint((pos - lo) * scale), 0, 255).astype(np.uint8)
    return VertexTrack(node_id=node_id, num_vertices=nv, box_min=lo, box_max=hi, keys=keys)


def _sequence(out: _Out, a: int, anim_meshes: list[int],
              keys: dict[int, list[tuple[npt.NDArray[np.float32],
                                         npt.NDArray[np.int64]] | None]]) -> Sequence:
    anim = out.scene.animations[a]
    seq = Sequence(name=fixed_name(anim.name or f"anim{a}", out))
    seq.node_tracks = _node_tracks(out, a)
    if any(keys[n][a] is not None for n in anim_meshes):
        for mi, n in enumerate(anim_meshes):
            got = keys[n][a]
            if got is None:  # a still track keeps track i on mesh i (writer rule 3)
                base = out.doc.meshes[mi].vertices
                assert base is not None
                got = (base["pos"][None].astype(np.float32), np.zeros(1, np.int64))
            seq.vertex_tracks.append(quantize(got[0], got[1], mi))
    ends = [int(t.keys["time"][-1]) for t in seq.node_tracks if len(t.keys)]
    ends += [int(t.keys["time"][-1]) for t in seq.vertex_tracks if len(t.keys)]
    seq.duration = max(ends, default=0)
    return seq


def save(scene: Scene, ctx: Context) -> dict[str, bytes]:
    from .write import write

    doc = from_scene(scene, ctx)
    name = ctx.path.name if ctx.path is not None else "model.pba"
    return {name: write(doc, ctx), **doc.ptx_files}
