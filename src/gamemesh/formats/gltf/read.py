"""glTF 2.0 (GLB or .gltf) -> Scene.

Buffers may be the GLB binary chunk, data URIs or files beside the .gltf (``document``);
accessors of every component type, normalized integers, byte strides and sparse substitution are
decoded with numpy (``accessors``). Every index read from the JSON is checked, so a hostile file
ends in a FormatError.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError
from ...registry import Context
from ...scene import (
    Animation,
    Channel,
    Image,
    Light,
    Material,
    Mesh,
    MorphTarget,
    Node,
    Primitive,
    Sampler,
    Scene,
    Skin,
    TextureRef,
    problems,
)
from ...scene.numbers import require_finite, unit_quaternions
from ...textures import check_pixels, decode_image
from ...textures.encoded import probe_encoded
from .accessors import accessor, floats, view_data
from .document import (
    FMT,
    At,
    GltfDocument,
    err,
    external_uris,
    fetch_uri,
    index_ref,
    int_in,
    list_in,
    parse,
    pointer,
)
from .extras import MAX_JSON_DEPTH, unpack_extras
from .uris import UriRefusedError
from .write import PROMOTED_EXTENSIONS

__all__ = ["MAX_JSON_DEPTH", "GltfDocument", "accessor", "external_uris", "parse", "pointer",
           "to_scene"]

_UNIT_TOLERANCE = 1e-3  # scene.numbers.unit_quaternions': a longer or shorter one is noted


# -- scene -----------------------------------------------------------------------------------
def to_scene(doc: GltfDocument, ctx: Context) -> Scene:
    js = doc.json
    doc._cache.clear()  # the cache shares accessors within one conversion, not across them
    scene = Scene()
    images = list_in(js, "images")
    for i, im in enumerate(images):
        with At(f"images[{i}]"):
            scene.images.append(_image(doc, im, i, ctx))
    textures = list_in(js, "textures")
    samplers = list_in(js, "samplers")
    for i, m in enumerate(list_in(js, "materials")):
        with At(f"materials[{i}]"):
            scene.materials.append(_material(m, i, textures, samplers, scene, ctx))
    for i, m in enumerate(list_in(js, "meshes")):
        with At(f"meshes[{i}]"):
            scene.meshes.append(_mesh(doc, m, i, len(scene.materials)))
    nodes = list_in(js, "nodes")
    for i, n in enumerate(nodes):
        with At(f"nodes[{i}]"):
            scene.nodes.append(_node(n, i, len(nodes), len(scene.meshes),
                                     len(list_in(js, "skins")), ctx))
    for i, s in enumerate(list_in(js, "skins")):
        with At(f"skins[{i}]"):
            scene.skins.append(_skin(doc, s, i, len(nodes)))
    for i, a in enumerate(list_in(js, "animations")):
        with At(f"animations[{i}]"):
            scene.animations.append(_animation(doc, a, i, len(nodes), ctx))
    with At("scenes"):
        _roots(js, scene, len(nodes), ctx)
    with At("asset"):
        _asset_extras(js, scene)
    _check_graph(scene)
    _check_scene(scene)
    return scene


def _check_scene(scene: Scene) -> None:
    """What the scene model's invariants still find (key times that go back, a channel's value
    count) is the file's fault: name the first place, in the file's own indexing (the reader
    keeps glTF's order of meshes, nodes, skins and animations)."""
    found = problems(scene)
    if found:
        place = re.split(r"[ :]", found[0], maxsplit=1)[0]
        more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        raise err(what=f"not a valid glTF scene: {found[0]}{more}", field=place)


def _roots(js: dict[str, Any], scene: Scene, n_nodes: int, ctx: Context) -> None:
    scenes = list_in(js, "scenes")
    default = js.get("scene", 0 if scenes else None)
    if scenes:
        si = int_in(default, "scene", 0, len(scenes))
        roots = [int_in(r, f"scenes[{si}].nodes", 0, n_nodes) for r in scenes[si].get("nodes", [])]
        # A node listed twice is one root either way (a viewer shows it once), but glTF
        # forbids the repeat: kept once, with a note, rather than refusing the whole file.
        scene.roots = list(dict.fromkeys(roots))
        if len(scene.roots) != len(roots):
            twice = [r for r, n in Counter(roots).items() if n > 1][:5]
            ctx.note("gltf.duplicate_root", f"scene {si} lists node(s) {twice} more than once; "
                     "each is kept once")
        scene.name = str(scenes[si].get("name", ""))
        if len(scenes) > 1:
            scene.extras["gltf_scenes"] = [{"name": s.get("name", ""), "nodes": s.get("nodes", [])}
                                           for s in scenes]
            ctx.note("gltf.extra_scenes", f"{len(scenes)} scenes: scene {si} is converted, the "
                     "others are kept in extras only")
    else:
        children = {c for n in scene.nodes for c in n.children}
        scene.roots = [i for i in range(n_nodes) if i not in children]


def _asset_extras(js: dict[str, Any], scene: Scene) -> None:
    asset = js.get("asset", {})
    if isinstance(asset.get("extras"), dict):
        scene.extras.update(unpack_extras(asset["extras"]))
    scene.extras["gltf_generator"] = asset.get("generator", "")
    for key in ("extensionsUsed", "extensionsRequired"):
        if js.get(key):
            scene.extras[key] = js[key]
    root_ext = dict(js.get("extensions") or {})
    _lights(root_ext.pop("KHR_lights_punctual", None), scene)
    for name in PROMOTED_EXTENSIONS & set(root_ext):
        scene.extras[name] = root_ext.pop(name)
    if root_ext:
        scene.extras["gltf_extensions"] = root_ext


def _lights(block: Any, scene: Scene) -> None:
    """KHR_lights_punctual: the root's lights and the nodes that place them."""
    lights = block.get("lights") if isinstance(block, dict) else None
    if not isinstance(lights, list):
        return
    for i, lt in enumerate(lights):
        if not isinstance(lt, dict):
            raise err(what="light", field=f"extensions.KHR_lights_punctual.lights[{i}]",
                      expected="an object", actual=type(lt).__name__)
        kind = lt.get("type", "point")
        rng = lt.get("range")
        scene.lights.append(Light(
            type=kind if kind in ("point", "spot", "directional") else "point",
            name=str(lt.get("name", "")),
            color=_vec(lt.get("color"), 3, (1.0, 1.0, 1.0), f"lights[{i}]"),  # type: ignore[arg-type]
            intensity=float(lt.get("intensity", 1.0)),
            range=float(rng) if isinstance(rng, int | float) else None,
            extras=unpack_extras(lt.get("extras"))))
    for node in scene.nodes:
        ext = node.extras.get("gltf_extensions")
        got = ext.get("KHR_lights_punctual") if isinstance(ext, dict) else None
        idx = got.get("light") if isinstance(got, dict) else None
        if isinstance(idx, int) and 0 <= idx < len(scene.lights):
            node.light = idx
            ext.pop("KHR_lights_punctual")  # type: ignore[union-attr]
            if not ext:
                node.extras.pop("gltf_extensions")


def _check_graph(scene: Scene) -> None:
    parent: dict[int, int] = {}
    for i, n in enumerate(scene.nodes):
        for c in n.children:
            if c in parent or c == i:
                raise err(what="node has two parents or is its own child",
                          field=f"nodes[{i}].children", actual=c)
            parent[c] = i
    # Every node must hang below a parentless one; whatever does not sits on a cycle.
    tops = [i for i in range(len(scene.nodes)) if i not in parent]
    reached = Scene(nodes=scene.nodes, roots=tops).walk()
    if len(reached) != len(scene.nodes):
        stuck = sorted(set(range(len(scene.nodes))) - set(reached))[:5]
        raise err(what="node hierarchy has a cycle", field="nodes", expected="a tree",
                  actual=f"cycle through nodes {stuck}")


def _image(doc: GltfDocument, im: dict[str, Any], i: int, ctx: Context) -> Image:
    name = str(im.get("name", ""))
    uri = im.get("uri")
    mime = im.get("mimeType")
    data: bytes | None
    try:
        if "bufferView" in im:
            data = view_data(doc, {"bufferView": im["bufferView"]}, np.uint8, 1,
                             _view_len(doc, im["bufferView"], f"images[{i}]"),
                             f"images[{i}]").tobytes()
        elif uri is not None:
            data = fetch_uri(str(uri), ctx, f"images[{i}].uri")
        else:
            data = None
    except FormatError as e:
        if "bufferView" in im or isinstance(e, UriRefusedError):
            raise
        ctx.note("gltf.image_missing", f"image {i} ({uri}): {e.detail}")
        data = None
    if data is not None:
        mime = mime or ("image/png" if data[:8] == b"\x89PNG\r\n\x1a\n" else
                        "image/jpeg" if data[:2] == b"\xff\xd8" else None)
    img = Image(name=name or (Path(str(uri)).stem if uri and not str(uri).startswith("data:")
                              else ""), data=data, mime_type=mime,
                uri=None if uri is None or str(uri).startswith("data:") else str(uri))
    if data is not None and not _keeps_encoded(data, mime):
        try:
            img.pixels = decode_image(data, FMT)
        except FormatError as e:
            ctx.note("gltf.image_undecodable", f"image {i}: {e.detail}; kept as bytes")
    if isinstance(im.get("extras"), dict):
        img.extras = unpack_extras(im["extras"])
    return img


def _keeps_encoded(data: bytes, mime: str | None) -> bool:
    """True when an image's bytes stay encoded (``pixels`` None): a whole PNG or JPEG of the
    type the glTF declares, within the pixel limit. Every writer decodes ``data`` when it needs
    pixels (a GLB embeds the bytes as they are), so decoding here cost most of loading a small
    textured file for nothing. The check is the header and the file's structure (PNG chunk CRCs,
    JPEG markers: see textures.encoded); anything else is decoded now, as before, so a damaged
    image still gets its note here, and so is an image only a raised pixel limit admits
    (``EncodedImage.deferrable``)."""
    try:
        head = probe_encoded(data, FMT)
        if head is None or head.mime_type != mime or not head.deferrable:
            return False
        check_pixels(head.width, head.height, FMT, f"{head.kind}.size", len(data), head.kind)
    except FormatError:
        return False
    return True


def _view_len(doc: GltfDocument, vi: Any, where: str) -> int:
    views = list_in(doc.json, "bufferViews")
    v = views[int_in(vi, f"{where}.bufferView", 0, len(views))]
    return int_in(v.get("byteLength"), f"{where}.bufferView.byteLength")


def _texref(info: Any, textures: list[Any], samplers: list[Any], n_images: int,
            where: str, scale_key: str | None = None) -> TextureRef | None:
    if not isinstance(info, dict):
        return None
    ti = int_in(info.get("index"), f"{where}.index", 0, len(textures))
    tex = textures[ti]
    src = tex.get("source")
    ext = tex.get("extensions", {}) or {}
    if src is None:  # an image only given through an extension (KHR_texture_basisu, webp)
        src = next((v.get("source") for v in ext.values() if isinstance(v, dict)), None)
    if src is None:
        return None
    ref = TextureRef(image=int_in(src, f"textures[{ti}].source", 0, n_images),
                       texcoord=int_in(info.get("texCoord", 0), f"{where}.texCoord"))
    if scale_key and scale_key in info:
        ref.scale = float(info[scale_key])
    si = tex.get("sampler")
    if si is not None:
        s = samplers[int_in(si, f"textures[{ti}].sampler", 0, len(samplers))]
        ref.sampler = Sampler(s.get("magFilter"), s.get("minFilter"),
                              int(s.get("wrapS", 10497)), int(s.get("wrapT", 10497)))
    if isinstance(info.get("extensions"), dict):
        ref.extensions = dict(info["extensions"])
    return ref


def _material(m: dict[str, Any], i: int, textures: list[Any], samplers: list[Any],
              scene: Scene, ctx: Context) -> Material:
    where = f"materials[{i}]"
    pbr = m.get("pbrMetallicRoughness", {}) or {}
    n = len(scene.images)
    mat = Material(name=str(m.get("name", "")))
    if "baseColorFactor" in pbr:
        mat.base_color_factor = tuple(float(x) for x in pbr["baseColorFactor"][:4])  # type: ignore[assignment]
    mat.metallic_factor = float(pbr.get("metallicFactor", 1.0))
    mat.roughness_factor = float(pbr.get("roughnessFactor", 1.0))
    mat.base_color_texture = _texref(pbr.get("baseColorTexture"), textures, samplers, n,
                                     f"{where}.baseColorTexture")
    mat.metallic_roughness_texture = _texref(pbr.get("metallicRoughnessTexture"), textures,
                                             samplers, n, f"{where}.metallicRoughnessTexture")
    mat.normal_texture = _texref(m.get("normalTexture"), textures, samplers, n,
                                 f"{where}.normalTexture", "scale")
    mat.occlusion_texture = _texref(m.get("occlusionTexture"), textures, samplers, n,
                                    f"{where}.occlusionTexture", "strength")
    mat.emissive_texture = _texref(m.get("emissiveTexture"), textures, samplers, n,
                                   f"{where}.emissiveTexture")
    if "emissiveFactor" in m:
        mat.emissive_factor = tuple(float(x) for x in m["emissiveFactor"][:3])  # type: ignore[assignment]
    mode = m.get("alphaMode", "OPAQUE")
    mat.alpha_mode = mode if mode in ("OPAQUE", "MASK", "BLEND") else "OPAQUE"
    mat.alpha_cutoff = float(m.get("alphaCutoff", 0.5))
    mat.double_sided = bool(m.get("doubleSided", False))
    ext = dict(m.get("extensions", {}) or {})
    mat.unlit = "KHR_materials_unlit" in ext
    ext.pop("KHR_materials_unlit", None)
    es = ext.pop("KHR_materials_emissive_strength", None)
    if isinstance(es, dict):
        mat.emissive_strength = float(es.get("emissiveStrength", 1.0))
    if isinstance(m.get("extras"), dict):
        mat.extras = unpack_extras(m["extras"])
    if ext:
        mat.extras["gltf_extensions"] = ext
        ctx.note("gltf.material_extensions", f"material {mat.name or i!r}: "
                 f"{', '.join(sorted(ext))} kept in extras only", "info")
    return mat


def _mesh(doc: GltfDocument, m: dict[str, Any], i: int, n_mats: int) -> Mesh:
    where = f"meshes[{i}]"
    mesh = Mesh(name=str(m.get("name", "")))
    for pi, p in enumerate(m.get("primitives", []) or []):
        mesh.primitives.append(_primitive(doc, p, f"{where}.primitives[{pi}]", n_mats))
    mesh.weights = [float(w) for w in m.get("weights", []) or []]
    extras = m.get("extras")
    if isinstance(extras, dict):
        mesh.extras = unpack_extras(extras)
        names = mesh.extras.pop("targetNames", None)
        if isinstance(names, list):
            mesh.target_names = [str(x) for x in names]
    return mesh


def _primitive(doc: GltfDocument, p: dict[str, Any], where: str, n_mats: int) -> Primitive:
    attrs = p.get("attributes", {}) or {}
    if "POSITION" not in attrs:
        raise err(what="primitive without POSITION", field=f"{where}.attributes")
    pos = floats(doc, attrs["POSITION"], 3, f"{where}.attributes.POSITION")
    if not np.isfinite(pos).all():  # the pointer is made only for the error
        require_finite(pos, FMT, pointer(f"accessors[{attrs['POSITION']}]"), "POSITION values")
    n = len(pos)

    def attr(name: str, width: int | tuple[int, ...]) -> npt.NDArray[np.float32] | None:
        if name not in attrs:
            return None
        a = np.asarray(accessor(doc, attrs[name], f"{where}.attributes.{name}"),
                       dtype=np.float32)
        widths = (width,) if isinstance(width, int) else width
        if a.shape[1] not in widths or len(a) != n:
            raise err(what="attribute shape", field=f"{where}.attributes.{name}",
                      expected=f"({n}, {widths})", actual=a.shape)
        return a

    prim = Primitive(positions=pos, normals=attr("NORMAL", 3), tangents=attr("TANGENT", 4))
    k = 0
    while f"TEXCOORD_{k}" in attrs:
        prim.texcoords.append(attr(f"TEXCOORD_{k}", 2))  # type: ignore[arg-type]
        k += 1
    k = 0
    while f"COLOR_{k}" in attrs:
        prim.colors.append(attr(f"COLOR_{k}", (3, 4)))  # type: ignore[arg-type]
        k += 1
    _skin_attrs(doc, attrs, prim, attr, where)
    if "indices" in p:
        prim.indices = _indices(doc, p["indices"], n, where)
    prim.mode = int_in(p.get("mode", 4), f"{where}.mode", 0, 7)
    prim.material = index_ref(p, "material", n_mats, where)
    prim.targets = [_target(doc, t, n, f"{where}.targets[{ti}]")
                    for ti, t in enumerate(p.get("targets", []) or [])]
    if isinstance(p.get("extras"), dict):
        prim.extras = unpack_extras(p["extras"])
    for name, value in (p.get("extensions") or {}).items():
        prim.extras[name if name in PROMOTED_EXTENSIONS else f"gltf_extension_{name}"] = value
    return prim


def _skin_attrs(doc: GltfDocument, attrs: dict[str, Any], prim: Primitive,
                attr: Callable[[str, int], npt.NDArray[np.float32] | None], where: str) -> None:
    """JOINTS_k / WEIGHTS_k pairs, concatenated into (N, 4k) arrays."""
    joints, weights = [], []
    k = 0
    n = len(prim.positions)
    while f"JOINTS_{k}" in attrs and f"WEIGHTS_{k}" in attrs:
        j = accessor(doc, attrs[f"JOINTS_{k}"], f"{where}.attributes.JOINTS_{k}")
        w = attr(f"WEIGHTS_{k}", 4)
        if j.shape != (n, 4) or j.dtype.kind == "f":
            raise err(what="JOINTS shape", field=f"{where}.attributes.JOINTS_{k}",
                      expected=f"({n}, 4) ints",
                      actual=f"{j.shape} {j.dtype}")
        joints.append(j.astype(np.uint16))
        weights.append(w)
        k += 1
    if joints:
        prim.joints = np.concatenate(joints, axis=1)
        prim.weights = np.concatenate([w for w in weights if w is not None], axis=1)


def _indices(doc: GltfDocument, index: Any, n: int, where: str) -> npt.NDArray[np.uint32]:
    idx = accessor(doc, index, f"{where}.indices").reshape(-1)
    if idx.dtype.kind == "f" or (idx.size and int(idx.max()) >= n):
        raise err(what="index out of range", field=f"{where}.indices", expected=f"< {n}",
                  actual=int(idx.max()) if idx.dtype.kind != "f" else "floats")
    return idx.astype(np.uint32)


def _target(doc: GltfDocument, t: dict[str, Any], n: int, tw: str) -> MorphTarget:
    mt = MorphTarget()
    if "POSITION" in t:
        mt.positions = _target_attr(doc, t["POSITION"], n, 3, f"{tw}.POSITION")
    if "NORMAL" in t:
        mt.normals = _target_attr(doc, t["NORMAL"], n, 3, f"{tw}.NORMAL")
    if "TANGENT" in t:
        mt.tangents = _target_attr(doc, t["TANGENT"], n, 3, f"{tw}.TANGENT")
    return mt


def _target_attr(doc: GltfDocument, index: Any, n: int, width: int,
                 where: str) -> npt.NDArray[np.float32]:
    a = floats(doc, index, width, where)
    if len(a) != n:
        raise err(what="morph target length", field=where, expected=n, actual=len(a))
    return a


def _node(n: dict[str, Any], i: int, count: int, n_meshes: int, n_skins: int,
          ctx: Context) -> Node:
    where = f"nodes[{i}]"
    node = Node(name=str(n.get("name", "")))
    if "matrix" in n:
        m = np.asarray(n["matrix"], dtype=np.float64)
        if m.shape != (16,):
            raise err(what="matrix", field=f"{where}.matrix", expected="16 numbers",
                      actual=m.shape)
        require_finite(m[None], FMT, pointer(f"{where}.matrix"), "matrix values")
        node.matrix = m.reshape(4, 4).T.astype(np.float32)
    node.translation = _vec(n.get("translation"), 3, (0.0, 0.0, 0.0), f"{where}.translation")  # type: ignore[assignment]
    if n.get("rotation") is not None:
        rotation = _vec(n["rotation"], 4, (0.0, 0.0, 0.0, 1.0), f"{where}.rotation")
        node.rotation = _unit_rotation(rotation, f"{where}.rotation", ctx)
    # else the default identity, which normalising leaves as it is
    node.scale = _vec(n.get("scale"), 3, (1.0, 1.0, 1.0), f"{where}.scale")  # type: ignore[assignment]
    node.mesh = index_ref(n, "mesh", n_meshes, where)
    node.skin = index_ref(n, "skin", n_skins, where)
    node.children = [int_in(c, f"{where}.children", 0, count) for c in n.get("children", [])]
    if isinstance(n.get("extras"), dict):
        node.extras = unpack_extras(n["extras"])
    for key in ("camera", "weights", "extensions"):
        if key in n:
            node.extras[f"gltf_{key}"] = n[key]
    return node


def _vec(v: Any, k: int, default: tuple[float, ...], where: str) -> tuple[float, ...]:
    if v is None:
        return default
    if not isinstance(v, list) or len(v) != k:
        raise err(what="vector", field=where, expected=f"{k} numbers", actual=v)
    out = tuple(float(x) for x in v)
    if not all(math.isfinite(x) for x in out):  # the pointer is made only for the error
        require_finite(np.asarray([out]), FMT, pointer(where))
    return out


def _unit_rotation(q: tuple[float, ...], where: str, ctx: Context
                   ) -> tuple[float, float, float, float]:
    """:func:`unit_quaternions` of one node rotation (already finite). In plain floats when
    it is within the tolerance of unit length: norm's sum in its order and the same divisions,
    so the same bits; anything else (a note or an error to word) goes through it."""
    x, y, z, w = q
    n = math.sqrt(((x * x + y * y) + z * z) + w * w)
    if n >= 1e-6 and abs(n - 1.0) <= _UNIT_TOLERANCE:
        return (x / n, y / n, z / n, w / n)
    u = unit_quaternions(q, FMT, pointer(where),
                         lambda m: ctx.note("gltf.rotation_normalized", m))
    return (float(u[0]), float(u[1]), float(u[2]), float(u[3]))


def _skin(doc: GltfDocument, s: dict[str, Any], i: int, n_nodes: int) -> Skin:
    where = f"skins[{i}]"
    joints = [int_in(j, f"{where}.joints", 0, n_nodes) for j in s.get("joints", [])]
    if len(set(joints)) != len(joints):
        # Refused, not repaired: vertices name joints by their place in this list, and the
        # two places of one node may carry different inverse binds (no one node can hold both).
        twice = next(j for j, n in Counter(joints).items() if n > 1)
        raise err(what="skin lists a joint twice", field=f"{where}.joints",
                  expected="distinct nodes", actual=f"node {twice} twice")
    skin = Skin(joints=joints, name=str(s.get("name", "")),
                skeleton=index_ref(s, "skeleton", n_nodes, where))
    if "inverseBindMatrices" in s:
        m = floats(doc, s["inverseBindMatrices"], 16, f"{where}.inverseBindMatrices")
        if len(m) != len(joints):
            raise err(what="one matrix per joint", field=f"{where}.inverseBindMatrices",
                      expected=len(joints), actual=len(m))
        skin.inverse_bind_matrices = m.reshape(-1, 4, 4).transpose(0, 2, 1).copy()
    return skin


def _animation(doc: GltfDocument, a: dict[str, Any], i: int, n_nodes: int,
               ctx: Context) -> Animation:
    where = f"animations[{i}]"
    anim = Animation(name=str(a.get("name", "") or f"animation{i}"))
    samplers = a.get("samplers", []) or []
    for ci, c in enumerate(a.get("channels", []) or []):
        cw = f"{where}.channels[{ci}]"
        target = c.get("target", {}) or {}
        if "node" not in target:
            continue  # targets an extension (KHR_animation_pointer): nothing to drive here
        node = int_in(target.get("node"), f"{cw}.target.node", 0, n_nodes)
        path = target.get("path")
        if path not in ("translation", "rotation", "scale", "weights"):
            raise err(what="unknown path", field=f"{cw}.target.path", actual=path)
        s = samplers[int_in(c.get("sampler"), f"{cw}.sampler", 0, len(samplers))]
        interp = s.get("interpolation", "LINEAR")
        if interp not in ("LINEAR", "STEP", "CUBICSPLINE"):
            raise err(what="unknown interpolation", field=f"{cw}.interpolation", actual=interp)
        times = floats(doc, s.get("input"), 1, f"{cw}.input").reshape(-1)
        # require_finite's own test first: the JSON pointer naming the accessor (a regex
        # substitution) is made only for the error.
        if not np.isfinite(times).all():
            require_finite(times, FMT, pointer(f"accessors[{s.get('input')}]"), "key times")
        vals = np.asarray(accessor(doc, s.get("output"), f"{where}.samplers.output"),
                          dtype=np.float32)
        if not np.isfinite(vals).all():
            require_finite(vals, FMT, pointer(f"accessors[{s.get('output')}]"), "key values")
        if path == "rotation" and vals.shape[1:] == (4,) and interp != "CUBICSPLINE":
            vals = unit_quaternions(vals, FMT, pointer(f"accessors[{s.get('output')}]"),
                                    lambda m: ctx.note("gltf.rotation_normalized", m)
                                    ).astype(np.float32)
        if path == "weights":
            per = (len(vals) // len(times)) if len(times) else 0
            k = 3 if interp == "CUBICSPLINE" else 1
            vals = vals.reshape(len(times) * k, -1) if per else vals
            if per and vals.size % (len(times) * k) == 0:
                vals = vals.reshape(len(times) * k, -1)
        anim.channels.append(Channel(node, path, times.copy(), vals, interp))
    if isinstance(a.get("extras"), dict):
        anim.extras = unpack_extras(a["extras"])
    return anim
