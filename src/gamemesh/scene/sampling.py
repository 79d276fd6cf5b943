"""Sampling glTF animation channels at arbitrary times, vectorized over the sample times (shared
by every format that resamples clips: PMF frames, Papa frames, PBA keys).

glTF 2.0 section 3.11 ("Animations") and Appendix C define the three interpolations: STEP holds
the previous key, LINEAR interpolates (spherically for rotations), CUBICSPLINE is a cubic
Hermite spline whose tangents are stored with each key (in-tangent, value, out-tangent) and are
scaled by the key interval. Before the first key the first value holds, after the last the last.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .math import quat_normalize
from .model import Channel

F64 = npt.NDArray[np.float64]


def slerp(a: npt.ArrayLike, b: npt.ArrayLike, u: npt.ArrayLike) -> F64:
    """Row-wise shortest-path spherical interpolation of (T, 4) quaternions by (T,) factors."""
    qa = quat_normalize(np.asarray(a, dtype=np.float64))
    qb = quat_normalize(np.asarray(b, dtype=np.float64))
    s = np.asarray(u, dtype=np.float64)[:, None]
    dot = np.sum(qa * qb, axis=1, keepdims=True)
    qb = np.where(dot < 0, -qb, qb)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(theta)
    # Nearly parallel keys: the sines vanish, so fall back to a normalized lerp.
    near = sin < 1e-6
    safe = np.where(near, 1.0, sin)
    wa = np.where(near, 1.0 - s, np.sin((1.0 - s) * theta) / safe)
    wb = np.where(near, s, np.sin(s * theta) / safe)
    return quat_normalize(wa * qa + wb * qb)


def _segments(times: F64, t: F64) -> tuple[npt.NDArray[np.intp], F64, F64]:
    """Key interval index i (keys i, i+1), the factor in [0, 1] and the interval length."""
    k = len(times)
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, k - 2)
    dt = times[i + 1] - times[i]
    safe = np.where(dt > 0, dt, 1.0)
    u = np.clip((t - times[i]) / safe, 0.0, 1.0)
    return i, u, dt


def sample_channel(ch: Channel, t: npt.ArrayLike) -> F64:
    """Values of ``ch`` at times ``t``: (T, C); rotations come back as unit quaternions."""
    ts = np.asarray(t, dtype=np.float64).reshape(-1)
    times = np.asarray(ch.times, dtype=np.float64).reshape(-1)
    vals = np.asarray(ch.values, dtype=np.float64)
    vals = vals.reshape(len(vals), -1)
    cubic = ch.interpolation == "CUBICSPLINE"
    if cubic:
        triples = vals.reshape(len(times), 3, -1)
        tan_in, v, tan_out = triples[:, 0], triples[:, 1], triples[:, 2]
    else:
        v = vals
    rotation = ch.path == "rotation"
    if len(times) == 1:
        out = np.repeat(v[:1], len(ts), axis=0)
    elif ch.interpolation == "STEP":
        idx = np.clip(np.searchsorted(times, ts, side="right") - 1, 0, len(times) - 1)
        out = v[idx]
    elif cubic:
        out = _hermite(times, v, tan_in, tan_out, ts)
    else:
        i, u, _ = _segments(times, ts)
        if rotation:
            out = slerp(v[i], v[i + 1], u)
        else:
            out = v[i] * (1.0 - u)[:, None] + v[i + 1] * u[:, None]
    return quat_normalize(out) if rotation else np.asarray(out)


def _hermite(times: F64, v: F64, tan_in: F64, tan_out: F64, ts: F64) -> F64:
    i, s, dt = _segments(times, ts)
    s2, s3 = s * s, s * s * s
    h00 = 2 * s3 - 3 * s2 + 1
    h10 = s3 - 2 * s2 + s
    h01 = -2 * s3 + 3 * s2
    h11 = s3 - s2
    d = dt[:, None]
    out: Any = (h00[:, None] * v[i] + h10[:, None] * d * tan_out[i]
                + h01[:, None] * v[i + 1] + h11[:, None] * d * tan_in[i + 1])
    return np.asarray(out, dtype=np.float64)
