"""PET motion clips of clean keys made path by path (tracks sharing their key times cut at
once) against the general way (track_channels, then a Clipper of all channels), bit for bit
on random inputs (timing-independent)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from tests.helpers import channel_bits, pet_test_files

import gamemesh
from gamemesh.formats.pet.document import Track
from gamemesh.registry import Context

anim = importlib.import_module("gamemesh.formats.pet.animation")


def _keys(rng: np.random.Generator, times: np.ndarray, width: int, rotation: bool) -> Any:
    n = len(times)
    v = rng.normal(size=(n, width)) * rng.choice([1.0, 1e30, 1e-20, 1e-300], (n, 1))
    if rotation and n and rng.random() < 0.5:
        # Keys in both hemispheres: the clips' sign flips.
        v[rng.random(n) < 0.4] *= -1.0
    if n and rng.random() < 0.15:
        v[rng.integers(0, n), rng.integers(0, width)] = rng.choice(
            [np.nan, np.inf, -np.inf, -0.0, 0.0])
    if n and rng.random() < 0.05:
        times = times.copy()
        times[rng.integers(0, n)] = rng.choice([np.nan, -1.0, np.inf])
    return np.concatenate([times[:, None], v], 1).astype(np.float32)


def _times(rng: np.random.Generator) -> np.ndarray:
    """Rising key times on frames, some a few hundredths of a millisecond off (snapped to a
    bound they are near), sometimes two equal ones."""
    n = int(rng.integers(1, 9))
    t = np.sort(rng.choice(np.arange(40), n, replace=False)) / 30.0
    t = t + rng.choice([0.0, 0.0, 1e-5, -3e-5, 0.01], n)
    if n > 1 and rng.random() < 0.05:
        t[1] = t[0]
    return np.asarray(t.astype(np.float32), np.float64)


def _random_case(rng: np.random.Generator) -> tuple[list[Track], list[tuple[float, float]]]:
    ntr = int(rng.integers(1, 7))
    per_path = []
    for width, rotation in ((3, False), (4, True), (3, False)):
        mode = rng.choice(["shared", "shared", "own", "none", "some"])
        shared = _times(rng)
        rows = []
        for _ in range(ntr):
            if mode == "none" or (mode == "some" and rng.random() < 0.5):
                rows.append(np.zeros((0, width + 1), np.float32))
            else:
                t = shared if mode in ("shared", "some") else _times(rng)
                rows.append(_keys(rng, t, width, rotation))
        per_path.append(rows)
    tracks = [Track(bone=b, pos=per_path[0][b], rot=per_path[1][b], scale=per_path[2][b])
              for b in range(ntr)]
    frames = rng.integers(0, 45, (int(rng.integers(1, 6)), 2))
    return tracks, [(int(f0) / 30.0, int(max(f0, f1)) / 30.0) for f0, f1 in frames]


@pytest.mark.parametrize("small", [256, -1])
def test_clean_clips_match_the_channels_cut_by_a_clipper(small: int,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Shared and own key times, empty paths, keys near the bounds, interpolated bounds,
    hemisphere flips, huge and tiny values: the general way's clips bit for bit (the
    Clipper's walk or its numpy way); keys that need cleaning are left to the general way."""
    monkeypatch.setattr(anim, "_SMALL_CUT", small)
    uniform, clipper = anim._cut_uniform, anim._clipper_cut
    took = {"uniform": 0, "other": 0, "none": 0}

    def counted(*args: Any) -> Any:
        out = uniform(*args)
        took["uniform"] += out is not None
        return out

    def by_clipper(*args: Any) -> Any:
        took["other"] += 1
        return clipper(*args)

    monkeypatch.setattr(anim, "_cut_uniform", counted)
    monkeypatch.setattr(anim, "_clipper_cut", by_clipper)
    rng = np.random.default_rng(71)
    for _ in range(700):
        tracks, bounds = _random_case(rng)
        nodes = [10 + i for i in range(len(tracks))]
        got = anim.clean_clips(tracks, nodes, bounds)
        if got is None:
            took["none"] += 1
            continue
        ctx = Context(None)
        chs = anim.track_channels(tracks, nodes, [str(i) for i in nodes], ctx)
        assert not ctx.notes  # clean keys: nothing dropped
        want = anim.Clipper(chs).cut(bounds)
        assert [channel_bits(c) for c in got] == [channel_bits(c) for c in want]
    assert took["uniform"] > 300 and took["other"] > 40 and took["none"] > 50


def test_animations_take_the_clean_clips_with_the_general_notes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole file's animations (the fixtures and the escaped-id sample) are the ones the
    general way makes, notes included."""
    def animations(data: bytes, name: str) -> Any:
        scene = gamemesh.load(data, format="pet", kind=name.rsplit(".", 1)[-1])
        return ([(a.name, a.extras, channel_bits(a.channels)) for a in scene.animations],
                [(n.code, n.message) for n in scene.notes])

    files = [(d, n) for d, n in pet_test_files() if n.endswith((".pet", ".apet"))]
    assert len(files) >= 8
    fast = [animations(d, n) for d, n in files]
    monkeypatch.setattr(anim, "clean_clips", lambda *args: None)
    assert fast == [animations(d, n) for d, n in files]
    assert sum(len(a[0]) for a in fast) >= 8
