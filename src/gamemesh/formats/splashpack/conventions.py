"""Axis and unit conventions of modern SPLASHPACK shared by both directions.

Positions are the PSX frame of v1 (spec §b.9): glTF = s * C * raw with C = diag(-1, -1, 1) and
s = GTEScaling / 4096, for vertices, object positions, bone translations and position tracks.
Matrices (object rotation, baked bone matrices) become C R C. Rotation tracks store Unity Euler
angles as (-x, y, -z) in units of 1024 = 180 degrees (spec-modern §4.3); gamemesh assumes
Unity's Euler order (Z, then X, then Y: R = Ry Rx Rz) and Unity = glTF with X mirrored. That
last step is an assumption no runtime code checked here: it is noted when clips are converted.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...scene.math import euler_to_quat, matrix_to_quat, quat_to_euler

F64 = npt.NDArray[np.float64]
AXES = np.array([-1.0, -1.0, 1.0])
ANGLE = np.pi / 1024.0  # radians per raw unit of a rotation track
_CRC = AXES[:, None] * AXES[None, :]  # the signs C R C gives each matrix element
_CRC_FP12 = _CRC / 4096.0  # those signs times the fp12 scale

__all__ = ["AXES", "bone_to_matrix", "bone_trs", "matrix_to_bone", "quat_to_track", "track_to_quat"]


def track_to_quat(raw: npt.ArrayLike) -> F64:
    """(K, 3) raw rotation keys -> (K, 4) glTF xyzw quaternions."""
    a = np.asarray(raw, dtype=np.float64).reshape(-1, 3) * ANGLE
    unity = np.stack([-a[:, 0], a[:, 1], -a[:, 2]], axis=1)
    if len(unity) <= _FEW_KEYS:
        return _yxz_small(unity)
    q = euler_to_quat(unity, "YXZ")
    return np.stack([q[:, 0], -q[:, 1], -q[:, 2], q[:, 3]], axis=1)


_FEW_KEYS = 16
_YXZ = (1, 0, 2)


def _yxz_small(unity: F64) -> F64:
    """The rest of :func:`track_to_quat` for a few keys: ``euler_to_quat(unity, "YXZ")``'s
    arithmetic with its sines and cosines taken by numpy on the whole array (the same ufuncs
    on the same half angles) and its products in plain floats, term for term (so the same
    bits, at a fraction of its some eighty numpy calls on a short track)."""
    half = unity / 2
    sin, cos = np.sin(half).tolist(), np.cos(half).tolist()
    out = []
    for s, c in zip(sin, cos, strict=True):
        x1, y1, z1, w1 = 0.0, 0.0, 0.0, 1.0
        for k in _YXZ:
            r = [0.0, 0.0, 0.0, c[k]]
            r[k] = s[k]
            x2, y2, z2, w2 = r
            x1, y1, z1, w1 = (w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                              w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                              w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                              w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2)
        out.append((x1, -y1, -z1, w1))
    return np.array(out, dtype=np.float64).reshape(-1, 4)


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
    """``matrices_to_trs(bone_to_matrix(r, t, s))`` without the 4 x 4 matrices: the same
    operations on the same values in the same order (so the same bits), a dozen numpy calls
    fewer on a clip of a few dozen matrices."""
    # r / 4096 then C R C (each element times its row's and column's signs) as one product
    # by +-2**-12: dividing by a power of two and multiplying by its inverse round the same
    # real number, and a sign change is exact, so the bits are those of the two steps.
    basis = np.multiply(np.asarray(r).reshape(-1, 3, 3), _CRC_FP12, dtype=np.float64)
    # (t * AXES) * s as t * (AXES * s): a sign change commutes with the one rounding.
    tt = np.multiply(np.asarray(t).reshape(-1, 3), AXES * s, dtype=np.float64)
    # matrices_to_trs: column lengths, the sign of a mirrored basis on X, then the rotation.
    sc = np.sqrt(np.add.reduce(basis * basis, axis=1))
    # The X scale of a mirrored basis negated: times -1 where the determinant is negative and
    # times 1 (which changes no bits) elsewhere, without a masked read and write.
    sc[:, 0] *= np.where(np.linalg.det(basis) < 0, -1.0, 1.0)
    safe = np.where(sc == 0, 1.0, sc)
    q = matrix_to_quat(basis / safe[:, None, :]) if len(basis) else np.zeros((0, 4))
    return tt, q, sc


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
