"""Plain images (PNG, JPEG, TGA, DDS, BMP) as a format: a texture converts to and from a scene
holding that one image on a unit quad, so ``gamemesh convert x.ptx x.png`` and back go the same
way as every other conversion. Decoding is Pillow's.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image as PILImage

from ...errors import FormatError, LimitError
from ...registry import Context, FormatSpec
from ...scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from ...textures import decode_image, encode_png

_MAGICS = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"DDS ", b"BM")


@dataclass
class ImageDocument:
    data: bytes
    pixels: np.ndarray
    kind: str


def _sniff(prefix: bytes) -> bool:
    return any(prefix.startswith(m) for m in _MAGICS)


def _read(data: bytes, ctx: Context) -> ImageDocument:
    pixels = decode_image(data, "image")
    try:
        with PILImage.open(io.BytesIO(data)) as im:
            kind = (im.format or "unknown").lower()
    except (OSError, ValueError, NotImplementedError):  # decode_image said yes: be lenient
        kind = "unknown"
    return ImageDocument(data, pixels, kind)


def _to_scene(doc: ImageDocument, ctx: Context) -> Scene:
    return image_scene(doc.pixels, ctx.path.stem if ctx.path else "image",
                       {"source_kind": doc.kind})


def image_scene(pixels: np.ndarray, name: str, extras: dict[str, Any] | None = None) -> Scene:
    """A scene showing one texture on a quad with the image's aspect (1 unit tall), facing +Z."""
    h, w = pixels.shape[:2]
    aspect = w / max(h, 1)
    pos = np.array([[-aspect / 2, 0, 0], [aspect / 2, 0, 0], [aspect / 2, 1, 0],
                    [-aspect / 2, 1, 0]], dtype=np.float32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=np.float32)
    normals = np.tile(np.array([0, 0, 1], dtype=np.float32), (4, 1))
    scene = Scene(name=name)
    img = scene.add_image(Image(name=name, pixels=np.ascontiguousarray(pixels),
                                extras=dict(extras or {})))
    blend = bool((pixels[..., 3] < 255).any())
    mat = scene.add_material(Material(name=name, base_color_texture=TextureRef(img),
                                      alpha_mode="BLEND" if blend else "OPAQUE", unlit=True,
                                      double_sided=True))
    prim = Primitive(positions=pos, normals=normals, texcoords=[uv],
                     indices=np.array([0, 1, 2, 0, 2, 3], dtype=np.uint32), material=mat)
    mesh = scene.add_mesh(Mesh(name=name, primitives=[prim]))
    scene.add_node(Node(name=name, mesh=mesh))
    return scene


def first_image(scene: Scene, fmt: str) -> tuple[int, np.ndarray]:
    """The first image with pixels (decoding encoded bytes if need be)."""
    for i, im in enumerate(scene.images):
        if im.pixels is not None:
            return i, im.pixels
        if im.data is not None:
            try:
                return i, decode_image(im.data, fmt)
            except FormatError:
                continue
    msg = "the scene has no image with pixels"
    raise LimitError(fmt, msg, field="images", expected=">= 1 image", actual=len(scene.images))


# Everything a scene has besides its pictures (scene.loss.PROPERTIES minus "textures").
_MODEL = ("nodes", "hierarchy", "meshes", "primitives", "colors", "texcoords", "normals",
          "tangents", "materials", "skins", "joints", "clips", "channels", "targets", "names")


def _save(scene: Scene, ctx: Context) -> dict[str, bytes]:
    name = ctx.path.name if ctx.path else "image.png"
    i, px = first_image(scene, "image")
    if len(scene.images) > 1:
        ctx.note("image.others_dropped", f"the scene has {len(scene.images)} images; only "
                 f"{scene.images[i].name or i!r} is written", covers=("textures",))
    if scene.meshes or scene.animations:
        ctx.note("image.texture_only", "an image holds one picture and no model: the scene's "
                 "nodes, meshes, materials, skins and clips are not written", covers=_MODEL)
    suffix = Path(name).suffix.lower()
    if suffix == ".png":
        return {name: encode_png(px)}
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
    return {name: buf.getvalue()}


def _info(doc: ImageDocument) -> dict[str, Any]:
    h, w = doc.pixels.shape[:2]
    return {"kind": doc.kind, "width": w, "height": h,
            "alpha": bool((doc.pixels[..., 3] < 255).any())}


def _write(doc: ImageDocument, ctx: Context) -> bytes:
    return doc.data


SPEC = FormatSpec(
    name="image",
    title="Plain image (PNG, JPEG, TGA, DDS, BMP) as a textured quad",
    extensions=(".png", ".jpg", ".jpeg", ".tga", ".dds", ".bmp"),
    sniff=_sniff,
    read=_read,
    write=_write,
    to_scene=_to_scene,
    save=_save,
    info=_info,
    document_type=ImageDocument,
)
