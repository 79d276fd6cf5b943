"""ANIM tracks -> glTF channels, and the motion clips cut from them (spec §B.7, §B.11).

Every step runs on all channels of a file at once: their keys are concatenated (one segment
per channel) and each operation is one numpy call over all of them. A file has a few keys per
channel and tens of channels, so per-channel numpy calls cost far more than the arithmetic.
Each value is computed by the same floating-point operations, in the same order, as the
per-channel way (``np.interp``'s formula, ``np.argsort(kind="stable")`` per channel), so the
results are bit for bit the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene import Channel

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
        _, seg0 = _segments(lens)
        t, v = a[:, 0], a[:, 1:]
        ok = np.isfinite(t) & (t >= 0) & np.all(np.isfinite(v), axis=1)
        t, v, seg = t[ok], v[ok], seg0[ok]
        # Stable by time within each channel: the segments are already in order.
        order = np.lexsort((t, seg))
        t, v, seg = t[order], v[order], seg[order]
        keep = np.ones(len(t), bool)
        keep[1:] = (np.diff(t) > 0) | (seg[1:] != seg[:-1])
        lost = (np.bincount(seg[~keep], minlength=len(used))
                + np.bincount(seg0[~ok], minlength=len(used)))
        for k in np.flatnonzero(lost).tolist():
            bad.add((used[k], p))
        t, v, seg = t[keep], v[keep], seg[keep]
        if path == "translation":
            v = v * _FLIP3
        elif path == "rotation":
            v = v * _FLIP4
            length = np.linalg.norm(v, axis=1, keepdims=True)
            v = np.where(length > 1e-12, v / np.where(length > 1e-12, length, 1.0), _UNIT_Q)
        t32, v32 = t.astype(np.float32), v.astype(np.float32)
        counts = np.bincount(seg, minlength=len(used)).tolist()
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
        starts, seg = _segments(lens)
        t = np.concatenate([c.times for c in chs]).astype(np.float64)
        v = np.concatenate([c.values for c in chs]).astype(np.float64)
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

    def cut(self, t0: float, t1: float) -> list[Channel]:
        """Each channel's part in [t0, t1], boundary values interpolated, times from 0."""
        out: list[Channel | None] = [None] * len(self.channels)
        for g in self.groups:
            for i, ch in zip(g.index, self._cut_group(g, t0, t1), strict=True):
                out[i] = ch
        return [c for c in out if c is not None]

    def _cut_group(self, g: _Group, t0: float, t1: float) -> list[Channel]:
        # Key times are float32 seconds and the bounds whole frames: a key within a tenth of
        # a millisecond of a bound is that bound's key.
        t = g.times
        t = np.where(np.abs(t - t0) < 1e-4, t0, np.where(np.abs(t - t1) < 1e-4, t1, t))
        nch = len(g.index)
        first = _interp_at(t, g.values, g.starts, g.ends, t0)
        if t1 > t0:
            last = _interp_at(t, g.values, g.starts, g.ends, t1)
            ins = np.flatnonzero((t > t0) & (t < t1))
            nin = np.bincount(g.seg[ins], minlength=nch)
            size = nin + 2
            ostart = np.zeros(nch, np.int64)
            np.cumsum(size[:-1], out=ostart[1:])
            total = int(ostart[-1] + size[-1])
            times = np.empty(total)
            vals = np.empty((total, g.values.shape[1]))
            times[ostart], times[ostart + size - 1] = t0, t1
            vals[ostart], vals[ostart + size - 1] = first, last
            instart = np.zeros(nch, np.int64)
            np.cumsum(nin[:-1], out=instart[1:])
            seg = g.seg[ins]
            at = ostart[seg] + 1 + (np.arange(len(ins)) - instart[seg])
            times[at] = t[ins]
            vals[at] = g.values[ins]
        else:
            size = np.ones(nch, np.int64)
            ostart = np.arange(nch, dtype=np.int64)
            times = np.full(nch, t0)
            vals = first
        if g.rotation:
            vals /= np.maximum(np.linalg.norm(vals, axis=1, keepdims=True), 1e-12)
        t32 = (times - t0).astype(np.float32)
        v32 = vals.astype(np.float32)
        res: list[Channel] = []
        for i, s, n in zip(g.index, ostart.tolist(), size.tolist(), strict=True):
            ch = self.channels[i]
            res.append(Channel(ch.node, ch.path, t32[s:s + n], v32[s:s + n]))
        return res


def _interp_at(t: F64, v: F64, starts: I64, ends: I64, x: float) -> F64:
    """``np.interp(x, t[s:e], v[s:e, c])`` for every segment and column, by numpy's own rule:
    ``j`` the last key with ``t[j] <= x``; before the first key its value, at or past the last
    key the last value, on a key that key's value, else ``slope * (x - t[j]) + v[j]`` (and,
    when that is NaN, from the right end; equal ends give their value)."""
    le = np.zeros(len(t) + 1, np.int64)
    np.cumsum(t <= x, out=le[1:])
    count = le[ends] - le[starts]
    j = starts + np.maximum(count - 1, 0)
    out: F64 = v[j].copy()
    mid = np.flatnonzero((count > 0) & (starts + count < ends))
    if len(mid):
        jm = j[mid]
        tj = t[jm]
        between = tj != x
        jm, tj = jm[between], tj[between]
        mid = mid[between]
        if len(mid):
            slope = (v[jm + 1] - v[jm]) / (t[jm + 1] - tj)[:, None]
            res = slope * (x - tj)[:, None] + v[jm]
            nan = np.isnan(res)
            if nan.any():
                right = slope * (x - t[jm + 1])[:, None] + v[jm + 1]
                res = np.where(nan, right, res)
                same = np.isnan(res) & (v[jm] == v[jm + 1])
                res = np.where(same, v[jm], res)
            out[mid] = res
    return out
