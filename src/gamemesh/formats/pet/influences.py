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
from .skeleton import decode_names

F64 = npt.NDArray[np.float64]


def fake_body_substitute(names_raw: list[bytes], parents: list[int], main: Any,
                         nb: int) -> npt.NDArray[np.int64]:
    """v1.0 quirk (#2): with a "fake body bone" (no Bip/Bone/Jaw in its name, nobody's main
    bone, no children), corners of Bip/Bone/Jaw main bones rotate by that bone instead.
    Returns, per bone, the bone whose rotation its corners' normals use."""
    names = decode_names(names_raw[:nb])
    skeletal = ["Bip" in n or "Bone" in n or "Jaw" in n for n in names]
    has_child = {p for p in parents if 0 <= p < nb}
    cands = (i for i in range(nb) if not skeletal[i] and i not in has_child)
    # The candidates (usually none or one) checked one by one against the main bones.
    fake = next((i for i in cands if not (main == i).any()), None)
    if fake is None:
        return np.arange(nb)
    # One array from plain ints (the per-bone table is tiny).
    return np.array([fake if i < len(skeletal) and skeletal[i] else i for i in range(nb)],
                    np.int64)


@dataclass
class Influences:
    """Per vertex, ready for the primitives: joints (uint16) and weights (float32), padded to
    a multiple of 4 slots, and each vertex's count of weights > 0."""

    joints: npt.NDArray[np.uint16]
    weights: npt.NDArray[np.float32]
    used: npt.NDArray[np.integer[Any]]


def clean_influences(joints: Any, weights: Any, ctx: Context) -> Influences:
    """:func:`limit_influences` on (N, P) joints and weights (repeats merged, sorted by
    weight, empty slots dropped, ``max_influences`` honoured, padded to 4k)."""
    joints, weights = _limit_influences(joints, weights, ctx)
    # Per vertex, before the primitives gather them.
    return Influences(joints.astype(np.uint16), weights.astype(np.float32),
                       np.count_nonzero(weights > 0, axis=1))


# Up to this many slots the influences are cleaned column by column (each sum then adds its
# terms left to right, as numpy's row sums do for fewer than 8 terms).
COLUMN_SLOTS = 7


def influences_by_column(m: MeshSection, nb: int, main: npt.NDArray[np.int64],
                          ctx: Context) -> Influences:
    """:meth:`_MeshBuilder._skin`'s weights then :func:`_clean_influences`, fused and run on
    contiguous columns (one per slot) instead of (N, P) rows: the same floating-point
    operations in the same order, so the same bits, without the (N, P) float64 arrays and
    their slow narrow-row reductions."""
    bones = np.asarray(m.inf_bone)
    p = bones.shape[1]
    count = np.asarray(m.inf_count)
    wb = np.asarray(m.inf_weight)
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


def _sorted_influences(j: list[npt.NDArray[Any]], w: list[F64], ctx: Context) -> Influences:
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
    return Influences(jout, wout, nused)


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
