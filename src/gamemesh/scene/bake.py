"""Skinned motion baked into vertex positions, for formats that animate vertices but have no
skin (PBA's animated meshes): the mesh posed by a clip at given times, by linear blend skinning
as glTF defines it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .math import trs_to_matrices
from .model import Animation, Scene
from .sampling import sample_channel

__all__ = ["clip_key_times", "moves_skin", "skinned_positions"]

F64 = npt.NDArray[np.float64]
_TRS = ("translation", "rotation", "scale")


def moves_skin(scene: Scene, node: int, anim: Animation) -> bool:
    """Whether ``anim`` moves a joint of ``node``'s skin (or a joint's ancestor)."""
    skin = scene.nodes[node].skin
    if skin is None or not 0 <= skin < len(scene.skins):
        return False
    parents = scene.parents()
    moved = {c.node for c in anim.channels if c.path in _TRS}
    for j in scene.skins[skin].joints:
        p: int | None = j
        while p is not None:
            if p in moved:
                return True
            p = parents[p]
    return False


def clip_key_times(anim: Animation) -> F64:
    """Every key time of the clip's transform channels, sorted, once each."""
    times = [np.asarray(c.times, dtype=np.float64) for c in anim.channels if c.path in _TRS]
    return np.unique(np.concatenate(times)) if times else np.zeros(0)


def _worlds(scene: Scene, anim: Animation, times: F64) -> F64:
    """(K, nodes, 4, 4) world matrices of every node at each time."""
    k, nodes = len(times), scene.nodes
    trs = {"translation": np.array([n.translation for n in nodes], np.float64).reshape(-1, 3),
           "rotation": np.array([n.rotation for n in nodes], np.float64).reshape(-1, 4),
           "scale": np.array([n.scale for n in nodes], np.float64).reshape(-1, 3)}
    at = {p: np.repeat(v[None], k, axis=0) for p, v in trs.items()}
    for c in anim.channels:
        if c.path in _TRS and 0 <= c.node < len(nodes) and len(c.times):
            at[c.path][:, c.node] = sample_channel(c, times)
    local = trs_to_matrices(at["translation"].reshape(-1, 3), at["rotation"].reshape(-1, 4),
                            at["scale"].reshape(-1, 3)).reshape(k, len(nodes), 4, 4)
    for i, n in enumerate(nodes):
        if n.matrix is not None:
            local[:, i] = np.asarray(n.matrix, dtype=np.float64)
    world = np.empty_like(local)
    parents = scene.parents()
    for i in scene.walk():  # per node, all times at once
        p = parents[i]
        world[:, i] = local[:, i] if p is None else world[:, p] @ local[:, i]
    return world


def skinned_positions(scene: Scene, node: int, anim: Animation, times: F64) -> F64:
    """(K, N, 3) positions of ``node``'s skinned mesh (its primitives' vertices in order)
    posed by ``anim`` at ``times``. glTF places a skinned mesh by its joints alone, so the
    result is in the joints' (scene) space."""
    n = scene.nodes[node]
    assert n.skin is not None and n.mesh is not None
    skin = scene.skins[n.skin]
    world = _worlds(scene, anim, times)
    ibm = (np.asarray(skin.inverse_bind_matrices, dtype=np.float64)
           if skin.inverse_bind_matrices is not None
           else np.tile(np.eye(4), (len(skin.joints), 1, 1)))
    mats = world[:, skin.joints] @ ibm[None]  # (K, J, 4, 4)
    out = []
    for prim in scene.meshes[n.mesh].primitives:
        pos = np.asarray(prim.positions, dtype=np.float64)
        if prim.joints is None or prim.weights is None:
            out.append(np.repeat(pos[None], len(times), axis=0))
            continue
        joints = np.asarray(prim.joints, dtype=np.int64)
        weights = np.asarray(prim.weights, dtype=np.float64)
        posed = np.zeros((len(times), len(pos), 3))
        for col in range(joints.shape[1]):  # per influence slot (4 or 8), every vertex at once
            m = mats[:, joints[:, col]]  # (K, N, 4, 4)
            moved = np.einsum("knab,nb->kna", m[..., :3, :3], pos) + m[..., :3, 3]
            posed += weights[None, :, col, None] * moved
        out.append(posed)
    return np.concatenate(out, axis=1) if out else np.zeros((len(times), 0, 3))
