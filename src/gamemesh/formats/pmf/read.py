"""Bytes -> :class:`PmfDocument`.

The piece tree is nested (each piece is followed by its children), so it is read with an explicit
stack of "children still to read" counters rather than by recursion: a file of a hundred thousand
nested pieces is just a long loop. Every count is checked against the bytes left before any loop
or allocation, so a hostile count cannot make the reader spin or allocate.
"""

from __future__ import annotations

import numpy as np

from ...binary import Reader
from ...errors import UnsupportedVersionError
from ...registry import Context
from .document import Animation, Piece, PmfDocument
from .layout import (
    ANIM_HEAD,
    FRAME_FIXED,
    MAGIC,
    MIN_PIECE,
    NAME_MAX,
    PIECE_HEAD,
    VERTEX,
    frame_dtype,
)

FMT = "pmf"


def read(data: bytes, ctx: Context) -> PmfDocument:
    r = Reader(data, FMT)
    magic = _magic(r)
    partial = str(ctx.opt("partial_triangles", "error"))
    pieces = _pieces(r, ctx, partial)
    animations = _animations(r, len(pieces), ctx)
    trailing = r.rest()
    if trailing:
        # The spec leaves trailing data open: keep it (byte-exact round trip) and say so.
        ctx.note("pmf.trailing_bytes", f"{len(trailing)} bytes after the last animation "
                 f"(at 0x{len(data) - len(trailing):X}) were kept but not interpreted")
    return PmfDocument(pieces=pieces, animations=animations, magic=magic, trailing=trailing)


def _magic(r: Reader) -> bytes:
    head = bytes(r.peek(4))
    if len(head) == 4 and head[:3] == b"PMF" and head != MAGIC and 0x30 <= head[3] <= 0x39:
        msg = f"unsupported PMF version {head.decode('latin-1')!r} (only PMF1 is documented)"
        raise r.error(UnsupportedVersionError, msg, expected=repr(MAGIC), actual=repr(head),
                      field="magic")
    return r.magic(MAGIC)


def _piece(r: Reader, index: int, parent: int, ctx: Context, partial: str) -> tuple[Piece, int]:
    """One piece up to and including its numChildren; returns the piece and that count."""
    start = r.tell()
    with r.field(f"pieces[{index}]"):
        name, trans, nv = r.unpack(PIECE_HEAD, "header")
        if name[0] > NAME_MAX:
            ctx.note("pmf.name_length", f"piece {index} at 0x{start:X}: name length {name[0]} "
                     f"> {NAME_MAX}, clamped")
        r.count(nv, VERTEX.itemsize, "numVertices")
        if nv % 3:
            if partial != "keep":
                msg = "vertex count is not a multiple of 3 (a triangle list)"
                raise r.corrupt(msg, expected="a multiple of 3", actual=nv, field="numVertices",
                                offset=start + 44)
            ctx.note("pmf.partial_triangle", f"piece {index}: {nv} vertices is not a multiple "
                     f"of 3; the last {nv % 3} are kept but form no triangle")
        verts = r.array(VERTEX, nv, "vertices")
        nc = r.i32("numChildren")
        # Each child takes at least MIN_PIECE bytes: a count the rest of the file cannot hold
        # is corrupt, whatever happens below.
        r.count(nc, MIN_PIECE, "numChildren")
    translation = np.frombuffer(trans, dtype="<f4").copy()
    return Piece(name=bytes(name), translation=translation, vertices=verts, parent=parent), nc


def _pieces(r: Reader, ctx: Context, partial: str) -> list[Piece]:
    root, nc = _piece(r, 0, -1, ctx, partial)
    pieces = [root]
    # (piece index, children still to read): the explicit stack replaces recursion.
    stack: list[list[int]] = [[0, nc]]
    while stack:
        top = stack[-1]
        if top[1] == 0:
            stack.pop()
            continue
        top[1] -= 1
        index = len(pieces)
        piece, nc = _piece(r, index, top[0], ctx, partial)
        pieces.append(piece)
        pieces[top[0]].children.append(index)
        stack.append([index, nc])
    return pieces


def _animations(r: Reader, n_pieces: int, ctx: Context) -> list[Animation]:
    dt = frame_dtype(n_pieces)
    assert dt.itemsize == FRAME_FIXED + 12 * n_pieces
    n = r.i32("numAnimations")
    r.count(n, ANIM_HEAD.size, "numAnimations")
    out: list[Animation] = []
    for i in range(n):
        with r.field(f"animations[{i}]"):
            start = r.tell()
            name, flags, fps, nf = r.unpack(ANIM_HEAD, "header")
            if name[0] > NAME_MAX:
                ctx.note("pmf.name_length", f"animation {i} at 0x{start:X}: name length "
                         f"{name[0]} > {NAME_MAX}, clamped")
            frames = r.array(dt, nf, "frames")
        out.append(Animation(name=bytes(name), flags=flags, fps=fps, frames=frames))
    return out


def sniff(prefix: bytes) -> bool:
    # "PMF" plus a digit: other digits are claimed too, so they get a clear "unsupported
    # version" instead of "unknown format". PSP movies start "PSMF", so they never match.
    return len(prefix) >= 4 and prefix[:3] == b"PMF" and 0x30 <= prefix[3] <= 0x39
