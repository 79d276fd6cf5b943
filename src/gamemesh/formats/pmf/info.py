"""`gamemesh info` facts of a PMF document: version, pieces, clips and the conventions guessed."""

from __future__ import annotations

from typing import Any

import numpy as np

from .conventions import guess_angle_unit
from .document import PmfDocument
from .layout import (
    FRAME_EVENT,
    FRAME_KEY,
)
from .to_scene import detect_flip


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
