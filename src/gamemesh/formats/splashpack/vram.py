"""SPLASHPACK's textures in VRAM, both ways (both generations: v1 holds its atlases and CLUTs in
the main file, versions 20+ in the ``.vram`` sidecar).

Reading: the 1024 x 512 VRAM the runtime's uploads make (atlases, then CLUTs), and one image and
material per (tpage, CLUT) that triangles use, decoded from it (:class:`PageMaterials`).

Writing: each base-colour image becomes a :class:`Tex` (4/8 bpp indices + palette, or 16 bpp words);
:func:`place` shelf-packs them into page-aligned 256-row atlases at x = 320..960, y = 0 or 256
(clear of the two 320x240 framebuffers) and places the CLUTs first-fit the way the exporter's
packer does (spec §b.8, §b.10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ...errors import LimitError
from ...registry import Context
from ...scene import Image, Material, Scene, TextureRef
from ...scene.model import CLAMP_TO_EDGE, NEAREST, Sampler
from ...textures import image_rgba, psx
from .layout import FRAMEBUFFERS

FMT = "splashpack"
WHITE = np.full((1, 1, 4), 255, dtype=np.uint8)
Box = tuple[int, int, int, int]

__all__ = ["Box", "PageMaterials", "Tex", "Textures", "VramSource", "atlas_depths",
           "atlas_pixels", "build_vram", "ext", "merge_pages", "place", "vram_png", "vram_rect",
           "vram_row"]


class VramSource(Protocol):
    """What a document of either generation gives the VRAM decoder."""

    @property
    def atlases(self) -> npt.NDArray[np.void]: ...  # x, y of each atlas

    @property
    def atlas_pixels(self) -> list[psx.U16]: ...

    def clut_entries(self) -> list[tuple[int, int, psx.U16]]: ...


def ext(obj: Any) -> dict[str, Any]:
    """``obj.extras["splashpack"]`` when it is a dict, else an empty dict."""
    extras = getattr(obj, "extras", None)
    got = extras.get(FMT) if isinstance(extras, dict) else None
    return got if isinstance(got, dict) else {}


# -- reading: the VRAM of a file and the pages its triangles use ------------------------------
def build_vram(doc: VramSource) -> psx.U16:
    """The 1024 x 512 VRAM after the runtime's uploads: atlases, then CLUTs."""
    vram = np.zeros((psx.VRAM_H, psx.VRAM_W), dtype=np.uint16)
    for d, px in zip(doc.atlases, doc.atlas_pixels, strict=False):
        psx.blit(vram, int(d["x"]), int(d["y"]), px)
    for x, y, words in doc.clut_entries():
        psx.blit(vram, x, y, words)
    return vram


def _uploads(doc: VramSource, cluts: list[tuple[int, int, psx.U16]] | None = None
             ) -> list[tuple[int, int, psx.U16]]:
    """What :func:`build_vram` blits, in its order: (x, y, (h, w) words), clipped to VRAM as
    the blit clips it; uploads that land nowhere are left out. ``cluts``: the document's
    ``clut_entries()`` when the caller has them already."""
    out = []
    # The atlases' x and y as Python ints from one tolist (not a field read per record).
    atl = doc.atlases
    xy = zip(atl["x"].tolist(), atl["y"].tolist(), strict=True)
    ups = [(x, y, px) for (x, y), px in zip(xy, doc.atlas_pixels, strict=False)]
    for x, y, words in [*ups, *(doc.clut_entries() if cluts is None else cluts)]:
        block = np.asarray(words, dtype=np.uint16)
        if block.ndim == 1:
            block = block[None, :]
        h = max(0, min(block.shape[0], psx.VRAM_H - y))
        w = max(0, min(block.shape[1], psx.VRAM_W - x))
        if h and w and x >= 0 and y >= 0:
            out.append((x, y, block[:h, :w]))
    return out


def vram_rect(uploads: list[tuple[int, int, psx.U16]], x: int, y: int, w: int, h: int
              ) -> psx.U16:
    """``build_vram(doc)[y:y + h, x:x + w]`` (a rectangle inside VRAM) from the document's
    ``_uploads``, without the whole 1 MB VRAM: the later upload wins where two overlap."""
    out = np.zeros((h, w), dtype=np.uint16)
    for ux, uy, block in uploads:
        x0, x1 = max(x, ux), min(x + w, ux + block.shape[1])
        y0, y1 = max(y, uy), min(y + h, uy + block.shape[0])
        if x0 < x1 and y0 < y1:
            out[y0 - y:y1 - y, x0 - x:x1 - x] = block[y0 - uy:y1 - uy, x0 - ux:x1 - ux]
    return out


def vram_row(uploads: list[tuple[int, int, psx.U16]], x: int, y: int, n: int) -> psx.U16:
    """``n`` words of VRAM row ``y % 512`` from column ``x``, wrapping around the right edge
    (as the GPU reads a CLUT)."""
    y, x = y % psx.VRAM_H, x % psx.VRAM_W
    parts: list[psx.U16] = []
    while n > 0:
        k = min(n, psx.VRAM_W - x)
        parts.append(vram_rect(uploads, x, y, k, 1)[0])
        x, n = 0, n - k
    if len(parts) == 1:
        return parts[0]
    row: psx.U16 = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint16)
    return row


def _decode_page(uploads: list[tuple[int, int, psx.U16]], tpage: int, clut_x: int, clut_y: int,
                clut_count: int | None = None, palette: psx.U16 | None = None
                ) -> npt.NDArray[np.uint8]:
    """:func:`psx.decode_page` of ``build_vram(doc)``, reading only the page's words and its
    CLUT row (a page is at most 256 words wide, so it wraps at most once). ``palette``: that
    row when the caller has read it already (its entries past ``clut_count`` are blanked)."""
    px0, py0 = psx.page_origin(tpage)
    bpp = psx.tpage_depth(tpage)
    n_words = psx.PAGE * bpp // 16
    k = min(n_words, psx.VRAM_W - px0)
    raw = vram_rect(uploads, px0, py0, k, psx.PAGE)
    if k < n_words:
        raw = np.concatenate([raw, vram_rect(uploads, 0, py0, n_words - k, psx.PAGE)], axis=1)
    if bpp == 16:
        return psx.decode_page(raw, 0x100, 0, 0)  # the page at (0, 0) of ``raw``
    if palette is None:
        palette = vram_row(uploads, clut_x, clut_y, 1 << bpp)
    return psx.decode_indexed(raw, bpp, palette, clut_count)


def vram_png(doc: VramSource, ctx: Context) -> dict[str, bytes]:
    """The whole VRAM as a 1024 x 512 PNG, each word shown as 15-bit colour."""
    from ...textures import encode_png

    name = ctx.path.name if ctx.path is not None else "vram.png"
    return {name: encode_png(psx.vram_to_rgba(build_vram(doc)))}


def _uv_box(uv: npt.NDArray[np.uint8]) -> tuple[int, int, int, int]:
    """(u min, u max, v min, v max) of (T, 3, 2) texture coordinates: one reduction per axis
    over a column of the pairs made contiguous once (numpy reduces (T, 3, 2) over two axes ten
    times slower than a column, and each column of the records' strided view was a copy)."""
    pairs = np.ascontiguousarray(uv).reshape(-1, 2)
    u, v = pairs[:, 0], pairs[:, 1]
    return int(u.min()), int(u.max()), int(v.min()), int(v.max())


class PageMaterials:
    """One image and material per (tpage, clutX, clutY) of a read file, decoded from its VRAM
    on first use."""

    def __init__(self, doc: VramSource, scene: Scene) -> None:
        self.doc, self.scene = doc, scene
        # The uploads, not the whole VRAM: a page reads only its own words and CLUT row.
        cluts = doc.clut_entries()  # read once for both
        self.uploads = _uploads(doc, cluts)
        self.counts = {(x // 16, y): len(w) for x, y, w in cluts}
        self.materials: dict[tuple[int, int, int], int] = {}
        self.pages: dict[tuple[int, int, int], npt.NDArray[np.uint8]] = {}

    def material(self, key: tuple[int, int, int], uv: npt.NDArray[np.uint8]) -> int:
        if key not in self.materials:
            self.materials[key] = self._make(key)
        mi = self.materials[key]
        mat = self.scene.materials[mi]
        if mat.alpha_mode == "OPAQUE" and len(uv):
            # MASK when a texel the triangles can reach (their UV bounding box) is transparent.
            # One flat reduction per axis: numpy reduces (T, 3, 2) over two axes ten times
            # slower than it reduces a column.
            u0, u1, v0, v1 = _uv_box(uv)
            alpha = self.pages[key][v0:v1 + 1, u0:u1 + 1, 3]
            if not alpha.all():  # some texel is 0: one reduction, no comparison array
                mat.alpha_mode = "MASK"
        return mi

    def _make(self, key: tuple[int, int, int]) -> int:
        tpage, cx, cy = key
        bpp = psx.tpage_depth(tpage)
        count = self.counts.get((cx, cy)) if bpp < 16 else None
        info: dict[str, Any] = {"tpage": tpage, "clut": [cx, cy], "bpp": bpp,
                                "vram": list(psx.page_origin(tpage))}
        palette = None
        if bpp < 16:
            # The CLUT row read once, for the extras and the decode: the extras keep its
            # first ``n`` words (Python ints, in one call) before the decode blanks the
            # entries past the CLUT's length.
            palette = vram_row(self.uploads, cx * 16, cy, 1 << bpp)
            n = min(count if count is not None else 1 << bpp, 1 << bpp)
            info["palette"] = palette[:n].tolist()
        page = _decode_page(self.uploads, tpage, cx * 16, cy, count, palette)
        self.pages[key] = page
        name = f"tpage_{tpage:04x}_clut_{cx}_{cy}"
        sampler = Sampler(NEAREST, NEAREST, CLAMP_TO_EDGE, CLAMP_TO_EDGE)
        img = self.scene.add_image(Image(name=name, pixels=page, sampler=sampler,
                                         extras={FMT: info}))
        mat = Material(name=name, base_color_texture=TextureRef(img), unlit=True,
                       extras={FMT: {"tpage": tpage, "clut": [cx, cy], "color_scale": 128,
                                     "dither": bool(tpage & 0x0200)}})
        return self.scene.add_material(mat)


def atlas_depths(widths: Any) -> dict[str, int]:
    """How many atlases of each texel depth (by width in VRAM words: 64 = 4 bpp, 128 = 8,
    256 = 16; any other width by its word count), for ``gamemesh info``."""
    depths: dict[str, int] = {}
    for w in widths:
        bpp = {64: 4, 128: 8, 256: 16}.get(int(w), 0)
        key = f"{bpp}bpp" if bpp else f"{int(w)}words"
        depths[key] = depths.get(key, 0) + 1
    return depths


# -- writing: textures into atlases and CLUTs -------------------------------------------------
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


