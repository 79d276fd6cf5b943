"""The BVH of a modern SPLASHPACK (spec-modern §3.5): built from every triangle of every
GameObject, in the frame the runtime culls in (the world PSX 20.12 integers of the GameObject
``aabb``, ``from_scene._aabb``).

Rules (the spec names them, D23 §2.5): surface-area heuristic splits, at most 64 triangles per
leaf, depth at most 16, nodes numbered breadth first. A node of at most 64 triangles is a leaf
(the runtime tests a leaf's triangles one by one; fewer, fuller leaves keep the node table small);
the SAH picks where bigger nodes split. Splits are binned (16 bins per axis over
the triangle centroids) and the build is a FIFO queue, so children are numbered as they are
made and the numbering is breadth first without a second pass. When the SAH split would leave a
child too big to fit under the depth limit with halving splits, or finds no split (all centroids
in one bin), the node is split at the median along its longest axis instead; that guarantees
every leaf holds at most 64 triangles by depth 16 for up to 64 * 2**16 triangles. Each leaf's
references are contiguous at ``first``. Checked only against these invariants: no SplashEdit
output exists to compare with.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt

from ....errors import LimitError
from . import layout as ml

FMT = "splashpack"
LEAF = 64
DEPTH = 16
BINS = 16
NONE = 0xFFFF

I64 = npt.NDArray[np.int64]


def triangle_boxes(meshes: list[npt.NDArray[np.void]], rots: list[npt.NDArray[np.int32]],
                   positions: list[npt.NDArray[np.int32]]) -> tuple[I64, I64]:
    """Per triangle: its world box (n, 6) as min xyz, max xyz, and its (object, triangle) pair.
    The same rounding as the GameObject aabb, so a leaf box and its object's box agree."""
    boxes, refs = [], []
    for k, (tris, rot, pos) in enumerate(zip(meshes, rots, positions, strict=True)):
        if not len(tris):
            continue
        v = tris["v"].astype(np.float64)  # (n, 3, 3)
        world = np.rint(v @ (rot.reshape(3, 3).astype(np.float64) / 4096.0).T +
                        np.asarray(pos, np.float64))
        world = np.clip(world, -0x80000000, 0x7FFFFFFF).astype(np.int64)
        boxes.append(np.concatenate([world.min(axis=1), world.max(axis=1)], axis=1))
        refs.append(np.stack([np.full(len(tris), k), np.arange(len(tris))], axis=1))
    if not boxes:
        return np.zeros((0, 6), np.int64), np.zeros((0, 2), np.int64)
    return np.concatenate(boxes), np.concatenate(refs).astype(np.int64)


def _area(lo: npt.NDArray[np.float64], hi: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    d = np.maximum(hi - lo, 0.0)
    return np.asarray(d[..., 0] * d[..., 1] + d[..., 1] * d[..., 2] + d[..., 2] * d[..., 0],
                      np.float64)


def _sah_axis(cent: npt.NDArray[np.float64], boxes: npt.NDArray[np.float64],
              axis: int) -> tuple[float, float]:
    """The best (cost, split position) along one axis; cost inf when every centroid shares a bin."""
    c = cent[:, axis]
    lo_c, hi_c = float(c.min()), float(c.max())
    if hi_c <= lo_c:
        return np.inf, 0.0
    b = np.minimum(((c - lo_c) * (BINS / (hi_c - lo_c))).astype(np.int64), BINS - 1)
    counts = np.bincount(b, minlength=BINS)
    order = np.argsort(b, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    used = counts > 0
    blo = np.full((BINS, 3), np.inf)
    bhi = np.full((BINS, 3), -np.inf)
    blo[used] = np.minimum.reduceat(boxes[order, :3], starts[used], axis=0)
    bhi[used] = np.maximum.reduceat(boxes[order, 3:], starts[used], axis=0)
    # Left of plane k holds bins < k (k = 1..BINS-1), right the rest.
    l_lo, l_hi = np.minimum.accumulate(blo)[:-1], np.maximum.accumulate(bhi)[:-1]
    r_lo = np.minimum.accumulate(blo[::-1])[::-1][1:]
    r_hi = np.maximum.accumulate(bhi[::-1])[::-1][1:]
    nl = np.cumsum(counts)[:-1]
    nr = len(c) - nl
    cost = np.where((nl > 0) & (nr > 0), _area(l_lo, l_hi) * nl + _area(r_lo, r_hi) * nr, np.inf)
    k = int(np.argmin(cost))
    return float(cost[k]), lo_c + (k + 1) * (hi_c - lo_c) / BINS


def _split(idx: I64, cent: npt.NDArray[np.float64], boxes: npt.NDArray[np.float64],
           depth: int, lo: npt.NDArray[np.float64], hi: npt.NDArray[np.float64]) -> I64 | None:
    """The node's triangles reordered so the left child is a prefix, with the left count at
    the end of the array; None when the node should stay a leaf."""
    n = len(idx)
    if n <= LEAF:
        return None
    c, bx = cent[idx], boxes[idx]
    best = min(((*_sah_axis(c, bx, a), a) for a in range(3)), key=lambda t: t[0])
    cost, pos, axis = best
    room = LEAF << max(DEPTH - depth - 1, 0)  # what a child can hold with halving splits below
    left = c[:, axis] < pos if np.isfinite(cost) else None
    if left is None or max(int(left.sum()), n - int(left.sum())) > room:
        axis = int(np.argmax(hi - lo))
        order = np.argsort(c[:, axis], kind="stable")
        return np.concatenate([idx[order], [n // 2]])
    return np.concatenate([idx[left], idx[~left], [int(left.sum())]])


def build(boxes_i: I64, refs: I64) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void]]:
    """Nodes (``ml.BVH_NODE``) and references (``ml.BVH_REF``) over the given triangle boxes;
    both empty without triangles."""
    n = len(boxes_i)
    if n > NONE:
        msg = "too many triangles for the BVH's 16-bit references"
        raise LimitError(FMT, msg, field="header.bvh_ref_count", expected="<= 65535", actual=n)
    if n == 0:
        return np.zeros(0, ml.BVH_NODE), np.zeros(0, ml.BVH_REF)
    boxes = boxes_i.astype(np.float64)
    cent = (boxes[:, :3] + boxes[:, 3:]) * 0.5
    order = np.arange(n, dtype=np.int64)
    rows: list[tuple[int, int, int, int, int]] = []  # start, count, left, right, depth
    queue: deque[int] = deque([0])
    rows.append((0, n, NONE, NONE, 0))
    while queue:
        k = queue.popleft()
        start, count, _, _, depth = rows[k]
        idx = order[start:start + count]
        lo, hi = boxes[idx, :3].min(axis=0), boxes[idx, 3:].max(axis=0)
        parts = None if count <= 1 or depth >= DEPTH else _split(idx, cent, boxes, depth, lo, hi)
        if parts is None:
            continue
        nl = int(parts[-1])
        order[start:start + count] = parts[:-1]
        rows[k] = (start, count, len(rows), len(rows) + 1, depth)
        rows.append((start, nl, NONE, NONE, depth + 1))
        rows.append((start + nl, count - nl, NONE, NONE, depth + 1))
        queue.extend((len(rows) - 2, len(rows) - 1))
    if len(rows) >= NONE:
        msg = "too many BVH nodes for 16-bit child indices"
        raise LimitError(FMT, msg, field="header.bvh_node_count", expected="< 65535",
                         actual=len(rows))
    return _records(rows, order, boxes_i, refs)


def _records(rows: list[tuple[int, int, int, int, int]], order: I64, boxes: I64,
             refs: I64) -> tuple[npt.NDArray[np.void], npt.NDArray[np.void]]:
    table = np.array(rows, np.int64)
    nodes = np.zeros(len(rows), ml.BVH_NODE)
    leaf = table[:, 2] == NONE
    nodes["left"], nodes["right"] = table[:, 2], table[:, 3]
    nodes["first_tri"] = np.where(leaf, table[:, 0], 0)
    nodes["tri_count"] = np.where(leaf, table[:, 1], 0)
    # Every node's box: min/max over its range of the reordered triangle boxes.
    sb = boxes[order]
    starts, ends = table[:, 0], table[:, 0] + table[:, 1]
    lo = np.minimum.reduceat(sb[:, :3], starts, axis=0)
    hi = np.maximum.reduceat(sb[:, 3:], starts, axis=0)
    # reduceat reduces start..next start; redo the rows whose range is not that.
    nxt = np.concatenate([starts[1:], [len(sb)]])
    for k in np.flatnonzero(nxt != ends):
        s, e = int(starts[k]), int(ends[k])
        lo[k], hi[k] = sb[s:e, :3].min(axis=0), sb[s:e, 3:].max(axis=0)
    nodes["aabb"] = np.clip(np.concatenate([lo, hi], axis=1), -0x80000000, 0x7FFFFFFF)
    out = np.zeros(len(order), ml.BVH_REF)
    out["object"], out["tri"] = refs[order, 0], refs[order, 1]
    return nodes, out
