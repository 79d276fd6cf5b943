"""PET's vectorized paths against plain reference versions (timing-independent): the vertex and
bone record finders, the corner dedup of to_scene and the shared folder listings."""

from __future__ import annotations

import importlib
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import gamemesh
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context
from gamemesh.scene import Scene

read_mod = importlib.import_module("gamemesh.formats.pet.read")
ts = importlib.import_module("gamemesh.formats.pet.to_scene")
anim = importlib.import_module("gamemesh.formats.pet.animation")
corner_mod = importlib.import_module("gamemesh.formats.pet.corners")
infl = importlib.import_module("gamemesh.formats.pet.influences")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
files_mod = importlib.import_module("gamemesh.formats.pet.files")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"



def test_bone_range_by_one_unsigned_comparison() -> None:
    rng = np.random.default_rng(53)
    for dtype in (np.int32, np.int64, np.int16, np.uint8, np.float64):
        b = rng.integers(-300, 300, 2000).astype(dtype)
        b[:3] = (0, 255, 254)
        for nb in (0, 1, 9, 255, 256, 1000):
            want = (b >= 0) & (b < nb)
            assert np.array_equal(infl.bone_in_range(b, nb), want), (dtype, nb)


def _converted_and_reference(data: bytes) -> tuple[Any, Any]:
    """The primitives of a written PET file's scene, and :func:`_reference_primitives`'s
    answer for the same file."""
    doc = SPEC.read(data, Context(None, {}))
    scene = SPEC.to_scene(doc, Context(None, {}))
    unit = skel.Unit(doc, None)
    builder = ts._MeshBuilder(Scene(), skel.make_skeleton(unit, Context(None, {})),
                              Context(None, {}))
    return scene.meshes[0].primitives, _reference_primitives(doc, builder, unit)


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
    gnrm = corner_mod._finite32(normals * ts.FLIP)
    cuv = np.asarray(m.corner_uv, np.float32)
    uv_all = corner_mod._finite32(cuv.reshape(nc, cuv.shape[1], 2))
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
@pytest.mark.parametrize("size", [(6, 7), (30, 20)])  # the generic and the records' way
def test_corner_dedup_gives_the_scene_np_unique_gave(version: tuple[int, int],
                                                     size: tuple[int, int]) -> None:
    """Distinct corner records converted once, merged per primitive by class: the same
    vertices, in the same order, with the same indices as the per-corner np.unique dedup,
    also with seams (a vertex whose corners differ), -0.0 normals and zero normals."""
    doc = build("pet", version, rings=size[0], sides=size[1], uv_sets=2)
    m = doc.mesh
    assert m is not None
    m.corner_normal = m.corner_normal.copy()
    m.corner_uv = m.corner_uv.copy()
    m.corner_normal[5::11] *= -1.0  # hard edges: a vertex with two normals
    m.corner_normal[7::13, 1] = -0.0
    m.corner_normal[2::17] = 0.0  # "compute it": the face's normal, per corner
    m.corner_normal[m.corner_vertex % 7 == 3] = 0.0  # equal records with a zero normal
    m.corner_uv[3::7, 0, 0] += 0.5  # UV seams
    prims, want = _converted_and_reference(write(doc))
    assert len(prims) == len(want)
    for p, (nrm, uv, indices) in zip(prims, want, strict=True):
        assert np.array_equal(p.normals, nrm)
        for s, tc in enumerate(p.texcoords):
            assert np.array_equal(tc, uv[:, s])
        assert np.array_equal(p.indices, indices)


@pytest.mark.parametrize("ntex", [1, 3, 12])
def test_primitives_found_at_once_match_np_unique_per_primitive(
        monkeypatch: pytest.MonkeyPatch, ntex: int) -> None:
    """All primitives' vertices found in one pass over the corners (faces grouped by key by
    one pass per key, or by a stable sort) give the per-primitive np.unique dedup's vertices
    and indices, and the same GLB bytes either way of grouping."""
    rng = np.random.default_rng(ntex)
    for trial in range(3):
        doc = build("pet", (1, 3), rings=int(rng.integers(12, 25)),
                    sides=int(rng.integers(12, 25)), uv_sets=2)
        m = doc.mesh
        assert m is not None
        nf = len(m.texture)
        m.corner_normal = m.corner_normal.copy()
        m.corner_uv = m.corner_uv.copy()
        m.corner_normal[int(rng.integers(0, 5))::9] *= -1.0
        m.corner_normal[2::29] = 0.0
        m.corner_uv[int(rng.integers(0, 5))::7, 0, 0] += 0.5
        m.texture = rng.integers(0, ntex, nf).astype(np.uint8)
        m.specular = rng.choice([0, 255], nf).astype(np.uint8)
        text = doc.get(b"TEXT")
        text.textures = [text.textures[k % len(text.textures)] for k in range(ntex)]
        data = write(doc)
        prims, want = _converted_and_reference(data)
        assert len(prims) == len(want) > 0
        for p, (nrm, uv, indices) in zip(prims, want, strict=True):
            assert np.array_equal(p.normals, nrm)
            for s, tc in enumerate(p.texcoords):
                assert np.array_equal(tc, uv[:, s])
            assert np.array_equal(p.indices, indices)
        glbs = []
        for few in (0, 100):
            monkeypatch.setattr(ts, "_FEW_KEYS", few)
            buf = io.BytesIO()
            gamemesh.save(gamemesh.load(data, format="pet"), buf, format="glb")
            glbs.append(buf.getvalue())
        assert glbs[0] == glbs[1], trial


@pytest.mark.parametrize("uv_sets", [1, 2, 3])
def test_corner_records_give_the_generic_corner_rows(monkeypatch: pytest.MonkeyPatch,
                                                     uv_sets: int) -> None:
    """The corners compared and gathered as the reader's record words give the bits of the
    generic way (dense copies, first_equal), seams, NaN and -0.0 included."""
    doc = build("pet", (1, 3), rings=30, sides=20, uv_sets=uv_sets)
    m = doc.mesh
    assert m is not None
    m.corner_normal = m.corner_normal.copy()
    m.corner_uv = m.corner_uv.copy()
    m.corner_normal[5::11] *= -1.0
    m.corner_normal[7::13, 1] = -0.0
    m.corner_normal[9::19, 2] = np.nan
    m.corner_uv[3::7, -1, 0] += 0.5
    m.corner_uv[4::23, 0, 1] = -0.0
    data = write(doc)
    taken: list[bool] = []
    records = corner_mod._corner_records
    monkeypatch.setattr(ts, "_corner_records",
                        lambda mesh: taken.append(True) or records(mesh))
    fast = gamemesh.load(data, format="pet")
    assert taken
    # Rows numbered by first corner (as when a vertex has no corner), then the fields' way.
    monkeypatch.setattr(ts, "record_rows", lambda *a: None)
    by_corner = gamemesh.load(data, format="pet")
    monkeypatch.setattr(ts, "_corner_records", lambda mesh: None)
    slow = gamemesh.load(data, format="pet")
    for a, b in [*zip(fast.meshes[0].primitives, slow.meshes[0].primitives, strict=True),
                 *zip(by_corner.meshes[0].primitives, slow.meshes[0].primitives, strict=True)]:
        for name in ("positions", "normals", "indices", "joints", "weights"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
        assert [t.tobytes() for t in a.texcoords] == [t.tobytes() for t in b.texcoords]


def test_first_equal_records_matches_first_equal() -> None:
    rng = np.random.default_rng(41)
    for sets in (1, 2, 3):
        n = 5000
        cv = rng.integers(0, 300, n).astype(np.int64)
        normal = rng.integers(0, 3, (n, 3)).astype(np.float32)
        normal[::7] *= -0.0
        normal[::11, 0] = np.nan
        uv = rng.integers(0, 2, (n, 2 * sets)).astype(np.float32)
        head = np.concatenate([cv.astype(np.uint32)[:, None], normal.view(np.uint32)],
                              axis=1).view(np.uint64)
        words = np.ascontiguousarray(uv).view(np.uint64)
        want = corner_mod.first_equal(cv, normal, uv)
        assert np.array_equal(corner_mod._first_equal_records(cv, head, words), want)
        # With the vertex count known (an index bound past the largest index used).
        got = corner_mod._first_equal_records(cv, head, words, 300 + sets)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_record_rows_by_vertex_group_as_first_equal_records() -> None:
    """Rows numbered by vertex (then the other records) group the corners as the first
    equal corner does, each row's first corner being its group's first; None when a vertex
    has no corner."""
    rng = np.random.default_rng(59)
    for trial in range(12):
        n, nv = 4000, (300 if trial % 3 else 4100)
        cv = np.concatenate([rng.permutation(nv)[:min(nv, n)],
                             rng.integers(0, nv, max(0, n - nv))]).astype(np.int64)[:n]
        normal = rng.integers(0, 1 + trial % 3, (n, 3)).astype(np.float32)
        normal[::7] *= -0.0
        normal[::11, 0] = np.nan
        uv = rng.integers(0, 1 + trial % 2, (n, 2)).astype(np.float32)
        head = np.concatenate([cv.astype(np.uint32)[:, None], normal.view(np.uint32)],
                              axis=1).view(np.uint64)
        words = np.ascontiguousarray(uv).view(np.uint64)
        want = corner_mod._first_equal_records(cv, head, words)
        got = corner_mod.record_rows(cv, head, words, nv)
        if nv > n:
            assert got is None
            continue
        assert got is not None
        row, first = got
        assert np.array_equal(first.take(row), want)
        assert len(first) == len(np.unique(want)) and row.dtype == first.dtype == np.int64
        assert np.array_equal(row[first], np.arange(len(first)))


def _special_rows(rng: np.random.Generator, n: int) -> npt.NDArray[np.float64]:
    """Rows of 3 float64 with -0.0, NaN, infinities, tiny and huge values among them."""
    a = rng.normal(size=(n, 3))
    flat = a.reshape(-1)
    for value in () if not n else (-0.0, 0.0, np.nan, np.inf, -np.inf, 5e-324, 1e308, -1e308):
        flat[rng.integers(0, flat.size, 7)] = value
    return a


def test_column_flip_and_division_match_the_broadcasts() -> None:
    """z flipped on one column and rows divided column by column: the bits of ``a * FLIP``
    and ``a / d[:, None]`` (NaN as NaN: the converted values clean them)."""
    rng = np.random.default_rng(43)
    for n in (0, 1, 5, 600, 1000):
        a = _special_rows(rng, n)
        d = np.abs(_special_rows(rng, n)[:, 0])
        d[::5] = -d[::5]
        with np.errstate(all="ignore"):  # as to_scene runs
            pairs = ((ts._flip_z(a), a * ts.FLIP), (ts._divide_rows(a, d), a / d[:, None]))
        for got, want in pairs:
            assert got.shape == want.shape and got.dtype == want.dtype
            both_nan = np.isnan(got) & np.isnan(want)
            assert np.array_equal(np.where(both_nan, 0.0, got).view(np.uint64),
                                  np.where(both_nan, 0.0, want).view(np.uint64))
            assert np.array_equal(np.isnan(got), np.isnan(want))
            assert np.array_equal(corner_mod._finite32(got).view(np.uint32),
                                  corner_mod._finite32(want).view(np.uint32))


def test_lengths_checked_for_finite_values_match_the_values_check() -> None:
    """Rows of 3 whose values are checked only when a length is not finite: the rows and
    lengths of checking the values first (NaN, infinities and huge finite values)."""
    rng = np.random.default_rng(61)
    for n in (1, 7, 900):
        for huge in (False, True):
            a = _special_rows(rng, n) if n > 1 else np.array([[np.nan, 1.0, -0.0]])
            if huge:
                a[rng.integers(0, n, 3), 0] = 1e200  # finite, but its square is not
            if n == 7:
                a = np.abs(a) + 0.5  # all finite
            want = a if np.isfinite(a).all() else np.nan_to_num(a, nan=0.0, posinf=0.0,
                                                                neginf=0.0)
            with np.errstate(all="ignore"):
                want_len = np.sqrt(want[:, 0] ** 2 + want[:, 1] ** 2 + want[:, 2] ** 2)
                got, got_len = ts._finite_lengths(a[:, :3].copy())
            assert np.array_equal(got.view(np.uint64), want.view(np.uint64))
            assert np.array_equal(got_len.view(np.uint64), want_len.view(np.uint64))


def test_gl_corners_by_column_match_the_broadcast() -> None:
    rng = np.random.default_rng(67)
    for n in (0, 1, 500, 513, 2000):
        faces = rng.permutation(3 * n + 1)[:n].astype(np.intp)
        want = (faces[:, None] * 3 + np.array([0, 2, 1])).reshape(-1)
        got = ts._gl_corners(faces)
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_record_normals_in_float64_match_the_field_conversion() -> None:
    """The records' normals converted as whole words give the (k, 3) view's conversion."""
    rng = np.random.default_rng(47)
    n = 700
    with np.errstate(over="ignore"):
        normal = _special_rows(rng, n).astype(np.float32)
    head = np.concatenate([rng.integers(0, 99, n).astype(np.uint32)[:, None],
                           normal.view(np.uint32)], axis=1).view(np.uint64)
    src = ts._RecordCorners(np.zeros(n, np.int64), 1, False, np.arange(n), np.arange(n), False,
                            head, np.zeros((n, 1), np.uint64))
    sel = rng.integers(0, n, 300)
    want = normal[sel].astype(np.float64)
    got = src.normals64(sel)
    assert got.dtype == np.float64
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize("n", [3000, 200, 1])  # the vectorized and the dict (few rows) ways
def test_first_equal_and_first_occurrences(n: int) -> None:
    rng = np.random.default_rng(9)
    idx = rng.integers(0, 200, n)
    cols = rng.integers(0, 3, (n, 3)).astype(np.float32)
    cols[::5] *= -0.0  # bitwise: -0.0 is not 0.0 here
    rep = corner_mod.first_equal(idx, cols)
    rows = [(int(i), c.tobytes()) for i, c in zip(idx, cols, strict=True)]
    seen: dict[tuple[int, bytes], int] = {}
    want = [seen.setdefault(r, k) for k, r in enumerate(rows)]
    assert rep.tolist() == want
    # Mostly one row per index (the few later rows alone are compared), NaN and -0.0 among
    # the bits, in parts of odd and even widths.
    idx = rng.permutation(n)
    idx[rng.integers(0, n, max(1, n // 20))] = idx[rng.integers(0, n, max(1, n // 20))]
    cols = rng.integers(0, 2, (n, 3)).astype(np.float32)
    cols[::7, 1] = np.nan
    cols[::3, 2] *= -0.0
    wide = rng.integers(0, 2, (n, 4)).astype(np.float32)
    rep = corner_mod.first_equal(idx, cols, wide)
    rows = [(int(i), c.tobytes() + u.tobytes()) for i, c, u in zip(idx, cols, wide, strict=True)]
    seen = {}
    want = [seen.setdefault(r, k) for k, r in enumerate(rows)]
    assert rep.tolist() == want
    # Each row's first row of its index given (as rows numbered by vertex know it).
    heads: dict[int, int] = {}
    given = np.array([heads.setdefault(int(i), k) for k, i in enumerate(idx)], np.int64)
    assert corner_mod.first_equal(idx, cols, wide, heads=given).tolist() == want
    ids = rng.integers(0, 50, n)
    firsts, inverse = corner_mod.first_occurrences(ids, 50)
    _, f = np.unique(ids, return_index=True)
    assert firsts.tolist() == sorted(f.tolist())
    assert np.array_equal(ids[firsts][inverse], ids)
    assert firsts.dtype == inverse.dtype == np.int64


def test_dense_copies_record_fields_exactly() -> None:
    """The raw-row copy of strided record fields gives np.ascontiguousarray's array."""
    rng = np.random.default_rng(7)
    for nuv in (0, 1, 2, 3):
        dt = np.dtype([("vertex", "<u4"), ("normal", "<f4", (3,)), ("nuv", "u1"),
                       ("uv", "<f4", (nuv, 2))])
        raw = rng.integers(0, 256, 50 * dt.itemsize + 3, dtype=np.uint8).tobytes()
        recs = np.frombuffer(raw, dt, count=50, offset=3)
        for name in ("vertex", "normal", "nuv", "uv"):
            got, want = corner_mod.dense(recs[name]), np.ascontiguousarray(recs[name])
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
    monkeypatch.setattr(anim, "_CUT_ROWS", chunk)
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
        channels = anim.track_channels(tracks, list(range(len(tracks))),
                                       [str(i) for i in range(len(tracks))], Context(None))
        frames = [(int(f0), int(max(f0, f1))) for f0, f1 in rng.integers(0, 45, (4, 2))]
        bounds = [(f0 / 30.0, f1 / 30.0) for f0, f1 in frames]
        for motion, got in zip(bounds, anim.Clipper(channels).cut(bounds), strict=True):
            assert len(got) == len(channels)
            for ch, cut in zip(channels, got, strict=True):
                assert (cut.node, cut.path) == (ch.node, ch.path)
                assert (cut.times.tobytes(), cut.values.tobytes()) == _reference_cut(ch, *motion)


def test_few_rows_dedup_by_dict_matches_the_hash_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(13)
    cases = [rng.integers(0, 3, (int(rng.integers(1, 300)), int(rng.integers(1, 9))))
             .astype(np.uint32) for _ in range(200)]
    small = [corner_mod._unique_words(rows) for rows in cases]
    monkeypatch.setattr(corner_mod, "_SMALL_ROWS", -1)
    for rows, (first, inverse) in zip(cases, small, strict=True):
        want_first, want_inverse = corner_mod._unique_words(rows)
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
        assert np.array_equal(infl._count_positive(w), want)


def test_influences_by_column_match_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused column-by-column skin weights give the bits (and notes) of the general path
    (``_skin``'s (N, P) weights then ``limit_influences``): invalid and repeated bones,
    unweighted vertices, every slot count it takes, with and without ``max_influences``."""
    rng = np.random.default_rng(23)
    for trial in range(60):
        n, p, nb = int(rng.integers(1, 2500)), int(rng.integers(1, 8)), int(rng.integers(1, 9))
        m = SimpleNamespace(
            inf_bone=rng.integers(-2, nb + 2, (n, p)).astype(np.int32),
            inf_weight=rng.choice([0, 0, 1, 7, 85, 128, 200, 255], (n, p)).astype(np.uint8),
            inf_count=rng.integers(0, p + 1, n).astype(np.int32), vertex_count=n,
            positions=rng.normal(size=(n, 3)).astype(np.float32))
        wm = np.tile(np.eye(4), (nb, 1, 1))
        wm[:, :3, :] += rng.normal(size=(nb, 3, 4)) * 0.3
        opts = {"max_influences": 2} if trial % 3 == 0 else {}
        got: list[Any] = []
        for slots in (ts._COLUMN_SLOTS, 0):  # 0: the general path
            monkeypatch.setattr(ts, "_COLUMN_SLOTS", slots)
            ctx = Context(None, dict(opts), [])
            b = ts._MeshBuilder(Scene(), SimpleNamespace(world=wm), ctx)  # type: ignore[arg-type]
            pos, joints, weights, main = b._skin(m, nb, wm, np.arange(nb))  # type: ignore[arg-type]
            inf = joints if slots else infl._clean_influences(joints, weights, ctx)
            got.append((pos, main, inf, [(x.code, x.message) for x in ctx.notes]))
        (pa, ma, ia, na), (pb, mb, ib, nb_) = got
        assert pa.tobytes() == pb.tobytes() and np.array_equal(ma, mb) and na == nb_, trial
        assert ia.joints.dtype == ib.joints.dtype and ia.weights.dtype == ib.weights.dtype
        assert ia.joints.tobytes() == ib.joints.tobytes(), trial
        assert ia.weights.tobytes() == ib.weights.tobytes(), trial
        assert np.array_equal(ia.used, ib.used), trial
    assert any(code == "pet.vertex_unweighted" for code, _ in na)


def test_finite32_in_range_shortcut_matches_the_clip() -> None:
    rng = np.random.default_rng(29)
    for dtype in (np.float32, np.float64):
        for bad in (None, np.nan, np.inf, -np.inf, 2e30, -2e30, 1e30, -0.0):
            a = rng.normal(size=(1000, 3)).astype(dtype)
            if bad is not None:
                a[17, 1] = bad
            want = np.minimum(np.maximum(a.astype(np.float64), -1e30), 1e30)
            want[np.isnan(want)] = 0.0
            got = corner_mod._finite32(a)
            assert got.dtype == np.float32
            assert got.tobytes() == want.astype(np.float32).tobytes(), (dtype, bad)
