"""Axis and unit conventions of modern SPLASHPACK shared by both directions.

Positions are the PSX frame of v1 (spec §b.9): glTF = s * C * raw with C = diag(-1, -1, 1) and
s = GTEScaling / 4096, for vertices, object positions, bone translations and position tracks.
Matrices (object rotation, baked bone matrices) become C R C. Rotation tracks store Unity Euler
angles as (-x, y, -z) in units of 1024 = 180 degrees (spec-modern §4.3) in Unity's Euler order
(Z, then X, then Y: R = Ry Rx Rz), with Unity = glTF with X mirrored. The runtime builds the same
matrix (``src/animation.cpp`` with psyqo's ``multiplyMatrix33``, spec-modern §13).

Both generations share these: the axes, the winding flip, GTEScaling's default, and the
object rotations (a stored 4.12 matrix <-> a glTF quaternion, each way).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...scene.math import euler_to_quat, matrices_to_trs, matrix_to_quat, quat_to_euler

F64 = npt.NDArray[np.float64]
AXES = np.array([-1.0, -1.0, 1.0])
SWAP = [0, 2, 1]  # a triangle's corners v0, v2, v1: the winding flip of the axis change
DEFAULT_GTE = 100.0  # GTEScaling (not stored in any version) assumed when reading
ANGLE = np.pi / 1024.0  # radians per raw unit of a rotation track
_CRC = AXES[:, None] * AXES[None, :]  # the signs C R C gives each matrix element
_CRC_FP12 = _CRC / 4096.0  # those signs times the fp12 scale

__all__ = ["AXES", "DEFAULT_GTE", "SWAP", "bone_to_matrix", "bone_trs", "matrix_to_bone",
           "nearest_rotation", "object_rotations", "quat_to_track", "stored_rotation",
           "track_to_quat"]


def track_to_quat(raw: npt.ArrayLike) -> F64:
    """(K, 3) raw rotation keys -> (K, 4) glTF xyzw quaternions."""
    a = np.asarray(raw, dtype=np.float64).reshape(-1, 3) * ANGLE
    unity = np.stack([-a[:, 0], a[:, 1], -a[:, 2]], axis=1)
    q = euler_to_quat(unity, "YXZ")
    return np.stack([q[:, 0], -q[:, 1], -q[:, 2], q[:, 3]], axis=1)


def quat_to_track(q: npt.ArrayLike) -> npt.NDArray[np.int16]:
    """(K, 4) glTF quaternions -> (K, 3) raw rotation keys (wrapped into int16)."""
    g = np.asarray(q, dtype=np.float64).reshape(-1, 4)
    unity = np.stack([g[:, 0], -g[:, 1], -g[:, 2], g[:, 3]], axis=1)
    e = quat_to_euler(unity, "YXZ")
    raw = np.rint(np.stack([-e[:, 0], e[:, 1], -e[:, 2]], axis=1) / ANGLE).astype(np.int64)
    return (((raw + 32768) % 65536) - 32768).astype(np.int16)


def bone_to_matrix(r: npt.ArrayLike, t: npt.ArrayLike, s: float) -> F64:
    """(..., 9) fp12 rotations and (..., 3) fp12 translations -> (..., 4, 4) glTF matrices."""
    rr = np.asarray(r, dtype=np.float64).reshape(-1, 3, 3) / 4096.0
    tt = np.asarray(t, dtype=np.float64).reshape(-1, 3)
    out = np.zeros((len(rr), 4, 4))
    out[:, :3, :3] = AXES[None, :, None] * rr * AXES[None, None, :]
    out[:, :3, 3] = tt * AXES * s
    out[:, 3, 3] = 1.0
    return out


def bone_trs(r: npt.ArrayLike, t: npt.ArrayLike, s: float) -> tuple[F64, F64, F64]:
    """(..., 9) fp12 rotations and (..., 3) fp12 translations -> glTF translations, xyzw
    rotations and scales (the baked clip matrices as the keys of a glTF animation)."""
    return matrices_to_trs(bone_to_matrix(r, t, s))


def matrix_to_bone(m: npt.ArrayLike, s: float) -> tuple[npt.NDArray[np.int16],
                                                          npt.NDArray[np.int16], int]:
    """(N, 4, 4) glTF matrices -> fp12 (N, 9) rotations, (N, 3) translations, values clamped."""
    a = np.asarray(m, dtype=np.float64).reshape(-1, 4, 4)
    rr = AXES[None, :, None] * a[:, :3, :3] * AXES[None, None, :]
    r = np.nan_to_num(np.rint(rr.reshape(-1, 9) * 4096.0))
    t = np.nan_to_num(np.rint(a[:, :3, 3] * AXES / s))
    over = int((np.abs(r) > 32767).sum() + (np.abs(t) > 32767).sum())
    return (np.clip(r, -32768, 32767).astype(np.int16),
            np.clip(t, -32768, 32767).astype(np.int16), over)


# -- object rotations -------------------------------------------------------------------------
Quat = tuple[float, float, float, float]


def object_rotations(raw: npt.NDArray[Any]) -> tuple[list[Quat], list[float]]:
    """The stored 4.12 row-major (N, 9) matrices as glTF quaternions (their nearest rotations)
    and how far each was from a rotation (the fixed-point rounding makes it a few 1e-4 off).
    One SVD call for all objects: numpy runs the same LAPACK routine on each matrix of a
    stack, so the bits are those of one call per matrix; the quaternions are
    the rows' ``scene.math.matrix_to_quat`` (the batched and the one-matrix paths give the same
    bits, summed in a fixed order: no BLAS norm, whose last bit depends on the CPU)."""
    # r / 4096 then C R C as one product by +-2**-12 per element: the scaling by a power of
    # two and the sign changes are exact, so the bits are those of the three steps.
    r = np.multiply(np.asarray(raw).reshape(-1, 3, 3), _CRC_FP12, dtype=np.float64)
    if not len(r):
        return [], []
    u, _, vt = np.linalg.svd(r)
    rot = u @ vt
    neg = np.flatnonzero(np.linalg.det(rot) < 0)
    if neg.size:
        u[neg, :, -1] = -u[neg, :, -1]
        rot[neg] = u[neg] @ vt[neg]
    err = np.abs(rot - r).reshape(-1, 9).max(axis=1)
    return [_as_quat(q) for q in matrix_to_quat(rot).tolist()], err.tolist()


def _as_quat(q: list[float]) -> Quat:
    return (q[0], q[1], q[2], q[3])


def nearest_rotation(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    try:
        u, _, vt = np.linalg.svd(a)
    except np.linalg.LinAlgError:
        return np.eye(3)
    if not np.all(np.isfinite(u)) or not np.all(np.isfinite(vt)):
        return np.eye(3)
    r = u @ vt
    if np.linalg.det(r) < 0:
        u[:, -1] = -u[:, -1]
        r = u @ vt
    return np.asarray(r)


def _raw_rotation(r: npt.NDArray[np.float64]) -> npt.NDArray[np.int32]:
    psx_r = AXES[:, None] * r * AXES[None, :]
    out: npt.NDArray[np.int32] = np.clip(np.rint(psx_r * 4096), -32767, 32767).astype(np.int32)
    return out.reshape(9)


def stored_rotation(raw: Any, a: npt.NDArray[np.float64]
                    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int32]]:
    """The world rotation of world matrix ``a`` (to bake the rest of the matrix into the
    vertices) and the 4.12 matrix to store: ``raw``, the node's original fixed-point matrix
    (its ``rotation_raw`` extra), when it still describes this rotation (exact round trip;
    to_scene gave the node that matrix's nearest rotation), else the rounded rotation itself."""
    r = nearest_rotation(a)
    if isinstance(raw, list) and len(raw) == 9 and all(isinstance(x, int) for x in raw):
        stored = AXES[:, None] * (np.asarray(raw, np.float64).reshape(3, 3) / 4096) * AXES
        if np.allclose(nearest_rotation(stored), r, atol=1e-6):
            kept = np.clip(np.asarray(raw, dtype=np.int64), -32767, 32767).astype(np.int32)
            return r, kept
    return r, _raw_rotation(r)

