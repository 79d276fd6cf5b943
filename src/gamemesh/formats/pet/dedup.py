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


def equal_rows(index: npt.NDArray[Any], blocks: Sequence[npt.NDArray[Any]],
               bound: int) -> tuple[I64, I64]:
    """Rows of (index, blocks...) numbered so that equal rows share a number: each row's
    number and each number's first row. ``index``: integers in [0, ``bound``); ``blocks``:
    (N, k) arrays of unsigned words, compared bit for bit (for floats' bits NaN equals NaN
    and -0.0 differs from 0.0: add +0.0 first to merge those).

    Number ``v`` < ``bound`` is the rows equal to index ``v``'s first row (an index no row
    has keeps its number, whose first row is given as 0), so where every row is like its
    index's first row the numbers are the indices themselves; the other rows are numbered
    from ``bound`` on, in order of first occurrence."""
    idx = np.asarray(index, np.int64)
    n = len(idx)
    head = first_of_each(idx, bound)
    first = np.where(head < n, head, 0)[:bound]
    rep = head.take(idx)
    same = np.ones(n, bool)
    for b in blocks:
        same &= _rows_equal(b.take(rep, axis=0), b)
    odd = np.flatnonzero(~same)
    if not len(odd):
        return idx, first
    # A row unlike its index's first row is like no row outside ``odd``.
    f, inverse = unique_rows([idx.take(odd),
                              *(col for b in blocks for col in b.take(odd, axis=0).T)])
    row = idx.copy()
    row[odd] = bound + inverse
    return row, np.concatenate([first, odd.take(f)])


def _rows_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Per row of two (N, k) arrays: all k items equal (the k flags of a row read as one
    word where k allows; numpy's reductions across narrow rows are slow)."""
    eq: npt.NDArray[np.bool_] = a == b
    k = eq.shape[1]
    word = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(k)
    if word is None:
        out = eq[:, 0].copy() if k else np.ones(len(eq), bool)
        for c in range(1, k):
            out &= eq[:, c]
        return out
    ones: npt.NDArray[np.bool_] = eq.view(word)[:, 0] == np.frombuffer(b"\x01" * k, word)[0]
    return ones


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
    """The distinct rows of unsigned-word ``columns`` (1-D arrays, one per column), compared
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
