"""Scene clips -> PET ANIM tracks and MOTI motions, laid end to end on the 30 fps timeline.

PET keeps every clip on one timeline, and a bone holds whatever value its last key left (a
channel without keys only falls back to the rest value when the whole ANIM has none, §B.7).
A clip that leaves a bone alone would then play with the previous clip's last pose. So when
the timeline holds several clips, every (bone, path) that any clip animates is keyed at each
clip's first and last frame: with its own first and last value where the clip animates it
(glTF holds those before the first and after the last key), with the node's rest value where
it does not. Each clip then plays, cut out of the timeline, as it does alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...scene import Animation, Channel, Scene
from ...scene.math import local_matrix, matrix_to_trs, snap_quat
from .document import AnimSection, Motion, MotiSection, Track
from .extras import value_bytes
from .layout import ENCODING, FMT, FPS, TRACK_LIMIT

F64 = npt.NDArray[np.float64]
Key = tuple[int, str]  # (bone index, glTF path)

_TAILS = (("translation", "pos", np.array([1.0, 1.0, -1.0])),
          ("rotation", "rot", np.array([1.0, 1.0, -1.0, 1.0])),
          ("scale", "scale", np.ones(3)))
# The reader takes a key within this of a motion's bound as that bound's key (Clipper.cut).
_NEAR = 1e-4
QUAT_BITS = 21  # snap_quat() grid of rotation keys: 1e-6
_LIST = 4  # node names listed in one note before "+N more"


@dataclass
class _Clip:
    """One clip on the timeline: its first and last frame in seconds, and its keys per
    (bone, path) at timeline times."""

    start: float
    end: float
    keys: dict[Key, tuple[F64, F64]] = field(default_factory=dict)


def animations(scene: Scene, ctx: Context, bone_nodes: list[int | None],
               bone_names: list[bytes], version: tuple[int, int]
               ) -> tuple[AnimSection, MotiSection | None]:
    """The ANIM section (and MOTI, when there are clip names to keep) of the scene's clips."""
    bone_of = {n: b for b, n in enumerate(bone_nodes) if n is not None}
    motions: list[Motion] = []
    clips: list[_Clip] = []
    cursor = 0
    # MOTI names the clips: written whenever there is a name to keep (a lone clip without
    # one is named after the file when read, as before).
    use_moti = len(scene.animations) > 1 or any(
        a.name or isinstance(a.extras.get("pet_motion"), dict) for a in scene.animations)
    flags: dict[int, F64] = {}
    for anim in scene.animations:
        start_frame, motion = _motion_of(anim, cursor)
        offset = start_frame / FPS if use_moti else 0.0
        keys, end_t = _clip_keys(scene, anim, bone_of, offset, ctx)
        end_frame = start_frame + int(np.ceil(end_t * FPS - 1e-6))
        clips.append(_Clip(start_frame / FPS, end_frame / FPS, keys))
        if use_moti:
            motion.frame_start, motion.frame_end = start_frame, end_frame
            motions.append(motion)
        cursor = max(cursor, end_frame + 1)
        _flags_of(anim, bone_names, offset, flags)
    if use_moti:
        _key_bounds(clips, _rest_values(scene, bone_nodes, {k for c in clips for k in c.keys})
                    if len(clips) > 1 else {})
    return (_tracks(clips, flags, version, ctx),
            MotiSection(motions) if use_moti else None)


def _clip_keys(scene: Scene, anim: Animation, bone_of: dict[int, int], offset: float,
               ctx: Context) -> tuple[dict[Key, tuple[F64, F64]], float]:
    """The clip's keys per (bone, path) at timeline times, and its last key's own time. What
    PET cannot hold is one note per clip and kind, naming the nodes."""
    parts: dict[Key, list[tuple[F64, F64]]] = {}
    dropped: list[str] = []
    changed: dict[str, list[str]] = {"STEP": [], "CUBICSPLINE": []}
    end_t = 0.0
    for ch in anim.channels:
        b = bone_of.get(ch.node)
        name = _node_name(scene, ch.node)
        if b is None or ch.path == "weights":
            dropped.append(f"{ch.path} of {name}")
            continue
        t, v = _channel_keys(ch)
        # STEP keys whose value never changes play the same as linear ones: nothing is lost.
        if ch.interpolation == "CUBICSPLINE" or (ch.interpolation == "STEP"
                                                 and np.any(v[1:] != v[:-1])):
            changed[ch.interpolation].append(name)
        if not len(t):
            continue
        end_t = max(end_t, float(t[-1]))
        parts.setdefault((b, ch.path), []).append((t + offset, v))
    if dropped:
        ctx.note("pet.anim_channel_dropped", f"animation {anim.name!r}: channels "
                 f"{_listed(dropped)} left out (PET animates bones, not morph weights or "
                 "other nodes)", covers=("channels",))
    if changed["CUBICSPLINE"]:
        ctx.note("pet.anim_cubic", f"animation {anim.name!r}: CUBICSPLINE keys of "
                 f"{_listed(changed['CUBICSPLINE'])} written as linear keys (tangents dropped)")
    if changed["STEP"]:
        ctx.note("pet.anim_step", f"animation {anim.name!r}: STEP keys of "
                 f"{_listed(changed['STEP'])} written as linear keys (PET has no step)")
    return {k: _merge(p) for k, p in parts.items()}, end_t


def _node_name(scene: Scene, node: int) -> str:
    return (scene.nodes[node].name or f"node {node}") if 0 <= node < len(scene.nodes) \
        else f"node {node}"


def _listed(names: Iterable[str]) -> str:
    items = sorted(set(names))
    shown = ", ".join(repr(n) for n in items[:_LIST])
    return shown + (f" (+{len(items) - _LIST} more)" if len(items) > _LIST else "")


def _channel_keys(ch: Channel) -> tuple[F64, F64]:
    t = np.asarray(ch.times, np.float64)
    cubic = ch.interpolation == "CUBICSPLINE"
    v = np.asarray(ch.values, np.float64).reshape(len(t) * (3 if cubic else 1), -1)
    return t, (v[1::3] if cubic else v)


def _rest_values(scene: Scene, bone_nodes: list[int | None], keys: set[Key]) -> dict[Key, F64]:
    """The node's own (rest) value of each (bone, path): what a clip that does not animate it
    shows."""
    out: dict[Key, F64] = {}
    for b, path in keys:
        n = bone_nodes[b]
        if n is None:  # the bone made for the file has no node, and no channel moves it
            continue
        node = scene.nodes[n]
        if node.matrix is not None:
            t, r, s = matrix_to_trs(local_matrix(node))
        else:
            t, r, s = (np.asarray(x, np.float64) for x in
                       (node.translation, node.rotation, node.scale))
        out[(b, path)] = {"translation": t, "rotation": r, "scale": s}[path]
    return out


def _key_bounds(clips: list[_Clip], rest: dict[Key, F64]) -> None:
    """Every key of a clip, and every (bone, path) of ``rest``, keyed at every clip's first and
    last frame (see the module's docstring), at the times the reader gives back: it takes a
    key within ``_NEAR`` of a bound as the bound's key and times from the clip's start in
    float32, so a second trip through the scene writes these times again."""
    for c in clips:
        end = c.start + float(np.float32(c.end - c.start))
        bounds = np.array([c.start, end] if c.end > c.start else [c.start])
        for k in {*c.keys, *rest}:
            got = c.keys.get(k)
            if got is None:
                c.keys[k] = (bounds, np.repeat(rest[k][None], len(bounds), axis=0))
                continue
            t, v = got
            t = np.where(np.abs(t - c.start) < _NEAR, c.start,
                         np.where(np.abs(t - end) < _NEAR, end, t))
            if t[0] > c.start:
                t, v = np.concatenate([[c.start], t]), np.concatenate([v[:1], v])
            if t[-1] < end and c.end > c.start:
                t, v = np.concatenate([t, [end]]), np.concatenate([v, v[-1:]])
            c.keys[k] = _merge([(t, v)])


def _motion_of(anim: Animation, cursor: int) -> tuple[int, Motion]:
    ex = anim.extras.get("pet_motion")
    if isinstance(ex, dict):
        try:
            start = int(ex.get("frame_start", cursor))
            return start, Motion(value_bytes(ex.get("name")) or anim.name.encode(ENCODING,
                                                                                   "replace"),
                                 start, start, value_bytes(ex.get("next_move")),
                                 value_bytes(ex.get("connection_method")),
                                 float(ex.get("connection_time", 0.0)),
                                 value_bytes(ex.get("root_bone")))
        except (TypeError, ValueError):
            pass
    return cursor, Motion(anim.name.encode(ENCODING, "replace") or b"clip", cursor, cursor)


def _flags_of(anim: Animation, bone_names: list[bytes], offset: float,
              out: dict[int, F64]) -> None:
    fl = anim.extras.get("pet_flags")
    if not isinstance(fl, dict):
        return
    for name, vals in fl.items():
        try:
            b = bone_names.index(str(name).encode(ENCODING, "replace"))
            a = np.asarray(vals, np.float64).reshape(-1, 2)
        except (ValueError, TypeError):
            continue
        out.setdefault(b, a)


def _merge(parts: list[tuple[F64, F64]]) -> tuple[F64, F64]:
    t = np.concatenate([p[0] for p in parts])
    v = np.concatenate([p[1] for p in parts])
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    keep = np.ones(len(t), bool)
    keep[1:] = np.diff(t) > 1e-9
    return t[keep], v[keep]


def _settled_rotations(v: F64) -> F64:
    """Rotation keys as the reader gives them back, so a second trip writes them again: each
    in the hemisphere of the key before (the reader flips them so, from the first key on),
    and on snap_quat's grid (the reader normalizes them: a float32 ulp)."""
    if len(v) > 1:
        d = np.sum(v[1:] * v[:-1], axis=1)
        v = v * np.concatenate([[1.0], np.cumprod(np.where(d < 0, -1.0, 1.0))])[:, None]
    return snap_quat(v, QUAT_BITS)


def _tracks(clips: list[_Clip], flags: dict[int, F64], version: tuple[int, int],
            ctx: Context) -> AnimSection:
    out = AnimSection(terminator=b"\xff")  # §E.2: always end ANIM with 0xFF
    keys: dict[Key, list[tuple[F64, F64]]] = {}
    for c in clips:
        for k, tv in c.keys.items():
            keys.setdefault(k, []).append(tv)
    ids = sorted({b for b, _ in keys})
    if len(ids) > TRACK_LIMIT[version[1]]:
        raise LimitError(FMT, "too many animation tracks for this version", field="ANIM",
                         expected=f"<= {TRACK_LIMIT[version[1]]}", actual=len(ids))
    dropped_scale = False
    for b in ids:
        tr = Track(bone=b, wide=b > 0xFD)
        for path, attr, tail in _TAILS:
            if (b, path) not in keys:
                continue
            t, v = _merge(keys[(b, path)])
            if path == "scale" and version < (1, 2):
                dropped_scale = dropped_scale or bool(np.any(np.abs(v - 1) > 1e-6))
                continue
            if path == "rotation":
                v = _settled_rotations(v)
            rec = np.concatenate([t[:, None], v * tail], axis=1).astype(np.float32)
            setattr(tr, attr, rec)
        if version >= (1, 3) and b in flags:
            tr.flags = flags[b].astype(np.float32)
        out.tracks.append(tr)
    if dropped_scale:
        ctx.note("pet.anim_scale_dropped", f"PET {version[0]}.{version[1]} has no scale keys: "
                 "scale animation left out", covers=("channels",))
    return out
