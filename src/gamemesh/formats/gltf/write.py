"""Scene -> glTF 2.0 (GLB, or .gltf with a .bin and PNG images beside it).

Gather, then serialize (as glTF-Blender-IO does): every array goes through one builder that
aligns to 4 bytes, writes equal data once, and records min/max where the spec asks for them.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError, Note
from ...scene import Image, Material, Primitive, Sampler, Scene, TextureRef
from ...scene.math import (
    column_bounds,
    matrix_to_trs,
    normalize_rows,
    quat_normalize,
    trs_to_matrix,
)
from ...scene.skinning import fold_repeated_joints
from ...textures import encode_png
from .extras import clean_json, pack_extras

FLOAT, UBYTE, USHORT, UINT = 5126, 5121, 5123, 5125
ARRAY_BUFFER, ELEMENT_ARRAY_BUFFER = 34962, 34963
_TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}
FMT = "gltf"
_NP = {FLOAT: np.float32, UBYTE: np.uint8, USHORT: np.uint16, UINT: np.uint32}


def _version() -> str:
    from ... import __version__

    return __version__


_SAMPLED = 1 << 16


def _fingerprint(mv: memoryview) -> tuple[int, ...]:
    """A cheap fingerprint to find dedup candidates (equality is then checked byte for byte).
    Small data is checksummed whole; large data by its head, tail and 4 KB spread across it,
    so fingerprinting a 100 MB vertex buffer costs microseconds, not a pass over it."""
    n = mv.nbytes
    if n <= _SAMPLED:
        return (zlib.adler32(mv),)
    spread = np.frombuffer(mv, dtype=np.uint8)[:: n // 4096][:4096]
    return (zlib.adler32(mv[:1024]), zlib.adler32(mv[-1024:]), zlib.adler32(spread.tobytes()))


@dataclass
class _Builder:
    """The binary chunk (kept as a list of pieces, joined once) and the JSON arrays that index
    into it. Equal data is stored once: a cheap fingerprint (length, Adler-32) finds candidates
    and an exact byte comparison confirms them, so there is no collision risk."""

    pieces: list[memoryview] = field(default_factory=list)
    size: int = 0
    views: list[dict[str, Any]] = field(default_factory=list)
    accessors: list[dict[str, Any]] = field(default_factory=list)
    _by_print: dict[tuple[Any, ...], list[tuple[int, memoryview]]] = field(
        default_factory=dict)
    _acc_keys: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def view(self, data: bytes | memoryview, target: int | None = None,
             layout: tuple[int, int] | None = None) -> int:
        """A view of ``data``, shared with an earlier one only when bytes, target and element
        ``layout`` (component type, width) all agree: two accessors of different layouts on
        one view would need a byteStride."""
        mv = memoryview(data)
        if mv.format != "B" or mv.ndim != 1:
            mv = mv.cast("B")
        fp = (mv.nbytes, _fingerprint(mv), target, layout)
        for index, seen in self._by_print.get(fp, []):
            # numpy compares with memcmp; memoryview == walks the bytes one by one.
            if np.array_equal(np.frombuffer(seen, np.uint8), np.frombuffer(mv, np.uint8)):
                return index
        pad = (-self.size) % 4
        if pad:
            self.pieces.append(memoryview(b"\0" * pad))
            self.size += pad
        v: dict[str, Any] = {"buffer": 0, "byteOffset": self.size, "byteLength": mv.nbytes}
        if target is not None:
            v["target"] = target
        self.pieces.append(mv)
        self.size += mv.nbytes
        self.views.append(v)
        self._by_print.setdefault(fp, []).append((len(self.views) - 1, mv))
        return len(self.views) - 1

    def accessor(self, arr: npt.ArrayLike, component: int, *, target: int | None = None,
                 minmax: bool = False, normalized: bool = False, width: int | None = None) -> int:
        a = arr if type(arr) is np.ndarray else np.asarray(arr)
        if a.dtype != _NP[component] or not a.flags.c_contiguous:
            a = np.ascontiguousarray(a.astype(_NP[component], copy=False))
        n = a.shape[0]
        w = width if width is not None else (a.size // n if n else 1)
        flat = a.reshape(n, w)
        # No copy: the piece is a view that keeps the array alive.
        view = self.view(flat.reshape(-1).view(np.uint8).data, target, (component, w))
        key = (view, component, w, normalized, minmax)
        if key in self._acc_keys:
            return self._acc_keys[key]
        acc: dict[str, Any] = {"bufferView": view, "componentType": component,
                               "count": int(n), "type": _TYPES[w]}
        if normalized:
            acc["normalized"] = True
        if minmax and n:
            lo, hi = column_bounds(flat)
            conv = float if component == FLOAT else int
            acc["min"] = [conv(x) for x in lo]
            acc["max"] = [conv(x) for x in hi]
        self.accessors.append(acc)
        self._acc_keys[key] = len(self.accessors) - 1
        return len(self.accessors) - 1

    def packed(self, arrays: list[npt.NDArray[np.float32]]) -> list[int]:
        """Float accessors for many small (N, width) arrays (a clip's channel outputs) laid
        end to end in one buffer view: a view per channel cost more to write (and to read)
        than its data. Equal arrays share one accessor."""
        uniq: list[npt.NDArray[np.float32]] = []
        slot: list[int] = []
        seen: dict[tuple[Any, ...], list[int]] = {}
        for a in arrays:
            key = (a.shape, zlib.adler32(a.data))
            same = -1
            for cand in seen.get(key, ()):
                if np.array_equal(uniq[cand], a):
                    same = cand
                    break
            if same < 0:
                same = len(uniq)
                seen.setdefault(key, []).append(same)
                uniq.append(a)
            slot.append(same)
        if not uniq:
            return []
        data = np.concatenate(uniq, axis=None)
        # Width 0: a layout no single accessor has, so this view is never shared with one.
        view = self.view(data.view(np.uint8).data, None, (FLOAT, 0))
        first = len(self.accessors)
        offset = 0
        for u in uniq:
            acc: dict[str, Any] = {"bufferView": view, "byteOffset": offset,
                                   "componentType": FLOAT, "count": int(u.shape[0]),
                                   "type": _TYPES[u.shape[1]]}
            if not offset:
                del acc["byteOffset"]
            self.accessors.append(acc)
            offset += u.nbytes
        return [first + k for k in slot]

    def padded_pieces(self) -> list[memoryview]:
        pad = (-self.size) % 4
        return [*self.pieces, memoryview(b"\0" * pad)] if pad else list(self.pieces)


@dataclass
class _Out:
    """Everything gathered for one glTF document."""

    scene: Scene
    external: bool  # .gltf with files beside it
    stem: str
    notes: list[Note]
    b: _Builder = field(default_factory=_Builder)
    images: list[dict[str, Any]] = field(default_factory=list)
    image_map: dict[int, int | None] = field(default_factory=dict)
    samplers: list[dict[str, Any]] = field(default_factory=list)
    sampler_map: dict[tuple[Any, ...], int] = field(default_factory=dict)
    textures: list[dict[str, Any]] = field(default_factory=list)
    texture_map: dict[tuple[int, int], int] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    extensions: set[str] = field(default_factory=set)
    mesh_map: dict[int, int] = field(default_factory=dict)


def _image(out: _Out, index: int) -> int | None:
    if index in out.image_map:
        return out.image_map[index]
    img: Image = out.scene.images[index]
    if img.data is not None and img.mime_type in ("image/png", "image/jpeg"):
        data, mime = img.data, img.mime_type
    elif img.pixels is not None:
        data, mime = encode_png(img.pixels), "image/png"
    else:
        out.notes.append(Note("gltf.image_missing", f"image {img.name or index!r} "
                              f"({img.uri or 'no source'}) has no pixels; its texture is left out"))
        out.image_map[index] = None
        return None
    entry: dict[str, Any] = {"name": img.name} if img.name else {}
    if out.external:
        ext = ".png" if mime == "image/png" else ".jpg"
        base = _safe_stem(img.name or f"image{index}")
        fname = f"{out.stem}_{len(out.images)}_{base}{ext}"
        out.files[fname] = data
        entry["uri"] = fname
    else:
        entry["bufferView"] = out.b.view(data)
        entry["mimeType"] = mime
    extras = dict(img.extras)
    if img.uri:
        extras.setdefault("source_uri", img.uri)
    if extras:
        entry["extras"] = pack_extras(extras)
    out.images.append(entry)
    out.image_map[index] = len(out.images) - 1
    return out.image_map[index]


def _safe_stem(name: str) -> str:
    stem = PurePosixPath(name.replace("\\", "/")).stem or "image"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)[:60] or "image"


def _sampler(out: _Out, s: Sampler) -> int:
    key = s.key()
    if key not in out.sampler_map:
        d: dict[str, Any] = {"wrapS": s.wrap_s, "wrapT": s.wrap_t}
        if s.mag_filter is not None:
            d["magFilter"] = s.mag_filter
        if s.min_filter is not None:
            d["minFilter"] = s.min_filter
        out.samplers.append(d)
        out.sampler_map[key] = len(out.samplers) - 1
    return out.sampler_map[key]


def _texture_info(out: _Out, ref: TextureRef | None, scale_key: str | None = None
                  ) -> dict[str, Any] | None:
    if ref is None or not 0 <= ref.image < len(out.scene.images):
        return None
    src = _image(out, ref.image)
    if src is None:
        return None
    samp = _sampler(out, ref.sampler or out.scene.images[ref.image].sampler)
    key = (src, samp)
    if key not in out.texture_map:
        out.textures.append({"source": src, "sampler": samp})
        out.texture_map[key] = len(out.textures) - 1
    info: dict[str, Any] = {"index": out.texture_map[key]}
    if ref.texcoord:
        info["texCoord"] = ref.texcoord
    if scale_key and ref.scale != 1.0:
        info[scale_key] = ref.scale
    if ref.extensions:
        info["extensions"] = clean_json(ref.extensions)
        out.extensions.update(ref.extensions)
    return info


def _material(out: _Out, m: Material) -> dict[str, Any]:
    pbr: dict[str, Any] = {"metallicFactor": float(m.metallic_factor),
                           "roughnessFactor": float(m.roughness_factor)}
    if tuple(m.base_color_factor) != (1.0, 1.0, 1.0, 1.0):
        pbr["baseColorFactor"] = [float(x) for x in m.base_color_factor]
    for key, ref in (("baseColorTexture", m.base_color_texture),
                     ("metallicRoughnessTexture", m.metallic_roughness_texture)):
        info = _texture_info(out, ref)
        if info:
            pbr[key] = info
    d: dict[str, Any] = {"pbrMetallicRoughness": pbr}
    if m.name:
        d["name"] = m.name
    for key, ref, sk in (("normalTexture", m.normal_texture, "scale"),
                         ("occlusionTexture", m.occlusion_texture, "strength"),
                         ("emissiveTexture", m.emissive_texture, None)):
        info = _texture_info(out, ref, sk)
        if info:
            d[key] = info
    if any(m.emissive_factor):
        d["emissiveFactor"] = [float(x) for x in m.emissive_factor]
    if m.alpha_mode != "OPAQUE":
        d["alphaMode"] = m.alpha_mode
        if m.alpha_mode == "MASK" and m.alpha_cutoff != 0.5:
            d["alphaCutoff"] = float(m.alpha_cutoff)
    if m.double_sided:
        d["doubleSided"] = True
    ext: dict[str, Any] = {}
    if m.unlit:
        ext["KHR_materials_unlit"] = {}
    if m.emissive_strength != 1.0:
        ext["KHR_materials_emissive_strength"] = {"emissiveStrength": float(m.emissive_strength)}
    if ext:
        d["extensions"] = ext
        out.extensions.update(ext)
    if m.extras:
        d["extras"] = pack_extras(m.extras)
    return d


def _weights(joints: npt.NDArray[Any], weights: npt.NDArray[Any]
             ) -> tuple[npt.NDArray[Any], npt.NDArray[np.float32]]:
    """Weights summing to 1 in float32, no joint named twice for a vertex, and joint 0
    wherever the weight is 0 (the validator flags a zero-weight slot that names a joint).
    Weights that already satisfy all three pass through untouched."""
    w32 = np.asarray(weights, dtype=np.float32)
    j = np.asarray(joints)
    # Slot-major (numpy's reductions across narrow rows are ~10x slower, and a matrix product
    # wakes the BLAS threads, whose spinning costs more CPU time than the sum itself).
    wt = np.ascontiguousarray(w32.T)
    dup = _repeated_joints(j, wt)
    sums = wt.sum(axis=0)
    if not dup.any() and w32.min(initial=0.0) >= 0 and \
            np.abs(sums - 1.0).max(initial=0.0) <= 1e-6:
        return np.where(w32 > 0, j, 0), w32
    # A joint named twice for one vertex is invalid glTF: fold later slots into the first.
    w = fold_repeated_joints(j, np.clip(w32.astype(np.float64), 0.0, None))
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total > 0, w / np.where(total == 0, 1, total), 0.0)
    w[total[:, 0] == 0, 0] = 1.0
    out = w.astype(np.float32)
    # Push the float32 rounding error into each row's largest weight.
    err = 1.0 - out.astype(np.float64).sum(axis=1)
    big = np.argmax(out, axis=1)
    out[np.arange(len(out)), big] += err.astype(np.float32)
    return np.where(out > 0, j, 0), out


def _repeated_joints(j: npt.NDArray[Any], wt: npt.NDArray[np.float32]) -> npt.NDArray[np.bool_]:
    """Per vertex: does a joint appear in two slots that both have a positive weight (``wt``:
    the weights slot-major)? Only slots that hold a positive weight somewhere are compared,
    one contiguous row per slot, a slot's zero-weight entries getting a distinct negative id
    so that they never match."""
    n, k = j.shape
    dup = np.zeros(n, dtype=bool)
    pos = wt > 0
    cols = [c for c in range(k) if pos[c].any()]
    if len(cols) < 2:
        return dup
    lo, hi = (int(j.min()), int(j.max())) if j.size else (0, 0)
    if lo < 0 or hi >= 2**31:
        for ia, a in enumerate(cols):
            for b in cols[ia + 1:]:
                dup |= (j[:, a] == j[:, b]) & pos[a] & pos[b]
        return dup
    jt = j.T
    if j.dtype.kind == "u" and hi < np.iinfo(j.dtype).max - k:
        # Unsigned ids (uint16 from most readers): the distinct ids above every joint in
        # the same type (no widening pass, half the bytes to compare).
        top = np.iinfo(j.dtype).max
        ids = [np.where(pos[c], jt[c], j.dtype.type(top - c)) for c in cols]
    else:
        ids = [np.where(pos[c], jt[c].astype(np.int32), np.int32(-1 - c)) for c in cols]
    for a in range(len(ids)):
        for b in range(a + 1, len(ids)):
            dup |= ids[a] == ids[b]
    return dup


def _unit_rows(v: npt.ArrayLike, fallback: tuple[float, float, float]) -> npt.NDArray[np.float32]:
    """Rows scaled to length 1 (the validator demands unit normals); zero rows get
    ``fallback``. Rows already of unit length are not touched."""
    a = np.ascontiguousarray(np.asarray(v, dtype=np.float32))
    # The squares in one pass, summed column by column ((x*x + y*y) + z*z, the order einsum's
    # "ij,ij->i" takes, so the same bits): twice as fast as einsum on such narrow rows.
    with np.errstate(over="ignore"):  # a huge (hostile) normal's square is inf: not unit
        sq3 = a * a
        sq = sq3[:, 0] + sq3[:, 1]
        sq += sq3[:, 2]
    if np.abs(sq - 1.0).max(initial=0.0) <= 1e-5:
        return a
    return normalize_rows(a, fallback)


def _primitive(out: _Out, p: Primitive) -> dict[str, Any]:
    b = out.b
    attrs: dict[str, int] = {
        "POSITION": b.accessor(p.positions, FLOAT, target=ARRAY_BUFFER, minmax=True, width=3)}
    if p.normals is not None:
        attrs["NORMAL"] = b.accessor(_unit_rows(p.normals, (0.0, 1.0, 0.0)), FLOAT,
                                     target=ARRAY_BUFFER, width=3)
    if p.tangents is not None:
        t = np.asarray(p.tangents, dtype=np.float32).copy()
        t[:, :3] = _unit_rows(t[:, :3], (1.0, 0.0, 0.0))
        t[:, 3] = np.where(t[:, 3] < 0, -1.0, 1.0)
        attrs["TANGENT"] = b.accessor(t, FLOAT, target=ARRAY_BUFFER, width=4)
    for i, uv in enumerate(p.texcoords):
        attrs[f"TEXCOORD_{i}"] = b.accessor(uv, FLOAT, target=ARRAY_BUFFER, width=2)
    for i, c in enumerate(p.colors):
        col = np.clip(np.asarray(c, dtype=np.float32), 0.0, 1.0)
        attrs[f"COLOR_{i}"] = b.accessor(col, FLOAT, target=ARRAY_BUFFER, width=col.shape[1])
    if p.joints is not None and p.weights is not None:
        j, w = _weights(p.joints, p.weights)
        comp = UBYTE if (j.size == 0 or int(j.max()) < 256) else USHORT
        for k in range(j.shape[1] // 4):
            attrs[f"JOINTS_{k}"] = b.accessor(j[:, 4 * k:4 * k + 4], comp, target=ARRAY_BUFFER,
                                              width=4)
            attrs[f"WEIGHTS_{k}"] = b.accessor(w[:, 4 * k:4 * k + 4], FLOAT,
                                               target=ARRAY_BUFFER, width=4)
    d: dict[str, Any] = {"attributes": attrs}
    if p.indices is not None:
        idx = np.asarray(p.indices)
        comp = USHORT if (idx.size == 0 or int(idx.max()) < 65535) else UINT
        d["indices"] = b.accessor(idx, comp, target=ELEMENT_ARRAY_BUFFER, width=1)
    if p.mode != 4:
        d["mode"] = p.mode
    if p.material is not None:
        d["material"] = p.material
    if p.targets:
        d["targets"] = [_target(out, t) for t in p.targets]
    extras, ext = _promote(out, p.extras)
    if ext:
        d["extensions"] = ext
    if extras:
        d["extras"] = pack_extras(extras)
    return d


# Extensions the scene carries as plain data in ``extras`` under their own name (formats fill
# them: PBA's civilisation texture sets are KHR_materials_variants); written as real extensions.
PROMOTED_EXTENSIONS = frozenset({"KHR_materials_variants"})


def _promote(out: _Out, extras: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split extras into (the rest, the glTF extensions they carry)."""
    ext = {k: clean_json(v) for k, v in extras.items() if k in PROMOTED_EXTENSIONS}
    out.extensions.update(ext)
    return {k: v for k, v in extras.items() if k not in PROMOTED_EXTENSIONS}, ext


def _target(out: _Out, t: Any) -> dict[str, int]:
    d: dict[str, int] = {}
    if t.positions is not None:
        d["POSITION"] = out.b.accessor(t.positions, FLOAT, target=ARRAY_BUFFER, minmax=True,
                                       width=3)
    if t.normals is not None:
        d["NORMAL"] = out.b.accessor(t.normals, FLOAT, target=ARRAY_BUFFER, width=3)
    if t.tangents is not None:
        d["TANGENT"] = out.b.accessor(np.asarray(t.tangents)[:, :3], FLOAT, target=ARRAY_BUFFER,
                                      width=3)
    return d


def _meshes(out: _Out) -> list[dict[str, Any]]:
    meshes: list[dict[str, Any]] = []
    for mi, mesh in enumerate(out.scene.meshes):
        prims = [p for p in mesh.primitives if p.vertex_count > 0]
        if len(prims) < len(mesh.primitives):
            out.notes.append(Note("gltf.empty_primitive", f"mesh {mesh.name!r}: "
                                  f"{len(mesh.primitives) - len(prims)} empty primitive(s) "
                                  "left out (glTF needs at least one vertex)", "info"))
        if not prims:
            continue
        d: dict[str, Any] = {"primitives": [_primitive(out, p) for p in prims]}
        if mesh.name:
            d["name"] = mesh.name
        if mesh.weights:
            d["weights"] = [float(w) for w in mesh.weights]
        extras = dict(mesh.extras)
        if mesh.target_names:
            extras["targetNames"] = list(mesh.target_names)
        if extras:
            d["extras"] = pack_extras(extras)
        out.mesh_map[mi] = len(meshes)
        meshes.append(d)
    return meshes


def _column_major(m: npt.ArrayLike) -> list[float]:
    return [float(x) for x in np.asarray(m, dtype=np.float64).T.reshape(-1)]


def _nodes(out: _Out) -> list[dict[str, Any]]:
    nodes = []
    # Every rotation normalised in one pass (row by row the same arithmetic as one at a time).
    rotations = quat_normalize(np.array([n.rotation for n in out.scene.nodes],
                                        dtype=np.float64).reshape(-1, 4)).tolist()
    animated = {ch.node for a in out.scene.animations for ch in a.channels
                if ch.path != "weights"}
    for i, (n, q) in enumerate(zip(out.scene.nodes, rotations, strict=True)):
        d: dict[str, Any] = {}
        if n.name:
            d["name"] = n.name
        if n.matrix is not None and _matrix_kept(out, i, animated):
            d["matrix"] = _column_major(n.matrix)
        elif n.matrix is not None:
            t, r, sc = matrix_to_trs(n.matrix)
            d.update({"translation": t.tolist(), "rotation": quat_normalize(r).tolist(),
                      "scale": sc.tolist()})
        else:
            if any(n.translation):
                d["translation"] = [float(x) for x in n.translation]
            if q != [0.0, 0.0, 0.0, 1.0]:
                d["rotation"] = q
            if tuple(n.scale) != (1.0, 1.0, 1.0):
                d["scale"] = [float(x) for x in n.scale]
        if n.mesh is not None and n.mesh in out.mesh_map:
            d["mesh"] = out.mesh_map[n.mesh]
            if n.skin is not None:
                d["skin"] = n.skin
        if n.children:
            d["children"] = list(n.children)
        if n.light is not None and 0 <= n.light < len(out.scene.lights):
            d["extensions"] = {"KHR_lights_punctual": {"light": n.light}}
        if n.extras:
            d["extras"] = pack_extras(n.extras)
        nodes.append(d)
    return nodes


def _matrix_kept(out: _Out, i: int, animated: set[int]) -> bool:
    """Whether node ``i``'s matrix can be written as a matrix: glTF wants one decomposable to
    TRS, on a node no channel moves. Otherwise its TRS is written (the nearest, with a note,
    when the matrix has shear)."""
    m = np.asarray(out.scene.nodes[i].matrix, dtype=np.float64)
    t, r, s = matrix_to_trs(m)
    if not np.allclose(trs_to_matrix(t, r, s), m, atol=1e-5):
        out.notes.append(Note("gltf.matrix_shear", f"node {i} "
                              f"({out.scene.nodes[i].name!r}): its matrix has shear, which glTF "
                              "cannot hold; written as its nearest translation, rotation and "
                              "scale"))
        return False
    return i not in animated


def _lights(out: _Out) -> dict[str, Any] | None:
    """The root KHR_lights_punctual block, or None when the scene has no lights."""
    if not out.scene.lights:
        return None
    lights = []
    for lt in out.scene.lights:
        d: dict[str, Any] = {"type": lt.type, "color": [float(c) for c in lt.color],
                             "intensity": float(lt.intensity)}
        if lt.name:
            d["name"] = lt.name
        if lt.range is not None and lt.type != "directional" and lt.range > 0:
            d["range"] = float(lt.range)
        if lt.type == "spot":
            d["spot"] = {}
        if lt.extras:
            d["extras"] = pack_extras(lt.extras)
        lights.append(d)
    out.extensions.add("KHR_lights_punctual")
    return {"lights": lights}


def _skins(out: _Out) -> list[dict[str, Any]]:
    skins = []
    for s in out.scene.skins:
        d: dict[str, Any] = {"joints": list(s.joints)}
        if s.inverse_bind_matrices is not None:
            ibm = np.asarray(s.inverse_bind_matrices, dtype=np.float32).transpose(0, 2, 1)
            d["inverseBindMatrices"] = out.b.accessor(ibm.reshape(-1, 16), FLOAT, width=16)
        if s.skeleton is not None:
            d["skeleton"] = s.skeleton
        if s.name:
            d["name"] = s.name
        if s.extras:
            d["extras"] = pack_extras(s.extras)
        skins.append(d)
    return skins


def _unit_rotations(channels: list[Any]) -> dict[int, npt.NDArray[np.float32]]:
    """The linear/step rotation channels' keys made unit length, by channel index: normalised
    together in one pass (a clip has a channel per bone; row by row the same arithmetic)."""
    picked = [(k, np.asarray(ch.values, dtype=np.float32)) for k, ch in enumerate(channels)
              if ch.path == "rotation" and ch.interpolation != "CUBICSPLINE" and len(ch.times)]
    picked = [(k, v) for k, v in picked if v.ndim == 2 and v.shape[1] == 4]
    if not picked:
        return {}
    unit = quat_normalize(np.concatenate([v for _, v in picked])).astype(np.float32)
    out: dict[int, npt.NDArray[np.float32]] = {}
    start = 0
    for k, v in picked:
        out[k] = unit[start:start + len(v)]
        start += len(v)
    return out


def _animations(out: _Out) -> list[dict[str, Any]]:
    anims = []
    for a in out.scene.animations:
        samplers: list[dict[str, Any]] = []
        channels: list[dict[str, Any]] = []
        rotations = _unit_rotations(a.channels)
        inputs: dict[int, int] = {}  # id(times) -> accessor: clips share one times array
        keyed: list[tuple[Any, int]] = []
        outputs: list[npt.NDArray[np.float32]] = []
        for k, ch in enumerate(a.channels):
            if not len(ch.times):
                continue
            vals = rotations.get(k)
            if vals is None:
                vals = np.asarray(ch.values, dtype=np.float32)
                if ch.path == "rotation" and ch.interpolation != "CUBICSPLINE":
                    vals = quat_normalize(vals).astype(np.float32)
            width = 1 if ch.path == "weights" else vals.shape[-1]
            inp = inputs.get(id(ch.times), -1)
            if inp < 0:
                inp = inputs[id(ch.times)] = out.b.accessor(
                    np.asarray(ch.times, dtype=np.float32), FLOAT, minmax=True, width=1)
            keyed.append((ch, inp))
            outputs.append(np.ascontiguousarray(vals.reshape(-1, width)))
        for (ch, inp), outp in zip(keyed, out.b.packed(outputs), strict=True):
            samplers.append({"input": inp, "output": outp, "interpolation": ch.interpolation})
            channels.append({"sampler": len(samplers) - 1,
                             "target": {"node": ch.node, "path": ch.path}})
        if not channels:
            out.notes.append(Note("gltf.empty_animation", f"animation {a.name!r} has no keys; "
                                  "left out", "info"))
            continue
        d: dict[str, Any] = {"channels": channels, "samplers": samplers}
        if a.name:
            d["name"] = a.name
        if a.extras:
            d["extras"] = pack_extras(a.extras)
        anims.append(d)
    return anims


def build_document(scene: Scene, *, external: bool, stem: str, notes: list[Note]
                   ) -> tuple[dict[str, Any], list[memoryview], dict[str, bytes]]:
    """The glTF JSON, the binary buffer's pieces and (for .gltf) the image files beside it."""
    out = _Out(scene, external, stem, notes)
    doc: dict[str, Any] = {"asset": {"version": "2.0", "generator": f"gamemesh {_version()}"}}
    extras, root_ext = _promote(out, scene.extras)
    lights = _lights(out)
    if lights is not None:
        root_ext["KHR_lights_punctual"] = lights
    if root_ext:
        doc["extensions"] = root_ext
    if scene.notes:
        extras["gamemesh_notes"] = [n.to_dict() for n in scene.notes]
    if extras:
        doc["asset"]["extras"] = pack_extras(extras)
    meshes = _meshes(out)
    materials = [_material(out, m) for m in scene.materials]
    # Images no material uses are still the file's content (a texture-only Papa, a VRAM page).
    for i in range(len(scene.images)):
        _image(out, i)
    parts: dict[str, Any] = {
        "scenes": [{**({"nodes": list(scene.roots)} if scene.roots else {}),
                    **({"name": scene.name} if scene.name else {})}],
        "scene": 0,
        "nodes": _nodes(out),
        "meshes": meshes,
        "materials": materials,
        "skins": _skins(out),
        "animations": _animations(out),
        "textures": out.textures,
        "samplers": out.samplers,
        "images": out.images,
    }
    doc.update({k: v for k, v in parts.items() if v != [] or k == "scenes"})
    if out.extensions:
        doc["extensionsUsed"] = sorted(out.extensions)
    pieces = out.b.padded_pieces()
    length = sum(p.nbytes for p in pieces)
    if length:
        doc["bufferViews"] = out.b.views
        doc["accessors"] = out.b.accessors
        doc["buffers"] = [{"byteLength": length}]
        if external:
            doc["buffers"][0]["uri"] = f"{stem}.bin"
    return doc, pieces, out.files


def _dumps(doc: dict[str, Any], **layout: Any) -> str:
    """The JSON text; a NaN or infinity (which JSON cannot hold and every reader refuses) is a
    FormatError naming where it is, never a bare ``NaN`` in the file."""
    try:
        return json.dumps(doc, ensure_ascii=False, allow_nan=False, **layout)
    except ValueError:
        where = _non_finite_path(doc)
        msg = "a number to write is NaN or infinite (glTF JSON cannot hold it)"
        raise FormatError(FMT, msg, field=where, expected="finite numbers",
                          actual="NaN or infinity") from None


def _non_finite_path(doc: Any) -> str:
    """The JSON path of the first NaN or infinity in ``doc`` (walked without recursion)."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return path.lstrip(".")
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return "json"


def to_glb(doc: dict[str, Any], pieces: list[memoryview]) -> bytes:
    """The GLB container, joined in one copy."""
    js = _dumps(doc, separators=(",", ":")).encode("utf-8")
    js += b" " * ((-len(js)) % 4)
    binary = sum(p.nbytes for p in pieces)
    total = 12 + 8 + len(js) + (8 + binary if binary else 0)
    parts: list[bytes | memoryview] = [struct.pack("<III", 0x46546C67, 2, total),
                                       struct.pack("<II", len(js), 0x4E4F534A), js]
    if binary:
        parts.append(struct.pack("<II", binary, 0x004E4942))
        parts.extend(pieces)
    return b"".join(parts)


def write_glb(scene: Scene, notes: list[Note] | None = None) -> bytes:
    """A whole scene as GLB bytes (images embedded)."""
    doc, pieces, _ = build_document(scene, external=False, stem="scene",
                                    notes=notes if notes is not None else [])
    return to_glb(doc, pieces)


def write_gltf(scene: Scene, name: str, notes: list[Note]) -> dict[str, bytes]:
    """``name`` (.gltf) with ``stem.bin`` and the PNG images beside it."""
    stem = PurePosixPath(name).stem or "scene"
    doc, pieces, files = build_document(scene, external=True, stem=stem, notes=notes)
    out = {name: _dumps(doc, indent=1).encode("utf-8")}
    if pieces:
        out[f"{stem}.bin"] = b"".join(pieces)
    out.update(files)
    return out


