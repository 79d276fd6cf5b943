"""glTF accessors as numpy arrays: every component type, normalized integers, byte strides,
matrix column padding and sparse substitution, each element count checked against the bytes
that hold it before anything is allocated.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import TruncatedError
from .document import GltfDocument, err, int_in, list_in, uint_in

_COMPONENTS: dict[Any, Any] = {5120: np.int8, 5121: np.uint8, 5122: np.int16,
                               5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_ITEMSIZE: dict[Any, int] = {c: np.dtype(c).itemsize for c in _COMPONENTS.values()}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_MATRIX_COLUMNS = {"MAT2": 2, "MAT3": 3, "MAT4": 4}
_NORM_DIV: dict[Any, float] = {np.int8: 127.0, np.uint8: 255.0, np.int16: 32767.0,
                                np.uint16: 65535.0, np.uint32: 4294967295.0}


def accessor(doc: GltfDocument, index: int, ref: str = "accessor") -> npt.NDArray[Any]:
    """Accessor ``index`` as (count, width) float32 (normalized ints scaled) or raw integers;
    ``ref`` is the place that names it (``meshes[0].primitives[0].attributes.POSITION``)."""
    accs = list_in(doc.json, "accessors")
    uint_in(index, len(accs), ref)
    if index in doc._cache:
        return doc._cache[index]
    a = accs[index]
    where = f"accessors[{index}]"
    comp: Any = _COMPONENTS.get(a.get("componentType"))
    if comp is None:
        raise err(what="unknown componentType", field=f"{where}.componentType",
                  expected=sorted(_COMPONENTS), actual=a.get("componentType"))
    width = _WIDTH.get(str(a.get("type")))
    if width is None:
        raise err(what="unknown type", field=f"{where}.type", expected=sorted(_WIDTH),
                  actual=a.get("type"))
    count = uint_in(a.get("count"), None, "{}.count", where)
    if "bufferView" in a:
        columns = _MATRIX_COLUMNS.get(str(a.get("type")), 0)
        arr = view_data(doc, a, comp, width, count, where, columns=columns).copy()
    else:
        _check_zero_filled(doc, count, where)
        arr = np.zeros((count, width), dtype=comp)
    if "sparse" in a:
        _apply_sparse(doc, a["sparse"], arr, comp, width, f"{where}.sparse")
    out: npt.NDArray[Any] = arr
    if a.get("normalized") and comp is not np.float32:
        out = np.maximum(arr.astype(np.float32) / _NORM_DIV[comp], -1.0).astype(np.float32)
    doc._cache[index] = out
    return out


# Elements an accessor without a bufferView (zeros, perhaps with sparse values) may have
# whatever the buffers hold: enough for any small file's use of one.
_ZERO_FILLED_FLOOR = 1 << 16


def _check_zero_filled(doc: GltfDocument, count: int, where: str) -> None:
    """An accessor without a bufferView costs nothing in the file, so its count is bounded by
    the file: at most as many elements as the buffers hold bytes (or the floor above). An
    accessor backed by bytes has at most that many elements, so a zeroed accessor the size of
    any real one (a morph target's sparse base, say) always fits; 2^28 elements declared by a
    416-byte file (4.7 GB once zeroed and converted) does not."""
    bound = max(_ZERO_FILLED_FLOOR, sum(len(b) for b in doc.buffers))
    if count > bound:
        raise err(what="accessor without a bufferView declares more elements than the file "
                  "holds bytes", field=f"{where}.count", expected=f"<= {bound}",
                  actual=count)


def view_data(doc: GltfDocument, a: dict[str, Any], comp: Any, width: int, count: int,
              where: str, view_key: str = "bufferView", offset_key: str = "byteOffset",
              columns: int = 0) -> npt.NDArray[Any]:
    """``count`` elements of ``width`` components from a view. ``columns`` > 0 marks a matrix
    type, whose columns start on 4-byte boundaries (MAT2/MAT3 of 1- and 2-byte components
    carry padding, glTF 2.0 section 3.6.2.4)."""
    views = list_in(doc.json, "bufferViews")
    vi = uint_in(a.get(view_key), len(views), "{}.{}", where, view_key)
    v = views[vi]
    bi = uint_in(v.get("buffer"), len(doc.buffers), "bufferViews[{}].buffer", vi)
    vstart = uint_in(v.get("byteOffset", 0), None, "bufferViews[{}].byteOffset", vi)
    vlen = uint_in(v.get("byteLength"), None, "bufferViews[{}].byteLength", vi)
    buf = doc.buffers[bi]
    if vstart + vlen > len(buf):
        raise err(what="view runs past its buffer", field=f"bufferViews[{vi}]",
                  expected=f"end <= {len(buf)}", actual=vstart + vlen, cls=TruncatedError)
    item = _ITEMSIZE[comp]
    used = item * (width // columns) if columns else item * width
    padded = (used + 3) // 4 * 4 if columns else used
    elem = padded * columns if columns else used
    stride = uint_in(v.get("byteStride", elem), None, "bufferViews[{}].byteStride", vi) or elem
    start = vstart + uint_in(a.get(offset_key, 0), None, "{}.{}", where, offset_key)
    if count == 0:
        return np.zeros((0, width), dtype=comp)
    need = start + stride * (count - 1) + elem
    if stride < elem:
        raise err(what="byteStride shorter than one element", field=f"bufferViews[{vi}]"
                  ".byteStride", expected=f">= {elem}", actual=stride)
    if need > vstart + vlen:
        room = max(0, (vstart + vlen - start - elem) // stride + 1) if start + elem <= \
            vstart + vlen else 0
        raise err(what="accessor runs past its view", field=f"{where}.count",
                  expected=f"<= {room} by the view's {vlen} bytes", actual=count,
                  cls=TruncatedError)
    if stride == elem and padded == used:  # tightly packed: the elements as they lie
        packed: npt.NDArray[Any] = np.frombuffer(buf, dtype=comp, count=count * width,
                                                 offset=start).reshape(count, width)
        return packed
    raw = np.frombuffer(buf, dtype=np.uint8, count=need - start, offset=start)
    rows = np.lib.stride_tricks.as_strided(raw, shape=(count, elem), strides=(stride, 1))
    if padded != used:  # drop each matrix column's padding bytes
        rows = rows.reshape(count, columns, padded)[:, :, :used].reshape(count, -1)
    strided: npt.NDArray[Any] = np.ascontiguousarray(rows).view(comp).reshape(count, width)
    return strided


def _apply_sparse(doc: GltfDocument, sp: dict[str, Any], arr: npt.NDArray[Any], comp: Any,
                  width: int, where: str) -> None:
    n = int_in(sp.get("count"), f"{where}.count", 1, len(arr) + 1)
    ind, val = sp.get("indices", {}), sp.get("values", {})
    icomp: Any = _COMPONENTS.get(ind.get("componentType"))
    if icomp not in (np.uint8, np.uint16, np.uint32):
        raise err(what="bad sparse index type", field=f"{where}.indices.componentType",
                  expected=[5121, 5123, 5125], actual=ind.get("componentType"))
    idx = view_data(doc, ind, icomp, 1, n, f"{where}.indices").reshape(-1).astype(np.int64)
    vals = view_data(doc, val, comp, width, n, f"{where}.values")
    if idx.size and (idx.max() >= len(arr)):
        raise err(what="sparse index out of range", field=f"{where}.indices",
                  expected=f"< {len(arr)}", actual=int(idx.max()))
    arr[idx] = vals


def floats(doc: GltfDocument, index: int, width: int, where: str) -> npt.NDArray[np.float32]:
    a = accessor(doc, index, where)
    if a.shape[1] != width:
        raise err(what="accessor width", field=where, expected=width, actual=a.shape[1])
    return np.asarray(a, dtype=np.float32)
