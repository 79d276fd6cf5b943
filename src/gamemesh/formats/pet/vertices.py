"""The MESH vertex list (spec §B.8): records of variable size, found and parsed without a Python
loop per vertex.

A record is its position (in .mpet files then a float), then (u8 weight, bone id) pairs until
the weights reach 255, a bone id being one byte or 0xFE and an i16, and two pad bytes after a
lone pair. Each start depends on the one before, so the next start is computed for every even
offset the list can reach (every record part is even sized) and the chain from the first is
followed by pointer jumping (:func:`follow`). An escaped id is first read as a pair of weight
255, which ends a walk at it: the walks that met one are walked exactly only when the chain
goes through one (a file with escaped ids), not for the candidates off the chain that read
0xFE bytes inside positions (:func:`_walk_escapes`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from ...binary import Reader

# A walk of more pairs than this is no vertex of a real file: a list with one is walked record
# by record (:func:`_starts_walked`), which no pair count slows down.
_MAX_PAIRS = 32
# Candidates per chunk of :func:`_links`: the chunk's temporaries stay in the CPU cache.
_CHUNK = 1 << 18
# The first pair rank whose walks :func:`_pair_links` counts (to stop its contiguous passes).
_COUNTED = 4

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]


def vertex_records(r: Reader, nvert: int, head: int) -> dict[str, Any]:
    """The ``nvert`` records at the reader's position (which moves past them): ``positions``,
    ``global`` (``head`` 16: the .mpet float), ``count``, ``weight``, ``bone``, ``wide`` (an id
    written with the 0xFE escape) and ``pad``. The influence fields are (N, P) transposes of
    slot-major arrays: to_scene reads them slot by slot."""
    starts = _starts(r, nvert, head)
    out = _parse(r, starts, head)
    r.seek(int(starts[-1]))
    return out


def _window_words(buf: npt.NDArray[np.uint8], s0: int, nw: int, end: int) -> npt.NDArray[Any]:
    """``nw`` 16-bit words from ``s0``, 0xFFFF past ``end``: weight 255, so a walk that leaves
    the section ends at once, past ``end``, and no step needs a bounds check."""
    words = np.full(nw, 0xFFFF, np.uint16)
    stop = min(end, s0 + 2 * nw)
    words.view(np.uint8)[:stop - s0] = buf[s0:stop]
    return words


def _starts(r: Reader, nvert: int, head: int) -> I64:
    """Offsets of the ``nvert`` records plus the offset after the last one."""
    s0, end = r.tell(), r.end
    if nvert == 0:
        return np.array([s0], np.int64)
    buf = np.frombuffer(r.data, np.uint8)
    h2, last = head // 2, (end - s0) // 2  # a next start past word ``last`` is past the section
    # Only offsets the list can reach matter: a window for ~4 pairs a vertex, doubled while
    # the chain runs past it. Candidate j <-> offset s0 + 2j; D (the candidate count) = runs
    # past the section, D + 1 = more than _MAX_PAIRS pairs, D + 2 = beyond the window.
    est = nvert * (head + 10)
    while True:
        lim = min(end, s0 + est)
        d = (lim - s0) // 2 + 1
        words = _window_words(buf, s0, d + h2 + 2 * _MAX_PAIRS + 4, end)
        jn = _links(words, d, h2, last)
        chain = follow(jn, nvert + 1)
        if _meets_escape(words, chain, d):
            _walk_escapes(words, jn, d, h2, last)
            chain = follow(jn, nvert + 1)
        chain = chain.astype(np.int64)
        top = int(chain.max())  # below D (the usual case): no sentinel to look for
        if lim < end and top >= d and np.any(chain == d + 2):
            est *= 2
            continue
        break
    if top < d:
        return s0 + 2 * chain
    if np.any(chain == d + 1):
        return _starts_walked(r, nvert, head)
    v = int(np.flatnonzero(chain == d)[0]) - 1
    raise r.truncated(expected="influence weights that reach 255 within the section",
                      actual="the section ended first", field=f"[{v}].weights",
                      offset=int(s0 + 2 * chain[v]))


def _links(words: npt.NDArray[np.uint16], m: int, h2: int, last: int) -> I32:
    """For each of the ``m`` candidates j (word j of ``words``), the candidate of the next
    record start as if an escaped id (0xFE) were a pair of weight 255, or a sentinel (see
    :func:`_starts`); three self-linked sentinels at the end.

    A walk that meets an escape thus ends at it (:func:`_walk_escapes` walks those exactly
    when the chain goes through one); every other walk is exact, and so are the sentinels:
    an escape only makes a walk longer, and one of more than ``_MAX_PAIRS`` pairs met none.
    Chunk by chunk (the passes then run in the cache), over the running sum of the weights,
    a walk from word p reads k pairs, k the first count whose sum reaches 255
    (:func:`_pair_links`)."""
    jn = np.empty(m + 3, np.int32)
    for c0 in range(0, m, _CHUNK):
        n = min(m, c0 + _CHUNK) - c0
        base = c0 + h2  # the chunk's first walk's first pair (a word index)
        chunk = words[base:base + n + _MAX_PAIRS + 2]
        weight = chunk & np.uint16(0xFF)
        # On whole words: a strided byte view of the ids is several times slower.
        np.maximum(weight, (chunk >> np.uint16(8) == 0xFE).view(np.uint8) * np.uint16(255),
                   out=weight)
        csum = np.zeros(n + _MAX_PAIRS + 3, np.int32)
        np.cumsum(weight, out=csum[1:])
        out = jn[c0:c0 + n]
        link, over = _pair_links(csum, n, base, out)
        far = np.flatnonzero(link >= m)
        if len(far):
            out[far] = np.where(link.take(far) > last, m, m + 2)
        if len(over):
            out[over] = m + 1
    jn[m:] = (m, m + 1, m + 2)
    return jn


def _ends_at_escape(words: npt.NDArray[np.uint16],
                    nxt: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Whether each walk ending before word ``nxt`` (a walk is >= 2 words long) ended at an
    escaped id: its last pair is word ``nxt - 1``, or ``nxt - 2`` when the pad follows a
    single pair (an escaped pad is taken for one too: that walk is walked again, to the same
    end)."""
    fe = np.uint16(0xFE)
    out: npt.NDArray[np.bool_] = ((words.take(nxt - 1) >> np.uint16(8)) == fe)
    out |= (words.take(nxt - 2) >> np.uint16(8)) == fe
    return out


def _meets_escape(words: npt.NDArray[np.uint16], chain: npt.NDArray[Any], d: int) -> bool:
    """Whether a record of the chain, before its first sentinel (``d`` and up), ended at an
    escaped id: the chain is exact up to that record only."""
    nxt = chain[1:]
    if int(nxt.max()) >= d:
        nxt = nxt[:int(np.argmax(nxt >= d))]
    return bool(_ends_at_escape(words, nxt).any())


def _walk_escapes(words: npt.NDArray[np.uint16], jn: I32, m: int, h2: int, last: int) -> None:
    """The links of :func:`_links` made exact (in place): every candidate whose walk ended at
    an escaped id is walked again pair by pair (:func:`_walk`)."""
    link = jn[:m]
    esc = np.flatnonzero((link < m) & _ends_at_escape(words, link))
    nxt = _walk(words, esc, h2, last)
    jn[esc] = np.where(nxt == -1, m, np.where(nxt == -2, m + 1, np.where(nxt >= m, m + 2, nxt)))


def _pair_links(csum: I32, n: int, base: int, out: I32) -> tuple[I32, npt.NDArray[np.intp]]:
    """For the walks from words 0 .. n - 1 (``csum``: the running sum of the weight bytes from
    word 0, with a leading 0), the word after each walk's pairs and pad, ``base + i + k`` plus
    1 for the pad after a single pair (written to ``out``), and the walks with more than
    ``_MAX_PAIRS`` pairs (their words are not meaningful).

    ``k`` is 1 + the ranks r >= 1 whose running sum stays below 255, and a walk whose rank 1
    does not (k = 1) is the one with the pad: so the word is ``i + 2`` + the ranks r >= 2 that
    do (the running sum only grows). Contiguous passes (counted in int8) run while many walks
    go on; the few long ones left (mostly offsets inside a record, reading floats as weights)
    are placed by a binary search of the running sum (a few hundred cost less that way than
    another pass)."""
    target = csum[:n] + 255
    more = np.zeros(n, np.int8)
    short = np.empty(n, np.bool_)
    rank = 2
    while True:
        np.less(csum[rank:rank + n], target, out=short)
        more += short.view(np.int8)
        # Most walks read more than a few pairs: the first ranks are not counted.
        going = int(np.count_nonzero(short)) if rank >= _COUNTED else n
        if going * 32 < n or going < 256 or rank == _MAX_PAIRS:
            break
        rank += 1
    np.add(more, np.arange(base + 2, base + n + 2, dtype=np.int32), out=out)
    if not going:
        return out, np.zeros(0, np.intp)
    left = np.flatnonzero(short)
    # Each long walk's pair count, capped at _MAX_PAIRS + 1 (= too many).
    k = np.minimum(np.searchsorted(csum, target.take(left)) - left, _MAX_PAIRS + 1)
    out[left] = left + k + base
    return out, left[k > _MAX_PAIRS]


def _walk(words: npt.NDArray[Any], cand: npt.NDArray[Any], h2: int, last: int) -> I32:
    """The word after the record starting at each candidate word: -1 when it ends past word
    ``last``, -2 with more than ``_MAX_PAIRS`` pairs. The walks that meet an escape (one in
    200 of a list's candidates, one in 6 where a third of the vertices have an escaped id)
    step a pair at a time together, each step one gather of the walks still going (the words
    past a walk of _MAX_PAIRS escaped pairs are in ``words``: :func:`_window_words`)."""
    out = np.full(len(cand), -2, np.int32)
    idx = np.arange(len(cand))
    cur = cand.astype(np.int64) + h2
    acc = np.zeros(len(cand), np.int32)
    for k in range(1, _MAX_PAIRS + 1):
        w = words.take(cur)
        acc += w & 0xFF
        cur += 1
        cur += w >> 8 == 0xFE
        done = acc >= 255
        if done.any():
            fin = cur[done] + (k == 1)  # a single pair: a pad word
            out[idx[done]] = np.where(fin > last, -1, fin)
            keep = ~done
            idx, cur, acc = idx[keep], cur[keep], acc[keep]
            if not len(idx):
                break
    return out


def _starts_walked(r: Reader, nvert: int, head: int) -> I64:
    """:func:`_starts` of a list with a record of more than ``_MAX_PAIRS`` pairs (hostile or
    very odd files only), walked record by record: each pair is one step, so the cost is
    bounded by the section's bytes whatever the pair counts."""
    s0 = r.tell()
    raw = bytes(r.data[s0:r.end])
    size = len(raw)
    starts = [0]
    p = 0
    for v in range(nvert):
        p += head
        total = pairs = 0
        while total < 255 and p + 2 <= size:
            total += raw[p]
            p += 4 if raw[p + 1] == 0xFE else 2
            pairs += 1
        p += 2 if pairs == 1 else 0
        if total < 255 or p > size:
            raise r.truncated(expected="influence weights that reach 255 within the section",
                              actual="the section ended first", field=f"[{v}].weights",
                              offset=s0 + starts[-1])
        starts.append(p)
    return s0 + np.array(starts, np.int64)


def follow(jn: npt.NDArray[Any], count: int) -> npt.NDArray[Any]:
    """The first ``count`` elements of the chain 0 -> jn[0] -> ... : jump 2^m steps at a time
    along a coarse chain, then fill each block with 2^m gathers. Each doubling is a gather
    over all of ``jn`` and each coarse step a Python step (~0.05 us): m = 3 is about the
    cheapest for vertex lists (~10 candidates a vertex)."""
    m = min(3, max(0, math.ceil(math.log2(max(1.0, math.sqrt(count))))))
    block = 1 << m
    jump = jn
    for _ in range(m):
        jump = jump.take(jump)  # take: faster than fancy indexing for a 1-D gather
    blocks = -(-count // block)
    # ~count / 2^m Python steps, indexing a memoryview (~2x faster than ndarray.item).
    step = np.ascontiguousarray(jump).data
    j = 0
    coarse = [0, *(j := step[j] for _ in range(blocks - 1))]
    grid = np.empty((block, blocks), jn.dtype)
    grid[0] = coarse
    for k in range(1, block):
        jn.take(grid[k - 1], out=grid[k])
    return grid.T.reshape(-1)[:count]


def _parse(r: Reader, starts: I64, head: int) -> dict[str, Any]:
    """The records at ``starts`` (plus the end of the last), read as 16-bit words from the
    first start: one gather per field, then one pass per pair rank over all vertices, each
    rank's words kept with the id byte plus 1 (wrapping: id 0xFF, none, is 0) and zeroed past
    a vertex's pairs, so that those read as weight 0 and bone -1 with no mask built. The
    (N, P) tables may hold 8 cells a byte of the list: a hostile list of many vertices and one
    with a huge pair count is refused, not allocated."""
    n = len(starts) - 1
    s0, e = int(starts[0]), int(starts[-1])
    words = _window_words(np.frombuffer(r.data, np.uint8), s0, (e - s0) // 2 + 8, e)
    ws = (starts[:-1] - s0) >> 1
    out: dict[str, Any] = {"positions": _records_at(words, ws, 12).view("<f4").reshape(n, 3)}
    if head == 16:
        out["global"] = _records_at(words, ws + 6, 4).view("<f4")
    cur = ws + head // 2
    going = np.ones(n, np.bool_)
    total = np.zeros(n, np.int32)
    count = np.zeros(n, np.int32)
    rows: list[Any] = []  # per pair rank: each vertex's pair word, id + 1, 0 past its pairs
    ids: list[tuple[int, Any, Any]] = []  # (rank, vertices, their escaped ids)
    one = np.uint16(0x100)
    while going.any():
        if len(rows) * n > 8 * (e - s0) + 4096:
            v = int(np.argmax(going))
            msg = "too many influence pairs for the vertex list's size"
            raise r.corrupt(msg, expected=f"<= {len(rows)} pairs a vertex", actual="more",
                            field=f"[{v}].weights", offset=int(starts[v]))
        wd = words.take(cur)
        np.add(wd, one, out=wd)
        np.multiply(wd, going, out=wd)
        rows.append(wd)
        count += going
        total += wd & 0xFF
        wide = wd >= 0xFF00  # id 0xFE
        if wide.any():
            at = np.flatnonzero(wide)
            ids.append((len(rows) - 1, at, words.take(cur[at] + 1).view(np.int16)))
            cur += wide
        cur += going
        going &= total < 255
    # The pad bytes as one word a vertex (a scatter of 2-byte rows goes byte by byte).
    single = np.flatnonzero(count == 1)
    pad = np.zeros(n, np.uint16)
    pad[single] = words.take(cur[single])
    out.update(count=count, pad=pad.view(np.uint8).reshape(n, 2))
    if not rows:
        out.update(weight=np.zeros((n, 0), np.uint8), bone=np.zeros((n, 0), np.int32),
                   wide=np.zeros((n, 0), np.bool_))
        return out
    # Slot-major (P, N): a vertex's pairs past its count read as weight 0, bone -1.
    wd = np.stack(rows)
    bone = (wd >> 8).astype(np.int32)
    bone -= 1
    wide = np.zeros(bone.shape, np.bool_)
    for rank, at, value in ids:
        bone[rank, at] = value
        wide[rank, at] = True
    out.update(weight=wd.astype(np.uint8).T, bone=bone.T, wide=wide.T)
    return out


def _records_at(words: npt.NDArray[np.uint16], at: npt.NDArray[Any],
                size: int) -> npt.NDArray[np.void]:
    """The ``size`` bytes from each word index ``at``, one item each: a view with an item
    starting at every word, indexed (one gather of whole items instead of one per word
    through an (N, size / 2) index array)."""
    items = np.ndarray((len(words) - size // 2 + 1,), np.dtype((np.void, size)), words,
                       strides=(2,))
    out: npt.NDArray[np.void] = items[at]
    return out
