"""Scene -> PTX: the first image of a scene as one texture."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...errors import FormatError, LimitError
from ...registry import Context
from ...scene import Image, Scene
from ...textures import image_rgba
from .document import PtxDocument
from .layout import FMT, MAX_SIDE


def image_pixels(img: Image) -> npt.NDArray[np.uint8] | None:
    return image_rgba(img, FMT)


def rgba_to_doc(rgba: npt.NDArray[np.uint8], bpp: int | None = None) -> PtxDocument:
    """RGBA pixels as a PTX document: 32 bpp BGRA when some alpha is below 255 (or asked)."""
    h, w = int(rgba.shape[0]), int(rgba.shape[1])
    if not (0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE):
        msg = "image size out of range for PTX"
        raise LimitError(FMT, msg, field="image", expected=f"1..{MAX_SIDE} per side",
                         actual=f"{w}x{h}")
    if bpp is None:
        bpp = 32 if bool(np.any(rgba[..., 3] < 255)) else 24
    order = [2, 1, 0, 3][: bpp // 8]
    return PtxDocument(width=w, height=h, bpp=bpp, pixels=np.ascontiguousarray(rgba[..., order]))


# Everything a scene has besides its pictures (scene.loss.PROPERTIES minus "textures").
_MODEL = ("nodes", "hierarchy", "meshes", "primitives", "colors", "texcoords", "normals",
          "tangents", "materials", "skins", "joints", "clips", "channels", "targets", "names")


def from_scene(scene: Scene, ctx: Context) -> PtxDocument:
    """The scene's first image that has pixels (or encoded data) as a PTX texture."""
    undecodable: FormatError | None = None
    for img in scene.images:
        try:
            px = image_pixels(img)
        except FormatError as e:
            ctx.note("ptx.image_undecodable", f"image {img.name!r} could not be decoded; skipped")
            undecodable = undecodable or e
            continue
        if px is None:
            continue
        if len(scene.images) > 1:
            ctx.note("ptx.first_image_only", f"PTX holds one texture: wrote {img.name!r}, "
                     f"dropped {len(scene.images) - 1} other image(s)", covers=("textures",))
        if scene.meshes or scene.animations:
            ctx.note("ptx.texture_only", "PTX holds one texture and no model: the scene's "
                     "nodes, meshes, materials, skins and clips are not written",
                     covers=_MODEL)
        bpp = ctx.opt("ptx_bpp")
        return rgba_to_doc(px, int(bpp) if bpp is not None else None)
    if undecodable is not None:  # say why the image there is could not be written
        raise undecodable
    msg = "the scene has no image with pixels to write as a PTX texture"
    raise LimitError(FMT, msg, field="images", expected=">= 1 image with pixels",
                     actual=len(scene.images))
