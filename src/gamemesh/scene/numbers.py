"""Checks readers apply to the numbers they hand the scene: a NaN position or a zero quaternion
in a file is bad input, to be named by the reader in the file's own terms, not a broken scene
found later by the writer."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..errors import CorruptDataError
from .math import row_lengths

__all__ = ["require_finite", "unit_quaternions"]

# Scene.validate accepts a rotation whose length is within this of 1.
_UNIT_TOLERANCE = 1e-3


def require_finite(values: npt.ArrayLike, fmt: str, field: str, what: str = "values") -> None:
    """CorruptDataError naming ``field`` and the first row holding NaN or infinity."""
    a = np.asarray(values)
    if a.dtype.kind != "f" or a.size == 0 or np.isfinite(a).all():
        return  # one flat pass for the usual case; rows are looked at only to name one
    bad = ~np.isfinite(a.reshape(len(a), -1) if a.ndim else a.reshape(1, 1)).all(axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        msg = f"{what} hold NaN or infinity (first at row {row} of {len(bad)})"
        raise CorruptDataError(fmt, msg, field=field, expected="finite numbers",
                               actual=str(np.asarray(a)[row].tolist() if a.ndim else a.item()))


def unit_quaternions(q: npt.ArrayLike, fmt: str, field: str,
                     note: Callable[[str], None]) -> npt.NDArray[np.float64]:
    """(..., 4) rotations made unit length. A quaternion off unit length but usable is
    normalized (one note says how many were); NaN, infinity or a zero quaternion cannot be
    repaired and is a CorruptDataError naming ``field``."""
    a = np.asarray(q, dtype=np.float64)
    flat = a.reshape(-1, 4)
    require_finite(flat, fmt, field, "rotations")
    norm = row_lengths(flat)  # np.linalg.norm(flat, axis=1)'s bits, without its overhead
    zero = norm < 1e-6
    if zero.any():
        row = int(np.argmax(zero))
        msg = f"rotation {row} is a zero quaternion (no rotation can be made of it)"
        raise CorruptDataError(fmt, msg, field=field, expected="a unit quaternion",
                               actual=str(flat[row].tolist()))
    off = np.abs(norm - 1.0) > _UNIT_TOLERANCE
    if off.any():
        note(f"{field}: {int(off.sum())} of {len(flat)} rotations were not unit quaternions "
             f"(length {float(norm[off][0]):.4g}); normalized")
    return np.asarray((flat / norm[:, None]).reshape(a.shape))
