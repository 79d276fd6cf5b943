"""PET documents -> Scene (spec §B.16), for one file or a character assembled from several.

Pangya is Direct3D: left-handed, +Y up. ``S = diag(1, 1, -1)`` takes it to glTF: positions and
normals get z negated, bone matrices become ``S L S``, animation quaternions ``(x, y, -z, w)``
(the mirror combined with pet-source_tools' conjugation) and every triangle is reversed.
Vertices are stored in their main (first) bone's rest space and normals per corner.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError
from ...registry import Context
from ...safeio import read_regular
from ...scene import (
    Animation,
    Channel,
    Material,
    Mesh,
    Node,
    Primitive,
    Scene,
    Skin,
    TextureRef,
)
from ...scene.math import (
    matrices_to_trs,
    matrix_to_quat_floats,
    quat_to_matrix_floats,
    trs_to_matrices,
)
from ...scene.skinning import limit_influences, safe_inverse
from .document import BoneSection, CollSection, MeshSection, MotiSection, PetDocument, Texture
from .extras import doc_extras, text_value, texture_record
from .files import TextureFinder, part_paths
from .layout import FMT, FPS, MASK_FLAGS
from .read import check_corner_range, read
from .textures import flags_of, load_image

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
S4 = np.diag([1.0, 1.0, -1.0, 1.0])
FLIP = np.array([1.0, 1.0, -1.0])


@dataclass
class Unit:
    """One loaded file of a character (or the only file)."""

    doc: PetDocument
    path: Path | None = None

    @property
    def stem(self) -> str:
        return self.path.stem if self.path is not None else self.doc.kind


def to_scene(doc: PetDocument, ctx: Context) -> Scene:
    return build_scene(Unit(doc, ctx.path), [], ctx)


def build_scene(main: Unit, others: list[Unit], ctx: Context) -> Scene:
    """The scene of one file or of a character (skeleton, parts, motions)."""
    # Hostile numbers (NaN, 1e38 matrices) must not warn or overflow: results are sanitized.
    with np.errstate(all="ignore"):
        return _build_scene(main, others, ctx)


# -- skeleton -------------------------------------------------------------------------------------
def bone_locals(bs: BoneSection) -> F64:
    """Column-form 4x4 matrices from the D3D row-vector 4x3 rows (xa, ya, za, pivot); .apet
    bones (no matrix) and non-finite matrices are identity."""
    n = bs.count
    if bs.matrices is None or n == 0:
        return np.tile(np.eye(4), (n, 1, 1))
    rows = np.asarray(bs.matrices, np.float64).reshape(n, 4, 3)
    out = np.empty((n, 4, 4))
    out[:, 3] = (0.0, 0.0, 0.0, 1.0)
    out[:, :3, :3] = rows[:, :3, :].transpose(0, 2, 1)
    out[:, :3, 3] = rows[:, 3, :]
    finite = np.isfinite(out.reshape(n, 16)).all(axis=1)
    if not finite.all():
        out[~finite] = np.eye(4)
    return out


def bone_tree(parents: list[int], n: int) -> tuple[list[int], list[int], int]:
    """(order with parents first, parents with bad links cut, number cut). Iterative."""
    par = [p if 0 <= p < n and p != i else -1 for i, p in enumerate(parents)]
    children: list[list[int]] = [[] for _ in range(n)]
    roots: list[int] = []
    for i, p in enumerate(par):
        if p >= 0:
            children[p].append(i)
        elif i < n:
            roots.append(i)
    order: list[int] = []
    seen = [False] * n
    cut = sum(1 for i, p in enumerate(parents) if p >= 0 and par[i] < 0)
    while True:
        # Depth first, children in order. Each bone is some one bone's child (or a root),
        # so it is met at most once: no visited check.
        stack = roots[::-1]
        pop, push, add = stack.pop, stack.extend, order.append
        while stack:
            i = pop()
            add(i)
            seen[i] = True
            ch = children[i]
            if ch:
                push(ch[::-1])
        if len(order) == n:
            return order, par, cut
        rest = [i for i in range(n) if not seen[i]]
        # A parent cycle: cut it at its first bone so every bone is reached.
        par[rest[0]] = -1
        children = [[c for c in ch if c != rest[0]] for ch in children]
        roots = [rest[0]]
        cut += 1


def bone_order(parents: list[int], n: int) -> tuple[list[int], list[int], int]:
    """:func:`bone_tree`'s parents and cut count with an order that has parents first (all
    :func:`bone_worlds` needs): when every parent comes before its children (the usual file
    order, which leaves no cycle to cut) the ids themselves, without the tree walk."""
    par = [p if 0 <= p < n and p != i else -1 for i, p in enumerate(parents)]
    if all(p < i for i, p in enumerate(par)):
        return list(range(n)), par, sum(1 for i, p in enumerate(parents) if p >= 0 > par[i])
    return bone_tree(parents, n)


def bone_worlds(local: F64, par: list[int], order: list[int]) -> F64:
    """World matrices: ``world[i] = world[parent] @ local[i]``, one batched product per tree
    level (the same products as bone by bone: a deep chain is still walked bone by bone)."""
    world = local.copy()
    n = len(par)
    if n <= _SMALL_BONES:
        # Parents come first in ``order``: each depth from its parent's, one step a bone.
        dl = [0] * n
        for i in order:
            p = par[i]
            if p >= 0:
                dl[i] = dl[p] + 1
        depth = np.array(dl, np.int64)
    else:
        depth = _depths(np.asarray(par, np.int64))
    levels = int(depth.max()) if n else 0
    if levels == 0:  # roots only
        return world
    if 2 * levels > n:
        # Per bone (a chain): views of the rows made once, each product written in place.
        # np.dot: the same BLAS product as np.matmul (the same bits) at a smaller call cost.
        rows, lrows = list(world), list(local)
        dot = np.dot
        for i in order:
            p = par[i]
            if p >= 0:
                dot(rows[p], lrows[i], out=rows[i])
        return world
    parent = np.asarray(par, np.int64)
    by_depth = np.argsort(depth, kind="stable")
    cuts = np.searchsorted(depth[by_depth], np.arange(1, levels + 2))
    for d in range(levels):  # per level
        idx = by_depth[cuts[d]:cuts[d + 1]]
        world[idx] = world[parent[idx]] @ local[idx]
    return world


# Up to this many bones, the depths are one Python step a bone (cheaper than the pointer
# jumping's numpy passes below a few thousand bones).
_SMALL_BONES = 2048


def decode_names(raw: Sequence[bytes]) -> list[str]:
    """Bone names as text (CP949, bad bytes replaced). All-ASCII names (CP949 keeps ASCII as
    is) are decoded in one call."""
    joined = b"\0".join(raw)
    if raw and joined.isascii() and joined.count(b"\0") == len(raw) - 1:
        return joined.decode("ascii").split("\0")
    return [b.decode("cp949", errors="replace") for b in raw]


def _depths(par: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each bone's number of ancestors (``par``: a forest, -1 at the roots), by pointer
    jumping (log2 of the depth passes)."""
    depth = (par >= 0).astype(np.int64)
    up = par.copy()
    while np.any(up >= 0):
        has = up >= 0
        at = np.where(has, up, 0)
        depth = depth + np.where(has, depth[at], 0)
        up = np.where(has, up[at], -1)
    return depth


@dataclass
class Skeleton:
    unit: Unit
    names: list[str]
    parents: list[int]
    local: F64
    world: F64
    nodes: list[int] = field(default_factory=list)
    # The first bone of each name and of each lower-case name, made on the first find.
    _exact: dict[str, int] | None = field(default=None, repr=False)
    _lower: dict[str, int] = field(default_factory=dict, repr=False)
    _finds: int = field(default=0, repr=False)

    def find(self, name: str) -> int | None:
        """The first bone named ``name``, else the first whose name matches ignoring case."""
        if self._exact is None and self._finds < _LINEAR_FINDS:
            # A few lookups (a collision box's bone): a search costs less than the tables.
            self._finds += 1
            if name in self.names:
                return self.names.index(name)
            low = name.lower()
            return next((i for i, n in enumerate(self.names) if n.lower() == low), None)
        if self._exact is None:
            self._exact = {}
            for i, n in enumerate(self.names):
                self._exact.setdefault(n, i)
                self._lower.setdefault(n.lower(), i)
        hit = self._exact.get(name)
        return hit if hit is not None else self._lower.get(name.lower())


# Lookups by :meth:`Skeleton.find` before it builds its name tables.
_LINEAR_FINDS = 4


def make_skeleton(unit: Unit, ctx: Context) -> Skeleton | None:
    bs = unit.doc.bones
    if bs is None:
        return None
    names = decode_names(bs.names)
    order, par, cut = bone_order(bs.parents, bs.count)
    if cut:
        ctx.note("pet.bone_parent_cut", f"{cut} bone parent link(s) out of range or in a cycle "
                 "were cut (those bones became roots)")
    if bs.matrices is None and bs.count:
        ctx.note("pet.apet_no_rest", "an .apet has no rest matrices: identity rest poses used "
                 "(convert it with its .bpet for the real skeleton)")
    local = bone_locals(bs)
    return Skeleton(unit, names, par, local, bone_worlds(local, par, order))


def add_skeleton_nodes(scene: Scene, sk: Skeleton, ctx: Context) -> None:
    bs = sk.unit.doc.bones
    assert bs is not None
    base = len(scene.nodes)
    sk.nodes = list(range(base, base + len(sk.names)))
    # All bones at once (a 300-bone skeleton converted one bone at a time took ~100 ms).
    gl = S4 @ np.asarray(sk.local, np.float64).reshape(-1, 4, 4) @ S4
    few = _bone_trs_few(gl) if len(gl) <= _FEW_BONES else None
    tl, rl, sl, exact = few if few is not None else _bone_trs(gl)
    nodes = scene.nodes
    extras = _bone_extras(bs)
    # Per bone: as translation, rotation, scale, or (shear) as its matrix.
    nodes += [Node(name=name, translation=ti, rotation=ri, scale=si, extras=ex) if ok
              else Node(name=name, matrix=gl[i].astype(np.float32), extras=ex)
              for i, (name, ok, ti, ri, si, ex) in enumerate(zip(sk.names, exact, tl, rl, sl,
                                                                 extras, strict=True))]
    sheared = exact.count(False)
    roots = [i for i, p in enumerate(sk.parents) if p < 0]
    top: int | None = None
    if len(roots) > 1:
        # glTF wants the joints of a skin under one common root.
        top = len(scene.nodes)
        scene.nodes.append(Node(name=sk.unit.stem, extras={"pet_root": True}))
        scene.roots.append(top)
    # Bone i is node base + i.
    under = scene.nodes[top].children if top is not None else scene.roots
    for i, p in enumerate(sk.parents, base):
        if p >= 0:
            nodes[base + p].children.append(i)
        else:
            under.append(i)
    if sheared:
        ctx.note("pet.bone_shear", f"{sheared} bone matrices have shear: kept as node matrices")


def _bone_extras(bs: BoneSection) -> list[dict[str, Any]]:
    """Each bone node's extras: its id and (1.3) its float."""
    if bs.extra is None:
        return [{"pet_bone": i} for i in range(bs.count)]
    return [{"pet_bone": i, "pet_bone_extra": float(e)} for i, e in enumerate(bs.extra.tolist())]


# Translations, rotations, scales (tuples of floats) and the no-shear flags of the bones.
_BoneTrs = tuple[list[Any], list[Any], list[Any], list[bool]]
# Up to this many bones the TRS split runs bone by bone in plain floats (measured: ~11 us a
# bone against the batch's ~0.2 ms; they break even near 18 bones).
_FEW_BONES = 16


def _bone_trs(gl: F64) -> _BoneTrs:
    """Each glTF bone matrix as (translation, rotation, scale) and whether those give the
    matrix back (else it has shear); a non-finite split is the identity."""
    t, r, s = matrices_to_trs(gl)
    if not (np.isfinite(t).all() and np.isfinite(r).all() and np.isfinite(s).all()):
        bad = ~(np.isfinite(t).all(axis=1) & np.isfinite(r).all(axis=1)
                & np.isfinite(s).all(axis=1))
        t[bad], r[bad], s[bad], gl[bad] = 0.0, (0.0, 0.0, 0.0, 1.0), 1.0, np.eye(4)
    tol = 1e-4 * np.maximum(1.0, np.abs(gl).max(axis=(1, 2)))
    # np.allclose(trs, gl, atol=tol) per bone: |a - b| <= atol + 1e-5 |b|.
    err = np.abs(trs_to_matrices(t, r, s) - gl) - 1e-5 * np.abs(gl)
    exact = (err <= tol[:, None, None]).all(axis=(1, 2))
    return _tuples(t), _tuples(r), _tuples(s), exact.tolist()


def _tuples(a: F64) -> list[Any]:
    """The rows of ``a`` as tuples, zipped from its columns (no list made per row)."""
    return list(zip(*a.T.tolist(), strict=True))


def _bone_trs_few(gl: F64) -> _BoneTrs | None:
    """:func:`_bone_trs` of a few bones, one at a time in plain floats: the operations of
    ``matrices_to_trs`` and ``trs_to_matrices`` in the same order (their one-matrix quaternion
    paths give the batch's bits), the determinants' signs from the same LAPACK call. None
    (the batch decides) when a value is not finite."""
    mats = gl.tolist()
    dets = np.linalg.det(gl[:, :3, :3]).tolist()
    out: _BoneTrs = ([], [], [], [])
    backs: list[list[float]] = []
    tols: list[float] = []
    isfinite, sqrt = math.isfinite, math.sqrt
    for m, det in zip(mats, dets, strict=True):
        flat = [x for row in m for x in row]
        if not all(map(isfinite, flat)):
            return None
        (m00, m01, m02, m03), (m10, m11, m12, m13), (m20, m21, m22, m23) = m[:3]
        # Column lengths, summed row after row as numpy's reduction over the rows does.
        s = [sqrt(m00 * m00 + m10 * m10 + m20 * m20), sqrt(m01 * m01 + m11 * m11 + m21 * m21),
             sqrt(m02 * m02 + m12 * m12 + m22 * m22)]
        if det < 0:
            s[0] = -s[0]
        d0, d1, d2 = (x if x != 0 else 1.0 for x in s)
        basis = [[m00 / d0, m01 / d1, m02 / d2], [m10 / d0, m11 / d1, m12 / d2],
                 [m20 / d0, m21 / d1, m22 / d2]]
        # matrix_to_quat's and quat_to_matrix's own one-matrix paths, on plain floats (their
        # array round trips cost more than the arithmetic).
        q = matrix_to_quat_floats(basis)
        t = [m03, m13, m23]
        if not all(map(isfinite, q + s)):
            return None
        rot = quat_to_matrix_floats(q)
        backs.append([rot[0][0] * s[0], rot[0][1] * s[1], rot[0][2] * s[2], t[0],
                      rot[1][0] * s[0], rot[1][1] * s[1], rot[1][2] * s[2], t[1],
                      rot[2][0] * s[0], rot[2][1] * s[1], rot[2][2] * s[2], t[2],
                      0.0, 0.0, 0.0, 1.0])
        tols.append(1e-4 * max(1.0, max(map(abs, flat))))
        out[0].append(tuple(t))
        out[1].append(tuple(q))
        out[2].append(tuple(s))
    # The allclose test of all bones at once (elementwise, as the batch does it).
    flat_all = gl.reshape(len(gl), 16)
    err = np.abs(np.array(backs, np.float64).reshape(-1, 16) - flat_all) - 1e-5 * np.abs(flat_all)
    out[3].extend(np.asarray((err <= np.array(tols)[:, None]).all(axis=1)).tolist())
    return out


# -- the scene -------------------------------------------------------------------------------------
def _build_scene(main: Unit, others: list[Unit], ctx: Context) -> Scene:
    units = [main, *others]
    scene = Scene(name=main.stem)
    skel_unit = next((u for u in units if u.doc.kind == "bpet" and u.doc.bones is not None),
                     None)
    if skel_unit is None:
        skel_unit = next((u for u in units if u.doc.bones is not None
                          and u.doc.bones.matrices is not None), None)
    if skel_unit is None:
        skel_unit = next((u for u in units if u.doc.bones is not None), None)
    sk = make_skeleton(skel_unit, ctx) if skel_unit is not None else None
    if sk is not None:
        add_skeleton_nodes(scene, sk, ctx)
    builder = _MeshBuilder(scene, sk, ctx)
    for u in units:
        if u.doc.mesh is not None:
            builder.add(u)
    if builder.used_skin and sk is not None:
        ibm = _finite32(safe_inverse(S4 @ sk.world @ S4))
        scene.skins.append(Skin(joints=list(sk.nodes), inverse_bind_matrices=ibm,
                                name=f"{sk.unit.stem}_skin"))
        for ni in builder.mesh_nodes:
            scene.nodes[ni].skin = 0
    for u in units:
        if u.doc.anim is not None:
            _add_animations(scene, u, sk, ctx)
    for u in units:
        coll = u.doc.get(b"COLL")
        if isinstance(coll, CollSection):
            _add_boxes(scene, coll, sk)
    scene.extras.update({"format": "pet", "pet_version": "{}.{}".format(*main.doc.version),
                         "pet_kind": main.doc.kind})
    scene.extras["pet"] = {u.path.name if u.path else f"<{u.doc.kind}>": doc_extras(u.doc)
                           for u in units}
    return scene


@dataclass
class _Corners:
    """A mesh's corners for :meth:`_MeshBuilder._corner_rows`: vertex indices (int64), UV-set
    count, whether it varies, each corner's first equal corner (:func:`first_equal`)."""

    vertex: npt.NDArray[np.int64]
    nsets: int
    varying: bool
    row: npt.NDArray[np.int64]

    def normals(self, sel: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The stored normals of corners ``sel`` ((k, 3))."""
        raise NotImplementedError

    def uvs(self, sel: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The stored UV sets of corners ``sel`` ((k, sets, 2))."""
        raise NotImplementedError


@dataclass
class _FieldCorners(_Corners):
    """From contiguous copies of the fields."""

    normal: npt.NDArray[np.float32]
    uv: npt.NDArray[np.float32]

    def normals(self, sel: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        return self.normal.take(sel, axis=0)

    def uvs(self, sel: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        return self.uv.take(sel, axis=0)


@dataclass
class _RecordCorners(_Corners):
    """From the reader's record words (:func:`_corner_records`)."""

    head: npt.NDArray[np.uint64]  # vertex, normal
    sets: npt.NDArray[np.uint64]  # the UV sets

    def normals(self, sel: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        out: npt.NDArray[np.float32] = self.head.take(sel, axis=0).view(np.float32)[:, 1:]
        return out

    def uvs(self, sel: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        return self.sets.take(sel, axis=0).view(np.float32).reshape(len(sel), self.nsets, 2)


# A face's corners in glTF order (the winding reversed).
_REVERSED = np.array([0, 2, 1])


class _MeshBuilder:
    def __init__(self, scene: Scene, sk: Skeleton | None, ctx: Context) -> None:
        self.scene, self.sk, self.ctx = scene, sk, ctx
        self.used_skin = False
        self.mesh_nodes: list[int] = []
        self.finders: dict[Path | None, TextureFinder] = {}
        self._unit_finders: dict[int, TextureFinder] = {}
        self.images: dict[tuple[Path | None, str, str | None], int] = {}
        self._cv: tuple[MeshSection, npt.NDArray[np.int64]] | None = None
        self._fake: tuple[Any, npt.NDArray[np.int64]] | None = None
        self._bind: tuple[F64, F64] | None = None
        # A character's parts mostly carry the same bones: their own skeletons and bind
        # transforms are made once per distinct bone list (pure functions of it).
        self._owns: dict[tuple[Any, ...], Skeleton | None] = {}
        self._binds: dict[tuple[int, bytes], tuple[F64, F64]] = {}
        dirs = ctx.opt("texture_dir", []) or []
        self.extra_dirs = [Path(d) for d in ([dirs] if isinstance(dirs, str | Path) else dirs)]

    def add(self, unit: Unit) -> None:
        m = unit.doc.mesh
        assert m is not None
        sk = self.sk
        bs = unit.doc.bones
        nb = bs.count if bs is not None else 0
        if sk is not None and sk.unit is unit:
            wm, bone_map = sk.world, np.arange(nb)
        else:
            own = self._own_skeleton(unit) if bs is not None else None
            wm = own.world if own is not None else np.zeros((0, 4, 4))
            bone_map = self._map_bones(unit, own)
        pos, joints, weights, main = self._skin(m, nb, wm, bone_map)
        if isinstance(joints, _Influences):
            inf: _Influences | None = joints
        else:
            inf = _clean_influences(joints, weights, self.ctx) if joints is not None else None
        prims = self._primitives(unit, m, pos, inf, (wm, main, bone_map))
        self._cv = self._fake = self._bind = None  # per mesh
        if not prims:
            self.ctx.note("pet.mesh_empty", f"{unit.stem}: the mesh has no triangles")
            return
        mesh = self.scene.add_mesh(Mesh(name=unit.stem, primitives=prims))
        node = Node(name=unit.stem, mesh=mesh)
        if m.global_weight is not None and len(m.global_weight):
            node.extras["pet_global_weight"] = _single_value(np.asarray(m.global_weight))
        self.mesh_nodes.append(self.scene.add_node(node))

    def _rebind(self, wm: F64, bone_map: npt.NDArray[np.int64]) -> F64:
        """Another file's bind pose onto the skeleton, per bone of the file (once per mesh:
        the skinning and both normal passes use it)."""
        assert self.sk is not None
        if self._bind is None or self._bind[0] is not wm:
            key = (id(wm), bone_map.tobytes())
            hit = self._binds.get(key)  # the entry keeps ``wm`` alive: its id stays its own
            if hit is None:
                hit = self._binds[key] = (wm, self.sk.world[bone_map] @ safe_inverse(wm))
            self._bind = hit
        return self._bind[1]

    def _own_skeleton(self, unit: Unit) -> Skeleton | None:
        """A part's own skeleton (its bind pose), shared by the parts with the same bones."""
        bs = unit.doc.bones
        assert bs is not None
        mats = bs.matrices
        key = (tuple(bs.names), tuple(bs.parents),
               None if mats is None else (mats.dtype.str, mats.shape, mats.tobytes()))
        if key not in self._owns:
            self._owns[key] = make_skeleton(unit, Context(None, {}, []))
        return self._owns[key]

    def _corner_vertex(self, m: MeshSection) -> npt.NDArray[np.int64]:
        """The corners' vertex indices as int64, converted once per mesh (when the corners are
        converted: not held through the skinning), after the range check (on the contiguous
        copy: a pass over the strided view is slower)."""
        if self._cv is None or self._cv[0] is not m:
            if len(m.corner_vertex) <= 3 * _SMALL_FACES:  # a few: converted straight
                small = np.asarray(m.corner_vertex).astype(np.int64)
                check_corner_range(m, small)
                self._cv = (m, small)
                return small
            cv = dense(m.corner_vertex)
            self._check_corners(m, cv)
            self._cv = (m, cv.astype(np.int64))
        return self._cv[1]

    def _check_corners(self, m: MeshSection, cv: npt.NDArray[Any]) -> None:
        """The range check of the corners' vertex indices ``cv`` (kept as the mesh's int64
        indices when they are)."""
        check_corner_range(m, cv)
        if cv.dtype == np.int64:
            self._cv = (m, cv)

    def _map_bones(self, unit: Unit, own: Skeleton | None) -> npt.NDArray[np.int64]:
        """Mesh-file bones onto the skeleton by name; an unmatched bone takes its nearest
        matched ancestor (or the skeleton's first bone)."""
        if own is None or self.sk is None:
            return np.zeros(0, np.int64)
        found: list[int] = []
        missing: list[str] = []
        for name in own.names:
            j = self.sk.find(name)
            found.append(-1 if j is None else j)
            if j is None:
                missing.append(name)
        out = np.array(found, np.int64)
        for i in range(len(out)):
            p, steps = i, 0
            while out[i] < 0 and own.parents[p] >= 0 and steps < len(out):
                p = own.parents[p]
                out[i] = found[p]
                steps += 1
        out[out < 0] = 0
        if missing:
            self.ctx.note("pet.bone_unmatched", f"{unit.stem}: {len(missing)} bone(s) not in "
                          f"the skeleton ({', '.join(missing[:5])}); skinned to an ancestor")
        return out

    def _skin(self, m: MeshSection, nb: int, wm: F64,
              bone_map: npt.NDArray[np.int64]) -> tuple[F64, Any, Any, Any]:
        n = m.vertex_count
        bones = np.asarray(m.inf_bone)
        p = bones.shape[1] if bones.ndim == 2 else 0
        if (self.sk is not None and self.sk.world is wm and nb > 0 and 0 < p <= _COLUMN_SLOTS
                and n):
            # The usual case (the file's own skeleton, a few slots): column by column.
            main = np.where((bones[:, 0] >= 0) & (bones[:, 0] < nb)
                            & (np.asarray(m.inf_count) > 0), bones[:, 0], -1).astype(np.int64)
            self.used_skin = True
            return (self._bind_positions(m, nb, wm, main),
                    _influences_by_column(m, nb, main, self.ctx), None, main)
        bones = bones.astype(np.int64)
        rank = np.arange(p)[None, :]
        valid = (bones >= 0) & (bones < nb) & (rank < np.asarray(m.inf_count)[:, None])
        w = np.where(valid, np.asarray(m.inf_weight, np.float64) / 255.0, 0.0)
        main = np.where(valid[:, 0], bones[:, 0], -1) if p else np.full(n, -1)
        pos = self._bind_positions(m, nb, wm, main)
        total = w.sum(axis=1)
        empty = total <= 0
        if np.any(empty):
            self.ctx.note("pet.vertex_unweighted", f"{int(empty.sum())} vertices have no usable "
                          "influence: bound to their main bone (or bone 0) with weight 1")
        w = np.where(empty[:, None], 0.0, w / np.where(empty, 1.0, total)[:, None])
        joints = np.where(valid, bones, 0)
        if p:
            w[empty, 0] = 1.0
            joints[empty, 0] = np.maximum(main[empty], 0)
        if self.sk is None or nb == 0 or p == 0:
            return pos, None, None, main
        if self.sk.world is not wm and len(bone_map) == nb:
            # Another file's bind pose onto the skeleton: p = sum w_i Wb(b_i) Wm(b_i)^-1 p.
            a = self._rebind(wm, bone_map)
            acc = np.zeros_like(pos)
            for k in range(p):  # per influence rank
                ak = a[joints[:, k]]
                acc += w[:, k, None] * (np.einsum("nij,nj->ni", ak[:, :3, :3], pos)
                                        + ak[:, :3, 3])
            pos = acc
            joints = bone_map[joints]
        self.used_skin = True
        return pos, joints, w, main

    @staticmethod
    def _bind_positions(m: MeshSection, nb: int, wm: F64, main: Any) -> F64:
        """The vertices from their main bone's space into bind space (f64)."""
        pos = np.asarray(m.positions, np.float64)
        if not np.isfinite(pos).all():
            pos = np.nan_to_num(pos, nan=0.0, posinf=0.0, neginf=0.0)
        if nb:
            # Each vertex's main bone matrix (identity for none): the 3x4 part only.
            ext = np.concatenate([np.asarray(wm, np.float64)[:, :3, :], np.eye(4)[None, :3, :]])
            wmain = ext.take(np.where(main >= 0, main, nb), axis=0)
            pos = np.einsum("nij,nj->ni", wmain[:, :, :3], pos) + wmain[:, :, 3]
        return pos

    def _normals(self, unit: Unit, m: MeshSection, pos: F64, wm: F64, main: Any,
                 bone_map: npt.NDArray[np.int64], sel: npt.NDArray[np.int64],
                 rows: npt.NDArray[Any]) -> tuple[F64, npt.NDArray[np.bool_]]:
        """The normals of corners ``sel`` (``rows``: their stored normals), in bind space, z
        not yet flipped, and which were zero (each corner's normal depends only on its own
        record, its vertex and, for a zero normal, its face)."""
        nrm = np.asarray(rows).astype(np.float64)
        if not np.isfinite(nrm).all():
            nrm = np.nan_to_num(nrm, nan=0.0, posinf=0.0, neginf=0.0)
        cv_all = self._corner_vertex(m)
        nb = len(wm)
        v10 = unit.doc.version < (1, 1) and nb
        rebind = self.sk is not None and self.sk.world is not wm and len(bone_map) == nb and nb
        if v10 or rebind:  # the corners' main bones (only these rotations need them)
            cmain = main[cv_all[sel]] if len(sel) else np.zeros(0, np.int64)
        if v10:
            # v1.0 normals are in the main bone's space (the game's vertex build, #1/#2).
            if self._fake is None or self._fake[0] is not main:  # once per mesh
                self._fake = (main, _fake_body_substitute(unit, main, nb))
            rot_bone = self._fake[1]
            b = rot_bone[np.maximum(cmain, 0)]
            r = np.where((cmain >= 0)[:, None, None], wm[np.maximum(b, 0), :3, :3], np.eye(3))
            nrm = np.einsum("nij,nj->ni", r, nrm)
        if rebind:
            a = self._rebind(wm, bone_map)
            r = np.where((cmain >= 0)[:, None, None], a[np.maximum(cmain, 0), :3, :3], np.eye(3))
            nrm = np.einsum("nij,nj->ni", r, nrm)
        # np.linalg.norm(nrm, axis=1) by columns: the same sums, ~3x faster on narrow rows.
        x, y, z = nrm[:, 0], nrm[:, 1], nrm[:, 2]
        length = np.sqrt(x * x + y * y + z * z)
        zero = length < 1e-12
        if zero.any():
            # A zero normal means "compute it" (§B.8): (p1 - p0) x (p2 - p0) in file order.
            corners = pos.take(cv_all.reshape(-1, 3)[sel[zero] // 3], axis=0)  # (k, 3, 3)
            p0 = corners[:, 0]
            nrm[zero] = _cross(corners[:, 1] - p0, corners[:, 2] - p0)
            length[zero] = _norms(nrm[zero])  # per row: the others unchanged
        ok = length > 1e-20
        if ok.all():
            return nrm / length[:, None], zero
        out = np.where(ok[:, None], nrm / np.where(ok, length, 1.0)[:, None], [0.0, 1.0, 0.0])
        return np.asarray(out), zero

    def _corner_rows(self, unit: Unit, m: MeshSection, pos: F64,
                     skin: tuple[F64, Any, npt.NDArray[np.int64]]
                     ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64],
                                npt.NDArray[np.float32], npt.NDArray[np.float32],
                                npt.NDArray[np.int64]]:
        """The distinct corners: (``row`` of each corner, the first corner of each row, the
        rows' glTF normals and UV sets, each row's processed class).

        Corners with equal records (vertex, normal, UV sets) convert to equal glTF vertices,
        so only one of each is converted; rows whose conversions come out equal share a
        class (the first such row). A zero normal takes its face's normal, so each corner
        that has one is a row of its own."""
        nuv_c = m.corner_nuv
        src = self._corner_source(m)
        cv, nsets, varying = src.vertex, src.nsets, src.varying
        nc = len(cv)
        row = src.row
        first = np.flatnonzero(row == np.arange(nc))
        wm, main, bone_map = skin
        nrm64, zero = self._normals(unit, m, pos, wm, main, bone_map, first, src.normals(first))
        if zero.any():
            rep = np.zeros(nc, bool)
            rep[first[zero]] = True
            own = np.flatnonzero(rep[row])
            own = own[row[own] != own]
            row[own] = own
            first = np.concatenate([first, own])
            nrm64 = np.concatenate([nrm64, self._normals(unit, m, pos, wm, main, bone_map,
                                                         own, src.normals(own))[0]])
            order = np.argsort(first, kind="stable")
            first, nrm64 = first[order], nrm64[order]
        rows = np.empty(nc, np.int64)
        rows[first] = np.arange(len(first))
        row = rows.take(row)
        nrm = _finite32(nrm64 * FLIP)
        uv = _finite32(src.uvs(first))
        if varying:
            assert nuv_c is not None
            self.ctx.note("pet.uv_sets_padded", "corners have different numbers of UV sets: "
                          "missing sets copied from set 0")
            nuv_r = np.asarray(nuv_c)[first]
            for k in range(1, nsets):
                short = nuv_r <= k
                uv[short, k] = uv[short, 0]
        cls = first_equal(cv[first], nrm + np.float32(0.0),
                          uv.reshape(len(first), 2 * nsets) + np.float32(0.0))
        return row, first, nrm, uv, cls

    def _corner_source(self, m: MeshSection) -> _Corners:
        """The corners' vertex indices, their rows (:func:`first_equal`) and their normals
        and UV sets by row: from the reader's record words where the fields are views of
        them, else from contiguous copies of the fields."""
        recs = _corner_records(m)
        if recs is not None:
            head, sets = recs
            cv = head.view(np.uint32)[:, 0].astype(np.int64)
            self._check_corners(m, cv)
            return _RecordCorners(cv, sets.shape[1], False, _first_equal_records(cv, head, sets),
                                  head, sets)
        cv = self._corner_vertex(m)
        nc = len(cv)
        # Contiguous copies (the reader leaves the corner fields as views of the input's
        # records: strided, unaligned and several times slower to compare and gather).
        cuv = np.ascontiguousarray(dense(m.corner_uv), np.float32)
        nsets = cuv.shape[1] if cuv.ndim == 3 else 1
        uv_raw = cuv.reshape(nc, nsets, 2)
        normal = dense(m.corner_normal)
        nuv_c = m.corner_nuv
        varying = nuv_c is not None and len(nuv_c) > 0 and bool(
            nuv_c[0] != nsets if nuv_c.strides == (0,) else np.any(nuv_c != nsets))
        # The normals as stored (they convert in float64), the UV sets as float32 (as used).
        cols: list[npt.NDArray[Any]] = [normal.reshape(nc, 3), uv_raw.reshape(nc, 2 * nsets)]
        if varying:
            assert nuv_c is not None
            cols.append(np.asarray(nuv_c, np.uint32)[:, None])
        row = first_equal(cv, *cols)  # the first corner with the same record
        return _FieldCorners(cv, nsets, varying, row, normal, uv_raw)

    def _primitives(self, unit: Unit, m: MeshSection, pos: F64, inf: _Influences | None,
                    skin: tuple[F64, Any, npt.NDArray[np.int64]]) -> list[Primitive]:
        npoly = m.poly_count
        spec = m.specular if m.specular is not None else np.full(npoly, 0xFF, np.uint8)
        ntex = len(unit.doc.textures)
        tex = np.asarray(m.texture, np.int64)
        tex = np.where(tex < ntex, tex, -1)
        key = (tex + 1) * 256 + np.asarray(spec, np.int64)
        if not npoly:
            return []
        if npoly <= _SMALL_FACES:
            return self._primitives_small(unit, m, pos, inf, skin, key)
        row, first, nrm, uv, cls = self._corner_rows(unit, m, pos, skin)
        # Each face's corners' classes in glTF order (corners 0, 2, 1: the winding reversed).
        face_class = cls.take(row).reshape(-1, 3).take([0, 2, 1], axis=1)
        cv = self._corner_vertex(m)
        gpos = _finite32(pos * FLIP)
        nuv = uv.shape[1]
        # Row gathers by np.take (several times faster than fancy indexing for 2-D rows).
        uv_sets = [np.ascontiguousarray(uv[:, s]) for s in range(nuv)]
        del uv  # the sets replace it (peak memory)
        prims: list[Primitive] = []
        for k in np.flatnonzero(np.bincount(key)):  # one primitive per (texture, specular)
            faces = np.flatnonzero(key == k)
            # Corners of one class are one glTF vertex (first occurrences, in order).
            firsts, inverse = first_occurrences(face_class.take(faces, axis=0).reshape(-1),
                                                len(first))
            src = faces.take(firsts // 3) * 3 + _REVERSED.take(firsts % 3)
            verts = cv.take(src)
            r = row.take(src)
            prim = Primitive(positions=gpos.take(verts, axis=0),
                             normals=nrm.take(r, axis=0),
                             texcoords=[u.take(r, axis=0) for u in uv_sets],
                             indices=inverse.astype(np.uint32),
                             material=self._material(unit, int(k) // 256 - 1, int(k) % 256))
            if inf is not None:
                # Only as many sets of 4 as this primitive's vertices use.
                used = int(inf.used[verts].max()) if len(verts) else 1
                width = max(4, -(-used // 4) * 4)
                prim.joints = _rows(inf.joints, verts, width)
                prim.weights = _rows(inf.weights, verts, width)
            prims.append(prim)
        return prims

    def _primitives_small(self, unit: Unit, m: MeshSection, pos: F64,
                          inf: _Influences | None, skin: tuple[F64, Any, npt.NDArray[np.int64]],
                          key: I64) -> list[Primitive]:
        """:meth:`_primitives` of a small mesh: every corner converted (no search for the
        distinct records first), the glTF vertices of all primitives found in one walk over
        the corners, and each attribute gathered once for all primitives (the primitives'
        arrays are slices of it). The general way's values: each corner converts on its own
        (its record, vertex and face), and its class is its converted bits (+0.0 added)."""
        nrm, uv = self._small_corners(unit, m, pos, skin)
        cv = self._corner_vertex(m)
        nc, nsets = uv.shape[0], uv.shape[1]
        faces = np.argsort(key, kind="stable")  # grouped by primitive, in file order within
        gl = (faces[:, None] * 3 + _REVERSED).reshape(-1)  # their corners in glTF order
        words = np.concatenate([cv.astype(np.uint32)[:, None],
                                (nrm + np.float32(0.0)).view(np.uint32),
                                (uv.reshape(nc, 2 * nsets) + np.float32(0.0)).view(np.uint32)],
                               axis=1)
        first, ids, spans = _first_per_primitive(words.take(gl, axis=0), key.take(faces))
        src = gl.take(first)  # each glTF vertex's first corner
        verts = cv.take(src)
        gpos = _finite32(pos * FLIP).take(verts, axis=0)
        gnrm = nrm.take(src, axis=0)
        guv = uv.take(src, axis=0)
        sets = [np.ascontiguousarray(guv[:, s]) for s in range(nsets)]
        indices = np.array(ids, np.uint32)
        bounds = [*(v for _, v, _ in spans[1:]), len(src)]
        prims: list[Primitive] = []
        for (k, v0, i0), v1, i1 in zip(spans, bounds, [*(i for _, _, i in spans[1:]), len(ids)],
                                       strict=True):  # per primitive
            prims.append(Primitive(positions=gpos[v0:v1], normals=gnrm[v0:v1],
                                   texcoords=[u[v0:v1] for u in sets],
                                   indices=indices[i0:i1],
                                   material=self._material(unit, k // 256 - 1, k % 256)))
        if inf is not None:
            _add_influences(prims, inf, verts, [v for _, v, _ in spans])
        return prims

    def _small_corners(self, unit: Unit, m: MeshSection, pos: F64,
                       skin: tuple[F64, Any, npt.NDArray[np.int64]]
                       ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Every corner's glTF normal and UV sets ((C, 3), (C, sets, 2)), as
        :meth:`_corner_rows` converts each distinct one."""
        cv = self._corner_vertex(m)
        nc = len(cv)
        wm, main, bone_map = skin
        nrm64, _ = self._normals(unit, m, pos, wm, main, bone_map, np.arange(nc),
                                 m.corner_normal)
        nrm = _finite32(nrm64 * FLIP)
        cuv = np.asarray(m.corner_uv, np.float32)
        nsets = cuv.shape[1] if cuv.ndim == 3 else 1
        uv = _finite32(cuv.reshape(nc, nsets, 2))
        nuv = m.corner_nuv
        if nuv is not None and len(nuv) and _differs(np.asarray(nuv), nsets):
            self.ctx.note("pet.uv_sets_padded", "corners have different numbers of UV sets: "
                          "missing sets copied from set 0")
            for k in range(1, nsets):
                short = np.asarray(nuv) <= k
                uv[short, k] = uv[short, 0]
        return nrm, uv

    def _material(self, unit: Unit, tex_index: int, spec: int) -> int:
        key = (id(unit), tex_index, spec)
        cache: dict[tuple[int, int, int], int] = getattr(self, "_mats", {})
        self._mats = cache
        if key in cache:
            return cache[key]
        mat = Material(name="untextured", extras={"pet_smtl": spec if spec != 0xFF else -1})
        if tex_index >= 0:
            t = unit.doc.textures[tex_index]
            self._fill_material(unit, mat, t)
        idx = self.scene.add_material(mat)
        cache[key] = idx
        return idx

    def _fill_material(self, unit: Unit, mat: Material, t: Texture) -> None:
        name = t.name
        mat.name = name
        mat.extras["pet_texture"] = texture_record(t)
        d = t.diffuse
        if d not in (0, 0xFFFFFFFF):
            # D3DCOLOR ARGB ([VERIFY] in the spec); alpha is left opaque.
            mat.base_color_factor = (((d >> 16) & 255) / 255.0, ((d >> 8) & 255) / 255.0,
                                     (d & 255) / 255.0, 1.0)
        flags = flags_of(name)
        if "!" in flags:
            mat.extras["pet_specular_map"] = name
            return
        if name.lower() == "null" or not name:
            return
        chroma = "{" if "{" in flags else ("~" if "~" in flags else None)
        finder = self._finder(unit)
        key = (finder.model_dir, name.lower(), chroma)
        if key not in self.images:  # parts of a character share textures: load each once
            notes: list[tuple[str, str]] = []
            self.images[key] = self.scene.add_image(load_image(name, finder, chroma, notes))
            for code, msg in notes:
                self.ctx.note(code, msg)
        img = self.scene.images[self.images[key]]
        mat.base_color_texture = TextureRef(self.images[key])
        if "]" in flags:
            mat.alpha_mode = "BLEND"
        elif any(c in MASK_FLAGS for c in flags) or chroma is not None or (
                img.pixels is not None and bool(np.any(img.pixels[..., 3] < 255))):
            mat.alpha_mode = "MASK"
            mat.alpha_cutoff = 0.4

    def _finder(self, unit: Unit) -> TextureFinder:
        hit = self._unit_finders.get(id(unit))  # the units live as long as the builder
        if hit is not None:
            return hit
        d = unit.path.parent if unit.path is not None else None
        if d not in self.finders:
            self.finders[d] = TextureFinder(d, self.extra_dirs)
        self._unit_finders[id(unit)] = self.finders[d]
        return self.finders[d]


# Up to this many faces a mesh takes :meth:`_MeshBuilder._primitives_small`.
_SMALL_FACES = 256


def _differs(counts: npt.NDArray[Any], n: int) -> bool:
    """Whether some count is not ``n`` (the reader's one count for all corners, a stride-0
    view, is checked once)."""
    if counts.strides == (0,):
        return bool(counts[0] != n)
    return bool((counts != n).any())


def _first_per_primitive(rows: npt.NDArray[np.uint32], face_keys: I64
                         ) -> tuple[list[int], list[int], list[tuple[int, int, int]]]:
    """The glTF vertices of corners ``rows`` (one row of words per corner, three per face,
    faces grouped by their primitive's key ``face_keys``): each vertex's first row
    (ascending), each row's vertex within its primitive, and per primitive (key, its first
    vertex, its first row). A vertex is a distinct row of its primitive, numbered in order
    of first occurrence (as :func:`first_occurrences` numbers a primitive's classes)."""
    # Each row's bytes as one item (a void row's tolist), the dicts' keys.
    items = np.ascontiguousarray(rows).view(np.dtype((np.void, 4 * rows.shape[1]))).reshape(-1)\
        .tolist()
    starts = [0, *(np.flatnonzero(face_keys[1:] != face_keys[:-1]) + 1).tolist()]
    keys = face_keys.take(starts).tolist()
    first: list[int] = []
    ids: list[int] = []
    spans: list[tuple[int, int, int]] = []
    for k, f0, f1 in zip(keys, starts, [*starts[1:], len(face_keys)], strict=True):
        c0, c1 = 3 * f0, 3 * f1
        seg = items[c0:c1]
        # Each distinct row's first position: the last write of the reversed pairs wins.
        at = sorted(dict(zip(reversed(seg), range(c1 - 1, c0 - 1, -1), strict=True)).values())
        number = {items[c]: v for v, c in enumerate(at)}
        spans.append((k, len(first), c0))
        first += at
        ids += [number[b] for b in seg]
    return first, ids, spans


def _add_influences(prims: list[Primitive], inf: _Influences, verts: npt.NDArray[np.int64],
                    starts: list[int]) -> None:
    """The joints and weights of primitives whose vertices are ``verts`` (consecutive, the
    primitives' first at ``starts``): as many sets of 4 as each primitive's vertices use."""
    joints = inf.joints.take(verts, axis=0)
    weights = inf.weights.take(verts, axis=0)
    used = np.maximum.reduceat(inf.used.take(verts), starts).tolist()
    ends = [*starts[1:], len(verts)]
    cols = joints.shape[1]
    for prim, a, b, u in zip(prims, starts, ends, used, strict=True):
        width = max(4, -(-int(u) // 4) * 4)
        if width >= cols:
            prim.joints, prim.weights = joints[a:b], weights[a:b]
        else:
            prim.joints = np.ascontiguousarray(joints[a:b, :width])
            prim.weights = np.ascontiguousarray(weights[a:b, :width])


# Up to this many rows, dedups go through a dict (a Python loop costs less than a dozen
# fixed-cost numpy passes).
_SMALL_ROWS = 256
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def _words32(a: npt.NDArray[Any]) -> npt.NDArray[np.uint32]:
    """A 2-D array's values as 32-bit words: their bits (4- and 8-byte items), or widened."""
    if a.dtype.itemsize % 4 == 0:
        if a.strides[-1] != a.dtype.itemsize:
            a = np.ascontiguousarray(a)
        return a.view(np.uint32)
    return a.astype(np.uint32)


def first_equal(index: npt.NDArray[Any], *cols: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """For each row of (index, columns...): the first row with the same index and the same
    column bits (so for floats NaN equals NaN and -0.0 differs from 0.0: add +0.0 first to
    merge those).

    Rows mostly equal the first row of their index (a vertex's corners), so each row is
    compared with that one, column by column (64 bits at a time where a part allows); the
    rest (seams, hard edges) are grouped exactly by the hash dedup."""
    n = len(index)
    if n == 0:
        return np.zeros(0, np.int64)
    idx = np.asarray(index, np.int64)
    if n <= _SMALL_ROWS:
        return _first_equal_small(idx, [_words32(np.asarray(c).reshape(n, -1)) for c in cols])
    low = int(idx.min())
    if low < 0:
        idx = idx - low
    it = np.int32 if n < 2**31 and int(idx.max()) < 2**31 else np.int64
    head = np.full(int(idx.max()) + 1, n, it)
    np.minimum.at(head, idx.astype(it), np.arange(n, dtype=it))
    rep = head.take(idx).astype(np.int64)
    parts = [_words32(np.asarray(c).reshape(n, -1)) for c in cols]
    same = np.ones(n, bool)
    for p in parts:
        q = p.view(np.uint64) if p.shape[1] % 2 == 0 else p
        # Columns made contiguous once: np.take of a contiguous column is the fast gather.
        for col in (q.T.copy() if q.shape[1] > 1 else q.reshape(1, n)):
            same &= col.take(rep) == col
    odd = np.flatnonzero(~same)
    if len(odd):
        # A row unlike its index's first row is like any earlier equal row in that: all
        # such rows are among ``odd``.
        rows = np.concatenate([idx[odd].astype(np.uint32)[:, None], *(p[odd] for p in parts)],
                              axis=1)
        first, inverse = _unique_words(rows)
        rep[odd] = odd[first[inverse]]
    return rep


def _first_equal_small(idx: npt.NDArray[np.int64], parts: list[npt.NDArray[np.uint32]]
                       ) -> npt.NDArray[np.int64]:
    """:func:`first_equal` of a few rows: the first row of each distinct (index, bits) byte
    string, by a dict (a row unlike its index's first row is like no earlier row that is)."""
    n = len(idx)
    rows = np.concatenate([idx[:, None].view(np.uint32), *parts], axis=1)
    raw = rows.tobytes()
    size = len(raw) // n
    seen: dict[bytes, int] = {}
    rep = [seen.setdefault(raw[i * size:(i + 1) * size], i) for i in range(n)]
    return np.array(rep, np.int64)


def _corner_records(m: MeshSection) -> tuple[npt.NDArray[np.uint64],
                                             npt.NDArray[np.uint64]] | None:
    """When the corner fields are the reader's views of its records (vertex at byte 0, normal
    at 4, the UV-set count at 16, the UV sets from 17, one count for all, more than a few
    corners): each record's bytes 0-15 (vertex, normal) and its UV sets as rows of 8-byte
    words, each copied in one pass over the records (a row copy as raw bytes). Else None."""
    cv, nrm, uv, nuv = m.corner_vertex, m.corner_normal, m.corner_uv, m.corner_nuv
    if (nuv is None or not all(isinstance(a, np.ndarray) for a in (cv, nrm, uv, nuv))
            or uv.ndim != 3):
        return None
    n, sets = len(cv), uv.shape[1]
    size = 17 + 8 * sets
    if (n <= _SMALL_ROWS or cv.dtype != "<u4" or nrm.dtype != "<f4" or uv.dtype != "<f4"
            or cv.strides != (size,) or nrm.strides != (size, 4)
            or uv.strides != (size, 8, 4) or nrm.shape != (n, 3) or uv.shape[2] != 2
            or nuv.strides != (0,) or len(nuv) != n or int(nuv[0]) != sets):
        return None
    at = cv.__array_interface__["data"][0]
    if (nrm.__array_interface__["data"][0] != at + 4
            or uv.__array_interface__["data"][0] != at + 17):
        return None
    # The records' bytes (the fields' views span them all: nothing outside is read).
    raw = np.lib.stride_tricks.as_strided(cv[:, None].view(np.uint8), shape=(n, size),
                                          strides=(size, 1), writeable=False)
    head = raw[:, :16].view(np.dtype((np.void, 16))).copy().view(np.uint64).reshape(n, 2)
    words = raw[:, 17:].view(np.dtype((np.void, 8 * sets))).copy().view(np.uint64)
    return head, words.reshape(n, sets)


def _first_equal_records(cv: npt.NDArray[np.int64], head: npt.NDArray[np.uint64],
                         sets: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """:func:`first_equal` of (vertex, normal, UV sets) given as the records' words
    (``head``: vertex and normal; ``sets``: the UV sets): each row compared with the first
    row of its vertex two and ``sets`` words at a time, the rest grouped by the hash dedup
    on the same 32-bit words."""
    n = len(cv)
    it = np.int32 if n < 2**31 else np.int64
    first = np.full(int(cv.max()) + 1, n, it)
    np.minimum.at(first, cv.astype(it), np.arange(n, dtype=it))
    rep = first.take(cv).astype(np.int64)
    same = _rows_equal(head.take(rep, axis=0), head)
    same &= _rows_equal(sets.take(rep, axis=0), sets)
    odd = np.flatnonzero(~same)
    if len(odd):
        rows = np.concatenate([head[odd].view(np.uint32), sets[odd].view(np.uint32)], axis=1)
        f, inverse = _unique_words(rows)
        rep[odd] = odd[f[inverse]]
    return rep


def _rows_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Per row of two (N, k) arrays: all k items equal (the k flags of a row read as one
    word where k allows; numpy's reductions across narrow rows are slow)."""
    eq: npt.NDArray[np.bool_] = a == b
    k = eq.shape[1]
    word = {2: np.uint16, 4: np.uint32, 8: np.uint64}.get(k)
    if word is None:
        out = eq[:, 0].copy()
        for c in range(1, k):
            out &= eq[:, c]
        return out
    ones: npt.NDArray[np.bool_] = eq.view(word)[:, 0] == np.frombuffer(b"\x01" * k, word)[0]
    return ones


def first_occurrences(ids: npt.NDArray[np.int64], bound: int
                      ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For integer ids in [0, ``bound``): the positions of first occurrences (ascending) and
    each element's position among them (a few ids: by a dict)."""
    n = len(ids)
    if n <= _SMALL_ROWS:
        seen: dict[int, int] = {}
        order: list[int] = []
        for i, v in enumerate(ids.tolist()):
            if v not in seen:
                seen[v] = len(order)
                order.append(i)
        inverse = [seen[v] for v in ids.tolist()]
        return np.array(order, np.int64), np.array(inverse, np.int64)
    it = np.int32 if max(n, bound) < 2**31 else np.int64
    pos = np.arange(n, dtype=it)
    head: npt.NDArray[np.signedinteger[Any]] = np.full(max(bound, 1), n, it)
    np.minimum.at(head, ids.astype(it), pos)
    at = head.take(ids)
    is_first = at == pos
    firsts = np.flatnonzero(is_first)
    rank = np.cumsum(is_first, dtype=np.int64) - 1
    return firsts, rank.take(at)


def unique_rows(index: npt.NDArray[Any], *floats: npt.NDArray[np.float32]
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct rows of (index, float columns...): ``first`` (the row where each first
    occurs, ascending) and ``inverse`` (each row's position in ``first``). -0.0 counts as
    0.0."""
    n = len(index)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    words = [np.asarray(index, np.int64).astype(np.uint32)[:, None]]
    words += [(np.asarray(f, np.float32).reshape(n, -1) + np.float32(0.0)).view(np.uint32)
              for f in floats]
    return _unique_words(np.concatenate(words, axis=1))


def _unique_words_small(rows: npt.NDArray[np.uint32]
                        ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_unique_words` of a few rows: the first row of each distinct byte string."""
    n = len(rows)
    raw = np.ascontiguousarray(rows).tobytes()
    size = len(raw) // n if n else 0
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse: list[int] = []
    for i in range(n):
        key = raw[i * size:(i + 1) * size]
        k = seen.get(key)
        if k is None:  # distinct rows are numbered in order of first occurrence
            k = seen[key] = len(first)
            first.append(i)
        inverse.append(k)
    return np.array(first, np.int64), np.array(inverse, np.int64)


def _unique_words(rows: npt.NDArray[np.uint32]
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`unique_rows` of rows of 32-bit words, compared exactly.

    ``np.unique(axis=0)`` sorted the rows as structured records (a slow generic compare);
    here the words are hashed into one uint64, the hashes sorted, and every row is checked
    word for word against its group's first row, so a hash collision can never merge two
    different rows (it falls back to the exact sort). A few rows go through a dict of their
    bytes instead (the same answer without the fixed cost of a dozen numpy passes)."""
    n = len(rows)
    if n <= _SMALL_ROWS:
        return _unique_words_small(rows)
    h = np.full(n, _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for col in rows.T:
            h = (h ^ col) * _FNV_PRIME
    order = np.argsort(h)
    hs = h[order]
    starts = np.flatnonzero(np.concatenate([[True], hs[1:] != hs[:-1]]))
    group_first = np.minimum.reduceat(order, starts)  # earliest row of each hash group
    rep = np.empty(n, np.int64)
    rep[order] = np.repeat(group_first, np.diff(np.append(starts, n)))
    first = np.sort(group_first)
    if not np.array_equal(rows, rows[rep]):  # a collision: take the exact (slow) way
        void = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1] * 4)))[:, 0]
        _, f, inv = np.unique(void, return_index=True, return_inverse=True)
        rep = f[inv.reshape(-1)]
        first = np.sort(f)
    pos = np.empty(n, np.int64)
    pos[first] = np.arange(len(first))
    return first.astype(np.int64), pos[rep]


def _count_positive(w: F64) -> npt.NDArray[np.integer[Any]]:
    """Each row's count of weights > 0. Rows of 4 or 8 (the padded widths): the row's flags
    as one 32- or 64-bit word, whose bytes a multiply sums into its top byte."""
    k = w.shape[1] if w.ndim == 2 else 0
    if k not in (4, 8) or not len(w):
        out: npt.NDArray[np.integer[Any]] = np.count_nonzero(
            np.ascontiguousarray(w.T) > 0, axis=0)
        return out
    word = np.dtype(np.uint64 if k == 8 else np.uint32)
    flags = np.ascontiguousarray(w > 0).view(np.uint8).view(word)[:, 0]
    ones = np.array(0x0101010101010101 if k == 8 else 0x01010101, word)
    total: npt.NDArray[np.integer[Any]] = np.multiply(flags, ones)  # wraps: no overflow check
    return total >> np.array(8 * (k - 1), word)


def _single_value(a: npt.NDArray[Any]) -> float | None:
    """The value of a (non-empty) array when ``np.unique`` finds only one (NaNs equal), else
    None. Values all with the first one's bits (the usual case) are decided without the
    sort; the rest by np.unique (which of 0.0 and -0.0 it keeps is its own choice)."""
    first = a[:1]
    if a.dtype.itemsize in (4, 8):
        word = np.uint32 if a.dtype.itemsize == 4 else np.uint64
        if bool((a.view(word) == first.view(word)[0]).all()):
            return float(first[0])
    vals = np.unique(a)
    return float(vals[0]) if len(vals) == 1 else None


def _rows(a: npt.NDArray[Any], idx: npt.NDArray[Any], width: int) -> npt.NDArray[Any]:
    """``a[idx, :width]`` as a new contiguous array, gathered by np.take."""
    out = a.take(idx, axis=0)
    return out if width >= a.shape[1] else np.ascontiguousarray(out[:, :width])


def dense(a: Any) -> npt.NDArray[Any]:
    """``a`` as a C-contiguous array. The reader leaves the corner fields as views of the
    input's records (strided, unaligned): whole rows are copied as raw bytes (one void item a
    row), several times faster than numpy's item-by-item copy of unaligned values."""
    a = np.asarray(a)
    if a.flags.c_contiguous or a.ndim == 0 or a.size == 0 or a.dtype.hasobject:
        return np.ascontiguousarray(a)
    inner = np.empty((1, *a.shape[1:]), a.dtype).strides[1:]
    if a.strides[1:] != inner:
        return np.ascontiguousarray(a)
    row = a.dtype.itemsize * (a.size // len(a))
    raw = a.reshape(len(a), -1).view(np.uint8)
    out: npt.NDArray[Any] = raw.view(np.dtype((np.void, row))).copy().view(a.dtype)
    return out.reshape(a.shape)


def _norms(a: F64) -> F64:
    """``np.linalg.norm(a, axis=1)`` of real rows: what it computes (the same reduction, so
    the same bits) without its argument handling, a large share of the call on a few rows."""
    out: F64 = np.sqrt(np.add.reduce(a * a, axis=1))
    return out


def _cross(a: F64, b: F64) -> F64:
    """``np.cross`` of rows of 3: each component as its two products' difference
    (``a1 b2 - a2 b1``, ``a2 b0 - a0 b2``, ``a0 b1 - a1 b0``), the products and the
    subtraction in np.cross's order (so its bits), all three at once on rotated columns
    without its wrapper's axis moves and temporaries."""
    out: F64 = (a.take(_NEXT, axis=1) * b.take(_AFTER, axis=1)
                - a.take(_AFTER, axis=1) * b.take(_NEXT, axis=1))
    return out


# Each component's next and the one after (cyclically): the columns _cross multiplies.
_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])


def _finite32(a: Any) -> npt.NDArray[np.float32]:
    """float32 without NaN or infinity (hostile files): clipped to a large finite range."""
    arr = np.asarray(a)
    # Usually all values are in range: then the clip changes nothing, and two reductions
    # (NaN fails both tests) cost less than the clip's passes.
    if (arr.size > _SMALL_ROWS and arr.dtype in (np.float32, np.float64)
            and arr.min() >= -1e30 and arr.max() <= 1e30):
        return arr.astype(np.float32)
    # np.clip then np.nan_to_num, by their ufuncs (the wrappers cost more than the work on
    # small arrays): NaN passes the clip and becomes 0.0.
    out = np.minimum(np.maximum(np.asarray(a, np.float64), -1e30), 1e30)
    nan = np.isnan(out)
    if nan.any():
        out[nan] = 0.0
    return out.astype(np.float32)


def _fake_body_substitute(unit: Unit, main: Any, nb: int) -> npt.NDArray[np.int64]:
    bs = unit.doc.bones
    if bs is None:
        return np.arange(nb)
    return fake_body_substitute(bs.names, bs.parents, main, nb)


def fake_body_substitute(names_raw: list[bytes], parents: list[int], main: Any,
                         nb: int) -> npt.NDArray[np.int64]:
    """v1.0 quirk (#2): with a "fake body bone" (no Bip/Bone/Jaw in its name, nobody's main
    bone, no children), corners of Bip/Bone/Jaw main bones rotate by that bone instead.
    Returns, per bone, the bone whose rotation its corners' normals use."""
    out = np.arange(nb)
    names = decode_names(names_raw[:nb])
    mains = set(np.unique(main[main >= 0]).tolist()) if len(main) else set()
    has_child = {p for p in parents if 0 <= p < nb}
    skeletal = [any(k in n for k in ("Bip", "Bone", "Jaw")) for n in names]
    fake = [i for i in range(nb) if not skeletal[i] and i not in mains and i not in has_child]
    if fake:
        out[np.array(skeletal, bool)] = fake[0]
    return out


@dataclass
class _Influences:
    """Per vertex, ready for the primitives: joints (uint16) and weights (float32), padded to
    a multiple of 4 slots, and each vertex's count of weights > 0."""

    joints: npt.NDArray[np.uint16]
    weights: npt.NDArray[np.float32]
    used: npt.NDArray[np.integer[Any]]


def _clean_influences(joints: Any, weights: Any, ctx: Context) -> _Influences:
    """The general way: :func:`limit_influences` on the skinned (N, P) weights."""
    joints, weights = _limit_influences(joints, weights, ctx)
    # Per vertex, before the primitives gather them.
    return _Influences(joints.astype(np.uint16), weights.astype(np.float32),
                       _count_positive(weights))


# Up to this many slots the influences are cleaned column by column (each sum then adds its
# terms left to right, as numpy's row sums do for fewer than 8 terms).
_COLUMN_SLOTS = 7


def _influences_by_column(m: MeshSection, nb: int, main: npt.NDArray[np.int64],
                          ctx: Context) -> _Influences:
    """:meth:`_MeshBuilder._skin`'s weights then :func:`_clean_influences`, fused and run on
    contiguous columns (one per slot) instead of (N, P) rows: the same floating-point
    operations in the same order, so the same bits, without the (N, P) float64 arrays and
    their slow narrow-row reductions."""
    bones = np.asarray(m.inf_bone)
    p = bones.shape[1]
    count = np.asarray(m.inf_count)
    wb = np.asarray(m.inf_weight)
    if len(bones) <= _SMALL_VERTS:
        small = _influences_small(bones, count, wb, nb, main, ctx)
        if small is not None:
            return small
    w: list[F64] = []
    j: list[npt.NDArray[Any]] = []
    total: F64 | None = None
    for c in range(p):
        b = np.ascontiguousarray(bones[:, c])
        valid = (b >= 0) & (b < nb) & (count > c)
        w.append(np.where(valid, wb[:, c] / 255.0, 0.0))
        j.append(np.where(valid, b, 0))
        total = w[0].copy() if total is None else total + w[c]
    assert total is not None
    empty = total <= 0
    if np.any(empty):
        ctx.note("pet.vertex_unweighted", f"{int(empty.sum())} vertices have no usable "
                 "influence: bound to their main bone (or bone 0) with weight 1")
        total = np.where(empty, 1.0, total)
        w = [np.where(empty, 0.0, wc / total) for wc in w]
        w[0][empty] = 1.0
        j[0][empty] = np.maximum(main[empty], 0)
    else:
        w = [wc / total for wc in w]
    return _sorted_influences(j, w, ctx)


# Up to this many vertices, :func:`_influences_small` works on (N, P) arrays: a few dozen numpy
# calls whatever P is, against the column way's several per slot and per pair of slots.
_SMALL_VERTS = 512


def _influences_small(bones: npt.NDArray[Any], count: npt.NDArray[Any], wb: npt.NDArray[Any],
                      nb: int, main: npt.NDArray[np.int64], ctx: Context) -> _Influences | None:
    """:func:`_influences_by_column` on (N, P) arrays, for few vertices: every value by the
    same operation (the row sums as column-after-column adds, the sort a stable permutation),
    so the same bits. None (the column way decides) when a vertex names a bone twice with
    weight: the merge's order of adds is left to the column way."""
    p = bones.shape[1]
    valid = (bones >= 0) & (bones < nb) & (count[:, None] > np.arange(p))
    w = np.where(valid, wb / 255.0, 0.0)
    pos = w > 0
    if p > 1 and _has_repeats(bones, pos):
        return None
    j = np.where(valid, bones, 0)
    total = _column_sum(w, p)
    empty = total <= 0
    if empty.any():
        ctx.note("pet.vertex_unweighted", f"{int(empty.sum())} vertices have no usable "
                 "influence: bound to their main bone (or bone 0) with weight 1")
        w = np.where(empty[:, None], 0.0, w / np.where(empty, 1.0, total)[:, None])
        w[empty, 0] = 1.0
        j[empty, 0] = np.maximum(main[empty], 0)
    else:
        w /= total[:, None]
    counts = np.count_nonzero(w, axis=1)
    if p > 1 and (w[:, :-1] < w[:, 1:]).any():
        # By descending weight, ties in slot order (the column way's stable sort); rows in
        # order stay as they are.
        order = np.argsort(-w, axis=1, kind="stable")
        order += np.arange(0, w.size, p)[:, None]  # flat positions: np.take is the fast gather
        w, j = w.take(order), j.take(order)
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    used = int(counts.max())
    k = max(1, used) if keep is None else max(1, min(keep, p))
    over = int(np.count_nonzero(counts > k))
    if over:
        ctx.note("pet.influences_limited", f"{over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    total = _column_sum(w, k)
    total[total <= 0] = 1.0
    n, cols = len(w), max(4, -(-k // 4) * 4)
    wr = w[:, :k] / total[:, None]
    kept = wr > 0
    wout = np.zeros((n, cols), np.float32)
    jout = np.zeros((n, cols), np.uint16)
    wout[:, :k] = wr
    jout[:, :k] = np.where(kept, j[:, :k], 0)
    return _Influences(jout, wout, kept.sum(axis=1, dtype=np.int8))


def _has_repeats(bones: npt.NDArray[Any], pos: npt.NDArray[np.bool_]) -> bool:
    """Whether some row has two slots with the same bone and both weights > 0."""
    # Slots without weight get distinct negative ids (the others are bones >= 0): a repeat is
    # then two equal neighbours in the sorted row.
    ids = np.sort(np.where(pos, bones, -1 - np.arange(bones.shape[1])), axis=1)
    return bool((ids[:, 1:] == ids[:, :-1]).any())


def _column_sum(w: F64, k: int) -> F64:
    """The first ``k`` columns of each row added left to right (the column way's order)."""
    total = w[:, 0].copy()
    for c in range(1, k):
        total += w[:, c]
    return total


def _sorted_influences(j: list[npt.NDArray[Any]], w: list[F64], ctx: Context) -> _Influences:
    """:func:`limit_influences` on weight columns that are finite and >= 0 (repeats folded,
    slots sorted by weight, the used ones kept and renormalized, padded)."""
    n, p = len(w[0]), len(w)
    for a in range(p):
        for b in range(a + 1, p):
            same = np.flatnonzero((j[b] == j[a]) & (w[a] > 0) & (w[b] > 0))
            if len(same):
                w[a][same] += w[b][same]
                w[b][same] = 0.0
    counts = np.zeros(n, np.int8)
    for c in w:
        counts += c != 0
    # Rows already in order (each weight >= the next: a stable sort leaves them) stay; the
    # others are sorted.
    unsorted = np.zeros(n, bool)
    for a in range(p - 1):
        unsorted |= w[a] < w[a + 1]
    ws, js = list(w), list(j)
    rows = np.flatnonzero(unsorted)
    if len(rows):
        _sort_rows(ws, js, rows)
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    used = int(counts.max())
    k = max(1, used) if keep is None else max(1, min(keep, p))
    over = int(np.count_nonzero(counts > k))
    if over:
        ctx.note("pet.influences_limited", f"{over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    total = ws[0].copy()
    for r in range(1, k):
        total += ws[r]
    total[total <= 0] = 1.0
    cols = max(4, -(-k // 4) * 4)
    wout = np.zeros((n, cols), np.float32)
    jout = np.zeros((n, cols), np.uint16)
    nused = np.zeros(n, np.int8)
    for r in range(k):
        wr = ws[r] / total
        pos = wr > 0
        wout[:, r] = wr
        jout[:, r] = np.where(pos, js[r], 0)
        nused += pos
    return _Influences(jout, wout, nused)


def _sort_rows(w: list[F64], j: list[npt.NDArray[Any]], rows: npt.NDArray[np.int64]) -> None:
    """Rows ``rows`` of the weight and joint columns sorted by descending weight, stably, in
    place: each slot's place is the number of slots with a larger weight, or an equal one
    further left."""
    p, n = len(w), len(rows)
    wr = [c.take(rows) for c in w]
    jr = [c.take(rows) for c in j]
    ws = np.empty(p * n)
    js = np.empty(p * n, np.int64)
    at0 = np.arange(n, dtype=np.int64)
    for a in range(p):
        rank = np.zeros(n, np.int64)
        for b in range(p):
            if b != a:
                rank += (wr[b] >= wr[a]) if b < a else (wr[b] > wr[a])
        at = rank * n + at0
        ws[at] = wr[a]
        js[at] = jr[a]
    for r in range(p):
        w[r][rows] = ws[r * n:(r + 1) * n]
        j[r][rows] = js[r * n:(r + 1) * n]


def _limit_influences(joints: Any, weights: Any, ctx: Context) -> tuple[Any, Any]:
    """Merge repeated bones, sort influences by weight, drop empty slots, honour
    ``max_influences``, pad to 4k."""
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    inf = limit_influences(joints, weights, keep)
    if not inf.merged:
        ctx.note("pet.influences_many",
                 f"vertices with {weights.shape[1]} influences: repeats not merged")
    if inf.over:
        ctx.note("pet.influences_limited", f"{inf.over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    return inf.joints, inf.weights


# -- animation ------------------------------------------------------------------------------------
# ANIM tracks -> glTF channels, and the motion clips cut from them (spec §B.7, §B.11).
#
# Every step runs on all channels of a file at once: their keys are concatenated (one segment
# per channel) and each operation is one numpy call over all of them. A file has a few keys per
# channel and tens of channels, so per-channel numpy calls cost far more than the arithmetic.
# Each value is computed by the same floating-point operations, in the same order, as the
# per-channel way (``np.interp``'s formula, ``np.argsort(kind="stable")`` per channel), so the
# results are bit for bit the same.

_PATHS = (("pos", "translation"), ("rot", "rotation"), ("scale", "scale"))
_FLIP3 = np.array([1.0, 1.0, -1.0])
_FLIP4 = np.array([1.0, 1.0, -1.0, 1.0])
_UNIT_Q = np.array([0.0, 0.0, 0.0, 1.0])


def _segments(lengths: Sequence[int]) -> tuple[I64, I64]:
    """(start of each segment, segment id of each row) for rows concatenated by segment."""
    n = np.asarray(lengths, np.int64)
    starts = np.zeros(len(n), np.int64)
    np.cumsum(n[:-1], out=starts[1:])
    return starts, np.repeat(np.arange(len(n), dtype=np.int64), n)


def track_channels(tracks: Sequence[Any], nodes: Sequence[int], labels: Sequence[str],
                   ctx: Context) -> list[Channel]:
    """The channels of ``tracks`` (translation, rotation, scale per track, in track order)
    targeting ``nodes``: keys with non-finite values or negative times dropped, sorted by time
    (stably), repeated times dropped, z mirrored, quaternions normalized. A (track, path) that
    lost keys gets a note with its label."""
    per_path: list[dict[int, Channel]] = []
    bad: set[tuple[int, int]] = set()
    for p, (attr, path) in enumerate(_PATHS):
        arrays = [np.asarray(getattr(tr, attr)) for tr in tracks]
        used = [i for i, a in enumerate(arrays) if len(a)]
        out: dict[int, Channel] = {}
        per_path.append(out)
        if not used:
            continue
        a = np.concatenate([arrays[i] for i in used]).astype(np.float64)
        lens = [len(arrays[i]) for i in used]
        keys = (_path_keys_small(a, lens, path) if len(a) <= _SMALL_KEYS
                else _path_keys(a, lens, path))
        t32, v32, counts, lost = keys
        for k in lost:
            bad.add((used[k], p))
        s = 0
        for k, c in enumerate(counts):
            if c:
                i = used[k]
                out[i] = Channel(nodes[i], path, t32[s:s + c], v32[s:s + c])  # type: ignore[arg-type]
            s += c
    channels: list[Channel] = []
    for i in range(len(tracks)):
        for p in range(3):
            if (i, p) in bad:
                ctx.note("pet.anim_keys_fixed",
                         f"{labels[i]}: keys with bad or repeated times dropped")
            ch = per_path[p].get(i)
            if ch is not None:
                channels.append(ch)
    return channels


# Up to this many keys (of one path of a file) the channels are built, and up to _SMALL_CUT
# key rows (a group's keys times its motions) cut, by a walk over the keys as Python floats:
# a file has a few keys per channel, and below these sizes (measured: ~1 us a key walked,
# ~2 us a numpy call) the numpy calls cost more than that arithmetic. Only the reductions
# (quaternion lengths, dot products) stay numpy calls, on the same arrays as the numpy way,
# so every value has the same bits.
_SMALL_KEYS = 64
_SMALL_CUT = 256

_PathKeys = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], list[int], list[int]]


def _path_keys(a: F64, lens: list[int], path: str) -> _PathKeys:
    """One path's keys of all used tracks (``a``: rows t, values..., concatenated per track
    with ``lens``) cleaned: (times, values, keys kept per track, tracks that lost keys)."""
    _, seg0 = _segments(lens)
    t, v = a[:, 0], a[:, 1:]
    ok = np.isfinite(t) & (t >= 0) & np.all(np.isfinite(v), axis=1)
    t, v, seg = t[ok], v[ok], seg0[ok]
    # Stable by time within each channel: the segments are already in order.
    order = np.lexsort((t, seg))
    t, v, seg = t[order], v[order], seg[order]
    keep = np.ones(len(t), bool)
    keep[1:] = (np.diff(t) > 0) | (seg[1:] != seg[:-1])
    lost = (np.bincount(seg[~keep], minlength=len(lens))
            + np.bincount(seg0[~ok], minlength=len(lens)))
    t, v, seg = t[keep], v[keep], seg[keep]
    if path == "translation":
        v = v * _FLIP3
    elif path == "rotation":
        v = _unit_rotations(v * _FLIP4)
    counts = np.bincount(seg, minlength=len(lens)).tolist()
    return (t.astype(np.float32), v.astype(np.float32), counts,
            np.flatnonzero(lost).tolist())


def _rows_array(rows: list[list[float]], width: int) -> F64:
    """Rows of ``width`` floats as an (N, width) array, read flat (a list of lists makes
    numpy discover its shape first, about twice the cost)."""
    flat = np.fromiter(itertools.chain.from_iterable(rows), np.float64, len(rows) * width)
    return flat.reshape(len(rows), width)


def _unit_rotations(v: F64) -> F64:
    length = _norms(v)[:, None]
    if (length > 1e-12).all():  # the usual case: the where below picks every quotient
        out: F64 = v / length
        return out
    return np.asarray(np.where(length > 1e-12, v / np.where(length > 1e-12, length, 1.0),
                               _UNIT_Q))


def _path_keys_small(a: F64, lens: list[int], path: str) -> _PathKeys:
    """:func:`_path_keys` of a few keys, track by track as Python floats (the same
    comparisons, the same stable order; z negated exactly as ``* -1.0``)."""
    rows = a.tolist()
    times: list[float] = []
    vals: list[list[float]] = []
    counts: list[int] = []
    lost: list[int] = []
    s = 0
    isfinite = math.isfinite
    for k, n in enumerate(lens):
        good = [r for r in rows[s:s + n] if r[0] >= 0 and all(map(isfinite, r))]
        s += n
        good.sort(key=_first)  # stable, as np.lexsort
        last = -1.0
        c = 0
        for r in good:
            if r[0] > last:  # np.diff(t) > 0: a repeated time keeps its first key
                last = r[0]
                times.append(last)
                vals.append(r[1:])
                c += 1
        counts.append(c)
        if c < n:
            lost.append(k)
    if path in ("translation", "rotation"):
        for r in vals:
            r[2] = -r[2]
    v = _rows_array(vals, a.shape[1] - 1)
    if path == "rotation":
        v = _unit_rotations(v)
    return np.array(times, np.float32), v.astype(np.float32), counts, lost


def _first(r: list[float]) -> float:
    return r[0]


@dataclass
class _Group:
    """Channels of one width: their keys concatenated (rotations in one hemisphere key to
    key, so interpolation takes the short way)."""

    index: list[int]  # positions in the channel list
    times: F64
    values: F64
    starts: I64
    ends: I64
    seg: I64
    rotation: bool


def _group_small(index: list[int], t: F64, v: F64, lens: list[int], rotation: bool) -> _Group:
    """:meth:`Clipper._group` of a few keys: the segment bookkeeping in Python, the dot
    products by the same numpy call (the hemisphere flips are exact negations)."""
    starts: list[int] = []
    seg: list[int] = []
    at = 0
    for c, n in enumerate(lens):
        starts.append(at)
        seg += [c] * n
        at += n
    if rotation and len(v) > 1:
        d = np.sum(v[1:] * v[:-1], axis=1).tolist()
        sign = [1.0] * len(v)
        for k in range(1, len(v)):
            # Per channel: each key's sign flips the next ones' while its dot is negative.
            sign[k] = (sign[k - 1] if seg[k] == seg[k - 1] else 1.0) * (
                -1.0 if d[k - 1] < 0 and seg[k] == seg[k - 1] else 1.0)
        v = v * np.array(sign)[:, None]
    st = np.array(starts, np.int64)
    return _Group(index, t, v, st, st + np.array(lens, np.int64), np.array(seg, np.int64),
                  rotation)


class Clipper:
    """Cuts motions (frame ranges) out of a file's channels."""

    def __init__(self, channels: Sequence[Channel]) -> None:
        self.channels = list(channels)
        self.groups: list[_Group] = []
        for rotation in (False, True):
            index = [i for i, c in enumerate(self.channels) if (c.path == "rotation") == rotation]
            if index:
                self.groups.append(self._group(index, rotation))

    def _group(self, index: list[int], rotation: bool) -> _Group:
        chs = [self.channels[i] for i in index]
        lens = [len(c.times) for c in chs]
        t = np.concatenate([c.times for c in chs]).astype(np.float64)
        v = np.concatenate([c.values for c in chs]).astype(np.float64)
        if len(v) <= _SMALL_CUT:
            return _group_small(index, t, v, lens, rotation)
        starts, seg = _segments(lens)
        if rotation and len(v) > 1:
            # Per channel: v * cumprod(sign of each key's dot with the one before), the
            # product of signs being the parity of the negative dots so far.
            d = np.sum(v[1:] * v[:-1], axis=1)
            neg = np.zeros(len(v), np.int64)
            neg[1:] = (d < 0) & (seg[1:] == seg[:-1])
            cnt = np.cumsum(neg)
            flips = cnt - cnt[starts][seg]
            v = v * np.where(flips % 2 == 1, -1.0, 1.0)[:, None]
        ends = starts + np.asarray(lens, np.int64)
        return _Group(index, t, v, starts, ends, seg, rotation)

    def cut(self, bounds: Sequence[tuple[float, float]]) -> list[list[Channel]]:
        """For each (t0, t1): each channel's part in [t0, t1], boundary values interpolated,
        times from t0. All motions of a group are cut at once (in chunks of a bounded number
        of keys: each motion works on its own copy of the keys)."""
        out: list[list[Channel | None]] = [[None] * len(self.channels) for _ in bounds]
        for g in self.groups:
            small = (self._cut_group_small(g, bounds)
                     if len(g.times) * len(bounds) <= _SMALL_CUT else None)
            if small is not None:
                for m, chans in enumerate(small):
                    for i, ch in zip(g.index, chans, strict=True):
                        out[m][i] = ch
                continue
            step = max(1, _CUT_ROWS // max(1, len(g.times)))
            for c0 in range(0, len(bounds), step):
                for m, chans in enumerate(self._cut_group(g, bounds[c0:c0 + step]), c0):
                    for i, ch in zip(g.index, chans, strict=True):
                        out[m][i] = ch
        return [[c for c in o if c is not None] for o in out]

    def _cut_group(self, g: _Group, bounds: Sequence[tuple[float, float]]
                   ) -> list[list[Channel]]:
        """:meth:`cut` of one group for a few motions: the keys repeated once per motion,
        segment ``m * nch + c`` being channel ``c`` in motion ``m``."""
        nm, nk, nch = len(bounds), len(g.times), len(g.index)
        t0s = np.array([b[0] for b in bounds], np.float64)
        t1s = np.array([b[1] for b in bounds], np.float64)
        x0, x1 = np.repeat(t0s, nk), np.repeat(t1s, nk)  # per key row
        # Key times are float32 seconds and the bounds whole frames: a key within a tenth of
        # a millisecond of a bound is that bound's key.
        t = np.tile(g.times, nm)
        t = np.where(np.abs(t - x0) < 1e-4, x0, np.where(np.abs(t - x1) < 1e-4, x1, t))
        v = np.tile(g.values, (nm, 1))
        shift = (np.arange(nm, dtype=np.int64) * nk)[:, None]
        starts = (shift + g.starts).reshape(-1)
        ends = (shift + g.ends).reshape(-1)
        segrow = ((np.arange(nm, dtype=np.int64) * nch)[:, None] + g.seg).reshape(-1)
        s0, s1 = np.repeat(t0s, nch), np.repeat(t1s, nch)  # per segment
        two = s1 > s0  # else the clip is the one key at t0
        first = _interp_at(t, v, starts, ends, x0, s0)
        last = _interp_at(t, v, starts, ends, x1, s1)[two]
        ins = np.flatnonzero((t > x0) & (t < x1))
        nseg = nm * nch
        nin = np.bincount(segrow[ins], minlength=nseg)
        size = np.where(two, nin + 2, 1)
        ostart = np.zeros(nseg, np.int64)
        np.cumsum(size[:-1], out=ostart[1:])
        total = int(ostart[-1] + size[-1])
        times = np.empty(total)
        vals = np.empty((total, v.shape[1]))
        times[ostart], vals[ostart] = s0, first
        end = (ostart + size - 1)[two]
        times[end], vals[end] = s1[two], last
        instart = np.zeros(nseg, np.int64)
        np.cumsum(nin[:-1], out=instart[1:])
        seg = segrow[ins]
        at = ostart[seg] + 1 + (np.arange(len(ins)) - instart[seg])
        times[at] = t[ins]
        vals[at] = v[ins]
        if g.rotation:
            vals /= np.maximum(np.linalg.norm(vals, axis=1, keepdims=True), 1e-12)
        t32 = (times - np.repeat(s0, size)).astype(np.float32)
        v32 = vals.astype(np.float32)
        res: list[list[Channel]] = []
        spans = list(zip(ostart.tolist(), size.tolist(), strict=True))
        for m in range(nm):
            row: list[Channel] = []
            for i, (s, n) in zip(g.index, spans[m * nch:(m + 1) * nch], strict=True):
                ch = self.channels[i]
                row.append(Channel(ch.node, ch.path, t32[s:s + n], v32[s:s + n]))
            res.append(row)
        return res


    def _cut_group_small(self, g: _Group, bounds: Sequence[tuple[float, float]]
                         ) -> list[list[Channel]] | None:
        """:meth:`_cut_group` of a few keys, channel by channel as Python floats: the same
        rows in the same order, each value by the same operations (so the same bits; the
        quaternion lengths by the same numpy call on the same array). None (the numpy way
        decides) for what it does not cover: an empty channel, two equal key times."""
        tk, vk = g.times.tolist(), g.values.tolist()
        spans = list(zip(g.starts.tolist(), g.ends.tolist(), strict=True))
        if any(a >= e for a, e in spans):
            return None
        times: list[float] = []
        vals: list[list[float]] = []
        rows: list[tuple[int, int]] = []
        for b in bounds:
            x0, x1 = float(b[0]), float(b[1])
            # Key times within a tenth of a millisecond of a bound are that bound.
            tt = [x0 if -1e-4 < t - x0 < 1e-4 else (x1 if -1e-4 < t - x1 < 1e-4 else t)
                  for t in tk]
            two = x1 > x0
            for a, e in spans:
                s = len(times)
                times.append(x0 - x0)
                vals.append(vk[a])  # the value at x0, set below
                n0 = n1 = 0  # keys at or before x0, x1
                for k in range(a, e):
                    t = tt[k]
                    if t <= x0:
                        n0 += 1
                    if t <= x1:
                        n1 += 1
                    if two and x0 < t < x1:
                        times.append(t - x0)
                        vals.append(vk[k])
                first = _interp_small(tt, vk, a, e, x0, n0)
                if first is None:
                    return None
                vals[s] = first
                if two:
                    last = _interp_small(tt, vk, a, e, x1, n1)
                    if last is None:
                        return None
                    times.append(x1 - x0)
                    vals.append(last)
                rows.append((s, len(times) - s))
        v = _rows_array(vals, g.values.shape[1])
        if g.rotation:
            v /= np.maximum(_norms(v)[:, None], 1e-12)
        t32 = np.array(times, np.float64).astype(np.float32)
        v32 = v.astype(np.float32)
        nch = len(spans)
        res: list[list[Channel]] = []
        for m in range(len(bounds)):
            row: list[Channel] = []
            for i, (s, n) in zip(g.index, rows[m * nch:(m + 1) * nch], strict=True):
                ch = self.channels[i]
                row.append(Channel(ch.node, ch.path, t32[s:s + n], v32[s:s + n]))
            res.append(row)
        return res


def _interp_small(t: list[float], v: list[list[float]], a: int, e: int, x: float,
                  count: int) -> list[float] | None:
    """:func:`_interp_at` of one segment (rows ``a:e``, ``count`` of them at or before
    ``x``) as Python floats; None for two equal key times around ``x`` (numpy's division by
    zero is left to the numpy way)."""
    j = a + max(count - 1, 0)
    tj = t[j]
    if count == 0 or a + count >= e or tj == x:
        return v[j]
    dt = t[j + 1] - tj
    if dt == 0:
        return None
    v0, v1 = v[j], v[j + 1]
    dx = x - tj
    out = []
    for c in range(len(v0)):
        slope = (v1[c] - v0[c]) / dt
        r = slope * dx + v0[c]
        if r != r:  # NaN: from the right end; equal ends give their value
            r = slope * (x - t[j + 1]) + v1[c]
            if r != r and v0[c] == v1[c]:
                r = v0[c]
        out.append(r)
    return out


# Keys (times the motions cut at once) per chunk of :meth:`Clipper.cut`.
_CUT_ROWS = 1 << 20


def _interp_at(t: F64, v: F64, starts: I64, ends: I64, xrow: F64, x: F64) -> F64:
    """``np.interp(x[s], t[a:b], v[a:b, c])`` for every segment ``s`` (rows ``a:b``) and
    column ``c`` (``xrow``: each row's segment's ``x``), by numpy's own rule: ``j`` the last
    key with ``t[j] <= x``; before the first key its value, at or past the last key the last
    value, on a key that key's value, else ``slope * (x - t[j]) + v[j]`` (and, when that is
    NaN, from the right end; equal ends give their value)."""
    le = np.zeros(len(t) + 1, np.int64)
    np.cumsum(t <= xrow, out=le[1:])
    count = le[ends] - le[starts]
    j = starts + np.maximum(count - 1, 0)
    out: F64 = v[j].copy()
    mid = np.flatnonzero((count > 0) & (starts + count < ends))
    if len(mid):
        jm = j[mid]
        tj = t[jm]
        xm = x[mid]
        between = tj != xm
        jm, tj, xm = jm[between], tj[between], xm[between]
        mid = mid[between]
        if len(mid):
            slope = (v[jm + 1] - v[jm]) / (t[jm + 1] - tj)[:, None]
            res = slope * (xm - tj)[:, None] + v[jm]
            nan = np.isnan(res)
            if nan.any():
                right = slope * (xm - t[jm + 1])[:, None] + v[jm + 1]
                res = np.where(nan, right, res)
                same = np.isnan(res) & (v[jm] == v[jm + 1])
                res = np.where(same, v[jm], res)
            out[mid] = res
    return out


def _add_animations(scene: Scene, unit: Unit, sk: Skeleton | None, ctx: Context) -> None:
    anim = unit.doc.anim
    if anim is None or sk is None:
        if anim is not None and anim.tracks:
            ctx.note("pet.anim_no_bones", f"{unit.stem}: ANIM without bones is left out")
        return
    bs = unit.doc.bones
    names = decode_names(bs.names) if bs is not None and sk.unit is not unit else []
    stem = unit.stem
    flags: dict[str, list[list[float]]] = {}
    skipped = 0
    matched: list[tuple[Any, int, str]] = []
    for i, tr in enumerate(anim.tracks):
        j: int | None
        if sk.unit is unit:
            j = tr.bone if 0 <= tr.bone < len(sk.nodes) else None
        else:
            j = sk.find(names[tr.bone]) if 0 <= tr.bone < len(names) else None
        if j is None:
            skipped += 1
            continue
        matched.append((tr, sk.nodes[j], f"{stem} track {i}"))
        if tr.flags is not None and len(tr.flags):
            flags[sk.names[j]] = np.asarray(tr.flags, np.float64).tolist()
    channels = track_channels([m[0] for m in matched], [m[1] for m in matched],
                              [m[2] for m in matched], ctx)
    if skipped:
        ctx.note("pet.anim_track_unmatched", f"{stem}: {skipped} track(s) name no bone")
    moti = unit.doc.get(b"MOTI")
    base = {"pet_source": stem}
    if flags:
        base["pet_flags"] = flags  # type: ignore[assignment]
    if isinstance(moti, MotiSection) and moti.motions:
        clips = Clipper(channels).cut([
            (mo.frame_start / FPS, max(mo.frame_start, mo.frame_end) / FPS)
            for mo in moti.motions])
        for mo, clip in zip(moti.motions, clips, strict=True):
            extras: dict[str, Any] = {"pet_motion": {
                "name": text_value(mo.name), "frame_start": mo.frame_start,
                "frame_end": mo.frame_end, "next_move": text_value(mo.next_move),
                "connection_method": text_value(mo.connection_method),
                "connection_time": float(mo.connection_time),
                "root_bone": text_value(mo.root_bone)}, **base}
            scene.animations.append(Animation(name=mo.name.decode("cp949", "replace"),
                                              channels=clip, extras=extras))
    elif channels:
        scene.animations.append(Animation(name=stem, channels=channels, extras=base))


def _add_boxes(scene: Scene, coll: CollSection, sk: Skeleton | None) -> None:
    for i, b in enumerate(coll.boxes):
        box = [_nan_to_num(x) for x in np.asarray(b.box, np.float64).tolist()]
        lo, hi = box[:3], box[3:]
        gl_lo = [lo[0], lo[1], -hi[2]]
        gl_hi = [hi[0], hi[1], -lo[2]]
        bone = b.bone_name.decode("cp949", "replace")
        parent = sk.find(bone) if sk is not None else None
        node = Node(name=b.box_name.decode("cp949", "replace") or f"coll{i}", extras={
            "pet_coll": {"shape": b.shape, "show": b.show, "box_name": text_value(b.box_name),
                         "bone_name": text_value(b.bone_name),
                         "option1": text_value(b.option1), "option2": text_value(b.option2),
                         "box_raw": np.asarray(b.box, "<f4").tobytes().hex(),
                         "min": [float(x) for x in gl_lo], "max": [float(x) for x in gl_hi]}})
        scene.add_node(node, sk.nodes[parent] if sk is not None and parent is not None else None)


_MAX64 = float(np.finfo(np.float64).max)


def _nan_to_num(x: float) -> float:
    """``np.nan_to_num`` of one float64 (NaN 0, infinities the largest finite values)."""
    if x != x:
        return 0.0
    if x in (math.inf, -math.inf):
        return _MAX64 if x > 0 else -_MAX64
    return x


def load(data: bytes, ctx: Context) -> Scene:
    """One file, or a character: the main file plus the parts given with ``with`` or found
    with ``character``."""
    doc = read(data, ctx)
    units: list[Unit] = []
    for p in part_paths(ctx):
        try:
            raw = read_regular(p)
        except OSError as e:
            msg = f"cannot read character part {p.name} ({e.strerror})"
            raise FormatError(FMT, msg, path=str(p)) from None
        try:
            units.append(Unit(read(raw, Context(p, {}, ctx.notes)), p))
        except FormatError as e:
            raise e.with_path(str(p)) from None
    return build_scene(Unit(doc, ctx.path), units, ctx)
