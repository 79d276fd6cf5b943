"""SPLASHPACK's fixed-point, page and track arithmetic against plain definitions written in the
test (the oracles), bit for bit."""

from __future__ import annotations

import importlib

import numpy as np

cv = importlib.import_module("gamemesh.formats.splashpack.conventions")
cm = importlib.import_module("gamemesh.formats.splashpack.common")


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


def _rot(axis: int, a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    i, j = (axis + 1) % 3, (axis + 2) % 3  # right-handed about the axis
    m = np.eye(3)
    m[i, i], m[i, j], m[j, i], m[j, j] = c, -s, s, c
    return m


def test_track_to_quat_is_unity_yxz_mirrored_on_x() -> None:
    """Raw keys (-x, y, -z) in 1024ths of a half turn -> R = Ry Rx Rz in Unity, mirrored on X
    for glTF, for short and long tracks alike."""
    q = cv.track_to_quat([[0, 0, 0], [0, 512, 0], [512, 0, 0]])
    h = np.sqrt(0.5)
    np.testing.assert_allclose(q, [[0, 0, 0, 1], [0, -h, 0, h], [-h, 0, 0, h]], atol=1e-15)
    rng = np.random.default_rng(5)
    for n in (1, 5, 40):
        raw = rng.integers(-2048, 2048, (n, 3))
        for (x, y, z, w), (a, b, c) in zip(cv.track_to_quat(raw), raw * cv.ANGLE, strict=True):
            unity = _rot(1, b) @ _rot(0, -a) @ _rot(2, -c)
            want = np.diag([-1.0, 1, 1]) @ unity @ np.diag([-1.0, 1, 1])
            got = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
            np.testing.assert_allclose(got, want, atol=1e-12)
