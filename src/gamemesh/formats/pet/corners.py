"""The float clean-ups of PET corner fields on their way to glTF (the vertex search itself is
:mod:`.dedup`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def single_value(a: npt.NDArray[Any]) -> float | None:
    """The value of a (non-empty) float array when all of it is one number as ``np.unique``
    counts them (NaNs alike, 0.0 and -0.0 alike), else None: the first element's value. One
    pass of comparisons, no sort."""
    first = a[0]
    same = np.isnan(a) if np.isnan(first) else a == first
    return float(first) if bool(same.all()) else None


def finite32(a: Any) -> npt.NDArray[np.float32]:
    """float32 without NaN or infinity (hostile files): clipped to a large finite range."""
    arr = np.asarray(a)
    # Usually all values are in range: then the clip changes nothing, and two reductions
    # (NaN fails both tests) cost less than the clip's passes.
    if (arr.size and arr.dtype in (np.float32, np.float64)
            and arr.min() >= -1e30 and arr.max() <= 1e30):
        return arr.astype(np.float32)
    # np.clip then np.nan_to_num, by their ufuncs (the wrappers cost more than the work on
    # small arrays): NaN passes the clip and becomes 0.0.
    out = np.minimum(np.maximum(np.asarray(a, np.float64), -1e30), 1e30)
    nan = np.isnan(out)
    if nan.any():
        out[nan] = 0.0
    return out.astype(np.float32)
