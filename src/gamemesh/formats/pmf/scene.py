"""PMF document -> Scene (glTF conventions).

One node per piece (pre-order, so node i is piece i), each with its own mesh; one glTF clip per
animation with a rotation channel per piece and a translation channel on the root, frame k at
k / fps. The open conventions come from :mod:`.conventions`; what was assumed is noted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Context
from ...scene import Animation, Channel, Mesh, Node, Primitive, Scene
from ...scene.math import as_tuple3, face_normals
from .conventions import (
    Conventions,
    euler_to_quats,
    hemisphere_continuous,
    resolve_unit,
)
from .layout import FRAME_EVENT, FRAME_KEY, Arr, Piece, PmfDocument

FMT = "pmf"


def _finite(a: Arr, what: str, ctx: Context) -> Arr:
    """Non-finite floats (a damaged file) become 0 so the scene stays valid; noted once each."""
    out = np.asarray(a, dtype=np.float64)
    bad = ~np.isfinite(out)
    if np.any(bad):
        ctx.note("pmf.non_finite", f"{what}: {int(bad.sum())} NaN/infinite values set to 0")
        out = np.where(bad, 0.0, out)
    return out


def _mirror(v: Arr, left: bool) -> Arr:
    if not left:
        return v
    out = np.array(v, copy=True)
    out[..., 2] *= -1
    return out


def _usable_vertices(p: Piece) -> Arr:
    n = len(p.vertices) // 3 * 3
    return p.vertices[:n]


def detect_flip(doc: PmfDocument, left: bool) -> tuple[bool, float]:
    """Whether front faces must be reversed to be counter-clockwise in glTF space, from the
    stored normals: (flip, mean dot of winding normal and stored normal, -1..1)."""
    total = 0.0
    count = 0
    for p in doc.pieces:
        v = _usable_vertices(p)
        if not len(v):
            continue
        pos = _mirror(np.nan_to_num(np.asarray(v["position"], dtype=np.float64)), left)
        nrm = _mirror(np.nan_to_num(np.asarray(v["normal"], dtype=np.float64)), left)
        tris = np.arange(len(v)).reshape(-1, 3)
        fn = face_normals(pos, tris)
        vn = nrm.reshape(-1, 3, 3).sum(axis=1)
        fl = np.linalg.norm(fn, axis=1)
        vl = np.linalg.norm(vn, axis=1)
        ok = (fl > 0) & (vl > 0) & np.isfinite(fl) & np.isfinite(vl)
        if np.any(ok):
            d = np.sum(fn[ok] * vn[ok], axis=1) / (fl[ok] * vl[ok])
            total += float(np.sum(d))
            count += int(ok.sum())
    mean = total / count if count else 1.0
    return mean < 0, mean


def _winding(doc: PmfDocument, conv: Conventions, ctx: Context) -> bool:
    left = conv.handedness == "left"
    if conv.winding == "auto":
        flip, mean = detect_flip(doc, left)
        what = "reversed to be counter-clockwise for glTF" if flip else "kept"
        ctx.note("pmf.winding", "winding detected from the stored normals (mean agreement "
                 f"{mean:+.3f}): the triangles' corner order was {what}", "info")
        return flip
    # A mirror reverses the orientation, so a left-handed ccw file needs a flip too.
    return (conv.winding == "cw") != left


def _mesh(p: Piece, index: int, flip: bool, conv: Conventions, ctx: Context) -> Mesh | None:
    v = _usable_vertices(p)
    if len(p.vertices) != len(v):
        ctx.note("pmf.partial_triangle", f"piece {index} ({p.text!r}): the last "
                 f"{len(p.vertices) - len(v)} vertices form no triangle and were dropped")
    if not len(v):
        return None
    left = conv.handedness == "left"
    pos = _mirror(_finite(v["position"], f"piece {index} positions", ctx), left)
    nrm = _mirror(_finite(v["normal"], f"piece {index} normals", ctx), left)
    uv = _finite(v["uv"], f"piece {index} UVs", ctx)
    if conv.flip_v:
        uv = np.column_stack([uv[:, 0], 1.0 - uv[:, 1]])
    lengths = np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm = np.where(lengths > 1e-12, nrm / np.where(lengths > 1e-12, lengths, 1.0),
                   np.array([0.0, 1.0, 0.0]))
    if flip:
        order = np.arange(len(v)).reshape(-1, 3)[:, [0, 2, 1]].reshape(-1)
        pos, nrm, uv = pos[order], nrm[order], uv[order]
    prim = Primitive(positions=pos.astype(np.float32), normals=nrm.astype(np.float32),
                     texcoords=[uv.astype(np.float32)])
    return Mesh(name=p.text, primitives=[prim])


def to_scene(doc: PmfDocument, ctx: Context) -> Scene:
    # A damaged file's NaN and huge floats are handled explicitly (_finite); numpy's
    # floating-point warnings about them are noise.
    with np.errstate(all="ignore"):
        return _to_scene(doc, ctx)


def _to_scene(doc: PmfDocument, ctx: Context) -> Scene:
    conv = Conventions.from_ctx(ctx)
    left = conv.handedness == "left"
    unit, why, certain = resolve_unit(conv, doc)
    scene = Scene(name="pmf")
    flip = _winding(doc, conv, ctx)
    for i, p in enumerate(doc.pieces):
        t = _mirror(_finite(p.translation, f"piece {i} translation", ctx), left)
        node = Node(name=p.text, translation=as_tuple3(t), extras={"pmf_piece": i})
        mesh = _mesh(p, i, flip, conv, ctx)
        if mesh is not None:
            node.mesh = scene.add_mesh(mesh)
        # Pre-order: a piece's parent always comes first, so the node exists already.
        scene.add_node(node, None if p.parent < 0 else p.parent)
    for ai in range(len(doc.animations)):
        anim = _animation(doc, ai, unit, conv, ctx)
        if anim is not None:
            scene.animations.append(anim)
    ctx.note("pmf.angle_unit", f"Euler angles read as {unit}: {why}",
             "info" if certain else "warning")
    ctx.note("pmf.conventions", "assumed: Euler order "
             f"{conv.euler_order} (R = " + "*".join(f"R{c.lower()}" for c in conv.euler_order)
             + "), the frames' root position "
             + ("replaces" if conv.root_position == "replace" else "is added to")
             + " the root translation, "
             f"{conv.handedness}-handed coordinates; change with --euler-order, "
             "--root-position, --handedness", "info")
    ctx.note("pmf.no_material", "PMF stores no materials or textures: the glTF default "
             "material applies", "info")
    scene.extras.update({"format": FMT, "version": doc.magic.decode("latin-1"),
                         "pmf_conventions": {**conv.as_dict(), "angle_unit": unit,
                                             "winding_flipped": flip}})
    scene.notes.extend(n for n in ctx.notes if n not in scene.notes)
    return scene


def _animation(doc: PmfDocument, ai: int, unit: str, conv: Conventions,
               ctx: Context) -> Animation | None:
    a = doc.animations[ai]
    name = a.text
    frames = a.frames
    if len(frames) == 0:
        ctx.note("pmf.empty_clip", f"animation {ai} ({name!r}) has no frames; glTF cannot hold "
                 "an empty clip, so it was skipped")
        return None
    fps = a.fps
    if fps == 0:
        fps = conv.default_fps
        ctx.note("pmf.fps_zero", f"animation {ai} ({name!r}) has fps 0; timed at {fps} fps")
    left = conv.handedness == "left"
    n_frames = len(frames)
    times = (np.arange(n_frames, dtype=np.float64) / fps).astype(np.float32)
    rot = _finite(frames["rot"], f"animation {ai} rotations", ctx)
    quats = hemisphere_continuous(euler_to_quats(rot, conv.euler_order, unit, left))
    channels: list[Channel] = []
    for pi in range(len(doc.pieces)):
        channels.append(Channel(pi, "rotation", times, quats[:, pi].astype(np.float32)))
    root = _mirror(_finite(frames["root"], f"animation {ai} root positions", ctx), left)
    if conv.root_position == "add":
        base = _mirror(np.nan_to_num(np.asarray(doc.pieces[0].translation, np.float64)), left)
        root = root + base
    channels.append(Channel(0, "translation", times, root.astype(np.float32)))
    flags = np.asarray(frames["flags"])
    extras: dict[str, Any] = {
        "loop": a.loop, "fps": int(a.fps), "frame_count": n_frames, "flags": int(a.flags),
        "keyframes": np.flatnonzero(flags & FRAME_KEY).tolist(),
        "events": np.flatnonzero(flags & FRAME_EVENT).tolist(),
    }
    return Animation(name=name, channels=channels, extras=extras)
