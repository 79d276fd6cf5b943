"""PMF, the Piece Model Format of Bad Sector's Piece Model Editor, written for the MS-DOS game
Post Apocalyptic Petra: a tree of rigid triangle-list pieces animated by per-piece Euler
rotations and a root position, every frame baked.

Versions: ``PMF1`` (the only one documented; another digit is rejected as unsupported).
Spec: ``shared/specs/pmf.md``, made precise from the format author's own description (the seed,
``shared/specs/seeds/001_dd0678b0002fd38a.txt``; http://runtimeterror.com/tools/piecemod/). No
public implementation or sample file exists, so the open conventions (Euler order, angle unit,
root position, handedness, winding) are options; see :mod:`.conventions` and ``docs/pmf.md``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import FormatSpec
from .conventions import OPTIONS, guess_angle_unit
from .fromscene import from_scene
from .layout import (
    FRAME_EVENT,
    FRAME_KEY,
    MAGIC,
    Animation,
    Piece,
    PmfDocument,
    make_frames,
    make_vertices,
    pack_name,
)
from .read import read
from .scene import detect_flip, to_scene
from .write import write

__all__ = ["SPEC", "Animation", "Piece", "PmfDocument", "info", "make_sample", "read", "write"]


def sniff(prefix: bytes) -> bool:
    # "PMF" plus a digit: other digits are claimed too, so they get a clear "unsupported
    # version" instead of "unknown format". PSP movies start "PSMF", so they never match.
    return len(prefix) >= 4 and prefix[:3] == b"PMF" and 0x30 <= prefix[3] <= 0x39


def _depth(doc: PmfDocument) -> int:
    depth = [0] * len(doc.pieces)
    for i, p in enumerate(doc.pieces):
        if p.parent >= 0:
            depth[i] = depth[p.parent] + 1
    return max(depth, default=0)


def info(doc: PmfDocument) -> dict[str, Any]:
    unit, why, _ = guess_angle_unit(doc)
    with np.errstate(all="ignore"):
        flip, agreement = detect_flip(doc, False)
    frames = sum(a.frame_count for a in doc.animations)
    return {
        "version": doc.magic.decode("latin-1"),
        "kind": "piece model (rigid piece tree, baked rotation frames)",
        "layout": "pre-order piece tree; frames of flags + root position + one XYZ triple per "
                  "piece",
        "pieces": len(doc.pieces),
        "empty_pieces": sum(1 for p in doc.pieces if not p.vertex_count),
        "max_depth": _depth(doc),
        "vertices": doc.vertex_count,
        "triangles": sum(p.vertex_count // 3 for p in doc.pieces),
        "animations": [
            {"name": a.text, "loop": a.loop, "fps": a.fps, "frames": a.frame_count,
             "keyframes": int(np.count_nonzero(np.asarray(a.frames["flags"]) & FRAME_KEY)),
             "events": int(np.count_nonzero(np.asarray(a.frames["flags"]) & FRAME_EVENT))}
            for a in doc.animations],
        "frames": frames,
        "trailing_bytes": len(doc.trailing),
        "conventions_assumed": {
            "euler_order": "XYZ (R = Rx*Ry*Rz; default, --euler-order)",
            "angle_unit": f"{unit} (guessed: {why})",
            "root_position": "replace (default, --root-position)",
            "handedness": "right, +Y up (default, --handedness)",
            "winding": ("clockwise (detected from normals)" if flip else
                        "counter-clockwise (detected from normals)")
                       + f", agreement {agreement:+.3f}",
            "uv": "raw, no flip (default, --flip-v)",
        },
    }


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


SPEC = FormatSpec(
    name="pmf",
    title="PMF Piece Model Format (Piece Model Editor / Post Apocalyptic Petra)",
    extensions=(".pmf",),
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    info=info,
    document_type=PmfDocument,
    make_sample=make_sample,
    options=OPTIONS,
    notes="No public sample exists; the Euler order, angle unit, root-position mode, "
          "handedness and winding are assumptions (options).",
)

assert MAGIC == b"PMF1"
