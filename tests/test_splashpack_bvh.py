"""The modern SPLASHPACK BVH builder (spec-modern §3.5): checked against the rules the spec
gives (SAH splits, <= 64 triangles per leaf, depth <= 16, breadth-first numbering) and the
containment every culling traversal relies on. No SplashEdit output exists to compare with."""

from __future__ import annotations

import time
from collections import deque

import numpy as np
import numpy.typing as npt
import pytest

from gamemesh.errors import LimitError
from gamemesh.formats.splashpack.modern import bvh
from gamemesh.formats.splashpack.modern import layout as ml

EYE = (np.eye(3) * 4096).astype(np.int32).ravel()


def soup(n: int, seed: int = 1, spread: int = 3000, size: int = 40) -> npt.NDArray[np.void]:
    rng = np.random.default_rng(seed)
    tris = np.zeros(n, ml.TRI)
    tris["v"] = rng.integers(-spread, spread, (n, 1, 3)) + rng.integers(-size, size, (n, 3, 3))
    return tris


def rotation(deg: float) -> npt.NDArray[np.int32]:
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    return np.rint(np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]) * 4096).astype(np.int32).ravel()


def world(tris: npt.NDArray[np.void], rot: npt.NDArray[np.int32],
          pos: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
    """The corners in the runtime's frame, independently of the builder: (n, 3, 3) ints."""
    m = rot.reshape(3, 3).astype(np.float64) / 4096.0
    v = tris["v"].astype(np.float64)
    return np.rint(np.einsum("ij,ncj->nci", m, v) + pos).astype(np.int64)


def check(nodes: npt.NDArray[np.void], refs: npt.NDArray[np.void],
          meshes: list[npt.NDArray[np.void]], corners: list[npt.NDArray[np.int64]]) -> int:
    """Every invariant; returns the depth of the deepest leaf."""
    leaf = nodes["left"] == 0xFFFF
    assert np.array_equal(leaf, nodes["right"] == 0xFFFF)
    # Every triangle referenced exactly once, leaves' ranges tiling the ref table.
    first, count = nodes["first_tri"][leaf].astype(int), nodes["tri_count"][leaf].astype(int)
    assert count.max() <= 64 and count.min() >= 1
    covered = np.zeros(len(refs), int)
    for f, c in zip(first, count, strict=True):
        covered[f:f + c] += 1
    assert (covered == 1).all()
    pairs = sorted(zip(refs["object"].tolist(), refs["tri"].tolist(), strict=True))
    assert pairs == [(k, t) for k, m in enumerate(meshes) for t in range(len(m))]
    assert (nodes["tri_count"][~leaf] == 0).all()
    # Breadth first: children follow their parent, levels are contiguous runs of indices.
    depth = np.full(len(nodes), -1)
    depth[0] = 0
    order = []
    queue = deque([0])
    while queue:
        k = queue.popleft()
        order.append(k)
        if not leaf[k]:
            left, right = int(nodes["left"][k]), int(nodes["right"][k])
            assert k < left and right == left + 1
            depth[left] = depth[right] = depth[k] + 1
            queue.extend((left, right))
    assert order == list(range(len(nodes)))  # a BFS visits them in index order
    assert (np.diff(depth) >= 0).all() and depth.max() <= 16
    # Containment: a node holds its children's boxes and its triangles' corners.
    box = nodes["aabb"].astype(np.int64)
    for k in np.flatnonzero(~leaf):
        for c in (nodes["left"][k], nodes["right"][k]):
            assert (box[k, :3] <= box[c, :3]).all() and (box[c, 3:] <= box[k, 3:]).all()
    for k in np.flatnonzero(leaf):
        r = refs[int(nodes["first_tri"][k]):int(nodes["first_tri"][k]) + int(nodes["tri_count"][k])]
        pts = np.concatenate([corners[o][t] for o, t in zip(r["object"], r["tri"], strict=True)])
        assert (box[k, :3] <= pts.min(axis=0)).all() and (pts.max(axis=0) <= box[k, 3:]).all()
    return int(depth.max())


def test_ten_thousand_triangles_over_rotated_objects_keep_every_invariant() -> None:
    meshes = [soup(4000, 1), soup(5000, 2), soup(1000, 3, spread=200, size=5)]
    rots = [EYE, rotation(30), rotation(-90)]
    poss = [np.array(p, np.int32) for p in ([100, -200, 300], [-5000, 0, 7000], [0, 0, 0])]
    boxes, pairs = bvh.triangle_boxes(meshes, rots, poss)
    nodes, refs = bvh.build(boxes, pairs)
    corners = [world(m, r, p) for m, r, p in zip(meshes, rots, poss, strict=True)]
    deepest = check(nodes, refs, meshes, corners)
    assert 2 <= deepest <= 16 and len(nodes) < 10_000 // 16  # leaves are well filled
    # The root is the union of all corners, exactly.
    every = np.concatenate([c.reshape(-1, 3) for c in corners])
    assert nodes["aabb"][0].tolist() == [*every.min(axis=0), *every.max(axis=0)]


def test_ten_thousand_triangles_build_well_under_a_second() -> None:
    meshes = [soup(10_000)]
    boxes, pairs = bvh.triangle_boxes(meshes, [EYE], [np.zeros(3, np.int32)])
    best = min(_timed(boxes, pairs) for _ in range(3))
    assert best < 0.5, best


def _timed(boxes: npt.NDArray[np.int64], pairs: npt.NDArray[np.int64]) -> float:
    # CPU time: on a shared machine the wall clock also counts the other processes (a niced
    # run measured 2.9 s of wall clock for a build of 0.1 s).
    t = time.process_time()
    bvh.build(boxes, pairs)
    return time.process_time() - t


def test_sah_separates_two_clusters_at_the_root() -> None:
    a, b = soup(100, 4, spread=100), soup(100, 5, spread=100)
    b["v"] += np.array([20000, 0, 0], np.int16)
    boxes, pairs = bvh.triangle_boxes([a, b], [EYE, EYE], [np.zeros(3, np.int32)] * 2)
    nodes, refs = bvh.build(boxes, pairs)
    check(nodes, refs, [a, b], [world(a, EYE, np.zeros(3)), world(b, EYE, np.zeros(3))])
    left, right = nodes["aabb"][1], nodes["aabb"][2]
    assert left[3] < right[0] or right[3] < left[0]  # disjoint along x: one cluster each side


def test_coincident_triangles_fall_back_to_median_splits_within_the_depth_limit() -> None:
    tris = np.zeros(5000, ml.TRI)  # every centroid the same: SAH finds no plane
    tris["v"] = [[0, 0, 0], [10, 0, 0], [0, 10, 0]]
    boxes, pairs = bvh.triangle_boxes([tris], [EYE], [np.zeros(3, np.int32)])
    nodes, refs = bvh.build(boxes, pairs)
    assert check(nodes, refs, [tris], [world(tris, EYE, np.zeros(3))]) <= 16
    assert nodes["tri_count"][nodes["left"] == 0xFFFF].max() <= 64


def test_a_skewed_scene_still_fits_under_depth_16() -> None:
    # Geometric spacing: every SAH split peels a few triangles off one end.
    n = 60_000
    tris = np.zeros(n, ml.TRI)
    x = np.minimum(np.rint(np.geomspace(1, 30000, n)), 32000).astype(np.int16)
    tris["v"][:, :, 0] = x[:, None] + np.array([0, 1, 0], np.int16)
    tris["v"][:, 2, 1] = 1
    boxes, pairs = bvh.triangle_boxes([tris], [EYE], [np.zeros(3, np.int32)])
    nodes, refs = bvh.build(boxes, pairs)
    assert check(nodes, refs, [tris], [world(tris, EYE, np.zeros(3))]) <= 16


def test_empty_and_oversized_inputs() -> None:
    nodes, refs = bvh.build(*bvh.triangle_boxes([], [], []))
    assert len(nodes) == len(refs) == 0
    with pytest.raises(LimitError, match="bvh_ref_count"):
        bvh.build(np.zeros((70_000, 6), np.int64), np.zeros((70_000, 2), np.int64))
