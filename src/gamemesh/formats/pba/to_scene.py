"""PBA document -> Scene (spec ``pba.md`` b.10/b.12).

Axes: the file is Direct3D left-handed, Y up. Positions, normals and translations get z negated,
quaternions (w, x, y, z) become glTF [-x, -y, z, w], and triangle winding is reversed so that
the front faces stay front faces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import CorruptDataError, FormatError, add_new_notes
from ...registry import Context
from ...safeio import read_regular
from ...scene import (
    Animation,
    Channel,
    Image,
    Material,
    Mesh,
    MorphTarget,
    Node,
    Primitive,
    Scene,
    Skin,
    TextureRef,
)
from ...scene.math import quat_multiply, quat_normalize, quat_to_matrix, trs_to_matrix
from ...scene.numbers import require_finite
from ...scene.sampling import sample_channel
from ...scene.skinning import safe_inverse
from ..ptx.read import read as read_ptx
from .document import FaceGroup, NodeTrack, PbaDocument, PbaMesh, Sequence, VertexTrack
from .files import TextureFinder
from .layout import (
    ALPHA_BLEND,
    ALPHA_NAMES,
    ALPHA_NONE,
    ALPHA_SHADOW,
    ALPHA_TEST,
    ANIM_ROT,
    ANIMATED,
    FLEXIBLE,
    MESH_TYPES,
    NODES,
    RIGID,
    UNVERIFIED_TYPES,
    VERTEX,
    name_str,
)

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
_FLIP = np.array([1.0, 1.0, -1.0], dtype=np.float32)
# glTF has no "alpha test at 0.2 plus blend"; MASK at glTF's default cutoff is the closest.
ALPHA_CUTOFF = 0.5
FMT = "pba"
# One target per key makes the weights animation (keys x targets) quadratic: bound it.
MAX_MORPH_TARGETS = 2048
STATES = ("BASE", "DETERIORADO", "DESTRUIDO", "RUINA")


# -- conversions ----------------------------------------------------------------------------
def lh_points(p: npt.ArrayLike) -> F32:
    """Left-handed file axes <-> glTF axes (its own inverse): negate z."""
    return np.asarray(np.asarray(p, dtype=np.float32).reshape(-1, 3) * _FLIP, dtype=np.float32)


_QUAT_SIGNS = np.array([-1.0, -1.0, 1.0, 1.0])
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])
_CONJUGATE = np.array([-1.0, -1.0, -1.0, 1.0])


def lh_quats(wxyz: npt.ArrayLike) -> F32:
    """(..., 4) file quaternions (w, x, y, z) -> unit glTF (x, y, z, w) = [-x, -y, z, w]."""
    q = np.asarray(wxyz, dtype=np.float64).reshape(-1, 4)
    out = q[:, [1, 2, 3, 0]] * _QUAT_SIGNS
    # np.linalg.norm's own sum, without its argument checks (models have a few bones).
    n = np.sqrt(np.add.reduce(out * out, axis=1, keepdims=True))
    ok = np.isfinite(n) & (n > 1e-12)
    if ok.all():
        return np.asarray(out / n, dtype=np.float32)
    out = np.where(ok, out / np.where(ok, n, 1.0), _IDENTITY)
    return out.astype(np.float32)


def flip_winding(idx: npt.ArrayLike) -> npt.NDArray[np.uint32]:
    """Whole triangles' indices with each triangle's last two corners swapped, as uint32.

    Three strided copies that also widen: a (T, 3) fancy index plus a contiguous copy made
    three passes and ran at a quarter of the speed."""
    src = np.asarray(idx)
    if len(src) % 3:
        msg = f"{len(src)} indices are not whole triangles"
        raise ValueError(msg)
    out = np.empty(len(src), dtype=np.uint32)
    out[0::3] = src[0::3]
    out[1::3] = src[2::3]
    out[2::3] = src[1::3]
    return out


def state_of(name: str) -> str:
    """The damage state a mesh name stands for (BASE, DETERIORADO_n, DESTRUIDO, RUINA)."""
    up = name.upper()
    return up if up.startswith(STATES) else ""


# -- the conversion state -------------------------------------------------------------------
@dataclass
class _Build:
    doc: PbaDocument
    ctx: Context
    scene: Scene
    finder: TextureFinder | None
    root: int = 0  # one node for the model: the skins' common root
    bone_nodes: list[int] = field(default_factory=list)
    materials: dict[tuple[int, int, tuple[str, ...]], int] = field(default_factory=dict)
    images: dict[str, int] = field(default_factory=dict)  # texture name (lower) -> image
    variants: int = 0  # the longest civilisation list
    mesh_nodes: dict[int, int] = field(default_factory=dict)  # pba mesh index -> node
    mesh_targets: dict[int, int] = field(default_factory=dict)  # pba mesh index -> targets
    dropped_tracks: set[tuple[int, int]] = field(default_factory=set)
    # Every bone's model-space (translation, rotation) and its parent bone (-1: none, or a
    # flat reading): node tracks are stored in model space too and made local with them.
    bone_world: tuple[F64, F64] = (np.zeros((0, 3)), np.zeros((0, 4)))
    bone_parents: list[int] = field(default_factory=list)
    bone_lookup: dict[str, int] = field(default_factory=dict)  # name -> first bone of it

    def note(self, code: str, message: str) -> None:
        self.ctx.note(code, message)


def to_scene(doc: PbaDocument, ctx: Context) -> Scene:
    scene = Scene(name=doc.label)
    finder = TextureFinder.for_context(ctx) if (ctx.path is not None or
                                                ctx.opt("texture_dir")) else None
    root = scene.add_node(Node(name=doc.label or "pba", extras={"pba_root": True}))
    b = _Build(doc, ctx, scene, finder, root)
    _bones(b)
    tracks = match_tracks(doc)
    _meshes(b, tracks)
    _animations(b, tracks)
    if b.variants:
        # For the glTF writer: the root KHR_materials_variants list (primitives carry mappings
        # in their extras under the same key).
        scene.extras["KHR_materials_variants"] = {
            "variants": [{"name": f"civilisation_{i}"} for i in range(b.variants)]}
    scene.extras.update({
        "format": "pba",
        "pba_version": doc.version,
        "pba_civ_lists": doc.civ_lists,
        "pba_textures": [name_str(t) for t in doc.textures.tolist()],
        "pba_mesh_types": [MESH_TYPES.get(m.mesh_type, str(m.mesh_type)) for m in doc.meshes],
    })
    if finder is None and len(doc.textures):
        ctx.note("pba.textures_not_searched", "read from bytes: PTX textures are referenced "
                 "by name only", "info")
    add_new_notes(scene.notes, ctx.notes)
    return scene


# -- bones ----------------------------------------------------------------------------------
def _hierarchical(doc: PbaDocument) -> bool:
    """The bones form a tree by ``parentId`` (indices in range, no bone its own ancestor).

    The stored transforms are model space (the public readers apply each bone alone, spec
    b.4), so a parented bone's node gets ``inverse(parent) @ bone`` as its local transform:
    the placement is the readers' either way, and the hierarchy survives the trip to glTF and
    back (gamemesh writes each bone's world transform and its parent)."""
    n = len(doc.bones)
    parents = doc.bones["parent"].astype(np.int64)
    used = parents[parents >= 0]
    if np.any(parents < -1) or np.any(used >= n) or np.any(parents == np.arange(n)):
        return False
    return bool(len(used)) and _acyclic(parents)


def _acyclic(parents: npt.NDArray[np.int64]) -> bool:
    # Python lists: this walks bone by bone, where numpy's per-item indexing costs most.
    par: list[int] = parents.tolist()
    state = [0] * len(par)  # 0 new, 1 on the current path, 2 done
    for start in range(len(par)):
        path = []
        i = start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            path.append(i)
            i = par[i]
        if i >= 0 and state[i] == 1:
            return False
        for j in path:
            state[j] = 2
    return True


def _bones(b: _Build) -> None:
    bones = b.doc.bones
    if not len(bones):
        return
    hier = _hierarchical(b.doc)
    require_finite(bones["pos"], FMT, "bones.pos", "bone positions")
    require_finite(bones["rot"], FMT, "bones.rot", "bone rotations")
    t = lh_points(bones["pos"]).astype(np.float64)
    q = lh_quats(bones["rot"]).astype(np.float64)
    parents = bones["parent"].tolist()
    b.bone_world = (t, q)
    b.bone_parents = [p if hier else -1 for p in parents]
    lt, lq = to_local(t, q, t, q, b.bone_parents)
    names = [name_str(n) for n in bones["name"].tolist()]
    for i, name in enumerate(names):
        b.bone_lookup.setdefault(name, i)
    b.bone_nodes = [b.scene.add_node(Node(name=names[i], translation=_t3(lt[i]),
                                          rotation=_t4(lq[i]),
                                          extras={"pba_bone": i, "pba_parent": parents[i]}),
                                     None if hier and parents[i] >= 0 else b.root)
                    for i in range(len(bones))]
    if hier:
        for i, p in enumerate(parents):
            if p >= 0:
                b.scene.nodes[b.bone_nodes[p]].children.append(b.bone_nodes[i])
                b.scene.roots.remove(b.bone_nodes[i])
    b.scene.extras["pba_bone_hierarchy"] = "parented" if hier else "flat"


def to_local(t: F64, q: F64, pt: F64, pq: F64, parents: list[int] | None) -> tuple[F64, F64]:
    """Model-space bone transforms (``t``, ``q``: (N, 3), (N, 4), or one bone's keys) made
    relative to their parents' (``pt``, ``pq`` indexed by ``parents``; -1 keeps model space;
    None: row k's parent is row k of ``pt``, ``pq``, which are then used as they are)."""
    if parents is None:
        return _relative(t, q, pt, pq)
    idx = np.asarray(parents, np.int64)
    has = idx >= 0
    if not has.any():
        return t, q
    if has.all():
        return _relative(t, q, pt[idx], pq[idx])
    sel = np.where(has, idx, 0)
    rel, lq = _relative(t, q, pt[sel], pq[sel], normalize=False)
    keep = has[:, None]
    return np.where(keep, rel, t), quat_normalize(np.where(keep, lq, q))


def _relative(t: F64, q: F64, pt: F64, pq: F64, normalize: bool = True) -> tuple[F64, F64]:
    """Row k of ``t``, ``q`` relative to row k of ``pt``, ``pq``."""
    inv = pq * _CONJUGATE
    lq = quat_multiply(inv, q)
    rel = np.einsum("nij,nj->ni", quat_to_matrix(inv), t - pt)
    return rel, quat_normalize(lq) if normalize else lq


def _t3(v: Any) -> tuple[float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]))


def _t4(v: Any) -> tuple[float, float, float, float]:
    return (float(v[0]), float(v[1]), float(v[2]), float(v[3]))


def _bone_index(b: _Build, name: bytes) -> int | None:
    """The first bone named ``name`` (names as every reader compares them)."""
    return b.bone_lookup.get(name_str(name))


# -- materials and textures -----------------------------------------------------------------
def _image(b: _Build, name: str, civ: bool = False) -> int:
    """The image of texture ``name`` (one per name, case-insensitive), loaded from its PTX."""
    key = name.lower()
    if key in b.images:
        return b.images[key]
    img = Image(name=name, uri=f"{name}.ptx", extras={"pba_texture": name})
    path = b.finder.find(name) if b.finder is not None else None
    if path is None:
        if b.finder is not None:
            msg = (f"texture {name}.ptx not found beside the model, in texturas/ or the "
                   "--texture-dir folders")
            if civ:
                b.ctx.note("pba.civ_texture_missing", msg, "info")
            else:
                b.ctx.note("pba.texture_missing", msg)
    else:
        try:
            ptx = read_ptx(read_regular(path), Context(path))
            img.pixels = ptx.rgba()
            img.extras["ptx_bpp"] = ptx.bpp
        except (OSError, FormatError) as e:
            b.note("pba.texture_unreadable", f"texture {path.name}: {e}")
    b.images[key] = b.scene.add_image(img)
    return b.images[key]


def _material(b: _Build, g: FaceGroup, civ: tuple[str, ...]) -> int | None:
    tex = g.texture_id if 0 <= g.texture_id < len(b.doc.textures) else -1
    if g.texture_id != tex:
        b.note("pba.texture_id", f"texture id {g.texture_id} out of range for "
               f"{len(b.doc.textures)} textures; untextured")
    key = (tex, g.alpha_flags, civ)
    if key in b.materials:
        return b.materials[key]
    tex_name = name_str(b.doc.textures[tex]) if tex >= 0 else ""
    mat = Material(name=f"{tex_name or 'untextured'}#{g.alpha_flags}" if g.alpha_flags
                   else tex_name or "untextured", double_sided=True,
                   extras={"pba_texture": tex_name, "pba_alpha_flags": g.alpha_flags})
    if tex >= 0:
        mat.base_color_texture = TextureRef(_image(b, tex_name))
    if civ:
        mat.extras["pba_civ_textures"] = list(civ)
    if g.alpha_flags == ALPHA_BLEND and b.ctx.opt("alpha_mask", False):
        # Foliage drawn as a cut-out: no sorting artifacts in glTF viewers (spec c.8).
        mat.alpha_mode, mat.alpha_cutoff = "MASK", ALPHA_CUTOFF
        mat.extras["pba_alpha_as_mask"] = True
    elif g.alpha_flags in (ALPHA_BLEND, ALPHA_SHADOW):
        mat.alpha_mode = "BLEND"
    elif g.alpha_flags == ALPHA_TEST:
        mat.alpha_mode, mat.alpha_cutoff = "MASK", ALPHA_CUTOFF
    elif g.alpha_flags != ALPHA_NONE:
        b.note("pba.alpha_flags", f"alpha flags {g.alpha_flags} unknown; drawn opaque")
    if g.alpha_flags == ALPHA_SHADOW:
        mat.extras["pba_shadow"] = True
    mat.extras["pba_alpha_name"] = ALPHA_NAMES.get(g.alpha_flags, "unknown")
    b.materials[key] = b.scene.add_material(mat)
    return b.materials[key]


def _variant_mappings(b: _Build, base: int, civ: tuple[str, ...]) -> list[dict[str, Any]]:
    """KHR_materials_variants data: variant i (civilisation list index i) uses a copy of the
    group's material textured with the list's i-th name."""
    out: list[dict[str, Any]] = []
    mat = b.scene.materials[base]
    for i, name in enumerate(civ):
        key = (-2, int(mat.extras["pba_alpha_flags"]), (name.lower(),))  # no clash: tex >= -1
        if key not in b.materials:
            variant = Material(name=f"{name}#{mat.extras['pba_alpha_flags']}",
                               base_color_texture=TextureRef(_image(b, name, civ=True)),
                               alpha_mode=mat.alpha_mode, alpha_cutoff=mat.alpha_cutoff,
                               double_sided=True, extras={**mat.extras, "pba_texture": name})
            variant.extras.pop("pba_civ_textures", None)
            b.materials[key] = b.scene.add_material(variant)
        out.append({"material": b.materials[key], "variants": [i]})
    b.variants = max(b.variants, len(civ))
    return out


def _civ(names: Any) -> tuple[str, ...]:
    return tuple(name_str(n) for n in names.tolist()) if names is not None else ()


# -- geometry -------------------------------------------------------------------------------
# The vertex record with its fields as raw bytes: a field copied as one void item per vertex
# is a strided memcpy, where numpy copies a (N, 3) float view row by row (4x slower).
_RAW_VERTEX = np.dtype({"names": ["pos", "normal", "color", "uv"],
                        "formats": ["V12", "V12", "<u4", "V8"],
                        "offsets": [0, 12, 24, 28], "itemsize": VERTEX.itemsize})
_SIGN_BIT = np.uint32(0x80000000)


def _field(raw: npt.NDArray[Any], name: str, width: int) -> F32:
    """One float field of every vertex as a contiguous (N, width) float32 array."""
    return raw[name].copy().view(np.float32).reshape(-1, width)


def _lh_field(raw: npt.NDArray[Any], name: str) -> F32:
    """A point or direction field in glTF axes: z negated by flipping its sign bit (exactly
    the product by -1 for every number; NaN and infinity are refused before)."""
    out = _field(raw, name, 3)
    out.view(np.uint32)[:, 2] ^= _SIGN_BIT
    return out


def _rgba(raw: npt.NDArray[Any]) -> F32:
    """D3DCOLOR bytes B, G, R, A -> (N, 4) float RGBA in 0..1: the bytes swapped in one
    uint32 per vertex, then divided as floats (the same numbers as byte / 255)."""
    x = raw["color"].astype("<u4")
    y = x & np.uint32(0xFF00FF00)
    y |= (x >> np.uint32(16)) & np.uint32(0xFF)
    x &= np.uint32(0xFF)
    x <<= np.uint32(16)
    y |= x
    out = y.astype("<u4", copy=False).view(np.uint8).reshape(-1, 4).astype(np.float32)
    out /= np.float32(255)
    return out


def _primitive(verts: npt.NDArray[Any], idx: npt.ArrayLike, where: str) -> Primitive:
    ind = np.asarray(idx)
    if ind.dtype.kind != "u":
        ind = ind.astype(np.uint32)  # a negative index wraps to a huge one: refused below
    if len(ind) and int(ind.max()) >= len(verts):
        msg = "vertex index out of range"
        raise CorruptDataError(FMT, msg, field=f"{where}.indices",
                               expected=f"< {len(verts)}", actual=int(ind.max()))
    raw = np.asarray(verts, dtype=VERTEX).view(_RAW_VERTEX)
    fields = {"pos": _lh_field(raw, "pos"), "normal": _lh_field(raw, "normal"),
              "uv": _field(raw, "uv", 2)}
    for part, values in fields.items():
        if not np.isfinite(values).all():
            msg = f"vertex {part} holds NaN or infinity"
            raise CorruptDataError(FMT, msg, field=f"{where}.vertices.{part}",
                                   expected="finite numbers", actual="NaN/inf")
    return Primitive(positions=fields["pos"], normals=fields["normal"],
                     texcoords=[fields["uv"]], colors=[_rgba(raw)],
                     indices=flip_winding(ind[: len(ind) // 3 * 3]))


def _slices(mesh: PbaMesh, total: int, where: str) -> list[tuple[int, int]]:
    """Consecutive per-group slices of a shared vertex array (types 3 and 4)."""
    # Python ints (the counts are u32 read from the file: no overflow to guard against).
    sizes = [int(g.num_vertices) for g in mesh.groups]
    ends = list(accumulate(sizes))
    if ends and ends[-1] > total:
        msg = "face groups use more vertices than the mesh has"
        raise CorruptDataError(FMT, msg, field=f"{where}.groups.num_vertices",
                               expected=f"sum <= {total}", actual=ends[-1])
    return [(e - n, e) for n, e in zip(sizes, ends, strict=True)]


def _build_mesh(b: _Build, mi: int, mesh: PbaMesh, drop_shadows: bool) -> Mesh | None:
    where = f"meshes[{mi}]"
    out = Mesh(name=mesh.label)
    verts: npt.NDArray[Any] = np.zeros(0, VERTEX)
    parts: list[tuple[FaceGroup, npt.NDArray[Any]]] = []
    if mesh.mesh_type == RIGID:
        parts = [(g, g.vertices if g.vertices is not None else verts) for g in mesh.groups]
    elif mesh.mesh_type == FLEXIBLE:
        verts = mesh.vertices if mesh.vertices is not None else verts
        parts = [(g, verts) for g in mesh.groups]
    else:
        if mesh.mesh_type == NODES:
            verts = _node_vertices(mesh)
        elif mesh.vertices is not None:
            verts = mesh.vertices
        parts = [(g, verts[s:e]) for g, (s, e) in zip(mesh.groups, _slices(mesh, len(verts),
                                                                           where), strict=True)]
    for gi, (g, gv) in enumerate(parts):
        if drop_shadows and g.alpha_flags == ALPHA_SHADOW:
            b.note("pba.shadow_dropped", f"mesh {mesh.label!r} group {gi}: shadow group "
                   "dropped (--drop-shadows)")
            continue
        prim = _primitive(gv, g.indices, f"{where}.groups[{gi}]")
        civ = _civ(g.civ_textures if mesh.mesh_type != NODES else mesh.civ_textures)
        prim.material = _material(b, g, civ)
        prim.extras = {"pba_group": gi}
        if civ and prim.material is not None:
            prim.extras["KHR_materials_variants"] = {"mappings": _variant_mappings(
                b, prim.material, civ)}
        if g.alpha_flags == ALPHA_SHADOW:
            prim.extras["pba_shadow"] = True
        out.primitives.append(prim)
    return out if out.primitives else None


def _node_vertices(mesh: PbaMesh) -> npt.NDArray[Any]:
    if not mesh.vertex_groups:
        return np.zeros(0, VERTEX)
    return np.concatenate([vg.vertices for vg in mesh.vertex_groups])


def _meshes(b: _Build, tracks: dict[tuple[int, int], int]) -> None:
    want = b.ctx.opt("state")
    drop = bool(b.ctx.opt("drop_shadows", False))
    kept = 0
    for mi, mesh in enumerate(b.doc.meshes):
        label = mesh.label
        if mesh.raw is not None:
            b.note("pba.mesh_skipped", f"mesh {mi} ({label!r}, type {mesh.mesh_type}) was kept "
                   "as raw bytes and is not converted")
            continue
        if want and label.upper() != str(want).upper():
            continue
        built = _build_mesh(b, mi, mesh, drop)
        if built is None:
            continue
        if mesh.mesh_type in UNVERIFIED_TYPES:
            b.note("pba.unverified_mesh_type", f"mesh {label!r} is type {mesh.mesh_type} "
                   f"({MESH_TYPES[mesh.mesh_type]}), whose layout only the seed describes")
        built.extras = {"pba_mesh_type": MESH_TYPES[mesh.mesh_type],
                        "pba_center": lh_points(mesh.center)[0].tolist(),
                        "pba_radius": float(np.asarray(mesh.radius).reshape(-1)[0])}
        if mesh.mesh_type == ANIMATED:
            _morph_targets(b, mi, mesh, built, tracks)
        m = b.scene.add_mesh(built)
        b.mesh_nodes[mi] = _place(b, mesh, m)
        kept += 1
    if want and not kept:
        names = sorted({m.label for m in b.doc.meshes})
        b.note("pba.state_missing", f"no mesh is named {want!r} (meshes: {', '.join(names)})")


def _place(b: _Build, mesh: PbaMesh, m: int) -> int:
    """Rigid (and flexible) meshes sit on the bone of the same name, as every reader places
    them; animated and node meshes are in model space (no reader applies a bone to them)."""
    extras = {"pba_state": state_of(mesh.label) or mesh.label,
              "pba_mesh_type": MESH_TYPES[mesh.mesh_type]}
    bi = _bone_index(b, mesh.name) if mesh.mesh_type in (RIGID, FLEXIBLE) else None
    if bi is not None:
        host = b.bone_nodes[bi]
        if b.scene.nodes[host].mesh is None:
            b.scene.nodes[host].mesh = m
            b.scene.nodes[host].extras.update(extras)
            return host
        return b.scene.add_node(Node(name=mesh.label, mesh=m, extras=extras), host)
    # A skinned mesh's node is a scene root (glTF ignores its transform anyway).
    parent = None if mesh.mesh_type == NODES else b.root
    node = b.scene.add_node(Node(name=mesh.label, mesh=m, extras=extras), parent)
    if mesh.mesh_type == NODES:
        _node_skin(b, mesh, node)
    return node


def _node_skin(b: _Build, mesh: PbaMesh, node: int) -> None:
    """Type 4: each named vertex group follows the bone of its name (weight 1). [SEED only:
    vertices are assumed in model space, bound at the bones' initial transforms]."""
    joints: list[int] = []
    per_vertex: list[int] = []
    for vg in mesh.vertex_groups:
        bi = _bone_index(b, vg.name)
        if bi is None:
            b.note("pba.node_group_unbound", f"mesh {mesh.label!r}: vertex group "
                   f"{name_str(vg.name)!r} names no bone; left unskinned")
            return
        if bi not in joints:
            joints.append(bi)
        per_vertex.append(joints.index(bi))
    if not joints:
        return
    counts = [len(vg.vertices) for vg in mesh.vertex_groups]
    jidx = np.repeat(np.array(per_vertex, dtype=np.uint16), counts)
    mesh_i = b.scene.nodes[node].mesh
    assert mesh_i is not None
    slices = _slices(mesh, len(jidx), mesh.label)
    for prim in b.scene.meshes[mesh_i].primitives:
        s, e = slices[prim.extras["pba_group"]]
        j = np.zeros((e - s, 4), dtype=np.uint16)
        j[:, 0] = jidx[s:e]
        w = np.zeros((e - s, 4), dtype=np.float32)
        w[:, 0] = 1.0
        prim.joints, prim.weights = j, w
    ibm = safe_inverse(np.stack([_bone_matrix(b, bi) for bi in joints])).astype(np.float32)
    skin = b.scene.add_skin(Skin(joints=[b.bone_nodes[bi] for bi in joints],
                                 inverse_bind_matrices=ibm, name=mesh.label))
    b.scene.nodes[node].skin = skin


def _bone_matrix(b: _Build, bi: int) -> npt.NDArray[np.float64]:
    n = b.scene.nodes[b.bone_nodes[bi]]
    return trs_to_matrix(n.translation, n.rotation, n.scale)


# -- animations -----------------------------------------------------------------------------
def match_tracks(doc: PbaDocument) -> dict[tuple[int, int], int]:
    """(sequence, vertex track) -> mesh index, as the spec recommends: ``node_id`` when it names
    an animated mesh of the track's vertex count, else the track's order, else the first
    animated mesh with that count."""
    out: dict[tuple[int, int], int] = {}
    animated = [i for i, m in enumerate(doc.meshes)
                if m.mesh_type == ANIMATED and m.raw is None and m.vertices is not None]
    sizes = {i: len(doc.meshes[i].vertices) for i in animated}  # type: ignore[arg-type]
    for si, seq in enumerate(doc.sequences):
        for k, t in enumerate(seq.vertex_tracks):
            if not (np.isfinite(t.box_min).all() and np.isfinite(t.box_max).all()):
                continue  # a broken box matches nothing: noted and dropped by the caller
            for cand in (t.node_id, k):
                if cand in sizes and sizes[cand] == t.num_vertices:
                    out[(si, k)] = cand
                    break
            else:
                same = [i for i in animated if sizes[i] == t.num_vertices]
                if same:
                    out[(si, k)] = same[0]
    return out


def key_times(times: npt.NDArray[Any], duration: int) -> tuple[F32, bool]:
    """Key times in seconds: the stored milliseconds when they increase strictly and end within
    the duration, else evenly spaced over the duration (what the model viewer does)."""
    t = np.asarray(times, dtype=np.float64)
    rising = bool(len(t)) and bool(np.all(np.diff(t) > 0))
    if rising and (duration == 0 or t[-1] <= duration):
        return (t / 1000.0).astype(np.float32), True
    span = duration / 1000.0 if duration > 0 else max(len(t) - 1, 1) / 24.0
    return np.linspace(0.0, span, len(t), dtype=np.float32), False


def _morph_targets(b: _Build, mi: int, mesh: PbaMesh, out: Mesh,
                   tracks: dict[tuple[int, int], int]) -> None:
    """One morph target per key of every vertex track that drives this mesh."""
    assert mesh.vertices is not None
    mine = [(si, k) for (si, k), m in sorted(tracks.items()) if m == mi]
    counts = np.cumsum([len(b.doc.sequences[si].vertex_tracks[k].keys) for si, k in mine])
    over = [key for key, total in zip(mine, counts.tolist(), strict=True)
            if total > MAX_MORPH_TARGETS]
    if over:
        b.dropped_tracks.update(over)
        mine = mine[: len(mine) - len(over)]
        b.note("pba.morph_limit", f"mesh {mesh.label!r}: {len(over)} vertex track(s) past "
               f"{MAX_MORPH_TARGETS} morph targets dropped")
    if not mine:
        return
    base = mesh.vertices["pos"]
    keys = [b.doc.sequences[si].vertex_tracks[k].positions() for si, k in mine]
    deltas = lh_points(np.concatenate(keys) - base[None]).reshape(-1, len(base), 3)
    slices = _slices(mesh, len(base), mesh.label)
    for prim in out.primitives:
        s, e = slices[prim.extras["pba_group"]]
        prim.targets = [MorphTarget(positions=np.ascontiguousarray(d[s:e])) for d in deltas]
    out.weights = [0.0] * len(deltas)
    names = []
    for si, k in mine:
        t = b.doc.sequences[si].vertex_tracks[k]
        names += [f"{b.doc.sequences[si].label}_{j}" for j in range(len(t.keys))]
    out.target_names = names
    b.mesh_targets[mi] = len(deltas)


def _animations(b: _Build, tracks: dict[tuple[int, int], int]) -> None:
    offsets: dict[int, int] = {}
    for si, seq in enumerate(b.doc.sequences):
        if seq.raw is not None:
            b.note("pba.sequence_skipped", f"sequence {si} was kept as raw bytes and is not "
                   "converted")
            continue
        anim = Animation(name=seq.label, extras={"pba_duration_ms": seq.duration})
        _node_channels(b, seq, anim, f"sequences[{si}]")
        for k, t in enumerate(seq.vertex_tracks):
            mi = tracks.get((si, k))
            if (si, k) in b.dropped_tracks:
                continue
            if mi is None or mi not in b.mesh_nodes:
                if mi is None:
                    b.note("pba.track_unmatched", f"sequence {seq.label!r} vertex track {k} "
                           f"({t.num_vertices} vertices) matches no animated mesh; dropped")
                continue
            start = offsets.get(mi, 0)
            offsets[mi] = start + len(t.keys)
            _weights_channel(b, seq, t, mi, start, anim)
        if anim.channels:
            b.scene.animations.append(anim)


def _weights_channel(b: _Build, seq: Sequence, t: VertexTrack, mi: int, start: int,
                     anim: Animation) -> None:
    if not len(t.keys):
        return
    times, exact = key_times(t.keys["time"], seq.duration)
    if not exact:
        b.note("pba.key_times", f"sequence {seq.label!r}: vertex key times are not increasing "
               "milliseconds within the duration; spaced evenly")
    total = b.mesh_targets[mi]
    values = np.zeros((len(times), total), dtype=np.float32)
    values[np.arange(len(times)), start + np.arange(len(times))] = 1.0
    anim.channels.append(Channel(b.mesh_nodes[mi], "weights", times, values))


def _node_channels(b: _Build, seq: Sequence, anim: Animation, where: str) -> None:
    world: dict[int, tuple[F32, F64, F64]] = {}
    keys: list[tuple[int, int, F32, F64, F64]] = []
    for k, t in enumerate(seq.node_tracks):
        if t.raw is not None or not len(t.keys):
            continue
        if not 0 <= t.node_id < len(b.bone_nodes):
            b.note("pba.node_track_target", f"sequence {seq.label!r} node track {k}: node "
                   f"{t.node_id} is not a bone; dropped")
            continue
        node = b.bone_nodes[t.node_id]
        times, exact = key_times(t.keys["time"], seq.duration)
        if not exact:
            b.note("pba.key_times", f"sequence {seq.label!r} node track {k}: key times are "
                   "not increasing milliseconds within the duration; spaced evenly")
        _finite_keys(t, f"{where}.node_tracks[{k}]")
        rot = lh_quats(t.keys["rot"]).astype(np.float64)
        if t.anim_type == ANIM_ROT:
            pos = np.repeat(lh_points(t.position if t.position is not None else np.zeros(3)),
                            len(times), axis=0).astype(np.float64)
        else:
            pos = lh_points(t.keys["pos"]).astype(np.float64)
        world[t.node_id] = (times, pos, rot)
        keys.append((node, t.node_id, times, pos, rot))
    local = _local_keys(b, world, [(bi, times, pos, rot) for _, bi, times, pos, rot in keys])
    for (node, _, times, _, _), (pos, rot) in zip(keys, local, strict=True):
        anim.channels.append(Channel(node, "rotation", times, rot.astype(np.float32)))
        anim.channels.append(Channel(node, "translation", times, pos.astype(np.float32)))


def _finite_keys(t: NodeTrack, where: str) -> None:
    """A NaN or infinite key is bad input, named where it is read (lh_quats would quietly make
    a NaN rotation the identity; a NaN position would reach the scene)."""
    names = t.keys.dtype.names or ()
    for name in ("rot", "pos"):
        if name in names:
            require_finite(t.keys[name], FMT, f"{where}.keys.{name}", f"key {name} values")
    if t.position is not None:
        require_finite(np.reshape(t.position, (1, -1)), FMT, f"{where}.position", "position")


def _local_keys(b: _Build, world: dict[int, tuple[F32, F64, F64]],
                tracks: list[tuple[int, F32, F64, F64]]) -> list[tuple[F64, F64]]:
    """Each bone's model-space keys relative to its parent at the same times: the parent's
    own keys in this sequence, sampled, or its rest transform when the sequence does not move
    it. Every parented track goes through one :func:`to_local` (row by row, the same numbers
    as one call per track, without its fixed cost per track)."""
    out: list[tuple[F64, F64]] = [(pos, rot) for _, _, pos, rot in tracks]
    rows: list[int] = []
    parts: list[tuple[F64, F64, F64, F64]] = []
    for k, (bi, times, pos, rot) in enumerate(tracks):
        p = b.bone_parents[bi] if bi < len(b.bone_parents) else -1
        if p >= 0:
            rows.append(k)
            parts.append((pos, rot, *_parent_keys(b, world, p, times)))
    if not rows:
        return out
    t, q, pt, pq = (np.concatenate([part[i] for part in parts]) for i in range(4))
    lt, lq = to_local(t, q, pt, pq, None)
    ends = np.cumsum([len(part[0]) for part in parts]).tolist()
    for k, s, e in zip(rows, [0, *ends[:-1]], ends, strict=True):
        out[k] = (lt[s:e], lq[s:e])
    return out


def _parent_keys(b: _Build, world: dict[int, tuple[F32, F64, F64]], p: int,
                 times: F32) -> tuple[F64, F64]:
    """Bone ``p``'s model-space translation and rotation at ``times``."""
    if p in world:
        pt_, pp, pr = world[p]
        ppos = sample_channel(Channel(0, "translation", pt_, pp.astype(np.float32)), times)
        prot = sample_channel(Channel(0, "rotation", pt_, pr.astype(np.float32)), times)
        return ppos, prot
    wt, wq = b.bone_world
    return np.repeat(wt[p][None], len(times), 0), np.repeat(wq[p][None], len(times), 0)

