"""PET skin influences: the weights and bone slots of each vertex cleaned, sorted and cut to
glTF's sets of four, and the v1.0 fake body bone of the normals."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene.skinning import Influences, limit_influences
from .document import MeshSection
from .skeleton import decode_names

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def fake_body_substitute(names_raw: list[bytes], parents: list[int], main: Any,
                         nb: int) -> npt.NDArray[np.int64]:
    """v1.0 quirk (#2): with a "fake body bone" (no Bip/Bone/Jaw in its name, nobody's main
    bone, no children), corners of Bip/Bone/Jaw main bones rotate by that bone instead.
    Returns, per bone, the bone whose rotation its corners' normals use."""
    names = decode_names(names_raw[:nb])
    skeletal = ["Bip" in n or "Bone" in n or "Jaw" in n for n in names]
    has_child = {p for p in parents if 0 <= p < nb}
    cands = (i for i in range(nb) if not skeletal[i] and i not in has_child)
    # The candidates (usually none or one) checked one by one against the main bones.
    fake = next((i for i in cands if not (main == i).any()), None)
    if fake is None:
        return np.arange(nb)
    # One array from plain ints (the per-bone table is tiny).
    return np.array([fake if i < len(skeletal) and skeletal[i] else i for i in range(nb)],
                    np.int64)


def vertex_influences(m: MeshSection, nb: int, ctx: Context) -> tuple[I64, F64, I64]:
    """Each vertex's joints and weights as column-major (N, P) arrays (what
    :func:`limit_influences` works on: slot by slot) and its main bone (-1 for none). The
    byte weights over 255, zero in slots past the vertex's count or naming no bone; each row
    normalized, a row with none bound to its main bone (or bone 0) with weight 1."""
    bones = np.asarray(m.inf_bone)
    n, p = len(bones), (bones.shape[1] if bones.ndim == 2 else 0)
    count, wb = np.asarray(m.inf_count), np.asarray(m.inf_weight)
    joints = np.empty((n, p), np.int64, order="F")
    w = np.empty((n, p), order="F")
    total = np.zeros(n)
    main = np.full(n, -1, np.int64)  # (no slots: no main bone)
    # Masks applied by multiplying (a masked ufunc or copy costs several times more).
    for c in range(p):
        b = bones[:, c]
        valid = (b >= 0) & (b < nb) & (count > c)
        np.multiply(b, valid, out=joints[:, c])
        np.divide(wb[:, c], 255.0, out=w[:, c])
        w[:, c] *= valid
        total += w[:, c]
        if c == 0:
            main = joints[:, 0] - ~valid  # the bone where valid (else 0): -1 where not
    empty = total <= 0  # every weight is >= 0: a row with none is all zeros
    if np.any(empty):
        ctx.note("pet.vertex_unweighted", f"{int(empty.sum())} vertices have no usable "
                 "influence: bound to their main bone (or bone 0) with weight 1")
        np.copyto(total, 1.0, where=empty)
    for c in range(p):
        w[:, c] /= total
    if p:
        w[empty, 0] = 1.0
        joints[empty, 0] = np.maximum(main[empty], 0)
    return joints, w, main


def clean_influences(joints: Any, weights: Any, ctx: Context) -> Influences:
    """:func:`limit_influences` on (N, P) joints and weights (repeats merged, sorted by
    weight, empty slots dropped, ``max_influences`` honoured, padded to 4k), as uint16 joints
    and float32 weights (per vertex, before the primitives gather them)."""
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    inf = limit_influences(joints, weights, keep, types=(np.uint16, np.float32))
    if not inf.merged:
        ctx.note("pet.influences_many",
                 f"vertices with {weights.shape[1]} influences: repeats not merged")
    if inf.over:
        ctx.note("pet.influences_limited", f"{inf.over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    return inf
