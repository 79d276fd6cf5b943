"""What both SPLASHPACK generations' scene conversions share: a file's triangles as glTF
primitives (read) and a glTF primitive as triangles in the object's frame (write), the Lua
files, and GTEScaling's choice. Every triangle record is the 52-byte seed triangle (v1 layouts
C..H and versions 20+ differ only in the name of its last word).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import LimitError
from ...registry import Context
from ...safeio import read_regular
from ...scene import Material, Mesh, Node, Primitive, Scene
from ...scene.math import vertex_normals
from ...textures import psx
from .conventions import AXES, DEFAULT_GTE, SWAP
from .layout import TPAGE_DITHER
from .vram import Box, Tex, ext

FMT = "splashpack"

__all__ = [
    "NEUTRAL",
    "Part",
    "bright_corners",
    "bright_note",
    "choose_gte",
    "color_scale",
    "corner_colors",
    "is_navmesh",
    "keep_bright",
    "lua_extras",
    "lua_files",
    "material_keys",
    "part",
    "part_records",
    "primitive",
    "restore_bright",
    "scene_lua",
    "to_unit",
    "uv_boxes",
]


# -- vertex colours ----------------------------------------------------------------------------
# The PS1 GPU modulates a texel by the vertex colour / 128 (psyqo ``Color``, spec §b.5): 128 leaves
# the texel unchanged and 255 nearly doubles it. glTF's COLOR_0 multiplies by the value itself,
# so a byte reads as min(byte / 128, 1.0) and 1.0 writes as 128: glTF -> SPLASHPACK -> glTF keeps
# colours, and a second trip writes the first one's bytes. Bytes above 128 (SplashEdit bakes
# lighting up to 0.8 x 255 = 204) brighten the texel, which COLOR_0 cannot say: they read as 1.0,
# a note names each mesh and how many corners were clamped, and the mesh's extras keep those
# primitives' bytes, which the writer uses again while the colours are still the clamped view of
# them (so SPLASHPACK -> glTF -> SPLASHPACK stays byte-exact).
NEUTRAL = 128  # the vertex colour that leaves a texel unchanged


def to_unit(raw: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """Colour bytes -> COLOR_0 floats, min(byte / 128, 1) (a power of two: exact)."""
    # Converted inside the product (one pass fewer than a float copy scaled in place; the
    # bytes are often a strided view of the colour words).
    col: npt.NDArray[np.float32] = np.multiply(raw, np.float32(1 / NEUTRAL), dtype=np.float32)
    np.minimum(col, np.float32(1.0), out=col)
    return col


def bright_corners(words: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """Nonzero for each corner (a colour word of :func:`corner_colors`) with a colour byte
    over 128."""
    # A byte is over 128 when its top bit is set and one of its low seven is: adding 0x7F to
    # each byte's low seven bits carries into its top bit exactly when they are not all zero
    # (0x7F + 0x7F < 0x100: no carry reaches the next byte). Four passes over one word a
    # corner, where a comparison per byte and a reduction along each corner's three bytes
    # cost a third of the conversion.
    low = words & np.uint32(0x7F7F7F)
    low += np.uint32(0x7F7F7F)
    low &= words
    low &= np.uint32(0x808080)
    return low


def keep_bright(mesh: Mesh, pi: int, words: npt.NDArray[np.uint32]) -> int:
    """Keep primitive ``pi``'s corner bytes in the mesh's extras when some were clamped;
    returns how many corners were. ``words``: the corners' colour words, as
    :func:`corner_colors` gives them."""
    over = int(np.count_nonzero(bright_corners(words)))
    if over:
        kept = mesh.extras.setdefault(FMT, {}).setdefault("colors_raw", {})
        kept[str(pi)] = base64.b64encode(_rgb(words).tobytes()).decode("ascii")
    return over


def corner_colors(tris: npt.NDArray[np.void]) -> npt.NDArray[np.uint32]:
    """Each corner's colour as one little-endian word (r, g, b and the unused fourth byte),
    (T * 3,) in vertex order (the winding flipped): a gather of 4-byte words out of the
    records, several times faster than of the 3-byte colours."""
    recs = np.ascontiguousarray(tris)
    at = recs.dtype.fields["color"][1]  # type: ignore[index]
    words = recs.view(np.uint8).reshape(len(recs), recs.itemsize)[:, at:at + 12].view("<u4")
    out: npt.NDArray[np.uint32] = np.take(words, SWAP, axis=1).reshape(-1)
    return out


def _rgb(words: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint8]:
    """The (N, 3) colour bytes of :func:`corner_colors`'s words (a view)."""
    rgb: npt.NDArray[np.uint8] = words.view(np.uint8).reshape(-1, 4)[:, :3]
    return rgb


def bright_note(ctx: Context, counts: list[tuple[str, int]]) -> None:
    hit = [(n, c) for n, c in counts if c]
    if not hit:
        return
    shown = ", ".join(f"{n!r} {c}" for n, c in hit[:8]) + (
        f" (+{len(hit) - 8} more meshes)" if len(hit) > 8 else "")
    ctx.note("splashpack.colors_clamped", "COLOR_0 = byte / 128 (128 leaves the texel "
             "unchanged on the console); corners brighter than that read as 1.0, their bytes "
             f"kept in the mesh's extras: {shown}", "info")


def restore_bright(colors: npt.NDArray[np.uint8], prim: Primitive, tris: npt.NDArray[Any],
                   mesh: Mesh, pi: int, mat: Material | None, scale: float
                   ) -> npt.NDArray[np.uint8]:
    """The (T, 3, 3) corner bytes to write: the kept bytes of primitive ``pi`` while its
    COLOR_0 is still exactly their clamped view (neutral material, scale 128), else ``colors``."""
    kept = ext(mesh).get("colors_raw")
    raw_b64 = kept.get(str(pi)) if isinstance(kept, dict) else None
    if not isinstance(raw_b64, str) or scale != NEUTRAL or not prim.colors or (
            mat is not None and tuple(mat.base_color_factor[:3]) != (1.0, 1.0, 1.0)):
        return colors
    try:
        raw = np.frombuffer(base64.b64decode(raw_b64, validate=True), np.uint8)
    except ValueError:
        return colors
    cur = np.asarray(prim.colors[0])
    if raw.size != cur.shape[0] * 3 or cur.ndim != 2 or cur.shape[1] < 3:
        return colors
    raw = raw.reshape(-1, 3)
    if not np.array_equal(to_unit(raw), cur[:, :3].astype(np.float32)):
        return colors
    out: npt.NDArray[np.uint8] = raw[tris]
    return out


# -- reading: triangles -> primitives ------------------------------------------------------------
def lua_files(lua: list[bytes]) -> dict[str, bytes]:
    """The Lua sources of a file by the names ``--extract`` writes them under."""
    return {f"lua_{i}.lua": src for i, src in enumerate(lua)}


def lua_extras(lua: list[bytes]) -> list[dict[str, Any]]:
    """The Lua sources as the scene's extras keep them (text, or base64 when not UTF-8)."""
    out: list[dict[str, Any]] = []
    for i, src in enumerate(lua):
        entry: dict[str, Any] = {"name": f"lua_{i}.lua"}
        try:
            entry["source"] = src.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(src).decode("ascii")
        out.append(entry)
    return out


def _normals(stored: npt.NDArray[Any], v: npt.NDArray[np.int16],
             scale: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """Unit normals: the stored one (v0's, spec §b.5), or the face's where it is zero (only
    those faces are computed: real files store a normal nearly everywhere)."""
    n = np.multiply(stored, AXES)  # int16 -> float64 in one pass
    ln = _row_length(n)
    is_zero = ln == 0  # (N, 1): used for the divisor and to find the faces to compute
    out = np.divide(n, np.where(is_zero, 1, ln), dtype=np.float64)
    zero = np.flatnonzero(is_zero)
    if zero.size:
        w = np.multiply(v[zero], scale)  # corners as stored: v0 v1 v2
        faces = np.cross(w[:, 2] - w[:, 0], w[:, 1] - w[:, 0])  # v0 v2 v1, as written
        fl = _row_length(faces)
        out[zero] = np.where(fl > 0, faces / np.where(fl == 0, 1, fl), np.array([0.0, 1.0, 0.0]))
    unit: npt.NDArray[np.float32] = out.astype(np.float32)
    return unit


def _row_length(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """(N, 1) lengths of 3-wide rows, the same bits as ``linalg.norm(axis=1)`` (which is
    several times slower on such narrow rows)."""
    # The squares in one pass, summed column by column: (x*x + y*y) + z*z, as written out.
    sq = a * a
    total = sq[:, 0] + sq[:, 1]
    total += sq[:, 2]
    return np.sqrt(total)[:, None]


def primitive(tris: npt.NDArray[np.void], s: float
              ) -> tuple[Primitive, npt.NDArray[np.uint32]]:
    """The triangles as one primitive, and their corners' colour words (for
    :func:`keep_bright`)."""
    # np.take, not tris[...][:, SWAP, :]: a fancy index on the middle axis hands back a
    # transposed layout, and every later reshape of it is a copy.
    v = np.take(tris["v"], SWAP, axis=1)  # (T, 3, 3) int16, the winding flipped
    scale = AXES * s
    # float64 product rounded once to float32 (the float64 array is never materialised).
    pos = np.multiply(v, scale, out=np.empty(v.shape, np.float32), casting="same_kind")
    normals = np.repeat(_normals(tris["normal"], tris["v"], scale), 3, axis=0)
    uv = np.take(tris["uv"], SWAP, axis=1).astype(np.float32)
    uv += 0.5
    uv *= np.float32(1 / 256)  # a power of two: the same bits as dividing
    words = corner_colors(tris)
    prim = Primitive(positions=pos.reshape(-1, 3), normals=normals,
                     texcoords=[uv.reshape(-1, 2)], colors=[to_unit(_rgb(words))])
    return prim, words


def material_keys(tris: npt.NDArray[np.void]
                  ) -> tuple[list[tuple[int, int, int]], npt.NDArray[np.intp] | None]:
    """The (tpage, clutX, clutY) keys of non-empty triangles in ascending order, and which one
    each triangle has (None when they all share the first: the common case, told by three
    comparisons instead of a sort)."""
    tp, cx, cy = tris["tpage"], tris["clut_x"], tris["clut_y"]
    first = (int(tp[0]), int(cx[0]), int(cy[0]))
    if (tp == first[0]).all() and (cx == first[1]).all() and (cy == first[2]).all():
        return [first], None
    # One 48-bit key per triangle: a 1-D unique is far cheaper than a row-wise one.
    keys = (tp.astype(np.int64) << 32) | (cx.astype(np.int64) << 16) | cy.astype(np.int64)
    uniq, inverse = np.unique(keys, return_inverse=True)
    out = [(k >> 32, (k >> 16) & 0xFFFF, k & 0xFFFF) for k in uniq.tolist()]
    return out, inverse.reshape(-1)


# -- writing: primitives -> triangles ---------------------------------------------------------
@dataclass
class Part:
    """Triangles of one primitive, in the object's baked local frame, glTF axes."""

    corners: npt.NDArray[np.float64]  # (T, 3, 3)
    normals: npt.NDArray[np.float64]  # (T, 3) v0's
    colors: npt.NDArray[np.uint8]  # (T, 3, 3)
    uvs: npt.NDArray[np.float64]  # (T, 3, 2)
    texture: int  # index into Textures.items


# -- geometry -----------------------------------------------------------------------------------
def _colors(prim: Primitive, n: int, mat: Material | None, scale: float) -> npt.NDArray[np.uint8]:
    factor = np.asarray(mat.base_color_factor[:3] if mat is not None else (1, 1, 1), np.float64)
    c = np.asarray(prim.colors[0], dtype=np.float64)[:, :3] if prim.colors else np.ones((n, 3))
    out: npt.NDArray[np.uint8] = np.clip(np.nan_to_num(np.rint(c * factor * scale)), 0,
                                         255).astype(np.uint8)
    return out


def part(prim: Primitive, bake: npt.NDArray[np.float64], mat: Material | None, tex: int,
          texcoord: int, scale: float, ctx: Context, where: str,
          kept: tuple[Mesh, int] | None = None) -> Part | None:
    """``kept``: the mesh and primitive index, whose extras may hold the corner bytes the
    reader clamped (``colors.restore_bright``)."""
    # Non-finite input (a broken glTF) must not turn into garbage integers: zero it.
    pos = np.nan_to_num(np.asarray(prim.positions, dtype=np.float64).reshape(-1, 3))
    tris = prim.triangles().astype(np.int64)
    if len(tris) == 0 or len(pos) == 0:
        return None
    if tris.max() >= len(pos):
        ctx.note("splashpack.bad_indices", f"{where}: indices out of range; skipped",
                 covers=("primitives",))
        return None
    if prim.normals is not None and len(prim.normals) == len(pos):
        nrm = np.asarray(prim.normals, dtype=np.float64)
    else:
        nrm = vertex_normals(pos, tris).astype(np.float64)
    inv_t = np.linalg.pinv(bake).T
    nrm = nrm @ inv_t.T
    nrm = np.nan_to_num(nrm, posinf=0.0, neginf=0.0)
    ln = np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm = np.where(ln > 0, nrm / np.where(ln == 0, 1, ln), 0.0)
    local = pos @ bake.T
    uv = (np.asarray(prim.texcoords[texcoord], dtype=np.float64)
          if texcoord < len(prim.texcoords) else np.zeros((len(pos), 2)))
    if len(uv) != len(pos) or uv.ndim != 2 or uv.shape[1] < 2:
        uv = np.zeros((len(pos), 2))
    uv = np.nan_to_num(uv[:, :2])
    col = _colors(prim, len(pos), mat, scale)[tris]
    if kept is not None:
        col = restore_bright(col, prim, tris, kept[0], kept[1], mat, scale)
    return Part(corners=local[tris], normals=nrm[tris[:, 0]], colors=col,
                 uvs=uv[tris], texture=tex)


def color_scale(scene: Scene, mat: Material | None) -> float:
    for src in (ext(mat) if mat is not None else {}, ext(scene)):
        v = src.get("color_scale")
        if isinstance(v, int | float) and 0 < v <= 255:
            return float(v)
    # A scene from elsewhere: colour 1.0 means "unchanged texture", which is 128 on the PS1.
    return 128.0


def is_navmesh(node: Node) -> bool:
    flag = ext(node).get("navmesh")
    return (flag is not None and flag is not False) or node.name.lower().startswith("navmesh")


def scene_lua(scene: Scene, ctx: Context) -> tuple[list[bytes], int]:
    """The Lua files to write (the scene's own, then ``--lua`` files) and the scene Lua index."""
    out: list[bytes] = []
    entries = ext(scene).get("lua")
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict) and isinstance(e.get("source"), str):
            out.append(e["source"].encode("utf-8"))
        elif isinstance(e, dict) and isinstance(e.get("base64"), str):
            out.append(base64.b64decode(e["base64"]))
    first_given = len(out)
    files = ctx.opt("lua")
    for f in [files] if isinstance(files, str | Path) else list(files or []):
        out.append(read_regular(Path(f)))
    idx = ext(scene).get("scene_lua_index")
    scene_lua = int(idx) if isinstance(idx, int) else -1
    if scene_lua < 0 and first_given < len(out):
        scene_lua = first_given
    return out, scene_lua


def part_records(p: Part, textures: list[Tex], atlases: list[tuple[int, int, int]],
                  raw: Callable[[npt.NDArray[np.float64]], npt.NDArray[Any]],
                  dtype: np.dtype[np.void]) -> npt.NDArray[np.void]:
    """One part's 52-byte triangle records (v1 ``TRI`` or v20-24's, which differ only in the
    name of the last word). A part without a texture (``texture < 0``, v20-24 only) gets
    tpage 0xFFFF and no UVs."""
    r = np.zeros(len(p.corners), dtype)
    r["v"] = raw(p.corners[:, SWAP, :])
    r["normal"] = np.clip(np.rint(p.normals * AXES * 4096), -32768, 32767)
    r["color"][:, :, :3] = p.colors[:, SWAP, :]
    if p.texture < 0:
        r["tpage"] = 0xFFFF
        return r
    t = textures[p.texture]
    ax, ay, _ = atlases[t.atlas]
    th, tw = t.pixels.shape[:2]
    per = 16 // t.bpp
    u = np.clip(np.floor(p.uvs[:, SWAP, 0] * tw), 0, tw - 1) + t.x_words * per
    v = np.clip(np.floor(p.uvs[:, SWAP, 1] * th), 0, th - 1) + t.y
    r["uv"][:, :, 0] = np.nan_to_num(u).astype(np.uint8)
    r["uv"][:, :, 1] = np.nan_to_num(v).astype(np.uint8)
    depth = {4: 0, 8: 1, 16: 2}[t.bpp]
    r["tpage"] = (ax // 64) | ((ay // 256) << 4) | (depth << 7) | (
        TPAGE_DITHER if t.dither else 0)
    if t.bpp < 16:
        r["clut_x"], r["clut_y"] = t.clut[0] // 16, t.clut[1]
    return r


def uv_boxes(parts: Iterable[Part]) -> dict[int, Box]:
    """The texel bounding box each texture's triangles reach (for :func:`merge_pages`)."""
    boxes: dict[int, Box] = {}
    for p in parts:
        uv = np.clip(np.floor(p.uvs.reshape(-1, 2) * psx.PAGE), 0, psx.PAGE - 1)
        lo, hi = uv.min(axis=0), uv.max(axis=0)
        old = boxes.get(p.texture, (int(lo[0]), int(lo[1]), int(hi[0]), int(hi[1])))
        boxes[p.texture] = (min(old[0], int(lo[0])), min(old[1], int(lo[1])),
                            max(old[2], int(hi[0])), max(old[3], int(hi[1])))
    return boxes


def choose_gte(scene: Scene, ctx: Context, extent: float, raw_max: int, fit: int,
               try_default: bool = False, what: str = "fits +-4 GTE units"
               ) -> float:
    """GTEScaling: the user's, else the one the scene came with (or, with ``try_default``, the
    default) when the extent fits ``raw_max``, else one chosen from the extent with head-room
    (``fit``), noted. Shared by the v1 (+-4 GTE units) and modern (int16) writers."""
    given = ctx.opt("gte_scaling")
    if given is not None:
        g = float(given)
        if not np.isfinite(g) or g <= 0:
            msg = "GTEScaling must be a positive number"
            raise LimitError(FMT, msg, field="gte_scaling", expected="> 0", actual=given)
        return g
    candidates = [ext(scene).get("gte_scaling"), *([DEFAULT_GTE] if try_default else [])]
    for cand in candidates:
        if isinstance(cand, int | float) and cand > 0 and extent * 4096 / cand <= raw_max:
            return float(cand)
    if extent <= 0 or not np.isfinite(extent):
        return DEFAULT_GTE
    g = float(f"{extent * 4096 / fit:.3g}")
    g = g if extent * 4096 / g <= raw_max else extent * 4096 / fit
    ctx.note("splashpack.gte_scaling_chosen",
             f"GTEScaling {g:g} chosen so the scene (extent {extent:g}) {what}", "info")
    return g

