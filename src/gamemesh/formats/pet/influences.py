"""PET skin influences: the weights and bone slots of each vertex cleaned, sorted and cut to
glTF's four (the small, column and general paths give the same bits)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene.skinning import fold_repeated_columns, limit_influences
from .document import MeshSection
from .skeleton import Unit, decode_names

F64 = npt.NDArray[np.float64]


def _fake_body_substitute(unit: Unit, main: Any, nb: int) -> npt.NDArray[np.int64]:
    bs = unit.doc.bones
    if bs is None:
        return np.arange(nb)
    return fake_body_substitute(bs.names, bs.parents, main, nb)


def fake_body_substitute(names_raw: list[bytes], parents: list[int], main: Any,
                         nb: int) -> npt.NDArray[np.int64]:
    """v1.0 quirk (#2): with a "fake body bone" (no Bip/Bone/Jaw in its name, nobody's main
    bone, no children), corners of Bip/Bone/Jaw main bones rotate by that bone instead.
    Returns, per bone, the bone whose rotation its corners' normals use."""
    names = decode_names(names_raw[:nb])
    skeletal = ["Bip" in n or "Bone" in n or "Jaw" in n for n in names]
    has_child = {p for p in parents if 0 <= p < nb}
    cands = (i for i in range(nb) if not skeletal[i] and i not in has_child)
    if not len(main):
        fake = next(cands, None)
    elif len(main) <= _FEW_MAIN:  # a few main bones: one set of them (plain ints)
        mains = set(main.tolist())
        fake = next((i for i in cands if i not in mains), None)
    else:  # the candidates (usually none or one) checked one by one: no set of all mains
        fake = next((i for i in cands if not (main == i).any()), None)
    if fake is None:
        return np.arange(nb)
    # One array from plain ints (the per-bone table is tiny).
    return np.array([fake if i < len(skeletal) and skeletal[i] else i for i in range(nb)],
                    np.int64)


# Up to this many vertices, their main bones are gathered into one set of plain ints.
_FEW_MAIN = 512


@dataclass
class _Influences:
    """Per vertex, ready for the primitives: joints (uint16) and weights (float32), padded to
    a multiple of 4 slots, and each vertex's count of weights > 0."""

    joints: npt.NDArray[np.uint16]
    weights: npt.NDArray[np.float32]
    used: npt.NDArray[np.integer[Any]]


def _clean_influences(joints: Any, weights: Any, ctx: Context) -> _Influences:
    """The general way: :func:`limit_influences` on the skinned (N, P) weights."""
    joints, weights = _limit_influences(joints, weights, ctx)
    # Per vertex, before the primitives gather them.
    return _Influences(joints.astype(np.uint16), weights.astype(np.float32),
                       _count_positive(weights))


# Up to this many slots the influences are cleaned column by column (each sum then adds its
# terms left to right, as numpy's row sums do for fewer than 8 terms).
_COLUMN_SLOTS = 7


def _influences_by_column(m: MeshSection, nb: int, main: npt.NDArray[np.int64],
                          ctx: Context) -> _Influences:
    """:meth:`_MeshBuilder._skin`'s weights then :func:`_clean_influences`, fused and run on
    contiguous columns (one per slot) instead of (N, P) rows: the same floating-point
    operations in the same order, so the same bits, without the (N, P) float64 arrays and
    their slow narrow-row reductions."""
    bones = np.asarray(m.inf_bone)
    p = bones.shape[1]
    count = np.asarray(m.inf_count)
    wb = np.asarray(m.inf_weight)
    if len(bones) <= _SMALL_VERTS:
        small = _influences_small(bones, count, wb, nb, main, ctx)
        if small is not None:
            return small
    w: list[F64] = []
    j: list[npt.NDArray[Any]] = []
    total: F64 | None = None
    for c in range(p):
        b = np.ascontiguousarray(bones[:, c])
        valid = bone_in_range(b, nb)
        valid &= count > c
        w.append(np.where(valid, wb[:, c] / 255.0, 0.0))
        j.append(np.where(valid, b, 0))
        if total is None:
            total = w[0].copy()
        else:
            total += w[c]
    assert total is not None
    empty = total <= 0
    if np.any(empty):
        ctx.note("pet.vertex_unweighted", f"{int(empty.sum())} vertices have no usable "
                 "influence: bound to their main bone (or bone 0) with weight 1")
        total = np.where(empty, 1.0, total)
        w = [np.where(empty, 0.0, wc / total) for wc in w]
        w[0][empty] = 1.0
        j[0][empty] = np.maximum(main[empty], 0)
    else:
        w = [wc / total for wc in w]
    return _sorted_influences(j, w, ctx)


def bone_in_range(b: npt.NDArray[Any], nb: int) -> npt.NDArray[np.bool_]:
    """``(b >= 0) & (b < nb)`` as one comparison: signed ids read as unsigned (a negative
    one is then larger than any bone count)."""
    unsigned = _UNSIGNED.get(b.dtype)
    if unsigned is not None:
        out: npt.NDArray[np.bool_] = b.view(unsigned) < nb
        return out
    return (b >= 0) & (b < nb)


# The unsigned types of the same size as the usual (native) signed id types.
_UNSIGNED: dict[np.dtype[Any], type[np.unsignedinteger[Any]]] = {
    np.dtype(np.int32): np.uint32, np.dtype(np.int64): np.uint64}


# Slot ranks 0, 1, ... (more than the column way's slots).
_RANKS = np.arange(_COLUMN_SLOTS + 1)

# Up to this many vertices, :func:`_influences_small` works on (N, P) arrays: a few dozen numpy
# calls whatever P is, against the column way's several per slot and per pair of slots.
_SMALL_VERTS = 512


def _influences_small(bones: npt.NDArray[Any], count: npt.NDArray[Any], wb: npt.NDArray[Any],
                      nb: int, main: npt.NDArray[np.int64], ctx: Context) -> _Influences | None:
    """:func:`_influences_by_column` on (N, P) arrays, for few vertices: every value by the
    same operation (the row sums as column-after-column adds, the sort a stable permutation),
    so the same bits. None (the column way decides) when a vertex names a bone twice with
    weight: the merge's order of adds is left to the column way."""
    p = bones.shape[1]
    valid = bone_in_range(bones, nb) & (count[:, None] > _RANKS[:p])
    w = np.where(valid, wb / 255.0, 0.0)
    pos = w > 0
    if p > 1 and _has_repeats(bones, pos):
        return None
    j = np.where(valid, bones, 0)
    total = _column_sum(w, p)
    empty = total <= 0
    if empty.any():
        ctx.note("pet.vertex_unweighted", f"{int(empty.sum())} vertices have no usable "
                 "influence: bound to their main bone (or bone 0) with weight 1")
        w = np.where(empty[:, None], 0.0, w / np.where(empty, 1.0, total)[:, None])
        w[empty, 0] = 1.0
        j[empty, 0] = np.maximum(main[empty], 0)
    else:
        w /= total[:, None]
    # Each row's count of weights != 0 (np.count_nonzero's by-axis wrapper costs more).
    counts = np.add.reduce(w != 0, axis=1)
    if p > 1 and (w[:, :-1] < w[:, 1:]).any():
        # By descending weight, ties in slot order (the column way's stable sort); rows in
        # order stay as they are.
        order = np.argsort(-w, axis=1, kind="stable")
        order += np.arange(0, w.size, p)[:, None]  # flat positions: np.take is the fast gather
        w, j = w.take(order), j.take(order)
    k = _kept_slots(counts, p, ctx)
    total = _column_sum(w, k)
    total[total <= 0] = 1.0
    n, cols = len(w), max(4, -(-k // 4) * 4)
    wr = w[:, :k] / total[:, None]
    kept = wr > 0
    wout = np.zeros((n, cols), np.float32)
    jout = np.zeros((n, cols), np.uint16)
    wout[:, :k] = wr
    jout[:, :k] = np.where(kept, j[:, :k], 0)
    return _Influences(jout, wout, np.add.reduce(kept, axis=1, dtype=np.int8))


def _has_repeats(bones: npt.NDArray[Any], pos: npt.NDArray[np.bool_]) -> bool:
    """Whether some row has two slots with the same bone and both weights > 0."""
    # Slots without weight get distinct negative ids (the others are bones >= 0): every slot
    # equals itself, so a row without repeats has just those p equal pairs of its (p, p).
    ids = np.where(pos, bones, -1 - _RANKS[:bones.shape[1]])
    return int(np.count_nonzero(ids[:, :, None] == ids[:, None, :])) > ids.size


def _column_sum(w: F64, k: int) -> F64:
    """The first ``k`` columns of each row added left to right (the column way's order). From
    3 columns on, as the last column of the running sums (one call: a running sum adds each
    column to the previous sums, the same adds in the same order)."""
    if k >= _ACCUMULATED:
        out: F64 = np.add.accumulate(w[:, :k], axis=1)[:, k - 1]
        return out
    total = w[:, 0].copy()
    for c in range(1, k):
        total += w[:, c]
    return total


# From this many columns a running sum costs less than a copy and an add per column.
_ACCUMULATED = 3


def _count_positive(w: F64) -> npt.NDArray[np.integer[Any]]:
    """Each row's count of weights > 0. Rows of 4 or 8 (the padded widths): the row's flags
    as one 32- or 64-bit word, whose bytes a multiply sums into its top byte."""
    k = w.shape[1] if w.ndim == 2 else 0
    if k not in (4, 8) or not len(w):
        out: npt.NDArray[np.integer[Any]] = np.count_nonzero(
            np.ascontiguousarray(w.T) > 0, axis=0)
        return out
    word = np.dtype(np.uint64 if k == 8 else np.uint32)
    flags = np.ascontiguousarray(w > 0).view(np.uint8).view(word)[:, 0]
    ones = np.array(0x0101010101010101 if k == 8 else 0x01010101, word)
    total: npt.NDArray[np.integer[Any]] = np.multiply(flags, ones)  # wraps: no overflow check
    return total >> np.array(8 * (k - 1), word)



def _kept_slots(counts: npt.NDArray[Any], p: int, ctx: Context) -> int:
    """How many of ``p`` slots the influences keep: all that any vertex uses, or at most
    ``--max-influences`` (noting the vertices that had more)."""
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    if keep is None:  # every slot any vertex uses: none has more
        return max(1, int(counts.max()))
    k = max(1, min(keep, p))
    over = int(np.count_nonzero(counts > k))
    if over:
        ctx.note("pet.influences_limited", f"{over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    return k


def _sorted_influences(j: list[npt.NDArray[Any]], w: list[F64], ctx: Context) -> _Influences:
    """:func:`limit_influences` on weight columns that are finite and >= 0 (repeats folded,
    slots sorted by weight, the used ones kept and renormalized, padded)."""
    n, p = len(w[0]), len(w)
    fold_repeated_columns(j, w)
    counts = np.zeros(n, np.int8)
    for c in w:
        counts += c != 0
    # Rows already in order (each weight >= the next: a stable sort leaves them) stay; the
    # others are sorted.
    unsorted = np.zeros(n, bool)
    for a in range(p - 1):
        unsorted |= w[a] < w[a + 1]
    ws, js = list(w), list(j)
    rows = np.flatnonzero(unsorted)
    if len(rows):
        _sort_rows(ws, js, rows)
    k = _kept_slots(counts, p, ctx)
    total = ws[0].copy()
    for r in range(1, k):
        total += ws[r]
    total[total <= 0] = 1.0
    cols = max(4, -(-k // 4) * 4)
    wout = np.zeros((n, cols), np.float32)
    jout = np.zeros((n, cols), np.uint16)
    nused = np.zeros(n, np.int8)
    for r in range(k):
        wr = ws[r] / total
        pos = wr > 0
        wout[:, r] = wr
        jout[:, r] = np.where(pos, js[r], 0)
        nused += pos
    return _Influences(jout, wout, nused)


def _sort_rows(w: list[F64], j: list[npt.NDArray[Any]], rows: npt.NDArray[np.int64]) -> None:
    """Rows ``rows`` of the weight and joint columns sorted by descending weight, stably, in
    place: each slot's place is the number of slots with a larger weight, or an equal one
    further left."""
    p, n = len(w), len(rows)
    wr = [c.take(rows) for c in w]
    jr = [c.take(rows) for c in j]
    ws = np.empty(p * n)
    js = np.empty(p * n, np.int64)
    at0 = np.arange(n, dtype=np.int64)
    for a in range(p):
        rank = np.zeros(n, np.int64)
        for b in range(p):
            if b != a:
                rank += (wr[b] >= wr[a]) if b < a else (wr[b] > wr[a])
        at = rank * n + at0
        ws[at] = wr[a]
        js[at] = jr[a]
    for r in range(p):
        w[r][rows] = ws[r * n:(r + 1) * n]
        j[r][rows] = js[r * n:(r + 1) * n]


def _limit_influences(joints: Any, weights: Any, ctx: Context) -> tuple[Any, Any]:
    """Merge repeated bones, sort influences by weight, drop empty slots, honour
    ``max_influences``, pad to 4k."""
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    inf = limit_influences(joints, weights, keep)
    if not inf.merged:
        ctx.note("pet.influences_many",
                 f"vertices with {weights.shape[1]} influences: repeats not merged")
    if inf.over:
        ctx.note("pet.influences_limited", f"{inf.over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    return inf.joints, inf.weights


# -- animation ------------------------------------------------------------------------------------
# ANIM tracks -> glTF channels, and the motion clips cut from them (spec §B.7, §B.11).
#
# Every step runs on all channels of a file at once: their keys are concatenated (one segment
# per channel) and each operation is one numpy call over all of them. A file has a few keys per
# channel and tens of channels, so per-channel numpy calls cost far more than the arithmetic.
# Each value is computed by the same floating-point operations, in the same order, as the
# per-channel way (``np.interp``'s formula, ``np.argsort(kind="stable")`` per channel), so the
# results are bit for bit the same.
