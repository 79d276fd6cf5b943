"""The float clean-ups of PET corner fields on their way to glTF (the vertex search itself is
:mod:`.dedup`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def single_value(a: npt.NDArray[Any]) -> float | None:
    """The value of a (non-empty) array when ``np.unique`` finds only one (NaNs equal), else
    None. Values all with the first one's bits (the usual case) are decided without the
    sort; the rest by np.unique (which of 0.0 and -0.0 it keeps is its own choice)."""
    first = a[:1]
    if a.dtype.itemsize in (4, 8):
        word = np.uint32 if a.dtype.itemsize == 4 else np.uint64
        if bool((a.view(word) == first.view(word)[0]).all()):
            return float(first[0])
    vals = np.unique(a)
    return float(vals[0]) if len(vals) == 1 else None


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
