"""Helpers shared by the format tests: corpus lookup, truncation and mutation fuzzing."""

from __future__ import annotations

import os
import random
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gamemesh.errors import FormatError
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context, FormatSpec
from gamemesh.scene.math import face_normals

ROOT = Path(__file__).resolve().parent.parent
CRASHES = Path(__file__).resolve().parent / "crashes"
PET_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pet"


def corpus_dir(fmt: str) -> Path:
    """``../shared/corpus/<fmt>`` (or ``$GAMEMESH_CORPUS/<fmt>``); skips the test when absent."""
    base = Path(os.environ.get("GAMEMESH_CORPUS", ROOT.parent / "shared" / "corpus"))
    d = base / fmt
    if not d.is_dir():
        pytest.skip(f"no real-file corpus at {d} (set GAMEMESH_CORPUS to run the corpus tests)")
    return d


def corpus_files(fmt: str, pattern: str = "*") -> list[Path]:
    return sorted(p for p in corpus_dir(fmt).rglob(pattern)
                  if p.is_file() and p.suffix.lower() != ".md")


def parse_raw(spec: FormatSpec, data: bytes) -> None:
    """Read and convert to a scene through the format's own functions, *not* the registry's
    guarded entry points: only a FormatError may come out, so the boundary hides no bug."""
    ctx = Context(None, {})
    assert spec.read is not None
    doc = spec.read(data, ctx)
    if spec.to_scene is not None:
        spec.to_scene(doc, ctx)


def _check_one(spec: FormatSpec, data: bytes, label: str, budget: float = 2.0) -> None:
    # CPU time, not wall time: parsing bytes in memory never waits, and a loaded machine
    # (CI beside other jobs) must not turn a 50 ms parse into a "hang".
    t0 = time.process_time()
    try:
        parse_raw(spec, data)
    except FormatError:
        pass
    except Exception as e:  # pragma: no cover - the failure path is the point of the test
        crash_dir = CRASHES / spec.name
        crash_dir.mkdir(parents=True, exist_ok=True)
        keep = crash_dir / f"new-{abs(hash(data)) % 10**10}.bin"
        keep.write_bytes(data)
        msg = f"{label}: {type(e).__name__}: {e} (input kept as {keep.name})"
        raise AssertionError(msg) from e
    dt = time.process_time() - t0
    assert dt < budget, f"{label}: took {dt:.2f}s of CPU"


def truncations(data: bytes, limit: int = 600) -> Iterator[int]:
    """Every cut point for small inputs; an even spread (plus the first bytes) for large ones."""
    if len(data) <= limit:
        yield from range(len(data))
        return
    yield from range(64)
    step = max(1, len(data) // limit)
    yield from range(64, len(data), step)


def assert_truncations_fail_cleanly(spec: FormatSpec, data: bytes) -> int:
    """Every truncation ends in a FormatError (or, rarely, a valid shorter file)."""
    n = 0
    for cut in truncations(data):
        _check_one(spec, data[:cut], f"truncated at {cut}")
        n += 1
    return n


def mutations(data: bytes, count: int, seed: int) -> Iterator[bytes]:
    rng = random.Random(seed)
    interesting = [0, 0xFF, 0x7F, 0x80, 0xFE]
    for _ in range(count):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if not b:
                break
            i = rng.randrange(len(b))
            kind = rng.random()
            if kind < 0.5:
                b[i] = rng.randrange(256)
            elif kind < 0.8:
                b[i] = rng.choice(interesting)
            else:  # a 32-bit field set to a huge or negative value
                j = i - i % 4
                b[j:j + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x80",
                                         b"\xff\xff\xff\x7f", b"\x00\x00\x01\x00"])
        yield bytes(b)


def assert_mutations_fail_cleanly(spec: FormatSpec, data: bytes, count: int = 2000,
                                  seed: int = 1) -> None:
    """Seeded random mutations: success or FormatError only, each under 2 s, and the process's
    peak memory grows by less than 1 GiB over the whole run (no huge allocation)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for k, m in enumerate(mutations(data, count, seed)):
        _check_one(spec, m, f"mutation {k} (seed {seed})")
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 1024, f"peak memory grew by {grown_mib:.0f} MiB"


def replay_crashes(spec: FormatSpec) -> int:
    """Inputs that once crashed a reader; they must now end cleanly, forever."""
    d = CRASHES / spec.name
    files = sorted(d.glob("*")) if d.is_dir() else []
    assert files, f"{d} holds no regression input: a replay of nothing proves nothing"
    for f in files:
        _check_one(spec, f.read_bytes(), f"crash input {f.name}")
    return len(files)


def assert_same_outcome(got: Any, want: Any) -> None:
    """Two readers' outcomes of one input, each an error message (str) or a (document, end
    position) pair: the same message, or the same tree and position."""
    if isinstance(want, str):
        assert got == want
    else:
        assert not isinstance(got, str)
        assert_same_tree(got[0], want[0])
        assert got[1] == want[1]


def assert_same_tree(a: Any, b: Any) -> None:
    """Equal trees of dataclasses, lists and dicts: the same types, arrays of the same dtype,
    shape and bytes, other values equal (NaN to NaN)."""
    if hasattr(a, "__dataclass_fields__"):
        assert type(a) is type(b)
        for name in a.__dataclass_fields__:
            assert_same_tree(getattr(a, name), getattr(b, name))
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_tree(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same_tree(a[k], b[k])
    else:
        assert a == b or (a != a and b != b)  # NaN equals NaN here


def pet_test_files() -> list[tuple[bytes, str]]:
    """The PET fixtures and every kind at versions 1.0 and 1.3 with escaped bone ids, as
    (bytes, name)."""
    out = [(p.read_bytes(), p.name) for p in sorted(PET_FIXTURES.glob("*pet"))]
    for kind in ("pet", "mpet", "bpet", "apet"):
        for version in ((1, 0), (1, 3)):
            out.append((write(build(kind, version, escape=True, rings=6, sides=5)), f"x.{kind}"))
    return out


def channel_bits(chs: list[Any]) -> list[tuple[Any, ...]]:
    """Every channel's target and the exact bytes, dtypes and shapes of its keys."""
    return [(c.node, c.path, c.times.dtype, c.times.shape, c.times.tobytes(), c.values.dtype,
             c.values.shape, c.values.tobytes()) for c in chs]


def cut_pet_tracks(cases: list[tuple[list[Any], list[tuple[float, float]]]]) -> list[Any]:
    """PET tracks made channels and cut into clips, case by case: the channels', clips' and
    notes' exact values, for comparing two ways of doing it."""
    from gamemesh.formats.pet import animation as anim

    out = []
    for tracks, bounds in cases:
        ctx = Context(None)
        chs = anim.track_channels(tracks, list(range(len(tracks))),
                                  [str(i) for i in range(len(tracks))], ctx)
        clips = anim.Clipper(chs).cut(bounds)
        out.append((channel_bits(chs), [channel_bits(c) for c in clips],
                    [(n.code, n.message) for n in ctx.notes]))
    return out


def mean_winding_dot(scene: Any) -> float:
    """The mean dot product of each face's normal (from its winding) with its corners' mean
    normal: near 1 when the winding and the normals agree."""
    dots = []
    for m in scene.meshes:
        for p in m.primitives:
            tri = p.triangles()
            fn = face_normals(p.positions, tri)
            fn /= np.linalg.norm(fn, axis=1, keepdims=True)
            assert p.normals is not None
            dots.append(np.sum(fn * p.normals[tri].mean(axis=1), axis=1))
    return float(np.concatenate(dots).mean())
