"""PET's vectorized paths against plain reference versions (timing-independent): the vertex and
bone record finders, the corner dedup of to_scene and the shared folder listings."""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context
from gamemesh.scene import Scene

read_mod = importlib.import_module("gamemesh.formats.pet.read")
ts = importlib.import_module("gamemesh.formats.pet.to_scene")
files_mod = importlib.import_module("gamemesh.formats.pet.files")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"


def test_vertex_next_of_every_offset_matches_the_walker() -> None:
    """The prefix-sum finder gives the walker's answer for every offset: runs past the
    section (-1), more than 32 pairs (-2) and escaped ids included."""
    rng = np.random.default_rng(3)
    alphabets = [np.arange(256), np.array([0, 1, 5, 100, 200, 254, 255, 0xFE, 0xFF]),
                 np.array([0, 1, 2, 3, 0xFE])]
    for trial in range(150):
        n = int(rng.integers(1, 2000))
        buf = rng.choice(alphabets[trial % 3], n).astype(np.uint8)
        s0 = int(rng.integers(0, max(1, n // 4)))
        end = int(rng.integers(s0, n + 1))
        lim = int(rng.integers(s0, end + 1))
        lim -= (lim - s0) % 2
        for head in (12, 16):
            cand = np.arange(s0, lim + 1, 2, dtype=np.int32)
            want = read_mod._vertex_next(buf, cand, end, head, read_mod._FAST_PAIRS)
            got = read_mod._next_of_offsets(buf, s0, lim, end, head)
            assert np.array_equal(want, got), (trial, head)


def _same(a: Any, b: Any) -> None:
    if hasattr(a, "__dataclass_fields__"):
        assert type(a) is type(b)
        for name in a.__dataclass_fields__:
            _same(getattr(a, name), getattr(b, name))
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert a == b


def _docs() -> list[tuple[bytes, str]]:
    out = [(p.read_bytes(), p.name) for p in sorted(FIXTURES.glob("*pet"))]
    for kind in ("pet", "mpet", "bpet", "apet"):
        for version in ((1, 0), (1, 3)):
            out.append((write(build(kind, version, escape=True, rings=6, sides=5)), f"x.{kind}"))
    return out


def test_bone_records_found_at_once_match_the_record_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _docs()
    fast = [read_mod.read(d, Context(Path(n), {})) for d, n in docs]
    monkeypatch.setattr(read_mod, "_bones_fast", lambda *a: False)
    for (d, n), doc in zip(docs, fast, strict=True):
        _same(doc, read_mod.read(d, Context(Path(n), {})))


def test_small_record_walks_match_the_vectorized_finders(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to ``_SMALL`` bones and vertices are walked one by one: the same documents (and the
    same errors) as the vectorized finders, on the fixtures, escaped ids, and mutated and cut
    copies of them."""
    docs = _docs()
    rng = np.random.default_rng(5)
    cases = list(docs)
    for d, n in docs:
        for _ in range(12):
            m = bytearray(d)
            at = rng.integers(0, len(m), 4)
            m[at[0]] = int(rng.integers(0, 256))
            m[at[1]] = rng.choice([0, 0xFE, 0xFF, 255])
            cases.append((bytes(m), n))
        cases.append((d[:int(rng.integers(8, len(d)))], n))

    def outcome(d: bytes, n: str) -> Any:
        try:
            return read_mod.read(d, Context(Path(n), {}))
        except gamemesh.FormatError as e:
            return str(e)

    small = [outcome(d, n) for d, n in cases]
    monkeypatch.setattr(read_mod, "_SMALL", 0)
    for (d, n), got in zip(cases, small, strict=True):
        want = outcome(d, n)
        if isinstance(want, str):
            assert got == want
        else:
            _same(got, want)


def _reference_primitives(scene_doc: Any, builder: Any, unit: Any) -> list[tuple[Any, ...]]:
    """The corner dedup as it was: every corner converted, then np.unique over the
    (vertex, normal, UV sets) rows of each primitive (-0.0 equal to 0.0)."""
    m = unit.doc.mesh
    bs = unit.doc.bones
    nb = bs.count if bs is not None else 0
    sk = builder.sk
    pos, _, _, main = builder._skin(m, nb, sk.world, np.arange(nb))
    nc = len(m.corner_vertex)
    normals, _ = builder._normals(unit, m, pos, sk.world, main, np.arange(nb), np.arange(nc),
                                  np.asarray(m.corner_normal))
    gnrm = ts._finite32(normals * ts.FLIP)
    cuv = np.asarray(m.corner_uv, np.float32)
    uv_all = ts._finite32(cuv.reshape(nc, cuv.shape[1], 2))
    cv = np.asarray(m.corner_vertex, np.int64)
    tex = np.asarray(m.texture, np.int64)
    tex = np.where(tex < len(unit.doc.textures), tex, -1)
    spec = m.specular if m.specular is not None else np.full(len(tex), 0xFF, np.uint8)
    key = (tex + 1) * 256 + np.asarray(spec, np.int64)
    out = []
    for k in np.unique(key):
        faces = np.flatnonzero(key == k)
        corners = (faces[:, None] * 3 + np.array([0, 2, 1])[None, :]).reshape(-1)
        rec = np.concatenate([cv[corners, None], gnrm[corners] + np.float32(0.0),
                              uv_all[corners].reshape(len(corners), -1) + np.float32(0.0)],
                             axis=1).astype(np.float64)
        _, first, inverse = np.unique(rec, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first)  # np.unique sorts by value: renumber by first occurrence
        rank = np.empty(len(first), np.int64)
        rank[order] = np.arange(len(first))
        src = corners[first[order]]
        out.append((gnrm[src], uv_all[src], rank[inverse.reshape(-1)]))
    return out


@pytest.mark.parametrize("version", [(1, 0), (1, 2), (1, 3)])
def test_corner_dedup_gives_the_scene_np_unique_gave(version: tuple[int, int]) -> None:
    """Distinct corner records converted once, merged per primitive by class: the same
    vertices, in the same order, with the same indices as the per-corner np.unique dedup,
    also with seams (a vertex whose corners differ), -0.0 normals and zero normals."""
    doc = build("pet", version, rings=6, sides=7, uv_sets=2)
    m = doc.mesh
    assert m is not None
    m.corner_normal = m.corner_normal.copy()
    m.corner_uv = m.corner_uv.copy()
    m.corner_normal[5::11] *= -1.0  # hard edges: a vertex with two normals
    m.corner_normal[7::13, 1] = -0.0
    m.corner_normal[2::17] = 0.0  # "compute it": the face's normal, per corner
    m.corner_uv[3::7, 0, 0] += 0.5  # UV seams
    doc = SPEC.read(write(doc), Context(None, {}))
    scene = SPEC.to_scene(doc, Context(None, {}))
    unit = ts.Unit(doc, None)
    builder = ts._MeshBuilder(Scene(), ts.make_skeleton(unit, Context(None, {})),
                              Context(None, {}))
    want = _reference_primitives(doc, builder, unit)
    prims = scene.meshes[0].primitives
    assert len(prims) == len(want)
    for p, (nrm, uv, indices) in zip(prims, want, strict=True):
        assert np.array_equal(p.normals, nrm)
        for s, tc in enumerate(p.texcoords):
            assert np.array_equal(tc, uv[:, s])
        assert np.array_equal(p.indices, indices)


@pytest.mark.parametrize("n", [3000, 200, 1])  # the vectorized and the dict (few rows) ways
def test_first_equal_and_first_occurrences(n: int) -> None:
    rng = np.random.default_rng(9)
    idx = rng.integers(0, 200, n)
    cols = rng.integers(0, 3, (n, 3)).astype(np.float32)
    cols[::5] *= -0.0  # bitwise: -0.0 is not 0.0 here
    rep = ts.first_equal(idx, cols)
    rows = [(int(i), c.tobytes()) for i, c in zip(idx, cols, strict=True)]
    seen: dict[tuple[int, bytes], int] = {}
    want = [seen.setdefault(r, k) for k, r in enumerate(rows)]
    assert rep.tolist() == want
    ids = rng.integers(0, 50, n)
    firsts, inverse = ts.first_occurrences(ids, 50)
    _, f = np.unique(ids, return_index=True)
    assert firsts.tolist() == sorted(f.tolist())
    assert np.array_equal(ids[firsts][inverse], ids)
    assert firsts.dtype == inverse.dtype == np.int64


def test_folder_listings_follow_changes(tmp_path: Path) -> None:
    """A listing is reused while the folder is unchanged, and a texture added later is
    found (the folder's mtime changes); a folder changed within 2 s is not cached."""
    folder = tmp_path / "m"
    folder.mkdir()
    model = folder / "a.pet"
    model.write_bytes(write(build("pet", (1, 3))))
    old = time.time() - 60
    os.utime(folder, (old, old))
    s1 = gamemesh.load(model)
    assert files_mod._LISTINGS.get((folder, str(folder))) is not None
    assert any(n.code == "pet.texture_missing" and "item1_01" in n.message for n in s1.notes)
    rgb = np.zeros((8, 8, 3), np.uint8)
    PILImage.fromarray(rgb).save(folder / "item1_01.jpg", quality=95)
    s2 = gamemesh.load(model)
    assert not any(n.code == "pet.texture_missing" and "item1_01" in n.message
                   for n in s2.notes)
    assert files_mod._LISTINGS.get((folder, str(folder))) is None  # changed just now: not kept


def test_dense_copies_record_fields_exactly() -> None:
    """The raw-row copy of strided record fields gives np.ascontiguousarray's array."""
    rng = np.random.default_rng(7)
    for nuv in (0, 1, 2, 3):
        dt = np.dtype([("vertex", "<u4"), ("normal", "<f4", (3,)), ("nuv", "u1"),
                       ("uv", "<f4", (nuv, 2))])
        raw = rng.integers(0, 256, 50 * dt.itemsize + 3, dtype=np.uint8).tobytes()
        recs = np.frombuffer(raw, dt, count=50, offset=3)
        for name in ("vertex", "normal", "nuv", "uv"):
            got, want = ts.dense(recs[name]), np.ascontiguousarray(recs[name])
            assert got.flags.c_contiguous and got.dtype == want.dtype
            assert got.shape == want.shape and got.tobytes() == want.tobytes()


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
    monkeypatch.setattr(ts, "_CUT_ROWS", chunk)
    from gamemesh.formats.pet.document import Track

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
        channels = ts.track_channels(tracks, list(range(len(tracks))),
                                       [str(i) for i in range(len(tracks))], Context(None))
        frames = [(int(f0), int(max(f0, f1))) for f0, f1 in rng.integers(0, 45, (4, 2))]
        bounds = [(f0 / 30.0, f1 / 30.0) for f0, f1 in frames]
        for motion, got in zip(bounds, ts.Clipper(channels).cut(bounds), strict=True):
            assert len(got) == len(channels)
            for ch, cut in zip(channels, got, strict=True):
                assert (cut.node, cut.path) == (ch.node, ch.path)
                assert (cut.times.tobytes(), cut.values.tobytes()) == _reference_cut(ch, *motion)


def test_few_rows_dedup_by_dict_matches_the_hash_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(13)
    cases = [rng.integers(0, 3, (int(rng.integers(1, 300)), int(rng.integers(1, 9))))
             .astype(np.uint32) for _ in range(200)]
    small = [ts._unique_words(rows) for rows in cases]
    monkeypatch.setattr(ts, "_SMALL_ROWS", -1)
    for rows, (first, inverse) in zip(cases, small, strict=True):
        want_first, want_inverse = ts._unique_words(rows)
        assert first.dtype == want_first.dtype and np.array_equal(first, want_first)
        assert inverse.dtype == want_inverse.dtype and np.array_equal(inverse, want_inverse)


def test_positive_weight_counts_by_word_match_count_nonzero() -> None:
    rng = np.random.default_rng(17)
    for k in (1, 4, 8, 12):
        w = rng.random((500, k))
        w[rng.random((500, k)) < 0.5] = 0.0
        w[:5, 0] = [-1.0, 0.0, np.nan, 1.0, 5e-324]
        w[6] = 1.0
        want = np.count_nonzero(np.ascontiguousarray(w.T) > 0, axis=0)
        assert np.array_equal(ts._count_positive(w), want)
