"""PET BONE records found by one regular-expression scan against the record-by-record walk
and the Reader's field-by-field reader, bit for bit on random sections (timing-independent)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

read_mod = importlib.import_module("gamemesh.formats.pet.read")


def test_identity_bones_split_as_the_others() -> None:
    """Bones whose matrix is exactly the identity take the identity's split: every bone's
    translation, rotation, scale and shear flag bit for bit as the split of all bones (few
    or batch), and the same matrices left for the sheared ones; identities with a -0.0 and
    non-finite matrices among them, the identities found or some of them given."""
    from gamemesh.scene.math import quat_to_matrix

    skel = importlib.import_module("gamemesh.formats.pet.skeleton")
    rng = np.random.default_rng(89)
    shortcut = 0
    for trial in range(1500):
        n = int(rng.choice([1, 3, 10, 16, 17, 40, 300]))
        m = np.tile(np.eye(4), (n, 1, 1))
        other = rng.random(n) < rng.choice([0.0, 0.1, 0.5, 1.0])
        k = int(other.sum())
        m[other, :3, :3] = quat_to_matrix(rng.normal(size=(k, 4))) * rng.choice(
            [1.0, -1.0, 2.5, 0.0], (k, 1, 3), p=[0.6, 0.2, 0.15, 0.05])
        m[other, :3, 3] = rng.normal(size=(k, 3)) * rng.choice([1.0, 1e5])
        if trial % 4 == 0:
            m[other, :3, :3] += rng.normal(size=(k, 3, 3)) * 0.2  # shear
        if trial % 5 == 0:
            i, j = int(rng.integers(0, n)), int(rng.integers(0, 4))
            m[i, j, int(rng.integers(0, 4))] = rng.choice([-0.0, np.nan, np.inf])
        with np.errstate(all="ignore"):  # as build_scene runs it
            gl = skel.mirror_z(m)
            if trial % 3 == 0:  # mirror_z makes zeros +0.0: a -0.0 in an identity after it
                gl[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] \
                    *= -1.0
            want_gl, got_gl = gl.copy(), gl.copy()
            few = skel._bone_trs_few(want_gl) if n <= skel._FEW_BONES else None
            want = few if few is not None else skel._bone_trs(want_gl)
            # The identities given (some of them, as the skeleton's local ones) or found.
            eye = (skel.identity_rows(gl) & (rng.random(n) < 0.7) if trial % 2 else None)
            got = skel._split_bones(got_gl, eye)
        shortcut += int((~other).any())
        for a, b in zip(got[:3], want[:3], strict=True):
            assert np.array(a).tobytes() == np.array(b).tobytes()
        assert got[3] == want[3]
        assert got_gl.tobytes() == want_gl.tobytes()
    assert shortcut > 500


@pytest.mark.parametrize("copy_from", [0, 32])
def test_identity_locals_take_their_parents_world(copy_from: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Chains and trees with bones whose local matrix is exactly the identity: the worlds
    bone by bone through np.matmul bit for bit, worlds with -0.0, NaN, infinities and
    subnormals among them (then every product is made), identities with a -0.0 not taken
    for the identity."""
    skel = importlib.import_module("gamemesh.formats.pet.skeleton")
    monkeypatch.setattr(skel, "_COPY_BONES", copy_from)
    rng = np.random.default_rng(97)
    for trial in range(600):
        n = int(rng.choice([1, 2, 5, 30, 40, 300]))
        parents = ([i - 1 for i in range(n)] if trial % 3 else
                   [int(rng.integers(-1, i)) if i else -1 for i in range(n)])
        local = rng.normal(size=(n, 4, 4)) * rng.choice([1.0, 1e-310, 1e300], (n, 1, 1),
                                                        p=[0.9, 0.05, 0.05])
        local[rng.random(n) < rng.choice([0.3, 0.9])] = np.eye(4)
        zero = rng.random((n, 4, 4)) < 0.2
        local[zero & (rng.random((n, 4, 4)) < 0.5)] = -0.0
        local[zero & (rng.random((n, 4, 4)) < 0.5)] = 0.0
        if trial % 7 == 0:
            local[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] = \
                rng.choice([np.nan, np.inf, -np.inf])
        order, par, _ = skel.bone_order(parents, n)
        want = local.copy()
        with np.errstate(all="ignore"):
            for i in order:
                if par[i] >= 0:
                    want[i] = np.matmul(want[par[i]], local[i])
            got = skel.bone_worlds(local, par, order)
        assert got.tobytes() == want.tobytes()


def test_inverse_binds_invert_each_run_of_equal_worlds_once() -> None:
    """Runs of equal world matrices inverted once: safe_inverse's bits for every bone, runs
    of matrices equal but for a zero's sign, singular and non-finite ones among them."""
    from gamemesh.scene.skinning import safe_inverse

    skel = importlib.import_module("gamemesh.formats.pet.skeleton")
    rng = np.random.default_rng(101)
    runs = 0
    for trial in range(400):
        n = int(rng.choice([1, 5, 31, 32, 40, 300]))
        distinct = rng.normal(size=(int(rng.integers(1, 6)), 4, 4))
        distinct[rng.random(len(distinct)) < 0.2, 3] = 0.0  # singular
        world = distinct[np.sort(rng.integers(0, len(distinct), n))].copy()
        if trial % 3 == 0:
            world[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] = \
                rng.choice([np.nan, np.inf, 0.0])
        if trial % 4 == 0:
            world[rng.random((n, 4, 4)) < 0.05] = -0.0
        with np.errstate(all="ignore"):  # as build_scene runs it
            want = safe_inverse(skel.mirror_z(world))
            got = skel.inverse_binds(world)
        runs += int(n >= 32)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert runs > 150


def test_inverse_binds32_match_the_finite_float32_inverses() -> None:
    """The skin's float32 inverse binds made once per run of equal worlds: the bits of
    ``_finite32(safe_inverse(mirror_z(world)))``, runs of singular, non-finite, -0.0 and
    nearly singular worlds (inverses past the float32 clip) among them."""
    from gamemesh.formats.pet.corners import _finite32
    from gamemesh.scene.skinning import safe_inverse

    skel = importlib.import_module("gamemesh.formats.pet.skeleton")
    rng = np.random.default_rng(103)
    runs = clipped = 0
    for trial in range(400):
        n = int(rng.choice([1, 5, 31, 32, 40, 300]))
        distinct = rng.normal(size=(int(rng.integers(1, 7)), 4, 4))
        distinct[rng.random(len(distinct)) < 0.2, 3] = 0.0  # singular
        distinct[0, 0] *= rng.choice([1.0, 1e-31, 1e31, -0.0])  # huge inverses, clipped
        distinct[-1] = np.diag(rng.permutation([1e-31, 1e11, 1e11, 1e11])) if trial % 2 else \
            np.eye(4)
        world = distinct[np.sort(rng.integers(0, len(distinct), n))].copy()
        if trial % 3 == 0:
            world[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] = \
                rng.choice([np.nan, np.inf, -np.inf, 0.0])
        if trial % 4 == 0:
            world[rng.random((n, 4, 4)) < 0.05] = -0.0
        with np.errstate(all="ignore"):  # as build_scene runs it
            want = _finite32(safe_inverse(skel.mirror_z(world)))
            got = skel.inverse_binds32(world)
        runs += int(n >= 32)
        clipped += int((np.abs(want) == np.float32(1e30)).any())
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert runs > 150 and clipped > 50
