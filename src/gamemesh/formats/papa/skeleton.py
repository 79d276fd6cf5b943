"""The skeleton a scene becomes in Papa, and its clips resampled onto that skeleton.

Bones are the skin joints plus every node a clip moves that is not a skinned mesh: a rigid part
animated without a skin (a turret, a door) becomes a bone, and from_scene binds its vertices
100 % to it, so the clip survives (PA animates bones only). Bone poses are relative to the
skeleton's model node (``base``): its world transform is the model's ``model2scene``.

Where a bone's parent node is its parent bone (or the model node), its TRS is taken straight
from the node through the axis swap, which is exact; only bones with nodes in between go through
matrices. Clips whose keys already sit on the output frame grid are copied, not resampled. Both
make glb -> papa -> glb -> papa give the first papa's bytes again.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...scene import Channel, Scene
from ...scene.math import local_matrix, matrices_to_trs, trs_to_matrices
from ...scene.sampling import sample_channel
from ...scene.skinning import safe_inverse
from . import layout as lay
from .document import NONE16, Animation, PapaDocument, Skeleton
from .to_scene import AXES, continuous_quats

F64 = npt.NDArray[np.float64]
MAX_BONES = 256
FPS = 60
MOVES = ("translation", "rotation", "scale")


def to_pa(v: npt.ArrayLike) -> F64:
    """glTF (x, y, z) -> PA (x, -z, y); on a quaternion's vector part it turns the axis."""
    a = np.asarray(v, dtype=np.float64)
    out = np.stack([a[..., 0], -a[..., 2], a[..., 1]], axis=-1)
    if a.shape[-1] == 4:
        out = np.concatenate([out, a[..., 3:4]], axis=-1)
    return out


def _renormalized(q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """What to_scene and the glTF writer make of a float32 quaternion: normalized in float64,
    rounded to float32."""
    a = q.astype(np.float64)
    n = np.linalg.norm(a, axis=-1, keepdims=True)
    return np.asarray(a / np.where(n > 1e-12, n, 1.0), dtype=np.float32)


def settled_quats(q: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Float32 quaternions that renormalizing leaves unchanged, so the next trip reads back
    these very bits. Rounding can make two neighbours swap into each other forever; a
    one-ulp nudge of one component finds a value that stays (vectorized over the keys)."""
    out = _renormalized(np.asarray(q, dtype=np.float32).reshape(-1, 4))
    moving = ~np.all(_renormalized(out) == out, axis=-1)
    for comp in range(4 * moving.any()):
        for toward in (np.inf, -np.inf):
            rows = np.flatnonzero(moving)
            cand = out[rows].copy()
            cand[:, comp] = np.nextafter(cand[:, comp], np.float32(toward))
            ok = np.all(_renormalized(cand) == cand, axis=-1)
            out[rows[ok]] = cand[ok]
            moving[rows[ok]] = False
    return out.reshape(np.shape(q))


def mat_to_pa(m: npt.ArrayLike) -> F64:
    """A glTF-space 4x4 to PA space (still a mathematical matrix)."""
    return np.asarray(AXES.T @ np.asarray(m, dtype=np.float64) @ AXES)


class Rig:
    """Bones (scene nodes in walk order), their parents, names, rest poses and clips."""

    def __init__(self, scene: Scene, ctx: Context, worlds: list[F64] | F64,
                 parents: list[int | None]) -> None:
        self.scene, self.ctx, self.worlds, self.parents = scene, ctx, worlds, parents
        self.joints = self._joint_order()
        self.bone_of = {n: i for i, n in enumerate(self.joints)}
        self.bone_parent = [self._bone_parent(n) for n in self.joints]
        self.bone_names = self._bone_names()
        self.base_node: int | None = None
        self.base = np.eye(4)

    def note(self, code: str, message: str, level: str = "warning",
             covers: tuple[str, ...] = ()) -> None:
        """``covers``: the scene properties (scene.loss.PROPERTIES) the note reports as lost,
        so the save path's generic check does not warn about them a second time."""
        self.ctx.note(f"papa.{code}", message, "info" if level == "info" else "warning", covers)

    def set_base(self, node: int | None) -> None:
        """The skeleton's model node: bone poses are relative to it."""
        self.base_node = node
        self.base = np.eye(4) if node is None else self.worlds[node]

    # -- which nodes are bones ---------------------------------------------------------------
    def _joint_order(self) -> list[int]:
        scene = self.scene
        joints: set[int] = set()
        for skin in scene.skins:
            joints.update(j for j in skin.joints if 0 <= j < len(scene.nodes))
        skinned = {i for i, n in enumerate(scene.nodes) if n.skin is not None}
        for anim in scene.animations:
            joints.update(c.node for c in anim.channels if c.path in MOVES
                          and 0 <= c.node < len(scene.nodes) and c.node not in skinned)
        order = [i for i in scene.walk() if i in joints]
        if len(order) > MAX_BONES:
            msg = "PA skeletons hold at most 256 bones"
            raise LimitError(lay.FMT, msg, field="skeleton.num_bones", expected=f"<= {MAX_BONES}",
                             actual=len(order))
        return order

    def _bone_parent(self, node: int) -> int:
        p = self.parents[node]
        while p is not None:
            if p in self.bone_of:
                return self.bone_of[p]
            p = self.parents[p]
        return -1

    def bone_above(self, node: int) -> int | None:
        """The bone of ``node`` or of its nearest ancestor that is a bone."""
        p: int | None = node
        while p is not None:
            if p in self.bone_of:
                return self.bone_of[p]
            p = self.parents[p]
        return None

    def _bone_names(self) -> list[str]:
        """PA binds animation tracks by bone name, so names must be unique."""
        out: list[str] = []
        seen: set[str] = set()
        renamed = 0
        for b, node in enumerate(self.joints):
            base = self.scene.nodes[node].name or f"bone{b}"
            name, k = base, 1
            while name in seen:
                k += 1
                name = f"{base}_{k}"
            renamed += name != base
            seen.add(name)
            out.append(name)
        if renamed:
            self.note("bone_renamed", f"{renamed} bones share a name; suffixed (_2, _3...) "
                      "because PA binds animation tracks by name")
        return out

    # -- rest pose ---------------------------------------------------------------------------
    def model_matrix(self, node: int) -> F64:
        """A node's world transform relative to the model node (glTF space)."""
        return np.asarray(safe_inverse(self.base) @ self.worlds[node])

    def _direct(self, b: int) -> bool:
        """Is bone b's parent node its parent bone (or, for a root, the model node)?"""
        p = self.bone_parent[b]
        above = self.parents[self.joints[b]]
        return above == (self.joints[p] if p >= 0 else self.base_node)

    def _prefix(self, b: int) -> F64:
        """What sits between bone b's parent bone (or the model node) and b's own node."""
        node = self.joints[b]
        above = self.parents[node]
        prefix = np.eye(4) if above is None else self.worlds[above]
        p = self.bone_parent[b]
        start = self.worlds[self.joints[p]] if p >= 0 else self.base
        return np.asarray(safe_inverse(start) @ prefix)

    def rest_trs(self) -> tuple[F64, F64, F64]:
        """PA-space local translation, rotation (xyzw) and scale of every bone."""
        n = len(self.joints)
        t, q, s = np.zeros((n, 3)), np.zeros((n, 4)), np.ones((n, 3))
        for b, node in enumerate(self.joints):
            nd = self.scene.nodes[node]
            if self._direct(b):
                t[b], q[b] = to_pa(nd.translation), to_pa(nd.rotation)
                s[b] = np.abs(to_pa(nd.scale))
                continue
            tb, qb, sb = matrices_to_trs(mat_to_pa(self._prefix(b) @ local_matrix(nd))[None])
            t[b], q[b], s[b] = tb[0], qb[0], sb[0]
        return t, q, s

    def _bind2bone(self) -> F64:
        """Each bone's inverse bind matrix (PA space): the skin's where it has one, else the
        inverse of the bone's rest pose in model space (papatran writes it for every bone)."""
        out = np.stack([safe_inverse(mat_to_pa(self.model_matrix(node)))
                        for node in self.joints]) if self.joints else np.zeros((0, 4, 4))
        seen: set[int] = set()
        conflict = False
        for skin in self.scene.skins:
            ibm = skin.inverse_bind_matrices
            for k, node in enumerate(skin.joints):
                if node not in self.bone_of:
                    continue
                m = np.eye(4) if ibm is None or k >= len(ibm) else np.asarray(ibm[k], np.float64)
                b = self.bone_of[node]
                if b in seen:
                    conflict |= not np.allclose(out[b], mat_to_pa(m), atol=1e-4)
                    continue
                seen.add(b)
                out[b] = mat_to_pa(m)
        if conflict:
            self.note("bind_pose_conflict", "skins disagree on a joint's inverse bind matrix; "
                      "the first skin's is kept")
        return out

    def skeleton(self, doc: PapaDocument) -> Skeleton:
        n = len(self.joints)
        bones = np.zeros(n, dtype=lay.BONE)
        t, q, s = self.rest_trs()
        bones["name"] = [doc.add_string(name) for name in self.bone_names]
        bones["parent"] = self.bone_parent
        bones["translation"] = t
        bones["rotation"] = settled_quats(q)
        ss = np.zeros((n, 3, 3))
        ss[:, [0, 1, 2], [0, 1, 2]] = s
        bones["shear_scale"] = ss.transpose(0, 2, 1).reshape(n, 9)
        bones["bind2bone"] = self._bind2bone().transpose(0, 2, 1).reshape(n, 16)
        return Skeleton(bones)

    # -- animations --------------------------------------------------------------------------
    def animation(self, doc: PapaDocument, k: int) -> Animation | None:
        anim = self.scene.animations[k]
        morph = [c for c in anim.channels if c.path == "weights"]
        if morph:
            self.note("morph_animation_dropped", f"clip {anim.name!r}: {len(morph)} morph "
                      "weight channels not written (Papa has no morph targets)",
                      covers=("channels",))
        moving = [c for c in anim.channels if c.node in self.bone_of and c.path in MOVES]
        if not moving:
            self.note("animation_unbound", f"clip {anim.name!r} moves no node; no animation "
                      "file written for it", covers=("clips",))
            return None
        num, den = _fps(anim.extras.get("fps"))
        start = anim.start
        if start > 0:
            self.note("clip_shifted", f"clip {anim.name!r} starts at {start:g} s; a Papa clip's "
                      "frame 0 is its first key", "info")
        frames = int(np.ceil((anim.duration - start) * num / den - 1e-4)) + 1
        times = start + np.arange(frames, dtype=np.float64) * den / num
        by_node: dict[int, list[Channel]] = {}
        for c in moving:
            by_node.setdefault(c.node, []).append(c)
        # A track per bone the clip moves, as the source had them (a Papa clip may name a
        # subset of the skeleton; the game holds the others at rest).
        tracked = [b for b, node in enumerate(self.joints) if node in by_node]
        tr = np.zeros((frames, len(tracked)), dtype=lay.TRANSFORM)
        rest = self.rest_trs()
        scaled = False
        for k, b in enumerate(tracked):
            t, q, s = self._track(b, by_node[self.joints[b]], times, rest)
            scaled |= bool(np.abs(s - s[:1]).max() > 1e-4) if len(s) else False
            tr["translation"][:, k] = t
            tr["rotation"][:, k] = settled_quats(continuous_quats(q))
        if scaled:
            self.note("animation_scale_dropped", f"clip {anim.name!r} animates scale; PA "
                      "animations have no scale channel", covers=("channels",))
        names = np.array([doc.add_string(self.bone_names[b]) for b in tracked], dtype="<u2")
        return Animation(NONE16, names, tr, num, den)

    def _track(self, b: int, channels: list[Channel], times: F64,
               rest: tuple[F64, F64, F64]) -> tuple[F64, F64, F64]:
        """(F, 3), (F, 4), (F, 3) PA-space local poses of bone b, relative to its parent."""
        f = len(times)
        if not channels:
            return (np.tile(rest[0][b], (f, 1)), np.tile(rest[1][b], (f, 1)),
                    np.tile(rest[2][b], (f, 1)))
        nd = self.scene.nodes[self.joints[b]]
        trs = {"translation": np.tile(nd.translation, (f, 1)).astype(np.float64),
               "rotation": np.tile(nd.rotation, (f, 1)).astype(np.float64),
               "scale": np.tile(nd.scale, (f, 1)).astype(np.float64)}
        for c in channels:
            trs[c.path] = _sample(c, times)
        if self._direct(b):
            return (to_pa(trs["translation"]), to_pa(trs["rotation"]),
                    np.abs(to_pa(trs["scale"])))
        local = trs_to_matrices(trs["translation"], trs["rotation"], trs["scale"])
        mats = AXES.T[None] @ (self._prefix(b)[None] @ local) @ AXES[None]
        t, q, s = matrices_to_trs(mats)
        return t, q, s


def _fps(value: Any) -> tuple[int, int]:
    """A clip's frame rate as papa stores it: the source's when it came from papa, else 60/1."""
    if isinstance(value, list | tuple) and len(value) == 2 and all(
            isinstance(x, int) and 0 < x < 1 << 32 for x in value):
        return int(value[0]), int(value[1])
    return FPS, 1


def _sample(c: Channel, times: F64) -> F64:
    """The channel at ``times``: its own key values when the keys already sit on those times
    (a clip that came from papa), else evaluated (LINEAR/slerp, STEP, CUBICSPLINE)."""
    keys = np.asarray(c.times, dtype=np.float64)
    if c.interpolation != "CUBICSPLINE" and len(keys) == len(times) and len(c.values) == len(
            keys) and np.allclose(keys, times, rtol=0.0, atol=1e-5):
        return np.asarray(c.values, dtype=np.float64)
    return np.asarray(sample_channel(c, times), dtype=np.float64)
