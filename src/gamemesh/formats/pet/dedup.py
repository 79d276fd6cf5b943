"""The vertex search of PET corners: which corner records (vertex, normal, UV sets) are equal,
so that each distinct one becomes one glTF vertex.

One algorithm: a vertex's corners mostly carry the same record, so each row is compared with
the first row of its index; the rows unlike theirs (seams, hard edges) are grouped exactly by
a hash of their words, checked word for word."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def equal_rows(index: npt.NDArray[Any], columns: Sequence[npt.NDArray[Any]],
               bound: int) -> tuple[I64, I64]:
    """Rows of (index, columns...) numbered so that equal rows share a number: each row's
    number and each number's first row. ``index``: integers in [0, ``bound``); ``columns``:
    1-D arrays of unsigned words, one per column (gathered from contiguous columns, the
    comparison runs several times faster than over rows; for floats' bits NaN equals NaN and
    -0.0 differs from 0.0: add +0.0 first to merge those).

    Number ``v`` < ``bound`` is the rows equal to index ``v``'s first row (an index no row
    has keeps its number, whose first row is given as 0), so where every row is like its
    index's first row the numbers are the indices themselves; the other rows are numbered
    from ``bound`` on, in order of first occurrence."""
    idx = np.asarray(index, np.int64)
    n = len(idx)
    head = first_of_each(idx, bound)
    first = np.where(head < n, head, 0)
    if n == 0:
        return idx, first[:bound]
    rep = head.take(idx)
    same = np.ones(n, bool)
    for c in columns:
        same &= c.take(rep) == c
    odd = np.flatnonzero(~same)
    if not len(odd):
        return idx, first[:bound]
    # A row unlike its index's first row is like no row outside ``odd``.
    f, inverse = unique_rows([idx.take(odd), *(c.take(odd) for c in columns)])
    row = idx.copy()
    row[odd] = bound + inverse
    return row, np.concatenate([first[:bound], odd.take(f)])


def columns_of(rows: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    """The columns of an (N, k) array as k contiguous arrays (one transposing copy)."""
    return list(np.ascontiguousarray(rows.reshape(len(rows), -1).T))


def first_of_each(ids: I64, bound: int) -> I64:
    """Each id below ``bound``: its first position in ``ids`` (``len(ids)`` for none)."""
    n = len(ids)
    head = np.full(max(bound, 1), n)
    np.minimum.at(head, ids, np.arange(n))
    return head


def first_occurrences(ids: I64, bound: int) -> tuple[I64, I64]:
    """For integer ids in [0, ``bound``): the positions of first occurrences (ascending) and
    each element's position among them."""
    pos = np.arange(len(ids))
    head = first_of_each(ids, bound)
    firsts = np.flatnonzero(head.take(ids) == pos)
    # Each id's number (its first occurrence's rank), written at the firsts' ids only.
    number = head  # reused: only the ids that occur are read back
    number[ids.take(firsts)] = np.arange(len(firsts))
    return firsts, number.take(ids)


def unique_rows(columns: Sequence[npt.NDArray[Any]]) -> tuple[I64, I64]:
    """The distinct rows of unsigned-word ``columns`` (1-D, one per column), compared
    exactly: ``first`` (the row where each first occurs, ascending) and ``inverse`` (each
    row's position in ``first``).

    The words are hashed into one uint64, the hashes sorted, and every row is checked word
    for word against its group's first row, so a hash collision can never merge two
    different rows (it falls back to the exact sort)."""
    n = len(columns[0])
    h = np.full(n, _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for col in columns:
            h = (h ^ col.astype(np.uint64)) * _FNV_PRIME
    order = np.argsort(h)
    hs = h[order]
    starts = np.flatnonzero(np.concatenate([[True], hs[1:] != hs[:-1]]))
    group_first = np.minimum.reduceat(order, starts)  # earliest row of each hash group
    rep = np.empty(n, np.int64)
    rep[order] = np.repeat(group_first, np.diff(np.append(starts, n)))
    first = np.sort(group_first)
    if not all(np.array_equal(c, c.take(rep)) for c in columns):
        # A collision: take the exact (slow) way, on the rows' bytes.
        rows = np.stack([c.astype(np.uint64) for c in columns], axis=1)
        void = rows.view(np.dtype((np.void, rows.shape[1] * 8)))[:, 0]
        _, f, inv = np.unique(void, return_index=True, return_inverse=True)
        rep = f[inv.reshape(-1)]
        first = np.sort(f)
    pos = np.empty(n, np.int64)
    pos[first] = np.arange(len(first))
    return first.astype(np.int64), pos[rep]
