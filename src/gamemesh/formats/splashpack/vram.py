"""Textures for a written SPLASHPACK: palette encoding, VRAM atlas and CLUT placement.

Each base-colour image becomes a :class:`Tex` (4/8 bpp indices + palette, or 16 bpp words);
:func:`place` shelf-packs them into page-aligned 256-row atlases at x = 320..960, y = 0 or 256
(clear of the two 320x240 framebuffers) and places the CLUTs first-fit the way the exporter's
packer does (spec §b.8, §b.10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ...errors import LimitError
from ...registry import Context
from ...scene import Material, Scene
from ...textures import image_rgba, psx
from .layout import FRAMEBUFFERS

FMT = "splashpack"
WHITE = np.full((1, 1, 4), 255, dtype=np.uint8)
Box = tuple[int, int, int, int]

__all__ = ["Box", "Tex", "Textures", "atlas_pixels", "ext", "merge_pages", "place"]


def ext(obj: Any) -> dict[str, Any]:
    """``obj.extras["splashpack"]`` when it is a dict, else an empty dict."""
    extras = getattr(obj, "extras", None)
    got = extras.get(FMT) if isinstance(extras, dict) else None
    return got if isinstance(got, dict) else {}


@dataclass
class Tex:
    pixels: npt.NDArray[np.uint8]
    bpp: int = 8
    indices: npt.NDArray[np.uint8] | None = None
    words: npt.NDArray[np.uint16] | None = None  # (h, w) VRAM words
    palette: npt.NDArray[np.uint16] | None = None
    dither: bool = True
    origin: tuple[int, int] | None = None  # the page it was decoded from (a splashpack image)
    # placement
    atlas: int = -1
    x_words: int = 0
    y: int = 0
    clut: tuple[int, int] = (0, 0)


# -- textures ---------------------------------------------------------------------------------
class Textures:
    def __init__(self, scene: Scene, ctx: Context) -> None:
        self.scene, self.ctx = scene, ctx
        self.items: list[Tex] = []
        self.by_key: dict[Any, int] = {}
        bpp = ctx.opt("bpp")
        self.force_bpp = int(bpp) if bpp else None

    def for_material(self, mat: Material | None) -> tuple[int, int]:
        """(texture index, texcoord set) of a material; a 1-texel white texture when it has no
        usable base-colour image."""
        ref = mat.base_color_texture if mat is not None else None
        if ref is not None and ("image", ref.image) in self.by_key:
            # An image kept encoded is decoded once, not once per material using it.
            return self.by_key[("image", ref.image)], ref.texcoord
        px = None
        if ref is not None and 0 <= ref.image < len(self.scene.images):
            px = self._pixels(ref.image)
        if ref is None or px is None:
            return self._add("white", WHITE, {}, True), 0
        dither = bool(ext(mat).get("dither", True))
        img = self.scene.images[ref.image]
        return self._add(("image", ref.image), px, ext(img), dither), ref.texcoord

    def _pixels(self, i: int) -> npt.NDArray[np.uint8] | None:
        img = self.scene.images[i]
        try:
            px = image_rgba(img, FMT)
        except ValueError:
            px = None
        if px is not None:
            return px
        self.ctx.note("splashpack.image_missing",
                      f"image {i} ({img.name!r}) has no pixels; a white texel is used")
        return None

    def _add(self, key: Any, px: npt.NDArray[np.uint8], info: dict[str, Any],
             dither: bool) -> int:
        if key in self.by_key:
            return self.by_key[key]
        px = self._fit(px, key)
        tex = Tex(pixels=px, dither=dither)
        vram = info.get("vram")
        if isinstance(vram, list) and len(vram) == 2 and px.shape[:2] == (psx.PAGE, psx.PAGE):
            tex.origin = (int(vram[0]), int(vram[1]))
        self._encode(tex, info, key)
        self.items.append(tex)
        self.by_key[key] = len(self.items) - 1
        return len(self.items) - 1

    def _fit(self, px: npt.NDArray[np.uint8], key: Any) -> npt.NDArray[np.uint8]:
        if px.ndim != 3 or px.shape[2] != 4:
            px = np.zeros((1, 1, 4), np.uint8) + 255
        h, w = px.shape[:2]
        if max(h, w) <= psx.PAGE:
            return px
        k = psx.PAGE / max(h, w)
        size = (max(1, int(w * k)), max(1, int(h * k)))
        self.ctx.note("splashpack.texture_resized",
                      f"texture {key!r} {w}x{h} resized to {size[0]}x{size[1]} (at most 256)")
        im = PILImage.fromarray(np.ascontiguousarray(px), "RGBA").resize(
            size, PILImage.Resampling.LANCZOS)
        return np.asarray(im, dtype=np.uint8)

    def _encode(self, tex: Tex, info: dict[str, Any], key: Any) -> None:
        want = self.force_bpp or (int(info["bpp"]) if info.get("bpp") in (4, 8, 16) else None)
        if want == 16:
            tex.bpp, tex.words = 16, psx.rgba_to_words(tex.pixels)
            return
        pal = info.get("palette")
        if want in (4, 8) and isinstance(pal, list) and 0 < len(pal) <= (1 << want):
            idx = psx.index_with_palette(tex.pixels, np.asarray(pal, dtype=np.uint16))
            if idx is not None:
                tex.bpp, tex.indices = want, idx
                tex.palette = np.asarray(pal, dtype=np.uint16)
                self._pack(tex)
                return
        idx, palette, lossy = psx.quantize(tex.pixels, 16 if want == 4 else 256)
        tex.bpp = want or (4 if len(palette) <= 16 else 8)
        if tex.bpp == 4 and len(palette) > 16:
            idx, palette, lossy = psx.quantize(tex.pixels, 16)
        if lossy:
            self.ctx.note("splashpack.texture_quantized",
                          f"texture {key!r} has more colours than {tex.bpp} bpp holds; "
                          f"quantized to {len(palette)} colours", "info")
        tex.indices, tex.palette = idx, palette
        self._pack(tex)

    @staticmethod
    def _pack(tex: Tex) -> None:
        assert tex.indices is not None and tex.palette is not None
        tex.words = psx.pack_indices(tex.indices, tex.bpp)
        if len(tex.palette) % 2:
            # An odd CLUT upload is not a multiple of 4 bytes and crashes the runtime (PR #28).
            tex.palette = np.concatenate([tex.palette, np.zeros(1, np.uint16)])


def merge_pages(textures: list[Tex], boxes: dict[int, Box]) -> None:
    """Pages decoded from one atlas with different CLUTs (spec §b.7: one atlas may hold several
    textures, each with its own CLUT) go back into one atlas: each texture keeps only the texels
    its triangles reach (``boxes``: their UV bounding box in texels, by texture), and when those
    regions agree the textures share one index page, so the atlas and its CLUTs come back as
    they were."""
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, t in enumerate(textures):
        if t.origin is not None and i in boxes:
            groups.setdefault((*t.origin, t.bpp), []).append(i)
    for (_, _, bpp), members in groups.items():
        if len(members) < 2:
            continue
        merged = _merged(textures, members, boxes, bpp)
        if merged is None:
            continue
        for i in members:
            t = textures[i]
            if bpp == 16:
                t.words = merged
            else:
                t.indices = merged.astype(np.uint8)
                t.words = psx.pack_indices(t.indices, bpp)


def _merged(textures: list[Tex], members: list[int], boxes: dict[int, Box],
            bpp: int) -> npt.NDArray[np.uint16] | None:
    page = np.zeros((psx.PAGE, psx.PAGE), dtype=np.uint16)
    seen = np.zeros((psx.PAGE, psx.PAGE), dtype=bool)
    first: npt.NDArray[Any] | None = None
    for i in members:
        t = textures[i]
        src = t.words if bpp == 16 else t.indices
        if src is None or src.shape != (psx.PAGE, psx.PAGE):
            return None
        first = src if first is None else first
        x0, y0, x1, y1 = boxes[i]
        region = np.s_[y0:y1 + 1, x0:x1 + 1]
        vals = src[region].astype(np.uint16)
        clash = seen[region] & (page[region] != vals)
        if clash.any():
            return None
        page[region] = vals
        seen[region] = True
    if first is not None:
        # Texels no triangle reaches keep the page's data (the first texture's decoding of it)
        # rather than zeros, so the page written is the page read: the other CLUTs re-index
        # the same page to the same indices when their palette holds its colours.
        page[~seen] = first[~seen]
    return page


# -- VRAM placement -----------------------------------------------------------------------------
def _page_words(bpp: int) -> int:
    return {4: 64, 8: 128, 16: 256}[bpp]


class _Vram:
    """Page columns x = 320..960 step 64 in rows y = 0 and 256 (the framebuffers are x < 320),
    and a word-level occupancy map for the CLUTs."""

    def __init__(self) -> None:
        self.free = {(col, row): True for row in (0, 1) for col in range(5, 16)}
        self.occ = np.zeros((psx.VRAM_H, psx.VRAM_W), dtype=bool)
        for x, y, w, h in FRAMEBUFFERS:
            self.occ[y:y + h, x:x + w] = True
        self.cluts: dict[bytes, tuple[int, int]] = {}

    def atlas(self, bpp: int) -> tuple[int, int]:
        cols = _page_words(bpp) // 64
        for row in (0, 1):
            for col in range(5, 17 - cols):
                span = [(c, row) for c in range(col, col + cols)]
                if all(self.free.get(s, False) for s in span):
                    for s in span:
                        self.free[s] = False
                    x, y = col * 64, row * 256
                    self.occ[y:y + 256, x:x + cols * 64] = True
                    return x, y
        msg = "the textures do not fit in VRAM next to the framebuffers"
        raise LimitError(FMT, msg, field="atlases", expected="<= 22 page columns",
                         actual=f"one more {bpp} bpp page")

    def clut(self, words: npt.NDArray[np.uint16]) -> tuple[int, int]:
        key = words.tobytes()
        if key in self.cluts:
            return self.cluts[key]
        n = len(words)
        # The exporter's order: x = 0, 16, 32, ... outer, y = 0..511 inner (spec §b.8).
        for x in range(0, psx.VRAM_W - n + 1, 16):
            busy = self.occ[:, x:x + n].any(axis=1)
            if not busy.all():
                y = int(np.argmin(busy))
                self.occ[y, x:x + n] = True
                self.cluts[key] = (x, y)
                return x, y
        msg = "no room left in VRAM for another CLUT"
        raise LimitError(FMT, msg, field="cluts", expected="a free row", actual=f"{n} entries")


def place(textures: list[Tex]) -> tuple[list[tuple[int, int, int]], list[Tex]]:
    """Shelf-pack the textures into atlases per depth; identical index data shares a place.
    Returns the atlases as (x, y, bpp)."""
    vram = _Vram()
    atlases: list[tuple[int, int, int]] = []
    shared: dict[tuple[int, bytes, tuple[int, ...]], Tex] = {}
    for bpp in (16, 8, 4):
        group = [t for t in textures if t.bpp == bpp]
        group.sort(key=lambda t: (-t.pixels.shape[0], -t.pixels.shape[1]))
        cur = -1
        shelf_y = shelf_h = cursor = 0
        width = _page_words(bpp)
        for tex in group:
            assert tex.words is not None
            k = (bpp, tex.words.tobytes(), tex.words.shape)
            if k in shared:
                src = shared[k]
                tex.atlas, tex.x_words, tex.y = src.atlas, src.x_words, src.y
                continue
            h, w = tex.words.shape
            if cur < 0 or cursor + w > width:
                shelf_y, cursor, shelf_h = shelf_y + shelf_h, 0, 0
            if cur < 0 or shelf_y + h > psx.PAGE:
                x, y = vram.atlas(bpp)
                atlases.append((x, y, bpp))
                cur, shelf_y, shelf_h, cursor = len(atlases) - 1, 0, 0, 0
            tex.atlas, tex.x_words, tex.y = cur, cursor, shelf_y
            cursor += w
            shelf_h = max(shelf_h, h)
            shared[k] = tex
    for tex in textures:
        if tex.palette is not None:
            tex.clut = vram.clut(tex.palette)
    return atlases, textures


def atlas_pixels(atlases: list[tuple[int, int, int]],
                  textures: list[Tex]) -> list[npt.NDArray[np.uint16]]:
    out = [np.zeros((psx.PAGE, _page_words(bpp)), dtype=np.uint16) for _, _, bpp in atlases]
    for t in textures:
        assert t.words is not None
        h, w = t.words.shape
        out[t.atlas][t.y:t.y + h, t.x_words:t.x_words + w] = t.words
    return out


