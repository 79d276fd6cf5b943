"""Decoding the textures a PET names (spec §B.4, §B.16): a ``<stem>_mask<ext>`` companion's red
channel merged into alpha, chroma keys. Finding them is :mod:`.files`' job."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from ...errors import FormatError
from ...safeio import read_regular
from ...scene import Image
from ...textures import decode_image
from .files import TextureFinder
from .layout import FLAG_CHARS


def flags_of(name: str) -> str:
    """The flag characters among the first 5 characters of a texture name."""
    return "".join(c for c in name[:5] if c in FLAG_CHARS)


def load_image(name: str, finder: TextureFinder, chroma: str | None,
               notes: list[tuple[str, str]]) -> Image:
    """The image for a TEXT name: PNG/JPEG kept encoded when nothing needs merging, anything
    else decoded to RGBA (DDS, TGA, BMP), a mask merged into alpha, a chroma key turned into
    alpha. A missing or unreadable file gives a placeholder that keeps the name."""
    img = Image(name=_stem(name) or name, uri=name)
    path = finder.find(name)
    if path is None:
        notes.append(("pet.texture_missing", f"texture {name!r} not found"))
        return img
    try:
        data = read_regular(path)
    except (OSError, FormatError) as e:
        why = e.strerror if isinstance(e, OSError) else str(e)
        notes.append(("pet.texture_missing", f"texture {name!r}: {why}"))
        return img
    img.extras["pet_source"] = path.name
    mask = finder.mask_for(path)
    ext = path.suffix.lower()
    plain = mask is None and chroma is None and ext in (".png", ".jpg", ".jpeg")
    if plain and (data[:8] == b"\x89PNG\r\n\x1a\n" or data[:3] == b"\xff\xd8\xff"):
        img.data = data
        img.mime_type = "image/png" if data[:4] == b"\x89PNG" else "image/jpeg"
        return img
    try:
        px = decode_image(data, "pet")
        if mask is not None:
            px = _merge_mask(px, decode_image(read_regular(mask), "pet"))
        if chroma is not None:
            px = _chroma_key(px, chroma)
    except (FormatError, OSError) as e:
        notes.append(("pet.texture_unreadable", f"texture {name!r} could not be decoded: {e}"))
        return img
    img.pixels = px
    return img


def _stem(name: str) -> str:
    """``Path(name).stem``: for a bare file name (no separator, drive colon or trailing dot:
    the usual TEXT entry) by pathlib's own rule on the name, without building a Path."""
    if not name or name == "." or name.endswith(".") or any(c in name for c in "/\\:"):
        return Path(name).stem
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


def _merge_mask(px: npt.NDArray[np.uint8], mask: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """The mask's red channel becomes alpha (resampled nearest when the sizes differ)."""
    out = px.copy()
    h, w = px.shape[:2]
    mh, mw = mask.shape[:2]
    if (mh, mw) != (h, w):
        ys = np.arange(h) * mh // max(h, 1)
        xs = np.arange(w) * mw // max(w, 1)
        mask = mask[ys[:, None], xs[None, :]]
    out[..., 3] = mask[..., 0]
    return out


def _chroma_key(px: npt.NDArray[np.uint8], which: str) -> npt.NDArray[np.uint8]:
    """``{`` keys pure blue and ``~`` pure black out (alpha 0)."""
    key = (0, 0, 255) if which == "{" else (0, 0, 0)
    out = px.copy()
    hit = np.all(px[..., :3] == np.asarray(key, np.uint8), axis=-1)
    out[..., 3] = np.where(hit, 0, out[..., 3])
    return out
