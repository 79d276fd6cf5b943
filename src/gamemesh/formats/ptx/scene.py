"""PTX <-> Scene (one image on a textured quad) and the straight PTX -> PNG export."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...errors import FormatError, LimitError
from ...registry import Context, Files
from ...scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from ...textures import decode_image, encode_png
from .layout import FMT, MAX_SIDE, PtxDoc


def export_png(doc: PtxDoc, ctx: Context) -> Files:
    """The decoded texture as PNG (RGB for 24 bpp, RGBA for 32 bpp), rows in file order."""
    rgba = doc.rgba()
    name = ctx.path.name if ctx.path is not None else "texture.png"
    return {name: encode_png(rgba if doc.bpp == 32 else rgba[..., :3])}


def _quad(width: int, height: int) -> Primitive:
    """A unit-high quad in the XY plane facing +Z, UV (0, 0) at the top left."""
    aspect = width / height
    x = aspect / 2
    pos = np.array([[-x, 1, 0], [-x, 0, 0], [x, 0, 0], [x, 1, 0]], dtype=np.float32)
    uv = np.array([[0, 0], [0, 1], [1, 1], [1, 0]], dtype=np.float32)
    nrm = np.tile(np.array([0, 0, 1], dtype=np.float32), (4, 1))
    idx = np.array([0, 1, 2, 0, 2, 3], dtype=np.uint32)
    return Primitive(positions=pos, normals=nrm, texcoords=[uv], indices=idx)


def to_scene(doc: PtxDoc, ctx: Context) -> Scene:
    name = ctx.path.stem if ctx.path is not None else "texture"
    scene = Scene(name=name)
    rgba = doc.rgba()
    img = scene.add_image(Image(name=name, pixels=rgba, uri=f"{name}.ptx",
                                extras={"ptx_bpp": doc.bpp}))
    translucent = doc.bpp == 32 and bool(np.any(rgba[..., 3] < 255))
    mat = scene.add_material(Material(name=name, base_color_texture=TextureRef(img),
                                      alpha_mode="BLEND" if translucent else "OPAQUE",
                                      double_sided=True))
    prim = _quad(doc.width, doc.height)
    prim.material = mat
    mesh = scene.add_mesh(Mesh(name=name, primitives=[prim]))
    scene.add_node(Node(name=name, mesh=mesh))
    scene.extras.update({"format": "ptx", "ptx_bpp": doc.bpp, "width": doc.width,
                         "height": doc.height, "ptx_trailing_bytes": len(doc.trailing)})
    return scene


def image_pixels(img: Image) -> npt.NDArray[np.uint8] | None:
    if img.pixels is not None:
        return np.asarray(img.pixels, dtype=np.uint8)
    if img.data is not None:
        return decode_image(img.data, FMT)
    return None


def rgba_to_doc(rgba: npt.NDArray[np.uint8], bpp: int | None = None) -> PtxDoc:
    """RGBA pixels as a PTX document: 32 bpp BGRA when some alpha is below 255 (or asked)."""
    h, w = int(rgba.shape[0]), int(rgba.shape[1])
    if not (0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE):
        msg = "image size out of range for PTX"
        raise LimitError(FMT, msg, field="image", expected=f"1..{MAX_SIDE} per side",
                         actual=f"{w}x{h}")
    if bpp is None:
        bpp = 32 if bool(np.any(rgba[..., 3] < 255)) else 24
    order = [2, 1, 0, 3][: bpp // 8]
    return PtxDoc(width=w, height=h, bpp=bpp, pixels=np.ascontiguousarray(rgba[..., order]))


def from_scene(scene: Scene, ctx: Context) -> PtxDoc:
    """The scene's first image that has pixels (or encoded data) as a PTX texture."""
    for img in scene.images:
        try:
            px = image_pixels(img)
        except FormatError:
            ctx.note("ptx.image_undecodable", f"image {img.name!r} could not be decoded; skipped")
            continue
        if px is None:
            continue
        if len(scene.images) > 1:
            ctx.note("ptx.first_image_only", f"PTX holds one texture: wrote {img.name!r}, "
                     f"dropped {len(scene.images) - 1} other image(s)")
        bpp = ctx.opt("ptx_bpp")
        return rgba_to_doc(px, int(bpp) if bpp is not None else None)
    msg = "the scene has no image with pixels to write as a PTX texture"
    raise LimitError(FMT, msg, field="images", expected=">= 1 image with pixels",
                     actual=len(scene.images))

