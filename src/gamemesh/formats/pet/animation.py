"""PET animation: ANIM tracks to channels (z mirrored, quaternions (x, y, -z, w)) and MOTI
motions cut out of them as clips (the same keys whether cut by the small walk or numpy)."""

from __future__ import annotations

import itertools
import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene import (
    Animation,
    Channel,
    Scene,
)
from .corners import _norms
from .document import MotiSection
from .extras import text_value
from .layout import FPS
from .skeleton import Skeleton, Unit, decode_names

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


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
    for p, (attr, path) in enumerate(_PATHS):
        out: dict[int, Channel] = {}
        per_path.append(out)
        keyed = _path_arrays(tracks, attr)
        if keyed is None:
            continue
        used, a, lens = keyed
        keys = _path_keys_clean(a, lens, path)
        if keys is None:
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


def _path_keys_clean(a: F64, lens: list[int], path: str) -> _PathKeys | None:
    """:func:`_path_keys` of keys that need no cleaning (the usual file: every value finite,
    times from zero up and rising within each track), else None: then it keeps every key
    as it is, so only its mirror and normalization are left (the same operations on the
    same arrays)."""
    t = a[:, 0]
    if not (np.isfinite(a).all() and t.min() >= 0):
        return None
    if len(t) > 1:
        # Times fall only where a track starts.
        falls = (t[1:] <= t[:-1]).nonzero()[0].tolist()
        if falls:
            starts = set(itertools.accumulate(lens[:-1]))
            if not all(k + 1 in starts for k in falls):
                return None
    v = a[:, 1:]
    if path == "translation":
        v = v * _FLIP3
    elif path == "rotation":
        v = _unit_rotations(v * _FLIP4)
    return t.astype(np.float32), v.astype(np.float32), list(lens), []


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
        dots = np.add.reduce(v[1:] * v[:-1], axis=1)
        if (dots < 0).any():  # else no key flips (times 1.0 would change nothing)
            d = dots.tolist()
            sign: list[float] = []
            for a, n in zip(starts, lens, strict=True):
                # Per channel: each key's sign flips the next ones' while its dot is negative.
                s = 1.0
                for k in range(a, a + n):
                    if k > a and d[k - 1] < 0:
                        s = -s
                    sign.append(s)
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
        t = np.concatenate([c.times for c in chs], dtype=np.float64)
        v = np.concatenate([c.values for c in chs], dtype=np.float64)
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
        spans = list(zip(ostart.tolist(), size.tolist(), strict=True))
        return self._clip_channels(g, spans, t32, v32, nm)


    def _clip_channels(self, g: _Group, rows: list[tuple[int, int]], t32: Any, v32: Any,
                       clips: int) -> list[list[Channel]]:
        """Each clip's channels of group ``g``: ``rows`` holds (start, count) in ``t32`` and
        ``v32`` per clip and channel, clip-major."""
        nch = len(g.index)
        res: list[list[Channel]] = []
        for m in range(clips):
            row: list[Channel] = []
            for i, (s, n) in zip(g.index, rows[m * nch:(m + 1) * nch], strict=True):
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
                # The values at the bounds: a key's own (a key at the bound, or the bound
                # outside the keys: the usual cases, :func:`_interp_small`'s first test
                # inline), else interpolated.
                j = a + n0 - 1 if n0 else a
                if n0 and a + n0 < e and tt[j] != x0:
                    first = _interp_small(tt, vk, a, e, x0, n0)
                    if first is None:
                        return None
                    vals[s] = first
                else:
                    vals[s] = vk[j]
                if two:
                    j = a + n1 - 1 if n1 else a
                    if n1 and a + n1 < e and tt[j] != x1:
                        last = _interp_small(tt, vk, a, e, x1, n1)
                        if last is None:
                            return None
                    else:
                        last = vk[j]
                    times.append(x1 - x0)
                    vals.append(last)
                rows.append((s, len(times) - s))
        v = _rows_array(vals, g.values.shape[1])
        if g.rotation:
            v /= np.maximum(_norms(v)[:, None], 1e-12)
        t32 = np.array(times, np.float64).astype(np.float32)
        v32 = v.astype(np.float32)
        return self._clip_channels(g, rows, t32, v32, len(bounds))


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


def clean_clips(tracks: Sequence[Any], nodes: Sequence[int],
                bounds: Sequence[tuple[float, float]]) -> list[list[Channel]] | None:
    """``Clipper(track_channels(tracks, nodes, ...)).cut(bounds)`` when no key needs
    cleaning (else None: that way, with its notes). A path whose tracks all have the same
    key times is cut for all of them at once (:func:`_cut_uniform`); the other rotations by
    a Clipper of theirs, the other translations and scales by one Clipper of all of them (as
    the Clipper groups them). A channel's clips do not depend on the channels cut with it
    (no value mixes channels), but for the rotations' lengths and hemisphere dot products,
    numpy reductions made on the rotation group's whole array: the rotations are the one
    group either way."""
    paths: list[_PathCut] = []
    for p, (attr, path) in enumerate(_PATHS):
        keyed = _path_arrays(tracks, attr)
        if keyed is None:
            continue
        used, a, lens = keyed
        keys = _path_keys_clean(a, lens, path)
        if keys is None:
            return None
        paths.append(_PathCut(p, path, used, lens, keys[0], keys[1],
                              _shared_times(a, lens, len(bounds))))
    # Sources of clips: (their channels' (track, path) in order, each motion's clips).
    sources: list[tuple[list[tuple[int, int]], list[list[Channel]]]] = []
    joint = [c for c in paths if c.path != "rotation"]
    shared = all(c.times is not None for c in joint)
    if not shared:
        sources.append(_clipper_cut(joint, nodes, bounds))
    for c in paths:
        if c.path != "rotation" and not shared:
            continue  # cut above
        cut = (_cut_uniform(c.times, c.v32, [nodes[i] for i in c.used], c.path, bounds)
               if c.times is not None else None)
        sources.append(([(i, c.p) for i in c.used], cut) if cut is not None
                       else _clipper_cut([c], nodes, bounds))
    # Each motion's channels in track_channels' order: by track, then path.
    at = sorted((key, s, k) for s, (keys_, _) in enumerate(sources)
                for k, key in enumerate(keys_))
    return [[sources[s][1][m][k] for _, s, k in at] for m in range(len(bounds))]


@dataclass(eq=False)
class _PathCut:
    """One path's clean keys for :func:`clean_clips`: the tracks that have it, their key
    counts, times and values as track_channels keeps them, and their shared key times
    (None when they differ)."""

    p: int
    path: str
    used: list[int]
    lens: list[int]
    t32: npt.NDArray[np.float32]
    v32: npt.NDArray[np.float32]
    times: list[float] | None


def _clipper_cut(cuts: list[_PathCut], nodes: Sequence[int],
                 bounds: Sequence[tuple[float, float]]
                 ) -> tuple[list[tuple[int, int]], list[list[Channel]]]:
    """The clips of some paths' channels by one Clipper, with their (track, path)."""
    keys: list[tuple[int, int]] = []
    chans: list[Channel] = []
    for c in cuts:
        starts = itertools.accumulate(c.lens[:-1], initial=0)
        for i, s, n in zip(c.used, starts, c.lens, strict=True):
            keys.append((i, c.p))
            chans.append(Channel(nodes[i], c.path, c.t32[s:s + n], c.v32[s:s + n]))  # type: ignore[arg-type]
    return keys, Clipper(chans).cut(bounds)


# Up to this many key times times motions, :func:`_cut_uniform` cuts (a Python step each).
_UNIFORM_CUT = 4096


def _shared_times(a: F64, lens: list[int], motions: int) -> list[float] | None:
    """The key times every track of a path has (``a``: their keys concatenated, ``lens``:
    their counts), when they are the same for all (and few enough to cut by a walk)."""
    n, k = len(lens), lens[0]
    if any(c != k for c in lens) or k * motions > _UNIFORM_CUT:
        return None
    times = a[:, 0].reshape(n, k)
    if not (times == times[0]).all():
        return None
    shared: list[float] = times[0].tolist()
    return shared


def _cut_uniform(tk: list[float], v32: npt.NDArray[np.float32], nodes: list[int], path: str,
                 bounds: Sequence[tuple[float, float]]) -> list[list[Channel]] | None:
    """The clips of one path's channels (``v32``: their values as track_channels keeps
    them) that all have the key times ``tk``: what :meth:`Clipper._cut_group_small` gives
    each (the same rows, each value by the same operations on the same floats, the
    rotations' lengths and dot products by the same numpy calls on the same arrays), each
    motion's keys found once for all channels. None (a Clipper decides) for an
    interpolation between two equal times or one that gives NaN."""
    n, k = len(nodes), len(tk)
    w = v32.shape[1]
    flat = v32.astype(np.float64)
    rotation = path == "rotation"
    if rotation and len(flat) > 1:
        # Clipper's hemisphere flips: per channel, each key's sign flips the next ones' while
        # its dot product with the one before is negative (the same products and sums).
        dots = np.add.reduce(flat[1:] * flat[:-1], axis=1)
        if (dots < 0).any():
            neg = np.zeros(n * k, np.int64)
            neg[1:] = dots < 0
            flips = neg.reshape(n, k)
            flips[:, 0] = 0
            flat = flat * np.where(np.cumsum(flips, axis=1) % 2 == 1, -1.0, 1.0).reshape(-1, 1)
    vals = flat.reshape(n, k, w)
    blocks: list[npt.NDArray[np.float64]] = []
    rows: list[float] = []
    sizes: list[int] = []
    for b in bounds:
        block = _uniform_block(tk, vals, float(b[0]), float(b[1]), rows, n)
        if block is None:
            return None
        blocks.append(block.reshape(-1, w))
        sizes.append(block.shape[1])
    v = np.concatenate(blocks)
    if rotation:
        v /= np.maximum(_norms(v)[:, None], 1e-12)
    t32 = np.array(rows, np.float64).astype(np.float32)
    v32o = v.astype(np.float32)
    out: list[list[Channel]] = []
    s = 0
    for size in sizes:
        # Each channel's rows: a row of the motion's block (a view, as a slice would be).
        e = s + n * size
        out.append([Channel(node, path, tr, vr)  # type: ignore[arg-type]
                    for node, tr, vr in zip(nodes, t32[s:e].reshape(n, size),
                                            v32o[s:e].reshape(n, size, w), strict=True)])
        s = e
    return out


def _uniform_block(tk: list[float], vals: F64, x0: float, x1: float, rows: list[float],
                   n: int) -> F64 | None:
    """One motion's rows of channels sharing the key times ``tk`` (``vals``: (channels, keys,
    width)): (channels, rows, width), their times appended to ``rows`` once per channel, as
    :meth:`Clipper._cut_group_small` cuts each channel (a bound's value a key's own, else
    :func:`_interp_small`'s operations on all channels at once). None where that gives up
    (two equal times) or the numpy way's NaN rules would be needed."""
    k = len(tk)
    # Key times within a tenth of a millisecond of a bound are that bound. Clean keys rise,
    # and snapping keeps their order: the counts and the keys between the bounds are found
    # by bisection.
    tt = [x0 if -1e-4 < t - x0 < 1e-4 else (x1 if -1e-4 < t - x1 < 1e-4 else t) for t in tk]
    two = x1 > x0
    n0 = bisect_right(tt, x0)  # the keys at or before x0
    inner = list(range(n0, bisect_left(tt, x1, n0))) if two else []
    idx = [n0 - 1 if n0 else 0, *inner]
    times = [x0 - x0, *(tt[j] - x0 for j in inner)]
    fix: list[tuple[int, int, float]] = []  # (row, key before, bound) to interpolate
    if n0 and n0 < k and tt[n0 - 1] != x0:
        fix.append((0, n0 - 1, x0))
    if two:
        n1 = bisect_right(tt, x1, n0)
        if n1 and n1 < k and tt[n1 - 1] != x1:
            fix.append((len(idx), n1 - 1, x1))
        idx.append(n1 - 1 if n1 else 0)
        times.append(x1 - x0)
    block: F64 = vals.take(idx, axis=1)
    for row, j, x in fix:
        dt = tt[j + 1] - tt[j]
        if dt == 0:
            return None
        v0 = vals[:, j]
        r = (vals[:, j + 1] - v0) / dt * (x - tt[j]) + v0
        if np.isnan(r).any():
            return None
        block[:, row] = r
    rows += times * n
    return block


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
    tracks, nodes = [m[0] for m in matched], [m[1] for m in matched]
    moti = unit.doc.get(b"MOTI")
    motions = moti.motions if isinstance(moti, MotiSection) else []
    bounds = [(mo.frame_start / FPS, max(mo.frame_start, mo.frame_end) / FPS)
              for mo in motions]
    clips = clean_clips(tracks, nodes, bounds) if motions else None
    channels: list[Channel] = []
    if clips is None:
        channels = track_channels(tracks, nodes, [m[2] for m in matched], ctx)
        if motions:
            clips = Clipper(channels).cut(bounds)
    if skipped:
        ctx.note("pet.anim_track_unmatched", f"{stem}: {skipped} track(s) name no bone")
    base = {"pet_source": stem}
    if flags:
        base["pet_flags"] = flags  # type: ignore[assignment]
    if motions:
        assert clips is not None
        for mo, clip in zip(motions, clips, strict=True):
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
