"""Scene (glTF conventions) -> PMF document.

PMF holds a tree of rigid pieces whose rest pose is a pure translation, animated by one rotation
per piece and a position for the root. Any scene is fitted to that:

* The node hierarchy becomes the piece tree (pre-order); several roots get a synthetic root.
  A node without a mesh is a piece without vertices.
* A piece's frame is its node's rest frame with the rotation and scale taken out, so the
  vertices are baked through the node's rest rotation and scale, and a piece's translation is
  its offset from its parent in the parent piece's (unrotated) frame.
* A skinned mesh is split into rigid parts by each triangle's dominant joint; each part joins
  that joint's piece, placed as the bind pose puts it.
* A clip is sampled at one rate; a piece's rotation is the node's local rotation conjugated by
  the rest rotations taken out: ``R_piece = Qw(parent) * R_local(t) * Qw(node)^-1``, which is
  the identity at rest. Non-root translation and all scale animation are dropped (noted).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...scene import Animation, Channel, Node, Primitive, Scene
from ...scene.loss import at_rest
from ...scene.math import (
    matrix_to_quat,
    quat_multiply,
    quat_to_matrix,
    snap,
    snap_quat,
    vertex_normals,
)
from ...scene.sampling import sample_channel
from ...scene.skinning import safe_inverse
from .conventions import Conventions, quats_to_euler
from .document import Animation as PmfAnimation
from .document import Piece as PmfPiece
from .document import PmfDocument
from .layout import (
    ANIM_LOOP,
    FRAME_EVENT,
    FRAME_KEY,
    MAX_FRAMES,
    MAX_VERTICES,
    NAME_MAX,
    VERTEX,
    frame_dtype,
    make_vertices,
    pack_name,
)

FMT = "pmf"
F64 = npt.NDArray[np.float64]
DEFAULT_FPS = 30
IDENTITY_Q = np.array([0.0, 0.0, 0.0, 1.0])
# A frame's composed rotation goes on the grid of snap_quat before it becomes angles, not the
# angles on a grid: near the middle axis' +-90 degrees a decomposition multiplies the float
# noise of the next trip's quaternion (float32 in a glb) enough to cross any angle grid
# boundary, while angles -> quaternion is well conditioned. So the next trip lands on the same
# grid quaternion, whose decomposition, the same angles, is the first file's bytes again. The
# angles themselves are not snapped (that would move them off the grid quaternion); float32
# rounds them. A step of 7.6e-6 (under 1e-3 degrees) is some ten times the noise of that
# rounding while unwrapped angles stay within some ten turns (a 30-turn spin breaks it).
ROT_BITS = 18
NORMAL_BITS = 20  # normals: only float32 rounding to stay above


@dataclass
class _Slot:
    """A piece being built: its scene node (-1 for a synthetic root) and gathered geometry."""

    node: int
    parent: int
    pos: list[F64] = field(default_factory=list)
    nrm: list[F64] = field(default_factory=list)
    uv: list[F64] = field(default_factory=list)


def _tree(scene: Scene, ctx: Context) -> list[_Slot]:
    """Pieces in pre-order (iterative). One root: that node; otherwise a synthetic root."""
    roots = [r for r in scene.roots if 0 <= r < len(scene.nodes)]
    slots: list[_Slot] = []
    stack: list[tuple[int, int]] = []
    if len(roots) == 1:
        stack.append((roots[0], -1))
    else:
        slots.append(_Slot(-1, -1))
        if len(roots) > 1:
            ctx.note("pmf.synthetic_root", f"{len(roots)} root nodes were put under one "
                     "synthetic root piece (PMF has exactly one root)", "info")
        stack.extend((r, 0) for r in reversed(roots))
    seen: set[int] = set()
    while stack:
        node, parent = stack.pop()
        if node in seen or not 0 <= node < len(scene.nodes):
            continue
        seen.add(node)
        slots.append(_Slot(node, parent))
        me = len(slots) - 1
        stack.extend((c, me) for c in reversed(scene.nodes[node].children))
    return slots


def _triangles(prim: Primitive) -> npt.NDArray[np.int64] | None:
    """(T, 3) vertex indices for triangle lists, strips and fans; None for points and lines."""
    n = prim.vertex_count
    idx = (np.asarray(prim.indices, dtype=np.int64) if prim.indices is not None
           else np.arange(n, dtype=np.int64))
    if prim.mode == 4:
        return idx[: len(idx) // 3 * 3].reshape(-1, 3)
    if prim.mode in (5, 6) and len(idx) >= 3:
        k = np.arange(len(idx) - 2)
        if prim.mode == 5:
            # Strips alternate their winding: odd triangles swap their first two corners.
            a = np.where(k % 2 == 0, idx[k], idx[k + 1])
            b = np.where(k % 2 == 0, idx[k + 1], idx[k])
            return np.stack([a, b, idx[k + 2]], axis=1)
        return np.stack([np.full(len(k), idx[0]), idx[k + 1], idx[k + 2]], axis=1)
    if prim.mode in (5, 6):
        return np.zeros((0, 3), dtype=np.int64)
    return None


@dataclass
class _Soup:
    """De-indexed triangle corners of one primitive (3T rows each)."""

    pos: F64
    nrm: F64
    uv: F64
    joints: npt.NDArray[Any] | None
    weights: F64 | None


def _soup(prim: Primitive, tris: npt.NDArray[np.int64]) -> _Soup:
    pos = np.asarray(prim.positions, dtype=np.float64).reshape(-1, 3)
    corner = tris.reshape(-1)
    if prim.normals is not None and len(prim.normals) == len(pos):
        nrm = np.asarray(prim.normals, dtype=np.float64)
    else:
        nrm = vertex_normals(pos, tris).astype(np.float64)
    if prim.texcoords and len(prim.texcoords[0]) == len(pos):
        uv = np.asarray(prim.texcoords[0], dtype=np.float64)
    else:
        uv = np.zeros((len(pos), 2))
    joints = weights = None
    if prim.joints is not None and prim.weights is not None:
        joints = np.asarray(prim.joints)[corner]
        weights = np.asarray(prim.weights, dtype=np.float64)[corner]
    return _Soup(pos[corner], nrm[corner], uv[corner], joints, weights)


def _place(slot: _Slot, pos: F64, nrm: F64, uv: F64, lin: F64, off: F64) -> None:
    """Add corners to a piece through ``x -> lin @ x + off`` (normals by the inverse
    transpose); a mirroring ``lin`` reverses the winding, so it is undone here."""
    p = pos @ lin.T + off
    try:
        inv_t = safe_inverse(lin).T
    except np.linalg.LinAlgError:
        inv_t = np.eye(3)
    n = nrm @ inv_t.T
    length = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.where(length > 1e-20, n / np.where(length > 1e-20, length, 1.0), [0.0, 1.0, 0.0])
    # On snap_quat's grid (a zero w): the reader's float64 normalising and float32 rounding
    # then cannot move the next trip's normal off the first's grid point.
    n = snap_quat(np.pad(n, ((0, 0), (0, 1))), NORMAL_BITS)[:, :3]
    if np.linalg.det(lin) < 0:
        order = np.arange(len(p)).reshape(-1, 3)[:, [0, 2, 1]].reshape(-1)
        p, n, uv = p[order], n[order], uv[order]
    slot.pos.append(p)
    slot.nrm.append(n)
    slot.uv.append(uv)


def _dominant(joints: npt.NDArray[Any], weights: F64, n_joints: int) -> npt.NDArray[np.int64]:
    """Each triangle's joint with the largest summed weight over its three corners."""
    t = len(joints) // 3
    j = np.asarray(joints, dtype=np.int64).reshape(t, -1)
    w = weights.reshape(t, -1)
    j = np.clip(j, 0, max(n_joints - 1, 0))
    if t * n_joints <= 20_000_000:
        tri = np.repeat(np.arange(t), j.shape[1])
        score = np.bincount(tri * n_joints + j.reshape(-1), weights=w.reshape(-1),
                            minlength=t * n_joints).reshape(t, n_joints)
        return np.asarray(np.argmax(score, axis=1), dtype=np.int64)
    # Too many joints times triangles for a table: the heaviest single corner slot decides.
    return np.asarray(j[np.arange(t), np.argmax(w, axis=1)], dtype=np.int64)


@dataclass
class _Rest:
    """Every node's rest world transform, split into the linear part, its rotation (xyzw) and
    its scale. Built with one small matrix product per node and batched decompositions, so a
    hundred thousand nodes take well under a second."""

    lin: F64  # (N, 3, 3)
    quat: F64  # (N, 4)
    scale: F64  # (N, 3)


def _rest(scene: Scene, slots: list[_Slot]) -> _Rest:
    n = len(scene.nodes)
    lin = np.tile(np.eye(3), (n, 1, 1))
    trs = scene.nodes
    rot = np.array([nd.rotation for nd in trs], dtype=np.float64).reshape(-1, 4)
    scl = np.array([nd.scale for nd in trs], dtype=np.float64).reshape(-1, 3)
    local = quat_to_matrix(rot) * scl[:, None, :] if n else np.zeros((0, 3, 3))
    for i, nd in enumerate(trs):
        if nd.matrix is not None:
            local[i] = np.asarray(nd.matrix, dtype=np.float64)[:3, :3]
    trivial = np.all(np.abs(local - np.eye(3)) == 0, axis=(1, 2)) if n else np.zeros(0, bool)
    for s in slots:
        if s.node < 0:
            continue
        parent = slots[s.parent].node if s.parent >= 0 else -1
        if parent < 0:
            lin[s.node] = local[s.node]
        elif trivial[s.node]:
            lin[s.node] = lin[parent]
        else:
            lin[s.node] = lin[parent] @ local[s.node]
    scale = np.linalg.norm(lin, axis=1) if n else np.zeros((0, 3))
    neg = np.linalg.det(lin) < 0 if n else np.zeros(0, bool)
    scale[neg, 0] *= -1
    safe = np.where(scale == 0, 1.0, scale)
    quat = matrix_to_quat(lin / safe[:, None, :]) if n else np.zeros((0, 4))
    return _Rest(lin, quat, scale)


def _gather(scene: Scene, slots: list[_Slot], worlds: _Rest, ctx: Context) -> None:
    piece_of = {s.node: i for i, s in enumerate(slots) if s.node >= 0}
    skipped_modes = 0
    for si, slot in enumerate(slots):
        if slot.node < 0:
            continue
        node = scene.nodes[slot.node]
        if node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        mesh = scene.meshes[node.mesh]
        if any(p.targets for p in mesh.primitives):
            ctx.note("pmf.morph_dropped", f"mesh {mesh.name!r}: morph targets dropped "
                     "(PMF pieces are rigid)", covers=("targets",))
        skin = scene.skins[node.skin] if node.skin is not None and \
            0 <= node.skin < len(scene.skins) else None
        for prim in mesh.primitives:
            tris = _triangles(prim)
            if tris is None:
                skipped_modes += 1
                continue
            soup = _soup(prim, tris)
            if skin is not None and soup.joints is not None and soup.weights is not None:
                _split_skinned(scene, skin, soup, slots, piece_of, worlds, ctx)
            else:
                lin = worlds.lin[slot.node]
                _place(slots[si], soup.pos, soup.nrm, soup.uv, lin, np.zeros(3))
        if skin is not None:
            ctx.note("pmf.skin_split", f"skinned mesh {mesh.name!r} split into rigid pieces "
                     "by each triangle's dominant joint; the deformation between them is lost",
                     covers=("skins", "joints"))
    if skipped_modes:
        ctx.note("pmf.points_lines_dropped", f"{skipped_modes} point/line primitives dropped "
                 "(PMF holds triangles only)", covers=("primitives",))


def _split_skinned(scene: Scene, skin: Any, soup: _Soup, slots: list[_Slot],
                   piece_of: dict[int, int], worlds: _Rest, ctx: Context) -> None:
    assert soup.joints is not None and soup.weights is not None
    n_joints = len(skin.joints)
    if n_joints == 0 or not len(soup.pos):
        return
    dom = _dominant(soup.joints, soup.weights, n_joints)
    ibm = (np.asarray(skin.inverse_bind_matrices, dtype=np.float64)
           if skin.inverse_bind_matrices is not None else np.tile(np.eye(4), (n_joints, 1, 1)))
    lost = 0
    for j in np.unique(dom):
        node = skin.joints[int(j)]
        piece = piece_of.get(node)
        sel = np.repeat(dom == j, 3)
        if piece is None:
            lost += int(sel.sum()) // 3
            continue
        # Bind space -> joint space (IBM) -> the joint piece's unrotated rest frame.
        lin_w = worlds.lin[node]
        lin = lin_w @ ibm[j][:3, :3]
        off = lin_w @ ibm[j][:3, 3]
        _place(slots[piece], soup.pos[sel], soup.nrm[sel], soup.uv[sel], lin, off)
    if lost:
        ctx.note("pmf.skin_orphans", f"{lost} triangles bound to joints outside the node tree "
                 "were dropped", covers=("primitives",))


def _names(texts: Iterator[str], kind: str, ctx: Context) -> list[bytes]:
    """ASCII, at most 31 bytes, unique (a clash after cutting gets a ~N suffix)."""
    out: list[bytes] = []
    used: set[bytes] = set()
    # The next suffix to try per clashing name: a hundred thousand pieces all called "p" must
    # not cost a quadratic search.
    next_suffix: dict[bytes, int] = {}
    changed = 0
    for i, text in enumerate(texts):
        folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore")
        raw = bytes(c if 32 <= c < 127 else 0x5F for c in folded)
        if not raw:
            raw = f"{kind}{i}".encode()
        raw = raw[:NAME_MAX]
        base = raw
        while raw in used:
            k = next_suffix.get(base, 2)
            next_suffix[base] = k + 1
            suffix = f"~{k}".encode()
            raw = base[: NAME_MAX - len(suffix)] + suffix
        if raw != text.encode("utf-8", "replace"):
            changed += 1
        used.add(raw)
        out.append(pack_name(raw))
    if changed:
        ctx.note(f"pmf.{kind}_names", f"{changed} {kind} names changed to fit PMF (ASCII, at "
                 f"most {NAME_MAX} bytes, unique)")
    return out


def from_scene(scene: Scene, ctx: Context) -> PmfDocument:
    conv = Conventions.from_ctx(ctx)
    unit = "radians" if conv.angle_unit == "radians" else "degrees"
    left = conv.handedness == "left"
    slots = _tree(scene, ctx)
    worlds = _rest(scene, slots)
    _gather(scene, slots, worlds, ctx)
    texts = ("root" if s.node < 0 else scene.nodes[s.node].name for s in slots)
    names = _names(texts, "piece", ctx)
    reverse = (conv.winding == "cw") != left
    pieces: list[PmfPiece] = []
    for i, s in enumerate(slots):
        trans = _translation(scene, slots, s, worlds, left)
        verts = _vertices(s, left, reverse, conv.flip_v, i)
        pieces.append(PmfPiece(name=names[i], translation=trans, vertices=verts,
                               parent=s.parent))
        if s.parent >= 0:
            pieces[s.parent].children.append(i)
    rest_q = [IDENTITY_Q if s.node < 0 else worlds.quat[s.node] for s in slots]
    _note_scale(worlds, ctx)
    anims = _animations(scene, slots, rest_q, conv, unit, left, ctx)
    ctx.note("pmf.conventions_written", f"written with Euler order {conv.euler_order}, angles in "
             f"{unit}, root position {conv.root_position}, {conv.handedness}-handed, "
             f"{'clockwise' if conv.winding == 'cw' else 'counter-clockwise'} front faces", "info")
    return PmfDocument(pieces=pieces, animations=anims)


def _translation(scene: Scene, slots: list[_Slot], s: _Slot, worlds: _Rest,
                 left: bool) -> npt.NDArray[np.float32]:
    if s.node < 0:
        return np.zeros(3, dtype=np.float32)
    local = _local_translation(scene.nodes[s.node])
    parent = slots[s.parent].node if s.parent >= 0 else -1
    # The offset in the parent piece's frame, which has the parent's rest rotation and scale
    # taken out: push the local offset through them.
    t = worlds.lin[parent] @ local if parent >= 0 else local
    if left:
        t[2] = -t[2]
    return t.astype(np.float32)


def _local_translation(node: Node) -> F64:
    if node.matrix is not None:
        return np.array(np.asarray(node.matrix, dtype=np.float64)[:3, 3])
    return np.array(node.translation, dtype=np.float64)


def _vertices(s: _Slot, left: bool, reverse: bool, flip_v: bool, index: int) -> Any:
    if not s.pos:
        return np.zeros(0, dtype=VERTEX)
    pos = np.concatenate(s.pos)
    nrm = np.concatenate(s.nrm)
    uv = np.concatenate(s.uv)
    if len(pos) > MAX_VERTICES:
        raise LimitError(FMT, "too many vertices for one piece", field=f"pieces[{index}]",
                         expected=f"<= {MAX_VERTICES}", actual=len(pos))
    if left:
        pos[:, 2] *= -1
        nrm[:, 2] *= -1
    if reverse:
        order = np.arange(len(pos)).reshape(-1, 3)[:, [0, 2, 1]].reshape(-1)
        pos, nrm, uv = pos[order], nrm[order], uv[order]
    if flip_v:
        uv = np.column_stack([uv[:, 0], 1.0 - uv[:, 1]])
    return make_vertices(pos, nrm, uv)


def _note_scale(worlds: _Rest, ctx: Context) -> None:
    if not len(worlds.scale):
        return
    scaled = int(np.sum(np.any(np.abs(np.abs(worlds.scale) - 1.0) > 1e-6, axis=1)))
    if scaled:
        ctx.note("pmf.scale_baked", f"{scaled} pieces had a rest scale: it was baked into "
                 "their vertices and offsets (PMF stores no scale)")
    rotated = int(np.sum(np.abs(np.abs(worlds.quat[:, 3]) - 1.0) > 1e-9))
    if rotated:
        ctx.note("pmf.rest_rotation_baked", f"{rotated} pieces had a rest rotation: it was baked "
                 "into their vertices (a PMF rest pose has no rotation)", "info")


def clip_fps(anim: Animation, ctx: Context) -> int:
    """The sampling rate: the option, the clip's own extras.fps, or the spacing of its keys."""
    opt = ctx.opt("fps")
    if opt is not None:
        fps = int(opt)
        if not 1 <= fps <= 255:
            msg = f"pmf: --fps must be 1..255, got {fps}"
            raise ValueError(msg)
        return fps
    extra = anim.extras.get("fps")
    if isinstance(extra, int | float) and 1 <= extra <= 255 and float(extra).is_integer():
        return int(extra)
    times = np.unique(np.concatenate([np.asarray(c.times, dtype=np.float64).reshape(-1)
                                      for c in anim.channels] or [np.zeros(0)]))
    steps = np.diff(times)
    steps = steps[steps > 1e-6]
    if not len(steps):
        return DEFAULT_FPS
    return int(np.clip(round(1.0 / float(steps.min())), 1, 255))


def _animations(scene: Scene, slots: list[_Slot], rest_q: list[Any], conv: Conventions,
                unit: str, left: bool, ctx: Context) -> list[PmfAnimation]:
    names = _names((a.name or f"clip{i}" for i, a in enumerate(scene.animations)),
                   "animation", ctx)
    out: list[PmfAnimation] = []
    dropped: set[str] = set()
    for ai, anim in enumerate(scene.animations):
        out.append(_clip(scene, slots, rest_q, anim, names[ai], conv, unit, left, ctx, dropped))
    for what in sorted(dropped):
        ctx.note("pmf.dropped_channels", f"{what} animation dropped (PMF animates rotations, "
                 "and the root's position, only)", covers=("channels",))
    return out


def _clip(scene: Scene, slots: list[_Slot], rest_q: list[Any], anim: Animation, name: bytes,
          conv: Conventions, unit: str, left: bool, ctx: Context,
          dropped: set[str]) -> PmfAnimation:
    fps = clip_fps(anim, ctx)
    chans = [c for c in anim.channels if len(c.times)]
    start = min((float(c.times[0]) for c in chans), default=0.0)
    end = max((float(c.times[-1]) for c in chans), default=0.0)
    count = round((end - start) * fps) + 1
    if count > MAX_FRAMES:
        raise LimitError(FMT, f"clip {anim.name!r} needs too many frames at {fps} fps (lower "
                         "--fps)", field="numFrames", expected=f"<= {MAX_FRAMES}", actual=count)
    t = start + np.arange(count, dtype=np.float64) / fps
    if start > 0:
        ctx.note("pmf.clip_shifted", f"clip {anim.name!r} starts at {start:g} s; PMF frame 0 "
                 "is its first key", "info")
    by_node: dict[tuple[int, str], Channel] = {(c.node, c.path): c for c in chans}
    root_node = slots[0].node
    for c in chans:
        if at_rest(scene, c):
            continue  # a channel holding the node's rest value moves nothing: nothing dropped
        if c.path == "scale":
            dropped.add("scale")
        elif c.path == "weights":
            dropped.add("morph weight")
        elif c.path == "translation" and c.node != root_node:
            dropped.add("non-root translation")
    n = len(slots)
    quats = np.tile(IDENTITY_Q, (count, n, 1))
    for i, s in enumerate(slots):
        ch = by_node.get((s.node, "rotation")) if s.node >= 0 else None
        if ch is None:
            continue  # no rotation channel: the piece stays at its rest pose (identity)
        local = sample_channel(ch, t)
        parent_q = rest_q[s.parent] if s.parent >= 0 else IDENTITY_Q
        inv = rest_q[i] * np.array([-1.0, -1.0, -1.0, 1.0])
        quats[:, i] = quat_multiply(quat_multiply(parent_q, local), inv)
    rot = quats_to_euler(snap_quat(quats, ROT_BITS), conv.euler_order, unit, left)
    root = _root_positions(scene, slots, by_node, t, conv)
    if left:
        root[:, 2] *= -1
    frames = np.zeros(count, dtype=frame_dtype(n))
    frames["rot"] = rot
    # Composed (sampled, less the rest translation): snapped on a grid, so the next
    # trip's float noise lands on the same grid point.
    frames["root"] = snap(root, 20)
    frames["flags"] = _frame_flags(anim, count, fps)
    loop = bool(anim.extras.get("loop", False))
    return PmfAnimation(name=name, flags=ANIM_LOOP if loop else 0, fps=fps, frames=frames)


def _root_positions(scene: Scene, slots: list[_Slot], by_node: dict[tuple[int, str], Channel],
                    t: F64, conv: Conventions) -> F64:
    node = slots[0].node
    if node < 0:
        return np.zeros((len(t), 3))
    rest = _local_translation(scene.nodes[node])
    ch = by_node.get((node, "translation"))
    pos = sample_channel(ch, t) if ch is not None else np.tile(rest, (len(t), 1))
    return np.asarray(pos - rest) if conv.root_position == "add" else np.asarray(pos)


def _frame_flags(anim: Animation, count: int, fps: int) -> npt.NDArray[np.uint8]:
    """Every frame a keyframe (so the editor regenerates nothing), unless the clip came from
    PMF at the same rate and length: then its own keyframe and event flags come back."""
    flags = np.full(count, FRAME_KEY, dtype=np.uint8)
    ex = anim.extras
    same = ex.get("frame_count") == count and ex.get("fps") == fps
    keys = ex.get("keyframes")
    if same and isinstance(keys, list):
        flags[:] = 0
        idx = np.asarray([k for k in keys if isinstance(k, int) and 0 <= k < count], np.int64)
        flags[idx] |= FRAME_KEY
    events = ex.get("events")
    if isinstance(events, list):
        ev = np.asarray([k for k in events if isinstance(k, int) and k >= 0], np.float64)
        src_fps = ex.get("fps")
        if isinstance(src_fps, int) and src_fps > 0 and src_fps != fps:
            # Resampled at another rate: an event stays at its time, on the nearest frame.
            ev = np.round(ev / src_fps * fps)
        idx = ev[ev < count].astype(np.int64)
        flags[idx] |= FRAME_EVENT
    return flags
