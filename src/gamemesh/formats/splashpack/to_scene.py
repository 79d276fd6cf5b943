"""SplashpackDocument -> Scene (glTF conventions). The reverse lives in ``build.py``.

Axes (spec §b.9): the file is Unity's left-handed frame with Y negated. glTF = s * (-X, -Y, Z)
with s = GTEScaling / 4096; C = diag(-1, -1, 1) is a proper rotation, so the rotation matrices
become C R C and, since the exporter's winding is opposite to its normals in PSX space, v1 and v2
swap to give counter-clockwise front faces.
"""

from __future__ import annotations

import base64
import itertools
import math
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import add_new_notes
from ...registry import Context
from ...scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from ...scene.model import CLAMP_TO_EDGE, NEAREST, Sampler
from ...textures import psx
from .document import SplashpackDocument
from .layout import TRI

FMT = "splashpack"
AXES = np.array([-1.0, -1.0, 1.0])
SWAP = [0, 2, 1]  # v0, v2, v1: the winding flip of the axis change
_CRC_FP12 = AXES[:, None] * AXES[None, :] / 4096.0  # C R C's signs, fp12 scale
DEFAULT_GTE = 100.0

__all__ = ["AXES", "build_vram", "lua_files", "to_scene", "tris52", "vram_png"]


def tris52(doc: SplashpackDocument, i: int) -> npt.NDArray[np.void]:
    """Object i's triangles as 52-byte records; layout B's tpage and CLUT come from the object."""
    tris = doc.meshes[i]
    if tris.dtype == TRI:
        return tris
    out = np.zeros(len(tris), TRI)
    for name in ("v", "normal", "uv", "uv_pad", "color"):
        out[name] = tris[name]
    obj = doc.objects[i]
    out["tpage"], out["clut_x"], out["clut_y"] = obj["tpage"], obj["clut_x"], obj["clut_y"]
    return out


def build_vram(doc: SplashpackDocument) -> psx.U16:
    """The 1024 x 512 VRAM after the runtime's uploads: atlases, then CLUTs."""
    vram = np.zeros((psx.VRAM_H, psx.VRAM_W), dtype=np.uint16)
    for d, px in zip(doc.atlases, doc.atlas_pixels, strict=False):
        psx.blit(vram, int(d["x"]), int(d["y"]), px)
    for x, y, words in doc.clut_entries():
        psx.blit(vram, x, y, words)
    return vram


def _uploads(doc: SplashpackDocument, cluts: list[tuple[int, int, psx.U16]] | None = None
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


def vram_png(doc: SplashpackDocument, ctx: Context) -> dict[str, bytes]:
    """The whole VRAM as a 1024 x 512 PNG, each word shown as 15-bit colour."""
    from ...textures import encode_png

    name = ctx.path.name if ctx.path is not None else "vram.png"
    return {name: encode_png(psx.vram_to_rgba(build_vram(doc)))}


def lua_files(doc: SplashpackDocument) -> dict[str, bytes]:
    return {f"lua_{i}.lua": src for i, src in enumerate(doc.lua)}


def _lua_extras(doc: SplashpackDocument) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, src in enumerate(doc.lua):
        entry: dict[str, Any] = {"name": f"lua_{i}.lua"}
        try:
            entry["source"] = src.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(src).decode("ascii")
        out.append(entry)
    return out


Quat = tuple[float, float, float, float]


def _rotations(raw: npt.NDArray[Any]) -> tuple[list[Quat], list[float]]:
    """The stored 4.12 row-major (N, 9) matrices as glTF quaternions (their nearest rotations)
    and how far each was from a rotation: :func:`_rotations_svd`'s results, without an SVD
    per call for the matrices that are rotations already. In 4.12 those are the proper
    signed permutations of 4096 (the identity above all: most objects of a small scene);
    their results come from a table that :func:`_rotations_svd` itself filled."""
    rows = np.asarray(raw).reshape(-1, 9).tolist()
    exact = _exact_rotations()
    found = [exact.get(tuple(r)) for r in rows]
    quats = [f[0] if f is not None else _NO_QUAT for f in found]
    errs = [f[1] if f is not None else 0.0 for f in found]
    rest = [i for i, f in enumerate(found) if f is None]
    if rest:
        # Each matrix's result is its own (a stacked SVD runs per matrix): the others'
        # subset gives the bits the whole stack gives them.
        sub = raw if len(rest) == len(rows) else np.asarray(raw).reshape(-1, 9)[rest]
        for i, q, e in zip(rest, *_rotations_svd(sub), strict=True):
            quats[i], errs[i] = q, e
    return quats, errs


_NO_QUAT: Quat = (0.0, 0.0, 0.0, 1.0)  # a placeholder, replaced before it is returned


@cache
def _exact_rotations() -> dict[tuple[int, ...], tuple[Quat, float]]:
    """The 24 proper rotations among 4.12 matrices (signed permutations of 4096, determinant
    +1) with :func:`_rotations_svd`'s quaternion and error for each: its own bits (the signs
    of its zeros included), computed once."""
    keys = []
    for perm in itertools.permutations(range(3)):
        for sg in itertools.product((1, -1), repeat=3):
            m = [[0] * 3 for _ in range(3)]
            for i, j in enumerate(perm):
                m[i][j] = sg[i] * 4096
            if round(float(np.linalg.det(np.array(m, dtype=np.float64)))) > 0:
                keys.append(tuple(v for row in m for v in row))
    quats, errs = _rotations_svd(np.array(keys, dtype=np.int32))
    return {k: (q, e) for k, q, e in zip(keys, quats, errs, strict=True)}


def _rotations_svd(raw: npt.NDArray[Any]) -> tuple[list[Quat], list[float]]:
    """The stored 4.12 row-major (N, 9) matrices as glTF quaternions (their nearest rotations)
    and how far each was from a rotation (the fixed-point rounding makes it a few 1e-4 off).
    One SVD call for all objects: numpy runs the same LAPACK routine on each matrix of a
    stack, so the bits are those of one call per matrix; the quaternions are
    :func:`rotation_to_quat`'s, row by row."""
    # r / 4096 then C R C as one product by +-2**-12 per element: the scaling by a power of
    # two and the sign changes are exact, so the bits are those of the three steps.
    r = np.multiply(np.asarray(raw).reshape(-1, 3, 3), _CRC_FP12, dtype=np.float64)
    u, _, vt = np.linalg.svd(r)
    rot = u @ vt
    if len(rot) <= 16:
        return _rotations_few(u, vt, rot, r)
    neg = np.flatnonzero(np.linalg.det(rot) < 0)
    if neg.size:
        u[neg, :, -1] = -u[neg, :, -1]
        rot[neg] = u[neg] @ vt[neg]
    err = np.abs(rot - r).reshape(-1, 9).max(axis=1)
    return _quats(rot), err.tolist()


def _rotations_few(u: npt.NDArray[np.float64], vt: npt.NDArray[np.float64],
                   rot: npt.NDArray[np.float64], r: npt.NDArray[np.float64]
                   ) -> tuple[list[Quat], list[float]]:
    """The rest of :func:`_rotations` for a few objects in plain floats. ``rot`` is
    orthogonal (U V^T of an SVD, to 1e-15), so its determinant is +-1 and its sign comes out
    the same by any formula."""
    m = rot.tolist()
    for i, ((a, b, c), (d, e, f), (g, h, k)) in enumerate(m):
        if a * (e * k - f * h) - b * (d * k - f * g) + c * (d * h - e * g) < 0:
            u[i, :, -1] = -u[i, :, -1]
            rot[i] = u[i] @ vt[i]
            m[i] = rot[i].tolist()
    err = np.abs(rot - r).reshape(-1, 9).max(axis=1)
    return [_quat(a) for a in m], err.tolist()


def _quats(m: npt.NDArray[np.float64]) -> list[Quat]:
    """:func:`rotation_to_quat` of each matrix of an (N, 3, 3) stack, in Python floats: the
    same IEEE operations in the same order (so the same bits) without numpy's per-call cost
    on nine numbers; one call per object, never per vertex."""
    return [_quat(a) for a in m.tolist()]


def _quat(m: list[list[float]]) -> Quat:
    d0, d1, d2 = m[0][0], m[1][1], m[2][2]
    tr = (d0 + d1) + d2  # np.trace's order
    cand = [tr, d0, d1, d2]
    k = cand.index(max(cand))  # the first largest, as np.argmax
    if k == 0:
        s = 2.0 * math.sqrt(max(1.0 + tr, 1e-300))
        q = [(m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, s / 4]
    elif k == 1:
        s = 2.0 * math.sqrt(max(1.0 + d0 - d1 - d2, 1e-300))
        q = [s / 4, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s]
    elif k == 2:
        s = 2.0 * math.sqrt(max(1.0 + d1 - d0 - d2, 1e-300))
        q = [(m[0][1] + m[1][0]) / s, s / 4, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s]
    else:
        s = 2.0 * math.sqrt(max(1.0 + d2 - d0 - d1, 1e-300))
        q = [(m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, s / 4, (m[1][0] - m[0][1]) / s]
    # np.linalg.norm of a 4-vector is sqrt(q . q), summed in this order.
    n = math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3])
    x, y, z, w = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    return (x, y, z, w) if w >= 0 else (-x, -y, -z, -w)


def rotation_to_quat(m: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """xyzw quaternion of a rotation matrix by Shepperd's method: it picks the largest of
    w, x, y, z first, so half turns (w = 0, common in level files) keep their axis signs, which
    scene.math.matrix_to_quat loses (it takes the signs from differences that are 0 there)."""
    tr = float(np.trace(m))
    diag = [float(m[0, 0]), float(m[1, 1]), float(m[2, 2])]
    k = int(np.argmax([tr, *diag]))
    if k == 0:
        s = 2.0 * np.sqrt(max(1.0 + tr, 1e-300))
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4]
    elif k == 1:
        s = 2.0 * np.sqrt(max(1.0 + diag[0] - diag[1] - diag[2], 1e-300))
        q = [s / 4, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif k == 2:
        s = 2.0 * np.sqrt(max(1.0 + diag[1] - diag[0] - diag[2], 1e-300))
        q = [(m[0, 1] + m[1, 0]) / s, s / 4, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = 2.0 * np.sqrt(max(1.0 + diag[2] - diag[0] - diag[1], 1e-300))
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, s / 4, (m[1, 0] - m[0, 1]) / s]
    a = np.asarray(q, dtype=np.float64)
    # The norm summed in a fixed order: np.linalg.norm of a 1-D array is BLAS's ddot, whose
    # kernel (FMA, several accumulators) depends on the CPU, so its last bit did too.
    a /= math.sqrt(((a[0] * a[0] + a[1] * a[1]) + a[2] * a[2]) + a[3] * a[3])
    return a if a[3] >= 0 else -a


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


def _primitive(tris: npt.NDArray[np.void], s: float) -> Primitive:
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
    col = np.take(tris["color"][:, :, :3], SWAP, axis=1).astype(np.float32)
    col /= 255.0
    return Primitive(positions=pos.reshape(-1, 3), normals=normals,
                     texcoords=[uv.reshape(-1, 2)], colors=[col.reshape(-1, 3)])


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


def _uv_box(uv: npt.NDArray[np.uint8]) -> tuple[int, int, int, int]:
    """(u min, u max, v min, v max) of (T, 3, 2) texture coordinates: in plain ints for a few
    triangles (four numpy reductions cost more than the list), one flat reduction per axis
    otherwise (numpy reduces (T, 3, 2) over two axes ten times slower than a column)."""
    if uv.size <= 192:
        flat = uv.reshape(-1).tolist()
        us, vs = flat[0::2], flat[1::2]
        return min(us), max(us), min(vs), max(vs)
    u, v = uv[..., 0].ravel(), uv[..., 1].ravel()
    return int(u.min()), int(u.max()), int(v.min()), int(v.max())


class _Textures:
    """One image and material per (tpage, clutX, clutY), decoded from VRAM on first use."""

    def __init__(self, doc: SplashpackDocument, scene: Scene) -> None:
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
                       extras={FMT: {"tpage": tpage, "clut": [cx, cy], "color_scale": 255,
                                     "dither": bool(tpage & 0x0200)}})
        return self.scene.add_material(mat)


def _object_node(doc: SplashpackDocument, i: int, s: float, tex: _Textures, scene: Scene,
                 ctx: Context, rotation: tuple[Quat, float]) -> None:
    obj = doc.objects[i]
    tris = tris52(doc, i)
    rot, err = rotation
    if err > 0.01:
        ctx.note("splashpack.rotation_not_orthonormal",
                 f"object {i}: the stored matrix is {err:.3f} off a rotation; its nearest "
                 "rotation is used", "warning")
    pos = obj["pos"].astype(np.float64) * AXES * s
    extras: dict[str, Any] = {"object": i, "rotation_raw": [int(x) for x in obj["rot"]],
                              "position_raw": [int(x) for x in obj["pos"]]}
    names = obj.dtype.names or ()
    for field in ("lua_index", "flags"):
        if field in names:
            extras[field] = int(obj[field])
    if not doc.spec_layout.has_lua and "lua_index" in extras:
        # Before layout G this field was "reserved"; keep it, but it names no Lua file.
        extras["reserved"] = extras.pop("lua_index")
    node = Node(name=f"object_{i}", translation=(float(pos[0]), float(pos[1]), float(pos[2])),
                rotation=rot, extras={FMT: extras})
    if len(tris):
        mesh = Mesh(name=f"object_{i}")
        keys, inverse = material_keys(tris)
        for k, t in enumerate(keys):
            sel = tris if inverse is None else tris[inverse == k]
            prim = _primitive(sel, s)
            prim.material = tex.material(t, sel["uv"])
            mesh.primitives.append(prim)
        node.mesh = scene.add_mesh(mesh)
    scene.add_node(node)


def _navmesh_nodes(doc: SplashpackDocument, s: float, scene: Scene) -> None:
    if not doc.navmeshes:
        return
    mat = scene.add_material(Material(name="navmesh", base_color_factor=(0.2, 0.8, 0.3, 1.0),
                                      unlit=True, double_sided=True,
                                      extras={FMT: {"navmesh": True}}))
    for k, tris in enumerate(doc.navmeshes):
        v = np.asarray(tris)[:, SWAP, :].astype(np.float64) * AXES * s
        mesh = Mesh(name=f"navmesh_{k}", primitives=[
            Primitive(positions=v.reshape(-1, 3).astype(np.float32), material=mat)]
            if len(v) else [])
        node = Node(name=f"navmesh_{k}", extras={FMT: {"navmesh": k}})
        if len(v):
            node.mesh = scene.add_mesh(mesh)
        scene.add_node(node)


def _player_node(doc: SplashpackDocument, s: float, scene: Scene) -> None:
    if not doc.spec_layout.has_player:
        return
    pos = np.asarray(doc.hfield("player_pos"), dtype=np.float64) * AXES * s
    height = int(doc.hfield("player_height"))
    info = {"player": True, "position_raw": [int(x) for x in doc.hfield("player_pos")],
            "rotation_raw": [int(x) for x in doc.hfield("player_rot")],
            "height_raw": height, "height": height * s}
    scene.add_node(Node(name="player_start",
                        translation=(float(pos[0]), float(pos[1]), float(pos[2])),
                        extras={FMT: info}))


def _extract(doc: SplashpackDocument, ctx: Context) -> None:
    folder = ctx.opt("extract")
    if not folder or not doc.lua:
        return
    ctx.extracted.append((Path(folder), lua_files(doc)))
    ctx.note("splashpack.lua_extracted", f"{len(doc.lua)} Lua file(s) written to {folder}",
             "info")


def to_scene(doc: SplashpackDocument, ctx: Context) -> Scene:
    gte = float(ctx.opt("gte_scaling", DEFAULT_GTE))
    if not np.isfinite(gte) or gte <= 0:
        gte = DEFAULT_GTE
    s = gte / 4096.0
    scene = Scene(name=f"splashpack_v1_{doc.layout}")
    tex = _Textures(doc, scene)
    n = len(doc.meshes)
    rots, errs = _rotations(doc.objects["rot"][:n]) if n else ([], [])
    for i in range(n):
        _object_node(doc, i, s, tex, scene, ctx, (rots[i], errs[i]))
    _navmesh_nodes(doc, s, scene)
    _player_node(doc, s, scene)
    info: dict[str, Any] = {"layout": doc.layout, "version": doc.version, "gte_scaling": gte,
                            "color_scale": 255, "lua": _lua_extras(doc)}
    if doc.layout == "H":
        info["scene_lua_index"] = int(doc.hfield("scene_lua"))
    scene.extras.update({"format": FMT, "version": doc.version, "variant": f"v1-{doc.layout}",
                         FMT: info})
    ctx.note("splashpack.gte_scaling", f"GTEScaling is not stored in the file; {gte:g} assumed "
             "(raw / 4096 x GTEScaling = units)", "info")
    ctx.note("splashpack.vertex_colors", "COLOR_0 = byte / 255; the PS1 modulates texture x "
             "colour / 128, so 128 is neutral and lit scenes look darker in glTF", "info")
    if doc.meshes and any(len(m) for m in doc.meshes):
        ctx.note("splashpack.normals", "the file stores one normal per triangle (v0's); it is "
                 "used for all three corners", "info")
    _extract(doc, ctx)
    add_new_notes(scene.notes, ctx.notes)
    return scene
