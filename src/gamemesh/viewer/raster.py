"""A small software rasterizer in numpy: depth-buffered triangles, no GPU, no new dependency.

Triangles are processed in batches. For each batch every candidate pixel of every triangle's
bounding box is generated at once (``np.repeat`` over the box areas), tested against the edge
functions and depth-resolved with a per-pixel minimum; there is no Python loop per pixel or
per triangle.
The result is a G-buffer (which triangle covers each pixel, and its perspective-correct
barycentric coordinates) that :mod:`gamemesh.viewer.thumbnail` shades.

There is deliberately no back-face culling: the depth buffer hides the far side of a closed
model, and a model whose faces point inwards then shows up dark instead of silently looking
right, which is what the orientation test relies on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

__all__ = ["GBuffer", "look_at", "perspective", "rasterize"]

# Candidate pixels generated per batch: bounds the temporary arrays to some tens of MB.
BATCH_PIXELS = 1 << 20


@dataclass
class GBuffer:
    """Per pixel: the covering triangle (-1 for none) and perspective-correct barycentrics."""

    width: int
    height: int
    triangle: I64  # (H*W,)
    bary: F64  # (H*W, 3)
    depth: F64  # (H*W,) NDC depth, +inf where empty

    @property
    def covered(self) -> npt.NDArray[np.bool_]:
        return self.triangle >= 0


def look_at(eye: F64, target: F64, up: F64) -> F64:
    """World -> camera matrix (camera looks down -Z, as in OpenGL and three.js)."""
    f = target - eye
    f = f / np.linalg.norm(f)
    s = np.cross(f, up)
    if np.linalg.norm(s) < 1e-9:  # looking straight up or down: pick another up
        s = np.cross(f, np.array([0.0, 0.0, 1.0]))
    s = s / np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def perspective(fov_y: float, aspect: float, near: float, far: float) -> F64:
    f = 1.0 / np.tan(fov_y / 2)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def rasterize(positions: F64, triangles: I64, view_proj: F64, width: int, height: int
              ) -> GBuffer:
    """Depth-buffered coverage of world-space triangles seen through ``view_proj``."""
    n_pix = width * height
    depth = np.full(n_pix, np.inf)
    tri_of = np.full(n_pix, -1, dtype=np.int64)
    hom = np.concatenate([positions, np.ones((len(positions), 1))], axis=1) @ view_proj.T
    w = hom[:, 3]
    safe_w = np.where(np.abs(w) < 1e-12, 1e-12, w)
    sx = (hom[:, 0] / safe_w * 0.5 + 0.5) * width
    sy = (0.5 - hom[:, 1] / safe_w * 0.5) * height
    sz = hom[:, 2] / safe_w
    keep = _visible_triangles(triangles, w, sx, sy, sz, width, height)
    tris = triangles[keep]
    ids = np.flatnonzero(keep)
    boxes = _boxes(sx[tris], sy[tris], width, height)
    areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    for lo, hi in _batches(areas):
        _raster_batch(tris[lo:hi], ids[lo:hi], boxes[lo:hi], areas[lo:hi], sx, sy, sz,
                      width, depth, tri_of)
    bary = _perspective_bary(tri_of, triangles, sx, sy, w, width)
    return GBuffer(width, height, tri_of, bary, depth)


def _visible_triangles(tris: I64, w: F64, sx: F64, sy: F64, sz: F64, width: int,
                       height: int) -> npt.NDArray[np.bool_]:
    """Triangles wholly in front of the near plane, inside the depth range, not degenerate.
    (The camera is framed outside the model, so no clipping against the near plane is done.)"""
    in_front = np.all(w[tris] > 1e-9, axis=1)
    in_depth = np.all(np.abs(sz[tris]) <= 1.0, axis=1)
    x, y = sx[tris], sy[tris]
    on_screen = ((x.max(1) >= 0) & (x.min(1) < width) & (y.max(1) >= 0) & (y.min(1) < height))
    area = (x[:, 1] - x[:, 0]) * (y[:, 2] - y[:, 0]) - (x[:, 2] - x[:, 0]) * (y[:, 1] - y[:, 0])
    finite = np.all(np.isfinite(x) & np.isfinite(y), axis=1)
    return np.asarray(in_front & in_depth & on_screen & finite & (np.abs(area) > 1e-12))


def _boxes(x: F64, y: F64, width: int, height: int) -> I64:
    """Pixel boxes [x0, y0, x1, y1) whose centres may fall inside each triangle."""
    x0 = np.clip(np.floor(x.min(1) - 0.5), 0, width).astype(np.int64)
    x1 = np.clip(np.ceil(x.max(1) - 0.5) + 1, 0, width).astype(np.int64)
    y0 = np.clip(np.floor(y.min(1) - 0.5), 0, height).astype(np.int64)
    y1 = np.clip(np.ceil(y.max(1) - 0.5) + 1, 0, height).astype(np.int64)
    return np.stack([x0, y0, np.maximum(x1, x0), np.maximum(y1, y0)], axis=1)


def _batches(areas: I64) -> list[tuple[int, int]]:
    """Consecutive triangle ranges of at most BATCH_PIXELS candidates (or one big triangle)."""
    ends = np.cumsum(areas)
    out: list[tuple[int, int]] = []
    lo, base = 0, 0
    while lo < len(areas):
        hi = int(np.searchsorted(ends, base + BATCH_PIXELS, side="right"))
        hi = max(hi, lo + 1)
        out.append((lo, hi))
        base = int(ends[hi - 1])
        lo = hi
    return out


def _edge_coefficients(tris: I64, sx: F64, sy: F64) -> F64:
    """Per triangle, the planes b0, b1 = A*x + B*y + C over the screen (barycentrics already
    divided by the signed area, so inside means all three >= 0 for either winding)."""
    x0, x1, x2 = sx[tris[:, 0]], sx[tris[:, 1]], sx[tris[:, 2]]
    y0, y1, y2 = sy[tris[:, 0]], sy[tris[:, 1]], sy[tris[:, 2]]
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    return np.stack([(y1 - y2), (x2 - x1), (x1 * y2 - x2 * y1),
                     (y2 - y0), (x0 - x2), (x2 * y0 - x0 * y2)], axis=1) / area[:, None]


def _row_spans(boxes: I64, k: F64) -> tuple[I64, I64, I64, I64]:
    """Per box row, the pixel span that may hold centres inside the triangle: the box row cut
    to where each edge plane is >= 0, widened by a pixel each side (the exact test follows,
    so the spans only need to contain the covered pixels). Returns each row's triangle, y,
    first x and span length: a thin or slanted triangle is tested over about its own area,
    not its whole bounding box."""
    h = boxes[:, 3] - boxes[:, 1]
    tr = np.repeat(np.arange(len(boxes)), h)
    y = boxes[:, 1][tr] + (np.arange(int(h.sum())) - np.repeat(np.cumsum(h) - h, h))
    cy = y + 0.5
    lo = boxes[:, 0][tr].astype(np.float64)
    hi = boxes[:, 2][tr].astype(np.float64)
    # b0 >= 0, b1 >= 0 and 1 - b0 - b1 >= 0, each a * x + c along the row.
    planes = ((k[0], k[1], k[2]), (k[3], k[4], k[5]),
              (-(k[0] + k[3]), -(k[1] + k[4]), 1 - (k[2] + k[5])))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for a_t, b_t, c_t in planes:
            a = a_t[tr]
            root = -(b_t[tr] * cy + c_t[tr]) / a - 0.5  # the pixel whose centre is on the edge
            lo = np.where(a > 1e-12, np.maximum(lo, np.floor(root) - 1), lo)
            hi = np.where(a < -1e-12, np.minimum(hi, np.ceil(root) + 2), hi)
    first = lo.astype(np.int64)
    return tr, y, first, np.maximum(hi.astype(np.int64) - first, 0)


def _raster_batch(tris: I64, ids: I64, boxes: I64, areas: I64, sx: F64, sy: F64, sz: F64,
                  width: int, depth: F64, tri_of: I64) -> None:
    if int(areas.sum()) == 0:
        return
    # Each triangle's plane coefficients, gathered per column (a (candidates, 6) gather copies
    # six times as much through strided memory).
    k = _edge_coefficients(tris, sx, sy).T.copy()
    tr, y, first, n = _row_spans(boxes, k)
    t = np.repeat(tr, n)
    px = np.repeat(first, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
    py = np.repeat(y, n)
    cx, cy = px + 0.5, py + 0.5
    b0 = k[0][t] * cx + k[1][t] * cy + k[2][t]
    b1 = k[3][t] * cx + k[4][t] * cy + k[5][t]
    inside = (b0 >= 0) & (b1 >= 0) & (b0 + b1 <= 1)
    t, b0, b1 = t[inside], b0[inside], b1[inside]
    v = tris[t]
    z2 = sz[v[:, 2]]
    z = z2 + b0 * (sz[v[:, 0]] - z2) + b1 * (sz[v[:, 1]] - z2)
    pid = (py * width + px)[inside]
    owner = ids[t]
    # Nearest candidate per pixel: the batch's minimum depth per pixel, then the candidates
    # that reach it (a tie keeps one of them), then only where nearer than earlier batches.
    best = np.full(len(depth), np.inf)
    np.minimum.at(best, pid, z)
    win = (z == best[pid]) & (z < depth[pid])
    depth[pid[win]] = z[win]
    tri_of[pid[win]] = owner[win]


def _perspective_bary(tri_of: I64, triangles: I64, sx: F64, sy: F64, w: F64,
                      width: int) -> F64:
    bary = np.zeros((len(tri_of), 3))
    pix = np.flatnonzero(tri_of >= 0)
    if len(pix) == 0:
        return bary
    v = triangles[tri_of[pix]]
    cx = pix % width + 0.5
    cy = pix // width + 0.5
    x0, x1, x2 = sx[v[:, 0]], sx[v[:, 1]], sx[v[:, 2]]
    y0, y1, y2 = sy[v[:, 0]], sy[v[:, 1]], sy[v[:, 2]]
    area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
    b = np.stack([((x1 - cx) * (y2 - cy) - (x2 - cx) * (y1 - cy)) / area,
                  ((x2 - cx) * (y0 - cy) - (x0 - cx) * (y2 - cy)) / area], axis=1)
    b = np.concatenate([b, 1.0 - b.sum(axis=1, keepdims=True)], axis=1)
    # Screen-space weights over 1/w give the perspective-correct attribute weights.
    pw = b / w[v]
    bary[pix] = pw / pw.sum(axis=1, keepdims=True)
    return bary
