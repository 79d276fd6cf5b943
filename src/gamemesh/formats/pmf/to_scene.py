"""PMF document -> Scene (glTF conventions).

One node per piece (pre-order, so node i is piece i), each with its own mesh; one glTF clip per
animation with a rotation channel per piece and a translation channel on the root, frame k at
k / fps. The open conventions come from :mod:`.conventions`; what was assumed is noted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError, add_new_notes
from ...registry import Context
from ...safeio import read_regular
from ...scene import (
    Animation,
    Channel,
    Image,
    Material,
    Mesh,
    Node,
    Primitive,
    Scene,
    TextureRef,
)
from ...scene.loss import PLACEHOLDER
from ...scene.math import normalize_rows
from ...textures import decode_image
from .conventions import (
    Conventions,
    clip_rotations,
    euler_to_quats,
    hemisphere_continuous,
    resolve_unit,
)
from .document import Piece, PmfDocument
from .layout import FRAME_EVENT, FRAME_KEY, VERTEX, Arr

FMT = "pmf"


def _swap_corners(a: Arr) -> Arr:
    """Corners 0 2 1 of every triangle (np.take: a fancy index here is a slow gather)."""
    k = a.shape[-1]
    return np.take(a.reshape(-1, 3, k), [0, 2, 1], axis=1).reshape(-1, k)


def _finite(a: Arr, what: str, ctx: Context, dtype: type = np.float64) -> Arr:
    """A contiguous copy in ``dtype`` (float32 keeps the file's bits) in which non-finite floats
    (a damaged file) are 0, so the scene stays valid; noted once each."""
    out: Arr = np.array(a, dtype=dtype)
    bad = ~np.isfinite(out)
    if bad.any():
        ctx.note("pmf.non_finite", f"{what}: {int(bad.sum())} NaN/infinite values set to 0")
        out[bad] = 0.0
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


def all_vertices(doc: PmfDocument) -> tuple[Arr, npt.NDArray[np.int64]]:
    """Every piece's whole triangles in one VERTEX array, and the (P + 1,) offsets of each
    piece's run in it: geometry is converted in bulk, not piece by piece, so a model of a
    hundred thousand small pieces costs one numpy pass."""
    runs = [p.vertices if len(p.vertices) % 3 == 0 else _usable_vertices(p)
            for p in doc.pieces]  # a slice only where a partial triangle must go
    counts = np.fromiter(map(len, runs), dtype=np.int64, count=len(runs))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    # Joining the raw records is much cheaper than concatenating 10^5 structured arrays
    # (pieces without vertices, common in skeleton-like trees, add nothing).
    joined = b"".join(np.ascontiguousarray(r, dtype=VERTEX).tobytes() for r in runs if len(r))
    return np.frombuffer(joined, dtype=VERTEX), offsets


def winding_agreement(pos: Arr, nrm: Arr) -> float:
    """Mean cosine between each triangle's winding normal (counter-clockwise) and the sum of
    its stored normals, over the triangles where both exist; 1.0 when none do."""
    # float32 is plenty for a sign and a mean. The nine coordinates of each triangle are made
    # rows first: numpy loops over a 3-wide last axis several times slower than over a row.
    p = _components(pos)
    n = _components(nrm)
    vx, vy, vz = n[0] + n[3] + n[6], n[1] + n[4] + n[7], n[2] + n[5] + n[8]
    ax, ay, az = p[3] - p[0], p[4] - p[1], p[5] - p[2]
    bx, by, bz = p[6] - p[0], p[7] - p[1], p[8] - p[2]
    fx, fy, fz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
    dot = fx * vx + fy * vy + fz * vz
    den = np.sqrt((fx * fx + fy * fy + fz * fz) * (vx * vx + vy * vy + vz * vz))
    ok = (den > 0) & np.isfinite(den) & np.isfinite(dot)
    if not ok.any():
        return 1.0
    return float(np.mean(dot[ok] / den[ok], dtype=np.float64))


def _components(a: Arr) -> npt.NDArray[np.float32]:
    """(9, T) float32: row k is coordinate k % 3 of corner k // 3 of every triangle."""
    flat = np.asarray(a, np.float32).reshape(-1, 9)
    return np.ascontiguousarray(flat.T)


def detect_flip(doc: PmfDocument, left: bool) -> tuple[bool, float]:
    """Whether front faces must be reversed to be counter-clockwise in glTF space, from the
    stored normals: (flip, mean agreement of winding and stored normals, -1..1)."""
    v, _ = all_vertices(doc)
    pos = _mirror(np.asarray(v["position"], np.float64), left)
    nrm = _mirror(np.asarray(v["normal"], np.float64), left)
    mean = winding_agreement(pos, nrm)
    return mean < 0, mean


def _winding(doc: PmfDocument, conv: Conventions, ctx: Context, pos: Arr, nrm: Arr) -> bool:
    left = conv.handedness == "left"
    if conv.winding == "auto":
        mean = winding_agreement(pos, nrm)  # already in glTF space
        flip = mean < 0
        what = "reversed to be counter-clockwise for glTF" if flip else "kept"
        ctx.note("pmf.winding", "winding detected from the stored normals (mean agreement "
                 f"{mean:+.3f}): the triangles' corner order was {what}", "info")
        return flip
    # A mirror reverses the orientation, so a left-handed ccw file needs a flip too.
    return (conv.winding == "cw") != left


def _meshes(doc: PmfDocument, conv: Conventions, ctx: Context, names: list[str]
            ) -> tuple[list[Mesh | None], bool]:
    """One mesh per piece with whole triangles (None for the others), converted in bulk."""
    for i, p in enumerate(doc.pieces):
        if len(p.vertices) % 3:
            ctx.note("pmf.partial_triangle", f"piece {i} ({p.text!r}): the last "
                     f"{len(p.vertices) % 3} vertices form no triangle and were dropped")
    v, offsets = all_vertices(doc)
    left = conv.handedness == "left"
    # Positions and UVs stay float32 (a mirror and a flip are exact there); normals are
    # normalised in float64 and rounded once.
    pos = _mirror(_finite(v["position"], "piece positions", ctx, np.float32), left)
    nrm = _mirror(_finite(v["normal"], "piece normals", ctx), left)
    uv = _finite(v["uv"], "piece UVs", ctx, np.float32)
    if conv.flip_v:
        uv[:, 1] = np.float32(1.0) - uv[:, 1]
    flip = _winding(doc, conv, ctx, pos, nrm)
    nrm32 = normalize_rows(nrm, tiny=1e-12)
    if flip:
        # Runs are whole triangles, so reversing every triple never crosses a piece.
        pos, nrm32, uv = (_swap_corners(a) for a in (pos, nrm32, uv))
    pos32, uv32 = pos, uv
    out: list[Mesh | None] = []
    bounds = offsets.tolist()
    for i in range(len(doc.pieces)):
        a, b = bounds[i], bounds[i + 1]
        if a == b:
            out.append(None)
            continue
        prim = Primitive(positions=pos32[a:b], normals=nrm32[a:b], texcoords=[uv32[a:b]])
        out.append(Mesh(name=names[i], primitives=[prim]))
    return out, flip


def to_scene(doc: PmfDocument, ctx: Context) -> Scene:
    # A damaged file's NaN and huge floats are handled explicitly (_finite); numpy's
    # floating-point warnings about them are noise.
    with np.errstate(all="ignore"):
        return _to_scene(doc, ctx)


def _to_scene(doc: PmfDocument, ctx: Context) -> Scene:
    conv = Conventions.from_ctx(ctx)
    left = conv.handedness == "left"
    rot = clip_rotations(doc)
    unit, why, certain = resolve_unit(conv, doc, rot)
    scene = Scene(name="pmf")
    names = [p.text for p in doc.pieces]
    meshes, flip = _meshes(doc, conv, ctx, names)
    trans = np.array([p.translation for p in doc.pieces], dtype=np.float32).reshape(-1, 3)
    trans = _mirror(_finite(trans, "piece translations", ctx), left)
    trans_list: list[list[float]] = trans.tolist()
    for i, p in enumerate(doc.pieces):
        x, y, z = trans_list[i]
        node = Node(name=names[i], translation=(x, y, z), extras={"pmf_piece": i})
        mesh = meshes[i]
        if mesh is not None:
            node.mesh = scene.add_mesh(mesh)
        # Pre-order: a piece's parent always comes first, so the node exists already.
        scene.add_node(node, None if p.parent < 0 else p.parent)
    _attach_texture(scene, ctx)
    quats, nonfinite = _clip_quats(doc, rot, unit, conv)
    for ai in range(len(doc.animations)):
        anim = _animation(doc, ai, unit, conv, ctx, (quats[ai], nonfinite[ai]))
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
    if not scene.materials:
        _plain_material(scene)
        ctx.note("pmf.no_material", "PMF stores no materials or textures: a plain white, "
                 "non-metallic material is written (the glTF default is fully metallic and "
                 "renders dark; attach a texture with --texture)", "info")
    scene.extras.update({"format": FMT, "version": doc.magic.decode("latin-1"),
                         "pmf_conventions": {**conv.as_dict(), "angle_unit": unit,
                                             "winding_flipped": flip}})
    add_new_notes(scene.notes, ctx.notes)
    return scene


def _plain_material(scene: Scene) -> None:
    """One plain material on every piece: white, not metallic (Material's defaults; glTF's
    own default material is fully metallic). Marked a placeholder (scene.loss leaves it out):
    it is not content a writer could lose, and white changes no other writer's colours."""
    mat = scene.add_material(Material(name="pmf_plain", extras={PLACEHOLDER: True}))
    for mesh in scene.meshes:
        for prim in mesh.primitives:
            prim.material = mat


def _attach_texture(scene: Scene, ctx: Context) -> None:
    """``--texture FILE``: PMF carries no texture, so the user may name one; it becomes one
    material on every piece (a relative name is looked up next to the PMF file)."""
    name = ctx.opt("texture")
    if not name:
        return
    path = Path(str(name))
    if not path.is_absolute() and ctx.path is not None:
        path = ctx.path.parent / path
    data = _texture_bytes(path, ctx)
    mime = ("image/png" if data[:8] == b"\x89PNG\r\n\x1a\n" else
            "image/jpeg" if data[:3] == b"\xff\xd8\xff" else None)
    image = (Image(name=path.stem, data=data, mime_type=mime, uri=path.name) if mime else
             Image(name=path.stem, pixels=decode_image(data), uri=path.name))
    mat = scene.add_material(Material(name=path.stem,
                                      base_color_texture=TextureRef(scene.add_image(image))))
    for mesh in scene.meshes:
        for prim in mesh.primitives:
            prim.material = mat
    ctx.note("pmf.texture", f"texture {path.name!r} attached to every piece (--texture); "
             f"UVs {'flipped' if ctx.opt('flip_v', False) else 'as stored'}", "info")


def _texture_bytes(path: Path, ctx: Context) -> bytes:
    """The ``--texture`` file through the bounded reader every sibling read uses: a device, a
    FIFO or a file over the input limit is refused by name (``/dev/zero`` was read until memory
    ran out). A missing file stays the caller's OSError, naming it."""
    try:
        return read_regular(path, ctx.opt("max_input_size"), FMT, what="the texture")
    except FormatError as e:
        msg = f"--texture {path}: {e.detail}"
        raise FormatError(FMT, msg, field="--texture", expected=e.expected,
                          actual=e.actual) from None


def _clip_quats(doc: PmfDocument, rot: Arr | None, unit: str, conv: Conventions
                ) -> tuple[list[Arr], list[int]]:
    """Every clip's (F, P, 4) quaternions from one conversion of all their frames together
    (``rot``, :func:`clip_rotations`: the same per-row arithmetic as clip by clip, for a
    fraction of the calls), and how many angles of each clip are not finite: those count as
    0, as ``_finite`` makes them (the clip's note gives the count)."""
    if rot is None:
        return [], []
    cuts = np.cumsum([len(a.frames) for a in doc.animations])[:-1]
    nonfinite = [0] * len(doc.animations)
    bad = ~np.isfinite(rot)
    if bad.any():
        nonfinite = [int(b.sum()) for b in np.split(bad, cuts)]
        rot[bad] = 0.0  # the caller's array, made for this
    quats = euler_to_quats(rot, conv.euler_order, unit, conv.handedness == "left")
    return np.split(quats, cuts), nonfinite


def _animation(doc: PmfDocument, ai: int, unit: str, conv: Conventions,
               ctx: Context, clip: tuple[Arr, int]) -> Animation | None:
    """Clip ``ai`` from its quaternions and its count of non-finite angles (``clip``, from
    :func:`_clip_quats`)."""
    clip_quats, nonfinite = clip
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
    if nonfinite:  # _finite's note on the clip's angles (_clip_quats made them 0)
        ctx.note("pmf.non_finite", f"animation {ai} rotations: {nonfinite} NaN/infinite "
                 "values set to 0")
    # (piece, frame, xyzw) float32 in one conversion: each piece's keys a contiguous row.
    quats = np.ascontiguousarray(hemisphere_continuous(clip_quats).transpose(1, 0, 2),
                                 dtype=np.float32)
    channels = [Channel(pi, "rotation", times, quats[pi]) for pi in range(len(doc.pieces))]
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
