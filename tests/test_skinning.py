"""The shared skinning helpers (scene/skinning.py) that every writer uses."""

from __future__ import annotations

from typing import Any

import numpy as np

from gamemesh.scene.skinning import fold_repeated_joints, limit_influences, safe_inverse


def test_fold_repeated_joints_adds_into_the_first_slot() -> None:
    j = np.array([[3, 3, 1, 0], [2, 5, 2, 2]])
    w = np.array([[0.25, 0.25, 0.5, 0.0], [0.1, 0.2, 0.3, 0.4]])
    out = fold_repeated_joints(j, w)
    np.testing.assert_allclose(out, [[0.5, 0.0, 0.5, 0.0], [0.8, 0.2, 0.0, 0.0]])


def test_limit_influences_sorts_keeps_renormalizes_and_pads() -> None:
    j = np.array([[1, 2, 3, 4, 5, 6], [7, 7, 0, 0, 0, 0]])
    w = np.array([[0.05, 0.4, 0.1, 0.3, 0.15, 0.0], [0.5, 0.5, 0, 0, 0, 0]])
    inf = limit_influences(j, w, keep=2)
    assert inf.used == 5 and inf.over == 1 and inf.merged
    np.testing.assert_array_equal(inf.joints, [[2, 4, 0, 0], [7, 0, 0, 0]])
    np.testing.assert_allclose(inf.weights, [[0.4 / 0.7, 0.3 / 0.7, 0, 0], [1, 0, 0, 0]])


def test_limit_influences_drops_bad_weights_and_keeps_all_by_default() -> None:
    j = np.array([[1, 2, 3, 4, 5]])
    w = np.array([[np.nan, -1.0, 0.2, 0.2, 0.6]])
    inf = limit_influences(j, w)
    assert inf.weights.shape == (1, 4) and inf.over == 0
    np.testing.assert_array_equal(inf.joints, [[5, 3, 4, 0]])
    np.testing.assert_allclose(inf.weights, [[0.6, 0.2, 0.2, 0.0]])


def test_safe_inverse_gives_identity_for_singular_and_non_finite() -> None:
    good = np.diag([2.0, 4.0, 0.5, 1.0])
    stack = np.stack([good, np.zeros((4, 4)), np.full((4, 4), np.nan)])
    inv = safe_inverse(stack)
    np.testing.assert_allclose(inv[0], np.diag([0.5, 0.25, 2.0, 1.0]))
    np.testing.assert_array_equal(inv[1], np.eye(4))
    np.testing.assert_array_equal(inv[2], np.eye(4))
    np.testing.assert_allclose(safe_inverse(np.diag([2.0, 2.0, 2.0])), np.eye(3) / 2)


def _reference_limit(joints: Any, weights: Any, keep: int | None,
                     width: int | None) -> tuple[Any, Any, int, int]:
    """limit_influences written plainly: every row through a full stable argsort, with fresh
    arrays at each step."""
    j = np.asarray(joints, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    w = fold_repeated_joints(j, w)
    order = np.argsort(-w, axis=1, kind="stable")
    w = np.take_along_axis(w, order, axis=1)
    j = np.take_along_axis(j, order, axis=1)
    counts = np.count_nonzero(w, axis=1)
    used = int(counts.max()) if len(w) else 0
    n = max(1, used) if keep is None else max(1, min(int(keep), w.shape[1]))
    over = int(np.count_nonzero(counts > n))
    w, j = w[:, :n], j[:, :n]
    total = np.zeros((len(w), 1))
    for c in range(w.shape[1]):  # slot after slot (numpy's row sum pairs past 8 slots)
        total[:, 0] += w[:, c]
    w = w / np.where(total > 0, total, 1.0)
    cols = width if width is not None else max(4, -(-n // 4) * 4)
    wp = np.zeros((len(w), cols))
    jp = np.zeros((len(w), cols), dtype=np.int64)
    wp[:, :n], jp[:, :n] = w, j
    jp[wp == 0] = 0
    return jp, wp, used, over


def test_limit_influences_matches_the_plain_per_row_sort() -> None:
    """Sorting only the rows out of order and writing in place gives the same bits as the
    plain per-row stable argsort, with repeats, ties, zeros, negatives, NaN and inf."""
    rng = np.random.default_rng(11)
    for trial in range(300):
        k = int(rng.integers(1, 12))
        n = int(rng.integers(0, 60))
        j = rng.integers(0, 4 if trial % 2 else 40, (n, k))
        w = rng.choice([0.0, 0.25, 0.5, 1 / 3, 1 / 255, 7 / 255, -1.0, np.nan, np.inf, 0.1],
                       (n, k)) if trial % 3 else rng.random((n, k))
        keep = [None, 1, 2, 4, 8][trial % 5]
        width = [None, 4, 8][trial % 3]
        if keep is None or (width is not None and keep > width):
            width = None  # a width below the kept count is the caller's error
        inf = limit_influences(j, w, keep, width)
        rj, rw, used, over = _reference_limit(j, w, keep, width)
        assert inf.joints.tobytes() == rj.tobytes() and inf.weights.tobytes() == rw.tobytes()
        assert (inf.used, inf.over) == (used, over)


def _reference_safe_inverse(a: Any) -> Any:
    """The definition, matrix by matrix: non-finite or singular (|det| <= 1e-12) -> I, else
    its inverse."""
    a = np.asarray(a, np.float64)
    out = np.tile(np.eye(a.shape[-1]), (len(a), 1, 1))
    for i, m in enumerate(a):
        if np.isfinite(m).all():
            det = np.linalg.det(m)
            if np.isfinite(det) and abs(det) > 1e-12:
                out[i] = np.linalg.inv(m)
    return out


def test_safe_inverse_of_stacks_is_the_matrix_by_matrix_definition() -> None:
    """Bit for bit the definition's inverses: invertible, singular, nearly singular,
    overflowing and non-finite matrices, alone and mixed in a stack."""
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
