"""A PET skeleton to the scene: bone rest matrices mirrored into glTF's frame, their
world matrices, the bone nodes (TRS where the matrix allows), and the file units the
character's parts and motions come from."""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene import (
    Node,
    Scene,
)
from ...scene.math import (
    matrices_to_trs,
    matrix_to_quat_floats,
    quat_to_matrix_floats,
    trs_to_matrices,
)
from ...scene.skinning import safe_inverse
from .corners import _finite32
from .document import BoneSection, PetDocument

F64 = npt.NDArray[np.float64]
S4 = np.diag([1.0, 1.0, -1.0, 1.0])
# S4's sign on each element of S4 @ m @ S4.
_MIRROR_SIGNS = np.outer(np.diag(S4), np.diag(S4))


def mirror_z(m: F64) -> F64:
    """``S4 @ m @ S4`` of an (N, 4, 4) stack (z mirrored both sides). Of finite matrices it is
    each element times its sign, exactly: the products' other terms are zeros, which in the
    BLAS sums leave a zero result +0.0 (+ 0.0 makes a -0.0 so). Others by the products
    themselves (an infinity there spreads NaN to its row and column)."""
    a = np.asarray(m, np.float64)
    if a.ndim == 3 and a.shape[1:] == (4, 4) and np.isfinite(a).all():
        out: F64 = a * _MIRROR_SIGNS + 0.0
        return out
    return np.asarray(S4 @ a @ S4)


def inverse_binds(world: F64) -> F64:
    """``safe_inverse(mirror_z(world))``, each run of equal matrices (bones sharing a world,
    as a chain of identity bones does) inverted once: a matrix's inverse (or identity, when
    it is not invertible) depends on that matrix only."""
    gl = mirror_z(world)
    runs = _equal_runs(gl)
    if runs is None:
        return safe_inverse(gl)
    new, run = runs
    inverse: F64 = safe_inverse(gl[new])[run]
    return inverse


def inverse_binds32(world: F64) -> npt.NDArray[np.float32]:
    """``_finite32(inverse_binds(world))`` (the skin's inverse bind matrices), each run of
    equal world matrices mirrored, inverted and made finite float32 once, then repeated:
    all three are matrix by matrix (:func:`mirror_z`'s two ways agree on finite matrices,
    ``_finite32``'s on values in its range), so a run's first matrix gives the run's bits."""
    w = np.asarray(world, np.float64)
    runs = _equal_runs(w)
    if runs is None:
        return _finite32(safe_inverse(mirror_z(w)))
    new, run = runs
    out: npt.NDArray[np.float32] = _finite32(safe_inverse(mirror_z(w[new])))[run]
    return out


def _equal_runs(m: F64) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.intp]] | None:
    """For a stack of at least ``_COPY_BONES`` 4x4 matrices with runs of bitwise equal
    neighbours: which matrices start a run, and each matrix's run. None otherwise (then
    there is nothing to share)."""
    n = len(m)
    if n < _COPY_BONES or m.ndim != 3 or m.shape[1:] != (4, 4):
        return None
    bits = np.ascontiguousarray(m).reshape(n, 16).view(np.uint64)
    new = np.ones(n, np.bool_)
    new[1:] = (bits[1:] != bits[:-1]).any(axis=1)
    if new.all():
        return None
    return new, np.cumsum(new) - 1


@dataclass
class Unit:
    """One loaded file of a character (or the only file)."""

    doc: PetDocument
    path: Path | None = None

    @property
    def stem(self) -> str:
        return self.path.stem if self.path is not None else self.doc.kind


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
    if len(parents) == n and all(map(operator.lt, parents, range(n))) and (
            not n or min(parents) >= -1):
        # Every link a bone before it, or -1: nothing to cut (two passes in C).
        return list(range(n)), list(parents), 0
    par = [p if 0 <= p < n and p != i else -1 for i, p in enumerate(parents)]
    if all(map(operator.lt, par, range(n))):
        # Links cut: those that changed (none when the lists are equal).
        cut = 0 if par == parents else sum(1 for i, p in enumerate(parents) if p >= 0 > par[i])
        return list(range(n)), par, cut
    return bone_tree(parents, n)


def bone_worlds(local: F64, par: list[int], order: list[int],
                eye: npt.NDArray[np.bool_] | None = None) -> F64:
    """World matrices: ``world[i] = world[parent] @ local[i]``, one batched product per tree
    level (the same products as bone by bone: a deep chain is still walked bone by bone).
    ``eye``: :func:`identity_rows` of ``local`` when known."""
    world = local.copy()
    n = len(par)
    dl: list[int] | None = None
    if n <= _SMALL_BONES:
        # Parents come first in ``order``: each depth from its parent's, one step a bone (the
        # array only for the batches: a chain needs just the deepest level).
        dl = [0] * n
        levels = 0
        for i in order:
            p = par[i]
            if p >= 0:
                d = dl[i] = dl[p] + 1
                if d > levels:
                    levels = d
    else:
        depth = _depths(np.asarray(par, np.int64))
        levels = int(depth.max()) if n else 0
    if levels == 0:  # roots only
        return world
    if 2 * levels > n:
        return _chain_worlds(world, local, par, order, eye)
    if dl is not None:
        depth = np.array(dl, np.int64)
    parent = np.asarray(par, np.int64)
    by_depth = np.argsort(depth, kind="stable")
    cuts = np.searchsorted(depth[by_depth], np.arange(1, levels + 2))
    for d in range(levels):  # per level
        idx = by_depth[cuts[d]:cuts[d + 1]]
        world[idx] = world[parent[idx]] @ local[idx]
    return world


def _chain_worlds(world: F64, local: F64, par: list[int], order: list[int],
                  eye: npt.NDArray[np.bool_] | None = None) -> F64:
    """:func:`bone_worlds` bone by bone (a chain). A bone whose local matrix is exactly the
    identity under a bone whose local matrix is too (and has a parent) has its parent's
    world, taken for all of them after the products: the product by the identity gives a
    finite matrix back but for the signs of some zeros (a nonzero plus zeros is that
    nonzero; a sum of zeros is -0.0 only when all of them are), and a second product changes
    none of those (the first keeps the signs of a row's elements). When a world so taken is
    not finite, every product is made. For a few bones the products cost less than that."""
    n = len(par)
    if n < _COPY_BONES or local.dtype != np.float64 or not local.flags.c_contiguous:
        return _chain_products(world, local, par, order)
    if eye is None:
        eye = identity_rows(local)
    parent = np.asarray(par, np.int64)
    # An identity with a parent: its world is a product by the identity.
    applied = eye & (parent >= 0)
    copy = applied & applied[np.maximum(parent, 0)]  # (applied has a parent)
    if not copy.any():
        return _chain_products(world, local, par, order)
    idx = np.arange(n)
    if (parent < idx).all() and (parent[copy] == idx[copy] - 1).all():
        # Ids in order have parents first and each copy follows its parent: a copy's
        # source is the last bone before it that is not a copy (a numpy pass, no walk).
        return _chain_copies(world, local, par, copy, idx)
    dot = np.dot
    # Each copy's source: its nearest ancestor that is not a copy (parents come first).
    # Views of the rows only for the products (a view costs about what a product does).
    src = list(range(n))
    took: list[int] = []
    for i, one in zip(order, copy[order].tolist(), strict=True):
        p = par[i]
        if one:
            src[i] = src[p]
            took.append(i)
        elif p >= 0:
            dot(world[src[p]], local[i], out=world[i])
    got = world[[src[i] for i in took]]
    if not np.isfinite(got).all():
        return _chain_products(local.copy(), local, par, order)
    world[took] = got
    return world


def _chain_copies(world: F64, local: F64, par: list[int], copy: npt.NDArray[np.bool_],
                  idx: npt.NDArray[np.int64]) -> F64:
    """:func:`_chain_worlds` when the ids are an order with parents first and each copy's
    parent is the bone before it: the sources by one running maximum, the products of the
    other bones with a parent in id order (each parent's world, or its source's, made
    before it), then the copies taken at once."""
    src = np.maximum.accumulate(np.where(copy, 0, idx))
    srcl = src.tolist()
    dot = np.dot
    for i in np.flatnonzero(~copy).tolist():
        p = par[i]
        if p >= 0:
            dot(world[srcl[p]], local[i], out=world[i])
    got = world[src[copy]]
    if not np.isfinite(got).all():
        return _chain_products(local.copy(), local, par, idx.tolist())
    world[copy] = got
    return world


def identity_rows(m: F64) -> npt.NDArray[np.bool_]:
    """Which matrices of an (N, 4, 4) float64 stack are exactly (bit for bit) the identity."""
    n = len(m)
    eye: npt.NDArray[np.bool_] = (np.ascontiguousarray(m).reshape(n, 16).view(np.uint64)
                                  == _EYE_BITS).all(axis=1)
    return eye


# From this many bones, :func:`_chain_worlds` looks for identities to copy.
_COPY_BONES = 32


def _chain_products(world: F64, local: F64, par: list[int], order: list[int]) -> F64:
    """Each bone's world (``world`` holding the local matrices) as its parent's times its
    local matrix, bone by bone: views of the rows made once, each product written in place.
    np.dot: the same BLAS product as np.matmul (the same bits) at a smaller call cost."""
    rows, lrows = list(world), list(local)
    dot = np.dot
    for i in order:
        p = par[i]
        if p >= 0:
            dot(rows[p], lrows[i], out=rows[i])
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
    # :func:`identity_rows` of ``local`` when known (made once for the worlds and the nodes).
    eye: npt.NDArray[np.bool_] | None = field(default=None, repr=False)
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
    # Known identities serve the worlds' copies (many bones); a few bones' nodes find theirs.
    eye = identity_rows(local) if len(local) >= _COPY_BONES else None
    return Skeleton(unit, names, par, local, bone_worlds(local, par, order, eye), eye=eye)


def add_skeleton_nodes(scene: Scene, sk: Skeleton, ctx: Context) -> None:
    bs = sk.unit.doc.bones
    assert bs is not None
    base = len(scene.nodes)
    sk.nodes = list(range(base, base + len(sk.names)))
    # All bones at once (a 300-bone skeleton converted one bone at a time took ~100 ms).
    gl = mirror_z(np.asarray(sk.local, np.float64).reshape(-1, 4, 4))
    # A bone whose local matrix is the identity has it mirrored too.
    eye = sk.eye if sk.eye is not None and len(sk.eye) == len(gl) else None
    tl, rl, sl, exact = _split_bones(gl, eye)
    extras = _bone_extras(bs)
    # Bone i is node base + i: its children's lists first, handed to the nodes.
    children: list[list[int]] = [[] for _ in sk.parents]
    roots: list[int] = []
    for i, p in enumerate(sk.parents, base):
        if p >= 0:
            children[p].append(i)
        else:
            roots.append(i)
    # Per bone: as translation, rotation, scale, or (shear) as its matrix. The Node fields
    # by position (name, translation, rotation, scale, matrix, mesh, skin, children, extras),
    # made by map (keywords cost twice the call, a loop's unpacking more; a test holds the
    # order); a sheared bone's node then takes its matrix and the default TRS.
    none = itertools.repeat(None)
    nodes = list(map(Node, sk.names, tl, rl, sl, none, none, none, children, extras))
    if not all(exact):
        for i in [i for i, ok in enumerate(exact) if not ok]:
            node = nodes[i]
            node.translation, node.rotation, node.scale = _T0, _R0, _S1
            node.matrix = gl[i].astype(np.float32)
    scene.nodes += nodes
    sheared = exact.count(False)
    if len(roots) > 1:
        # glTF wants the joints of a skin under one common root.
        scene.roots.append(len(scene.nodes))
        scene.nodes.append(Node(name=sk.unit.stem, children=roots, extras={"pet_root": True}))
    else:
        scene.roots += roots
    if sheared:
        ctx.note("pet.bone_shear", f"{sheared} bone matrices have shear: kept as node matrices")


# A sheared bone's (unused) TRS: the Node defaults.
_T0, _R0, _S1 = (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0)


def _bone_extras(bs: BoneSection) -> list[dict[str, Any]]:
    """Each bone node's extras: its id and (1.3) its float."""
    if bs.extra is None:
        return [{"pet_bone": i} for i in range(bs.count)]
    return [{"pet_bone": i, "pet_bone_extra": e} for i, e in enumerate(bs.extra.tolist())]


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


def _split_bones(gl: F64, eye: npt.NDArray[np.bool_] | None = None) -> _BoneTrs:
    """:func:`_bone_trs` of every bone (``gl`` changed as it changes it): a bone whose matrix
    is exactly the identity (every bone of an .apet, helper bones) has the identity's split,
    the Node defaults; the others are split by :func:`_bone_trs_few` or :func:`_bone_trs`
    (a bone's split depends on its matrix only, and the identity's split is the defaults).
    ``eye``: some of the bones that are the identity (all of them when None)."""
    n = len(gl)
    if eye is None:
        eye = identity_rows(gl)
    if not eye.any():
        return _split_some(gl)
    rest = np.flatnonzero(~eye)
    out: _BoneTrs = ([_T0] * n, [_R0] * n, [_S1] * n, [True] * n)
    if len(rest):
        sub = gl[rest]
        split = _split_some(sub)
        gl[rest] = sub  # the batch's identity for a non-finite matrix (its node uses it)
        for i, t, r, s, ok in zip(rest.tolist(), *split, strict=True):
            out[0][i], out[1][i], out[2][i], out[3][i] = t, r, s, ok
    return out


def _split_some(gl: F64) -> _BoneTrs:
    few = _bone_trs_few(gl) if len(gl) <= _FEW_BONES else None
    return few if few is not None else _bone_trs(gl)


# The identity's bits, row-major.
_EYE_BITS = np.eye(4).reshape(16).view(np.uint64)


def _tuples(a: F64) -> list[Any]:
    """The rows of ``a`` as tuples, zipped from its columns (no list made per row)."""
    return list(zip(*a.T.tolist(), strict=True))


def _bone_trs_few(gl: F64) -> _BoneTrs | None:
    """:func:`_bone_trs` of a few bones, one at a time in plain floats: the operations of
    ``matrices_to_trs`` and ``trs_to_matrices`` in the same order (their one-matrix quaternion
    paths give the batch's bits) and the batch's elementwise allclose test (the same IEEE
    operations on floats); a determinant's sign by cofactors while it is clearly away from
    zero, else from LAPACK as the batch has it. None (the batch decides) when a value is not
    finite."""
    out: _BoneTrs = ([], [], [], [])
    isfinite, sqrt = math.isfinite, math.sqrt
    for i, flat in enumerate(gl.reshape(len(gl), 16).tolist()):
        if not all(map(isfinite, flat)):
            return None
        m00, m01, m02, m03, m10, m11, m12, m13, m20, m21, m22, m23 = flat[:12]
        # Column lengths, summed row after row as numpy's reduction over the rows does.
        s0 = sqrt(m00 * m00 + m10 * m10 + m20 * m20)
        s1 = sqrt(m01 * m01 + m11 * m11 + m21 * m21)
        s2 = sqrt(m02 * m02 + m12 * m12 + m22 * m22)
        det = (m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20)
               + m02 * (m10 * m21 - m11 * m20))
        # The column lengths' product bounds |det|; both ways err by ~1e-15 of it.
        if not abs(det) > 1e-9 * (s0 * s1 * s2):
            det = float(np.linalg.det(gl[i, :3, :3]))
        if det < 0:
            s0 = -s0
        d0, d1, d2 = s0 if s0 != 0 else 1.0, s1 if s1 != 0 else 1.0, s2 if s2 != 0 else 1.0
        # matrix_to_quat's and quat_to_matrix's own one-matrix paths, on plain floats (their
        # array round trips cost more than the arithmetic).
        q = matrix_to_quat_floats([[m00 / d0, m01 / d1, m02 / d2], [m10 / d0, m11 / d1, m12 / d2],
                                   [m20 / d0, m21 / d1, m22 / d2]])
        if not (all(map(isfinite, q)) and isfinite(s0) and isfinite(s1) and isfinite(s2)):
            return None
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_to_matrix_floats(q)
        back = [r00 * s0, r01 * s1, r02 * s2, r10 * s0, r11 * s1, r12 * s2,
                r20 * s0, r21 * s1, r22 * s2]
        basis = [m00, m01, m02, m10, m11, m12, m20, m21, m22]
        if flat[12:] != _BOTTOM:  # else they are the back's: they pass, as the translation
            back += [m03, m13, m23, 0.0, 0.0, 0.0, 1.0]
            basis += [m03, m13, m23, *flat[12:]]
        # np.allclose(back, flat, atol=tol): |a - b| - 1e-5 |b| <= tol for every element.
        tol = 1e-4 * max(1.0, max(map(abs, flat)))
        out[3].append(all(abs(a - b) - 1e-5 * abs(b) <= tol
                          for a, b in zip(back, basis, strict=True)))
        out[0].append((m03, m13, m23))
        out[1].append(tuple(q))
        out[2].append((s0, s1, s2))
    return out


# The bottom row of an affine matrix.
_BOTTOM = [0.0, 0.0, 0.0, 1.0]


# -- the scene -------------------------------------------------------------------------------------
