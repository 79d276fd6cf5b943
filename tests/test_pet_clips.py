"""PET animation to the scene: ANIM tracks to channels and the MOTI motions cut out of them
as clips, against np.interp per channel."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from gamemesh.formats.pet.document import Track
from gamemesh.registry import Context

anim = importlib.import_module("gamemesh.formats.pet.animation")


def _reference_cut(ch: Any, t0: float, t1: float) -> tuple[bytes, bytes]:
    """A motion's part of a channel as it was computed channel by channel (np.interp)."""
    t = ch.times.astype(np.float64)
    v = ch.values.astype(np.float64)
    if ch.path == "rotation" and len(v) > 1:
        d = np.sum(v[1:] * v[:-1], axis=1)
        v = v * np.concatenate([[1.0], np.cumprod(np.where(d < 0, -1.0, 1.0))])[:, None]
    t = np.where(np.abs(t - t0) < 1e-4, t0, np.where(np.abs(t - t1) < 1e-4, t1, t))
    inside = (t > t0) & (t < t1)
    times = np.concatenate([[t0], t[inside], [t1]]) if t1 > t0 else np.array([t0])
    vals = np.stack([np.interp(times, t, v[:, c]) for c in range(v.shape[1])], axis=1)
    if ch.path == "rotation":
        vals /= np.maximum(np.linalg.norm(vals, axis=1, keepdims=True), 1e-12)
    return (times - t0).astype(np.float32).tobytes(), vals.astype(np.float32).tobytes()


@pytest.mark.parametrize("chunk", [1 << 20, 1])
def test_motion_clips_of_all_channels_match_np_interp_per_channel(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clips are cut for all channels at once with np.interp's rule written out: the same
    bits as np.interp channel by channel (keys near the bounds, one-key channels, empty
    and reversed frame ranges, large and tiny values, unsorted and repeated times), all
    motions at once or one at a time."""
    monkeypatch.setattr(anim, "_CUT_ROWS", chunk)

    rng = np.random.default_rng(9)
    for _ in range(150):
        tracks = []
        for bone in range(int(rng.integers(1, 5))):
            keys = []
            for width in (3, 4, 3):
                n = int(rng.integers(0, 7))
                t = np.sort(rng.integers(0, 40, n) / 30.0
                            + rng.choice([0.0, 1e-5, -3e-5, 0.01], n)).astype(np.float32)
                if n and rng.random() < 0.2:
                    t = rng.permutation(t)
                v = rng.normal(size=(n, width)) * rng.choice([1.0, 1e30, 1e-20])
                keys.append(np.concatenate([t[:, None], v], 1).astype(np.float32))
            tracks.append(Track(bone=bone, pos=keys[0], rot=keys[1], scale=keys[2]))
        channels = anim.track_channels(tracks, list(range(len(tracks))),
                                       [str(i) for i in range(len(tracks))], Context(None))
        frames = [(int(f0), int(max(f0, f1))) for f0, f1 in rng.integers(0, 45, (4, 2))]
        bounds = [(f0 / 30.0, f1 / 30.0) for f0, f1 in frames]
        for motion, got in zip(bounds, anim.Clipper(channels).cut(bounds), strict=True):
            assert len(got) == len(channels)
            for ch, cut in zip(channels, got, strict=True):
                assert (cut.node, cut.path) == (ch.node, ch.path)
                assert (cut.times.tobytes(), cut.values.tobytes()) == _reference_cut(ch, *motion)
