"""Skinning helpers every format shares: influence limiting and guarded matrix inverses.

One home for them so that a fix (a joint named twice, a singular bind matrix from a hostile
glTF) reaches every writer at once.
"""

from __future__ import annotations

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

    joints: npt.NDArray[Any]  # (N, width), of the asked type (int64 by default)
    weights: npt.NDArray[Any]  # (N, width), of the asked type (float64 by default)
    used: int  # the most non-zero influences any vertex had (after merging repeats)
    over: int  # vertices that had more than the kept count (their smallest were dropped)
    merged: bool  # False when there were too many slots to merge repeats
    counts: I64  # each vertex's non-zero weights, as kept


def fold_repeated_joints(joints: npt.ArrayLike, weights: npt.ArrayLike) -> F64:
    """Weights with a joint named twice for one vertex folded into its first slot (the later
    slot's weight becomes 0), slot pair by slot pair in order. Vectorized over vertices."""
    w = np.array(weights, dtype=np.float64)
    _fold_in_place(np.asarray(joints), w)
    return w


def _fold_in_place(j: npt.NDArray[np.integer[Any]], w: F64) -> None:
    """:func:`fold_repeated_joints` writing into ``w``."""
    k = w.shape[1] if w.ndim == 2 else 0
    # Which weights are > 0, kept up to date (a fold keeps the earlier slot's > 0 and zeroes
    # the later one's) rather than compared again for every pair of slots; only the few
    # vertices that repeat a joint are written.
    pos = w > 0
    for a in range(k):
        for b in range(a + 1, k):
            same = np.flatnonzero((j[:, b] == j[:, a]) & pos[:, a] & pos[:, b])
            if len(same):
                w[same, a] += w[same, b]
                w[same, b] = 0.0
                pos[same, b] = False


def _sort_rows(j: I64, w: F64) -> I64:
    """Each row's slots in the stable order of descending weight: ``w`` in place, the joints
    returned (``j`` itself when no row moves). Only the rows not already in that order are
    sorted: readers mostly hand over sorted rows, and gathering every row through the
    permutation cost more than the rest of :func:`limit_influences` together."""
    unsorted = np.zeros(len(w), dtype=bool)
    for c in range(w.shape[1] - 1):
        unsorted |= w[:, c] < w[:, c + 1]
    rows = np.flatnonzero(unsorted)
    if not len(rows):
        return j
    j = j.copy(order="F")
    order = np.argsort(-w[rows], axis=1, kind="stable")
    w[rows] = np.take_along_axis(w[rows], order, axis=1)
    j[rows] = np.take_along_axis(j[rows], order, axis=1)
    return j


def limit_influences(joints: npt.ArrayLike, weights: npt.ArrayLike, keep: int | None = None,
                     width: int | None = None, types: tuple[Any, Any] = (np.int64, np.float64)
                     ) -> Influences:
    """Clean influences: negative and non-finite weights become 0, repeated joints fold
    together, slots sort by weight (largest first), at most ``keep`` stay (all non-zero ones
    when None), each row renormalizes to 1 (a row of zeros stays zero; the row sums added
    slot after slot) and the result pads with zeros to ``width`` columns (default: the kept
    count rounded up to 4), as (N, width) joints and weights of ``types``. A slot whose
    weight is 0 names joint 0 (the glTF validator flags a zero weight naming a joint).

    The work runs slot by slot on column-major (Fortran-order) copies, whose slots are
    contiguous (numpy's element-wise work across narrow rows is many times slower): passing
    (N, P) arrays already in that order saves the transposing copy."""
    # Written in place on one copy of the weights: on a large mesh every fresh temporary
    # costs more in page faults than the arithmetic done in it.
    j = np.asarray(joints, dtype=np.int64, order="F")
    w = np.array(weights, dtype=np.float64, order="F")
    p = w.shape[1]
    # Read as unsigned bits, NaN, infinities and every negative (the sign bit) are
    # 0x7FF0000000000000 or more: one comparison finds the weights to zero (+0.0 stays).
    bad = w.view(np.uint64) >= np.uint64(0x7FF0000000000000)
    if bad.any():  # (rare: the masked copy costs more than the test)
        np.copyto(w, 0.0, where=bad)
    merged = p <= MAX_MERGE_SLOTS
    if merged:
        _fold_in_place(j, w)
    j = _sort_rows(j, w)
    counts = np.zeros(len(w), dtype=np.int64)
    for c in range(p):
        counts += w[:, c] != 0
    used = int(counts.max()) if len(w) else 0
    n = max(1, used) if keep is None else max(1, min(int(keep), p))
    over = int(np.count_nonzero(counts > n))
    cols = width if width is not None else max(4, -(-n // 4) * 4)
    jp, wp, kept = _normalized(j, w, min(n, p), (len(w), cols), types)
    return Influences(jp, wp, used, over, merged, kept)


def _normalized(j: I64, w: F64, n: int, shape: tuple[int, int], types: tuple[Any, Any]
                ) -> tuple[npt.NDArray[Any], npt.NDArray[Any], I64]:
    """The first ``n`` slots of each row renormalized (the row sums added slot after slot),
    written slot by slot into zeroed C-order joints and weights of ``shape`` and ``types``,
    and each row's non-zero count."""
    total = np.zeros(len(w))
    for c in range(n):
        total += w[:, c]
    total += total <= 0  # a row of zeros divides by 1 (the weights are >= 0: no NaN here)
    jp = np.zeros(shape, dtype=types[0])
    wp = np.zeros(shape, dtype=types[1])
    counts = np.zeros(len(w), dtype=np.int64)
    wc = np.empty(len(w))
    for c in range(n):
        np.divide(w[:, c], total, out=wc)
        nz = wc != 0
        wp[:, c] = wc
        np.multiply(j[:, c], nz, out=jp[:, c], casting="unsafe")
        counts += nz
    return jp, wp, counts


def safe_inverse(m: npt.ArrayLike) -> F64:
    """The inverse of each square matrix of an (N, k, k) stack (or of one (k, k) matrix);
    singular or non-finite ones give the identity, so a degenerate bone from a glTF cannot
    raise ``LinAlgError`` deep inside a writer."""
    a = np.asarray(m, dtype=np.float64)
    if a.ndim == 2:
        return np.asarray(safe_inverse(a[None])[0])
    k = a.shape[-1]
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
