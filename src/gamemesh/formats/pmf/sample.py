"""The PMF benchmark sample: a figure of nested pieces with two clips, of a given size."""

from __future__ import annotations

from typing import Any

import numpy as np

from .document import Animation, Piece, PmfDocument
from .layout import FRAME_EVENT, FRAME_KEY, make_frames, make_vertices, pack_name
from .write import write


def _blob(count: int, center: tuple[float, float, float], radius: float,
          rng: np.random.Generator) -> Any:
    """``count`` (a multiple of 3) vertices of small triangles on a sphere, counter-clockwise
    seen from outside, with outward normals: valid geometry for the benchmark."""
    t = count // 3
    c = rng.normal(size=(t, 3))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    helper = np.where(np.abs(c[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    u = np.cross(c, helper)
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(c, u)
    s = 0.08 * radius
    corners = np.stack([c * radius + u * s, c * radius + v * s, c * radius - u * s], axis=1)
    pos = corners.reshape(-1, 3) + np.asarray(center)
    nrm = np.repeat(c, 3, axis=0)
    uv = np.repeat((c[:, :2] + 1) / 2, 3, axis=0)
    return make_vertices(pos, nrm, uv)


def make_sample(size_bytes: int) -> bytes:
    """A figure of 15 pieces (torso, head, two 3-piece arms and legs...) with two looping clips
    and vertices filling the file to about ``size_bytes``."""
    rng = np.random.default_rng(5)
    # (name, parent, translation)
    layout = [("hips", -1, (0, 1.0, 0)), ("torso", 0, (0, 0.3, 0)), ("head", 1, (0, 0.5, 0)),
              ("arm_l", 1, (0.3, 0.4, 0)), ("forearm_l", 3, (0.3, 0, 0)),
              ("hand_l", 4, (0.25, 0, 0)), ("arm_r", 1, (-0.3, 0.4, 0)),
              ("forearm_r", 6, (-0.3, 0, 0)), ("hand_r", 7, (-0.25, 0, 0)),
              ("leg_l", 0, (0.15, -0.1, 0)), ("shin_l", 9, (0, -0.45, 0)),
              ("foot_l", 10, (0, -0.45, 0)), ("leg_r", 0, (-0.15, -0.1, 0)),
              ("shin_r", 12, (0, -0.45, 0)), ("foot_r", 13, (0, -0.45, 0))]
    n = len(layout)
    frames = 60
    anim_bytes = 2 * (36 + frames * (13 + 12 * n))
    per_piece = max(0, (size_bytes - 8 - n * 52 - anim_bytes) // (32 * n)) // 3 * 3
    pieces: list[Piece] = []
    for i, (name, parent, t) in enumerate(layout):
        pieces.append(Piece(pack_name(name), np.asarray(t, dtype="<f4"),
                            _blob(per_piece, (0.0, 0.0, 0.0), 0.12, rng), parent))
        if parent >= 0:
            pieces[parent].children.append(i)
    # Reorder into pre-order is unnecessary: the table above is already pre-order.
    k = np.arange(frames)[:, None, None]
    phase = np.linspace(0, np.pi, n)[None, :, None]
    walk = 30.0 * np.sin(2 * np.pi * k / frames + phase) * np.array([1.0, 0.0, 0.0])
    wave = 45.0 * np.sin(2 * np.pi * k / frames + phase) * np.array([0.0, 0.5, 1.0])
    root = np.zeros((frames, 3))
    root[:, 1] = 1.0 + 0.05 * np.sin(4 * np.pi * np.arange(frames) / frames)
    flags = np.where(np.arange(frames) % 10 == 0, FRAME_KEY, 0)
    flags[frames // 2] |= FRAME_EVENT
    anims = [Animation(pack_name("walk"), 1, 30, make_frames(n, walk, root, flags)),
             Animation(pack_name("wave"), 1, 15, make_frames(n, wave, root, flags))]
    return write(PmfDocument(pieces=pieces, animations=anims), None)
