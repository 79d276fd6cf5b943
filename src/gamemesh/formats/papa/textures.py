"""Papa texture pixels: every format code decoded to RGBA (top mip), and DXT/RGBA encoding with
papatran's mip chain for writing.

DXT goes through Pillow's C decoder/encoder (``gamemesh.textures``); the uncompressed and float
formats are numpy reshapes. Rows are stored top to bottom, as glTF wants them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image as PILImage

from ...errors import CorruptDataError, FormatError, UnsupportedVersionError
from ...registry import Context
from ...textures import decode_bcn, encode_bcn, encode_png
from ...textures.dds import encode_dds_bcn, encode_dds_rgba
from . import layout as lay
from .document import PapaDocument, Texture

RGBA = npt.NDArray[np.uint8]

_BCN = {lay.TEX_DXT1: 1, lay.TEX_DXT3: 2, lay.TEX_DXT5: 3}
_CODE_OF = {v: k for k, v in _BCN.items()}
# Uncompressed layouts: (numpy dtype of one channel, channel order).
_PLAIN: dict[int, tuple[str, str]] = {
    1: ("u1", "RGBA"), 2: ("u1", "RGBX"), 3: ("u1", "BGRA"), 13: ("u1", "R"), 14: ("u1", "RG"),
    7: ("<f4", "R"), 8: ("<f4", "RG"), 9: ("<f4", "RGBA"),
    10: ("<f2", "R"), 11: ("<f2", "RG"), 12: ("<f2", "RGBA"),
}


def format_name(code: int) -> str:
    return lay.TEXTURE_FORMATS.get(code, f"unknown({code})")


def can_decode(code: int) -> bool:
    return code in _BCN or code in _PLAIN


def decode(tex: Texture, field: str = "texture") -> RGBA:
    """The top mip level as (H, W, 4) RGBA uint8."""
    if tex.data is None:
        msg = "linked texture has no pixel data"
        raise CorruptDataError(lay.FMT, msg, field=field)
    if not can_decode(tex.format):
        msg = f"texture format {tex.format} ({format_name(tex.format)}) is a render-target " \
              "format with no pixel decoder"
        raise UnsupportedVersionError(lay.FMT, msg, field=f"{field}.format")
    w, h = tex.width, tex.height
    if w == 0 or h == 0:
        msg = "texture has no pixels"
        raise CorruptDataError(lay.FMT, msg, field=f"{field}.width", expected="> 0",
                               actual=f"{w}x{h}")
    need = lay.level_size(tex.format, w, h)
    if len(tex.data) < need:
        msg = "texture data shorter than its top mip level"
        raise CorruptDataError(lay.FMT, msg, field=f"{field}.data_size", expected=f">= {need}",
                               actual=len(tex.data))
    if tex.format in _BCN:
        return decode_bcn(tex.data, w, h, _BCN[tex.format])
    return _plain(tex.data[:need], tex.format, w, h)


def _plain(data: bytes, code: int, w: int, h: int) -> RGBA:
    dt, order = _PLAIN[code]
    a = np.frombuffer(data, dtype=dt).reshape(h, w, len(order))
    if a.dtype.kind == "f":
        # Render-target formats: shown clamped to 0..1, no tone mapping.
        a = (np.clip(np.nan_to_num(a.astype(np.float32)), 0.0, 1.0) * 255.0 + 0.5) \
            .astype(np.uint8)
    out = np.zeros((h, w, 4), dtype=np.uint8)
    out[..., 3] = 255
    if order == "R":
        out[..., 0] = out[..., 1] = out[..., 2] = a[..., 0]
        return out
    for i, ch in enumerate(order):
        if ch in "RGBA":
            out[..., "RGBA".index(ch)] = a[..., i]
    return out


def mip_count(width: int, height: int) -> int:
    """papatran's chain: down to the level whose larger side is 2 (log2 of the larger side)."""
    m, n = max(width, height), 0
    while m > 1:
        m //= 2
        n += 1
    return max(n, 1)


def encode(pixels: npt.ArrayLike, code: int, mips: int | None = None) -> tuple[bytes, int]:
    """RGBA pixels to a papa texture payload (all levels) and the level count.

    DXT levels go through :func:`encode_settled`, and the smaller levels are made from the top
    level as it decodes, so encoding the decoded top level again gives the same bytes: papa
    -> glTF -> papa settles after one trip (only the top level travels in glTF)."""
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.uint8))
    h, w = arr.shape[:2]
    n = mip_count(w, h) if mips is None else mips
    levels: list[bytes] = [_encode_level(arr, code)]
    if code in _BCN:
        arr = decode_bcn(levels[0], w, h, _BCN[code])
    img = PILImage.fromarray(arr, "RGBA")
    for i in range(1, n):
        lw, lh = max(w >> i, 1), max(h >> i, 1)
        levels.append(_encode_level(np.asarray(img.resize((lw, lh), PILImage.Resampling.BOX)),
                                    code))
    return b"".join(levels), n


def encode_settled(px: RGBA, code: int) -> bytes:
    """DXT1/DXT5 blocks that decode and re-encode to themselves.

    Pillow's encoder is not stable: encoding its own output again moves blocks (a DXT5 alpha
    drifts for about ten rounds). So a block whose pixels some block with end points among its
    own colours decodes to exactly is written as that block, in one canonical form; the others
    are Pillow's, re-encoded until they stop moving (at most 16 rounds, only the moving blocks,
    packed into a small image), then put in canonical form where they allow it."""
    n = _BCN[code]
    size = 8 if code == lay.TEX_DXT1 else 16
    blocks = _blocks(px)
    cand, ok = _canonical_blocks(blocks, code)
    if ok.all():
        return bytes(cand.tobytes())
    rest = np.flatnonzero(~ok)
    out = cand.copy()
    enc = _encode_blocks(blocks[rest], n, size)
    moving = np.ones(len(rest), dtype=bool)
    for _ in range(16):
        idx = np.flatnonzero(moving)
        again = _encode_blocks(_decode_blocks(enc[idx], n), n, size)
        changed = np.any(again != enc[idx], axis=1)
        if not changed.any():
            break
        enc[idx[changed]] = again[changed]
        moving[idx[~changed]] = False
    cand2, ok2 = _canonical_blocks(_decode_blocks(enc, n), code)
    out[rest] = np.where(ok2[:, None], cand2, enc)
    return bytes(out.tobytes())


def _grid(blocks: npt.NDArray[Any]) -> RGBA:
    """(B, 16, 4) block pixels as one image, blocks row-major (padded with block 0)."""
    b = len(blocks)
    cols = max(1, int(np.ceil(np.sqrt(b))))
    rows = -(-b // cols)
    full = np.concatenate([blocks, np.repeat(blocks[:1], rows * cols - b, axis=0)])
    img = full.reshape(rows, cols, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(rows * 4, cols * 4, 4)
    return np.ascontiguousarray(img, dtype=np.uint8)


def _encode_blocks(blocks: npt.NDArray[Any], n: int, size: int) -> npt.NDArray[np.uint8]:
    return np.frombuffer(encode_bcn(_grid(blocks), n), dtype=np.uint8).reshape(-1, size)[
        :len(blocks)].copy()


def _decode_blocks(data: npt.NDArray[np.uint8], n: int) -> npt.NDArray[np.int32]:
    b = len(data)
    cols = max(1, int(np.ceil(np.sqrt(b))))
    rows = -(-b // cols)
    full = np.concatenate([data, np.repeat(data[:1], rows * cols - b, axis=0)])
    px = decode_bcn(full.tobytes(), cols * 4, rows * 4, n)
    return _blocks(px)[:b]


def _blocks(px: RGBA) -> npt.NDArray[np.int32]:
    """(blocks, 16, 4) pixels on the 4x4 grid (edges repeated, as the encoder pads)."""
    h, w = px.shape[:2]
    pw, ph = max(4, (w + 3) // 4 * 4), max(4, (h + 3) // 4 * 4)
    a = np.pad(px, ((0, ph - h), (0, pw - w), (0, 0)), mode="edge") if (pw, ph) != (w, h) \
        else px
    b = a.reshape(ph // 4, 4, pw // 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(-1, 16, 4)
    return b.astype(np.int32)


def _pack_bits(idx: npt.NDArray[np.int64], bits: int) -> npt.NDArray[np.uint64]:
    shifts = (np.arange(16, dtype=np.uint64) * np.uint64(bits))
    return np.asarray((idx.astype(np.uint64) << shifts).sum(axis=1, dtype=np.uint64))


def _colour_part(rgb: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[Any]]:
    """BC1 colour blocks whose end points are the block's extreme colours (as RGB565)."""
    lum = rgb @ np.array([2, 4, 1])
    bi = np.arange(len(rgb))
    hi, lo = rgb[bi, np.argmax(lum, axis=1)], rgb[bi, np.argmin(lum, axis=1)]
    axis = hi - lo
    proj = np.einsum("bpc,bc->bp", rgb, axis)
    e0, e1 = rgb[bi, np.argmax(proj, axis=1)], rgb[bi, np.argmin(proj, axis=1)]
    shift = np.array([3, 2, 3])
    q0, q1 = e0 >> shift, e1 >> shift
    c0 = (q0[:, 0] << 11) | (q0[:, 1] << 5) | q0[:, 2]
    c1 = (q1[:, 0] << 11) | (q1[:, 1] << 5) | q1[:, 2]
    swap = c0 < c1
    c0, c1 = np.where(swap, c1, c0), np.where(swap, c0, c1)
    e0, e1 = np.where(swap[:, None], e1, e0), np.where(swap[:, None], e0, e1)
    # Where each pixel sits on the line e1 -> e0, in thirds: 3 is e0 (index 0), 0 is e1
    # (index 1), 2 and 1 the interpolated colours (indices 2 and 3).
    span = (e0 - e1).astype(np.float32)
    length = np.maximum(np.einsum("bc,bc->b", span, span), 1.0)
    t = np.einsum("bpc,bc->bp", (rgb - e1[:, None, :]).astype(np.float32), span) / length[:, None]
    thirds = np.clip(np.rint(t * 3.0), 0, 3).astype(np.int64)
    idx = np.where((c0 == c1)[:, None], 0, np.array([1, 3, 2, 0])[thirds])
    out = np.zeros((len(rgb), 8), dtype=np.uint8)
    out[:, 0:2] = np.stack([c0 & 0xFF, c0 >> 8], axis=1)
    out[:, 2:4] = np.stack([c1 & 0xFF, c1 >> 8], axis=1)
    out[:, 4:8] = _pack_bits(idx, 2).astype("<u4").view(np.uint8).reshape(-1, 4)
    return out, c0


def _alpha_part(alpha: npt.NDArray[np.int64]) -> npt.NDArray[np.uint8]:
    """BC3 alpha blocks: end points the block's largest and smallest alpha, 8-value mode."""
    a0, a1 = alpha.max(axis=1), alpha.min(axis=1)
    # Sevenths from a1 (0, index 1) to a0 (7, index 0); 6..1 are indices 2..7.
    t = (alpha - a1[:, None]).astype(np.float32) / np.maximum(a0 - a1, 1)[:, None]
    sevenths = np.clip(np.rint(t * 7.0), 0, 7).astype(np.int64)
    idx = np.where((a0 == a1)[:, None], 0, np.array([1, 7, 6, 5, 4, 3, 2, 0])[sevenths])
    out = np.zeros((len(alpha), 8), dtype=np.uint8)
    out[:, 0], out[:, 1] = a0, a1
    out[:, 2:8] = _pack_bits(idx, 3).astype("<u8").view(np.uint8).reshape(-1, 8)[:, :6]
    return out


def _canonical_blocks(blocks: npt.NDArray[Any], code: int
                      ) -> tuple[npt.NDArray[np.uint8], npt.NDArray[Any]]:
    """Canonical DXT1/DXT5 blocks for (B, 16, 4) block pixels, and which of them decode to
    the pixels exactly (checked with the decoder itself, so no rounding rule is assumed)."""
    colour, _c0 = _colour_part(blocks[..., :3])
    if code == lay.TEX_DXT1:
        cand = colour
    else:
        cand = np.concatenate([_alpha_part(blocks[..., 3]), colour], axis=1)
    back = _decode_blocks(cand, _BCN[code])
    ok = np.all(back == blocks, axis=(1, 2))
    return cand, ok


def _encode_level(px: Any, code: int) -> bytes:
    if code in (lay.TEX_DXT1, lay.TEX_DXT5):
        return encode_settled(px, code)
    if code in _BCN:
        return encode_bcn(px, _BCN[code])
    if code == lay.TEX_RGBA8:
        return bytes(np.ascontiguousarray(px).tobytes())
    if code == lay.TEX_RGBX8:
        out = np.array(px, dtype=np.uint8)
        out[..., 3] = 255
        return bytes(out.tobytes())
    if code == lay.TEX_BGRA8:
        return bytes(np.ascontiguousarray(px[..., [2, 1, 0, 3]]).tobytes())
    if code == lay.TEX_R8:
        return bytes(np.ascontiguousarray(px[..., 0]).tobytes())
    msg = f"writing texture format {code} ({format_name(code)}) is not supported"
    raise UnsupportedVersionError(lay.FMT, msg)


def normal_from_dxt5nm(px: RGBA) -> RGBA:
    """PA's CSG normal maps keep X in alpha and Y in green; glTF wants XYZ in RGB."""
    x = px[..., 3].astype(np.float32) / 127.5 - 1.0
    y = px[..., 1].astype(np.float32) / 127.5 - 1.0
    z = np.sqrt(np.clip(1.0 - x * x - y * y, 0.0, 1.0))
    out = np.empty_like(px)
    out[..., 0] = px[..., 3]
    out[..., 1] = px[..., 1]
    out[..., 2] = np.clip((z + 1.0) * 127.5 + 0.5, 0, 255).astype(np.uint8)
    out[..., 3] = 255
    return out


def to_dds(tex: Texture, name: str, ctx: Context, field: str = "texture") -> bytes:
    """A DDS file of one texture: DXT blocks and every mip as stored (nothing re-encoded);
    other formats decoded to RGBA8, top level only, said in a note."""
    if tex.data is not None and tex.format in _BCN:
        data = tex.data
        sizes = lay.mip_sizes(tex.format, tex.width, tex.height, tex.mips)
        if len(data) < sum(n for _, _, n in sizes):
            msg = "texture data shorter than its mip levels"
            raise CorruptDataError(lay.FMT, msg, field=f"{field}.data_size",
                                   expected=f">= {sum(n for _, _, n in sizes)}",
                                   actual=len(data))
        if tex.srgb:
            ctx.note("dds_srgb", f"texture {name!r} is sRGB; a DDS DXT header cannot mark it "
                     "(read its colour as sRGB)", "info")
        return encode_dds_bcn(tex.width, tex.height, _BCN[tex.format], data, tex.mips)
    if tex.mips > 1 or tex.format not in (lay.TEX_RGBA8, lay.TEX_RGBX8, lay.TEX_BGRA8):
        ctx.note("dds_rgba", f"texture {name!r} ({format_name(tex.format)}, {tex.mips} mips) "
                 "written as RGBA8, top level only")
    return encode_dds_rgba(decode(tex, field))


def export_png(doc: PapaDocument, ctx: Context) -> dict[str, bytes]:
    """Each texture's top mip as PNG (``gamemesh convert x_diffuse.papa x.png``)."""
    stem = ctx.path.stem if ctx.path is not None else "texture"
    files: dict[str, bytes] = {}
    usable = [k for k, t in enumerate(doc.textures) if not t.linked and can_decode(t.format)]
    if not usable:
        raise _no_texture_error(doc, ctx, "PNG")
    for n, k in enumerate(usable):
        name = f"{stem}.png" if n == 0 else f"{stem}_{n}.png"
        files[name] = encode_png(decode(doc.textures[k], f"textures[{k}]"))
    return files


def export_dds(doc: PapaDocument, ctx: Context) -> dict[str, bytes]:
    """Each texture as DDS (``gamemesh convert x_diffuse.papa x.dds``, ``gamemesh textures``):
    DXT blocks with every mip level exactly as stored; other formats as RGBA8, top level."""
    stem = ctx.path.stem if ctx.path is not None else "texture"
    usable = [k for k, t in enumerate(doc.textures) if not t.linked and can_decode(t.format)]
    if not usable:
        raise _no_texture_error(doc, ctx, "DDS")
    files: dict[str, bytes] = {}
    for n, k in enumerate(usable):
        name = f"{stem}.dds" if n == 0 else f"{stem}_{n}.dds"
        files[name] = to_dds(doc.textures[k], doc.string(doc.textures[k].name, name), ctx,
                                f"textures[{k}]")
    return files


def _no_texture_error(doc: PapaDocument, ctx: Context, kind: str) -> FormatError:
    """A model's textures are its unit's other files: name the verb that writes them."""
    if doc.models or doc.meshes:
        msg = ("this is a model, it holds no texture itself; its unit's textures are other "
               "files: `gamemesh textures MODEL.papa OUT/` writes them all")
        return FormatError(lay.FMT, msg)
    return FormatError(lay.FMT, f"the file holds no texture that can be written as {kind}")
