""":class:`PmfDocument` -> bytes. The pieces are already in file order (pre-order), so writing
is one flat loop; the tree is checked to match that order first, because a document whose
``children`` disagree with its order would silently write a different tree."""

from __future__ import annotations

import numpy as np

from ...errors import LimitError
from ...registry import Context
from .document import PmfDocument
from .layout import (
    ANIM_HEAD,
    I32,
    MAX_FRAMES,
    MAX_VERTICES,
    NAME_SIZE,
    PIECE_HEAD,
    VERTEX,
    frame_dtype,
)

FMT = "pmf"


def write(doc: PmfDocument, ctx: Context | None = None) -> bytes:
    check_tree(doc)
    parts: list[bytes] = [bytes(doc.magic)]
    for i, p in enumerate(doc.pieces):
        _check_name(p.name, f"pieces[{i}].name")
        nv = len(p.vertices)
        if nv > MAX_VERTICES:
            raise LimitError(FMT, "too many vertices in one piece", field=f"pieces[{i}]",
                             expected=f"<= {MAX_VERTICES}", actual=nv)
        trans = np.asarray(p.translation, dtype="<f4").reshape(3).tobytes()
        parts.append(PIECE_HEAD.pack(p.name, trans, nv))
        parts.append(np.ascontiguousarray(p.vertices, dtype=VERTEX).tobytes())
        parts.append(I32.pack(len(p.children)))
    parts.append(I32.pack(len(doc.animations)))
    dt = frame_dtype(len(doc.pieces))
    for i, a in enumerate(doc.animations):
        _check_name(a.name, f"animations[{i}].name")
        frames = np.asarray(a.frames)
        if frames.dtype != dt:
            msg = (f"animations[{i}].frames: dtype {frames.dtype} does not match "
                   f"{len(doc.pieces)} pieces")
            raise ValueError(msg)
        if len(frames) > 0xFFFF:
            raise LimitError(FMT, "too many frames", field=f"animations[{i}]",
                             expected=f"<= {MAX_FRAMES}", actual=len(frames))
        parts.append(ANIM_HEAD.pack(a.name, a.flags, a.fps, len(frames)))
        parts.append(np.ascontiguousarray(frames).tobytes())
    parts.append(bytes(doc.trailing))
    return b"".join(parts)


def _check_name(raw: bytes, where: str) -> None:
    if len(raw) != NAME_SIZE:
        msg = f"{where}: a name is {NAME_SIZE} raw bytes (length byte included), got {len(raw)}"
        raise ValueError(msg)


def check_tree(doc: PmfDocument) -> None:
    """The pieces' ``children`` must describe exactly their list order as a pre-order walk from
    piece 0 (iterative, so deep trees are fine)."""
    n = len(doc.pieces)
    if n == 0:
        msg = "a PMF file has exactly one root piece; the document has none"
        raise ValueError(msg)
    expected = 0
    stack = [0]
    while stack:
        i = stack.pop()
        if i != expected or not 0 <= i < n:
            msg = (f"pieces are not in pre-order: position {expected} holds piece {i}; "
                   "the frame rotations follow the file order, so the order must be pre-order")
            raise ValueError(msg)
        expected += 1
        stack.extend(reversed(doc.pieces[i].children))
    if expected != n:
        msg = f"{n - expected} pieces are not reachable from the root"
        raise ValueError(msg)
