"""SPLASHPACK's shortcuts against the general code they stand in for, bit for bit."""

from __future__ import annotations

import importlib
import itertools

import numpy as np

ts = importlib.import_module("gamemesh.formats.splashpack.to_scene")


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
    assert len(ts._exact_rotations()) == 24
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
        got = ts._rotations(raw)
        want = ts._rotations_svd(raw)
        assert repr(got) == repr(want), trial  # repr: the signs of zeros count
    raw = np.array(perms, dtype=np.int32)
    assert repr(ts._rotations(raw)) == repr(ts._rotations_svd(raw))
    for p in perms:
        one = np.array([p], dtype=np.int32)
        assert repr(ts._rotations(one)) == repr(ts._rotations_svd(one))
