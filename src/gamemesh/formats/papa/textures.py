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

from ...errors import CorruptDataError, UnsupportedVersionError
from ...registry import Context
from ...textures import decode_bcn, encode_bcn
from ...textures.dds import encode_dds_bcn, encode_dds_rgba
from . import layout as lay
from .document import Texture

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
    """RGBA pixels to a papa texture payload (all levels) and the level count."""
    arr = np.ascontiguousarray(np.asarray(pixels, dtype=np.uint8))
    h, w = arr.shape[:2]
    n = mip_count(w, h) if mips is None else mips
    levels: list[bytes] = []
    img = PILImage.fromarray(arr, "RGBA")
    for i in range(n):
        lw, lh = max(w >> i, 1), max(h >> i, 1)
        level = arr if i == 0 else np.asarray(img.resize((lw, lh), PILImage.Resampling.BOX))
        levels.append(_encode_level(level, code))
    return b"".join(levels), n


def _encode_level(px: Any, code: int) -> bytes:
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
