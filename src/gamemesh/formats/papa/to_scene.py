"""Papa documents -> Scene (glTF conventions).

Axes: PA is right-handed, Z-up, facing -Y; glTF is Y-up facing +Z. Every point and direction goes
through C = a -90 degree rotation about X, (x, y, z) -> (x, z, -y); rotations keep their angle
and turn their axis the same way; matrices become C M C^tx. C is a proper rotation, so winding
and handedness survive and the conversion is exactly reversible (from_scene applies C^T).

A unit is several documents: the model, up to three texture files and any number of animation
files; :func:`build` takes them together (``load`` finds them on disk).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ...errors import CorruptDataError, FormatError
from ...registry import Context
from ...safeio import read_regular
from ...scene import Animation, Channel, Image, Material, Mesh, Node, Primitive, Scene, Skin
from ...scene.math import matrix_to_trs, normalize_rows, quat_to_matrix, row_lengths
from ...scene.model import TextureRef
from ...scene.numbers import require_finite
from . import layout as lay
from . import textures as tx
from .document import NONE16, PapaDocument
from .files import anim_siblings, clip_name, listing, texture_siblings, unit_name
from .read import read

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

# C as a 4x4 matrix: PA model space -> glTF.
AXES = np.array([[1, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=np.float64)
_MODES = {0: 0, 1: 1, 2: 4}  # papa primitive type -> glTF mode
_PER_PRIM = {0: 1, 1: 2, 2: 3}


def to_gl(v: npt.ArrayLike) -> F64:
    a = np.asarray(v, dtype=np.float64)
    return np.stack([a[..., 0], a[..., 2], -a[..., 1]], axis=-1)


def vec3_to_gl32(v: Any) -> F32:
    """Bulk float32 vectors (a field of the vertex records) to glTF axes, without float64."""
    out = np.empty((len(v), 3), dtype=np.float32)
    out[:, 0] = v[:, 0]
    out[:, 1] = v[:, 2]
    np.negative(v[:, 1], out=out[:, 2])
    return out


def unit_rows32(v: F32) -> F32:
    """Rows scaled to unit length in place; zero or non-finite rows become +Y. Rows already
    within 1e-6 of unit length are left alone: float32 division can flip such a row between
    two neighbours forever, and papa -> glTF -> papa must settle after one trip."""
    n = np.sqrt(np.einsum("ij,ij->i", v, v))
    ok = np.isfinite(n) & (n > 1e-12)
    v /= np.where(ok & (np.abs(n - 1.0) > 1e-6), n, 1.0)[:, None]
    v[~ok] = (0.0, 1.0, 0.0)
    return v


def _bytes4(field: Any) -> npt.NDArray[np.uint8]:
    """A (N, 4) u1 field of the vertex records as a contiguous copy: copied as one u4 per
    record, which is several times faster than numpy's byte-by-byte strided copy (and every
    later pass over contiguous bytes is too)."""
    a = np.asarray(field)
    if a.ndim != 2 or a.shape[1] != 4 or a.strides[1] != 1:
        return np.ascontiguousarray(a, dtype=np.uint8)
    return a.view("<u4").copy().view(np.uint8).reshape(len(a), 4)


def quat_to_gl(q: npt.ArrayLike) -> F64:
    """PA quaternions to glTF axes, unit length; (0, 0, 0, 1) where one has no length."""
    a = np.asarray(q, dtype=np.float64)
    out = np.empty(a.shape)
    out[..., 0] = a[..., 0]
    out[..., 1] = a[..., 2]
    np.negative(a[..., 1], out=out[..., 2])
    out[..., 3] = a[..., 3]
    n = row_lengths(out)
    bad = ~(n > 1e-12)
    n[bad] = 1.0
    out /= n[..., None]
    out[bad] = (0.0, 0.0, 0.0, 1.0)
    return out


def mat_to_gl(m16: npt.ArrayLike) -> F64:
    """A papa column-major 4x4 (16 floats) to a glTF-space mathematical 4x4."""
    m = np.asarray(m16, dtype=np.float64).reshape(4, 4).T
    return np.asarray(AXES @ m @ AXES.T)


def continuous_quats(q: F64) -> F64:
    """Flip signs so consecutive keys (axis 0; (frames, 4) or (frames, tracks, 4)) sit in one
    hemisphere (slerp takes the short way)."""
    if len(q) < 2:
        return q
    dots = np.einsum("...i,...i->...", q[1:], q[:-1])
    signs = np.ones(q.shape[:-1])
    np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=0, out=signs[1:])
    return np.asarray(q * signs[..., None])


@dataclass
class Unit:
    """What one conversion reads: the model document plus sibling files by role."""

    doc: PapaDocument
    name: str = "papa"
    textures: dict[str, PapaDocument] = field(default_factory=dict)  # diffuse/mask/material
    animations: list[tuple[str, PapaDocument]] = field(default_factory=list)  # (clip, doc)
    linked: dict[str, PapaDocument] = field(default_factory=dict)  # linked texture name -> doc


def to_scene(doc: PapaDocument, ctx: Context) -> Scene:
    name = ctx.path.stem if ctx.path is not None else "papa"
    return build(Unit(doc, name), ctx)


def build(unit: Unit, ctx: Context) -> Scene:
    doc = unit.doc
    scene = Scene(name=unit.name)
    scene.extras.update({"format": "papa", "version": f"{doc.version[1]}.{doc.version[0]}",
                         "kind": doc.kind})
    sig = doc.signature.rstrip(b"\0")
    if sig:
        scene.extras["signature"] = sig.decode("ascii", errors="replace")
    b = _Builder(unit, scene, ctx)
    # Hostile floats (NaN, inf) pass through as they are; numpy need not warn about them.
    with np.errstate(all="ignore"):
        b.run()
    return scene


class _Builder:
    def __init__(self, unit: Unit, scene: Scene, ctx: Context) -> None:
        self.unit, self.doc, self.scene, self.ctx = unit, unit.doc, scene, ctx
        self.bone_nodes: dict[str, int] = {}  # bone name -> node (first skeleton wins)
        self.unit_images: dict[str, int] = {}
        self.tex_images: dict[int, int | None] = {}

    def note(self, code: str, message: str, level: str = "warning") -> None:
        self.ctx.note(f"papa.{code}", message, "info" if level == "info" else "warning")

    # -- driver ------------------------------------------------------------------------------
    def run(self) -> None:
        doc = self.doc
        odd = [s.raw.decode("utf-8", "replace") for s in doc.strings
               if s.terminated and s.length != len(s.raw)]
        if odd:
            self.note("string_length_code_points", f"{len(odd)} strings ({', '.join(odd[:3])}) "
                      "have a length field counting code points, not bytes (as Blender-PAPA-IO "
                      "writes them): read to their terminator; readers that trust the length "
                      "cut them", "info")
        self._unit_textures()
        materials = [self._material(i) for i in range(len(doc.materials))]
        self.scene.materials.extend(materials)
        for i in range(len(doc.models)):
            self._model(i)
        anims: list[tuple[str, PapaDocument, int]] = []
        for i in range(len(doc.animations)):
            anims.append((self._anim_name(doc, i, unit_name=self.unit.name), doc, i))
        for clip, adoc in self.unit.animations:
            anims.extend((clip if len(adoc.animations) == 1 else f"{clip}_{k}", adoc, k)
                         for k in range(len(adoc.animations)))
        if anims and not self.bone_nodes and doc.models:
            # A static model beside clips (a folder holding another unit's animations): a
            # skeleton made up from the tracks would drive nothing of this model.
            self.note("animations_unattached", f"{len(anims)} clips "
                      f"({', '.join(sorted({c for c, _, _ in anims})[:5])}) animate bones this "
                      "model lacks (it has no skeleton); not attached")
            anims = []
        elif anims and not self.bone_nodes:
            self._track_skeleton(anims)
        for clip, adoc, k in anims:
            self._animation(clip, adoc, k)
        if not doc.models and doc.textures:
            self._texture_preview()
        if self.scene.extras.get("kind") == "header-only":
            self.note("empty_file", "the file holds no textures, models or animations", "info")

    @staticmethod
    def _anim_name(doc: PapaDocument, i: int, unit_name: str) -> str:
        name = doc.string(doc.animations[i].name) if doc.animations[i].name != NONE16 else ""
        if name:
            return name
        if "_anim_" in unit_name:
            clip = unit_name.split("_anim_", 1)[1]
            return clip if len(doc.animations) == 1 else f"{clip}_{i}"
        return f"animation{i}"

    # -- textures ----------------------------------------------------------------------------
    def _image_from(self, tdoc: PapaDocument, k: int, role: str) -> int | None:
        tex = tdoc.textures[k]
        tname = tdoc.string(tex.name, f"texture{k}")
        extras: dict[str, Any] = {"papa_name": tname, "papa_format": tx.format_name(tex.format),
                                  "srgb": tex.srgb, "mips": tex.mips,
                                  "mip_sizes": lay.mip_dims(tex.width, tex.height, tex.mips)}
        if role:
            extras["role"] = role
        if tex.linked:
            return self._linked_image(tname, role)
        try:
            px = tx.decode(tex, f"textures[{k}]")
        except FormatError as e:
            self.note("texture_not_decoded", f"texture {tname!r}: {e}")
            return None
        base = tname.replace("\\", "/").rsplit("/", 1)[-1].rsplit(".", 1)[0] or f"texture{k}"
        return self.scene.add_image(Image(name=base, pixels=px, uri=tname, extras=extras))

    def _linked_image(self, tname: str, role: str) -> int | None:
        ldoc = self.unit.linked.get(tname)
        if ldoc is None or not ldoc.textures:
            self.note("texture_missing", f"linked texture {tname!r} not found (give "
                      "--texture-root for /pa/ paths); converted without it")
            return None
        idx = self._image_from(ldoc, 0, role)
        if idx is not None:
            self.scene.images[idx].extras["linked"] = True
        return idx

    def _texture_image(self, k: int, role: str = "") -> int | None:
        if k not in self.tex_images:
            if not 0 <= k < len(self.doc.textures):
                msg = "texture parameter points past the texture table"
                raise CorruptDataError(lay.FMT, msg, field="materials.texture_params",
                                       expected=f"< {len(self.doc.textures)}", actual=k)
            self.tex_images[k] = self._image_from(self.doc, k, role)
        return self.tex_images[k]

    def _unit_textures(self) -> None:
        for role, tdoc in self.unit.textures.items():
            if tdoc.textures:
                idx = self._image_from(tdoc, 0, role)
                if idx is not None:
                    self.unit_images[role] = idx
        team = self.ctx.opt("team_color")
        if team and "diffuse" in self.unit_images and "mask" in self.unit_images:
            self._tint(str(team))

    def _tint(self, team: str) -> None:
        try:
            rgb = np.array([int(team.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4)],
                           dtype=np.float32) / 255.0
        except ValueError:
            self.note("team_color_invalid", f"--team-color {team!r} is not RRGGBB; ignored")
            return
        diffuse = self.scene.images[self.unit_images["diffuse"]]
        mask = self.scene.images[self.unit_images["mask"]]
        assert diffuse.pixels is not None and mask.pixels is not None
        m = mask.pixels[..., 0]
        h, w = diffuse.pixels.shape[:2]
        if m.shape != (h, w):
            m =  np.asarray(PILImage.fromarray(m).resize((w, h), PILImage.Resampling.BILINEAR))
        k = (m.astype(np.float32) / 255.0)[..., None]
        px = diffuse.pixels.astype(np.float32)
        px[..., :3] = px[..., :3] * (1.0 - k + k * rgb)
        diffuse.pixels = np.clip(px + 0.5, 0, 255).astype(np.uint8)
        diffuse.extras["team_color"] = team
        self.note("team_color", f"base colour tinted by the mask's primary channel with #{team}"
                  " (a preview: PA applies team colour in its shader)", "info")

    def _texture_preview(self) -> None:
        """A texture-only file: its images, shown on a unit quad each (the GLB 'shows it')."""
        self.note("texture_only", "texture-only file: each texture is shown on a quad", "info")
        x = 0.0
        for k in range(len(self.doc.textures)):
            img = self._texture_image(k)
            if img is None:
                continue
            px = self.scene.images[img].pixels
            assert px is not None
            aspect = px.shape[1] / px.shape[0]
            mat = self.scene.add_material(Material(name=self.scene.images[img].name,
                                                   base_color_texture=TextureRef(img),
                                                   double_sided=True))
            mesh = self.scene.add_mesh(Mesh(name=self.scene.images[img].name,
                                            primitives=[_quad(aspect, mat)]))
            self.scene.add_node(Node(name=self.scene.images[img].name, mesh=mesh,
                                     translation=(x, 0.0, 0.0)))
            x += aspect + 0.1

    # -- materials ---------------------------------------------------------------------------
    def _material(self, i: int) -> Material:
        doc = self.doc
        m = doc.materials[i]
        shader = doc.string(m.shader, "solid")
        mat = Material(name=f"{shader}_{i}", roughness_factor=1.0, metallic_factor=0.0)
        vec = {doc.string(int(p["name"]), f"param{j}"): [float(x) for x in p["value"]]
               for j, p in enumerate(m.vectors)}
        texp = {doc.string(int(p["name"]), f"texture{j}"): int(p["texture"])
                for j, p in enumerate(m.textures)}
        matp = {doc.string(int(p["name"]), f"matrix{j}"): [float(x) for x in p["value"]]
                for j, p in enumerate(m.matrices)}
        mat.extras = {"papa_shader": shader, "vector_params": vec,
                      "texture_params": {k: doc.string(doc.textures[v].name)
                                         if v < len(doc.textures) else v
                                         for k, v in texp.items()},
                      "matrix_params": matp}
        if shader.lower() == "solid":
            self._solid(mat, vec)
        else:
            self._csg(mat, texp)
        return mat

    def _solid(self, mat: Material, vec: dict[str, list[float]]) -> None:
        diffuse = self.unit_images.get("diffuse")
        if diffuse is not None:
            mat.base_color_texture = TextureRef(diffuse)
        elif "DiffuseColor" in vec:
            r, g, b, _ = vec["DiffuseColor"]
            mat.base_color_factor = (r, g, b, 1.0)
        for role in ("mask", "material"):
            if role in self.unit_images:
                mat.extras[f"{role}_image"] = self.unit_images[role]

    def _csg(self, mat: Material, texp: dict[str, int]) -> None:
        for pname, k in texp.items():
            low = pname.lower()
            role = "diffuse" if "diffuse" in low else "normal" if "normal" in low else "material"
            img = self._texture_image(k, role)
            if img is None:
                continue
            if role == "diffuse":
                mat.base_color_texture = TextureRef(img)
            elif role == "normal":
                image = self.scene.images[img]
                if image.pixels is not None and not image.extras.get("normal_converted"):
                    image.pixels = tx.normal_from_dxt5nm(image.pixels)
                    image.extras["normal_converted"] = "x from alpha, y from green, z derived"
                mat.normal_texture = TextureRef(img)
            else:
                mat.extras["material_image"] = img

    # -- models ------------------------------------------------------------------------------
    def _model(self, i: int) -> None:
        doc, scene = self.doc, self.scene
        model = doc.models[i]
        field = f"models[{i}]"
        name = doc.string(model.name, f"model{i}")
        node = Node(name=name, extras={"papa_model": i, **_exact("papa_model2scene",
                                                                 model.model2scene)})
        if name.lower().endswith("_nav"):
            # A unit's navigation/build helper (stock air_factory_nav): flagged for the
            # viewer, thumbnails and Blender to keep it out of sight (viewer/flags.py).
            node.extras["role"] = "navmesh"
        self._set_transform(node, mat_to_gl(model.model2scene), f"{field}.model2scene")
        mnode = scene.add_node(node)
        bones: list[int] = []
        if model.skeleton >= 0:
            if model.skeleton >= len(doc.skeletons):
                msg = "skeleton index out of range"
                raise CorruptDataError(lay.FMT, msg, field=f"{field}.skeleton_index",
                                       expected=f"< {len(doc.skeletons)}", actual=model.skeleton)
            bones = self._skeleton(model.skeleton, mnode)
        elif model.skeleton != -1:
            msg = "negative skeleton index other than -1"
            raise CorruptDataError(lay.FMT, msg, field=f"{field}.skeleton_index",
                                   actual=model.skeleton)
        skins: dict[bytes, int] = {}
        for j in range(len(model.bindings)):
            self._binding(i, j, mnode, bones, skins)

    def _set_transform(self, node: Node, m: F64, what: str) -> None:
        # In plain floats: one 4x4 through numpy's calls cost more than the whole mesh.
        flat = m.reshape(16).tolist()
        if _close16(flat, _EYE16, 1e-7):
            return
        if not all(map(math.isfinite, flat)):
            require_finite(m.reshape(1, 16), lay.FMT, what, "matrix values")
        t, r, s = matrix_to_trs(m)
        if not _close16(_trs16(t, r, s), flat, 1e-4):
            self.note("matrix_shear", f"{what} has shear; kept as its nearest TRS")
        node.translation = (float(t[0]), float(t[1]), float(t[2]))
        node.rotation = (float(r[0]), float(r[1]), float(r[2]), float(r[3]))
        node.scale = (float(s[0]), float(s[1]), float(s[2]))

    def _skeleton(self, k: int, parent: int) -> list[int]:
        doc, scene = self.doc, self.scene
        bones = doc.skeletons[k].bones
        n = len(bones)
        parents = bones["parent"].astype(np.int64)
        bad = (parents >= np.arange(n)) | (parents < -1)
        if bad.any():
            j = int(np.argmax(bad))
            msg = "bone parent must come before the bone (-1 for a root)"
            raise CorruptDataError(lay.FMT, msg, field=f"skeletons[{k}].bones[{j}].parent_bone",
                                   expected=f"-1..{j - 1}", actual=int(parents[j]))
        for name in ("translation", "rotation", "shear_scale", "bind2bone"):
            require_finite(bones[name], lay.FMT, f"skeletons[{k}].bones.{name}", f"bone {name}s")
        t = to_gl(bones["translation"])
        r = quat_to_gl(bones["rotation"])
        ss = np.asarray(bones["shear_scale"], dtype=np.float64).reshape(n, 3, 3).transpose(0, 2, 1)
        ss_gl = np.einsum("ij,njk,lk->nil", AXES[:3, :3], ss, AXES[:3, :3])
        diag = np.einsum("nii->ni", ss_gl)
        off = ss_gl - np.einsum("ni,ij->nij", diag, np.eye(3))
        if n and np.abs(off).max() > 1e-5:
            self.note("shear_scale_dropped", "a bone's shear_scale has off-diagonal terms; only "
                      "its diagonal is kept as scale")
        out: list[int] = []
        rows = zip(bones["name"].tolist(), parents.tolist(), t.tolist(), r.tolist(),
                   diag.tolist(), strict=True)
        for j, (s, p, tj, rj, sj) in enumerate(rows):
            name = doc.string(s, f"bone{j}")
            node = Node(name=name, translation=tuple(tj), rotation=tuple(rj), scale=tuple(sj))
            idx = scene.add_node(node, parent if p < 0 else out[p])
            out.append(idx)
            self.bone_nodes.setdefault(name, idx)
        return out

    def _binding(self, i: int, j: int, mnode: int, bones: list[int],
                 skins: dict[bytes, int]) -> None:
        doc, scene = self.doc, self.scene
        model = doc.models[i]
        binding = model.bindings[j]
        field = f"models[{i}].mesh_bindings[{j}]"
        require_finite(np.reshape(binding.mesh2model, (1, 16)), lay.FMT, f"{field}.mesh2model",
                       "matrix values")
        if binding.mesh >= len(doc.meshes):
            msg = "mesh index out of range"
            raise CorruptDataError(lay.FMT, msg, field=f"{field}.mesh_index",
                                   expected=f"< {len(doc.meshes)}", actual=binding.mesh)
        name = doc.string(binding.name, f"mesh{binding.mesh}")
        vb = doc.vertex_buffers[self._vb_index(binding.mesh)]
        skinned = bool(bones) and vb.format == 8 and len(binding.bone_map) > 0
        if vb.format == 8 and not skinned:
            self.note("skin_dropped", f"{name!r}: skinned vertices but no skeleton or bone map; "
                      "converted as a static mesh")
        mesh = Mesh(name=name, primitives=self._primitives(binding.mesh, binding.bone_map
                                                           if skinned else None, len(bones),
                                                           field))
        groups = _group_extras(doc, doc.meshes[binding.mesh].groups)
        if groups:
            mesh.extras["papa_groups"] = groups
        midx = scene.add_mesh(mesh)
        m2m = mat_to_gl(binding.mesh2model)
        if not skinned:
            node = Node(name=name, mesh=midx, extras={"papa_binding": [i, j], **_exact(
                "papa_mesh2model", binding.mesh2model)})
            self._set_transform(node, m2m, f"{field}.mesh2model")
            scene.add_node(node, mnode)
            return
        key = np.asarray(binding.mesh2model, dtype="<f4").tobytes()
        if key not in skins:
            b2b = np.asarray(doc.skeletons[model.skeleton].bones["bind2bone"], dtype=np.float64)
            b2b = b2b.reshape(-1, 4, 4).transpose(0, 2, 1)
            m2m_pa = np.asarray(binding.mesh2model, dtype=np.float64).reshape(4, 4).T
            ibm = np.einsum("ij,njk,kl,ml->nim", AXES, b2b, m2m_pa, AXES)
            skins[key] = scene.add_skin(Skin(joints=list(bones),
                                             inverse_bind_matrices=ibm.astype(np.float32),
                                             skeleton=mnode, name=f"{name}_skin"))
        # glTF ignores a skinned mesh node's own transform: keep it at the root, identity.
        scene.add_node(Node(name=name, mesh=midx, skin=skins[key],
                            extras={"papa_binding": [i, j]}))

    def _vb_index(self, mesh: int) -> int:
        m = self.doc.meshes[mesh]
        if m.vertex_buffer >= len(self.doc.vertex_buffers):
            msg = "vertex buffer index out of range"
            raise CorruptDataError(lay.FMT, msg, field=f"meshes[{mesh}].vertex_buffer_index",
                                   expected=f"< {len(self.doc.vertex_buffers)}",
                                   actual=m.vertex_buffer)
        if m.index_buffer >= len(self.doc.index_buffers):
            msg = "index buffer index out of range"
            raise CorruptDataError(lay.FMT, msg, field=f"meshes[{mesh}].index_buffer_index",
                                   expected=f"< {len(self.doc.index_buffers)}",
                                   actual=m.index_buffer)
        return m.vertex_buffer

    def _primitives(self, k: int, bone_map: Any, num_bones: int, field: str) -> list[Primitive]:
        doc = self.doc
        mesh = doc.meshes[k]
        vb = doc.vertex_buffers[self._vb_index(k)]
        ib = doc.index_buffers[mesh.index_buffer]
        v = vb.vertices
        nv = len(v)
        indices = np.asarray(ib.indices)
        if len(indices) and int(indices.max()) >= nv:
            msg = "index past the end of the vertex buffer"
            raise CorruptDataError(lay.FMT, msg, field=f"index_buffers[{mesh.index_buffer}]",
                                   expected=f"< {nv}", actual=int(indices.max()))
        for name in v.dtype.names or ():  # every float attribute, not only positions
            if v.dtype[name].base.kind == "f":
                require_finite(v[name], lay.FMT,
                               f"vertex_buffers[{self._vb_index(k)}].vertices.{name}",
                               f"{name} values")
        attrs = _attributes(v, vb.format)
        if bone_map is not None:
            attrs.update(self._skin_attributes(v, np.asarray(bone_map), num_bones, field))
        prims: list[Primitive] = []
        for g, grp in enumerate(mesh.groups.tolist()):
            _name, mat, first, count, ptype, _pad = grp
            if ptype not in _MODES:
                msg = "unknown primitive type"
                raise CorruptDataError(lay.FMT, msg,
                                       field=f"meshes[{k}].material_groups[{g}].primitive_type",
                                       expected="0, 1 or 2", actual=ptype)
            n = count * _PER_PRIM[ptype]
            if first + n > len(indices):
                msg = "material group runs past the index buffer"
                raise CorruptDataError(lay.FMT, msg, field=f"meshes[{k}].material_groups[{g}]",
                                       expected=f"<= {len(indices)}", actual=first + n)
            if count == 0:
                continue  # stock models carry an empty second group
            if mat >= len(doc.materials):
                msg = "material index out of range"
                raise CorruptDataError(lay.FMT, msg,
                                       field=f"meshes[{k}].material_groups[{g}].material_index",
                                       expected=f"< {len(doc.materials)}", actual=mat)
            prims.append(Primitive(indices=indices[first:first + n].astype(np.uint32),
                                   mode=_MODES[ptype], material=mat, **attrs))
        return prims

    def _skin_attributes(self, v: Any, bone_map: Any, num_bones: int, field: str) -> dict[str, Any]:
        w8, slots = _bytes4(v["weights"]), _bytes4(v["bones"])
        used = w8 > 0
        top = int((slots * used).max()) if len(slots) else 0
        if top >= len(bone_map):
            msg = "vertex bone slot past the mesh binding's bone map"
            raise CorruptDataError(lay.FMT, msg, field=f"{field}.bone_map",
                                   expected=f"< {len(bone_map)}", actual=top)
        if len(bone_map) and int(bone_map.max()) >= num_bones:
            msg = "bone map entry past the skeleton"
            raise CorruptDataError(lay.FMT, msg, field=f"{field}.bone_map",
                                   expected=f"< {num_bones}", actual=int(bone_map.max()))
        # Slots are u8: a 256-entry table maps them to joints in one gather.
        lut = np.zeros(256, dtype=np.uint16)
        lut[:min(len(bone_map), 256)] = bone_map[:256]
        joints = np.take(lut, slots)
        joints *= used
        # Column adds: numpy's sum(axis=1) over 4 columns is several times slower.
        total8 = w8[:, 0].astype(np.uint16)
        for c in range(1, w8.shape[1]):
            total8 += w8[:, c]
        if (total8 == 255).all():
            # Every stock vertex: the bytes sum to exactly 255, so w / 255 sums to 1.
            return {"joints": joints, "weights": w8 * np.float32(1.0 / 255.0)}
        w = w8.astype(np.float32)
        total = w.sum(axis=1, keepdims=True)
        empty = total[:, 0] == 0
        if empty.any():
            self.note("weights_empty", f"{int(empty.sum())} vertices have no weight; bound to "
                      "joint 0")
            w[empty, 0] = 1.0
            joints[empty] = 0
            total = w.sum(axis=1, keepdims=True)
        if np.any(np.abs(total - 255.0) > 0.5) and not empty.all():
            self.note("weights_renormalized", "vertex weights do not sum to 255; renormalized",
                      "info")
        return {"joints": joints, "weights": (w / total).astype(np.float32)}

    # -- animations --------------------------------------------------------------------------
    def _track_skeleton(self, anims: list[tuple[str, PapaDocument, int]]) -> None:
        """An animation without its model: one node per tracked bone under a root."""
        root = self.scene.add_node(Node(name="skeleton"))
        for _clip, adoc, k in anims:
            for s in adoc.animations[k].bones.tolist():
                name = adoc.string(s, f"track{s}")
                if name not in self.bone_nodes:
                    self.bone_nodes[name] = self.scene.add_node(Node(name=name), root)
        self.note("animation_only", "no model: the skeleton is the animated bones, flat under "
                  "one root (the hierarchy lives in the model file)", "info")

    def _tracks(self, clip: str, adoc: PapaDocument, bones: list[int]
                ) -> tuple[list[tuple[int, int]], list[str]]:
        """(track index, node) of each track that animates a bone, first track per bone; and
        the names of tracks whose bone is missing."""
        tracks: list[tuple[int, int]] = []
        seen: set[int] = set()
        missing: list[str] = []
        for j, s in enumerate(bones):
            name = adoc.string(s, f"track{s}")
            node = self.bone_nodes.get(name)
            if node is None:
                missing.append(name)
            elif node in seen:
                self.note("track_duplicate", f"clip {clip!r}: second track for {name!r} skipped")
            else:
                seen.add(node)
                tracks.append((j, node))
        return tracks, missing

    def _animation(self, clip: str, adoc: PapaDocument, k: int) -> None:
        anim = adoc.animations[k]
        num, den = anim.fps_num, anim.fps_den
        if num == 0 or den == 0:
            self.note("fps_invalid", f"clip {clip!r}: fps {num}/{den}; assumed 60/1")
            num, den = 60, 1
        frames = anim.num_frames
        if frames == 0 or len(anim.bones) == 0:
            self.note("animation_empty", f"clip {clip!r} has no keys; skipped", "info")
            return
        times = (np.arange(frames, dtype=np.float64) * den / num).astype(np.float32)
        tracks, missing = self._tracks(clip, adoc, anim.bones.tolist())
        channels: list[Channel] = []
        if tracks:
            t_all, q_all = _clip_keys(anim.transforms, [j for j, _ in tracks],
                                      f"animations[{k}].transforms")
            for k, (_j, node) in enumerate(tracks):
                channels.append(Channel(node, "translation", times, t_all[k]))
                channels.append(Channel(node, "rotation", times, q_all[k]))
        if missing:
            self.note("track_unbound", f"clip {clip!r}: {len(missing)} tracks name bones missing "
                      f"from the skeleton ({', '.join(missing[:5])}); kept in the file, not "
                      "animated")
        if channels:
            self.scene.animations.append(Animation(
                name=clip, channels=channels,
                extras={"fps": [anim.fps_num, anim.fps_den], "frames": frames}))


_EYE16 = np.eye(4).reshape(16).tolist()


def _close16(a: list[float], b: list[float], atol: float) -> bool:
    """``np.allclose(a, b, atol=atol)`` of 16 floats, ``b`` finite: |a - b| <= atol + 1e-5 |b|
    (NaN is never close), the same arithmetic in plain floats."""
    return all(abs(x - y) <= atol + 1e-5 * abs(y) for x, y in zip(a, b, strict=True))


def _trs16(t: F64, r: F64, s: F64) -> list[float]:
    """:func:`trs_to_matrix` as 16 row-major floats (the same products)."""
    rot = quat_to_matrix(r).tolist()
    sc, tr = s.tolist(), t.tolist()
    out = [rot[i][j] * sc[j] if j < 3 else tr[i] for i in range(3) for j in range(4)]
    return [*out, 0.0, 0.0, 0.0, 1.0]


def _clip_keys(transforms: Any, tracks: list[int], field: str) -> tuple[F32, F32]:
    """The translation and rotation keys of ``tracks`` in glTF axes, every track in one pass,
    track-major ((tracks, frames, 3|4) float32) so each channel is a contiguous slice.
    Translations only move and negate float32 values, exactly, so they skip float64. A NaN or
    infinite key is bad input (CorruptDataError naming ``field``), as it is for positions."""
    tr = transforms if tracks == list(range(transforms.shape[1])) else transforms[:, tracks]
    require_finite(tr["translation"].reshape(-1, 3), lay.FMT, f"{field}.translation",
                   "translation keys")
    require_finite(tr["rotation"].reshape(-1, 4), lay.FMT, f"{field}.rotation", "rotation keys")
    tb = tr["translation"].transpose(1, 0, 2)
    t_all = np.empty(tb.shape, np.float32)
    t_all[..., 0] = tb[..., 0]
    t_all[..., 1] = tb[..., 2]
    np.negative(tb[..., 1], out=t_all[..., 2])
    q = quat_to_gl(tr["rotation"].transpose(1, 0, 2))
    q = continuous_quats(q.transpose(1, 0, 2)).transpose(1, 0, 2)
    return t_all, np.ascontiguousarray(q, dtype=np.float32)


def _exact(key: str, m16: Any) -> dict[str, Any]:
    """A papa matrix's exact floats for node extras, when it is not the identity: from_scene
    writes them back unchanged while the node's TRS still agrees (TRS is not bit-exact)."""
    m = np.asarray(m16, dtype="<f4")
    if np.array_equal(m, np.eye(4, dtype="<f4").reshape(16)):
        return {}
    return {key: [float(x) for x in m]}


def _group_extras(doc: PapaDocument, groups: Any) -> list[list[Any]]:
    """Material groups as [name or None, material, primitives], when one is named or empty:
    primitives cannot hold an empty group or a group name, the mesh's extras can."""
    rows = groups.tolist()
    if all(g[0] == NONE16 and g[3] > 0 for g in rows):
        return []
    return [[doc.string(g[0]) if g[0] != NONE16 else None, int(g[1]), int(g[3])] for g in rows]


def _attributes(v: Any, fmt: int) -> dict[str, Any]:
    names = v.dtype.names or ()
    out: dict[str, Any] = {"positions": vec3_to_gl32(v["position"])}
    if "normal" in names:
        out["normals"] = unit_rows32(vec3_to_gl32(v["normal"]))
    out["texcoords"] = [np.ascontiguousarray(v[f"texcoord{i}"], dtype=np.float32)
                        for i in range(3) if f"texcoord{i}" in names]
    if "color" in names:
        out["colors"] = [np.asarray(v["color"], dtype=np.float32) / 255.0]
    if "tangent" in names and "normal" in names:
        t = to_gl(v["tangent"])
        b = to_gl(v["binormal"])
        n = to_gl(v["normal"])
        w = np.where(np.einsum("ij,ij->i", np.cross(n, t), b) < 0, -1.0, 1.0)
        tan = np.empty((len(t), 4), dtype=np.float32)
        tan[:, :3] = normalize_rows(t, (1.0, 0.0, 0.0))
        tan[:, 3] = w
        out["tangents"] = tan
    return out


_QUAD_UV = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=np.float32)
_QUAD_NORMALS = np.array([[0, 0, 1]] * 4, dtype=np.float32)
_QUAD_INDICES = np.array([0, 1, 2, 0, 2, 3], dtype=np.uint32)


def _quad(aspect: float, material: int) -> Primitive:
    w = aspect
    pos = np.array([[0, 0, 0], [w, 0, 0], [w, 1, 0], [0, 1, 0]], dtype=np.float32)
    # Copies of shared templates: building them each time (np.tile) cost more than the decode
    # of a small texture.
    return Primitive(positions=pos, normals=_QUAD_NORMALS.copy(), texcoords=[_QUAD_UV.copy()],
                     indices=_QUAD_INDICES.copy(), material=material)


def load(data: bytes, ctx: Context) -> Scene:
    doc = read(data, ctx)
    path = ctx.path
    unit = Unit(doc, path.stem if path is not None else "papa")
    extra_anims = [Path(p) for p in _as_list(ctx.opt("anim"))]
    if path is not None and not ctx.opt("no_siblings", False):
        # A unit's folder is listed once (a sibling file itself has no siblings to find).
        is_model_file = unit_name(path) is not None
        files = listing(path.parent) if is_model_file else {}
        tex = texture_siblings(path, files) if is_model_file else {}
        if doc.models and is_model_file:
            for role in ("diffuse", "mask", "material"):
                if role not in tex:
                    ctx.note("papa.texture_missing", f"no {path.stem}_{role}.papa next to the "
                             "model; converted without it", "info")
        for role, p in tex.items():
            sib = _read_sibling(p, ctx)
            if sib is not None:
                unit.textures[role] = sib
        if doc.models:
            extra_anims = [*anim_siblings(path, files), *extra_anims]
    for p in extra_anims:
        sib = _read_sibling(p, ctx)
        if sib is not None:
            unit.animations.append((clip_name(p), sib))
    root = ctx.opt("texture_root")
    if root:
        _linked(doc, Path(str(root)), unit, ctx)
    return build(unit, ctx)


def _as_list(v: object) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str | Path):
        return [str(v)]
    if isinstance(v, list | tuple):
        return [str(x) for x in v]
    return [str(v)]


def _read_sibling(p: Path, ctx: Context) -> PapaDocument | None:
    try:
        return read(read_regular(p), ctx)
    except (OSError, FormatError) as e:
        ctx.note("papa.sibling_unreadable", f"{p.name}: {e}; skipped")
        return None


def _linked(doc: PapaDocument, root: Path, unit: Unit, ctx: Context) -> None:
    """Linked textures name media-root paths; read them from under ``root`` only."""
    base = root.resolve()
    for tex in doc.textures:
        if not tex.linked:
            continue
        name = doc.string(tex.name)
        parts = [x for x in PurePosixPath(name.replace("\\", "/")).parts
                 if x not in ("/", "", ".", "..")]
        if not parts:
            continue
        target = base.joinpath(*parts)
        if not target.suffix:
            target = target.with_suffix(".papa")
        if target.suffix.lower() != ".papa":
            target = target.with_suffix(".papa")
        try:
            target.resolve().relative_to(base)
        except ValueError:
            continue
        if target.is_file():
            sib = _read_sibling(target, ctx)
            if sib is not None:
                unit.linked[name] = sib
