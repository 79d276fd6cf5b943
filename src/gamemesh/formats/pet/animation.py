"""PET animation both ways. Read: ANIM tracks to channels (z mirrored, quaternions
(x, y, -z, w)) and MOTI motions cut out of them as clips, every step one numpy call over all
channels at once. Write: the scene's clips laid end to end on the 30 fps timeline as ANIM
tracks and MOTI motions (see the comment above :func:`animations`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...scene import Animation, Channel, Scene
from ...scene.math import local_matrix, matrix_to_trs, snap_quat
from .document import AnimSection, Motion, MotiSection, Track
from .extras import text_value, value_bytes
from .layout import ENCODING, FMT, FPS, TRACK_LIMIT
from .skeleton import Skeleton, Unit, decode_names

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


# (glTF path, Track attribute, factor between file and scene values: z mirrored).
_TAILS = (("translation", "pos", np.array([1.0, 1.0, -1.0])),
          ("rotation", "rot", np.array([1.0, 1.0, -1.0, 1.0])),
          ("scale", "scale", np.ones(3)))
_UNIT_Q = np.array([0.0, 0.0, 0.0, 1.0])


def _segments(lengths: Sequence[int]) -> tuple[I64, I64]:
    """(start of each segment, segment id of each row) for rows concatenated by segment."""
    n = np.asarray(lengths, np.int64)
    starts = np.zeros(len(n), np.int64)
    np.cumsum(n[:-1], out=starts[1:])
    return starts, np.repeat(np.arange(len(n), dtype=np.int64), n)


def _path_arrays(tracks: Sequence[Any], attr: str
                 ) -> tuple[list[int], F64, list[int]] | None:
    """One path's keys (``attr``: the tracks' key lists of that path): the tracks that have
    any, their keys end to end as float64 rows, and each one's key count; None when no track
    has a key of that path."""
    arrays = [np.asarray(getattr(tr, attr)) for tr in tracks]
    used = [i for i, a in enumerate(arrays) if len(a)]
    if not used:
        return None
    a: F64 = np.concatenate([arrays[i] for i in used], dtype=np.float64)
    return used, a, [len(arrays[i]) for i in used]


def track_channels(tracks: Sequence[Any], nodes: Sequence[int], labels: Sequence[str],
                   ctx: Context) -> list[Channel]:
    """The channels of ``tracks`` (translation, rotation, scale per track, in track order)
    targeting ``nodes``: keys with non-finite values or negative times dropped, sorted by time
    (stably), repeated times dropped, z mirrored, quaternions normalized. A (track, path) that
    lost keys gets a note with its label."""
    per_path: list[dict[int, Channel]] = []
    bad: set[tuple[int, int]] = set()
    for p, (path, attr, tail) in enumerate(_TAILS):
        out: dict[int, Channel] = {}
        per_path.append(out)
        keyed = _path_arrays(tracks, attr)
        if keyed is None:
            continue
        used, a, lens = keyed
        t32, v32, counts, lost = _path_keys(a, lens, tail, path == "rotation")
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


_PathKeys = tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], list[int], list[int]]


def _path_keys(a: F64, lens: list[int], tail: F64, rotation: bool) -> _PathKeys:
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
    v = _unit_rotations(v * tail) if rotation else v * tail
    counts = np.bincount(seg, minlength=len(lens)).tolist()
    return (t.astype(np.float32), v.astype(np.float32), counts,
            np.flatnonzero(lost).tolist())


def _unit_rotations(v: F64) -> F64:
    length = np.linalg.norm(v, axis=1)
    ok = length > 1e-12
    out: F64 = v / np.where(ok, length, 1.0)[:, None]
    if not ok.all():  # a zero-length rotation becomes the identity
        out[~ok] = _UNIT_Q
    return out


def _one_hemisphere(v: F64, seg: I64, starts: I64) -> F64:
    """Rotation keys (rows of segments ``seg`` starting at ``starts``) each in the hemisphere
    of the key before in its segment, from the segment's first key on."""
    if len(v) < 2:
        return v
    # v * cumprod(sign of each key's dot with the one before), the product of signs being the
    # parity of the negative dots so far in the segment.
    d = np.sum(v[1:] * v[:-1], axis=1)
    neg = np.zeros(len(v), np.int64)
    neg[1:] = (d < 0) & (seg[1:] == seg[:-1])
    cnt = np.cumsum(neg)
    flips = cnt - cnt[starts][seg]
    return v * np.where(flips % 2 == 1, -1.0, 1.0)[:, None]


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
        t = np.concatenate([c.times for c in chs], dtype=np.float64)
        v = np.concatenate([c.values for c in chs], dtype=np.float64)
        starts, seg = _segments(lens)
        if rotation:
            v = _one_hemisphere(v, seg, starts)
        ends = starts + np.asarray(lens, np.int64)
        return _Group(index, t, v, starts, ends, seg, rotation)

    def cut(self, bounds: Sequence[tuple[float, float]]) -> list[list[Channel]]:
        """For each (t0, t1): each channel's part in [t0, t1], boundary values interpolated,
        times from t0. All motions of a group are cut at once (in chunks of a bounded number
        of keys: each motion works on its own copy of the keys)."""
        out: list[list[Channel | None]] = [[None] * len(self.channels) for _ in bounds]
        for g in self.groups:
            step = max(1, _CUT_ROWS // max(1, len(g.times)))
            for c0 in range(0, len(bounds), step):
                self._cut_group(g, bounds[c0:c0 + step], out[c0:c0 + step])
        return [[c for c in o if c is not None] for o in out]

    def _cut_group(self, g: _Group, bounds: Sequence[tuple[float, float]],
                   out: list[list[Channel | None]]) -> None:
        """One group cut for a chunk of motions, into ``out`` (per motion, per channel): the
        keys repeated once per motion, segment ``m * nch + c`` being channel ``c`` in motion
        ``m``."""
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
        for k, (s, n) in enumerate(zip(ostart.tolist(), size.tolist(), strict=True)):
            ch = self.channels[g.index[k % nch]]
            out[k // nch][g.index[k % nch]] = Channel(ch.node, ch.path, t32[s:s + n],
                                                      v32[s:s + n])

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


def add_animations(scene: Scene, unit: Unit, sk: Skeleton | None, ctx: Context) -> None:
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
    tracks, nodes = [m[0] for m in matched], [m[1] for m in matched]
    moti = unit.doc.get(b"MOTI")
    motions = moti.motions if isinstance(moti, MotiSection) else []
    bounds = [(mo.frame_start / FPS, max(mo.frame_start, mo.frame_end) / FPS)
              for mo in motions]
    channels = track_channels(tracks, nodes, [m[2] for m in matched], ctx)
    if skipped:
        ctx.note("pet.anim_track_unmatched", f"{stem}: {skipped} track(s) name no bone")
    base = {"pet_source": stem}
    if flags:
        base["pet_flags"] = flags  # type: ignore[assignment]
    if motions:
        for mo, clip in zip(motions, Clipper(channels).cut(bounds), strict=True):
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


# -- scene clips -> ANIM and MOTI --------------------------------------------------------------
# PET keeps every clip on one timeline, and a bone holds whatever value its last key left (a
# channel without keys only falls back to the rest value when the whole ANIM has none, §B.7).
# A clip that leaves a bone alone would then play with the previous clip's last pose. So when
# the timeline holds several clips, every (bone, path) that any clip animates is keyed at each
# clip's first and last frame: with its own first and last value where the clip animates it
# (glTF holds those before the first and after the last key), with the node's rest value where
# it does not. Each clip then plays, cut out of the timeline, as it does alone.

Key = tuple[int, str]  # (bone index, glTF path)

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
    return snap_quat(_one_hemisphere(v, np.zeros(len(v), np.int64), np.zeros(1, np.int64)),
                     QUAT_BITS)


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
