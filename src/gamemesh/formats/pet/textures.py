"""Finding and loading the textures a PET names (spec §B.4, §B.16).

The TEXT section holds bare file names. They are looked up case-insensitively beside the model,
in the folders the user adds (``--texture-dir``) and then, walking up the folder tree, in the
shared texture folders the public importers search (``z_common``, ``texture_dds``, ...). A
``<stem>_mask<ext>`` companion's red channel becomes the alpha channel.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ...errors import FormatError
from ...scene import Image
from ...textures import decode_image

# Shared folders the public importers search above the model (#1/#3/#7).
SHARED_DIRS = ("z_common", "map_source", "misc", "effect", "texture_dds", "npc", "ppl", "skybox")
# Characters that flag a material in the first 5 characters of a texture name (§B.4).
MASK_FLAGS = "[+}^"
FLAG_CHARS = "[+}^]!{~@"
_WALK_UP = 6
_MAX_ENTRIES = 20000  # a bound on the files indexed per search root


@dataclass
class TextureFinder:
    """Case-insensitive file lookup with one directory listing per folder."""

    model_dir: Path | None
    extra_dirs: list[Path] = field(default_factory=list)
    _listing: dict[Path, dict[str, Path]] = field(default_factory=dict)
    _trees: dict[Path, dict[str, Path]] = field(default_factory=dict)

    def _list(self, folder: Path) -> dict[str, Path]:
        if folder not in self._listing:
            found: dict[str, Path] = {}
            try:
                with os.scandir(folder) as it:
                    for e in it:
                        if e.is_file():
                            found.setdefault(e.name.lower(), Path(e.path))
            except OSError:
                pass
            self._listing[folder] = found
        return self._listing[folder]

    def _tree(self, root: Path) -> dict[str, Path]:
        """Every file under ``root`` by lower-case name (first found wins), bounded."""
        if root not in self._trees:
            found: dict[str, Path] = {}
            stack = [root]
            seen = 0
            while stack and seen < _MAX_ENTRIES:
                d = stack.pop()
                try:
                    with os.scandir(d) as it:
                        for e in it:
                            seen += 1
                            if e.is_dir(follow_symlinks=False):
                                stack.append(Path(e.path))
                            elif e.is_file():
                                found.setdefault(e.name.lower(), Path(e.path))
                except OSError:
                    continue
            self._trees[root] = found
        return self._trees[root]

    def _shared_roots(self) -> Iterable[Path]:
        if self.model_dir is None:
            return
        d = self.model_dir
        for _ in range(_WALK_UP):
            try:
                with os.scandir(d) as it:
                    subs = sorted(Path(e.path) for e in it if e.is_dir()
                                  and e.name.lower() in SHARED_DIRS)
            except OSError:
                subs = []
            yield from subs
            if d.parent == d:
                break
            d = d.parent

    def find(self, name: str) -> Path | None:
        """The file for a TEXT name: as given, then without its leading flag characters."""
        base = name.replace("\\", "/").rsplit("/", 1)[-1]
        stripped = base.lstrip(FLAG_CHARS)
        candidates = [c.lower() for c in dict.fromkeys((base, stripped)) if c]
        if not candidates:
            return None
        flat = [self.model_dir] if self.model_dir is not None else []
        for d in [*flat, *self.extra_dirs]:
            hit = _pick(self._list(d), candidates)
            if hit is not None:
                return hit
        for d in self.extra_dirs:
            hit = _pick(self._tree(d), candidates)
            if hit is not None:
                return hit
        for root in self._shared_roots():
            hit = _pick(self._tree(root), candidates)
            if hit is not None:
                return hit
        return None

    def mask_for(self, tex: Path) -> Path | None:
        """``<stem>_mask<ext>`` beside the texture (any of the usual extensions)."""
        listing = self._list(tex.parent)
        stem = tex.stem.lower()
        for ext in dict.fromkeys((tex.suffix.lower(), ".jpg", ".png", ".bmp", ".tga", ".dds")):
            hit = listing.get(f"{stem}_mask{ext}")
            if hit is not None:
                return hit
        return None


def _pick(listing: dict[str, Path], names: list[str]) -> Path | None:
    for n in names:
        if n in listing:
            return listing[n]
    return None


def flags_of(name: str) -> str:
    """The flag characters among the first 5 characters of a texture name."""
    return "".join(c for c in name[:5] if c in FLAG_CHARS)


def load_image(name: str, finder: TextureFinder, chroma: str | None,
               notes: list[tuple[str, str]]) -> Image:
    """The image for a TEXT name: PNG/JPEG kept encoded when nothing needs merging, anything
    else decoded to RGBA (DDS, TGA, BMP), a mask merged into alpha, a chroma key turned into
    alpha. A missing or unreadable file gives a placeholder that keeps the name."""
    img = Image(name=Path(name).stem or name, uri=name)
    path = finder.find(name)
    if path is None:
        notes.append(("pet.texture_missing", f"texture {name!r} not found"))
        return img
    try:
        data = path.read_bytes()
    except OSError as e:
        notes.append(("pet.texture_missing", f"texture {name!r}: {e.strerror}"))
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
            px = _merge_mask(px, decode_image(mask.read_bytes(), "pet"))
        if chroma is not None:
            px = _chroma_key(px, chroma)
    except (FormatError, OSError) as e:
        notes.append(("pet.texture_unreadable", f"texture {name!r} could not be decoded: {e}"))
        return img
    img.pixels = px
    return img


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
