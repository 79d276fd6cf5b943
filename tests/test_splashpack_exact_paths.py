"""SPLASHPACK's shortcuts against the general code they stand in for, bit for bit."""

from __future__ import annotations

import importlib
import itertools

import numpy as np

cv = importlib.import_module("gamemesh.formats.splashpack.conventions")
cm = importlib.import_module("gamemesh.formats.splashpack.common")


def _signed_permutations() -> list[list[int]]:
    out = []
    for perm in itertools.permutations(range(3)):
        for sg in itertools.product((1, -1), repeat=3):
            m = np.zeros((3, 3), np.int64)
            for i, j in enumerate(perm):
                m[i, j] = sg[i] * 4096
            out.append(m.reshape(9).tolist())
    return out


def test_rotation_table_gives_the_svd_path_bits() -> None:
    """Objects whose matrix is a rotation already skip the SVD: for every signed permutation
    (proper ones from the table, improper ones through the SVD), alone, mixed with other
    matrices, in batches on either side of the few-objects threshold, int16 or int32."""
    perms = _signed_permutations()
    assert len(cv._exact_rotations()) == 24
    rng = np.random.default_rng(14)
    for trial in range(60):
        n_perm = int(rng.integers(0, 30))
        n_other = int(rng.integers(0, 30))
        rows = [perms[int(k)] for k in rng.integers(0, len(perms), n_perm)]
        rows += rng.integers(-4200, 4200, (n_other, 9)).tolist()
        if trial % 5 == 0:
            rows.append([0] * 9)
        if not rows:
            continue
        order = rng.permutation(len(rows))
        raw = np.array([rows[i] for i in order], dtype=np.int16 if trial % 2 else np.int32)
        got = cv.object_rotations(raw)
        want = cv._rotations_svd(raw)
        assert repr(got) == repr(want), trial  # repr: the signs of zeros count
    raw = np.array(perms, dtype=np.int32)
    assert repr(cv.object_rotations(raw)) == repr(cv._rotations_svd(raw))
    for p in perms:
        one = np.array([p], dtype=np.int32)
        assert repr(cv.object_rotations(one)) == repr(cv._rotations_svd(one))


def _old_row_length(a: np.ndarray) -> np.ndarray:
    x, y, z = a[:, 0], a[:, 1], a[:, 2]
    return np.sqrt(x * x + y * y + z * z)[:, None]


def test_row_length_matches_the_written_out_sum() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=(500, 3)) * 10.0 ** rng.integers(-200, 200, (500, 3))
    a[:20] = rng.choice([0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-320], (20, 3))
    with np.errstate(all="ignore"):
        assert cm._row_length(a).tobytes() == _old_row_length(a).tobytes()


def test_4bpp_page_decode_matches_the_array_palette_path() -> None:
    from gamemesh.textures import psx

    rng = np.random.default_rng(9)
    for trial in range(20):
        raw = rng.integers(0, 0x10000, (psx.PAGE, psx.PAGE // 4), dtype=np.uint16)
        palette = rng.integers(0, 0x10000, 16, dtype=np.uint16)
        palette[rng.integers(0, 16, 3)] = rng.choice([0x0000, 0x8000, 0x7FFF, 0xFFFF], 3)
        count = None if trial % 3 == 0 else int(rng.integers(0, 20))
        want_pal = palette.copy()
        if count is not None:
            want_pal[min(count, 16):] = psx.TRANSPARENT
        rgba = psx._expand(want_pal).reshape(16, 4)
        lo, hi = raw.view(np.uint8) & 0x0F, raw.view(np.uint8) >> 4
        want = np.stack([rgba[lo], rgba[hi]], axis=2).reshape(psx.PAGE, psx.PAGE, 4)
        got = psx.decode_indexed(raw, 4, palette, count)
        assert got.tobytes() == want.tobytes(), trial
        assert [psx._rgba_word(w) for w in want_pal.tolist()] == \
            psx._expand(want_pal).view("<u4").reshape(-1).tolist()


def test_light_fields_match_the_array_arithmetic() -> None:
    from pathlib import Path

    from gamemesh.formats.splashpack.modern.read import read_modern
    from gamemesh.registry import Context

    mts = importlib.import_module("gamemesh.formats.splashpack.modern.to_scene")
    path = Path(__file__).parent / "fixtures" / "splashpack_modern" / "v24.splashpack"
    doc = read_modern(path.read_bytes())
    rng = np.random.default_rng(24)
    for _ in range(50):
        rec = doc.lights[0].record
        rec["pos"] = rng.integers(-2**31, 2**31, 3)
        rec["radius"] = rng.integers(-2**31, 2**31)
        rec["rgb"] = rng.integers(0, 256, 3)
        s = float(rng.uniform(1e-3, 1.0))
        b = mts._Builder(doc, Context(), s)
        mts._lights(b)
        node, light = b.scene.nodes[-1], b.scene.lights[-1]
        want = rec[0]["pos"].astype(np.float64) * cv.AXES * s
        assert np.array(node.translation).tobytes() == want.tobytes()
        assert light.color == tuple(float(c) / 255 for c in rec[0]["rgb"])
        assert light.range == (float(rec[0]["radius"]) * s or None)


def test_bone_trs_matches_the_masked_sign_flip() -> None:
    from gamemesh.scene.math import matrix_to_quat

    rng = np.random.default_rng(12)
    for n in (1, 5, 62, 300):
        r = rng.integers(-32768, 32768, (n, 9)).astype(np.int16)
        r[: n // 3] = np.where(rng.random((n // 3, 9)) < 0.5, 0, r[: n // 3])  # some singular
        r[n // 2:] *= np.array([-1, 1, 1] * 3, dtype=np.int16)  # mirrored X
        t = rng.integers(-32768, 32768, (n, 3)).astype(np.int16)
        basis = np.multiply(r.reshape(-1, 3, 3), cv._CRC_FP12, dtype=np.float64)
        sc = np.sqrt(np.add.reduce(basis * basis, axis=1))
        sc[np.linalg.det(basis) < 0, 0] *= -1
        safe = np.where(sc == 0, 1.0, sc)
        q = matrix_to_quat(basis / safe[:, None, :])
        tt, gq, gs = cv.bone_trs(r, t, 0.0244)
        assert gs.tobytes() == sc.tobytes() and gq.tobytes() == q.tobytes()
        assert tt.tobytes() == np.multiply(t, cv.AXES * 0.0244, dtype=np.float64).tobytes()


def _clip_walk(w, bones):  # type: ignore[no-untyped-def]
    """The Reader walk of one skin clip, as modern/read.py does it when the fast path declines."""
    from gamemesh.formats.splashpack.modern import layout as ml

    name = w.bytes(w.u8("name_len"), "name")
    if w.u8("nul") != 0:
        return None
    flags, fps = w.u8("flags"), w.u8("fps")
    w.align(2)
    frames = w.u16("frame_count")
    mats = w.array(ml.BONE_MATRIX, frames * bones, "matrices")
    return name, flags, fps, mats.reshape(frames, bones)


def test_skin_clip_fast_read_matches_the_reader_walk() -> None:
    from gamemesh.binary import Reader
    from gamemesh.errors import FormatError
    from gamemesh.formats.splashpack.modern.read import _clip_fast

    rng = np.random.default_rng(21)
    checked = 0
    for trial in range(3000):
        size = int(rng.integers(1, 200))
        data = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        pos = int(rng.integers(0, size))
        if trial % 2:  # a plausible clip: short name, NUL, few frames
            k = int(rng.integers(0, 6))
            data[pos:pos + 1] = bytes([k])
            if pos + 1 + k < size:
                data[pos + 1 + k] = 0
            at = (pos + 1 + k + 4) // 2 * 2
            if at + 1 < size:
                data[at], data[at + 1] = int(rng.integers(0, 4)), 0
        bones = int(rng.integers(0, 4))
        fast_r, walk_r = Reader(bytes(data), "t", pos), Reader(bytes(data), "t", pos)
        got = _clip_fast(fast_r, bones)
        try:
            want = _clip_walk(walk_r, bones)
        except FormatError:
            want = None
        if got is None:
            assert fast_r.pos == pos  # declined without moving: the walk starts afresh
            continue
        assert want is not None, trial
        assert (got.name, got.flags, got.fps) == want[:3]
        assert got.matrices.tobytes() == want[3].tobytes()
        assert got.matrices.shape == want[3].shape and fast_r.pos == walk_r.pos
        checked += 1
    assert checked > 100


def test_tracks_in_time_order_convert_as_reordered_ones() -> None:
    """Keys already in time order skip the reordering copy: the channel values are those of
    the reordered keys, for position and rotation tracks, in order or not."""
    from pathlib import Path

    from gamemesh.formats.splashpack.modern import layout as ml
    from gamemesh.formats.splashpack.modern.read import read_modern
    from gamemesh.registry import Context

    mts = importlib.import_module("gamemesh.formats.splashpack.modern.to_scene")
    path = Path(__file__).parent / "fixtures" / "splashpack_modern" / "v24.splashpack"
    doc = read_modern(path.read_bytes())
    rng = np.random.default_rng(4)
    tr = doc.animations[0].tracks[0]
    for trial in range(40):
        keys = np.zeros(int(rng.integers(1, 10)), ml.KEY)
        frames = rng.choice(4000, len(keys), replace=False)
        keys["frame"] = np.sort(frames) if trial % 2 else frames
        keys["v"] = rng.integers(-32768, 32768, (len(keys), 3))
        tr.keys = keys
        tr.type = ml.TRACK_OBJ_POS if trial % 4 < 2 else ml.TRACK_OBJ_ROT
        b = mts._Builder(doc, Context(), 0.0244)
        mts._objects(b)
        mts._sequence(b, doc.animations[0], "animation", 0)
        anim = b.scene.animations[-1]
        assert anim.extras["splashpack"] == {"animation": 0, "native_tracks": []}
        ch = anim.channels[0]
        order = np.argsort(keys["frame"] & 0x1FFF, kind="stable")
        vals = keys["v"][order]
        if tr.type == ml.TRACK_OBJ_POS:
            want = (vals.astype(np.float64) * cv.AXES * 0.0244).astype(np.float32)
        else:
            want = cv.track_to_quat(vals).astype(np.float32)
        assert ch.values.tobytes() == want.tobytes(), trial


def _old_normals(stored, v, scale):  # type: ignore[no-untyped-def]
    n = np.multiply(stored, cv.AXES)
    ln = _old_row_length(n)
    out = np.divide(n, np.where(ln == 0, 1, ln), dtype=np.float64)
    zero = np.flatnonzero(ln[:, 0] == 0)
    if zero.size:
        w = np.multiply(v[zero], scale)
        faces = np.cross(w[:, 2] - w[:, 0], w[:, 1] - w[:, 0])
        fl = _old_row_length(faces)
        out[zero] = np.where(fl > 0, faces / np.where(fl == 0, 1, fl), np.array([0.0, 1.0, 0.0]))
    return out.astype(np.float32)


def test_normals_match_the_two_comparison_version() -> None:
    rng = np.random.default_rng(8)
    for n in (1, 3, 50, 2000):
        stored = rng.integers(-32768, 32768, (n, 3)).astype(np.int16)
        stored[rng.random(n) < 0.3] = 0  # faces computed from the corners
        v = rng.integers(-32768, 32768, (n, 3, 3)).astype(np.int16)
        v[: n // 4, 1] = v[: n // 4, 0]  # some degenerate faces
        scale = cv.AXES * 0.0244
        assert cm._normals(stored, v, scale).tobytes() == _old_normals(stored, v, scale).tobytes()
