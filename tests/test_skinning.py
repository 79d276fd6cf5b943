"""The shared skinning helpers (scene/skinning.py) that every writer uses."""

from __future__ import annotations

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
