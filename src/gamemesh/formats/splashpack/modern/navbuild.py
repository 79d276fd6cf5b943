"""Nav regions (spec-modern §3.8) from a scene's navmesh triangles: what a version-1 pack holds
(36-byte nav triangles) or a navmesh node, carried into the modern section the runtime walks.

Each walkable triangle becomes one convex region of 3 vertices, wound the way the runtime's
``pointInConvexPoly`` wants (every edge cross product >= 0 in XZ, psxsplash ``navregion.cpp``),
with its plane as the runtime evaluates it: floor Y = (A·X >> 12) + (B·Z >> 12) + D, all 20.12 in
the PSX frame (Y down). Two triangles sharing an edge get a portal each way (the runtime moves
the player between regions only through portals); a shared edge has the same height on both
sides, so heightDelta is 0. This is not SplashEdit's Recast build (merged convex polygons of up
to 8 vertices): a region per triangle walks the same floor with more regions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ....registry import Context
from ....scene import Scene
from ....scene.math import world_matrices
from . import layout as ml
from .document import ModernDocument

__all__ = ["nav_from_triangles", "scene_nav_triangles"]

I64 = npt.NDArray[np.int64]
# Steeper than this the plane's slopes leave int32 (and no player walks it): 1/ny <= 64.
MIN_UP = 1.0 / 64
FLAT_DEG, RAMP_DEG = 3.0, 25.0  # surfaceType 0 flat, 1 ramp, else 2 stairs (spec §3.8)
NO_ROOM = 0xFF


def scene_nav_triangles(scene: Scene, nodes: list[int]) -> npt.NDArray[np.float64]:
    """(T, 3, 3) world-space triangles of the navmesh ``nodes`` (glTF frame, scene units)."""
    worlds = world_matrices(scene)
    out = []
    for i in nodes:
        mesh = scene.meshes[scene.nodes[i].mesh or 0]
        for prim in mesh.primitives:
            if prim.mode != 4 or not len(prim.positions):
                continue
            p = np.asarray(prim.positions, np.float64) @ worlds[i][:3, :3].T + worlds[i][:3, 3]
            out.append(p[prim.triangles().astype(np.int64)])
    return np.concatenate(out) if out else np.zeros((0, 3, 3))


def nav_from_triangles(doc: ModernDocument, tris: npt.NDArray[np.float64],
                       raw: Callable[[npt.ArrayLike, int], npt.NDArray[np.int64]],
                       ctx: Context) -> None:
    """Fill ``doc``'s nav header, regions and portals from world triangles; ``raw`` maps glTF
    positions to the PSX frame's 20.12 integers (the writer's fixed point)."""
    v = raw(tris.reshape(-1, 3), 0x7FFFFFFF).reshape(-1, 3, 3)
    v, dropped = _walkable(v)
    if dropped:
        ctx.note("splashpack.nav_dropped", f"{dropped} navmesh triangle(s) are vertical or "
                 "steeper than the runtime's floor plane holds; they are not nav regions")
    if len(v) > 0xFFFF:
        ctx.note("splashpack.nav_dropped", f"{len(v) - 0xFFFF} navmesh triangle(s) past the "
                 "65535 nav regions a file counts are not written")
        v = v[:0xFFFF]
    if not len(v):
        return
    regions = np.zeros(len(v), ml.NAV_REGION)
    regions["verts_x"][:, :3], regions["verts_z"][:, :3] = v[:, :, 0], v[:, :, 2]
    regions["plane"], regions["surface_type"] = _planes(v)
    regions["vert_count"], regions["room_index"] = 3, NO_ROOM
    portals, start, count = _portals(v)
    regions["portal_start"], regions["portal_count"] = start, count
    hdr = np.zeros(1, ml.NAV_HEADER)
    hdr["region_count"], hdr["portal_count"] = len(regions), len(portals)
    hdr["start_region"] = _start_region(doc, v)
    doc.nav_header, doc.nav_regions, doc.nav_portals = hdr, regions, portals


def _walkable(v: I64) -> tuple[I64, int]:
    """Triangles with an upward-enough face, wound counter-clockwise in (X, Z) as the runtime's
    point-in-polygon test needs (a triangle of zero area in XZ is a wall: left out)."""
    e1, e2 = (v[:, 1] - v[:, 0]).astype(np.float64), (v[:, 2] - v[:, 0]).astype(np.float64)
    n = np.cross(e1, e2)
    length = np.sqrt((n * n).sum(axis=1))
    keep = (length > 0) & (np.abs(n[:, 1]) >= MIN_UP * np.maximum(length, 1e-300))
    # cross in the runtime's order: (bx - ax)(pz - az) - (bz - az)(px - ax) for edge 0 -> 1
    # and point 2; negative means clockwise, so corners 1 and 2 swap.
    area = (v[:, 1, 0] - v[:, 0, 0]) * (v[:, 2, 2] - v[:, 0, 2]) - \
        (v[:, 1, 2] - v[:, 0, 2]) * (v[:, 2, 0] - v[:, 0, 0])
    keep &= area != 0
    out = v[keep].copy()
    flip = area[keep] < 0
    out[flip] = out[flip][:, [0, 2, 1]]
    return out, int((~keep).sum())


def _planes(v: I64) -> tuple[I64, npt.NDArray[np.uint8]]:
    """Per triangle (A, B, D) with Y = A·X/4096 + B·Z/4096 + D through its corners (A, B in
    4.12, D in 20.12), and its surface type by slope."""
    p = v.astype(np.float64)
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    a, b = -n[:, 0] / n[:, 1], -n[:, 2] / n[:, 1]
    fa, fb = np.rint(a * 4096).astype(np.int64), np.rint(b * 4096).astype(np.int64)
    # D from the rounded slopes in the runtime's integer steps (fpmul: 64-bit product, >> 12),
    # so its floor meets corner 0 exactly (|A|, |B| <= 64 * 4096 keep the products in int64).
    x0, y0, z0 = v[:, 0, 0], v[:, 0, 1], v[:, 0, 2]
    d = y0 - ((fa * x0) >> 12) - ((fb * z0) >> 12)
    plane = np.clip(np.stack([fa, fb, d], axis=1), -0x80000000, 0x7FFFFFFF)
    cos = np.abs(n[:, 1]) / np.sqrt((n * n).sum(axis=1))
    deg = np.degrees(np.arccos(np.clip(cos, 0.0, 1.0)))
    kind = np.where(deg < FLAT_DEG, 0, np.where(deg < RAMP_DEG, 1, 2)).astype(np.uint8)
    return plane, kind


def _portals(v: I64) -> tuple[npt.NDArray[np.void], I64, I64]:
    """A portal each way across every edge exactly two triangles share, grouped by region in
    region order; returns them with each region's first portal and count."""
    t = len(v)
    a = v[:, [0, 1, 2]].reshape(-1, 3)
    b = v[:, [1, 2, 0]].reshape(-1, 3)
    first_is_a = _lex_less_equal(a, b)
    lo, hi = np.where(first_is_a[:, None], a, b), np.where(first_is_a[:, None], b, a)
    keys = np.concatenate([lo, hi], axis=1)
    _, inv, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    shared = np.flatnonzero(counts[inv] == 2)
    order = shared[np.argsort(inv[shared], kind="stable")]
    e0, e1 = order[0::2], order[1::2]  # the two sides of each shared edge
    src = np.concatenate([e0 // 3, e1 // 3])
    dst = np.concatenate([e1 // 3, e0 // 3])
    edge = np.concatenate([e0, e1])
    keep = src != dst
    src, dst, edge = src[keep], dst[keep], edge[keep]
    by = np.lexsort((dst, src))
    src, dst, edge = src[by], dst[by], edge[by]
    portals = np.zeros(len(src), ml.NAV_PORTAL)
    portals["a"], portals["b"] = a[edge][:, [0, 2]], b[edge][:, [0, 2]]
    portals["neighbor"] = dst
    count = np.bincount(src, minlength=t).astype(np.int64)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    return portals, start, np.minimum(count, 0xFF)


def _lex_less_equal(a: I64, b: I64) -> npt.NDArray[np.bool_]:
    """Row-wise a <= b in lexicographic (x, y, z) order."""
    lt = a < b
    eq = a == b
    out: npt.NDArray[np.bool_] = lt[:, 0] | (eq[:, 0] & (lt[:, 1] | (eq[:, 1] & (
        lt[:, 2] | eq[:, 2]))))
    return out


def _start_region(doc: ModernDocument, v: I64) -> int:
    """The region whose centroid is nearest the player start in XZ (the runtime starts the
    player's region search from it)."""
    pos = doc.header["player_pos"][0].astype(np.int64)
    c = v.mean(axis=1)
    d = np.abs(c[:, 0] - pos[0]) + np.abs(c[:, 2] - pos[2])
    return int(np.argmin(d))
