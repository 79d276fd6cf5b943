"""Skinning helpers every format shares: influence limiting and guarded matrix inverses.

One home for them so that a fix (a joint named twice, a singular bind matrix from a hostile
glTF) reaches every writer at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

# Merging repeats compares every pair of slots; past this many slots that is slow, and such
# vertices only come from odd files.
MAX_MERGE_SLOTS = 32


@dataclass
class Influences:
    """Per-vertex joints and weights after :func:`limit_influences`."""

    joints: I64
    weights: F64
    used: int  # the most non-zero influences any vertex had (after merging repeats)
    over: int  # vertices that had more than the kept count (their smallest were dropped)
    merged: bool  # False when there were too many slots to merge repeats


def fold_repeated_joints(joints: npt.ArrayLike, weights: npt.ArrayLike) -> F64:
    """Weights with a joint named twice for one vertex folded into its first slot (the later
    slot's weight becomes 0). Vectorized over vertices, one pass per pair of slots."""
    j = np.asarray(joints)
    w = np.array(weights, dtype=np.float64)
    k = j.shape[1] if j.ndim == 2 else 0
    for a in range(k):
        for b in range(a + 1, k):
            same = (j[:, b] == j[:, a]) & (w[:, a] > 0) & (w[:, b] > 0)
            w[same, a] += w[same, b]
            w[same, b] = 0.0
    return w


# Up to this many slots, repeats fold and slots sort column by column (a few comparisons of
# whole columns instead of numpy's per-row sort of a handful of items, ~10x faster).
_COLUMN_SLOTS = 8


def fold_repeated_columns(j: Sequence[npt.NDArray[Any]], w: Sequence[F64]) -> None:
    """:func:`fold_repeated_joints` on slot columns, in place: where a later slot names the
    same joint as an earlier one (both weighted), its weight moves onto the earlier slot."""
    # Which weights are > 0, kept up to date (a fold keeps the earlier slot's > 0 and zeroes
    # the later one's) rather than compared again for every pair of slots.
    pos = [c > 0 for c in w]
    for a in range(len(w)):
        for b in range(a + 1, len(w)):
            same = np.flatnonzero((j[b] == j[a]) & pos[a] & pos[b])
            if len(same):
                w[a][same] += w[b][same]
                w[b][same] = 0.0
                pos[b][same] = False


def _fold_sort_columns(j: I64, w: F64) -> tuple[I64, F64, I64]:
    """:func:`fold_repeated_joints` then the stable sort by descending weight, on columns:
    the same folds in the same order, and each slot's place in the sorted row is the number
    of slots that sort before it (a larger weight, or an equal one further left). Also each
    row's count of non-zero weights."""
    n, k = w.shape
    jc = [np.ascontiguousarray(j[:, i]) for i in range(k)]
    wc = [np.ascontiguousarray(w[:, i]) for i in range(k)]
    fold_repeated_columns(jc, wc)
    base = np.arange(n, dtype=np.int64) * k
    ws = np.empty(n * k)
    js = np.empty(n * k, np.int64)
    for a in range(k):
        rank = np.zeros(n, np.int8)
        for b in range(k):
            if b != a:
                rank += (wc[b] >= wc[a]) if b < a else (wc[b] > wc[a])
        at = base + rank
        ws[at] = wc[a]
        js[at] = jc[a]
    counts = np.zeros(n, np.int64)
    for c in wc:
        counts += c != 0
    return js.reshape(n, k), ws.reshape(n, k), counts


def limit_influences(joints: npt.ArrayLike, weights: npt.ArrayLike, keep: int | None = None,
                     width: int | None = None) -> Influences:
    """Clean influences: negative and non-finite weights become 0, repeated joints fold
    together, slots sort by weight (largest first), at most ``keep`` stay (all non-zero ones
    when None), each row renormalizes to 1 (a row of zeros stays zero) and the result pads
    with zeros to ``width`` columns (default: the kept count rounded up to 4). A slot whose
    weight is 0 names joint 0 (the glTF validator flags a zero weight naming a joint)."""
    j = np.asarray(joints, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    w = np.where(np.isfinite(w) & (w > 0), w, 0.0)
    merged = w.shape[1] <= MAX_MERGE_SLOTS
    if w.ndim == 2 and 0 < w.shape[1] <= _COLUMN_SLOTS and j.shape == w.shape:
        j, w, counts = _fold_sort_columns(j, w)
    else:
        if merged:
            w = fold_repeated_joints(j, w)
        order = np.argsort(-w, axis=1, kind="stable")
        w = np.take_along_axis(w, order, axis=1)
        j = np.take_along_axis(j, order, axis=1)
        counts = np.count_nonzero(w, axis=1)
    used = int(counts.max()) if len(w) else 0
    n = max(1, used) if keep is None else max(1, min(int(keep), w.shape[1]))
    over = int(np.count_nonzero(counts > n))
    w, j = w[:, :n], j[:, :n]
    total = w.sum(axis=1, keepdims=True)
    w = w / np.where(total > 0, total, 1.0)
    cols = width if width is not None else max(4, -(-n // 4) * 4)
    wp = np.zeros((len(w), cols))
    jp = np.zeros((len(w), cols), dtype=np.int64)
    wp[:, :n], jp[:, :n] = w, j
    jp[wp == 0] = 0
    return Influences(jp, wp, used, over, merged)


def safe_inverse(m: npt.ArrayLike) -> F64:
    """The inverse of each square matrix of an (N, k, k) stack (or of one (k, k) matrix);
    singular or non-finite ones give the identity, so a degenerate bone from a glTF cannot
    raise ``LinAlgError`` deep inside a writer."""
    a = np.asarray(m, dtype=np.float64)
    if a.ndim == 2:
        return np.asarray(safe_inverse(a[None])[0])
    k = a.shape[-1]
    if len(a) and np.isfinite(a).all():
        # The usual case (every matrix finite and invertible) without the cleaning passes.
        with np.errstate(all="ignore"):
            det = np.linalg.det(a)
        if (np.isfinite(det) & (np.abs(det) > 1e-12)).all():
            return np.asarray(np.linalg.inv(a))
    out = np.tile(np.eye(k), (len(a), 1, 1))
    if not len(a):
        return out
    finite = np.all(np.isfinite(a.reshape(len(a), -1)), axis=1)
    with np.errstate(all="ignore"):
        det = np.linalg.det(np.where(np.isfinite(a), a, 0.0))
    ok = finite & np.isfinite(det) & (np.abs(det) > 1e-12)
    if np.any(ok):
        out[ok] = np.linalg.inv(a[ok])
    return out
