"""Scene -> PET document (the inverse of scene.py), following the writer rules of spec §E.

Version 1.3 unless ``version`` says otherwise; the kind from ``kind`` or the destination's
extension decides which sections are written (§B.2). Skinned meshes keep their skeleton (the
first skin's joints become the bones), weights are quantized to bytes that sum to exactly 255,
vertices are stored in their main bone's space and triangles are reversed back to D3D order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError, LimitError
from ...fileio import safe_name
from ...registry import Context, Files
from ...scene import Image, Material, Scene
from ...scene.math import snap, snap_quat, vertex_normals, world_matrices
from ...scene.skinning import safe_inverse
from ...textures import encode_png, image_rgba
from .animation import QUAT_BITS, animations
from .document import (
    BoneSection,
    CollBox,
    CollSection,
    ExtrSection,
    FramSection,
    MeshSection,
    Payload,
    PetDocument,
    Section,
    TextSection,
    Texture,
    Vers,
    corner_records,
)
from .extras import fanm_from, fram_from, skins_from, smtl_from, texture_from, value_bytes
from .influences import fake_body_substitute
from .layout import (
    ENCODING,
    FLAG_CHARS,
    FMT,
    FRAME_LIMIT,
    KIND_SECTIONS,
    MAX_BONE_ID,
    SKIN_DT,
    VERSIONS,
    WRITE_ORDER,
)
from .read import kind_of
from .skeleton import S4, bone_rows
from .write import write

F64 = npt.NDArray[np.float64]
FLIP = np.array([1.0, 1.0, -1.0])
POS_BITS = 20  # snap() grid of bone-space positions: 2e-6 below 2 units, 20 bits above
_IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".dds", ".tga", ".bmp")


def parse_version(v: Any) -> tuple[int, int]:
    if v is None:
        return (1, 3)
    text = str(v).strip()
    try:
        major, minor = (int(x) for x in text.split(".", 1))
    except ValueError:
        major, minor = -1, -1
    if (major, minor) not in VERSIONS:
        raise LimitError(FMT, "PET version to write", field="version", expected="1.0..1.3",
                         actual=text)
    return (major, minor)


def encode_name(name: str, ctx: Context, what: str) -> bytes:
    raw = name.replace("\0", "").encode(ENCODING, errors="replace")
    if raw.decode(ENCODING, errors="replace") != name.replace("\0", ""):
        ctx.note("pet.name_not_cp949", f"{what} {name!r} has characters CP949 cannot hold: "
                 "replaced with '?'", covers=("names",))
    return raw


class _Bones:
    """The bone list: scene nodes, their file-space bind world matrices and parents."""

    def __init__(self) -> None:
        self.nodes: list[int | None] = []
        self.names: list[bytes] = []
        self.parents: list[int] = []
        self.world: list[F64] = []  # file space (S W S)

    def add(self, node: int | None, name: bytes, parent: int, world_file: F64) -> int:
        self.nodes.append(node)
        self.names.append(name)
        self.parents.append(parent)
        self.world.append(world_file)
        return len(self.nodes) - 1


def from_scene(scene: Scene, ctx: Context, images: dict[str, Image] | None = None
               ) -> PetDocument:
    """The document, and in ``images`` the texture files to write beside it (by TEXT name)."""
    images = {} if images is None else images
    kind = kind_of(ctx)
    version = parse_version(ctx.opt("pet_version"))
    stem = ctx.path.stem if ctx.path is not None else "model"
    allowed = KIND_SECTIONS[kind]
    extras = _pet_extras(scene)
    bones, skin = _collect_bones(scene, ctx, kind, stem)
    secs: dict[bytes, Payload] = {b"VERS": Vers(bytes([version[1], version[0], 0xFE, 0xFF]))}
    if b"MESH" in allowed:
        # The TEXT list as it was (unused entries included) when the scene came from a PET.
        texts = [t for t in (texture_from(r) for r in extras.get("text", []) or [])
                 if t is not None][:255] if isinstance(extras.get("text"), list) else []
        mesh = _mesh(scene, ctx, bones, skin, version, kind, texts, images)
        if mesh is not None:
            secs[b"MESH"] = mesh
            secs[b"TEXT"] = TextSection(texts)
    secs[b"BONE"] = _bone_section(bones, kind, version, scene)
    if b"ANIM" in allowed and scene.animations:
        anim, moti = animations(scene, ctx, bones.nodes, bones.names, version)
        if anim.tracks:
            secs[b"ANIM"] = anim
        if moti is not None and (anim.tracks or any(
                isinstance(a.extras.get("pet_motion"), dict) for a in scene.animations)):
            secs[b"MOTI"] = moti
    _extras_sections(secs, scene, extras, bones)
    fram = secs.get(b"FRAM")
    if isinstance(fram, FramSection) and len(fram.frames) > FRAME_LIMIT[version[1]]:
        # pet-source_tools' writer limit on frame scripts per version (§B.10).
        raise LimitError(FMT, "too many FRAM frame scripts for this version", field="FRAM",
                         expected=f"<= {FRAME_LIMIT[version[1]]}", actual=len(fram.frames))
    order = [f for f in WRITE_ORDER if f in allowed and f in secs]
    dropped = [f.decode() for f in secs if f not in allowed]
    if scene.meshes and b"MESH" not in allowed:
        dropped.append("MESH (the meshes)")
    if scene.animations and b"ANIM" not in allowed:
        dropped.append("ANIM (the animations)")
    if dropped:
        ctx.note("pet.sections_dropped", f"a .{kind} holds no {', '.join(dropped)}: left out",
                 covers=_dropped_covers(dropped))
    return PetDocument(kind=kind, version=version,
                       sections=[Section(f, secs[f]) for f in order])


def _dropped_covers(dropped: list[str]) -> tuple[str, ...]:
    out: tuple[str, ...] = ()
    if any(d.startswith("MESH") for d in dropped):
        out += ("meshes", "primitives", "materials", "textures", "colors", "texcoords",
                "normals", "tangents", "skins", "targets", "names")
    if any(d.startswith("ANIM") for d in dropped):
        out += ("clips", "channels")
    return out


def _pet_extras(scene: Scene) -> dict[str, Any]:
    ex = scene.extras.get("pet")
    if isinstance(ex, dict):
        for v in ex.values():
            if isinstance(v, dict):
                return v
    return {}


# -- bones ----------------------------------------------------------------------------------------
def _collect_bones(scene: Scene, ctx: Context, kind: str, stem: str) -> tuple[_Bones, int | None]:
    bones = _Bones()
    worlds = world_matrices(scene)
    parents = scene.parents()
    skin_i = next((n.skin for n in scene.nodes if n.skin is not None and n.mesh is not None),
                  0 if scene.skins else None)
    if skin_i is not None and 0 <= skin_i < len(scene.skins):
        skin = scene.skins[skin_i]
        ibm = skin.inverse_bind_matrices
        keep = list(skin.joints)
        world = [safe_inverse(np.asarray(ibm[k], np.float64)[None])[0] if ibm is not None
                 else worlds[j] for k, j in enumerate(keep)]
        unnamed = [f"bone{k}" for k in range(len(keep))]
    else:
        skin_i = None
        # No skin: every node that holds no mesh is a bone (rigid parts follow their parent),
        # and so is every animated mesh node: its vertices are bound wholly to its own bone,
        # so a node (rigid) animation survives as bone tracks.
        animated = {c.node for a in scene.animations for c in a.channels
                    if c.path != "weights"}
        keep = [i for i in scene.walk() if scene.nodes[i].mesh is None or i in animated]
        world = [worlds[n] for n in keep]
        unnamed = [f"node{n}" for n in keep]
    index: dict[int, int] = {}
    for k, n in enumerate(keep):
        index.setdefault(n, k)  # a joint listed twice: its first place is its bone
    for k, n in enumerate(keep):
        p = parents[n]
        while p is not None and p not in index:  # the nearest ancestor that is a bone
            p = parents[p]
        bones.add(n, encode_name(scene.nodes[n].name or unnamed[k], ctx, "bone name"),
                  -1 if p is None else index[p], S4 @ world[k] @ S4)
    want = stem.upper().encode(ENCODING, "replace") if kind == "mpet" else None
    if not bones.names or (want is not None and want not in bones.names):
        # #1's exporter: an .mpet's skin list points at a bone named after the file.
        bones.add(None, want or stem.encode(ENCODING, "replace"), -1, np.eye(4))
    if len(bones.names) > MAX_BONE_ID + 1:
        raise LimitError(FMT, "too many bones for the 0xFE bone-id escape", field="BONE.count",
                         expected=f"<= {MAX_BONE_ID + 1}", actual=len(bones.names))
    return bones, skin_i


def _local_rows(world: F64, parents: list[int]) -> npt.NDArray[np.float32]:
    """The (B, 12) float32 BONE rows (row-vector 4x3, local to the parent) of file-space
    world matrices, on the grid of snap(): the reader chains the rows into world matrices and
    float32 inverse binds, and the writer takes the bones back from those, a few ulps off;
    on the grid they come back the same, so a second trip writes the same rows."""
    local = world.copy()
    for i, p in enumerate(parents):
        if p >= 0:
            local[i] = safe_inverse(world[p][None])[0] @ world[i]
    rows = snap(bone_rows(local), POS_BITS)
    # Translations come from world placements, whose float32 noise scales with the model.
    rows[:, 9:] = snap_within(rows[:, 9:], world[:, :3, 3], POS_BITS)
    return rows.astype(np.float32)


def snap_within(x: F64, ref: F64, bits: int) -> F64:
    """``x`` on one grid of ``bits`` significant bits of the largest magnitude in ``x`` and
    ``ref`` (as snap() below 2): values composed from float32 model-space data carry noise of
    the model's size, not of their own."""
    top = max(float(np.max(np.abs(x), initial=0.0)), float(np.max(np.abs(ref), initial=0.0)))
    step = np.ldexp(1.0, max(int(np.frexp(top)[1]), 1) - bits) if np.isfinite(top) else 1.0
    return np.asarray(np.round(x / step) * step + 0.0)


def _bone_section(bones: _Bones, kind: str, version: tuple[int, int],
                  scene: Scene) -> BoneSection:
    n = len(bones.names)
    out = BoneSection(names=list(bones.names), parents=list(bones.parents),
                      parent_wide=[p > 0xFD for p in bones.parents])
    if kind == "apet":
        return out
    world = np.stack(bones.world) if n else np.zeros((0, 4, 4))
    out.matrices = _local_rows(world, bones.parents)
    if version >= (1, 3):
        extra = np.full(n, -1.0, np.float32)
        for i, node in enumerate(bones.nodes):
            if node is not None:
                v = scene.nodes[node].extras.get("pet_bone_extra")
                if isinstance(v, int | float):
                    extra[i] = v
        out.extra = extra
    return out


# -- mesh -----------------------------------------------------------------------------------------
def _mesh(scene: Scene, ctx: Context, bones: _Bones, skin_i: int | None,
          version: tuple[int, int], kind: str, texts: list[Texture],
          images: dict[str, Image]) -> MeshSection | None:
    worlds = world_matrices(scene)
    parents = scene.parents()
    parts: list[dict[str, Any]] = []
    mat_tex: dict[int | None, int] = {}
    mat_spec: dict[int | None, int] = {}
    nsets = 0
    merged: set[int] = set()
    for ni in scene.walk():
        node = scene.nodes[ni]
        if node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        skinned = skin_i is not None and node.skin == skin_i
        if node.skin is not None and not skinned:
            ctx.note("pet.skin_dropped", f"mesh node {node.name!r} uses another skin: written "
                     "rigid in its bind pose (a PET file has one skeleton)", covers=("skins",))
        rigid_bone = _rigid_bone(ni, parents, bones)
        for prim in scene.meshes[node.mesh].primitives:
            if prim.mode != 4:
                ctx.note("pet.primitive_mode", f"a primitive of mode {prim.mode} is not "
                         "triangles: left out", covers=("primitives",))
                continue
            # Vertex colours are named set by set by the loss check (scene/loss.py).
            if prim.targets and not any(n.code == "pet.targets_dropped" for n in ctx.notes):
                ctx.note("pet.targets_dropped", "PET holds no morph targets: left out",
                         covers=("targets",))
            part = _part(prim, skinned, worlds[ni], rigid_bone, ctx)
            if part is None:
                continue
            mi = prim.material
            if mi not in mat_tex:
                mat_tex[mi] = _texture_for(scene, mi, texts, ctx, images)
                mat_spec[mi] = _spec_for(scene, mi)
            part["tex"], part["spec"] = mat_tex[mi], mat_spec[mi]
            gw = node.extras.get("pet_global_weight")
            part["global_weight"] = float(gw) if isinstance(gw, int | float) else None
            nsets = max(nsets, len(part["uv"]))
            parts.append(part)
            merged.add(node.mesh)
    if not parts:
        return None
    if len(merged) > 1:  # nothing of theirs is lost but the names (the loss check says so)
        ctx.note("pet.meshes_merged", f"{len(merged)} meshes merged into the one mesh a PET "
                 "file holds", level="info", covers=("meshes",))
    # In the order the reader gives primitives back (by texture, none first, then specular),
    # so a second trip through glTF writes the triangles in the same order.
    parts.sort(key=lambda p: (-1 if p["tex"] == 0xFF else p["tex"], p["spec"]))
    if len(texts) > 127:
        ctx.note("pet.texture_index_high", f"{len(texts)} textures: indices above 127 read as "
                 "negative (no texture) in readers that take them as signed bytes (spec §E)")
    if version < (1, 2) and nsets > 1:
        ctx.note("pet.uv_sets_dropped", f"PET {version[0]}.{version[1]} holds one UV set: "
                 f"{nsets - 1} more dropped", covers=("texcoords",))
        nsets = 1
    if nsets > 255:
        raise LimitError(FMT, "too many UV sets", field="MESH.nuv", expected="<= 255",
                         actual=nsets)
    return _assemble(parts, bones, version, kind, max(nsets, 1))


def _rigid_bone(ni: int, parents: list[int | None], bones: _Bones) -> int:
    p: int | None = ni
    while p is not None:
        if p in bones.nodes:
            return bones.nodes.index(p)
        p = parents[p]
    return len(bones.names) - 1 if bones.nodes and bones.nodes[-1] is None else 0


def _part(prim: Any, skinned: bool, world: F64, rigid_bone: int,
          ctx: Context) -> dict[str, Any] | None:
    pos = np.asarray(prim.positions, np.float64).reshape(-1, 3)
    tris = prim.triangles().astype(np.int64)
    if not len(tris):
        return None
    nrm = (np.asarray(prim.normals, np.float64) if prim.normals is not None
           else vertex_normals(pos, tris).astype(np.float64))
    if not skinned:
        pos = pos @ world[:3, :3].T + world[:3, 3]
        nrm = nrm @ safe_inverse(world[None])[0][:3, :3]  # inverse transpose, row form
    if skinned and prim.joints is not None and prim.weights is not None:
        joints = np.asarray(prim.joints, np.int64)
        weights = np.asarray(prim.weights, np.float64)
    else:
        joints = np.full((len(pos), 1), rigid_bone, np.int64)
        weights = np.ones((len(pos), 1))
    return {"pos": pos, "nrm": nrm, "tris": tris, "joints": joints, "weights": weights,
            "uv": [np.asarray(t, np.float64) for t in prim.texcoords]}


def quantize_weights(joints: npt.NDArray[np.int64],
                     weights: F64) -> tuple[Any, Any, Any]:
    """Influences sorted by weight (the main bone first), as bytes that sum to exactly 255;
    influences that round to 0 are dropped (the first is always kept)."""
    w = np.clip(np.nan_to_num(weights), 0.0, None)
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total > 0, w / np.where(total > 0, total, 1.0), 0.0)
    w[total[:, 0] <= 0, 0] = 1.0
    order = np.argsort(-w, axis=1, kind="stable")
    w = np.take_along_axis(w, order, axis=1)
    j = np.take_along_axis(joints, order, axis=1)
    q = np.floor(w * 255.0 + 0.5).astype(np.int64)
    q[:, 0] = 255 - q[:, 1:].sum(axis=1)
    # Rounding up many small weights can eat the first one; then give the excess back.
    short = q[:, 0] < 1
    while np.any(short):
        k = np.argmax(q * short[:, None] * (np.arange(q.shape[1]) > 0), axis=1)
        rows = np.flatnonzero(short)
        q[rows, k[rows]] -= 1
        q[rows, 0] += 1
        short = q[:, 0] < 1
    # The first byte takes the rounding rest, so equal weights (0.5, 0.5) give (127, 128): the
    # largest byte goes first, as the reader sorts them, or the next trip picks another main
    # bone (and bone space) for the vertex.
    order = np.argsort(-q, axis=1, kind="stable")
    q = np.take_along_axis(q, order, axis=1)
    j = np.take_along_axis(j, order, axis=1)
    count = (q > 0).sum(axis=1)
    # Zero weights sit at the end after sorting (they were the smallest).
    j = np.where(q > 0, j, 0)
    return count.astype(np.int32), q.astype(np.uint8), j


def _assemble(parts: list[dict[str, Any]], bones: _Bones, version: tuple[int, int], kind: str,
              nsets: int) -> MeshSection:
    pos = np.concatenate([p["pos"] for p in parts]) * FLIP
    nrm = np.concatenate([p["nrm"] for p in parts]) * FLIP
    width = max(p["joints"].shape[1] for p in parts)
    joints, weights = (np.concatenate([np.pad(p[k], ((0, 0), (0, width - p[k].shape[1])))
                                       for p in parts]) for k in ("joints", "weights"))
    uvs = np.zeros((len(pos), nsets, 2))
    base = 0
    tris_l, tex_l = [], []
    for p in parts:
        n = len(p["pos"])
        for k, t in enumerate(p["uv"][:nsets]):
            uvs[base:base + n, k] = t
        tris_l.append(p["tris"] + base)
        tex_l.append(np.full(len(p["tris"]), p["tex"], np.uint8))
        base += n
    nb = len(bones.names)
    joints = np.where((joints >= 0) & (joints < nb), joints, 0)
    count, q, j = quantize_weights(joints, weights)
    world = np.stack(bones.world)
    main = j[:, 0]
    inv_all = safe_inverse(world)
    inv = inv_all[main]
    # Bone-space positions are composed (inverse bone @ world): on the grid of snap() they come
    # out the same on the next trip, and so sort the same in the vertex merge below.
    local = snap_within(np.einsum("nij,nj->ni", inv[:, :3, :3], pos) + inv[:, :3, 3], pos,
                        POS_BITS)
    if version < (1, 1):
        # v1.0 normals are stored in the main bone's space (or the fake body bone's, §B.8).
        rot = fake_body_substitute(bones.names, bones.parents, main, nb)[main]
        nrm = np.einsum("nij,nj->ni", inv_all[rot, :3, :3], nrm)
    # Unit normals on snap_quat's grid (a zero fourth component): the reader's float32 normals
    # normalized again on the next trip land on the same grid point.
    nrm = snap_quat(np.pad(nrm, ((0, 0), (0, 1))), QUAT_BITS)[:, :3]
    # One PET vertex per distinct (stored position, influences): glTF split them per corner.
    key = np.concatenate([local, q.astype(np.float64), j.astype(np.float64)], axis=1)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    tris = np.concatenate(tris_l)[:, [0, 2, 1]]  # back to D3D (clockwise) order
    corners = tris.reshape(-1)
    spec = np.concatenate([np.full(len(p["tris"]), p["spec"], np.uint8) for p in parts])
    mesh = MeshSection(
        positions=local[first].astype(np.float32), inf_count=count[first],
        inf_weight=q[first], inf_bone=j[first].astype(np.int32),
        inf_wide=j[first] > 0xFD, pad=np.zeros((len(first), 2), np.uint8),
        corners=corner_records(inverse[corners], nrm[corners], uvs[corners]),
        texture=np.concatenate(tex_l),
        specular=spec if version >= (1, 2) else None)
    if kind == "mpet":
        _mpet_skin(mesh, parts, bones)
    return mesh


def _mpet_skin(mesh: MeshSection, parts: list[dict[str, Any]], bones: _Bones) -> None:
    """An .mpet's one skin record (its target bone: the last bone without a node, else the
    last bone) and its global weight per vertex."""
    nv, nf = len(mesh.positions), len(mesh.texture)
    skins = np.zeros(1, SKIN_DT)
    target = max((i for i, node in enumerate(bones.nodes) if node is None),
                 default=len(bones.names) - 1)
    skins[0] = (min(target, 255), b"\0\0\0", 0, nv, 0, nf)
    mesh.skins = skins
    gw = next((p["global_weight"] for p in parts if p.get("global_weight") is not None), 0.0)
    mesh.global_weight = np.full(nv, gw, np.float32)


def _texture_for(scene: Scene, mi: int | None, texts: list[Texture], ctx: Context,
                 images: dict[str, Image]) -> int:
    """The TEXT index for a material (0xFF = none), adding the entry on first use."""
    if mi is None or not 0 <= mi < len(scene.materials):
        return 0xFF
    mat = scene.materials[mi]
    ref = mat.base_color_texture
    img = (scene.images[ref.image] if ref is not None and 0 <= ref.image < len(scene.images)
           else None)
    rec = mat.extras.get("pet_texture")
    if rec is not None:
        t = texture_from(rec)
        if t is not None:
            if img is not None:
                images.setdefault(t.name, img)
            return _add_text(texts, t)
    if img is None:
        return 0xFF
    stem = ctx.path.stem if ctx.path is not None else "model"
    name = texture_name(img, mat, len(texts), stem)
    raw = encode_name(name, ctx, "texture name")
    if len(raw) > 31:
        short = (f"{name[:1] if name[:1] in FLAG_CHARS else ''}{stem[:16]}_tex{len(texts):02d}"
                 f"{Path(name).suffix.lower() or '.png'}")
        ctx.note("pet.texture_renamed", f"texture name {name!r} is longer than 31 bytes: "
                 f"written as {short!r}")
        raw = short.encode()
    images.setdefault(raw.decode(ENCODING, "replace"), img)
    r, g, b, _ = (round(min(max(c, 0.0), 1.0) * 255) for c in mat.base_color_factor)
    return _add_text(texts, Texture(raw.ljust(32, b"\0"), 0, 0, b"\0\0",
                                    0xFF000000 | (r << 16) | (g << 8) | b, len(texts)))


def texture_name(img: Image, mat: Material, index: int, stem: str) -> str:
    """The file name a texture is written as: ``<stem>_`` (the output's stem, so two models in
    one folder never share a texture file) and the image's own name where it has a usable one,
    flagged by the material's alpha mode (``]`` blend, ``[`` mask) as Pangya names are."""
    src = (img.uri or "").replace("\\", "/").rsplit("/", 1)[-1]
    if src.startswith("data:") or not src.lower().endswith(_IMAGE_EXTS):
        src = ""
    # An image with pixels (decoded, or a PNG or JPEG kept encoded: ``size`` reads its header)
    # can be written as PNG.
    if img.size is not None and not src.lower().endswith(".png"):
        src = Path(src).stem + ".png" if src else ""
    if img.data is not None and img.mime_type == "image/jpeg" and not src.lower().endswith(
            (".jpg", ".jpeg")):
        src = (Path(src).stem if src else "") + ".jpg"
    if not src or src.startswith("."):
        base = (img.name or mat.name or f"tex{index:02d}").replace("/", "_")
        src = base + (".jpg" if img.mime_type == "image/jpeg" else ".png")
    flags = len(src) - len(src.lstrip(FLAG_CHARS))
    if not src[flags:].lower().startswith(stem.lower() + "_"):
        src = f"{src[:flags]}{stem}_{src[flags:]}"
    if not any(c in FLAG_CHARS for c in src[:5]):
        if mat.alpha_mode == "BLEND":
            src = "]" + src
        elif mat.alpha_mode == "MASK":
            src = "[" + src
    return src


def _add_text(texts: list[Texture], t: Texture) -> int:
    for i, u in enumerate(texts):
        if u.name_raw == t.name_raw and u.group == t.group:
            return i
    if len(texts) >= 255:
        raise LimitError(FMT, "too many textures for the u8 texture index", field="TEXT.count",
                         expected="<= 255", actual=len(texts) + 1)
    texts.append(t)
    return len(texts) - 1


def _spec_for(scene: Scene, mi: int | None) -> int:
    if mi is None or not 0 <= mi < len(scene.materials):
        return 0xFF
    v = scene.materials[mi].extras.get("pet_smtl", -1)
    return int(v) & 0xFF if isinstance(v, int) and 0 <= v < 255 else 0xFF


# -- sections kept in extras ---------------------------------------------------------------------
def _extras_sections(secs: dict[bytes, Payload], scene: Scene, extras: dict[str, Any],
                     bones: _Bones) -> None:
    smtl, fanm, fram = (smtl_from(extras.get("smtl")), fanm_from(extras.get("fanm")),
                        fram_from(extras.get("fram")))
    if smtl is not None and smtl.materials:
        secs[b"SMTL"] = smtl
    if fanm is not None and len(fanm.entries):
        secs[b"FANM"] = fanm
    if fram is not None and fram.frames:
        secs[b"FRAM"] = fram
    extr = extras.get("extr")
    if isinstance(extr, list) and extr:
        ids = [int(x) for x in extr if isinstance(x, int) and -1 <= x <= MAX_BONE_ID]
        secs[b"EXTR"] = ExtrSection(ids, [x > 0xFD for x in ids])
    skins = skins_from(extras.get("skins"))
    mesh = secs.get(b"MESH")
    if isinstance(mesh, MeshSection) and mesh.skins is not None and skins is not None and len(
            skins) == 1 and int(skins[0]["vtx_count"]) == mesh.vertex_count:
        mesh.skins = skins
    boxes = []
    for node in scene.nodes:
        c = node.extras.get("pet_coll")
        if isinstance(c, dict):
            boxes.append(_box(c))
    if boxes:
        secs[b"COLL"] = CollSection(boxes)


def _box(c: dict[str, Any]) -> CollBox:
    box = np.zeros(6, np.float32)
    raw = c.get("box_raw")
    try:
        if isinstance(raw, str) and len(raw) == 48:
            box = np.frombuffer(bytes.fromhex(raw), "<f4").copy()
        else:
            lo, hi = np.asarray(c["min"], np.float64), np.asarray(c["max"], np.float64)
            box = np.array([lo[0], lo[1], -hi[2], hi[0], hi[1], -lo[2]], np.float32)
    except (KeyError, ValueError, TypeError, IndexError):
        pass

    def num(key: str, default: int) -> int:
        v = c.get(key, default)
        return int(v) & 0xFFFFFFFF if isinstance(v, int) else default

    return CollBox(num("shape", 0), num("show", 1), value_bytes(c.get("box_name")),
                   value_bytes(c.get("bone_name")), value_bytes(c.get("option1")),
                   value_bytes(c.get("option2")), box)


def save(scene: Scene, ctx: Context) -> Files:
    """The PET file and, beside it, the textures its TEXT section names."""
    name = ctx.path.name if ctx.path is not None else "out.pet"
    images: dict[str, Image] = {}
    doc = from_scene(scene, ctx, images)
    files: Files = {name: write(doc, ctx)}
    for tex_name, img in images.items():
        data = _image_bytes(tex_name, img, ctx)
        if data is not None:
            try:
                files.setdefault(safe_name(tex_name), data)
            except ValueError:
                ctx.note("pet.texture_not_written", f"texture name {tex_name!r} is unusable",
                         covers=("textures",))
    return files


def _image_bytes(name: str, img: Image, ctx: Context) -> bytes | None:
    ext = Path(name).suffix.lower()
    if img.data is not None and ((ext == ".png" and img.mime_type == "image/png")
                                 or (ext in (".jpg", ".jpeg") and img.mime_type == "image/jpeg")):
        return img.data
    if ext == ".png" and img.size is not None:
        try:
            px = image_rgba(img, "pet")
        except FormatError:  # checksums right, pixels not: as an image with no pixels
            px = None
        if px is not None:
            return encode_png(px)
    if img.data is None and img.pixels is None:
        ctx.note("pet.texture_not_written", f"texture {name!r} has no pixels to write",
                 covers=("textures",))
    else:
        ctx.note("pet.texture_not_written", f"texture {name!r}: gamemesh writes .png/.jpg "
                 "textures only; the file is named but not written", covers=("textures",))
    return None
