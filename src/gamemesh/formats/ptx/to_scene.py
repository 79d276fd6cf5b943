"""PTX -> Scene (one image on a textured quad) and the straight PTX -> PNG export."""

from __future__ import annotations

import numpy as np

from ...registry import Context, Files
from ...scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from ...textures import encode_png
from .document import PtxDocument


def export_png(doc: PtxDocument, ctx: Context) -> Files:
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


def to_scene(doc: PtxDocument, ctx: Context) -> Scene:
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


