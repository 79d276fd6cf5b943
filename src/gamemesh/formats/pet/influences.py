"""PET skin influences: the weights and bone slots of each vertex cleaned, sorted and cut to
glTF's sets of four, and the v1.0 fake body bone of the normals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene.skinning import limit_influences
from .skeleton import decode_names

F64 = npt.NDArray[np.float64]


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


@dataclass
class Influences:
    """Per vertex, ready for the primitives: joints (uint16) and weights (float32), padded to
    a multiple of 4 slots, and each vertex's count of weights > 0."""

    joints: npt.NDArray[np.uint16]
    weights: npt.NDArray[np.float32]
    used: npt.NDArray[np.integer[Any]]


def clean_influences(joints: Any, weights: Any, ctx: Context) -> Influences:
    """:func:`limit_influences` on (N, P) joints and weights (repeats merged, sorted by
    weight, empty slots dropped, ``max_influences`` honoured, padded to 4k)."""
    limit = ctx.opt("max_influences")
    keep = int(limit) if limit is not None and int(limit) > 0 else None
    inf = limit_influences(joints, weights, keep, types=(np.uint16, np.float32))
    if not inf.merged:
        ctx.note("pet.influences_many",
                 f"vertices with {weights.shape[1]} influences: repeats not merged")
    if inf.over:
        ctx.note("pet.influences_limited", f"{inf.over} vertices had more than {keep} "
                 f"influences: the {keep} largest kept and renormalized")
    # Per vertex, before the primitives gather them.
    return Influences(inf.joints, inf.weights, inf.counts)
