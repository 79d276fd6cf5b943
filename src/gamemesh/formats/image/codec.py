"""Plain images as a format: reading, the textured-quad scene, and writing (the ``SPEC`` is in
the package's ``__init__``).

A PNG or JPEG that glTF can embed as it is stays encoded: the scene's image holds the file's
bytes (``Image.data``), only its header is read (its structure checked end to end, see
:mod:`gamemesh.textures.encoded`), and a GLB, or a file of the same type, gets the bytes back
unchanged. Every other image is decoded by Pillow.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage

from ...errors import FormatError, LimitError
from ...registry import Context
from ...scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from ...textures import check_pixels, decode_image, encode_png, image_rgba
from ...textures.encoded import EncodedImage, probe_encoded

# The image files a suffix asks for, when an image's bytes are already one.
_SUFFIX_MIME = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}


@dataclass
class ImageDocument:
    data: bytes
    pixels: np.ndarray | None  # None when the file stays encoded (``header`` says what it is)
    kind: str
    header: EncodedImage | None = None


def _read(data: bytes, ctx: Context) -> ImageDocument:
    head = probe_encoded(data, "image")
    if head is not None:
        check_pixels(head.width, head.height, "image", f"{head.kind}.size", len(data), head.kind)
        if head.passthrough and head.deferrable:
            return ImageDocument(data, None, head.kind.lower(), head)
    pixels = decode_image(data, "image")
    try:
        with PILImage.open(io.BytesIO(data)) as im:
            kind = (im.format or "unknown").lower()
    except (OSError, ValueError, NotImplementedError):  # decode_image said yes: be lenient
        kind = "unknown"
    return ImageDocument(data, pixels, kind, head)


def _to_scene(doc: ImageDocument, ctx: Context) -> Scene:
    name = ctx.path.stem if ctx.path else "image"
    extras = {"source_kind": doc.kind}
    if doc.pixels is not None or doc.header is None:
        return image_scene(_pixels(doc), name, extras)
    head = doc.header
    # Blend when the file declares transparency (an alpha channel or a tRNS chunk), read from
    # its header: deciding from the pixels would mean decoding them.
    img = Image(name=name, data=doc.data, mime_type=head.mime_type, extras=extras)
    return _quad_scene(img, head.width, head.height, head.alpha)


def image_scene(pixels: np.ndarray, name: str, extras: dict[str, Any] | None = None) -> Scene:
    """A scene showing one texture on a quad with the image's aspect (1 unit tall), facing +Z;
    blended when some pixel's alpha is below 255."""
    h, w = pixels.shape[:2]
    img = Image(name=name, pixels=np.ascontiguousarray(pixels), extras=dict(extras or {}))
    return _quad_scene(img, w, h, bool((pixels[..., 3] < 255).any()))


def _quad_scene(img: Image, w: int, h: int, blend: bool) -> Scene:
    name = img.name
    aspect = w / max(h, 1)
    pos = np.array([[-aspect / 2, 0, 0], [aspect / 2, 0, 0], [aspect / 2, 1, 0],
                    [-aspect / 2, 1, 0]], dtype=np.float32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=np.float32)
    normals = np.tile(np.array([0, 0, 1], dtype=np.float32), (4, 1))
    scene = Scene(name=name)
    index = scene.add_image(img)
    mat = scene.add_material(Material(name=name, base_color_texture=TextureRef(index),
                                      alpha_mode="BLEND" if blend else "OPAQUE", unlit=True,
                                      double_sided=True))
    prim = Primitive(positions=pos, normals=normals, texcoords=[uv],
                     indices=np.array([0, 1, 2, 0, 2, 3], dtype=np.uint32), material=mat)
    mesh = scene.add_mesh(Mesh(name=name, primitives=[prim]))
    scene.add_node(Node(name=name, mesh=mesh))
    return scene


def first_image(scene: Scene, fmt: str) -> tuple[int, np.ndarray]:
    """The first image with pixels (decoding encoded bytes if need be). When every image
    fails to decode, the first one's error says why (not "no image with pixels")."""
    first: FormatError | None = None
    for i, im in enumerate(scene.images):
        try:
            px = image_rgba(im, fmt)
        except FormatError as e:
            first = first or e
            continue
        if px is not None:
            return i, px
    if first is not None:
        raise first
    msg = "the scene has no image with pixels"
    raise LimitError(fmt, msg, field="images", expected=">= 1 image", actual=len(scene.images))


def _kept_file(scene: Scene, suffix: str) -> tuple[int, bytes] | None:
    """The first image's own bytes when they already are a whole file of the type ``suffix``
    asks for (a PNG read from a PNG, through a GLB or not): written as they are, not decoded
    and encoded again. Encoded bytes are what a scene's image is whenever it has them (the glTF
    writer embeds them over any pixels), so they are what is written here too."""
    want = _SUFFIX_MIME.get(suffix)
    for i, im in enumerate(scene.images):
        if im.pixels is None and im.data is None:
            continue
        if want is None or im.data is None or im.mime_type != want:
            return None
        try:
            head = probe_encoded(im.data, "image")
        except FormatError:
            return None  # damaged bytes: first_image decides what is written, as before
        return (i, im.data) if head is not None and head.mime_type == want else None
    return None


# Everything a scene has besides its pictures (scene.loss.PROPERTIES minus "textures").
_MODEL = ("nodes", "hierarchy", "meshes", "primitives", "colors", "texcoords", "normals",
          "tangents", "materials", "skins", "joints", "clips", "channels", "targets", "names")


def _save(scene: Scene, ctx: Context) -> dict[str, bytes]:
    name = ctx.path.name if ctx.path else "image.png"
    suffix = Path(name).suffix.lower()
    kept = _kept_file(scene, suffix)
    px: np.ndarray | None = None
    if kept is not None:
        i = kept[0]
    else:
        i, px = first_image(scene, "image")
    if len(scene.images) > 1:
        ctx.note("image.others_dropped", f"the scene has {len(scene.images)} images; only "
                 f"{scene.images[i].name or i!r} is written", covers=("textures",))
    if scene.meshes or scene.animations:
        ctx.note("image.texture_only", "an image holds one picture and no model: the scene's "
                 "nodes, meshes, materials, skins and clips are not written", covers=_MODEL)
    if kept is not None:
        return {name: kept[1]}
    assert px is not None
    return {name: _encode(px, suffix, ctx)}


def _encode(px: np.ndarray, suffix: str, ctx: Context) -> bytes:
    if suffix == ".png":
        return encode_png(px)
    fmt = {".jpg": "JPEG", ".jpeg": "JPEG", ".tga": "TGA", ".bmp": "BMP"}.get(suffix)
    if fmt is None:
        msg = f"cannot write images as {suffix or 'no extension'}"
        raise LimitError(format="image", message=msg, expected=".png .jpg .tga .bmp", actual=suffix)
    im = PILImage.fromarray(px, "RGBA")
    if fmt in ("JPEG", "BMP"):
        if (px[..., 3] < 255).any():
            ctx.note("image.alpha_dropped", f"{fmt} has no alpha channel; alpha dropped")
        im = im.convert("RGB")
    buf = io.BytesIO()
    im.save(buf, fmt)
    return buf.getvalue()


def _pixels(doc: ImageDocument) -> np.ndarray:
    """The document's pixels, decoding a file kept encoded."""
    return doc.pixels if doc.pixels is not None else decode_image(doc.data, "image")


def _info(doc: ImageDocument) -> dict[str, Any]:
    # Exact alpha (some pixel below 255) costs a decode; info is asked for once, not per load.
    px = _pixels(doc)
    h, w = px.shape[:2]
    return {"kind": doc.kind, "width": w, "height": h, "alpha": bool((px[..., 3] < 255).any())}


def _write(doc: ImageDocument, ctx: Context) -> bytes:
    return doc.data

