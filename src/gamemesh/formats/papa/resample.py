"""Decomposing and composing pose matrices in batches of frames, for ``from_scene``'s
resampling of clips at PA's 60 fps (the channels themselves are sampled by
``gamemesh.scene.sampling``). Everything works on (F, ...) arrays, no loop per key.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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
