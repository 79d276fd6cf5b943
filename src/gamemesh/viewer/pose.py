"""A scene posed at one moment of one clip: world-space triangles ready to draw.

The thumbnail renderer works on what this module returns: every triangle primitive of every
mesh node, skinned (linear blend skinning, as glTF and three.js do), morphed and moved to world
space. Rotation keys are blended with normalized lerp and CUBICSPLINE keys by their values only:
a thumbnail needs a plausible pose, not the exact curve.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..scene import Animation, Channel, Primitive, Scene
from ..scene.math import face_normals, local_matrix, trs_to_matrix

F64 = npt.NDArray[np.float64]

__all__ = ["PosedPrimitive", "find_clip", "pose_scene", "sample_channel"]


@dataclass
class PosedPrimitive:
    """One primitive in world space: positions (N,3), normals (N,3), triangles (T,3)."""

    positions: F64
    normals: F64
    triangles: npt.NDArray[np.int64]
    primitive: Primitive


def find_clip(scene: Scene, clip: str | int | None) -> Animation | None:
    """The clip by name or index; None asks for the rest pose."""
    if clip is None:
        return None
    if isinstance(clip, int) or (isinstance(clip, str) and clip.isdigit()
                                 and not any(a.name == clip for a in scene.animations)):
        i = int(clip)
        if 0 <= i < len(scene.animations):
            return scene.animations[i]
    for a in scene.animations:
        if a.name == clip:
            return a
    names = ", ".join(repr(a.name) for a in scene.animations) or "none"
    msg = f"no animation clip {clip!r} (clips: {names})"
    raise ValueError(msg)


def sample_channel(ch: Channel, t: float) -> F64:
    """The channel's value at time ``t`` (clamped to its keys)."""
    times = np.asarray(ch.times, dtype=np.float64)
    values = np.asarray(ch.values, dtype=np.float64)
    k = len(times)
    if ch.interpolation == "CUBICSPLINE":
        values = values.reshape(k, 3, -1)[:, 1]
    values = values.reshape(k, -1)
    if k == 1 or t <= times[0]:
        return np.asarray(values[0])
    if t >= times[-1]:
        return np.asarray(values[-1])
    i = int(np.searchsorted(times, t, side="right")) - 1
    if ch.interpolation == "STEP":
        return np.asarray(values[i])
    span = float(times[i + 1] - times[i])
    f = 0.0 if span <= 0 else (t - float(times[i])) / span
    a, b = np.asarray(values[i]), np.asarray(values[i + 1])
    if ch.path == "rotation":
        # Take the short way round, then renormalize (nlerp).
        if float(np.dot(a, b)) < 0:
            b = -b
        q = a * (1 - f) + b * f
        n = float(np.linalg.norm(q))
        return np.asarray(q / n) if n > 0 else a
    return np.asarray(a * (1 - f) + b * f)


def _local_matrices(scene: Scene, anim: Animation | None, t: float
                    ) -> tuple[list[F64], dict[int, F64]]:
    """Every node's local matrix with the clip's channels applied, and animated morph weights."""
    trs: dict[int, dict[str, F64]] = {}
    weights: dict[int, F64] = {}
    if anim is not None:
        for ch in anim.channels:
            if not 0 <= ch.node < len(scene.nodes) or len(ch.times) == 0:
                continue
            v = sample_channel(ch, t)
            if ch.path == "weights":
                weights[ch.node] = v
            else:
                trs.setdefault(ch.node, {})[ch.path] = v
    out: list[F64] = []
    for i, node in enumerate(scene.nodes):
        over = trs.get(i)
        if over is None or node.matrix is not None:
            out.append(local_matrix(node))
            continue
        out.append(trs_to_matrix(over.get("translation", node.translation),
                                 over.get("rotation", node.rotation),
                                 over.get("scale", node.scale)))
    return out, weights


def _world_matrices(scene: Scene, local: list[F64]) -> list[F64]:
    out = [np.eye(4) for _ in scene.nodes]
    parents = scene.parents()
    for i in scene.walk():  # iterative depth-first order: parents come first
        p = parents[i]
        out[i] = local[i] if p is None else out[p] @ local[i]
    return out


def _morph(prim: Primitive, w: F64 | None) -> tuple[F64, F64 | None]:
    pos = np.asarray(prim.positions, dtype=np.float64)
    nrm = None if prim.normals is None else np.asarray(prim.normals, dtype=np.float64)
    if w is None or not prim.targets:
        return pos, nrm
    pos = pos.copy()
    nrm = None if nrm is None else nrm.copy()
    for k, target in enumerate(prim.targets[: len(w)]):
        if w[k] == 0:
            continue
        if target.positions is not None and len(target.positions) == len(pos):
            pos += w[k] * np.asarray(target.positions, dtype=np.float64)
        if nrm is not None and target.normals is not None and len(target.normals) == len(nrm):
            nrm += w[k] * np.asarray(target.normals, dtype=np.float64)
    return pos, nrm


def _skin_matrices(scene: Scene, skin_index: int, world: list[F64]) -> F64 | None:
    skin = scene.skins[skin_index]
    joints = [j for j in skin.joints if 0 <= j < len(scene.nodes)]
    if len(joints) != len(skin.joints) or not joints:
        return None
    jw = np.stack([world[j] for j in joints])
    if skin.inverse_bind_matrices is None:
        return jw
    ibm = np.asarray(skin.inverse_bind_matrices, dtype=np.float64).reshape(-1, 4, 4)
    if len(ibm) != len(joints):
        return None
    return np.asarray(jw @ ibm)


def _blend(prim: Primitive, mats: F64) -> F64 | None:
    """(N, 4, 4) per-vertex skinning matrices, or None when the weights do not fit the skin."""
    if prim.joints is None or prim.weights is None:
        return None
    j = np.asarray(prim.joints, dtype=np.int64)
    w = np.asarray(prim.weights, dtype=np.float64)
    if j.shape != w.shape or len(j) != len(prim.positions) or j.size == 0:
        return None
    if j.max() >= len(mats):
        return None
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total > 0, w / np.where(total == 0, 1, total), 0)
    blended = np.einsum("nk,nkij->nij", w, mats[j])
    # Vertices with no weight at all stay where the bind pose put them.
    blended[total[:, 0] <= 0] = np.eye(4)
    return np.asarray(blended)


def pose_scene(scene: Scene, clip: str | int | None = None, time: float | None = None,
               exclude: Collection[int] = ()) -> list[PosedPrimitive]:
    """World-space triangles of every mesh node but ``exclude``, posed at ``time`` seconds
    into ``clip`` (the clip's start when time is None; the rest pose when clip is None and
    time is None, the first clip when only a time is given)."""
    anim = find_clip(scene, clip)
    if anim is None and time is not None and scene.animations:
        anim = scene.animations[0]
    t = (anim.start if anim is not None else 0.0) if time is None else float(time)
    local, morph_weights = _local_matrices(scene, anim, t)
    world = _world_matrices(scene, local)
    out: list[PosedPrimitive] = []
    for i in scene.walk():
        node = scene.nodes[i]
        if i in exclude or node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        mesh = scene.meshes[node.mesh]
        w = morph_weights.get(i)
        if w is None and mesh.weights:
            w = np.asarray(mesh.weights, dtype=np.float64)
        skin_mats = None
        if node.skin is not None and 0 <= node.skin < len(scene.skins):
            skin_mats = _skin_matrices(scene, node.skin, world)
        for prim in mesh.primitives:
            posed = _pose_primitive(prim, w, world[i], skin_mats)
            if posed is not None:
                out.append(posed)
    return out


def _pose_primitive(prim: Primitive, w: F64 | None, node_world: F64,
                    skin_mats: F64 | None) -> PosedPrimitive | None:
    if prim.mode != 4 or len(prim.positions) == 0:
        return None
    tris = prim.triangles().astype(np.int64)
    if len(tris) == 0 or tris.max() >= len(prim.positions):
        return None
    pos, nrm = _morph(prim, w)
    per_vertex = _blend(prim, skin_mats) if skin_mats is not None else None
    hom = np.concatenate([pos, np.ones((len(pos), 1))], axis=1)
    if per_vertex is not None:
        wpos = np.einsum("nij,nj->ni", per_vertex, hom)[:, :3]
        lin = per_vertex[:, :3, :3]
    else:
        wpos = hom @ node_world[:3].T
        lin = np.broadcast_to(node_world[:3, :3], (len(pos), 3, 3))
    if nrm is None or len(nrm) != len(pos):
        nrm = _smooth_normals(pos, tris)
    # Normals move with the inverse transpose of the linear part.
    wn = np.einsum("nij,nj->ni", _normal_matrices(np.asarray(lin)), nrm)
    wn /= np.maximum(np.linalg.norm(wn, axis=1, keepdims=True), 1e-20)
    return PosedPrimitive(np.asarray(wpos), np.asarray(wn), tris, prim)


def _smooth_normals(pos: F64, tris: npt.NDArray[np.int64]) -> F64:
    fn = face_normals(pos, tris)
    acc = np.zeros_like(pos)
    for k in range(3):
        np.add.at(acc, tris[:, k], fn)
    n = np.linalg.norm(acc, axis=1, keepdims=True)
    return np.where(n > 1e-20, acc / np.where(n == 0, 1, n), np.array([0.0, 1.0, 0.0]))


def _normal_matrices(lin: F64) -> F64:
    """Cofactor matrices (N,3,3): the inverse transpose up to a positive factor, defined even
    for singular matrices (a bone scaled to zero) where an inverse is not."""
    c0, c1, c2 = lin[:, :, 0], lin[:, :, 1], lin[:, :, 2]
    cof = np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=2)
    det = np.einsum("ni,ni->n", c0, np.cross(c1, c2))
    # A mirroring transform flips the cofactor's direction; undo it.
    return np.asarray(cof * np.where(det < 0, -1.0, 1.0)[:, None, None])
