"""Scene (glTF conventions) -> Papa documents, laid out as papatran would write them.

A unit becomes the model file, one ``<name>_anim_<clip>.papa`` per animation (absolute local
poses, tracks named by bone; skeleton.py) and ``<name>_diffuse.papa`` (DXT5 sRGB) plus
``_mask``/``_material`` (DXT1) (texture_files.py). Axes go back through C^T: (x, y, z) ->
(x, -z, y).

Models stay models: the skinned meshes and the meshes that ride on a bone (a rigid part, bound
100 % to its bone) share the model with the skeleton; a mesh that no bone carries goes into a
model without a skeleton (-1), as stock ``air_factory_nav`` is. Model and mesh names, the
model's ``model2scene``, empty and named material groups come back from the extras to_scene
writes. Whatever Papa cannot hold is a ``papa.*`` warning naming it.

PA's limits are checked before anything is written: at most 256 bones (LimitError), at most 32
weighted bones per mesh binding (split into several bindings, noted), at most 4 influences (the
4 largest kept and renormalized, noted), triangles only (LimitError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...scene import Primitive, Scene
from ...scene.math import vertex_normals, world_matrices
from ...scene.skinning import limit_influences, safe_inverse
from . import layout as lay
from .csg import csg_material, tangent_frames
from .document import (
    NONE16,
    IndexBuffer,
    Material,
    Mesh,
    MeshBinding,
    Model,
    PapaDocument,
    VertexBuffer,
)
from .skeleton import Rig, mat_to_pa, to_pa
from .texture_files import TEXTURE_ROLES, TextureWriter
from .to_scene import unit_rows32, vec3_to_gl32
from .write import write

F64 = npt.NDArray[np.float64]
MAX_BINDING_BONES = 32
# A model: ("model", k) for papa model k (from the extras), ("default", None) for a scene that
# has none, ("static", k) for meshes no bone carries when k's model has the skeleton.
ModelKey = tuple[str, int | None]


def col16(m: F64) -> npt.NDArray[np.float32]:
    """A mathematical 4x4 to papa's column-major 16 floats."""
    return np.asarray(m, dtype=np.float64).T.reshape(16).astype("<f4")


# -- the unit ------------------------------------------------------------------------------
def from_scene(scene: Scene, ctx: Context) -> PapaDocument:
    """The main document: the model, or the animations / the texture when that is all there is."""
    exp = _Exporter(scene, ctx)
    if exp.mesh_nodes:
        if scene.animations:
            ctx.note("papa.animations_separate", "animations are written as <name>_anim_<clip>"
                     ".papa files by save(), not into the model document", "info")
        return exp.model_doc()
    if scene.animations:
        return exp.animation_doc(list(range(len(scene.animations))))
    tex = TextureWriter(scene, ctx, has_model=False).docs(_stem(ctx, scene))
    if tex:
        return next(iter(tex.values()))
    ctx.note("papa.empty_scene", "the scene has no meshes, animations or images: header-only "
             "file", "info")
    return PapaDocument()


def save(scene: Scene, ctx: Context) -> dict[str, bytes]:
    stem = _stem(ctx, scene)
    main = ctx.path.name if ctx.path is not None else "model.papa"
    exp = _Exporter(scene, ctx)
    role = next((r for r in TEXTURE_ROLES if stem.endswith(f"_{r}")), None)
    if role is not None and (scene.images or ctx.opt(role)):
        # PA's naming: a destination named x_diffuse/_mask/_material.papa is a texture file.
        doc = TextureWriter(scene, ctx, has_model=False).role_doc(role, stem)
        if doc is not None:
            return {main: write(doc, ctx)}
    if not exp.mesh_nodes:
        return {main: write(from_scene(scene, ctx), ctx)}
    files = {main: write(exp.model_doc(), ctx)}
    if not ctx.opt("no_animations", False):
        used: set[str] = set()
        for k, anim in enumerate(scene.animations):
            doc = exp.animation_doc([k])
            if doc.animations:  # never an empty animation file
                clip = _clip_name(anim.name or f"clip{k}", used)
                files[f"{stem}_anim_{clip}.papa"] = write(doc, ctx)
    elif scene.animations:
        ctx.note("papa.animations_not_written", f"--no-animations: {len(scene.animations)} "
                 "clips not written", covers=("clips", "channels"))
    textures: dict[str, PapaDocument] = {}
    if ctx.opt("csg"):
        # A CSG model links its textures by media path: there are no unit texture files.
        if scene.images:
            ctx.note("papa.csg_textures_linked", f"CSG: {len(scene.images)} images are linked "
                     "by media path, not written (make their texture .papa files apart)",
                     "info", covers=("images",))
        return files
    if not ctx.opt("no_textures", False):
        textures = TextureWriter(scene, ctx, has_model=True).docs(stem)
        for suffix, doc in textures.items():
            files[f"{stem}_{suffix}.papa"] = write(doc, ctx)
    _note_missing_textures(ctx, stem, textures)
    return files


def _note_missing_textures(ctx: Context, stem: str, textures: dict[str, PapaDocument]) -> None:
    """PA draws a unit's team colour from its mask and its gloss from its material texture;
    a model written without them looks wrong in game, so say so every time."""
    for role in TEXTURE_ROLES:
        if role in textures:
            continue
        source = "a base colour texture" if role == "diffuse" else \
            f"a material with {role}_image extras"
        why = "--no-textures" if ctx.opt("no_textures", False) else \
            f"give --{role} IMAGE, or {source}"
        ctx.note(f"papa.{role}_missing", f"{stem}.papa written without {stem}_{role}.papa "
                 f"({why})")


def _stem(ctx: Context, scene: Scene) -> str:
    return ctx.path.stem if ctx.path is not None else (scene.name or "model")


def _clip_name(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "clip"
    out, n = base, 1
    while out in used:
        n += 1
        out = f"{base}_{n}"
    used.add(out)
    return out


@dataclass
class _Group:
    material: int
    indices: npt.NDArray[np.int64]  # flat, into the part's vertices
    name: str | None = None


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
    groups: list[_Group]
    mesh2model: npt.NDArray[np.float32] = field(
        default_factory=lambda: np.eye(4, dtype="<f4").reshape(16))


class _Exporter:
    def __init__(self, scene: Scene, ctx: Context) -> None:
        self.scene, self.ctx = scene, ctx
        self.worlds = world_matrices(scene)
        self.parents = scene.parents()
        self.rig = Rig(scene, ctx, self.worlds, self.parents)
        self.mesh_nodes = [i for i in scene.walk() if scene.nodes[i].mesh is not None
                           and 0 <= int(scene.nodes[i].mesh or 0) < len(scene.meshes)]
        self.model_nodes: dict[int, int] = {}
        for i in scene.walk():
            k = scene.nodes[i].extras.get("papa_model")
            if isinstance(k, int) and k not in self.model_nodes:
                self.model_nodes[k] = i
        self.plan = self._plan()
        self.rig.set_base(self._skeleton_base())
        self.csg = bool(ctx.opt("csg"))
        self.linked: dict[str, int] = {}  # CSG: texture entry of each linked media path
        if self.csg and self.rig.joints:
            msg = "a CSG model is static: it has no skeleton"
            raise LimitError(lay.FMT, msg, field="--csg", expected="no bones or skinned meshes",
                             actual=f"{len(self.rig.joints)} bones")

    def note(self, code: str, message: str, level: str = "warning",
             covers: tuple[str, ...] = ()) -> None:
        """``covers``: the scene properties (scene.loss.PROPERTIES) the note reports as lost,
        so the save path's generic check does not warn about them a second time."""
        self.ctx.note(f"papa.{code}", message, "info" if level == "info" else "warning", covers)

    # -- which mesh goes into which model ----------------------------------------------------
    def _skinned(self, node_i: int) -> bool:
        node = self.scene.nodes[node_i]
        if node.skin is None or not 0 <= node.skin < len(self.scene.skins):
            return False
        assert node.mesh is not None
        return all(p.joints is not None and p.weights is not None
                   for p in self.scene.meshes[node.mesh].primitives)

    def _carried(self, node_i: int) -> bool:
        """Skinned, or riding on a bone (the node or an ancestor is animated or a joint)."""
        return self._skinned(node_i) or self.rig.bone_above(node_i) is not None

    def _papa_model(self, node_i: int) -> int | None:
        """The papa model a node came from (to_scene's extras), if it did."""
        b = self.scene.nodes[node_i].extras.get("papa_binding")
        if isinstance(b, list) and len(b) == 2 and isinstance(b[0], int):
            return int(b[0])
        p: int | None = node_i
        while p is not None:
            k = self.scene.nodes[p].extras.get("papa_model")
            if isinstance(k, int):
                return k
            p = self.parents[p]
        return None

    def _plan(self) -> dict[ModelKey, list[int]]:
        carried = [i for i in self.mesh_nodes if self._carried(i)]
        self.skel_key: ModelKey | None = None
        if carried or self.rig.joints:
            k = next((self._papa_model(i) for i in carried), None)
            self.skel_key = ("model", k) if k is not None else ("default", None)
        plan: dict[ModelKey, list[int]] = {}
        if self.skel_key is not None:
            plan[self.skel_key] = carried
        for i in self.mesh_nodes:
            if i in carried:
                continue
            k = self._papa_model(i)
            key: ModelKey = ("model", k) if k is not None else ("default", None)
            if key == self.skel_key:
                key = ("static", k)
            plan.setdefault(key, []).append(i)
        order = sorted(plan, key=lambda x: (x[1] is None, x[1] or 0, x[0] == "static"))
        return {key: plan[key] for key in order if plan[key] or key == self.skel_key}

    def _skeleton_base(self) -> int | None:
        if self.skel_key is not None and self.skel_key[1] is not None:
            return self.model_nodes.get(self.skel_key[1])
        if not self.mesh_nodes and self.rig.joints:
            # Animation only: the bones' common parent (to_scene's "skeleton" node).
            roots = {self.parents[n] for b, n in enumerate(self.rig.joints)
                     if self.rig.bone_parent[b] < 0}
            if len(roots) == 1:
                return roots.pop()
        return None

    def _model_entry(self, doc: PapaDocument, key: ModelKey) -> tuple[Model, F64]:
        """The model record (name, skeleton, model2scene) and its base world (glTF)."""
        stem = _stem(self.ctx, self.scene)
        node = self.model_nodes.get(key[1]) if key[1] is not None else None
        name = self.scene.nodes[node].name if node is not None else ""
        name = name or f"{stem}_mesh"
        if key[0] == "static":
            name = f"{name}_static"
            node = None
        skel = 0 if key == self.skel_key and self.rig.joints else -1
        if node is None:
            return Model(doc.add_string(name), skel), np.eye(4)
        base = self.worlds[node]
        m2s = _exact(self.scene.nodes[node].extras.get("papa_model2scene"), mat_to_pa(base))
        return Model(doc.add_string(name), skel, m2s), base

    # -- model -------------------------------------------------------------------------------
    def model_doc(self) -> PapaDocument:
        doc = PapaDocument()
        if self.rig.joints:
            doc.skeletons.append(self.rig.skeleton(doc))
        mat_index = self._materials(doc)
        for key, nodes in self.plan.items():
            model, base = self._model_entry(doc, key)
            for node in nodes:
                for part in self._parts(node, mat_index, base):
                    for sub, bone_map in self._split(part):
                        self._emit(doc, model, sub, bone_map)
            doc.models.append(model)
        self._note_unused_skins()
        self._note_dropped_nodes()
        return _positive_zeros(doc)

    def _note_dropped_nodes(self) -> None:
        """Nodes that end up nowhere: no mesh, no bone, nothing of either below them (empties,
        sockets that are not bones, cameras). Ancestors of kept nodes are folded into them."""
        kept = set(self.rig.joints) | set(self.mesh_nodes) | set(self.model_nodes.values())
        for node in list(kept):
            p = self.parents[node]
            while p is not None and p not in kept:
                kept.add(p)
                p = self.parents[p]
        dropped = [self.scene.nodes[i].name or f"#{i}" for i in self.scene.walk()
                   if i not in kept]
        if dropped:
            self.note("nodes_dropped", f"{len(dropped)} nodes with no mesh and no bone below "
                      f"them are not written ({', '.join(dropped[:5])}"
                      f"{', ...' if len(dropped) > 5 else ''}); animate one, or make it a joint, "
                      "to keep it as a bone", covers=("nodes",))

    def _note_unused_skins(self) -> None:
        if self.rig.joints and self.skel_key is not None and not self.plan.get(self.skel_key):
            self.note("skeleton_without_mesh", "the skeleton's model has no mesh binding "
                      "(no skinned or bone-carried mesh)", "info")

    def _materials(self, doc: PapaDocument) -> dict[int | None, int]:
        """Every scene material in order (stock files keep unused ones), then a default one
        when a primitive has none."""
        out: dict[int | None, int] = {}
        for mi, src in enumerate(self.scene.materials):
            out[mi] = len(doc.materials)
            doc.materials.append(self._material(doc, src))
        if any(p.material is None or p.material not in out for m in self.scene.meshes
               for p in m.primitives):
            out[None] = len(doc.materials)
            doc.materials.append(self._material(doc, None))
        return out

    def _material(self, doc: PapaDocument, src: Any) -> Material:
        if self.csg:
            return csg_material(doc, src, self.scene, self.ctx, self.linked)
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
            if src.extras.get("texture_params") or src.extras.get("matrix_params"):
                self.note("material_params_dropped", f"material {src.name!r}: texture and "
                          "matrix parameters are not written (unit textures go to the "
                          "_diffuse/_mask/_material files)")
            self._note_material_loss(src)
        vec = extra_vec or {"DiffuseColor": color}
        arr = np.zeros(len(vec), dtype=lay.VECTOR_PARAM)
        arr["name"] = [doc.add_string(k) for k in vec]
        arr["value"] = list(vec.values())
        return Material(doc.add_string(shader), arr)

    def _note_material_loss(self, src: Any) -> None:
        """glTF material properties a papa ``solid`` material has no place for."""
        lost = [what for what, differs in (
            ("metallic", src.metallic_factor != 0.0), ("roughness", src.roughness_factor != 1.0),
            ("emissive", any(src.emissive_factor)), ("alpha mode", src.alpha_mode != "OPAQUE"),
            ("double-sided", src.double_sided), ("unlit", src.unlit)) if differs]
        if lost:
            self.note("material_properties_dropped", f"material {src.name!r}: "
                      f"{', '.join(lost)} not written (a papa material keeps its shader name "
                      "and DiffuseColor)")

    # -- mesh nodes to parts -----------------------------------------------------------------
    def _parts(self, node_i: int, mat_index: dict[int | None, int], base: F64) -> list[_Part]:
        node = self.scene.nodes[node_i]
        assert node.mesh is not None
        mesh = self.scene.meshes[node.mesh]
        name = node.name or mesh.name or f"mesh{node.mesh}"
        prims = [p for p in mesh.primitives if p.vertex_count > 0]
        for p in prims:
            if p.mode != 4:
                msg = "PA meshes hold triangles only"
                raise LimitError(lay.FMT, msg, field=f"meshes[{node.mesh}] ({mesh.name!r})",
                                 expected="mode 4 (TRIANGLES)", actual=f"mode {p.mode}")
        if not prims:
            return []
        self._note_attribute_loss(name, prims)
        if self._skinned(node_i):
            part = self._part(name, prims, mat_index)
            self._skin(part, prims[:1] if _shares_vertices(prims) else prims,
                       self.scene.skins[node.skin or 0])
        elif (bone := self.rig.bone_above(node_i)) is not None:
            part = self._part(name, prims, mat_index, self.rig.model_matrix(node_i))
            part.bones = np.zeros((len(part.positions), 4), dtype=np.int64)
            part.bones[:, 0] = bone
            part.weights = np.zeros((len(part.positions), 4))
            part.weights[:, 0] = 1.0
        else:
            part = self._part(name, prims, mat_index)
            local = safe_inverse(base) @ self.worlds[node_i]
            part.mesh2model = _exact(node.extras.get("papa_mesh2model"), mat_to_pa(local))
        part.groups = _with_group_extras(part.groups, mesh.extras.get("papa_groups"), mat_index)
        return [part]

    def _note_attribute_loss(self, name: str, prims: list[Primitive]) -> None:
        """Attributes no Papa vertex format holds next to what this mesh needs, each tagged
        with the scene property it loses."""
        skinned = any(p.joints is not None for p in prims)
        checks = (
            (any(len(p.colors) > 1 for p in prims), "COLOR_1 and later colour sets", "colors"),
            (skinned and any(p.colors and not _white(p.colors[0]) for p in prims),
             "COLOR_0 (the skinned format 8 has no colour)", "colors"),
            (skinned and any(len(p.texcoords) > 1 for p in prims),
             "TEXCOORD_1 (the skinned format 8 has one UV set)", "texcoords"),
            (any(len(p.texcoords) > 2 for p in prims), "TEXCOORD_2 and later UV sets",
             "texcoords"),
            (not self.csg and any(p.tangents is not None for p in prims),
             "TANGENT (unit formats have none; PA derives them)", "tangents"),
            (any(p.targets for p in prims), "morph targets (Papa has none)", "targets"))
        lost = [(what, prop) for hit, what, prop in checks if hit]
        if lost:
            covers = tuple(dict.fromkeys(prop for _, prop in lost))
            self.note("attributes_dropped", f"mesh {name!r}: "
                      f"{'; '.join(what for what, _ in lost)} not written", covers=covers)

    def _part(self, name: str, prims: list[Primitive], mat_index: dict[int | None, int],
              world: F64 | None = None) -> _Part:
        pos, nrm, uv0, uv1, col, groups = [], [], [], [], [], []
        has_uv1 = any(len(p.texcoords) > 1 for p in prims)
        has_col = any(p.colors for p in prims)
        shared = _shares_vertices(prims)
        base = 0
        for k, p in enumerate(prims):
            if shared and k > 0:
                # One papa vertex buffer behind every group (to_scene's primitives): keep it
                # one buffer, or the next trip doubles it.
                groups.append(_Group(mat_index.get(p.material, mat_index.get(None, 0)),
                                     p.triangles().astype(np.int64).reshape(-1)))
                continue
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
            groups.append(_Group(mat_index.get(p.material, mat_index.get(None, 0)),
                                 tris.reshape(-1) + base))
            base += n
        positions, normals = np.concatenate(pos), np.concatenate(nrm)
        if world is not None and not np.array_equal(world, np.eye(4)):
            positions = positions @ world[:3, :3].T + world[:3, 3]
            normals = normals @ safe_inverse(world)[:3, :3]
            length = np.linalg.norm(normals, axis=1, keepdims=True)
            normals = normals / np.where(length > 1e-12, length, 1.0)
        return _Part(name=name, positions=to_pa(positions), normals=to_pa(normals),
                     uv0=np.concatenate(uv0), uv1=np.concatenate(uv1) if has_uv1 else None,
                     colors=np.concatenate(col) if has_col else None, bones=None,
                     weights=None, groups=groups)

    def _skin(self, part: _Part, prims: list[Primitive], skin: Any) -> None:
        """Skeleton bone indices and weights, the 4 largest per vertex, sorted descending."""
        lut = np.array([self.rig.bone_of.get(j, 0) for j in skin.joints] or [0], dtype=np.int64)
        bones, wts = [], []
        reduced = False
        for p in prims:
            assert p.joints is not None and p.weights is not None
            j = np.clip(np.asarray(p.joints, dtype=np.int64), 0, len(lut) - 1)
            w = np.asarray(p.weights, dtype=np.float64)
            reduced |= bool(j.shape[1] > 4 and np.count_nonzero(w[:, 4:]) > 0)
            inf = limit_influences(j, w, keep=4, width=4)
            bones.append(lut[inf.joints])
            wts.append(inf.weights)
        if reduced:
            self.note("influences_reduced", "vertices with more than 4 joint influences: the 4 "
                      "largest kept, renormalized")
        part.bones, part.weights = np.concatenate(bones), np.concatenate(wts)

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
        n = len(self.rig.joints)
        if n <= MAX_BINDING_BONES:
            return np.arange(n, dtype=np.int64)  # papatran: the identity over all bones
        rest = np.setdiff1d(np.arange(n), used)
        return np.concatenate([used, rest]).astype(np.int64)

    def _split_parts(self, part: _Part) -> list[tuple[_Part, npt.NDArray[np.int64]]]:
        """Group triangles by the main bone of their first vertex, then pack the groups into
        bindings of at most 32 weighted bones each (loops per bone, not per triangle)."""
        assert part.bones is not None and part.weights is not None
        out: list[tuple[_Part, npt.NDArray[np.int64]]] = []
        for group in part.groups:
            for bset, tris in self._packs(part, group.indices.reshape(-1, 3)):
                sub = _subpart(part, group, tris, f"{part.name}_{len(out)}")
                out.append((sub, self._bone_map(np.array(sorted(bset), dtype=np.int64))))
        self.note("split_bindings", f"mesh {part.name!r} uses more than 32 weighted bones: "
                  f"split into {len(out)} mesh bindings with their own bone maps")
        return out

    def _packs(self, part: _Part, tris: npt.NDArray[np.int64]
               ) -> list[tuple[set[int], npt.NDArray[np.int64]]]:
        assert part.bones is not None and part.weights is not None
        w = part.weights
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
        return [(bset, np.concatenate(sels)) for bset, sels in packs]

    def _emit(self, doc: PapaDocument, model: Model, part: _Part,
              bone_map: npt.NDArray[np.int64]) -> None:
        n = len(part.positions)
        fmt = 10 if self.csg else _vertex_format(part)
        v = np.zeros(n, dtype=lay.VERTEX_FORMATS[fmt][1])
        v["position"] = part.positions
        v["normal"] = _settled_normals(part.normals)
        v["texcoord0"] = part.uv0
        if fmt == 10:
            self._csg_vertices(v, part)
        if fmt in (6, 7):
            v["color"] = part.colors if part.colors is not None else 255
        if fmt == 7:
            v["texcoord1"] = part.uv1 if part.uv1 is not None else 0.0
        if fmt == 8:
            assert part.bones is not None and part.weights is not None
            slot_of = np.zeros(max(len(self.rig.joints), 1), dtype=np.int64)
            slot_of[bone_map] = np.arange(len(bone_map))
            q = part.weights.astype(np.uint8)
            v["weights"] = q
            v["bones"] = np.where(q > 0, slot_of[part.bones], 0)
        flat = np.concatenate([g.indices for g in part.groups]) if part.groups else \
            np.zeros(0, np.int64)
        ifmt = 1 if n > 0xFFFF else 0
        ib = IndexBuffer(ifmt, flat.astype(lay.INDEX_FORMATS[ifmt][1]))
        groups = np.zeros(len(part.groups), dtype=lay.MATERIAL_GROUP)
        first = 0
        for g, grp in enumerate(part.groups):
            name = NONE16 if grp.name is None else doc.add_string(grp.name)
            groups[g] = (name, grp.material, first, len(grp.indices) // 3, 2, (0, 0, 0))
            first += len(grp.indices)
        doc.vertex_buffers.append(VertexBuffer(fmt, v))
        doc.index_buffers.append(ib)
        doc.meshes.append(Mesh(len(doc.vertex_buffers) - 1, len(doc.index_buffers) - 1, groups))
        model.bindings.append(MeshBinding(doc.add_string(part.name), len(doc.meshes) - 1,
                                          part.mesh2model,
                                          bone_map.astype("<u2") if fmt == 8
                                          else np.zeros(0, "<u2")))

    def _csg_vertices(self, v: npt.NDArray[Any], part: _Part) -> None:
        """Format 10's tangent frame (from UV0) and its second UV set, the shadow map's; the
        first is used for it when the mesh has one set only."""
        tris = np.concatenate([g.indices for g in part.groups]).reshape(-1, 3) if \
            part.groups else np.zeros((0, 3), np.int64)
        normals = np.asarray(v["normal"], dtype=np.float64)
        v["tangent"], v["binormal"] = tangent_frames(part.positions, normals, part.uv0, tris)
        v["texcoord1"] = part.uv1 if part.uv1 is not None else part.uv0
        if part.uv1 is None:
            self.note("csg_shadow_uv", f"mesh {part.name!r} has one UV set: the CSG shadow-map "
                      "UVs (the second set) are a copy of it", "info")

    # -- animations --------------------------------------------------------------------------
    def animation_doc(self, clips: list[int]) -> PapaDocument:
        doc = PapaDocument()
        for k in clips:
            anim = self.rig.animation(doc, k)
            if anim is not None:
                doc.animations.append(anim)
        return _positive_zeros(doc)


# -- helpers --------------------------------------------------------------------------------
def _vertex_format(part: _Part) -> int:
    """8 when skinned; else the smallest static format holding the colours and UV sets."""
    if part.bones is not None and part.weights is not None:
        return 8
    if part.uv1 is not None:
        return 7
    return 6 if part.colors is not None else 5


def _settled_normals(n: F64) -> npt.NDArray[np.float32]:
    """PA normals as to_scene will read them (unit length in float32, zero rows +Y), so the
    next trip reads back these very bits (a fixed point after one trip)."""
    gl = unit_rows32(vec3_to_gl32(np.asarray(n, dtype=np.float32)))
    return np.asarray(to_pa(gl), dtype=np.float32)


def _exact(raw: Any, m: F64) -> npt.NDArray[np.float32]:
    """``m`` as papa's 16 floats; the exact floats to_scene kept in the extras when they still
    agree with ``m`` (a matrix decomposed to TRS and rebuilt is not bit-exact)."""
    out = col16(m)
    if isinstance(raw, list) and len(raw) == 16 and all(isinstance(x, int | float) for x in raw):
        kept = np.asarray(raw, dtype="<f4")
        if np.allclose(kept, out, rtol=1e-5, atol=1e-5):
            return kept
    return out


def _with_group_extras(groups: list[_Group], raw: Any,
                       mat_index: dict[int | None, int]) -> list[_Group]:
    """Put back the empty and named material groups to_scene kept in the mesh's extras, when
    the primitives still match them (same count, same materials)."""
    if not isinstance(raw, list) or not all(isinstance(g, list) and len(g) == 3 for g in raw):
        return groups
    full = [g for g in raw if isinstance(g[2], int) and g[2] > 0]
    if len(full) != len(groups) or any(mat_index.get(g[1]) != grp.material
                                       for g, grp in zip(full, groups, strict=True)):
        return groups
    out: list[_Group] = []
    it = iter(groups)
    for name, mat, count in raw:
        grp = next(it) if isinstance(count, int) and count > 0 else \
            _Group(mat_index.get(mat, 0), np.zeros(0, np.int64))
        grp.name = name if isinstance(name, str) else None
        out.append(grp)
    return out


def _positive_zeros(doc: PapaDocument) -> PapaDocument:
    """-0.0 becomes 0.0 in every float field: the sign of a zero depends on the arithmetic
    that made it, and it must not make two trips' bytes differ."""
    arrays = [vb.vertices for vb in doc.vertex_buffers] + [s.bones for s in doc.skeletons] + \
        [a.transforms for a in doc.animations]
    for arr in arrays:
        for name in arr.dtype.names or ():
            if arr.dtype[name].base.kind == "f":
                arr[name] += 0.0
    for m in doc.models:
        m.model2scene = m.model2scene + np.float32(0.0)
        for b in m.bindings:
            b.mesh2model = b.mesh2model + np.float32(0.0)
    return doc


def _shares_vertices(prims: list[Primitive]) -> bool:
    """Do all primitives carry the same vertices (different index ranges into one buffer)?"""
    first = prims[0]

    def same(a: Any, b: Any) -> bool:
        return (a is None) == (b is None) and (a is None or a is b or np.array_equal(a, b))

    return len(prims) > 1 and all(
        p.vertex_count == first.vertex_count and same(p.positions, first.positions)
        and same(p.normals, first.normals) and same(p.joints, first.joints)
        and same(p.weights, first.weights) and len(p.texcoords) == len(first.texcoords)
        and all(same(a, b) for a, b in zip(p.texcoords, first.texcoords, strict=True))
        and len(p.colors) == len(first.colors)
        and all(same(a, b) for a, b in zip(p.colors, first.colors, strict=True))
        for p in prims[1:])


def _white(c: Any) -> bool:
    return bool(np.all(np.asarray(c) >= 1.0 - 1.0 / 510.0))


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


def _subpart(part: _Part, group: _Group, tris: npt.NDArray[np.int64], name: str) -> _Part:
    verts, inverse = np.unique(tris.reshape(-1), return_inverse=True)

    def pick(a: Any) -> Any:
        return None if a is None else a[verts]

    return _Part(name=name, positions=part.positions[verts], normals=part.normals[verts],
                 uv0=part.uv0[verts], uv1=pick(part.uv1), colors=pick(part.colors),
                 bones=pick(part.bones), weights=pick(part.weights),
                 groups=[_Group(group.material, inverse.astype(np.int64), group.name)],
                 mesh2model=part.mesh2model)
