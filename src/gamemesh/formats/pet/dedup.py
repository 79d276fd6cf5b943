"""The vertex search of PET corners: which corner records (vertex, normal, UV sets) are equal,
so that each distinct one becomes one glTF vertex.

One algorithm: a vertex's corners mostly carry the same record, so each row is compared with
the first row of its index; the rows unlike theirs (seams, hard edges) are grouped exactly by
a hash of their words, checked word for word."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def first_equal(index: npt.NDArray[Any], parts: list[npt.NDArray[Any]]) -> I64:
    """For each row of (index, parts...): the first row with the same index and the same bits
    in every part (rows of unsigned words; for floats' bits NaN equals NaN and -0.0 differs
    from 0.0: add +0.0 first to merge those). ``index``: integers >= 0."""
    n = len(index)
    if n == 0:
        return np.zeros(0, np.int64)
    idx = np.asarray(index, np.int64)
    rep = first_of_each(idx, int(idx.max()) + 1).take(idx)
    same = np.ones(n, bool)
    for p in parts:
        same &= _rows_equal(p.take(rep, axis=0), p)
    odd = np.flatnonzero(~same)
    if len(odd):
        # A row unlike its index's first row is like no row outside ``odd``.
        rows = np.concatenate([idx.take(odd).astype(np.uint32)[:, None],
                               *(p.take(odd, axis=0).view(np.uint32) for p in parts)], axis=1)
        first, inverse = unique_words(rows)
        rep[odd] = odd.take(first.take(inverse))
    return rep


def numbered(rep: I64) -> tuple[I64, I64]:
    """Each row's class and each class's first row, from each row's first equal row ``rep``
    (classes numbered by their first row)."""
    first = np.flatnonzero(rep == np.arange(len(rep)))
    rows = np.empty(len(rep), np.int64)
    rows[first] = np.arange(len(first))
    return rows.take(rep), first


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


def _rows_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Per row of two (N, k) arrays: all k items equal (the k flags of a row read as one
    word where k allows; numpy's reductions across narrow rows are slow)."""
    eq: npt.NDArray[np.bool_] = a == b
    k = eq.shape[1]
    word = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}.get(k)
    if word is None:
        out = eq[:, 0].copy()
        for c in range(1, k):
            out &= eq[:, c]
        return out
    ones: npt.NDArray[np.bool_] = eq.view(word)[:, 0] == np.frombuffer(b"\x01" * k, word)[0]
    return ones


def unique_words(rows: npt.NDArray[np.uint32]) -> tuple[I64, I64]:
    """The distinct rows of 32-bit words, compared exactly: ``first`` (the row where each
    first occurs, ascending) and ``inverse`` (each row's position in ``first``).

    The words are hashed into one uint64, the hashes sorted, and every row is checked word
    for word against its group's first row, so a hash collision can never merge two
    different rows (it falls back to the exact sort)."""
    n = len(rows)
    h = np.full(n, _FNV_OFFSET, np.uint64)
    with np.errstate(over="ignore"):
        for col in rows.T:
            h = (h ^ col) * _FNV_PRIME
    order = np.argsort(h)
    hs = h[order]
    starts = np.flatnonzero(np.concatenate([[True], hs[1:] != hs[:-1]]))
    group_first = np.minimum.reduceat(order, starts)  # earliest row of each hash group
    rep = np.empty(n, np.int64)
    rep[order] = np.repeat(group_first, np.diff(np.append(starts, n)))
    first = np.sort(group_first)
    if not np.array_equal(rows, rows[rep]):  # a collision: take the exact (slow) way
        void = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1] * 4)))[:, 0]
        _, f, inv = np.unique(void, return_index=True, return_inverse=True)
        rep = f[inv.reshape(-1)]
        first = np.sort(f)
    pos = np.empty(n, np.int64)
    pos[first] = np.arange(len(first))
    return first.astype(np.int64), pos[rep]
