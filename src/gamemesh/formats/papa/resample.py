"""Sampling glTF animation channels and decomposing pose matrices, in batches of frames.

Used by ``from_scene`` to resample any clip (LINEAR with slerp for rotations, STEP, CUBICSPLINE)
at PA's 60 fps. Everything works on (F, ...) arrays: one call per channel, no loop per key.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...scene import Channel
from ...scene.math import matrix_to_quat, quat_to_matrix

F64 = npt.NDArray[np.float64]


def decompose(m: F64) -> tuple[F64, F64, F64]:
    """Batch (F, 4, 4) -> translation, xyzw rotation, scale (no shear)."""
    m = np.asarray(m, dtype=np.float64)
    t = m[:, :3, 3]
    basis = m[:, :3, :3]
    s = np.linalg.norm(basis, axis=1)
    neg = np.linalg.det(basis) < 0
    s[neg, 0] *= -1
    safe = np.where(s == 0, 1.0, s)
    q = matrix_to_quat(basis / safe[:, None, :]) if len(m) else np.zeros((0, 4))
    return t, q, s


def trs_batch(t: F64, r: F64, s: F64) -> F64:
    out = np.zeros((len(t), 4, 4))
    out[:, :3, :3] = quat_to_matrix(r) * s[:, None, :]
    out[:, :3, 3] = t
    out[:, 3, 3] = 1.0
    return out


def sample(c: Channel, times: F64, rotation: bool) -> F64:
    """Evaluate a glTF channel at ``times`` (LINEAR, STEP or CUBICSPLINE)."""
    ct = np.asarray(c.times, dtype=np.float64)
    vals = np.asarray(c.values, dtype=np.float64)
    cubic = c.interpolation == "CUBICSPLINE"
    if cubic:
        vals = vals.reshape(len(ct), 3, -1)
        v, a_in, b_out = vals[:, 1], vals[:, 0], vals[:, 2]
    else:
        v = vals.reshape(len(ct), -1)
    k = len(ct)
    if k == 1:
        return np.asarray(np.tile(v[0], (len(times), 1)))
    i = np.clip(np.searchsorted(ct, times, side="right") - 1, 0, k - 2)
    dt = ct[i + 1] - ct[i]
    u = np.clip((times - ct[i]) / np.where(dt > 0, dt, 1.0), 0.0, 1.0)[:, None]
    if c.interpolation == "STEP":
        out = np.where(u >= 1.0, v[i + 1], v[i])
    elif cubic:
        u2, u3 = u * u, u * u * u
        d = dt[:, None]
        out = ((2 * u3 - 3 * u2 + 1) * v[i] + (u3 - 2 * u2 + u) * d * b_out[i]
               + (-2 * u3 + 3 * u2) * v[i + 1] + (u3 - u2) * d * a_in[i + 1])
    elif rotation:
        out = slerp(v[i], v[i + 1], u[:, 0])
    else:
        out = v[i] + (v[i + 1] - v[i]) * u
    if rotation:
        n = np.linalg.norm(out, axis=1, keepdims=True)
        out = np.where(n > 0, out / np.where(n > 0, n, 1.0), np.array([0.0, 0.0, 0.0, 1.0]))
    return np.asarray(out)


def slerp(a: F64, b: F64, u: F64) -> F64:
    dot = np.einsum("ij,ij->i", a, b)
    b = np.where(dot[:, None] < 0, -b, b)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(theta)
    small = sin < 1e-6
    wa = np.where(small, 1.0 - u, np.sin((1.0 - u) * theta) / np.where(small, 1.0, sin))
    wb = np.where(small, u, np.sin(u * theta) / np.where(small, 1.0, sin))
    return np.asarray(wa[:, None] * a + wb[:, None] * b)

