"""Animation tracks of objects that have a parent (spec-modern §4.3).

The runtime's object tracks set an object's world position and rotation (a GameObject holds
a world transform and the runtime has no hierarchy), but a glTF child's keys are local to its
parent. Any object whose own or an ancestor's transform is animated therefore gets world keys:
the whole chain posed at the union of the chain's key times (``posed_worlds``, the same
mechanism the baked skin matrices use), written as a position and a rotation track.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ....registry import Context
from ....scene import Animation, Scene
from ....scene.math import local_matrix, matrices_to_trs, matrix_to_trs, trs_to_matrices
from ....scene.sampling import sample_channel
from ..conventions import quat_to_track
from . import layout as ml
from .document import Track

__all__ = ["posed_worlds", "world_tracks"]

_TRS = ("translation", "rotation", "scale")


def posed_worlds(scene: Scene, anim: Animation, times: npt.NDArray[np.float64]
                 ) -> list[npt.NDArray[np.float64]]:
    """(F, 4, 4) world matrices of every node with ``anim`` applied at ``times``."""
    by_node: dict[int, dict[str, Any]] = {}
    for ch in anim.channels:
        if ch.path != "weights" and len(ch.times):
            by_node.setdefault(ch.node, {})[ch.path] = sample_channel(ch, times)
    parents = scene.parents()
    out: list[npt.NDArray[np.float64]] = [np.tile(np.eye(4), (len(times), 1, 1))
                                          for _ in scene.nodes]
    for i in scene.walk():
        node = scene.nodes[i]
        got = by_node.get(i)
        if got is None:
            local = np.tile(local_matrix(node), (len(times), 1, 1))
        else:
            t0, r0, s0 = matrix_to_trs(local_matrix(node))
            f = len(times)
            local = trs_to_matrices(got.get("translation", np.tile(t0, (f, 1))),
                                    got.get("rotation", np.tile(r0, (f, 1))),
                                    got.get("scale", np.tile(s0, (f, 1))))
        p = parents[i]
        out[i] = local if p is None else out[p] @ local
    return out


def _chain(parents: list[int | None], i: int) -> list[int]:
    out, p = [i], parents[i]
    while p is not None and p not in out:
        out.append(p)
        p = parents[p]
    return out


def _key_times(anim: Animation, chain: list[int], where: str, ctx: Context
               ) -> tuple[npt.NDArray[np.float64], bool]:
    """The union of the chain's key times (resampled evenly when the runtime's 64 keys per
    track cannot hold them or a curve is cubic) and whether every key is a step key."""
    chs = [ch for ch in anim.channels if ch.node in chain and ch.path in _TRS and len(ch.times)]
    times = np.unique(np.concatenate([np.asarray(ch.times, np.float64) for ch in chs]))
    if len(times) > ml.MAX_KEYS or any(ch.interpolation == "CUBICSPLINE" for ch in chs):
        ctx.note("splashpack.track_resampled", f"{where}: resampled to linear keys (the runtime "
                 f"has at most {ml.MAX_KEYS} linear or step keys per track)")
        times = np.linspace(times[0], times[-1], min(ml.MAX_KEYS, max(2, len(times))))
    return times, all(ch.interpolation == "STEP" for ch in chs)


def world_tracks(scene: Scene, anim: Animation, names: dict[int, bytes],
                 raw: Callable[[Any], npt.NDArray[np.int64]], ctx: Context) -> list[Track]:
    """Position and rotation tracks in world space for every object (``names``: node ->
    object name) that has a parent and moves in ``anim`` through itself or an ancestor."""
    parents = scene.parents()
    moved = {ch.node for ch in anim.channels if ch.path in _TRS and len(ch.times)}
    out: list[Track] = []
    for node, name in names.items():
        chain = _chain(parents, node)
        if parents[node] is None or not moved.intersection(chain):
            continue
        times, step = _key_times(anim, chain, f"animation {anim.name!r}", ctx)
        world = posed_worlds(scene, anim, times)[node]
        frames = np.clip(np.rint(times * ml.FPS), 0, 0x1FFF).astype(np.uint16) | (
            (1 if step else 0) << 13)
        t, q, _ = matrices_to_trs(world)
        for kind, vals in ((ml.TRACK_OBJ_POS, raw(t)), (ml.TRACK_OBJ_ROT, quat_to_track(q))):
            keys = np.zeros(len(times), ml.KEY)
            keys["frame"], keys["v"] = frames, vals
            out.append(Track(kind, 0, name, keys))
    return out
