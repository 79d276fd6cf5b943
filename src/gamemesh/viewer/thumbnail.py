"""Thumbnails without a browser or a GPU: a lit, textured picture of a scene, and contact sheets.

Rendering is pure numpy (:mod:`gamemesh.viewer.raster`), so thumbnails need no dependency
beyond numpy and Pillow and give the same pixels on every machine. The camera is framed on the
posed model's bounding sphere from the front right and a little above (glTF's front is +Z);
one key light, one fill light and an ambient term shade it, in linear light like three.js.
Colour is the material's base colour factor x its base colour texture x the vertex colours.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage
from PIL import ImageDraw

from ..scene import NEAREST, Image, Scene
from ..textures import encode_png, image_rgba
from .flags import navmesh_nodes
from .pose import PosedPrimitive, pose_scene
from .raster import GBuffer, look_at, perspective, rasterize

F64 = npt.NDArray[np.float64]
RGBA = npt.NDArray[np.uint8]
Shading = Literal["smooth", "flat", "unlit"]

__all__ = ["contact_sheet", "render_thumbnail", "thumbnail_png"]

# The most pixels one thumbnail rasterizes (supersampling included): what a 1024 px picture at
# 2 x 2 costs. Larger requests supersample less, and beyond 2048 px are drawn at 2048 and
# scaled up, so --size 4096 costs seconds and a few hundred MB, not minutes and gigabytes.
MAX_RENDER_PIXELS = 2048 * 2048
FOV_Y = math.radians(35.0)
AZIMUTH = math.radians(35.0)
ELEVATION = math.radians(20.0)
AMBIENT = 0.25
KEY = 0.65
FILL = 0.2


@dataclass
class _Batch:
    """All posed primitives concatenated, with where each one's triangles start."""

    positions: F64
    normals: F64
    triangles: npt.NDArray[np.int64]
    tri_start: list[int]
    vert_start: list[int]
    prims: list[PosedPrimitive]


def render_thumbnail(scene: Scene, size: int = 512, clip: str | int | None = None,
                     time: float | None = None, *, shading: Shading = "smooth",
                     supersample: int = 2,
                     background: tuple[int, int, int, int] = (0, 0, 0, 0)) -> RGBA:
    """An (size, size, 4) RGBA picture of the scene posed at ``time`` in ``clip``.

    ``shading="flat"`` lights each face by the normal its winding gives (what shows whether
    faces point the right way); ``"unlit"`` shows the base colour alone. The background is
    transparent unless given.
    """
    if size < 1 or supersample < 1:
        msg = f"thumbnail size and supersample must be positive (got {size}, {supersample})"
        raise ValueError(msg)
    if time is not None and not math.isfinite(time):
        msg = f"the time must be a finite number of seconds, got {time}"
        raise ValueError(msg)
    side = math.isqrt(MAX_RENDER_PIXELS)
    if size > side:
        small = render_thumbnail(scene, side, clip, time, shading=shading, supersample=1,
                                 background=background)
        return _upscale(small, size)
    supersample = max(1, min(supersample, side // size))
    big = size * supersample
    # Navmeshes are gameplay overlays (often level-sized): leave them out unless that is all.
    navmeshes = set(navmesh_nodes(scene))
    batch = _concatenate(pose_scene(scene, clip, time, navmeshes) or pose_scene(scene, clip, time))
    rgba = np.zeros((big * big, 4))
    if batch is not None:
        eye, view_proj = _camera(batch.positions)
        gbuf = rasterize(batch.positions, batch.triangles, view_proj, big, big)
        rgba = _shade(scene, batch, gbuf, eye, shading)
    img = _downsample(rgba.reshape(big, big, 4), supersample)
    return _over(img, background)


def thumbnail_png(scene: Scene, size: int = 512, clip: str | int | None = None,
                  time: float | None = None) -> bytes:
    return encode_png(render_thumbnail(scene, size, clip, time))


# -- geometry and camera ---------------------------------------------------------------------

def _concatenate(prims: list[PosedPrimitive]) -> _Batch | None:
    if not prims:
        return None
    vert_start, tri_start = [0], [0]
    for p in prims:
        vert_start.append(vert_start[-1] + len(p.positions))
        tri_start.append(tri_start[-1] + len(p.triangles))
    tris = np.concatenate([p.triangles + vs for p, vs in zip(prims, vert_start, strict=False)])
    return _Batch(np.concatenate([p.positions for p in prims]),
                  np.concatenate([p.normals for p in prims]), tris, tri_start, vert_start,
                  prims)


def _camera(positions: F64) -> tuple[F64, F64]:
    """Eye position and view-projection matrix framing the bounding sphere of the points."""
    finite = positions[np.all(np.isfinite(positions), axis=1)]
    if len(finite) == 0:
        finite = np.zeros((1, 3))
    lo, hi = finite.min(axis=0), finite.max(axis=0)
    center = (lo + hi) / 2
    radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-6)
    dist = radius / math.sin(FOV_Y / 2) * 1.02
    direction = np.array([math.cos(ELEVATION) * math.sin(AZIMUTH), math.sin(ELEVATION),
                          math.cos(ELEVATION) * math.cos(AZIMUTH)])
    eye = center + direction * dist
    view = look_at(eye, center, np.array([0.0, 1.0, 0.0]))
    near = max(dist - radius * 1.05, dist * 1e-3)
    proj = perspective(FOV_Y, 1.0, near, dist + radius * 1.05)
    return eye, proj @ view


# -- shading -------------------------------------------------------------------------------

def _shade(scene: Scene, batch: _Batch, gbuf: GBuffer, eye: F64, shading: Shading) -> F64:
    out = np.zeros((gbuf.width * gbuf.height, 4))
    tri = gbuf.triangle
    textures: dict[int, F64 | None] = {}
    for k, posed in enumerate(batch.prims):
        t_lo, t_hi = batch.tri_start[k], batch.tri_start[k + 1]
        pix = np.flatnonzero((tri >= t_lo) & (tri < t_hi))
        if len(pix) == 0:
            continue
        local_tri = posed.triangles[tri[pix] - t_lo]
        bary = gbuf.bary[pix]
        base = _base_color(scene, posed, local_tri, bary, textures)
        light = _lighting(scene, batch, posed, pix, tri[pix], local_tri, bary, eye, shading)
        rgb = _to_srgb(base[:, :3] * light[:, None])
        out[pix, :3] = rgb
        out[pix, 3] = 1.0
    return out


def _interp(attr: F64, local_tri: npt.NDArray[np.int64], bary: F64) -> F64:
    return np.asarray(np.einsum("nk,nkc->nc", bary, attr[local_tri]))


def _base_color(scene: Scene, posed: PosedPrimitive, local_tri: npt.NDArray[np.int64],
                bary: F64, textures: dict[int, F64 | None]) -> F64:
    """Linear RGBA: factor x texture x vertex colour."""
    prim = posed.primitive
    color = np.ones((len(bary), 4))
    mat = scene.materials[prim.material] if (
        prim.material is not None and 0 <= prim.material < len(scene.materials)) else None
    if mat is not None:
        color *= np.asarray(mat.base_color_factor, dtype=np.float64)[None, :]
        ref = mat.base_color_texture
        if ref is not None and ref.texcoord < len(prim.texcoords):
            tex = _texture(scene, ref.image, textures)
            uv_all = np.asarray(prim.texcoords[ref.texcoord], dtype=np.float64)
            if tex is not None and len(uv_all) == len(prim.positions):
                nearest = scene.images[ref.image].sampler.mag_filter == NEAREST
                color *= _sample(tex, _interp(uv_all, local_tri, bary), nearest)
    if prim.colors:
        vc = np.asarray(prim.colors[0], dtype=np.float64)
        if len(vc) == len(prim.positions):
            vc4 = np.ones((len(vc), 4))
            vc4[:, : min(4, vc.shape[1])] = vc[:, :4]
            color *= _interp(vc4, local_tri, bary)
    return np.clip(color, 0.0, 1.0)


def _texture(scene: Scene, index: int, cache: dict[int, F64 | None]) -> F64 | None:
    """The image as linear RGBA floats, decoded once; None when missing or unreadable."""
    if index in cache:
        return cache[index]
    tex: F64 | None = None
    if 0 <= index < len(scene.images):
        px = _pixels(scene.images[index])
        if px is not None and px.ndim == 3 and px.shape[0] > 0 and px.shape[1] > 0:
            f = px[:, :, :4].astype(np.float64) / 255.0
            f[:, :, :3] = _to_linear(f[:, :, :3])
            tex = f
    cache[index] = tex
    return tex


def _pixels(image: Image) -> npt.NDArray[np.uint8] | None:
    try:
        return image_rgba(image)
    except ValueError:  # an undecodable texture is drawn untextured, not fatal
        return None


def _sample(tex: F64, uv: F64, nearest: bool) -> F64:
    """Repeat-wrapped texture lookup (UV origin top left, as glTF), bilinear unless nearest."""
    h, w = tex.shape[:2]
    x = np.nan_to_num(uv[:, 0]) * w - 0.5
    y = np.nan_to_num(uv[:, 1]) * h - 0.5
    if nearest:
        xi = np.floor(x + 0.5).astype(np.int64) % w
        yi = np.floor(y + 0.5).astype(np.int64) % h
        return np.asarray(tex[yi, xi])
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = (x - x0)[:, None], (y - y0)[:, None]
    xa, ya = x0.astype(np.int64) % w, y0.astype(np.int64) % h
    xb, yb = (xa + 1) % w, (ya + 1) % h
    top = tex[ya, xa] * (1 - fx) + tex[ya, xb] * fx
    bottom = tex[yb, xa] * (1 - fx) + tex[yb, xb] * fx
    return np.asarray(top * (1 - fy) + bottom * fy)


def _lighting(scene: Scene, batch: _Batch, posed: PosedPrimitive, pix: npt.NDArray[np.int64],
              gtri: npt.NDArray[np.int64], local_tri: npt.NDArray[np.int64], bary: F64,
              eye: F64, shading: Shading) -> F64:
    prim = posed.primitive
    unlit = shading == "unlit" or (prim.material is not None
                                    and 0 <= prim.material < len(scene.materials)
                                    and scene.materials[prim.material].unlit)
    if unlit:
        return np.ones(len(pix))
    if shading == "flat":
        v = batch.positions[batch.triangles[gtri]]
        n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
    else:
        n = _interp(posed.normals, local_tri, bary)
    n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-20)
    key, fill = _light_directions(eye, batch.positions)
    # One-sided lighting: a face turned away from the camera gets the ambient term only.
    return np.asarray(AMBIENT + KEY * np.clip(n @ key, 0, None) + FILL * np.clip(n @ fill, 0, None))


def _light_directions(eye: F64, positions: F64) -> tuple[F64, F64]:
    """Key light over the viewer's left shoulder, fill from the right; both towards the model."""
    center = (positions.min(axis=0) + positions.max(axis=0)) / 2
    to_eye = eye - center
    to_eye = to_eye / max(float(np.linalg.norm(to_eye)), 1e-20)
    right = np.cross(np.array([0.0, 1.0, 0.0]), to_eye)
    right = right / max(float(np.linalg.norm(right)), 1e-20)
    up = np.array([0.0, 1.0, 0.0])
    key = to_eye + 0.5 * up - 0.4 * right
    fill = to_eye - 0.2 * up + 0.8 * right
    return key / np.linalg.norm(key), fill / np.linalg.norm(fill)


def _to_linear(c: F64) -> F64:
    return np.asarray(np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4))


def _to_srgb(c: F64) -> F64:
    c = np.clip(c, 0.0, 1.0)
    return np.asarray(np.where(c <= 0.0031308, c * 12.92, 1.055 * c ** (1 / 2.4) - 0.055))


def _downsample(img: F64, k: int) -> RGBA:
    """Box-filter k x k blocks with premultiplied alpha (edges blend, background stays clear)."""
    h, w = img.shape[0] // k, img.shape[1] // k
    pre = img.copy()
    pre[:, :, :3] *= pre[:, :, 3:4]
    blocks = pre.reshape(h, k, w, k, 4).mean(axis=(1, 3))
    alpha = blocks[:, :, 3:4]
    rgb = np.where(alpha > 0, blocks[:, :, :3] / np.where(alpha == 0, 1, alpha), 0)
    out = np.concatenate([rgb, alpha], axis=2)
    return np.asarray(np.clip(np.round(out * 255), 0, 255).astype(np.uint8))


def _upscale(img: RGBA, size: int) -> RGBA:
    """Scale up with premultiplied alpha, so transparent edges do not darken."""
    im = PILImage.fromarray(img, "RGBA").convert("RGBa")
    im = im.resize((size, size), PILImage.Resampling.BICUBIC).convert("RGBA")
    return np.asarray(im, dtype=np.uint8)


def _over(img: RGBA, background: tuple[int, int, int, int]) -> RGBA:
    if background[3] == 0:
        return img
    a = img[:, :, 3:4].astype(np.float64) / 255
    bg = np.asarray(background, dtype=np.float64)[None, None, :]
    rgb = img[:, :, :3] * a + bg[:, :, :3] * (1 - a)
    alpha = 255 * a + bg[:, :, 3:4] * (1 - a)
    return np.asarray(np.round(np.concatenate([rgb, alpha], axis=2)).astype(np.uint8))


# -- contact sheets --------------------------------------------------------------------------

SHEET_BACKGROUND = (238, 238, 238, 255)
LABEL_HEIGHT = 22


def contact_sheet(paths_and_labels: Iterable[tuple[str | os.PathLike[str], str]],
                  out_png: str | os.PathLike[str], out_html: str | os.PathLike[str],
                  *, columns: int | None = None, cell: int = 192) -> None:
    """Tile thumbnails (PNG files) with their labels into one PNG, and write an HTML page that
    shows the same thumbnails (linked by relative path) with their labels."""
    items = [(Path(p), str(label)) for p, label in paths_and_labels]
    out_png, out_html = Path(out_png), Path(out_html)
    from ..fileio import write_files

    sheet = _sheet_image(items, columns, cell)
    write_files(out_png.parent, {out_png.name: encode_png(sheet)})
    page = _sheet_html(items, out_html.parent, out_png.name)
    write_files(out_html.parent, {out_html.name: page.encode("utf-8")})


def _sheet_image(items: Sequence[tuple[Path, str]], columns: int | None, cell: int) -> RGBA:
    cols = columns or max(1, min(len(items), math.ceil(math.sqrt(max(len(items), 1)))))
    rows = max(1, math.ceil(len(items) / cols))
    pad = 8
    sheet = PILImage.new("RGBA", (cols * (cell + pad) + pad,
                                  rows * (cell + LABEL_HEIGHT + pad) + pad), SHEET_BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    for i, (path, label) in enumerate(items):
        x = pad + (i % cols) * (cell + pad)
        y = pad + (i // cols) * (cell + LABEL_HEIGHT + pad)
        draw.rectangle([x, y, x + cell - 1, y + cell - 1], fill=(250, 250, 250, 255))
        try:
            with PILImage.open(path) as im:
                thumb = im.convert("RGBA")
        except (OSError, ValueError):
            thumb = None
        if thumb is not None:
            thumb.thumbnail((cell, cell))
            ox = x + (cell - thumb.width) // 2
            oy = y + (cell - thumb.height) // 2
            sheet.alpha_composite(thumb, (ox, oy))
        else:
            draw.text((x + 6, y + cell // 2), "(no image)", fill=(160, 0, 0, 255))
        draw.text((x + 2, y + cell + 4), _fit(draw, label, cell), fill=(20, 20, 20, 255))
    return np.asarray(sheet, dtype=np.uint8)


def _fit(draw: ImageDraw.ImageDraw, label: str, width: int) -> str:
    """The label, shortened with an ellipsis until it fits the cell."""
    text = label
    while text and draw.textlength(text) > width - 4:
        text = text[:-1]
    return text if text == label else text[:-1] + "\u2026"


def _sheet_html(items: Sequence[tuple[Path, str]], folder: Path, png_name: str) -> str:
    figures = []
    for path, label in items:
        try:
            src = os.path.relpath(path.resolve(), folder.resolve())
        except ValueError:  # another drive on Windows
            src = path.resolve().as_uri()
        src = src.replace(os.sep, "/")
        figures.append(f'<figure><img src="{html.escape(src, quote=True)}" '
                       f'alt="{html.escape(label, quote=True)}" loading="lazy">'
                       f"<figcaption>{html.escape(label)}</figcaption></figure>")
    body = "\n".join(figures)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gamemesh contact sheet</title>
<style>
body {{ font: 14px system-ui, sans-serif; background: #eee; margin: 1em; }}
main {{ display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 10px; }}
figure {{ margin: 0; background: #fafafa; padding: 6px; border-radius: 4px; }}
img {{ width: 100%; image-rendering: auto; }}
figcaption {{ overflow-wrap: anywhere; }}
</style></head><body>
<h1>gamemesh contact sheet</h1>
<p>{len(items)} model(s). <a href="{html.escape(png_name, quote=True)}">One image</a>.</p>
<main>
{body}
</main></body></html>
"""


BATCH_THUMBNAIL_SIZE = 256
THUMB_SUFFIX = ".thumb.png"


def batch_thumbnail(output: Path, source: Path) -> list[Path]:
    """``gamemesh batch --thumbnails`` post-step: a picture of each converted model beside it
    (``x.glb`` -> ``x.glb.thumb.png``), rendered from the output as the user will open it."""
    from ..api import load
    from ..fileio import write_files

    scene = load(output)
    png = thumbnail_png(scene, size=BATCH_THUMBNAIL_SIZE)
    target = output.with_name(output.name + THUMB_SUFFIX)
    write_files(target.parent, {target.name: png})
    return [target]


INDEX_NAME = "contact_sheet_index"
# The whole tree's sheet as one PNG up to this many models (a bigger one is HTML only: a PNG
# of thousands of cells would take hundreds of MB to draw).
INDEX_PNG_LIMIT = 1024


def folder_contact_sheets(root: Path) -> list[Path]:
    """One contact sheet (PNG and HTML) in every folder under ``root`` that holds batch
    thumbnails, and an index of the whole tree in ``root`` (every thumbnail, labelled by its
    path: a game with one unit per folder gets one sheet to browse); returns the sheets
    written."""
    by_folder: dict[Path, list[Path]] = {}
    for thumb in sorted(root.rglob("*" + THUMB_SUFFIX)):
        by_folder.setdefault(thumb.parent, []).append(thumb)
    written = []
    for folder, thumbs in sorted(by_folder.items()):
        items = [(t, t.name[: -len(THUMB_SUFFIX)]) for t in thumbs]
        contact_sheet(items, folder / "contact_sheet.png", folder / "contact_sheet.html")
        written.append(folder / "contact_sheet.png")
    if len(by_folder) > 1:
        written.append(_index_sheet(root, [t for ts in by_folder.values() for t in ts]))
    return written


def _index_sheet(root: Path, thumbs: list[Path]) -> Path:
    items = [(t, t.relative_to(root).as_posix()[: -len(THUMB_SUFFIX)]) for t in sorted(thumbs)]
    png, page = root / f"{INDEX_NAME}.png", root / f"{INDEX_NAME}.html"
    if len(items) <= INDEX_PNG_LIMIT:
        contact_sheet(items, png, page, cell=128)
        return png
    from ..fileio import write_files

    write_files(root, {page.name: _sheet_html(items, root, png.name).encode("utf-8")})
    return page
