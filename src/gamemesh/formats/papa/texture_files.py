"""A unit's texture files from a scene: ``<name>_diffuse.papa`` (DXT5 sRGB) and ``_mask`` /
``_material`` (DXT1 linear), or the format and sRGB flag the texture had when it came from papa
(DXT1, DXT5 or RGBA8), or the format ``--texture-format`` asks for.

The images come from ``--diffuse`` / ``--mask`` / ``--material`` (image files, or papa texture
files) first, else from the scene: the first base colour image is the diffuse, and the mask and
material are the images a papa material names in its extras (``mask_image``,
``material_image``). A unit has one file per role, so a second base colour image, and every
normal, metallic-roughness, occlusion or emissive texture, is a warning naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ...errors import FormatError, LimitError
from ...registry import Context
from ...safeio import read_regular
from ...scene import Image, Scene
from ...textures import decode_image, image_rgba
from . import layout as lay
from . import textures as tx
from .document import PapaDocument, PapaString, Texture
from .read import read

TEXTURE_ROLES = ("diffuse", "mask", "material")
TEXTURE_FORMATS = {"DXT1": lay.TEX_DXT1, "DXT5": lay.TEX_DXT5, "RGBA8": lay.TEX_RGBA8}
KEPT_FORMATS = (lay.TEX_DXT1, lay.TEX_DXT5, lay.TEX_RGBA8)
_DEFAULT = {"diffuse": lay.TEX_DXT5, "mask": lay.TEX_DXT1, "material": lay.TEX_DXT1}
_OTHER_SLOTS = ("metallic_roughness_texture", "normal_texture", "occlusion_texture",
                "emissive_texture")
RGBA = npt.NDArray[np.uint8]


class _Source:
    """One texture to write: its pixels (decoded when needed) and the name papa stores."""

    def __init__(self, label: str, name: str | None, image: Image | None = None,
                 pixels: RGBA | None = None, code: int | None = None,
                 srgb: bool | None = None) -> None:
        self.label, self.name, self.image, self._pixels = label, name, image, pixels
        # The papa format and sRGB flag it came with, kept when writing it back.
        self.code, self.srgb = code, srgb
        if image is not None:
            fmt = image.extras.get("papa_format")
            self.code = next((c for c in KEPT_FORMATS if lay.TEXTURE_FORMATS[c] == fmt), None)
            flag = image.extras.get("srgb")
            self.srgb = flag if isinstance(flag, bool) else None

    def pixels(self) -> RGBA | None:
        if self._pixels is None and self.image is not None:
            self._pixels = image_rgba(self.image, lay.FMT)
        return self._pixels


class TextureWriter:
    def __init__(self, scene: Scene, ctx: Context, has_model: bool) -> None:
        self.scene, self.ctx, self.has_model = scene, ctx, has_model

    def note(self, code: str, message: str, level: str = "warning",
             covers: tuple[str, ...] = ()) -> None:
        """``covers``: the scene properties (scene.loss.PROPERTIES) the note reports as lost,
        so the save path's generic check does not warn about them a second time."""
        self.ctx.note(f"papa.{code}", message, "info" if level == "info" else "warning", covers)

    # -- which image has which role ----------------------------------------------------------
    def _image(self, idx: Any, what: str) -> _Source | None:
        if not isinstance(idx, int) or not 0 <= idx < len(self.scene.images):
            return None
        img = self.scene.images[idx]
        name = img.extras.get("papa_name")
        return _Source(f"{what} image {img.name or idx!r}", str(name) if name else None, img)

    def _scene_sources(self) -> dict[str, list[tuple[int, str]]]:
        """Per role, the distinct images the materials give it, in material order."""
        found: dict[str, list[tuple[int, str]]] = {r: [] for r in TEXTURE_ROLES}
        others: list[str] = []
        for mat in self.scene.materials:
            picks = {"diffuse": mat.base_color_texture.image
                     if mat.base_color_texture is not None else None,
                     "mask": mat.extras.get("mask_image"),
                     "material": mat.extras.get("material_image")}
            for role, idx in picks.items():
                if isinstance(idx, int) and idx not in [i for i, _ in found[role]]:
                    found[role].append((idx, mat.name))
            others += [f"{mat.name!r} {slot[:-8].replace('_', '-')}" for slot in _OTHER_SLOTS
                       if getattr(mat, slot) is not None]
        if others:
            self.note("texture_dropped", f"{', '.join(others)} textures not written (a PA unit "
                      "has diffuse, mask and material textures only)",
                      covers=("textures",))
        return found

    def _sources(self, stem: str) -> dict[str, _Source]:
        out: dict[str, _Source] = {}
        found = self._scene_sources()
        for role in TEXTURE_ROLES:
            given = self.ctx.opt(role)
            if given:
                out[role] = _file_source(str(given), role)
                if found[role]:
                    self.note(f"{role}_replaced", f"--{role} replaces the scene's {role} image",
                              "info")
                continue
            if not found[role]:
                continue
            idx, mat = found[role][0]
            src = self._image(idx, f"material {mat!r} {role}")
            if src is not None:
                out[role] = src
            for idx2, mat2 in found[role][1:]:
                img = self.scene.images[idx2] if 0 <= idx2 < len(self.scene.images) else None
                self.note("texture_dropped", f"material {mat2!r}: {role} image "
                          f"{img.name if img else idx2!r} not written: a unit has one "
                          f"{stem}_{role}.papa (material {mat!r}'s image is)",
                          covers=("textures",))
        if not out and not self.has_model and self.scene.images:
            role = next((r for r in TEXTURE_ROLES if stem.endswith(f"_{r}")), "diffuse")
            src = self._image(0, "image 0")
            if src is not None:
                out[role] = src
        return out

    # -- documents ---------------------------------------------------------------------------
    def docs(self, stem: str) -> dict[str, PapaDocument]:
        out: dict[str, PapaDocument] = {}
        for role, src in self._sources(stem).items():
            doc = self._doc(src, role, stem)
            if doc is not None:
                out[role] = doc
        return out

    def role_doc(self, role: str, stem: str) -> PapaDocument | None:
        """The one texture file a ``<name>_<role>.papa`` destination asks for: the option's
        image, the image a material gives that role, else the first base colour image, else
        image 0."""
        given = self.ctx.opt(role)
        if given:
            return self._doc(_file_source(str(given), role), role, stem)
        pick: int | None = None
        for mat in self.scene.materials:
            idx = mat.extras.get(f"{role}_image")
            if role != "diffuse" and isinstance(idx, int):
                pick = idx
                break
        if pick is None:
            pick = next((m.base_color_texture.image for m in self.scene.materials
                         if m.base_color_texture is not None), 0)
        src = self._image(pick, "image")
        if src is None:
            return None
        if len(self.scene.images) > 1:
            self.note("texture_only_one", f"{stem}.papa holds one texture: {src.label} "
                      f"written, {len(self.scene.images) - 1} other images not",
                      covers=("textures",))
        return self._doc(src, role, stem)

    def _doc(self, src: _Source, role: str, stem: str) -> PapaDocument | None:
        px = src.pixels()
        if px is None:
            self.note("texture_missing", f"{src.label} has no pixels; {stem}_{role}.papa not "
                      "written", covers=("textures",))
            return None
        h, w = px.shape[:2]
        if w > 0xFFFF or h > 0xFFFF:
            msg = "texture side larger than a u16"
            raise LimitError(lay.FMT, msg, field=src.label, expected="<= 65535",
                             actual=f"{w}x{h}")
        choice = self.ctx.opt("texture_format")
        code = TEXTURE_FORMATS[str(choice).upper()] if choice else src.code or _DEFAULT[role]
        srgb = role == "diffuse" if src.srgb is None else src.srgb
        data, mips = tx.encode(px, code)
        doc = PapaDocument()
        unit = stem[: -len(role) - 1] if stem.endswith(f"_{role}") else stem
        doc.strings.append(PapaString.of(src.name or f"{unit}_{role}.png"))
        doc.textures.append(Texture(0, code, w, h, mips, srgb, data))
        return doc


def _file_source(given: str, role: str) -> _Source:
    """``--diffuse`` / ``--mask`` / ``--material``: an image file Pillow reads, or a papa
    texture file (its first texture)."""
    path = Path(given)
    try:
        data = read_regular(path)
    except OSError as e:
        msg = f"--{role} {given}: the file cannot be read ({e.strerror or e})"
        raise FormatError(lay.FMT, msg, field=f"--{role}") from e
    try:
        if data[:4] == lay.MAGIC:
            doc = read(data)
            if not doc.textures:
                msg = f"--{role} {given}: the papa file holds no texture"
                raise FormatError(lay.FMT, msg, field=f"--{role}")
            tex = doc.textures[0]
            return _Source(f"--{role} {path.name}", doc.string(tex.name) or None,
                           pixels=tx.decode(tex, f"--{role}"),
                           code=tex.format if tex.format in KEPT_FORMATS else None,
                           srgb=tex.srgb)
        return _Source(f"--{role} {path.name}", path.name, pixels=decode_image(data, lay.FMT))
    except FormatError as e:
        raise e.with_path(given) from None
