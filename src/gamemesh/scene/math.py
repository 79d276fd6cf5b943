"""Vectorized transform helpers in glTF conventions (quaternions x, y, z, w; ``m @ v``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .model import Node, Scene

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def row_lengths(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``np.linalg.norm(a, axis=-1)`` with the same bits (the same sum x*x + y*y + ..., in
    order, in ``a``'s type), column by column: numpy reduces a narrow last axis several times
    slower than it adds whole columns."""
    if a.ndim < 2 or a.shape[-1] == 0 or a.size <= 256:
        # What norm computes for real input, without its argument handling (a large share
        # of the call on a few rows).
        return np.asarray(np.sqrt(np.add.reduce(a * a, axis=-1)))
    s: npt.NDArray[Any] = a[..., 0] * a[..., 0]
    for k in range(1, a.shape[-1]):
        s += a[..., k] * a[..., k]
    np.sqrt(s, out=s)
    return s


def quat_normalize(q: npt.ArrayLike) -> F64:
    a = np.asarray(q, dtype=np.float64)
    n = row_lengths(a)[..., None]
    n[n == 0] = 1.0
    return np.asarray(a / n)


def quat_to_matrix(q: npt.ArrayLike) -> F64:
    """(..., 4) xyzw quaternions to (..., 3, 3) rotation matrices."""
    a = np.asarray(q, dtype=np.float64)
    x, y, z, w = np.moveaxis(quat_normalize(a), -1, 0)
    m = np.empty((*x.shape, 3, 3))
    m[..., 0, 0] = 1 - 2 * (y * y + z * z)
    m[..., 0, 1] = 2 * (x * y - z * w)
    m[..., 0, 2] = 2 * (x * z + y * w)
    m[..., 1, 0] = 2 * (x * y + z * w)
    m[..., 1, 1] = 1 - 2 * (x * x + z * z)
    m[..., 1, 2] = 2 * (y * z - x * w)
    m[..., 2, 0] = 2 * (x * z - y * w)
    m[..., 2, 1] = 2 * (y * z + x * w)
    m[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return m


# Row-major positions of m00 m11 m22, m21 m02 m10, m12 m20 m01.
_GATHER = np.array([0, 4, 8, 7, 2, 3, 5, 6, 1])
_SQ_SIGNS = np.array([[1.0, 1.0, -1.0, -1.0], [1.0, -1.0, 1.0, -1.0], [1.0, -1.0, -1.0, 1.0]])
# Per largest component (w, x, y, z): where x, y, z, w * r sit among the candidates.
_PICK = np.array([[0, 1, 2, 6], [6, 5, 4, 0], [5, 6, 3, 1], [4, 3, 6, 2]])


def matrix_to_quat(m: npt.ArrayLike) -> F64:
    """(..., 3, 3) rotation matrices (orthonormal) to (..., 4) xyzw quaternions, w >= 0.

    Shepperd's method: each row is solved from whichever of w, x, y, z is largest, so half
    turns (w = 0) keep the relative signs of x, y and z that the diagonal alone cannot give.
    """
    a = np.asarray(m, dtype=np.float64)
    lead = a.shape[:-2]
    # The diagonal, and the off-diagonal pairs (m21, m12), (m02, m20), (m10, m01), in one
    # gather: a few whole-array operations rather than one per element.
    g = a.reshape(-1, 9).take(_GATHER, axis=1)
    diag, upper, lower = g[:, 0:3], g[:, 3:6], g[:, 6:9]
    diff, summ = upper - lower, upper + lower  # (d21, d02, d10), (s21, s02, s10)
    # 4 * (component)^2 for w, x, y, z: 1 +- m00 +- m11 +- m22 summed left to right (x - y
    # is x + (-y) exactly, so the signed terms give the written sums' bits).
    sq = 1 + diag[:, 0:1] * _SQ_SIGNS[0]
    sq = sq + diag[:, 1:2] * _SQ_SIGNS[1]
    sq = sq + diag[:, 2:3] * _SQ_SIGNS[2]
    big = sq.argmax(axis=-1)
    rows = np.arange(len(sq))
    r = np.sqrt(np.maximum(sq[rows, big], 1e-300))
    # (x, y, z, w) * r for the largest component's choice, gathered from the candidates
    # (d21, d02, d10, s21, s02, s10, r * r).
    cands = np.concatenate([diff, summ, (r * r)[:, None]], axis=1)
    q = cands[rows[:, None], _PICK[big]] / (2 * r[:, None])
    q = np.where(q[:, 3:4] < 0, -q, q).reshape(*lead, 4)
    return quat_normalize(q)


def euler_to_quat(angles: npt.ArrayLike, order: str = "XYZ") -> F64:
    """(..., 3) angles in radians, applied as intrinsic rotations in ``order`` (``"XYZ"`` means
    R = Rx @ Ry @ Rz), to (..., 4) xyzw quaternions."""
    a = np.asarray(angles, dtype=np.float64)
    axes = {"X": 0, "Y": 1, "Z": 2}
    shape = a.shape[:-1]
    # The running product as four contiguous component arrays: quat_multiply's arithmetic,
    # term for term (so the same bits), without its strided (..., 4) columns.
    q = [np.zeros(shape), np.zeros(shape), np.zeros(shape), np.ones(shape)]
    for ch in order.upper():
        k = axes[ch]
        half = a[..., k] / 2
        r = [np.zeros(shape), np.zeros(shape), np.zeros(shape), np.cos(half)]
        r[k] = np.sin(half)
        q = _multiply_components(q, r)
    out = np.empty((*shape, 4))
    for c in range(4):
        out[..., c] = q[c]
    return out


def _multiply_components(p: list[Any], q: list[Any]) -> list[Any]:
    """:func:`quat_multiply`'s expressions on quaternions given as (x, y, z, w) component
    arrays (term for term, so the same bits)."""
    x1, y1, z1, w1 = p
    x2, y2, z2, w2 = q
    return [w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2]


def quat_to_euler(q: npt.ArrayLike, order: str = "XYZ") -> F64:
    """Inverse of :func:`euler_to_quat` for orders made of three distinct axes."""
    m = quat_to_matrix(q)
    i, j, k = ({"X": 0, "Y": 1, "Z": 2}[c] for c in order.upper())
    # R = R_i R_j R_k; parity of the permutation decides the signs.
    sign = 1.0 if (j - i) % 3 == 1 else -1.0
    sj = np.clip(sign * m[..., i, k], -1.0, 1.0)
    out = np.empty((*m.shape[:-2], 3))
    out[..., 1] = np.arcsin(sj)
    out[..., 0] = np.arctan2(-sign * m[..., j, k], m[..., k, k])
    out[..., 2] = np.arctan2(-sign * m[..., i, j], m[..., i, i])
    res = np.empty_like(out)
    res[..., i], res[..., j], res[..., k] = out[..., 0], out[..., 1], out[..., 2]
    return res


def quat_multiply(a: npt.ArrayLike, b: npt.ArrayLike) -> F64:
    p = np.asarray(a, dtype=np.float64)
    q = np.asarray(b, dtype=np.float64)
    x1, y1, z1, w1 = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    x2, y2, z2, w2 = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    # Filled in place (np.stack and moveaxis cost more than the arithmetic on short arrays),
    # one component at a time: a NaN's sign from numpy's loops depends on its temporaries.
    out = np.empty(np.broadcast_shapes(p.shape, q.shape))
    out[..., 0] = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    out[..., 1] = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    out[..., 2] = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    out[..., 3] = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    return out


def trs_to_matrix(t: npt.ArrayLike = (0, 0, 0), r: npt.ArrayLike = (0, 0, 0, 1),
                  s: npt.ArrayLike = (1, 1, 1)) -> F64:
    one = [np.asarray(v, dtype=np.float64).reshape(1, k) for v, k in ((t, 3), (r, 4), (s, 3))]
    m: F64 = trs_to_matrices(*one)[0]
    return m


def matrix_to_trs(m: npt.ArrayLike) -> tuple[F64, F64, F64]:
    """Decompose an affine matrix (no shear) into translation, xyzw rotation and scale."""
    t, r, s = matrices_to_trs(np.asarray(m, dtype=np.float64)[None])
    return t[0].copy(), r[0], s[0]


def local_matrices(nodes: Sequence[Node]) -> F64:
    """(N, 4, 4) local matrices of ``nodes``: a node's matrix when it has one, else its TRS,
    every rotation in one :func:`quat_to_matrix` call (per node, numpy's fixed cost per call
    was most of a small file's scene summary)."""
    n = len(nodes)
    out = trs_to_matrices(np.array([nd.translation for nd in nodes], np.float64).reshape(n, 3),
                          np.array([nd.rotation for nd in nodes], np.float64).reshape(n, 4),
                          np.array([nd.scale for nd in nodes], np.float64).reshape(n, 3))
    for i, nd in enumerate(nodes):
        if nd.matrix is not None:
            out[i] = nd.matrix
    return out


def local_matrix(node: Node) -> F64:
    m: F64 = local_matrices([node])[0]
    return m


def world_matrices(scene: Scene) -> list[F64]:
    """World matrix of every node (identity for nodes not reachable from a root)."""
    out = [np.eye(4) for _ in scene.nodes]
    local = local_matrices(scene.nodes)
    parents = scene.parents()
    for i in scene.walk():
        p = parents[i]
        out[i] = local[i] if p is None else out[p] @ local[i]
    return out


def transform_points(m: npt.ArrayLike, p: npt.ArrayLike) -> F64:
    a = np.asarray(m, dtype=np.float64)
    pts = np.asarray(p, dtype=np.float64)
    return np.asarray(pts @ a[:3, :3].T + a[:3, 3])


def face_normals(positions: npt.ArrayLike, tris: npt.ArrayLike) -> F64:
    """Unnormalized face normals from counter-clockwise winding, (T, 3)."""
    p = np.asarray(positions, dtype=np.float64)
    t = np.asarray(tris, dtype=np.int64)
    a, b, c = p[t[:, 0]], p[t[:, 1]], p[t[:, 2]]
    return np.asarray(np.cross(b - a, c - a))


def vertex_normals(positions: npt.ArrayLike, tris: npt.ArrayLike) -> F32:
    """Area-weighted smooth normals; vertices on no face get +Y."""
    p = np.asarray(positions, dtype=np.float64)
    t = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    fn = face_normals(p, t)
    acc = np.zeros_like(p)
    for k in range(3):
        np.add.at(acc, t[:, k], fn)
    n = np.linalg.norm(acc, axis=1, keepdims=True)
    out = np.where(n > 1e-20, acc / np.where(n == 0, 1, n), np.array([0.0, 1.0, 0.0]))
    return out.astype(np.float32)


def normalize_rows(v: npt.ArrayLike, fallback: tuple[float, ...] = (0.0, 1.0, 0.0),
                   tiny: float = 1e-20) -> F32:
    """Rows scaled to length 1 in float64 and rounded once to float32; ``fallback`` where a
    row's length is not above ``tiny`` (or is NaN)."""
    a = np.array(v, dtype=np.float64)
    if a.ndim != 2:
        n = np.linalg.norm(a, axis=-1, keepdims=True)
        out = np.where(n > tiny, a / np.where(n == 0, 1, n), np.asarray(fallback))
        return out.astype(np.float32)
    # Column by column, in place: numpy loops over a narrow last axis several times slower
    # (row_lengths makes norm()'s own sum, so the same bits).
    length = row_lengths(a)
    good = length > tiny
    length[~good] = 1.0
    for k in range(a.shape[1]):
        a[:, k] /= length
    a[~good] = fallback
    return a.astype(np.float32)


def column_bounds(a: npt.ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Per-column min and max of an (N, C) array. One reduction per column over a strided
    view: for narrow arrays numpy's ``min(axis=0)`` is about 20x slower."""
    arr = np.asarray(a)
    cols = arr.reshape(len(arr), -1)
    lo = np.array([cols[:, k].min() for k in range(cols.shape[1])], dtype=arr.dtype)
    hi = np.array([cols[:, k].max() for k in range(cols.shape[1])], dtype=arr.dtype)
    return lo, hi


def matrices_to_trs(m: F64) -> tuple[F64, F64, F64]:
    """Batch (F, 4, 4) -> translation, xyzw rotation, scale (no shear)."""
    m = np.asarray(m, dtype=np.float64)
    t = m[:, :3, 3]
    basis = m[:, :3, :3]
    # np.linalg.norm(basis, axis=1): its sums (row after row) written out, as numpy adds a
    # short middle axis but several times faster.
    sq = basis * basis
    s = np.sqrt(sq[:, 0] + sq[:, 1] + sq[:, 2])
    neg = np.linalg.det(basis) < 0
    s[neg, 0] *= -1
    safe = np.where(s == 0, 1.0, s)
    q = matrix_to_quat(basis / safe[:, None, :]) if len(m) else np.zeros((0, 4))
    return t, q, s


def trs_to_matrices(t: F64, r: F64, s: F64) -> F64:
    """Batch translation, xyzw rotation, scale -> (F, 4, 4)."""
    out = np.zeros((len(t), 4, 4))
    out[:, :3, :3] = quat_to_matrix(r) * s[:, None, :]
    out[:, :3, 3] = t
    out[:, 3, 3] = 1.0
    return out


def snap(x: npt.ArrayLike, bits: int) -> F64:
    """Values rounded to a binary grid: ``2**(1 - bits)`` below 2 in magnitude, ``bits``
    significant bits above. A writer that stores transforms it had to compose (a bone's world
    placement, an Euler angle) snaps them, so the few-ulp noise of composing them again on the
    next trip lands on the same grid point: glb -> F -> glb -> F gives the first F's bytes.
    (21 bits keeps a unit quaternion to 1e-6; 17 bits a position to 2e-5 of its size.)"""
    v = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(v)
    step = np.ldexp(1.0, np.maximum(e, 1) - bits)
    # + 0.0 turns -0.0 into 0.0: the sign of a zero is noise too.
    return np.asarray(np.round(v / step) * step + 0.0)


def snap_quat(q: npt.ArrayLike, bits: int) -> F64:
    """Unit quaternions snapped so that normalising cannot move them off their grid point: the
    ratios of the components to the largest one go on the grid of :func:`snap` (ratios do not
    change when a reader normalises), then the result is normalised, keeping the sign of the
    largest component (so keys stay in the hemisphere they were in). The largest component is
    the first within 1e-5 of the maximum, so noise cannot make two near-equal ones swap."""
    v = np.asarray(q, dtype=np.float64).reshape(-1, 4)
    mag = np.abs(v)
    k = np.argmax(mag >= mag.max(axis=1, keepdims=True) - 1e-5, axis=1)
    lead = v[np.arange(len(v)), k]
    safe = np.where(lead == 0, 1.0, lead)
    ratio = snap(v / safe[:, None], bits)
    out = quat_normalize(ratio) * np.sign(safe)[:, None]
    return np.asarray(out.reshape(np.shape(q)) + 0.0)
