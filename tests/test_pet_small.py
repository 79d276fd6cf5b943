"""PET's small-file paths (plain-Python walks over a few records, keys or bones) against the
general ones they stand in for: the same documents, channels, clips, bones and errors, bit for
bit (timing-independent)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import assert_same_tree, cut_pet_tracks

import gamemesh
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context

read_mod = importlib.import_module("gamemesh.formats.pet.read")
ts = importlib.import_module("gamemesh.formats.pet.to_scene")
anim = importlib.import_module("gamemesh.formats.pet.animation")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
files_mod = importlib.import_module("gamemesh.formats.pet.files")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"


def _random_tracks(rng: np.random.Generator, dtype: Any = np.float32) -> list[Any]:
    """Tracks with repeated, unsorted, negative and non-finite times and values."""
    from gamemesh.formats.pet.document import Track

    tracks = []
    for bone in range(int(rng.integers(1, 6))):
        keys = []
        for width in (3, 4, 3):
            n = int(rng.integers(0, 9))
            t = rng.integers(-2, 30, n) / 30.0 + rng.choice([0.0, 0.0, 1e-5, -3e-5], n)
            if rng.random() < 0.5:
                t = np.sort(t)
            v = rng.normal(size=(n, width)) * rng.choice([1.0, 1e30, 1e-20, 1e-300], (n, 1))
            rows = np.concatenate([t[:, None], v], 1)
            if n and rng.random() < 0.3:
                rows[rng.integers(0, n), rng.integers(0, width + 1)] = rng.choice(
                    [np.nan, np.inf, -np.inf, -0.0, 0.0])
            if n > 1 and rng.random() < 0.3:
                rows[1, 0] = rows[0, 0]
            keys.append(rows.astype(dtype))
        tracks.append(Track(bone=bone, pos=keys[0], rot=keys[1], scale=keys[2]))
    return tracks



def test_few_keys_channels_and_clips_match_the_numpy_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk over a few keys as Python floats gives the vectorized way's channels and clips
    bit for bit, with the same notes."""
    rng = np.random.default_rng(21)
    cases = []
    for trial in range(400):
        tracks = _random_tracks(rng, np.float64 if trial % 4 == 3 else np.float32)
        frames = [(int(f0), int(max(f0, f1)) if trial % 3 else int(f1))
                  for f0, f1 in rng.integers(0, 35, (int(rng.integers(1, 5)), 2))]
        cases.append((tracks, [(f0 / 30.0, max(f0, f1) / 30.0) for f0, f1 in frames]))

    def run() -> list[Any]:
        return cut_pet_tracks(cases)

    monkeypatch.setattr(anim, "_SMALL_KEYS", 1 << 30)  # every case by the walk
    monkeypatch.setattr(anim, "_SMALL_CUT", 1 << 30)
    small = run()
    monkeypatch.setattr(anim, "_SMALL_KEYS", -1)
    monkeypatch.setattr(anim, "_SMALL_CUT", -1)
    assert run() == small


def _reference_bone_tree(parents: list[int], n: int) -> tuple[list[int], list[int], int]:
    """The bone order as it was first written (visited flags, cycles cut at their first
    bone)."""
    par = [p if 0 <= p < n and p != i else -1 for i, p in enumerate(parents)]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(par):
        if p >= 0:
            children[p].append(i)
    order: list[int] = []
    seen = [False] * n
    cut = sum(1 for i, p in enumerate(parents) if p >= 0 and par[i] < 0)
    roots = [i for i in range(n) if par[i] < 0]
    while True:
        stack = list(reversed(roots))
        while stack:
            i = stack.pop()
            if not seen[i]:
                seen[i] = True
                order.append(i)
                stack.extend(reversed(children[i]))
        rest = [i for i in range(n) if not seen[i]]
        if not rest:
            return order, par, cut
        par[rest[0]] = -1
        children = [[c for c in ch if c != rest[0]] for ch in children]
        roots = [rest[0]]
        cut += 1


def test_bone_order_and_world_matrices_match_the_bone_by_bone_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees, chains, cycles and bad links: the same order, cuts and world matrices (bit for
    bit: np.matmul bone by bone) with depths from a Python walk or by pointer jumping."""
    rng = np.random.default_rng(23)
    for trial in range(300):
        n = int(rng.integers(0, 60))
        if trial % 3 == 0:
            parents = [i - 1 for i in range(n)]  # a chain
        else:
            parents = [int(rng.integers(-1, max(1, i + 1))) for i in range(n)]
        for _ in range(int(rng.integers(0, 4))):
            if n:
                parents[int(rng.integers(0, n))] = int(rng.integers(-3, n + 3))
        got = skel.bone_tree(parents, n)
        assert got == _reference_bone_tree(parents, n)
        order, par, _ = got
        # The order make_skeleton takes: the same parents and cuts, parents first.
        fast_order, fast_par, fast_cut = skel.bone_order(parents, n)
        assert (fast_par, fast_cut) == got[1:] and sorted(fast_order) == list(range(n))
        place = {b: k for k, b in enumerate(fast_order)}
        assert all(place[p] < place[i] for i, p in enumerate(fast_par) if p >= 0)
        local = rng.normal(size=(n, 4, 4)) * 10.0 ** rng.integers(-3, 4, (n, 1, 1))
        want = local.copy()
        for i in order:
            if par[i] >= 0:
                want[i] = np.matmul(want[par[i]], local[i])
        for small in (4096, -1):
            monkeypatch.setattr(skel, "_SMALL_BONES", small)
            assert skel.bone_worlds(local, par, order).tobytes() == want.tobytes()
            assert skel.bone_worlds(local, par, fast_order).tobytes() == want.tobytes()


def test_bone_names_decode_as_cp949() -> None:
    cases = [[], [b""], [b"Bip01", b"", b"a b"], ["\ud55c\uae00".encode("cp949"), b"x"],
             [b"\xff\xfe", b"ok"], [b"a\0b", b"c"], [bytes(range(128))]]
    for raw in cases:
        assert skel.decode_names(raw) == [b.decode("cp949", errors="replace") for b in raw]


def test_few_bones_trs_split_matches_the_batch() -> None:
    """Bone by bone in plain floats: the batch's translations, rotations, scales and shear
    flags bit for bit (rotations, scalings with a mirror or a zero axis, shear, huge and tiny
    values); a non-finite split is left to the batch."""
    from gamemesh.scene.math import quat_to_matrix

    rng = np.random.default_rng(31)
    left = 0
    for trial in range(3000):
        n = int(rng.integers(1, 25))
        q = rng.normal(size=(n, 4))
        m = np.zeros((n, 4, 4))
        m[:, :3, :3] = quat_to_matrix(q) * rng.choice([1.0, -1.0, 0.0, 1e-30, 3.7, 1e160],
                                                       (n, 1, 3), p=[.5, .2, .05, .05, .195, .005])
        if trial % 3 == 0:
            m[:, :3, :3] += rng.normal(size=(n, 3, 3)) * rng.choice([0.0, 1e-9, 1e-3, 1.0])
        m[:, :3, 3] = rng.normal(size=(n, 3)) * rng.choice([1.0, 1e5, 1e-20])
        m[:, 3, 3] = 1.0
        if trial % 7 == 0:
            m[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] = \
                rng.choice([np.nan, np.inf, -0.0])
        with np.errstate(all="ignore"):  # as build_scene runs it
            gl = skel.S4 @ m @ skel.S4
            few = skel._bone_trs_few(gl.copy())
            batch = skel._bone_trs(gl.copy())
        if few is None:  # a non-finite matrix or split
            left += 1
            continue
        for got, want in zip(few[:3], batch[:3], strict=True):
            assert np.array(got).tobytes() == np.array(want).tobytes()
        assert few[3] == batch[3]
    assert 0 < left < 1000


def test_parts_sharing_bones_share_their_skeleton_and_bind_transforms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A character's parts with the same bones reuse one skeleton and bind transform; parts
    with other matrices, parents or names get their own: the GLB is the one made part by
    part."""
    import io

    (tmp_path / "h_def.bpet").write_bytes(write(build("bpet", (1, 3))))
    docs = {name: build("mpet", (1, 3), rings=rings, sides=5)
            for name, rings in (("a", 3), ("b", 4), ("c", 3), ("d", 5), ("e", 4))}
    bc, bd, be = docs["c"].bones, docs["d"].bones, docs["e"].bones
    assert bc is not None and bc.matrices is not None and bd is not None and be is not None
    bc.matrices[2, 9] += 0.25  # another bind pose
    bd.names[1] = b"Bip01 Other"  # a bone the skeleton lacks
    be.parents[3] = 0
    for name, doc in docs.items():
        (tmp_path / f"h_{name}_01.mpet").write_bytes(write(doc))

    def glb() -> bytes:
        buf = io.BytesIO()
        gamemesh.save(gamemesh.load(tmp_path / "h_def.bpet"), buf, format="glb")
        return buf.getvalue()

    shared = glb()
    calls: list[int] = []
    make = ts.make_skeleton
    monkeypatch.setattr(ts, "make_skeleton", lambda *a: calls.append(1) or make(*a))
    assert glb() == shared and len(calls) == 1 + 4  # the skeleton, then a, c, d, e

    def uncached_rebind(self: Any, wm: Any, bone_map: Any) -> Any:
        return self.sk.world[bone_map] @ ts.safe_inverse(wm)

    monkeypatch.setattr(ts._MeshBuilder, "_own_skeleton",
                        lambda self, unit: make(unit, Context(None, {}, [])))
    monkeypatch.setattr(ts._MeshBuilder, "_rebind", uncached_rebind)
    assert glb() == shared


def test_bone_lookup_by_name_matches_the_linear_search() -> None:
    """The first exact match, else the first match ignoring case (repeated names, names
    differing in case only, non-ASCII)."""
    rng = np.random.default_rng(37)
    pool = ["Bip01", "bip01", "BIP01", "Spine", "spine", "\ud55c\uae00", "Bone001", ""]
    for _ in range(300):
        names = [str(rng.choice(pool)) for _ in range(int(rng.integers(0, 8)))]
        sk = skel.Skeleton(None, names, [-1] * len(names), np.zeros((0, 4, 4)),
                         np.zeros((0, 4, 4)))
        for query in [*pool, "BONE001", "nope"]:
            want = next((i for i, n in enumerate(names) if n == query),
                        next((i for i, n in enumerate(names) if n.lower() == query.lower()),
                             None))
            assert sk.find(query) == want


def test_bone_locals_match_the_tiled_identity_way() -> None:
    from gamemesh.formats.pet.document import BoneSection

    rng = np.random.default_rng(41)
    for trial in range(200):
        n = int(rng.integers(0, 12))
        mats = (rng.normal(size=(n, 12)) * 10.0 ** rng.integers(-20, 20, (n, 1))).astype(
            np.float32)
        if n and trial % 3 == 0:
            mats[rng.integers(0, n), rng.integers(0, 12)] = rng.choice([np.nan, np.inf, -0.0])
        bs = BoneSection(names=[b"b"] * n, parents=[-1] * n,
                         matrices=None if trial % 10 == 0 else mats)
        want = np.tile(np.eye(4), (n, 1, 1))
        if bs.matrices is not None and n:
            rows = np.asarray(mats, np.float64).reshape(n, 4, 3)
            want[:, :3, :3] = np.transpose(rows[:, :3, :], (0, 2, 1))
            want[:, :3, 3] = rows[:, 3, :]
            want[~np.all(np.isfinite(want.reshape(n, 16)), axis=1)] = np.eye(4)
        got = skel.bone_locals(bs)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def _reference_safe_inverse(a: Any) -> Any:
    """scene.skinning.safe_inverse as it was (every stack through the cleaning passes)."""
    a = np.asarray(a, np.float64)
    out = np.tile(np.eye(a.shape[-1]), (len(a), 1, 1))
    if not len(a):
        return out
    finite = np.all(np.isfinite(a.reshape(len(a), -1)), axis=1)
    with np.errstate(all="ignore"):
        det = np.linalg.det(np.where(np.isfinite(a), a, 0.0))
    ok = finite & np.isfinite(det) & (np.abs(det) > 1e-12)
    if np.any(ok):
        out[ok] = np.linalg.inv(a[ok])
    return out


def test_safe_inverse_of_finite_invertible_stacks_skips_the_cleaning() -> None:
    """Bit for bit the cleaning way's inverses: invertible, singular, nearly singular,
    overflowing and non-finite matrices, alone and mixed in a stack."""
    from gamemesh.scene.skinning import safe_inverse

    rng = np.random.default_rng(43)
    for trial in range(600):
        n, k = int(rng.integers(0, 8)), int(rng.choice([3, 4]))
        a = rng.normal(size=(n, k, k)) * rng.choice([1.0, 1e-5, 1e80, 1e120], (n, 1, 1),
                                                     p=[.85, .05, .05, .05])
        if n and trial % 4 == 0:
            a[rng.integers(0, n), rng.integers(0, k)] = 0.0  # singular
        if n and trial % 5 == 0:
            a[rng.integers(0, n), rng.integers(0, k), rng.integers(0, k)] = rng.choice(
                [np.nan, np.inf])
        with np.errstate(all="ignore"):
            got, want = safe_inverse(a), _reference_safe_inverse(a)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert safe_inverse(np.diag([2.0, 4.0])).tobytes() == np.diag([0.5, 0.25]).tobytes()


def test_few_keys_clip_groups_match_the_numpy_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group built by the walk holds the numpy way's arrays (so either cut may use it)."""
    rng = np.random.default_rng(53)
    for _ in range(200):
        tracks = _random_tracks(rng)
        chs = anim.track_channels(tracks, list(range(len(tracks))),
                                [str(i) for i in range(len(tracks))], Context(None))
        monkeypatch.setattr(anim, "_SMALL_CUT", 1 << 30)
        small = anim.Clipper(chs).groups
        monkeypatch.setattr(anim, "_SMALL_CUT", -1)
        for a, b in zip(small, anim.Clipper(chs).groups, strict=True):
            assert (a.index, a.rotation) == (b.index, b.rotation)
            for name in ("times", "values", "starts", "ends", "seg"):
                assert_same_tree(getattr(a, name), getattr(b, name))
