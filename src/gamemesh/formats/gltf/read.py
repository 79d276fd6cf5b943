"""glTF 2.0 (GLB or .gltf) -> Scene.

Buffers may be the GLB binary chunk, data URIs or files beside the .gltf; accessors of every
component type, normalized integers, byte strides and sparse substitution are decoded with numpy.
Every index read from the JSON is checked, so a hostile file ends in a FormatError.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import struct
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import (
    BadMagicError,
    CorruptDataError,
    FormatError,
    TruncatedError,
    UnsupportedVersionError,
)
from ...registry import Context
from ...safeio import read_regular
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
from .extras import MAX_JSON_DEPTH, json_depth, unpack_extras
from .uris import UriRefusedError, resolve_uri
from .write import PROMOTED_EXTENSIONS

FMT = "gltf"
_COMPONENTS: dict[Any, Any] = {5120: np.int8, 5121: np.uint8, 5122: np.int16,
                               5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_ITEMSIZE: dict[Any, int] = {c: np.dtype(c).itemsize for c in _COMPONENTS.values()}
_WIDTH = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
_MATRIX_COLUMNS = {"MAT2": 2, "MAT3": 3, "MAT4": 4}
_NORM_DIV: dict[Any, float] = {np.int8: 127.0, np.uint8: 255.0, np.int16: 32767.0,
                                np.uint16: 65535.0, np.uint32: 4294967295.0}


@dataclass
class GltfDocument:
    """A parsed glTF: its JSON and its buffers, as they were."""

    json: dict[str, Any]
    buffers: list[bytes]
    glb: bool
    path: Path | None = None
    _cache: dict[int, npt.NDArray[Any]] = field(default_factory=dict, repr=False)


_UNIT_TOLERANCE = 1e-3  # scene.numbers.unit_quaternions': a longer or shorter one is noted


@lru_cache(maxsize=4096)
def pointer(where: str) -> str:
    """``accessors[3].count`` as the JSON pointer ``/accessors/3/count`` (as glTF-Validator
    reports places); GLB container fields (``header.version``) stay as they are."""
    if where.startswith(("header", "chunk", "json", "/")):
        return where
    return "/" + re.sub(r"\[(\d+)\]", r"/\1", where).replace(".", "/")


def _err(what: str, *, field: str | None = None, expected: Any = None, actual: Any = None,
         offset: int | None = None, cls: type[FormatError] = CorruptDataError) -> FormatError:
    return cls(FMT, what, field=pointer(field) if field else None, expected=expected,
               actual=actual, offset=offset)


_MALFORMED = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)


class _At:
    """Whatever a malformed JSON value makes Python raise inside ``where`` (a string where an
    object belongs, a list where a number does) becomes a FormatError naming that place. A
    class, not a generator context manager: a conversion enters one per image, material,
    mesh, node, skin and animation, and the generator's set-up cost four times as much."""

    __slots__ = ("where",)

    def __init__(self, where: str) -> None:
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None,
                 tb: TracebackType | None) -> None:
        if e is None or isinstance(e, FormatError) or not isinstance(e, _MALFORMED):
            return  # nothing raised, or propagated as it is
        raise _err(what=f"malformed value ({type(e).__name__}: {e})", field=self.where) \
            from None


# -- container -------------------------------------------------------------------------------
def parse(data: bytes, ctx: Context) -> GltfDocument:
    if data[:4] == b"glTF":
        js, bin_chunk = _parse_glb(data)
        glb = True
    else:
        js, bin_chunk, glb = data, None, False
    doc = _json(js)
    if not isinstance(doc, dict) or not isinstance(doc.get("asset"), dict):
        raise _err(what="not a glTF document", field="asset", expected="an object", actual=None)
    version = str(doc["asset"].get("version", ""))
    if not version.startswith("2."):
        raise _err(what="only glTF 2.x is read", field="asset.version", expected="2.x",
                   actual=version, cls=UnsupportedVersionError)
    buffers = []
    for i, b in enumerate(_list(doc, "buffers")):
        with _At(f"buffers[{i}]"):
            buffers.append(_load_buffer(b, i, bin_chunk, ctx))
    return GltfDocument(doc, buffers, glb, ctx.path)


def _json(js: bytes) -> Any:
    try:
        doc = json.loads(js.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _err(what=f"JSON does not parse ({e})", field="json") from None
    except RecursionError:
        doc = None
    if doc is None or json_depth(doc) > MAX_JSON_DEPTH:
        raise _err(what="JSON nested too deeply", field="json",
                   expected=f"<= {MAX_JSON_DEPTH} levels", actual="more")
    return doc


def _parse_glb(data: bytes) -> tuple[bytes, bytes | None]:
    if len(data) < 20:
        raise _err(what="GLB header", field="header", expected=">= 20 bytes", actual=len(data),
                   cls=TruncatedError)
    _, version, length = struct.unpack_from("<III", data, 0)
    if version != 2:
        raise _err(what="GLB version", field="header.version", expected=2, actual=version,
                   offset=4, cls=UnsupportedVersionError)
    if length > len(data) or length < 20:
        raise _err(what="GLB length", field="header.length", expected=f"<= {len(data)}",
                   actual=length, offset=8, cls=TruncatedError)
    pos, js, binary = 12, None, None
    while pos + 8 <= length:
        clen, ctype = struct.unpack_from("<II", data, pos)
        if pos + 8 + clen > length:
            raise _err(what="chunk runs past the end", field=f"chunk@{pos}.length",
                       expected=f"<= {length - pos - 8}", actual=clen, offset=pos,
                       cls=TruncatedError)
        body = data[pos + 8:pos + 8 + clen]
        if ctype == 0x4E4F534A and js is None:
            js = body
        elif ctype == 0x004E4942 and binary is None:
            binary = body
        pos += 8 + clen
    if js is None:
        raise _err(what="no JSON chunk", field="chunk[0]", expected="JSON", actual="none",
                   offset=12, cls=BadMagicError)
    return js, binary


def external_uris(data: bytes) -> list[str]:
    """The URIs of a glTF's external buffers and images, as written (data URIs excluded)."""
    js = _parse_glb(data)[0] if data[:4] == b"glTF" else data
    doc = _json(js)
    if not isinstance(doc, dict):
        return []
    out = []
    for key in ("buffers", "images"):
        items = doc.get(key)
        for item in items if isinstance(items, list) else []:
            uri = item.get("uri") if isinstance(item, dict) else None
            if isinstance(uri, str) and uri and not uri.startswith("data:"):
                out.append(uri)
    return out


def _load_buffer(b: Any, i: int, bin_chunk: bytes | None, ctx: Context) -> bytes:
    if not isinstance(b, dict):
        raise _err(what="buffer is not an object", field=f"buffers[{i}]")
    length = _int(b.get("byteLength"), f"buffers[{i}].byteLength")
    uri = b.get("uri")
    if uri is None:
        data = bin_chunk if (i == 0 and bin_chunk is not None) else None
        if data is None:
            raise _err(what="buffer has no uri and there is no GLB binary chunk",
                       field=f"buffers[{i}]")
    else:
        data = _fetch_uri(str(uri), ctx, f"buffers[{i}].uri", length)
    if len(data) < length:
        raise _err(what="buffer shorter than declared", field=f"buffers[{i}].byteLength",
                   expected=f"<= {len(data)}", actual=length, cls=TruncatedError)
    return data[:length]


def _fetch_uri(uri: str, ctx: Context, where: str, length: int | None = None) -> bytes:
    """A URI's bytes: a data: URI's payload, or a file inside the .gltf's folder (or a folder
    of the ``allow_outside`` option), at most ``length`` bytes of it when that is known."""
    if uri.startswith("data:"):
        head, _, payload = uri.partition(",")
        try:
            if head.endswith(";base64"):
                return base64.b64decode(payload, validate=False)
            return urllib.parse.unquote_to_bytes(payload)
        except (binascii.Error, ValueError) as e:
            raise _err(what=f"bad data URI ({e})", field=where) from None
    if ctx.path is None:
        raise _err(what="external file but the glTF was given as bytes", field=where, actual=uri)
    target = resolve_uri(uri, ctx.path.parent, ctx.opt("allow_outside", ()), pointer(where))
    try:
        # A buffer uses its byteLength bytes: more is never read.
        return read_regular(target, ctx.opt("max_input_size"), FMT, take=length)
    except OSError as e:
        raise _err(what=f"cannot read {uri!r} ({e.strerror})", field=where) from None
    except FormatError as e:  # not a regular file, or too large
        raise _err(what=f"external file {uri!r} refused: {e.detail}", field=where,
                   expected=e.expected, actual=e.actual, cls=UriRefusedError) from None


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    v = doc.get(key, [])
    if not isinstance(v, list):
        raise _err(what="must be an array", field=key, actual=type(v).__name__)
    return v


def _int(v: Any, where: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v >= hi):
        rng = f"integer in [{lo}, {hi})" if hi is not None else f"integer >= {lo}"
        raise _err(what="bad value", field=where, expected=rng, actual=v)
    return v


def _uint(v: Any, hi: int | None, name: str, *parts: object) -> int:
    """``_int(v, name.format(*parts), 0, hi)``, the field name formatted only for a value that
    fails (the hot paths check a plain int, which is all json makes, many times a file)."""
    if type(v) is int and v >= 0 and (hi is None or v < hi):
        return v
    return _int(v, name.format(*parts), 0, hi)


def _index(obj: dict[str, Any], key: str, count: int, where: str) -> int | None:
    v = obj.get(key)
    return None if v is None else _int(v, f"{where}.{key}", 0, count)


# -- accessors -------------------------------------------------------------------------------
def accessor(doc: GltfDocument, index: int, ref: str = "accessor") -> npt.NDArray[Any]:
    """Accessor ``index`` as (count, width) float32 (normalized ints scaled) or raw integers;
    ``ref`` is the place that names it (``meshes[0].primitives[0].attributes.POSITION``)."""
    accs = _list(doc.json, "accessors")
    _uint(index, len(accs), ref)
    if index in doc._cache:
        return doc._cache[index]
    a = accs[index]
    where = f"accessors[{index}]"
    comp: Any = _COMPONENTS.get(a.get("componentType"))
    if comp is None:
        raise _err(what="unknown componentType", field=f"{where}.componentType",
                   expected=sorted(_COMPONENTS), actual=a.get("componentType"))
    width = _WIDTH.get(str(a.get("type")))
    if width is None:
        raise _err(what="unknown type", field=f"{where}.type", expected=sorted(_WIDTH),
                   actual=a.get("type"))
    count = _uint(a.get("count"), None, "{}.count", where)
    if "bufferView" in a:
        columns = _MATRIX_COLUMNS.get(str(a.get("type")), 0)
        arr = _view_data(doc, a, comp, width, count, where, columns=columns).copy()
    else:
        if count > 1 << 28:
            raise _err(what="accessor too large", field=f"{where}.count", expected="<= 2^28",
                       actual=count)
        arr = np.zeros((count, width), dtype=comp)
    if "sparse" in a:
        _apply_sparse(doc, a["sparse"], arr, comp, width, f"{where}.sparse")
    out: npt.NDArray[Any] = arr
    if a.get("normalized") and comp is not np.float32:
        out = np.maximum(arr.astype(np.float32) / _NORM_DIV[comp], -1.0).astype(np.float32)
    doc._cache[index] = out
    return out


def _view_data(doc: GltfDocument, a: dict[str, Any], comp: Any, width: int, count: int,
               where: str, view_key: str = "bufferView", offset_key: str = "byteOffset",
               columns: int = 0) -> npt.NDArray[Any]:
    """``count`` elements of ``width`` components from a view. ``columns`` > 0 marks a matrix
    type, whose columns start on 4-byte boundaries (MAT2/MAT3 of 1- and 2-byte components
    carry padding, glTF 2.0 section 3.6.2.4)."""
    views = _list(doc.json, "bufferViews")
    vi = _uint(a.get(view_key), len(views), "{}.{}", where, view_key)
    v = views[vi]
    bi = _uint(v.get("buffer"), len(doc.buffers), "bufferViews[{}].buffer", vi)
    vstart = _uint(v.get("byteOffset", 0), None, "bufferViews[{}].byteOffset", vi)
    vlen = _uint(v.get("byteLength"), None, "bufferViews[{}].byteLength", vi)
    buf = doc.buffers[bi]
    if vstart + vlen > len(buf):
        raise _err(what="view runs past its buffer", field=f"bufferViews[{vi}]",
                   expected=f"end <= {len(buf)}", actual=vstart + vlen, cls=TruncatedError)
    item = _ITEMSIZE[comp]
    used = item * (width // columns) if columns else item * width
    padded = (used + 3) // 4 * 4 if columns else used
    elem = padded * columns if columns else used
    stride = _uint(v.get("byteStride", elem), None, "bufferViews[{}].byteStride", vi) or elem
    start = vstart + _uint(a.get(offset_key, 0), None, "{}.{}", where, offset_key)
    if count == 0:
        return np.zeros((0, width), dtype=comp)
    need = start + stride * (count - 1) + elem
    if stride < elem:
        raise _err(what="byteStride shorter than one element", field=f"bufferViews[{vi}]"
                   ".byteStride", expected=f">= {elem}", actual=stride)
    if need > vstart + vlen:
        room = max(0, (vstart + vlen - start - elem) // stride + 1) if start + elem <= \
            vstart + vlen else 0
        raise _err(what="accessor runs past its view", field=f"{where}.count",
                   expected=f"<= {room} by the view's {vlen} bytes", actual=count,
                   cls=TruncatedError)
    if stride == elem and padded == used:  # tightly packed: the elements as they lie
        packed: npt.NDArray[Any] = np.frombuffer(buf, dtype=comp, count=count * width,
                                                 offset=start).reshape(count, width)
        return packed
    raw = np.frombuffer(buf, dtype=np.uint8, count=need - start, offset=start)
    rows = np.lib.stride_tricks.as_strided(raw, shape=(count, elem), strides=(stride, 1))
    if padded != used:  # drop each matrix column's padding bytes
        rows = rows.reshape(count, columns, padded)[:, :, :used].reshape(count, -1)
    strided: npt.NDArray[Any] = np.ascontiguousarray(rows).view(comp).reshape(count, width)
    return strided


def _apply_sparse(doc: GltfDocument, sp: dict[str, Any], arr: npt.NDArray[Any], comp: Any,
                  width: int, where: str) -> None:
    n = _int(sp.get("count"), f"{where}.count", 1, len(arr) + 1)
    ind, val = sp.get("indices", {}), sp.get("values", {})
    icomp: Any = _COMPONENTS.get(ind.get("componentType"))
    if icomp not in (np.uint8, np.uint16, np.uint32):
        raise _err(what="bad sparse index type", field=f"{where}.indices.componentType",
                   expected=[5121, 5123, 5125], actual=ind.get("componentType"))
    idx = _view_data(doc, ind, icomp, 1, n, f"{where}.indices").reshape(-1).astype(np.int64)
    vals = _view_data(doc, val, comp, width, n, f"{where}.values")
    if idx.size and (idx.max() >= len(arr)):
        raise _err(what="sparse index out of range", field=f"{where}.indices",
                   expected=f"< {len(arr)}", actual=int(idx.max()))
    arr[idx] = vals


def _floats(doc: GltfDocument, index: int, width: int, where: str) -> npt.NDArray[np.float32]:
    a = accessor(doc, index, where)
    if a.shape[1] != width:
        raise _err(what="accessor width", field=where, expected=width, actual=a.shape[1])
    return np.asarray(a, dtype=np.float32)


# -- scene -----------------------------------------------------------------------------------
def to_scene(doc: GltfDocument, ctx: Context) -> Scene:
    js = doc.json
    doc._cache.clear()  # the cache shares accessors within one conversion, not across them
    scene = Scene()
    images = _list(js, "images")
    for i, im in enumerate(images):
        with _At(f"images[{i}]"):
            scene.images.append(_image(doc, im, i, ctx))
    textures = _list(js, "textures")
    samplers = _list(js, "samplers")
    for i, m in enumerate(_list(js, "materials")):
        with _At(f"materials[{i}]"):
            scene.materials.append(_material(m, i, textures, samplers, scene, ctx))
    for i, m in enumerate(_list(js, "meshes")):
        with _At(f"meshes[{i}]"):
            scene.meshes.append(_mesh(doc, m, i, len(scene.materials)))
    nodes = _list(js, "nodes")
    for i, n in enumerate(nodes):
        with _At(f"nodes[{i}]"):
            scene.nodes.append(_node(n, i, len(nodes), len(scene.meshes),
                                     len(_list(js, "skins")), ctx))
    for i, s in enumerate(_list(js, "skins")):
        with _At(f"skins[{i}]"):
            scene.skins.append(_skin(doc, s, i, len(nodes)))
    for i, a in enumerate(_list(js, "animations")):
        with _At(f"animations[{i}]"):
            scene.animations.append(_animation(doc, a, i, len(nodes), ctx))
    with _At("scenes"):
        _roots(js, scene, len(nodes), ctx)
    with _At("asset"):
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
        raise _err(what=f"not a valid glTF scene: {found[0]}{more}", field=place)


def _roots(js: dict[str, Any], scene: Scene, n_nodes: int, ctx: Context) -> None:
    scenes = _list(js, "scenes")
    default = js.get("scene", 0 if scenes else None)
    if scenes:
        si = _int(default, "scene", 0, len(scenes))
        scene.roots = [_int(r, f"scenes[{si}].nodes", 0, n_nodes)
                       for r in scenes[si].get("nodes", [])]
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
            raise _err(what="light", field=f"extensions.KHR_lights_punctual.lights[{i}]",
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
                raise _err(what="node has two parents or is its own child",
                           field=f"nodes[{i}].children", actual=c)
            parent[c] = i
    # Every node must hang below a parentless one; whatever does not sits on a cycle.
    tops = [i for i in range(len(scene.nodes)) if i not in parent]
    reached = Scene(nodes=scene.nodes, roots=tops).walk()
    if len(reached) != len(scene.nodes):
        stuck = sorted(set(range(len(scene.nodes))) - set(reached))[:5]
        raise _err(what="node hierarchy has a cycle", field="nodes", expected="a tree",
                   actual=f"cycle through nodes {stuck}")


def _image(doc: GltfDocument, im: dict[str, Any], i: int, ctx: Context) -> Image:
    name = str(im.get("name", ""))
    uri = im.get("uri")
    mime = im.get("mimeType")
    data: bytes | None
    try:
        if "bufferView" in im:
            data = _view_data(doc, {"bufferView": im["bufferView"]}, np.uint8, 1,
                              _view_len(doc, im["bufferView"], f"images[{i}]"),
                              f"images[{i}]").tobytes()
        elif uri is not None:
            data = _fetch_uri(str(uri), ctx, f"images[{i}].uri")
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
    views = _list(doc.json, "bufferViews")
    v = views[_int(vi, f"{where}.bufferView", 0, len(views))]
    return _int(v.get("byteLength"), f"{where}.bufferView.byteLength")


def _texref(info: Any, textures: list[Any], samplers: list[Any], n_images: int,
            where: str, scale_key: str | None = None) -> TextureRef | None:
    if not isinstance(info, dict):
        return None
    ti = _int(info.get("index"), f"{where}.index", 0, len(textures))
    tex = textures[ti]
    src = tex.get("source")
    ext = tex.get("extensions", {}) or {}
    if src is None:  # an image only given through an extension (KHR_texture_basisu, webp)
        src = next((v.get("source") for v in ext.values() if isinstance(v, dict)), None)
    if src is None:
        return None
    ref = TextureRef(image=_int(src, f"textures[{ti}].source", 0, n_images),
                     texcoord=_int(info.get("texCoord", 0), f"{where}.texCoord"))
    if scale_key and scale_key in info:
        ref.scale = float(info[scale_key])
    si = tex.get("sampler")
    if si is not None:
        s = samplers[_int(si, f"textures[{ti}].sampler", 0, len(samplers))]
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
        raise _err(what="primitive without POSITION", field=f"{where}.attributes")
    pos = _floats(doc, attrs["POSITION"], 3, f"{where}.attributes.POSITION")
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
            raise _err(what="attribute shape", field=f"{where}.attributes.{name}",
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
    prim.mode = _int(p.get("mode", 4), f"{where}.mode", 0, 7)
    prim.material = _index(p, "material", n_mats, where)
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
            raise _err(what="JOINTS shape", field=f"{where}.attributes.JOINTS_{k}",
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
        raise _err(what="index out of range", field=f"{where}.indices", expected=f"< {n}",
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
    a = _floats(doc, index, width, where)
    if len(a) != n:
        raise _err(what="morph target length", field=where, expected=n, actual=len(a))
    return a


def _node(n: dict[str, Any], i: int, count: int, n_meshes: int, n_skins: int,
          ctx: Context) -> Node:
    where = f"nodes[{i}]"
    node = Node(name=str(n.get("name", "")))
    if "matrix" in n:
        m = np.asarray(n["matrix"], dtype=np.float64)
        if m.shape != (16,):
            raise _err(what="matrix", field=f"{where}.matrix", expected="16 numbers",
                       actual=m.shape)
        require_finite(m[None], FMT, pointer(f"{where}.matrix"), "matrix values")
        node.matrix = m.reshape(4, 4).T.astype(np.float32)
    node.translation = _vec(n.get("translation"), 3, (0.0, 0.0, 0.0), f"{where}.translation")  # type: ignore[assignment]
    if n.get("rotation") is not None:
        rotation = _vec(n["rotation"], 4, (0.0, 0.0, 0.0, 1.0), f"{where}.rotation")
        node.rotation = _unit_rotation(rotation, f"{where}.rotation", ctx)
    # else the default identity, which normalising leaves as it is
    node.scale = _vec(n.get("scale"), 3, (1.0, 1.0, 1.0), f"{where}.scale")  # type: ignore[assignment]
    node.mesh = _index(n, "mesh", n_meshes, where)
    node.skin = _index(n, "skin", n_skins, where)
    node.children = [_int(c, f"{where}.children", 0, count) for c in n.get("children", [])]
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
        raise _err(what="vector", field=where, expected=f"{k} numbers", actual=v)
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
    joints = [_int(j, f"{where}.joints", 0, n_nodes) for j in s.get("joints", [])]
    skin = Skin(joints=joints, name=str(s.get("name", "")),
                skeleton=_index(s, "skeleton", n_nodes, where))
    if "inverseBindMatrices" in s:
        m = _floats(doc, s["inverseBindMatrices"], 16, f"{where}.inverseBindMatrices")
        if len(m) != len(joints):
            raise _err(what="one matrix per joint", field=f"{where}.inverseBindMatrices",
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
        node = _int(target.get("node"), f"{cw}.target.node", 0, n_nodes)
        path = target.get("path")
        if path not in ("translation", "rotation", "scale", "weights"):
            raise _err(what="unknown path", field=f"{cw}.target.path", actual=path)
        s = samplers[_int(c.get("sampler"), f"{cw}.sampler", 0, len(samplers))]
        interp = s.get("interpolation", "LINEAR")
        if interp not in ("LINEAR", "STEP", "CUBICSPLINE"):
            raise _err(what="unknown interpolation", field=f"{cw}.interpolation", actual=interp)
        times = _floats(doc, s.get("input"), 1, f"{cw}.input").reshape(-1)
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
