"""The conventions PMF leaves open (spec b.4), as options with documented defaults.

Nothing public settles the Euler order, the angle unit, whether a frame's root position replaces
or adds to the root's translation, the handedness or the winding. Each is an option; the
defaults follow the spec's recommendations and every conversion notes which were assumed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene.math import euler_to_quat, quat_to_euler
from .document import PmfDocument
from .options import (
    ANGLE_UNITS,
    DEFAULT_FPS_FOR_ZERO,
    EULER_ORDERS,
    HANDEDNESS,
    ROOT_MODES,
    WINDINGS,
)

TWO_PI = 2 * math.pi


@dataclass(frozen=True)
class Conventions:
    euler_order: str = "XYZ"
    angle_unit: str = "auto"
    root_position: str = "replace"
    handedness: str = "right"
    winding: str = "auto"
    flip_v: bool = False
    default_fps: int = DEFAULT_FPS_FOR_ZERO

    @staticmethod
    def from_ctx(ctx: Context) -> Conventions:
        def pick(name: str, default: str, choices: tuple[str, ...]) -> str:
            v = str(ctx.opt(name, default))
            v = v.upper() if name == "euler_order" else v.lower()
            if v not in choices:
                msg = f"pmf: option {name} must be one of {', '.join(choices)}, got {v!r}"
                raise ValueError(msg)
            return v

        fps = int(ctx.opt("default_fps", DEFAULT_FPS_FOR_ZERO))
        return Conventions(
            euler_order=pick("euler_order", "XYZ", EULER_ORDERS),
            angle_unit=pick("angle_unit", "auto", ANGLE_UNITS),
            root_position=pick("root_position", "replace", ROOT_MODES),
            handedness=pick("handedness", "right", HANDEDNESS),
            winding=pick("winding", "auto", WINDINGS),
            flip_v=bool(ctx.opt("flip_v", False)),
            default_fps=fps if fps > 0 else DEFAULT_FPS_FOR_ZERO,
        )

    def as_dict(self) -> dict[str, Any]:
        return {"euler_order": self.euler_order, "angle_unit": self.angle_unit,
                "root_position": self.root_position, "handedness": self.handedness,
                "winding": self.winding, "flip_v": self.flip_v}


def clip_rotations(doc: PmfDocument) -> npt.NDArray[np.float64] | None:
    """Every clip's (F, P, 3) stored angles joined along the frames, as float64 (None without
    clips): the unit guess and the conversion to quaternions share this one array."""
    rots = [np.asarray(a.frames["rot"], dtype=np.float64) for a in doc.animations]
    return np.concatenate(rots) if rots else None


def max_abs_angle(doc: PmfDocument, rot: npt.NDArray[np.float64] | None = None) -> float:
    """The largest finite |angle| over every frame of every animation (0 without any);
    ``rot``: :func:`clip_rotations` of ``doc`` when the caller has it already."""
    if rot is None:
        rot = clip_rotations(doc)
    if rot is None:
        return 0.0
    finite = rot[np.isfinite(rot)]
    return float(np.abs(finite).max()) if finite.size else 0.0


def guess_angle_unit(doc: PmfDocument, rot: npt.NDArray[np.float64] | None = None
                     ) -> tuple[str, str, bool]:
    """(unit, why, certain). Radians never exceed 2 pi in an editor's baked frames, so any
    larger angle means degrees; below that the spec's default (degrees, as glRotatef takes)
    is kept."""
    top = max_abs_angle(doc, rot)
    if top > TWO_PI + 1e-4:
        return "degrees", f"the largest angle is {top:.4g} > 2 pi, so the unit is degrees", True
    if top == 0.0:
        return "degrees", "every angle is 0, so the unit does not matter (degrees assumed)", True
    return "degrees", (f"the largest angle is {top:.4g} <= 2 pi: the unit cannot be told from "
                       "the data, degrees assumed (the spec's default; pass --angle-unit "
                       "radians if the motion looks frozen)"), False


def resolve_unit(conv: Conventions, doc: PmfDocument,
                 rot: npt.NDArray[np.float64] | None = None) -> tuple[str, str, bool]:
    if conv.angle_unit != "auto":
        return conv.angle_unit, f"--angle-unit {conv.angle_unit} was given", True
    return guess_angle_unit(doc, rot)


def euler_to_quats(angles: npt.ArrayLike, order: str, unit: str, left: bool) -> npt.NDArray[Any]:
    """(..., 3) stored triples to (..., 4) xyzw quaternions in glTF space."""
    a = np.asarray(angles, dtype=np.float64)
    if unit == "degrees":
        a = np.deg2rad(a)
    # The stored triple is (x, y, z) whatever the order; euler_to_quat indexes by axis name.
    q = euler_to_quat(a, order)
    if left:
        q = mirror_quats(q)
    return q


def quats_to_euler(q: npt.ArrayLike, order: str, unit: str, left: bool) -> npt.NDArray[Any]:
    """(F, ..., 4) glTF quaternions to stored triples, unwrapped along the first axis so
    consecutive frames never jump by a full turn (the editor's Catmull-Rom would spin)."""
    quat = np.asarray(q, dtype=np.float64)
    if left:
        quat = mirror_quats(quat)
    e = quat_to_euler(quat, order)
    if len(e) > 1:
        e = np.unwrap(e, axis=0)
    return np.rad2deg(e) if unit == "degrees" else e


def mirror_quats(q: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """A rotation seen through the mirror z -> -z: the axis (an axial vector) becomes
    (-x, -y, z), the angle stays."""
    out = np.array(q, dtype=np.float64, copy=True)
    out[..., 0] *= -1
    out[..., 1] *= -1
    return out


def hemisphere_continuous(q: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Flip the sign of quaternions along axis 0 so each is in the hemisphere of the one before
    (linear interpolation between keys then takes the short way)."""
    if len(q) < 2:
        return q
    dots = np.sum(q[1:] * q[:-1], axis=-1)
    flips = np.concatenate([np.ones((1, *dots.shape[1:])), np.where(dots < 0, -1.0, 1.0)])
    sign = np.cumprod(flips, axis=0)
    return np.asarray(q * sign[..., None])
