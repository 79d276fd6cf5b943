"""Scene (glTF conventions) -> Papa documents, laid out as papatran would write them.

A unit becomes the model file, one ``<name>_anim_<clip>.papa`` per animation (resampled at 60 fps,
absolute local poses, tracks named by bone) and ``<name>_diffuse.papa`` (DXT5 sRGB) plus
``_mask``/``_material`` (DXT1) from the material's images. Axes go back through C^T:
(x, y, z) -> (x, -z, y).

PA's limits are checked before anything is written: at most 256 bones (LimitError), at most 32
weighted bones per mesh binding (split into several bindings, noted), at most 4 influences (the
4 largest kept and renormalized, noted), triangles only (LimitError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...scene import Channel, Image, Primitive, Scene
from ...scene.math import (
    local_matrix,
    matrices_to_trs,
    matrix_to_trs,
    trs_to_matrices,
    vertex_normals,
    world_matrices,
)
from ...scene.sampling import sample_channel
from ...scene.skinning import limit_influences, safe_inverse
from ...textures import decode_image
from . import layout as lay
from . import textures as tx
from .document import (
    NONE16,
    Animation,
    IndexBuffer,
    Material,
    Mesh,
    MeshBinding,
    Model,
    PapaDocument,
    PapaString,
    Skeleton,
    Texture,
    VertexBuffer,
)
from .to_scene import AXES, continuous_quats
from .write import write

F64 = npt.NDArray[np.float64]
TEXTURE_ROLES = ("diffuse", "mask", "material")
MAX_BONES = 256
MAX_BINDING_BONES = 32
FPS = 60


def to_pa(v: npt.ArrayLike) -> F64:
    a = np.asarray(v, dtype=np.float64)
    return np.stack([a[..., 0], -a[..., 2], a[..., 1]], axis=-1)


def mat_to_pa(m: npt.ArrayLike) -> F64:
    """A glTF-space 4x4 to PA space (still a mathematical matrix)."""
    return np.asarray(AXES.T @ np.asarray(m, dtype=np.float64) @ AXES)


def col16(m: F64) -> npt.NDArray[np.float32]:
    """A mathematical 4x4 to papa's column-major 16 floats."""
    return np.asarray(m, dtype=np.float64).T.reshape(16).astype("<f4")


# -- the unit ------------------------------------------------------------------------------
def from_scene(scene: Scene, ctx: Context) -> PapaDocument:
    """The main document: the model, or the animations / the texture when that is all there is."""
    exp = _Exporter(scene, ctx)
    if exp.mesh_nodes():
        if scene.animations:
            ctx.note("papa.animations_separate", "animations are written as <name>_anim_<clip>"
                     ".papa files by save(), not into the model document", "info")
        return exp.model_doc()
    if scene.animations:
        return exp.animation_doc(list(range(len(scene.animations))))
    tex = exp.texture_docs(ctx.path.stem if ctx.path is not None else "texture")
    if tex:
        return next(iter(tex.values()))
    ctx.note("papa.empty_scene", "the scene has no meshes, animations or images: header-only "
             "file", "info")
    return PapaDocument()


def save(scene: Scene, ctx: Context) -> dict[str, bytes]:
    stem = ctx.path.stem if ctx.path is not None else "model"
    main = ctx.path.name if ctx.path is not None else "model.papa"
    exp = _Exporter(scene, ctx)
    role = next((r for r in TEXTURE_ROLES if stem.endswith(f"_{r}")), None)
    if role is not None and scene.images:
        # PA's naming: a destination named x_diffuse/_mask/_material.papa is a texture file.
        doc = exp.role_texture_doc(role, stem)
        if doc is not None:
            return {main: write(doc, ctx)}
    if not exp.mesh_nodes():
        return {main: write(from_scene(scene, ctx), ctx)}
    files = {main: write(exp.model_doc(), ctx)}
    if not ctx.opt("no_animations", False):
        used: set[str] = set()
        for k, anim in enumerate(scene.animations):
            clip = _clip_name(anim.name or f"clip{k}", used)
            files[f"{stem}_anim_{clip}.papa"] = write(exp.animation_doc([k]), ctx)
    if not ctx.opt("no_textures", False):
        for suffix, doc in exp.texture_docs(stem).items():
            files[f"{stem}_{suffix}.papa"] = write(doc, ctx)
    return files


def _clip_name(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "clip"
    out, n = base, 1
    while out in used:
        n += 1
        out = f"{base}_{n}"
    used.add(out)
    return out


@dataclass
class _Part:
    """One mesh binding to write: PA-space vertex attributes and triangle groups."""

    name: str
    positions: F64
    normals: F64
    uv0: F64
    uv1: F64 | None
    colors: npt.NDArray[np.uint8] | None
    bones: npt.NDArray[np.int64] | None  # (N, 4) skeleton bone indices
    weights: npt.NDArray[np.float64] | None  # (N, 4)
    groups: list[tuple[int, npt.NDArray[np.int64]]]  # (papa material, flat indices)
    mesh2model: F64


class _Exporter:
    def __init__(self, scene: Scene, ctx: Context) -> None:
        self.scene, self.ctx = scene, ctx
        self.worlds = world_matrices(scene)
        self.parents = scene.parents()
        self.joints = self._joint_order()
        self.bone_of = {n: i for i, n in enumerate(self.joints)}
        self.bone_parent = [self._bone_parent(n) for n in self.joints]
        self.bone_names = self._bone_names()

    def note(self, code: str, message: str, level: str = "warning") -> None:
        self.ctx.note(f"papa.{code}", message, "info" if level == "info" else "warning")

    def mesh_nodes(self) -> list[int]:
        return [i for i in self.scene.walk() if self.scene.nodes[i].mesh is not None
                and 0 <= int(self.scene.nodes[i].mesh or 0) < len(self.scene.meshes)]

    # -- skeleton ----------------------------------------------------------------------------
    def _bone_names(self) -> list[str]:
        """PA binds animation tracks by bone name, so names must be unique."""
        out: list[str] = []
        seen: set[str] = set()
        renamed = 0
        for b, node in enumerate(self.joints):
            base = self.scene.nodes[node].name or f"bone{b}"
            name, k = base, 1
            while name in seen:
                k += 1
                name = f"{base}_{k}"
            renamed += name != base
            seen.add(name)
            out.append(name)
        if renamed:
            self.note("bone_renamed", f"{renamed} bones share a name; suffixed (_2, _3...) "
                      "because PA binds animation tracks by name")
        return out

    def _joint_order(self) -> list[int]:
        joints: set[int] = set()
        for skin in self.scene.skins:
            joints.update(j for j in skin.joints if 0 <= j < len(self.scene.nodes))
        # Animated nodes that are not joints are bones too (a rigid part driven by a clip).
        for anim in self.scene.animations:
            joints.update(c.node for c in anim.channels
                          if 0 <= c.node < len(self.scene.nodes) and c.path != "weights"
                          and self.scene.nodes[c.node].mesh is None)
        order = [i for i in self.scene.walk() if i in joints]
        if len(order) > MAX_BONES:
            msg = "PA skeletons hold at most 256 bones"
            raise LimitError(lay.FMT, msg, field="skeleton.num_bones", expected=f"<= {MAX_BONES}",
                             actual=len(order))
        return order

    def _bone_parent(self, node: int) -> int:
        p = self.parents[node]
        while p is not None:
            if p in self.bone_of:
                return self.bone_of[p]
            p = self.parents[p]
        return -1

    def _rest_local(self, b: int) -> F64:
        """Bone b's rest transform relative to its parent bone (PA space)."""
        node = self.joints[b]
        p = self.bone_parent[b]
        world = self.worlds[node]
        local = world if p < 0 else safe_inverse(self.worlds[self.joints[p]]) @ world
        return mat_to_pa(local)

    def _ibms(self) -> F64:
        out = np.tile(np.eye(4), (len(self.joints), 1, 1))
        seen: set[int] = set()
        conflict = False
        for skin in self.scene.skins:
            ibm = skin.inverse_bind_matrices
            for k, node in enumerate(skin.joints):
                if node not in self.bone_of:
                    continue
                m = np.eye(4) if ibm is None or k >= len(ibm) else np.asarray(ibm[k], np.float64)
                b = self.bone_of[node]
                if b in seen:
                    conflict |= not np.allclose(out[b], mat_to_pa(m), atol=1e-4)
                    continue
                seen.add(b)
                out[b] = mat_to_pa(m)
        if conflict:
            self.note("bind_pose_conflict", "skins disagree on a joint's inverse bind matrix; "
                      "the first skin's is kept")
        return out

    def skeleton(self, doc: PapaDocument) -> Skeleton:
        n = len(self.joints)
        bones = np.zeros(n, dtype=lay.BONE)
        locals_ = np.stack([self._rest_local(b) for b in range(n)]) if n else np.zeros((0, 4, 4))
        t, q, s = matrices_to_trs(locals_)
        bones["name"] = [doc.add_string(name) for name in self.bone_names]
        bones["parent"] = self.bone_parent
        bones["translation"] = t
        bones["rotation"] = q
        ss = np.zeros((n, 3, 3))
        ss[:, [0, 1, 2], [0, 1, 2]] = s
        bones["shear_scale"] = ss.transpose(0, 2, 1).reshape(n, 9)
        bones["bind2bone"] = self._ibms().transpose(0, 2, 1).reshape(n, 16)
        return Skeleton(bones)

    # -- model -------------------------------------------------------------------------------
    def model_doc(self) -> PapaDocument:
        doc = PapaDocument()
        stem = self.ctx.path.stem if self.ctx.path is not None else (self.scene.name or "model")
        model = Model(doc.add_string(f"{stem}_mesh"), -1)
        if self.joints:
            doc.skeletons.append(self.skeleton(doc))
            model.skeleton = 0
        mat_index = self._materials(doc)
        for node in self.mesh_nodes():
            for part in self._parts(node, mat_index):
                for sub, bone_map in self._split(part):
                    self._emit(doc, model, sub, bone_map)
        doc.models.append(model)
        return doc

    def _materials(self, doc: PapaDocument) -> dict[int | None, int]:
        out: dict[int | None, int] = {}
        used = sorted({p.material for m in self.scene.meshes for p in m.primitives},
                      key=lambda x: -1 if x is None else x)
        for mi in used:
            src = self.scene.materials[mi] if mi is not None and 0 <= mi < len(
                self.scene.materials) else None
            out[mi] = len(doc.materials)
            doc.materials.append(self._material(doc, src))
        return out

    def _material(self, doc: PapaDocument, src: Any) -> Material:
        shader = "solid"
        color = [1.0, 1.0, 1.0, 1.0]
        extra_vec: dict[str, list[float]] = {}
        if src is not None:
            color = [float(c) for c in src.base_color_factor]
            shader = str(src.extras.get("papa_shader", shader))
            vp = src.extras.get("vector_params")
            if isinstance(vp, dict):
                extra_vec = {str(k): [float(x) for x in v][:4] for k, v in vp.items()
                             if isinstance(v, list) and len(v) == 4}
        if shader.lower() != "solid":
            self.note("shader_texture_params", f"shader {shader!r}: texture parameters are not "
                      "written (unit textures go to the _diffuse/_mask/_material files)", "info")
        vec = extra_vec or {"DiffuseColor": color}
        arr = np.zeros(len(vec), dtype=lay.VECTOR_PARAM)
        arr["name"] = [doc.add_string(k) for k in vec]
        arr["value"] = list(vec.values())
        return Material(doc.add_string(shader), arr)

    def _parts(self, node_i: int, mat_index: dict[int | None, int]) -> list[_Part]:
        node = self.scene.nodes[node_i]
        assert node.mesh is not None
        mesh = self.scene.meshes[node.mesh]
        skin = self.scene.skins[node.skin] if node.skin is not None and 0 <= node.skin < len(
            self.scene.skins) else None
        world = np.eye(4) if skin is not None else self.worlds[node_i]
        name = node.name or mesh.name or f"mesh{node.mesh}"
        prims = [p for p in mesh.primitives if p.vertex_count > 0]
        for p in prims:
            if p.mode != 4:
                msg = "PA meshes hold triangles only"
                raise LimitError(lay.FMT, msg, field=f"meshes[{node.mesh}] ({mesh.name!r})",
                                 expected="mode 4 (TRIANGLES)", actual=f"mode {p.mode}")
        if not prims:
            return []
        return [self._part(name, prims, skin, world, mat_index)]

    def _part(self, name: str, prims: list[Primitive], skin: Any, world: F64,
              mat_index: dict[int | None, int]) -> _Part:
        pos, nrm, uv0, uv1, col, bones, wts, groups = [], [], [], [], [], [], [], []
        has_uv1 = any(len(p.texcoords) > 1 for p in prims)
        has_col = any(p.colors for p in prims)
        skinned = skin is not None and all(p.joints is not None and p.weights is not None
                                           for p in prims)
        base = 0
        for p in prims:
            n = p.vertex_count
            tris = p.triangles().astype(np.int64)
            pos.append(np.asarray(p.positions, np.float64))
            nrm.append(np.asarray(p.normals, np.float64) if p.normals is not None
                       else vertex_normals(p.positions, tris).astype(np.float64))
            uv0.append(np.asarray(p.texcoords[0], np.float64) if p.texcoords
                       else np.zeros((n, 2)))
            uv1.append(np.asarray(p.texcoords[1], np.float64) if len(p.texcoords) > 1
                       else np.zeros((n, 2)))
            col.append(_colors(p.colors[0], n) if p.colors else np.full((n, 4), 255, np.uint8))
            if skinned:
                b, w = self._influences(p, skin)
                bones.append(b)
                wts.append(w)
            groups.append((mat_index[p.material], tris.reshape(-1) + base))
            base += n
        m = mat_to_pa(world)
        return _Part(name=name, positions=to_pa(np.concatenate(pos)),
                     normals=to_pa(np.concatenate(nrm)), uv0=np.concatenate(uv0),
                     uv1=np.concatenate(uv1) if has_uv1 else None,
                     colors=np.concatenate(col) if has_col else None,
                     bones=np.concatenate(bones) if skinned else None,
                     weights=np.concatenate(wts) if skinned else None,
                     groups=groups, mesh2model=m)

    def _influences(self, p: Primitive, skin: Any) -> tuple[Any, Any]:
        """Skeleton bone indices and weights, the 4 largest per vertex, sorted descending."""
        assert p.joints is not None and p.weights is not None
        lut = np.array([self.bone_of.get(j, 0) for j in skin.joints] or [0], dtype=np.int64)
        j = np.asarray(p.joints, dtype=np.int64)
        w = np.asarray(p.weights, dtype=np.float64)
        j = np.clip(j, 0, len(lut) - 1)
        if j.shape[1] > 4 and np.count_nonzero(w[:, 4:]) > 0:
            self.note("influences_reduced", "vertices with more than 4 joint influences: the 4 "
                      "largest kept, renormalized")
        inf = limit_influences(j, w, keep=4, width=4)
        return lut[inf.joints], inf.weights

    # -- bone maps and splitting -------------------------------------------------------------
    def _split(self, part: _Part) -> list[tuple[_Part, npt.NDArray[np.int64]]]:
        if part.bones is None or part.weights is None:
            return [(part, np.zeros(0, dtype=np.int64))]
        q = _quantize(part.weights)
        part.weights = q
        used = np.unique(part.bones[q > 0])
        if len(used) <= MAX_BINDING_BONES:
            return [(part, self._bone_map(used))]
        return self._split_parts(part)

    def _bone_map(self, used: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        n = len(self.joints)
        if n <= MAX_BINDING_BONES:
            return np.arange(n, dtype=np.int64)  # papatran: the identity over all bones
        rest = np.setdiff1d(np.arange(n), used)
        return np.concatenate([used, rest]).astype(np.int64)

    def _split_parts(self, part: _Part) -> list[tuple[_Part, npt.NDArray[np.int64]]]:
        """Group triangles by the main bone of their first vertex, then pack the groups into
        bindings of at most 32 weighted bones each (loops per bone, not per triangle)."""
        assert part.bones is not None and part.weights is not None
        out: list[tuple[_Part, npt.NDArray[np.int64]]] = []
        w = part.weights
        for mat, flat in part.groups:
            tris = flat.reshape(-1, 3)
            main = part.bones[tris[:, 0], 0]
            packs: list[tuple[set[int], list[npt.NDArray[np.int64]]]] = []
            for bone in np.unique(main):
                sel = tris[main == bone]
                verts = np.unique(sel)
                bset = {int(x) for x in np.unique(part.bones[verts][w[verts] > 0])}
                if len(bset) > MAX_BINDING_BONES:
                    msg = "triangles around one bone use more than 32 weighted bones"
                    raise LimitError(lay.FMT, msg, field=f"mesh {part.name!r}",
                                     expected=f"<= {MAX_BINDING_BONES}", actual=len(bset))
                for pack in packs:
                    if len(pack[0] | bset) <= MAX_BINDING_BONES:
                        pack[0].update(bset)
                        pack[1].append(sel)
                        break
                else:
                    packs.append((set(bset), [sel]))
            for k, (bset, sels) in enumerate(packs):
                sub = _subpart(part, mat, np.concatenate(sels), f"{part.name}_{k}")
                out.append((sub, self._bone_map(np.array(sorted(bset), dtype=np.int64))))
        self.note("split_bindings", f"mesh {part.name!r} uses more than 32 weighted bones: "
                  f"split into {len(out)} mesh bindings with their own bone maps")
        return out

    def _emit(self, doc: PapaDocument, model: Model, part: _Part,
              bone_map: npt.NDArray[np.int64]) -> None:
        n = len(part.positions)
        if part.bones is not None and part.weights is not None:
            fmt = 8
        elif part.colors is not None or part.uv1 is not None:
            fmt = 7
        else:
            fmt = 5
        v = np.zeros(n, dtype=lay.VERTEX_FORMATS[fmt][1])
        v["position"] = part.positions
        v["normal"] = part.normals
        v["texcoord0"] = part.uv0
        if fmt == 7:
            v["color"] = part.colors if part.colors is not None else 255
            v["texcoord1"] = part.uv1 if part.uv1 is not None else 0.0
        if fmt == 8:
            assert part.bones is not None and part.weights is not None
            slot_of = np.zeros(max(len(self.joints), 1), dtype=np.int64)
            slot_of[bone_map] = np.arange(len(bone_map))
            q = part.weights.astype(np.uint8)
            v["weights"] = q
            v["bones"] = np.where(q > 0, slot_of[part.bones], 0)
        flat = np.concatenate([g for _, g in part.groups]) if part.groups else np.zeros(0, int)
        ifmt = 1 if n > 0xFFFF else 0
        ib = IndexBuffer(ifmt, flat.astype(lay.INDEX_FORMATS[ifmt][1]))
        groups = np.zeros(len(part.groups), dtype=lay.MATERIAL_GROUP)
        first = 0
        for g, (mat, idx) in enumerate(part.groups):
            groups[g] = (NONE16, mat, first, len(idx) // 3, 2, (0, 0, 0))
            first += len(idx)
        doc.vertex_buffers.append(VertexBuffer(fmt, v))
        doc.index_buffers.append(ib)
        doc.meshes.append(Mesh(len(doc.vertex_buffers) - 1, len(doc.index_buffers) - 1, groups))
        model.bindings.append(MeshBinding(doc.add_string(part.name), len(doc.meshes) - 1,
                                          col16(part.mesh2model),
                                          bone_map.astype("<u2") if fmt == 8
                                          else np.zeros(0, "<u2")))

    # -- animations --------------------------------------------------------------------------
    def animation_doc(self, clips: list[int]) -> PapaDocument:
        doc = PapaDocument()
        for k in clips:
            anim = self._animation(doc, k)
            if anim is not None:
                doc.animations.append(anim)
        return doc

    def _animation(self, doc: PapaDocument, k: int) -> Animation | None:
        anim = self.scene.animations[k]
        if not self.joints:
            self.note("animation_unbound", f"clip {anim.name!r} animates no node; skipped")
            return None
        start = anim.start
        frames = int(np.ceil((anim.duration - start) * FPS - 1e-4)) + 1
        times = start + np.arange(frames, dtype=np.float64) / FPS
        by_node: dict[int, list[Channel]] = {}
        for c in anim.channels:
            by_node.setdefault(c.node, []).append(c)
        dropped = {c.node for c in anim.channels if c.node not in self.bone_of}
        if dropped:
            self.note("animation_node_dropped", f"clip {anim.name!r}: {len(dropped)} animated "
                      "nodes are not bones (mesh nodes or morph weights); not written")
        n = len(self.joints)
        tr = np.zeros((frames, n), dtype=lay.TRANSFORM)
        scaled = False
        for b, node in enumerate(self.joints):
            mats = self._local_track(b, node, by_node.get(node, []), times)
            t, q, s = matrices_to_trs(mats)
            scaled |= bool(np.abs(s - s[:1]).max() > 1e-4) if len(s) else False
            tr["translation"][:, b] = t
            tr["rotation"][:, b] = continuous_quats(q)
        if scaled:
            self.note("animation_scale_dropped", f"clip {anim.name!r} animates scale; PA "
                      "animations have no scale channel")
        names = np.array([doc.add_string(name) for name in self.bone_names], dtype="<u2")
        return Animation(NONE16, names, tr, FPS, 1)

    def _local_track(self, b: int, node: int, channels: list[Channel], times: F64) -> F64:
        """(F, 4, 4) PA-space local poses of bone b relative to its parent bone."""
        nd = self.scene.nodes[node]
        f = len(times)
        rest = local_matrix(nd)
        parent_node = self.parents[node]
        prefix = np.eye(4) if parent_node is None else self.worlds[parent_node]
        p = self.bone_parent[b]
        if p >= 0:
            prefix = safe_inverse(self.worlds[self.joints[p]]) @ prefix
        if not channels:
            mats = np.broadcast_to(prefix @ rest, (f, 4, 4))
        else:
            t0, r0, s0 = matrix_to_trs(rest)
            t = np.tile(t0, (f, 1))
            r = np.tile(r0, (f, 1))
            s = np.tile(s0, (f, 1))
            for c in channels:
                if c.path == "translation":
                    t = sample_channel(c, times)
                elif c.path == "rotation":
                    r = sample_channel(c, times)
                elif c.path == "scale":
                    s = sample_channel(c, times)
            local = trs_to_matrices(t, r, s)
            mats = prefix[None] @ local
        return np.asarray(AXES.T[None] @ mats @ AXES[None])

    # -- textures ----------------------------------------------------------------------------
    def texture_docs(self, stem: str) -> dict[str, PapaDocument]:
        """``diffuse`` (DXT5 sRGB) from the base colour, ``mask``/``material`` (DXT1 linear)
        from the images a papa material keeps in its extras."""
        found: dict[str, int] = {}
        for mat in self.scene.materials:
            if mat.base_color_texture is not None and "diffuse" not in found:
                found["diffuse"] = mat.base_color_texture.image
            for role in ("mask", "material"):
                idx = mat.extras.get(f"{role}_image")
                if isinstance(idx, int) and role not in found:
                    found[role] = idx
        if not found and not self.mesh_nodes() and self.scene.images:
            role = next((r for r in ("diffuse", "mask", "material") if stem.endswith(f"_{r}")),
                        "diffuse")
            found[role] = 0
        out: dict[str, PapaDocument] = {}
        for role, idx in found.items():
            if not 0 <= idx < len(self.scene.images):
                continue
            doc = self._texture_doc(self.scene.images[idx], role, stem)
            if doc is not None:
                out[role] = doc
        return out

    def role_texture_doc(self, role: str, stem: str) -> PapaDocument | None:
        """The one texture file a ``<name>_<role>.papa`` destination asks for: the image a
        material gives that role, else the first base colour image, else image 0."""
        pick: int | None = None
        for mat in self.scene.materials:
            idx = mat.extras.get(f"{role}_image")
            if role != "diffuse" and isinstance(idx, int):
                pick = idx
                break
        if pick is None:
            pick = next((m.base_color_texture.image for m in self.scene.materials
                         if m.base_color_texture is not None), 0)
        if not 0 <= pick < len(self.scene.images):
            return None
        if len(self.scene.images) > 1:
            self.note("texture_only_one", f"{stem}.papa holds one texture: image "
                      f"{self.scene.images[pick].name!r} written", "info")
        return self._texture_doc(self.scene.images[pick], role, stem)

    def _texture_doc(self, image: Image, role: str, stem: str) -> PapaDocument | None:
        px = image.pixels
        if px is None and image.data is not None:
            px = decode_image(image.data, "papa")
        if px is None:
            self.note("texture_missing", f"image {image.name!r} has no pixels; "
                      f"{stem}_{role}.papa not written")
            return None
        h, w = px.shape[:2]
        if w > 0xFFFF or h > 0xFFFF:
            msg = "texture side larger than a u16"
            raise LimitError(lay.FMT, msg, field=f"image {image.name!r}", expected="<= 65535",
                             actual=f"{w}x{h}")
        code = lay.TEX_DXT5 if role == "diffuse" else lay.TEX_DXT1
        data, mips = tx.encode(px, code)
        doc = PapaDocument()
        unit = stem[: -len(role) - 1] if stem.endswith(f"_{role}") else stem
        name = str(image.extras.get("papa_name") or f"{unit}_{role}.png")
        doc.strings.append(PapaString.of(name))
        doc.textures.append(Texture(0, code, w, h, mips, role == "diffuse", data))
        return doc


# -- helpers --------------------------------------------------------------------------------
def _colors(c: Any, n: int) -> npt.NDArray[np.uint8]:
    a = np.asarray(c, dtype=np.float64)
    out = np.full((n, 4), 255, dtype=np.uint8)
    k = min(a.shape[1], 4) if a.ndim == 2 else 0
    out[:, :k] = np.clip(np.nan_to_num(a[:, :k]) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return out


def _quantize(w: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Weights (sorted descending) to u8 values summing to exactly 255, largest first."""
    total = w.sum(axis=1, keepdims=True)
    empty = total[:, 0] <= 0
    safe = np.where(empty, 1.0, total[:, 0])[:, None]
    w = np.where(empty[:, None], np.array([1.0, 0.0, 0.0, 0.0]), w / safe)
    q = np.floor(w * 255.0)
    q[:, 0] += 255.0 - q.sum(axis=1)
    return np.asarray(q)


def _subpart(part: _Part, mat: int, tris: npt.NDArray[np.int64], name: str) -> _Part:
    verts, inverse = np.unique(tris.reshape(-1), return_inverse=True)

    def pick(a: Any) -> Any:
        return None if a is None else a[verts]

    return _Part(name=name, positions=part.positions[verts], normals=part.normals[verts],
                 uv0=part.uv0[verts], uv1=pick(part.uv1), colors=pick(part.colors),
                 bones=pick(part.bones), weights=pick(part.weights),
                 groups=[(mat, inverse.astype(np.int64))], mesh2model=part.mesh2model)
