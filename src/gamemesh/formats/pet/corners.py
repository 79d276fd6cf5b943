"""PET corners to glTF vertices: finding the first of equal corner records (vertex, normal,
UV sets) so each distinct one becomes one vertex, and the float clean-ups on the way."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .document import MeshSection

F64 = npt.NDArray[np.float64]


_SMALL_ROWS = 256
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def _words32(a: npt.NDArray[Any]) -> npt.NDArray[np.uint32]:
    """A 2-D array's values as 32-bit words: their bits (4- and 8-byte items), or widened."""
    if a.dtype.itemsize % 4 == 0:
        if a.strides[-1] != a.dtype.itemsize:
            a = np.ascontiguousarray(a)
        return a.view(np.uint32)
    return a.astype(np.uint32)


def first_equal(index: npt.NDArray[Any], *cols: npt.NDArray[Any],
                heads: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
    """For each row of (index, columns...): the first row with the same index and the same
    column bits (so for floats NaN equals NaN and -0.0 differs from 0.0: add +0.0 first to
    merge those). ``heads``: each row's first row with the same index, where the caller
    knows it (else found here).

    Rows mostly equal the first row of their index (a vertex's corners), so each row is
    compared with that one, column by column (64 bits at a time where a part allows); the
    rest (seams, hard edges) are grouped exactly by the hash dedup."""
    n = len(index)
    if n == 0:
        return np.zeros(0, np.int64)
    idx = np.asarray(index, np.int64)
    if n <= _SMALL_ROWS:
        return _first_equal_small(idx, [_words32(np.asarray(c).reshape(n, -1)) for c in cols])
    low = int(idx.min())
    if low < 0:
        idx = idx - low
    rep = _heads(idx) if heads is None else np.array(heads, np.int64)
    parts = [_words32(np.asarray(c).reshape(n, -1)) for c in cols]
    # Rows after the first of their index (none where each index has one row): only these
    # can differ from their index's first row.
    later = np.flatnonzero(rep != np.arange(n))
    if len(later) * 4 < n:
        odd = later[~_same_as(parts, rep.take(later), later)]
    else:
        odd = np.flatnonzero(~_same_as(parts, rep, None))
    if len(odd):
        # A row unlike its index's first row is like any earlier equal row in that: all
        # such rows are among ``odd``.
        rows = np.concatenate([idx[odd].astype(np.uint32)[:, None], *(p[odd] for p in parts)],
                              axis=1)
        first, inverse = _unique_words(rows)
        rep[odd] = odd[first[inverse]]
    return rep


def _heads(idx: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each row's first row with the same index (indices >= 0)."""
    n = len(idx)
    it = np.int32 if n < 2**31 and int(idx.max()) < 2**31 else np.int64
    head = np.full(int(idx.max()) + 1, n, it)
    np.minimum.at(head, idx.astype(it), np.arange(n, dtype=it))
    out: npt.NDArray[np.int64] = head.take(idx).astype(np.int64)
    return out


def _same_as(parts: list[npt.NDArray[np.uint32]], rep: npt.NDArray[np.int64],
             rows: npt.NDArray[np.int64] | None) -> npt.NDArray[np.bool_]:
    """Whether rows ``rows`` (None: all, in order) have the bits of rows ``rep`` in every
    part (64 bits at a time where a part allows)."""
    same = np.ones(len(rep), bool)
    if rows is not None:  # a few rows: gathered whole
        for p in parts:
            same &= (p.take(rep, axis=0) == p.take(rows, axis=0)).all(axis=1)
        return same
    for p in parts:
        q = p.view(np.uint64) if p.shape[1] % 2 == 0 else p
        # Columns made contiguous once: np.take of a contiguous column is the fast gather.
        for col in (q.T.copy() if q.shape[1] > 1 else q.reshape(1, -1)):
            same &= col.take(rep) == col
    return same


def _first_equal_small(idx: npt.NDArray[np.int64], parts: list[npt.NDArray[np.uint32]]
                       ) -> npt.NDArray[np.int64]:
    """:func:`first_equal` of a few rows: the first row of each distinct (index, bits) byte
    string, by a dict (a row unlike its index's first row is like no earlier row that is)."""
    n = len(idx)
    rows = np.concatenate([idx[:, None].view(np.uint32), *parts], axis=1)
    raw = rows.tobytes()
    size = len(raw) // n
    seen: dict[bytes, int] = {}
    rep = [seen.setdefault(raw[i * size:(i + 1) * size], i) for i in range(n)]
    return np.array(rep, np.int64)


def _corner_records(m: MeshSection) -> tuple[npt.NDArray[np.uint64],
                                             npt.NDArray[np.uint64]] | None:
    """When the corner fields are the reader's views of its records (vertex at byte 0, normal
    at 4, the UV-set count at 16, the UV sets from 17, one count for all, more than a few
    corners): each record's bytes 0-15 (vertex, normal) and its UV sets as rows of 8-byte
    words, each copied in one pass over the records (a row copy as raw bytes). Else None."""
    cv, nrm, uv, nuv = m.corner_vertex, m.corner_normal, m.corner_uv, m.corner_nuv
    if (nuv is None or not all(isinstance(a, np.ndarray) for a in (cv, nrm, uv, nuv))
            or uv.ndim != 3):
        return None
    n, sets = len(cv), uv.shape[1]
    size = 17 + 8 * sets
    if (n <= _SMALL_ROWS or cv.dtype != "<u4" or nrm.dtype != "<f4" or uv.dtype != "<f4"
            or cv.strides != (size,) or nrm.strides != (size, 4)
            or uv.strides != (size, 8, 4) or nrm.shape != (n, 3) or uv.shape[2] != 2
            or nuv.strides != (0,) or len(nuv) != n or int(nuv[0]) != sets):
        return None
    at = cv.__array_interface__["data"][0]
    if (nrm.__array_interface__["data"][0] != at + 4
            or uv.__array_interface__["data"][0] != at + 17):
        return None
    # The records' bytes (the fields' views span them all: nothing outside is read).
    raw = np.lib.stride_tricks.as_strided(cv[:, None].view(np.uint8), shape=(n, size),
                                          strides=(size, 1), writeable=False)
    head = raw[:, :16].view(np.dtype((np.void, 16))).copy().view(np.uint64).reshape(n, 2)
    words = raw[:, 17:].view(np.dtype((np.void, 8 * sets))).copy().view(np.uint64)
    return head, words.reshape(n, sets)


def _first_equal_records(cv: npt.NDArray[np.int64], head: npt.NDArray[np.uint64],
                         sets: npt.NDArray[np.uint64], bound: int | None = None
                         ) -> npt.NDArray[np.int64]:
    """:func:`first_equal` of (vertex, normal, UV sets) given as the records' words
    (``head``: vertex and normal; ``sets``: the UV sets; ``bound``: more than any vertex
    index, when known): each row compared with the first row of its vertex two and ``sets``
    words at a time, the rest grouped by the hash dedup on the same 32-bit words."""
    rep = _first_corners(cv, int(cv.max()) + 1 if bound is None else bound).take(cv)
    odd, f, inverse = _unlike_first(head, sets, rep)
    if len(odd):
        rep[odd] = odd[f[inverse]]
    return rep


def record_rows(cv: npt.NDArray[np.int64], head: npt.NDArray[np.uint64],
                sets: npt.NDArray[np.uint64], bound: int
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The distinct records of :func:`_first_equal_records` (the same groups) as rows
    numbered by vertex: each corner's row and each row's first corner. Row ``v`` is the
    record of vertex ``v``'s first corner (so where every corner has its vertex's first
    record, the rows are the vertex indices themselves, no pass to number them); rows from
    ``bound`` on are the other records, in order of first occurrence. None when some vertex
    below ``bound`` has no corner (its row would have none)."""
    first_v = _first_corners(cv, bound)
    if bound and int(first_v.max()) >= len(cv):
        return None
    odd, f, inverse = _unlike_first(head, sets, first_v.take(cv))
    if not len(odd):
        return cv, first_v
    row = cv.copy()
    row[odd] = bound + inverse
    return row, np.concatenate([first_v, odd.take(f)])


def _first_corners(cv: npt.NDArray[np.int64], bound: int) -> npt.NDArray[np.int64]:
    """Each vertex index below ``bound``: its first corner (the corner count for none)."""
    n = len(cv)
    first = np.full(bound, n)
    np.minimum.at(first, cv, np.arange(n))
    return first


def _unlike_first(head: npt.NDArray[np.uint64], sets: npt.NDArray[np.uint64],
                  rep: npt.NDArray[np.int64]
                  ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The corners whose record differs from that of corner ``rep`` (their vertex's first),
    and their distinct records (:func:`_unique_words`: first and inverse, among them). A
    record unlike its vertex's first record is like no corner outside these."""
    same = _rows_equal(head.take(rep, axis=0), head)
    same &= _rows_equal(sets.take(rep, axis=0), sets)
    odd = np.flatnonzero(~same)
    if not len(odd):
        return odd, odd.astype(np.int64), odd.astype(np.int64)
    f, inverse = _unique_words(np.concatenate([head[odd].view(np.uint32),
                                               sets[odd].view(np.uint32)], axis=1))
    return odd, f, inverse


def _rows_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Per row of two (N, k) arrays: all k items equal (the k flags of a row read as one
    word where k allows; numpy's reductions across narrow rows are slow)."""
    eq: npt.NDArray[np.bool_] = a == b
    k = eq.shape[1]
    word = {2: np.uint16, 4: np.uint32, 8: np.uint64}.get(k)
    if word is None:
        out = eq[:, 0].copy()
        for c in range(1, k):
            out &= eq[:, c]
        return out
    ones: npt.NDArray[np.bool_] = eq.view(word)[:, 0] == np.frombuffer(b"\x01" * k, word)[0]
    return ones


def first_occurrences(ids: npt.NDArray[np.int64], bound: int
                      ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For integer ids in [0, ``bound``): the positions of first occurrences (ascending) and
    each element's position among them (a few ids: by a dict)."""
    n = len(ids)
    if n <= _SMALL_ROWS:
        seen: dict[int, int] = {}
        order: list[int] = []
        for i, v in enumerate(ids.tolist()):
            if v not in seen:
                seen[v] = len(order)
                order.append(i)
        inverse = [seen[v] for v in ids.tolist()]
        return np.array(order, np.int64), np.array(inverse, np.int64)
    pos = np.arange(n)
    head = np.full(max(bound, 1), n)
    np.minimum.at(head, ids, pos)
    firsts = np.flatnonzero(head.take(ids) == pos)
    # Each id's number (its first occurrence's rank), written at the firsts' ids only.
    number = head  # reused: only the ids that occur are read back
    number[ids.take(firsts)] = np.arange(len(firsts))
    return firsts, number.take(ids)


def unique_rows(index: npt.NDArray[Any], *floats: npt.NDArray[np.float32]
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct rows of (index, float columns...): ``first`` (the row where each first
    occurs, ascending) and ``inverse`` (each row's position in ``first``). -0.0 counts as
    0.0."""
    n = len(index)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    words = [np.asarray(index, np.int64).astype(np.uint32)[:, None]]
    words += [(np.asarray(f, np.float32).reshape(n, -1) + np.float32(0.0)).view(np.uint32)
              for f in floats]
    return _unique_words(np.concatenate(words, axis=1))


def _unique_words_small(rows: npt.NDArray[np.uint32]
                        ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_unique_words` of a few rows: the first row of each distinct byte string."""
    n = len(rows)
    raw = np.ascontiguousarray(rows).tobytes()
    size = len(raw) // n if n else 0
    seen: dict[bytes, int] = {}
    first: list[int] = []
    inverse: list[int] = []
    for i in range(n):
        key = raw[i * size:(i + 1) * size]
        k = seen.get(key)
        if k is None:  # distinct rows are numbered in order of first occurrence
            k = seen[key] = len(first)
            first.append(i)
        inverse.append(k)
    return np.array(first, np.int64), np.array(inverse, np.int64)


def _unique_words(rows: npt.NDArray[np.uint32]
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`unique_rows` of rows of 32-bit words, compared exactly.

    ``np.unique(axis=0)`` sorted the rows as structured records (a slow generic compare);
    here the words are hashed into one uint64, the hashes sorted, and every row is checked
    word for word against its group's first row, so a hash collision can never merge two
    different rows (it falls back to the exact sort). A few rows go through a dict of their
    bytes instead (the same answer without the fixed cost of a dozen numpy passes)."""
    n = len(rows)
    if n <= _SMALL_ROWS:
        return _unique_words_small(rows)
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



def _single_value(a: npt.NDArray[Any]) -> float | None:
    """The value of a (non-empty) array when ``np.unique`` finds only one (NaNs equal), else
    None. Values all with the first one's bits (the usual case) are decided without the
    sort; the rest by np.unique (which of 0.0 and -0.0 it keeps is its own choice)."""
    first = a[:1]
    if a.dtype.itemsize in (4, 8):
        word = np.uint32 if a.dtype.itemsize == 4 else np.uint64
        if bool((a.view(word) == first.view(word)[0]).all()):
            return float(first[0])
    vals = np.unique(a)
    return float(vals[0]) if len(vals) == 1 else None


def dense(a: Any) -> npt.NDArray[Any]:
    """``a`` as a C-contiguous array. The reader leaves the corner fields as views of the
    input's records (strided, unaligned): whole rows are copied as raw bytes (one void item a
    row), several times faster than numpy's item-by-item copy of unaligned values."""
    a = np.asarray(a)
    if a.flags.c_contiguous or a.ndim == 0 or a.size == 0 or a.dtype.hasobject:
        return np.ascontiguousarray(a)
    inner = np.empty((1, *a.shape[1:]), a.dtype).strides[1:]
    if a.strides[1:] != inner:
        return np.ascontiguousarray(a)
    row = a.dtype.itemsize * (a.size // len(a))
    raw = a.reshape(len(a), -1).view(np.uint8)
    out: npt.NDArray[Any] = raw.view(np.dtype((np.void, row))).copy().view(a.dtype)
    return out.reshape(a.shape)


def _norms(a: F64) -> F64:
    """``np.linalg.norm(a, axis=1)`` of real rows: what it computes (the same reduction, so
    the same bits) without its argument handling, a large share of the call on a few rows."""
    out: F64 = np.sqrt(np.add.reduce(a * a, axis=1))
    return out


def _cross(a: F64, b: F64) -> F64:
    """``np.cross`` of rows of 3: each component as its two products' difference
    (``a1 b2 - a2 b1``, ``a2 b0 - a0 b2``, ``a0 b1 - a1 b0``), the products and the
    subtraction in np.cross's order (so its bits), all three at once on rotated columns
    without its wrapper's axis moves and temporaries."""
    out: F64 = (a.take(_NEXT, axis=1) * b.take(_AFTER, axis=1)
                - a.take(_AFTER, axis=1) * b.take(_NEXT, axis=1))
    return out


# Each component's next and the one after (cyclically): the columns _cross multiplies.
_NEXT, _AFTER = np.array([1, 2, 0]), np.array([2, 0, 1])


def _finite32(a: Any) -> npt.NDArray[np.float32]:
    """float32 without NaN or infinity (hostile files): clipped to a large finite range."""
    arr = np.asarray(a)
    # Usually all values are in range: then the clip changes nothing, and two reductions
    # (NaN fails both tests) cost less than the clip's passes.
    if (arr.size > _SMALL_ROWS and arr.dtype in (np.float32, np.float64)
            and arr.min() >= -1e30 and arr.max() <= 1e30):
        return arr.astype(np.float32)
    # np.clip then np.nan_to_num, by their ufuncs (the wrappers cost more than the work on
    # small arrays): NaN passes the clip and becomes 0.0.
    out = np.minimum(np.maximum(np.asarray(a, np.float64), -1e30), 1e30)
    nan = np.isnan(out)
    if nan.any():
        out[nan] = 0.0
    return out.astype(np.float32)
