"""A PET skeleton to the scene: bone rest matrices mirrored into glTF's frame, their
world matrices, the bone nodes (TRS where the matrix allows), and the file units the
character's parts and motions come from."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene import Node, Scene
from ...scene.math import matrices_to_trs, trs_to_matrices
from ...scene.skinning import safe_inverse
from .corners import finite32
from .document import BoneSection, PetDocument

F64 = npt.NDArray[np.float64]
S4 = np.diag([1.0, 1.0, -1.0, 1.0])


def mirror_z(m: F64) -> F64:
    """``S4 @ m @ S4`` of an (N, 4, 4) stack (z mirrored both sides)."""
    return np.asarray(S4 @ np.asarray(m, np.float64) @ S4)


def inverse_binds32(world: F64) -> npt.NDArray[np.float32]:
    """The skin's inverse bind matrices: the mirrored world matrices inverted (the identity
    where one is not invertible), as finite float32."""
    return finite32(safe_inverse(mirror_z(world)))


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


def bone_rows(m: F64) -> F64:
    """The inverse of :func:`bone_locals`: (B, 12) rows from column-form 4x4 matrices."""
    rows = np.concatenate([np.transpose(m[:, :3, :3], (0, 2, 1)), m[:, None, :3, 3]], axis=1)
    return rows.reshape(len(m), 12)


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


def bone_worlds(local: F64, par: list[int], order: list[int]) -> F64:
    """World matrices: ``world[i] = world[parent] @ local[i]``, bone by bone in ``order``
    (parents first), each product written in place (np.dot: np.matmul's BLAS product at a
    smaller call cost)."""
    world = local.copy()
    rows, lrows = list(world), list(local)
    dot = np.dot
    for i in order:
        p = par[i]
        if p >= 0:
            dot(rows[p], lrows[i], out=rows[i])
    return world


def decode_names(raw: Sequence[bytes]) -> list[str]:
    """Bone names as text (CP949, bad bytes replaced)."""
    return [b.decode("cp949", errors="replace") for b in raw]


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

    def find(self, name: str) -> int | None:
        """The first bone named ``name``, else the first whose name matches ignoring case."""
        if self._exact is None:
            self._exact = {}
            for i, n in enumerate(self.names):
                self._exact.setdefault(n, i)
                self._lower.setdefault(n.lower(), i)
        hit = self._exact.get(name)
        return hit if hit is not None else self._lower.get(name.lower())


def make_skeleton(unit: Unit, ctx: Context) -> Skeleton | None:
    bs = unit.doc.bones
    if bs is None:
        return None
    names = decode_names(bs.names)
    order, par, cut = bone_tree(bs.parents, bs.count)
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
    gl = mirror_z(np.asarray(sk.local, np.float64).reshape(-1, 4, 4))
    tl, rl, sl, exact = _bone_trs(gl)
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
