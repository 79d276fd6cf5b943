"""PET meshes to glTF primitives (spec §B.8): vertices from their main bone's space into bind
space, skin influences, normals per corner (zero ones from their face), and one glTF vertex
per distinct corner record (:mod:`.dedup`), grouped into one primitive per (texture,
specular) pair with its material."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene import Material, Mesh, Node, Primitive, Scene, TextureRef
from ...scene.math import row_lengths
from ...scene.skinning import Influences, safe_inverse
from .corners import finite32, single_value
from .dedup import equal_rows, first_occurrences
from .document import MeshSection, Texture
from .extras import texture_record
from .files import TextureFinder, path_option
from .influences import clean_influences, fake_body_substitute, vertex_influences
from .layout import MASK_FLAGS
from .read import check_corner_range
from .skeleton import Skeleton, Unit, make_skeleton
from .textures import flags_of, load_image

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Words = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]


class MeshBuilder:
    """Adds the meshes of a file or of a character's parts to the scene."""

    def __init__(self, scene: Scene, sk: Skeleton | None, ctx: Context) -> None:
        self.scene, self.sk, self.ctx = scene, sk, ctx
        self.used_skin = False
        self.mesh_nodes: list[int] = []
        self.finders: dict[Path | None, TextureFinder] = {}
        self._mats: dict[tuple[int, int, int], int] = {}
        self.images: dict[tuple[Path | None, str, str | None], int] = {}
        self._cv: tuple[MeshSection, I64] | None = None
        self._fake: tuple[Any, F64] | None = None
        self._bind: tuple[F64, F64] | None = None
        # A character's parts mostly carry the same bones: their own skeletons and bind
        # transforms are made once per distinct bone list (pure functions of it).
        self._owns: dict[tuple[Any, ...], Skeleton | None] = {}
        self._binds: dict[tuple[int, bytes], tuple[F64, F64]] = {}
        self.extra_dirs = path_option(ctx, "texture_dir")

    def add(self, unit: Unit) -> None:
        m = unit.doc.mesh
        assert m is not None
        sk = self.sk
        bs = unit.doc.bones
        nb = bs.count if bs is not None else 0
        if sk is not None and sk.unit is unit:
            wm, bone_map = sk.world, np.arange(nb)
        else:
            own = self._own_skeleton(unit) if bs is not None else None
            wm = own.world if own is not None else np.zeros((0, 4, 4))
            bone_map = self._map_bones(unit, own)
        pos, joints, weights, main = self._skin(m, nb, wm, bone_map)
        inf = clean_influences(joints, weights, self.ctx) if joints is not None else None
        del joints, weights  # the cleaned influences replace them: free before the corners
        prims = self._primitives(unit, m, pos, inf, (wm, main, bone_map))
        self._cv = self._fake = self._bind = None  # per mesh
        if not prims:
            self.ctx.note("pet.mesh_empty", f"{unit.stem}: the mesh has no triangles")
            return
        mesh = self.scene.add_mesh(Mesh(name=unit.stem, primitives=prims))
        node = Node(name=unit.stem, mesh=mesh)
        if m.global_weight is not None and len(m.global_weight):
            node.extras["pet_global_weight"] = single_value(np.asarray(m.global_weight))
        self.mesh_nodes.append(self.scene.add_node(node))

    def _rebind(self, wm: F64, bone_map: npt.NDArray[np.int64]) -> F64:
        """Another file's bind pose onto the skeleton, per bone of the file (once per mesh:
        the skinning and both normal passes use it)."""
        assert self.sk is not None
        if self._bind is None or self._bind[0] is not wm:
            key = (id(wm), bone_map.tobytes())
            hit = self._binds.get(key)  # the entry keeps ``wm`` alive: its id stays its own
            if hit is None:
                hit = self._binds[key] = (wm, self.sk.world[bone_map] @ safe_inverse(wm))
            self._bind = hit
        return self._bind[1]

    def _own_skeleton(self, unit: Unit) -> Skeleton | None:
        """A part's own skeleton (its bind pose), shared by the parts with the same bones."""
        bs = unit.doc.bones
        assert bs is not None
        mats = bs.matrices
        key = (tuple(bs.names), tuple(bs.parents),
               None if mats is None else (mats.dtype.str, mats.shape, mats.tobytes()))
        if key not in self._owns:
            self._owns[key] = make_skeleton(unit, Context(None, {}, []))
        return self._owns[key]

    def _corner_words(self, m: MeshSection) -> Words:
        """The corners' :func:`corner_words`; their vertex indices (int64, range-checked) are
        kept for the mesh's other steps, the words (the size of the corners) are not."""
        words = corner_words(m)
        cv = words[0].view("<u4")[:, 0].astype(np.int64)
        check_corner_range(m, cv)
        self._cv = (m, cv)
        return words

    def _corner_vertex(self, m: MeshSection) -> I64:
        """The corners' vertex indices, kept by :meth:`_corner_words` (which runs first)."""
        if self._cv is None or self._cv[0] is not m:
            self._corner_words(m)
        return self._cv[1]  # type: ignore[index]

    def _map_bones(self, unit: Unit, own: Skeleton | None) -> npt.NDArray[np.int64]:
        """Mesh-file bones onto the skeleton by name; an unmatched bone takes its nearest
        matched ancestor (or the skeleton's first bone)."""
        if own is None or self.sk is None:
            return np.zeros(0, np.int64)
        found: list[int] = []
        missing: list[str] = []
        for name in own.names:
            j = self.sk.find(name)
            found.append(-1 if j is None else j)
            if j is None:
                missing.append(name)
        out = np.array(found, np.int64)
        for i in range(len(out)):
            p, steps = i, 0
            while out[i] < 0 and own.parents[p] >= 0 and steps < len(out):
                p = own.parents[p]
                out[i] = found[p]
                steps += 1
        out[out < 0] = 0
        if missing:
            self.ctx.note("pet.bone_unmatched", f"{unit.stem}: {len(missing)} bone(s) not in "
                          f"the skeleton ({', '.join(missing[:5])}); skinned to an ancestor")
        return out

    def _skin(self, m: MeshSection, nb: int, wm: F64,
              bone_map: npt.NDArray[np.int64]) -> tuple[F64, Any, Any, Any]:
        joints, w, main = vertex_influences(m, nb, self.ctx)
        pos = self._bind_positions(m, nb, wm, main)
        p = w.shape[1]
        if self.sk is None or nb == 0 or p == 0:
            return pos, None, None, main
        if self.sk.world is not wm and len(bone_map) == nb:
            # Another file's bind pose onto the skeleton: p = sum w_i Wb(b_i) Wm(b_i)^-1 p.
            a = self._rebind(wm, bone_map)
            acc = np.zeros_like(pos)
            for k in range(p):  # per influence rank
                ak = a[joints[:, k]]
                acc += w[:, k, None] * (np.einsum("nij,nj->ni", ak[:, :3, :3], pos)
                                        + ak[:, :3, 3])
            pos = acc
            joints = np.asfortranarray(bone_map[joints])
        self.used_skin = True
        return pos, joints, w, main

    @staticmethod
    def _bind_positions(m: MeshSection, nb: int, wm: F64, main: Any) -> F64:
        """The vertices from their main bone's space into bind space (f64); ``main``: each
        vertex's main bone, -1 for none."""
        pos = np.asarray(m.positions, np.float64)
        if not np.isfinite(pos).all():
            pos = np.nan_to_num(pos, nan=0.0, posinf=0.0, neginf=0.0)
        if nb:
            # Each vertex's main bone matrix, the 3x4 part only: the identity is the last row,
            # which main bone -1 (none) takes.
            ext = np.concatenate([np.asarray(wm, np.float64)[:, :3, :], _EYE34])
            wmain = ext.take(main, axis=0)
            pos = np.einsum("nij,nj->ni", wmain[:, :, :3], pos) + wmain[:, :, 3]
        return pos

    def _normals(self, unit: Unit, m: MeshSection, pos: F64, wm: F64, main: Any,
                 bone_map: npt.NDArray[np.int64], sel: npt.NDArray[np.int64],
                 rows: npt.NDArray[Any], owned: bool = False) -> tuple[F64, npt.NDArray[np.bool_]]:
        """The normals of corners ``sel`` (``rows``: their stored normals; ``owned``: a float64
        array this may change), in bind space, z not yet flipped, and which were zero (each
        corner's normal depends only on its own record, its vertex and, for a zero normal,
        its face)."""
        nrm = rows if owned else np.asarray(rows).astype(np.float64)
        cv_all = self._corner_vertex(m)
        nb = len(wm)
        v10 = unit.doc.version < (1, 1) and nb
        rebind = self.sk is not None and self.sk.world is not wm and len(bone_map) == nb and nb
        if not (v10 or rebind):  # no rotation: the lengths tell whether all is finite
            nrm, length = _finite_lengths(nrm)
            return self._unit_normals(pos, cv_all, sel, nrm, length)
        # The rotations' einsum on the contiguous rows (as they always were: same bits).
        nrm = np.ascontiguousarray(nrm)
        if not np.isfinite(nrm).all():
            nrm = np.nan_to_num(nrm, nan=0.0, posinf=0.0, neginf=0.0)
        if v10 or rebind:  # the corners' main bones (only these rotations need them)
            cmain = main[cv_all[sel]] if len(sel) else np.zeros(0, np.int64)
        if v10:
            # v1.0 normals are in the main bone's space (the game's vertex build, #1/#2).
            if self._fake is None or self._fake[0] is not main:  # once per mesh
                self._fake = (main, _rotation_table(wm, _fake_bones(unit, main, nb)))
            # Each corner's rotation: its main bone's row, the identity (last row) for none.
            nrm = np.einsum("nij,nj->ni", self._fake[1].take(cmain, axis=0), nrm)
        if rebind:
            a = self._rebind(wm, bone_map)
            r = np.where((cmain >= 0)[:, None, None], a[np.maximum(cmain, 0), :3, :3], np.eye(3))
            nrm = np.einsum("nij,nj->ni", r, nrm)
        return self._unit_normals(pos, cv_all, sel, nrm, row_lengths(nrm))

    @staticmethod
    def _unit_normals(pos: F64, cv_all: I64, sel: I64, nrm: F64,
                      length: F64) -> tuple[F64, npt.NDArray[np.bool_]]:
        """:meth:`_normals` from the (rotated) rows and their lengths: zero ones replaced by
        their face's normal, then all made unit length."""
        zero = length < 1e-12
        if zero.any():
            # A zero normal means "compute it" (§B.8): (p1 - p0) x (p2 - p0) in file order.
            corners = pos.take(cv_all.reshape(-1, 3)[sel[zero] // 3], axis=0)  # (k, 3, 3)
            p0 = corners[:, 0]
            nrm[zero] = np.cross(corners[:, 1] - p0, corners[:, 2] - p0)
            length[zero] = np.linalg.norm(nrm[zero], axis=1)  # per row: the others unchanged
        ok = length > 1e-20
        if ok.all():
            return nrm / length[:, None], zero
        out = np.where(ok[:, None], nrm / np.where(ok, length, 1.0)[:, None], [0.0, 1.0, 0.0])
        return np.asarray(out), zero

    def _corner_rows(self, unit: Unit, m: MeshSection, pos: F64,
                     skin: tuple[F64, Any, npt.NDArray[np.int64]]
                     ) -> tuple[I64, npt.NDArray[np.float32], npt.NDArray[np.float32], I64]:
        """The distinct corners: (``row`` of each corner, the rows' glTF normals and UV
        sets, each row's processed class: a number shared by the rows that convert equal).

        Corners with equal records (vertex, normal, UV sets) convert to equal glTF vertices,
        so only one of each is converted; rows whose conversions come out equal share a
        class. A zero normal takes its face's normal, so each corner that has one is a row
        of its own."""
        words = self._corner_words(m)
        cv = self._corner_vertex(m)
        nsets = words[1].shape[1]
        nuv = m.corner_nuv  # None where every corner has all the sets
        varying = nuv is not None and bool(np.any(nuv != nsets))
        # The distinct records as rows (numbered by vertex where a vertex has one record).
        blocks = list(words)
        if varying:
            blocks.append(np.asarray(nuv, np.uint64)[:, None])
        row, first = equal_rows(cv, blocks, m.vertex_count)
        wm, main, bone_map = skin
        nrm64, zero = self._normals(unit, m, pos, wm, main, bone_map, first,
                                    _normals_of(words, first), owned=True)
        if zero.any():
            # The other corners of a row with a zero normal: rows of their own, appended
            # (the rows' order is free: classes only group them).
            is_zero = np.zeros(len(first), bool)
            is_zero[zero] = True
            own = np.flatnonzero(is_zero.take(row))
            own = own[first.take(row.take(own)) != own]
            if len(own):
                row = row.copy()
                row[own] = np.arange(len(first), len(first) + len(own))
                first = np.concatenate([first, own])
                nrm64 = np.concatenate([nrm64, self._normals(
                    unit, m, pos, wm, main, bone_map, own, _normals_of(words, own),
                    owned=True)[0]])
        nrm = finite32(nrm64 * _FLIP)
        uv = finite32(_uv_of(words, first))
        if varying:
            self.ctx.note("pet.uv_sets_padded", "corners have different numbers of UV sets: "
                          "missing sets copied from set 0")
            nuv_r = np.asarray(nuv)[first]
            for k in range(1, nsets):
                short = nuv_r <= k
                uv[short, k] = uv[short, 0]
        # Rows whose conversions come out equal share a class.
        cls, _ = equal_rows(cv.take(first), [(nrm + np.float32(0.0)).view(np.uint32),
                                             (uv.reshape(len(uv), -1)
                                              + np.float32(0.0)).view(np.uint32)],
                            m.vertex_count)
        return row, nrm, uv, cls

    def _primitives(self, unit: Unit, m: MeshSection, pos: F64, inf: Influences | None,
                    skin: tuple[F64, Any, npt.NDArray[np.int64]]) -> list[Primitive]:
        npoly = m.poly_count
        spec = m.specular if m.specular is not None else np.full(npoly, 0xFF, np.uint8)
        ntex = len(unit.doc.textures)
        tex = np.asarray(m.texture, np.int64)
        tex = np.where(tex < ntex, tex, -1)
        key = (tex + 1) * 256 + np.asarray(spec, np.int64)
        if not npoly:
            return []
        row, nrm, uv, cls = self._corner_rows(unit, m, pos, skin)
        cv = self._corner_vertex(m)
        # All primitives at once (one per (texture, specular) key, ascending): their faces
        # grouped by key (file order within), their corners in glTF order (0, 2, 1: the
        # winding reversed), and each corner's class made distinct per primitive, so that the
        # first occurrences over all corners are each primitive's glTF vertices in order.
        keys, faces, bounds = _faces_by_key(key)
        gl = _gl_corners(faces)
        row_gl = row.take(gl)
        ids = cls.take(row_gl)
        ncls = int(cls.max()) + 1
        for k in range(1, len(keys)):
            ids[3 * bounds[k]:3 * bounds[k + 1]] += k * ncls
        firsts, inverse = first_occurrences(ids, len(keys) * ncls)
        del ids
        # Each primitive's first vertex: the glTF vertices are grouped as the corners are.
        starts = np.searchsorted(firsts, 3 * np.asarray(bounds)).tolist()
        indices = inverse.astype(np.uint32)
        del inverse
        for k in range(1, len(keys)):
            indices[3 * bounds[k]:3 * bounds[k + 1]] -= np.uint32(starts[k])
        verts = cv.take(gl.take(firsts))
        r = row_gl.take(firsts)
        del gl, row_gl
        # Each attribute gathered once for all primitives (theirs are slices of it).
        gpos = finite32(pos * _FLIP).take(verts, axis=0)
        gnrm = nrm.take(r, axis=0)
        sets = _uv_sets(uv, r)
        prims: list[Primitive] = []
        for k, (v0, v1, f0, f1) in enumerate(zip(starts, starts[1:], bounds, bounds[1:],
                                                 strict=False)):
            key_k = keys[k]
            prims.append(Primitive(positions=gpos[v0:v1], normals=gnrm[v0:v1],
                                   texcoords=[u[v0:v1] for u in sets],
                                   indices=indices[3 * f0:3 * f1],
                                   material=self._material(unit, key_k // 256 - 1, key_k % 256)))
        if inf is not None:
            _add_influences(prims, inf, verts, starts[:-1])
        return prims

    def _material(self, unit: Unit, tex_index: int, spec: int) -> int:
        key = (id(unit), tex_index, spec)
        if key in self._mats:
            return self._mats[key]
        mat = Material(name="untextured", extras={"pet_smtl": spec if spec != 0xFF else -1})
        if tex_index >= 0:
            t = unit.doc.textures[tex_index]
            self._fill_material(unit, mat, t)
        idx = self._mats[key] = self.scene.add_material(mat)
        return idx

    def _fill_material(self, unit: Unit, mat: Material, t: Texture) -> None:
        name = t.name
        mat.name = name
        mat.extras["pet_texture"] = texture_record(t)
        d = t.diffuse
        if d not in (0, 0xFFFFFFFF):
            # D3DCOLOR ARGB ([VERIFY] in the spec); alpha is left opaque.
            mat.base_color_factor = (((d >> 16) & 255) / 255.0, ((d >> 8) & 255) / 255.0,
                                     (d & 255) / 255.0, 1.0)
        flags = flags_of(name)
        if "!" in flags:
            mat.extras["pet_specular_map"] = name
            return
        if name.lower() == "null" or not name:
            return
        chroma = "{" if "{" in flags else ("~" if "~" in flags else None)
        finder = self._finder(unit)
        key = (finder.model_dir, name.lower(), chroma)
        if key not in self.images:  # parts of a character share textures: load each once
            notes: list[tuple[str, str]] = []
            self.images[key] = self.scene.add_image(load_image(name, finder, chroma, notes))
            for code, msg in notes:
                self.ctx.note(code, msg)
        img = self.scene.images[self.images[key]]
        mat.base_color_texture = TextureRef(self.images[key])
        if "]" in flags:
            mat.alpha_mode = "BLEND"
        elif any(c in MASK_FLAGS for c in flags) or chroma is not None or (
                img.pixels is not None and bool(np.any(img.pixels[..., 3] < 255))):
            mat.alpha_mode = "MASK"
            mat.alpha_cutoff = 0.4

    def _finder(self, unit: Unit) -> TextureFinder:
        d = unit.path.parent if unit.path is not None else None
        if d not in self.finders:
            self.finders[d] = TextureFinder(d, self.extra_dirs)
        return self.finders[d]


_EYE3 = np.eye(3)
_FLIP = np.array([1.0, 1.0, -1.0])  # file space <-> glTF: z mirrored
_EYE34 = np.eye(4)[None, :3, :]


def _rotation_table(wm: F64, rot_bone: npt.NDArray[np.int64]) -> F64:
    """Per bone, the rotation its corners' v1.0 normals use (the 3x3 part of the matrix of
    ``rot_bone``'s bone), plus the identity as the last row: the row of main bone -1 (none)
    when taken by the main bone."""
    return np.concatenate([wm.take(rot_bone, axis=0)[:, :3, :3], _EYE3[None]])


def corner_words(m: MeshSection) -> Words:
    """Each corner's record as rows of 64-bit words: ``head`` ((C, 2): vertex index, normal)
    and ``sets`` ((C, U): a word a UV set), each one raw copy of the records' bytes (one pass
    over them; field by field they would stream from memory once a word)."""
    recs = m.corners
    n, nsets, size = len(recs), m.uv_sets, recs.dtype.itemsize
    uv_at = recs.dtype.fields["uv"][1] if recs.dtype.fields else 0
    names, formats, offsets = ["head"], ["V16"], [0]
    if nsets:
        names, formats, offsets = [*names, "sets"], [*formats, f"V{8 * nsets}"], [0, uv_at]
    view = recs.view(np.dtype({"names": names, "formats": formats, "offsets": offsets,
                               "itemsize": size}))
    head = view["head"].copy().view("<u8").reshape(n, 2)
    sets = (view["sets"].copy().view("<u8").reshape(n, nsets) if nsets
            else np.zeros((n, 0), "<u8"))
    return head, sets


def _normals_of(words: Words, sel: I64) -> F64:
    """The stored normals of corners ``sel`` ((k, 3) float64) from their words."""
    # Whole rows converted, then the vertex column dropped (a (k, 3) view converts row by row).
    return words[0].take(sel, axis=0).view("<f4").astype(np.float64)[:, 1:]


def _uv_of(words: Words, sel: I64) -> npt.NDArray[np.float32]:
    """The stored UV sets of corners ``sel`` ((k, U, 2) float32) from their words."""
    sets = words[1].take(sel, axis=0).view("<f4").reshape(len(sel), words[1].shape[1], 2)
    return np.asarray(sets, np.float32)


def _faces_by_key(key: I64) -> tuple[list[int], npt.NDArray[np.intp], list[int]]:
    """The faces' distinct keys (ascending), the faces grouped by key (ascending, file order
    within a key) and where each key's faces start (plus the end)."""
    counts = np.bincount(key)
    keys = np.flatnonzero(counts)
    bounds = [0, *np.cumsum(counts.take(keys)).tolist()]
    # Sorted by each key's rank, in 16 bits where it fits: numpy's stable sort of 16-bit
    # integers is a radix sort, several times faster than its merge sort of wider ones.
    rank = np.zeros(len(counts), np.uint16 if len(keys) <= 1 << 16 else np.uint32)
    rank[keys] = np.arange(len(keys))
    return keys.tolist(), np.argsort(rank.take(key), kind="stable"), bounds


def _gl_corners(faces: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    """The corners of ``faces`` in glTF order (each face's corners 0, 2, 1), written column by
    column (a broadcast over rows of 3 is several times slower)."""
    out = np.empty((len(faces), 3), np.intp)
    np.multiply(faces, 3, out=out[:, 0])
    np.add(out[:, 0], 2, out=out[:, 1])
    np.add(out[:, 0], 1, out=out[:, 2])
    return out.reshape(-1)


def _finite_lengths(a: F64) -> tuple[F64, F64]:
    """Rows of 3 with NaN and infinities made 0 (where there are any) and their lengths. A
    row's length is finite only where its values are: the values are checked only when some
    length is not (non-finite or huge values)."""
    length: F64 = row_lengths(a)
    if np.isfinite(length).all() or np.isfinite(a).all():
        return a, length
    a = np.nan_to_num(a, nan=0.0, posinf=0.0, neginf=0.0)
    return a, row_lengths(a)


def _uv_sets(uv: npt.NDArray[np.float32], rows: npt.NDArray[Any]
             ) -> list[npt.NDArray[np.float32]]:
    """UV sets ``uv[rows, s]`` as contiguous (k, 2) arrays: the (u, v) pairs gathered and
    transposed as 64-bit words (a copy of a (k, 2) float column is several times slower)."""
    n, nsets = uv.shape[0], uv.shape[1]
    words = np.ascontiguousarray(uv).view(np.uint64).reshape(n, nsets)
    by_set = words.take(rows, axis=0).T.copy()
    return [by_set[s].view(np.float32).reshape(-1, 2) for s in range(nsets)]


def _add_influences(prims: list[Primitive], inf: Influences, verts: npt.NDArray[np.int64],
                    starts: list[int]) -> None:
    """The joints and weights of primitives whose vertices are ``verts`` (consecutive, the
    primitives' first at ``starts``): as many sets of 4 as each primitive's vertices use."""
    joints = inf.joints.take(verts, axis=0)
    weights = inf.weights.take(verts, axis=0)
    used = np.maximum.reduceat(inf.counts.take(verts), starts).tolist()
    ends = [*starts[1:], len(verts)]
    cols = joints.shape[1]
    for prim, a, b, u in zip(prims, starts, ends, used, strict=True):
        width = max(4, -(-int(u) // 4) * 4)
        if width >= cols:
            prim.joints, prim.weights = joints[a:b], weights[a:b]
        else:
            prim.joints = np.ascontiguousarray(joints[a:b, :width])
            prim.weights = np.ascontiguousarray(weights[a:b, :width])


def _fake_bones(unit: Unit, main: Any, nb: int) -> npt.NDArray[np.int64]:
    """:func:`fake_body_substitute` of a unit's bones (none: each bone its own)."""
    bs = unit.doc.bones
    if bs is None:
        return np.arange(nb)
    return fake_body_substitute(bs.names, bs.parents, main, nb)
