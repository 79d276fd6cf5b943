"""The player fields of a modern header (spec-modern §2.1, +16..+57): start position, rotation
and eye height, and the movement parameters the runtime needs to move at all.

Zero speeds leave the runtime's player able to turn but never move, fall or jump
(psxsplash ``scenemanager.cpp`` / ``controls.cpp``, spec-modern §13), so a scene that does not
say otherwise gets SplashEdit's defaults. They are the ``PSXPlayer`` component's field
initialisers, psxsplash/splashedit @ 2cfa718 ``Runtime/PSXPlayer.cs``: playerHeight 1.8
(line 29), playerRadius 0.5 (:32), moveSpeed 3.0 (:36), sprintSpeed 8.0 (:39), jumpHeight 2.0
(:89), gravity 20.0 (:92); splashedit-ng ``core/splashpack.cpp`` (@3da06d8) starts from the same
six values when a scene has no player. The fixed-point conversions are the writer's
(``PSXSceneWriter.cs:209-222``, the same in splashedit-ng): speeds are per frame at 30 fps,
the jump velocity is sqrt(2 g h), each divided by GTEScaling and stored as 4.12.

Where the start comes from: a ``player_start`` node (its world position is the eye, as
SplashEdit's ``CamPoint``; v1's reader makes one, with the raw height and rotation in extras),
else the header fields a scene read from a modern file kept, else the origin with the default
height (SplashEdit without a player). The rotation is written as splashedit-ng writes it: Unity
Euler angles in 4.12 units of pi (the runtime casts them to ``psyqo::Angle``); a v1 file's
rotation is radians x 4096 (spec §b, PSXSceneWriter 2025) and is converted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ....registry import Context
from ....scene import Node, Scene
from ....scene.math import matrix_to_trs, world_matrices
from ..conventions import AXES, quat_to_track, track_to_quat
from ..options import PLAYER_DEFAULTS as DEFAULTS
from ..vram import ext

__all__ = ["DEFAULTS", "MOVEMENT_OPTIONS", "player_fields", "player_node"]

FPS = 30.0  # PSXSceneWriter.cs:210: speeds are stored per frame at 30 fps
# SplashEdit's PSXPlayer defaults: options.PLAYER_DEFAULTS (file and line in the docstring).
MOVEMENT_OPTIONS = tuple(DEFAULTS)
_HEADER_MOVES = ("move_speed", "sprint_speed", "jump_velocity", "gravity", "player_radius")
_U16 = 0xFFFF


@dataclass
class _Start:
    pos: npt.NDArray[np.float64]  # glTF world position of the eye
    rot: list[int]  # raw header rotation (4.12 pi units)
    height: float | None  # units; None: the option or the default


def _fp(v: float, gte: float) -> int:
    """4.12 of ``v / gte``, rounded, into a u16 (as the writer's clamp)."""
    r = v / gte * 4096.0
    return int(np.clip(np.rint(r), 0, _U16)) if math.isfinite(r) else 0


def _node_start(scene: Scene) -> _Start | None:
    for i, node in enumerate(scene.nodes):
        info = ext(node)
        if not (info.get("player") or node.name == "player_start"):
            continue
        world = world_matrices(scene)[i]
        raw, pi = _ints(info.get("rotation_raw")), _ints(info.get("rotation_pi"))
        if pi is not None:
            rot = pi
        elif raw is not None:
            # v1: Unity Euler radians x 4096 -> 4.12 units of pi.
            rot = [int(np.clip(round(x / math.pi), -32768, 32767)) for x in raw]
        else:
            _, q, _ = matrix_to_trs(world)
            # Rotation keys are (-x, y, -z) in 1024 per pi; the header has (x, y, z) in 4096.
            t = quat_to_track(q).astype(np.int64).reshape(3) * 4
            rot = [int(((v + 32768) % 65536) - 32768) for v in (-t[0], t[1], -t[2])]
        h = info.get("height")
        return _Start(world[:3, 3].copy(), rot, float(h) if isinstance(h, int | float) else None)
    return None


def _ints(v: Any) -> list[int] | None:
    ok = isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) for x in v)
    return [int(x) for x in v] if ok else None


def player_node(scene: Scene, hdr: npt.NDArray[np.void], s: float) -> None:
    """The header's player start as an empty node ``player_start`` (as v1's reader makes it):
    at the eye position, turned by the start rotation, the raw fields in extras."""
    pos = hdr["player_pos"][0].astype(np.float64) * AXES * s
    rot = [int(x) for x in hdr["player_rot"][0]]
    # 4.12 pi units of (x, y, z) -> the rotation keys' 1024 per pi of (-x, y, -z).
    q = track_to_quat(np.array([-rot[0], rot[1], -rot[2]], np.float64) / 4)[0]
    height = int(hdr["player_height"][0])
    scene.add_node(Node(name="player_start", translation=(float(pos[0]), float(pos[1]),
                                                          float(pos[2])),
                        rotation=(float(q[0]), float(q[1]), float(q[2]), float(q[3])),
                        extras={"splashpack": {"player": True, "rotation_pi": rot,
                                               "height_raw": height, "height": height * s}}))


def _given(ctx: Context, name: str) -> float | None:
    v = ctx.opt(name)
    return float(v) if v is not None and math.isfinite(float(v)) and float(v) >= 0 else None


def player_fields(hdr: npt.NDArray[np.void], scene: Scene, ctx: Context, gte: float,
                  raw: Any) -> None:
    """Fill the player fields of ``hdr`` (a modern header record; ``raw`` turns glTF
    positions into header integers). Kept header values of a scene read from a modern file
    stand unless a node or an option says otherwise; zero movement fields (what gamemesh
    wrote before) count as unset."""
    kept = isinstance(ext(scene).get("header"), dict)
    start = _node_start(scene)
    if start is not None:
        hdr["player_pos"] = np.clip(raw(start.pos), -32768, 32767)
        hdr["player_rot"] = start.rot
    elif not kept:
        hdr["player_pos"], hdr["player_rot"] = 0, 0
        ctx.note("splashpack.player_default", "no player_start node: the player starts at the "
                 f"origin with SplashEdit's eye height of {DEFAULTS['player_height']:g} units")
    height = _given(ctx, "player_height")
    height = height if height is not None else (start.height if start is not None else None)
    if height is not None or not kept or int(hdr["player_height"][0]) == 0:
        hdr["player_height"] = _fp(height if height is not None else DEFAULTS["player_height"],
                                   gte)
    _movement(hdr, ctx, gte)


def _movement(hdr: npt.NDArray[np.void], ctx: Context, gte: float) -> None:
    vals = {k: _given(ctx, k) for k in MOVEMENT_OPTIONS}
    given = {k for k, v in vals.items() if v is not None}
    v: dict[str, float] = {k: (g if (g := vals[k]) is not None else d)
                           for k, d in DEFAULTS.items()}
    new = {"move_speed": _fp(v["move_speed"] / FPS, gte),
           "sprint_speed": _fp(v["sprint_speed"] / FPS, gte),
           "jump_velocity": _fp(math.sqrt(2.0 * v["gravity"] * v["jump_height"]), gte),
           "gravity": _fp(v["gravity"], gte), "player_radius": _fp(v["player_radius"], gte)}
    from_opts = {"move_speed": {"move_speed"}, "sprint_speed": {"sprint_speed"},
                 "jump_velocity": {"jump_height", "gravity"}, "gravity": {"gravity"},
                 "player_radius": {"player_radius"}}
    for field in _HEADER_MOVES:
        if from_opts[field] & given or int(hdr[field][0]) == 0:
            hdr[field] = new[field]
