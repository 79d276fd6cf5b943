"""The registry's format options as Blender operator properties, and back; no ``bpy`` here.

A Blender property always has a value, a gamemesh option may be unset (the format decides):
numbers without a default use 0 for "unset", strings the empty string, choice lists an extra
``DEFAULT`` item; options given several times (``--texture-dir``) are one string split on ``;``.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..registry import FormatSpec, Option, formats

__all__ = ["DIRECTIONS", "TEAM_PRESETS", "UNSET", "Direction", "PropSpec", "applies", "exportable",
           "importable", "label", "options_for", "prop_specs", "spec_for_path", "team_colors"]

UNSET = "DEFAULT"
Kind = Literal["bool", "int", "float", "str", "enum"]
Direction = Literal["import", "export"]

# Which way each format option works: "read" (the file -> Blender), "write" (Blender -> the
# file) or "both"; the dialogs show an option only in its direction. A new option must be
# named here (a test checks), so it never appears in the wrong dialog.
DIRECTIONS: dict[str, Literal["read", "write", "both"]] = {
    "allow_outside": "read", "no_siblings": "read", "anim": "read", "texture_root": "read",
    "team_color": "read", "state": "read", "drop_shadows": "read", "alpha_mask": "read",
    "texture_dir": "read", "kind": "read", "with": "read", "character": "read",
    "no_parts": "read", "texture": "read", "default_fps": "read", "partial_triangles": "read",
    "extract": "read",
    "no_textures": "write", "no_animations": "write", "diffuse": "write", "mask": "write",
    "material": "write", "texture_format": "write", "csg": "write", "csg_texture_dir": "write",
    "ptx_bpp": "write", "pet_version": "write", "fps": "write", "splash_version": "write",
    "layout": "write", "bpp": "write", "lua": "write", "move_speed": "write",
    "sprint_speed": "write", "jump_height": "write", "gravity": "write",
    "player_radius": "write", "player_height": "write",
    "max_influences": "both", "euler_order": "both", "angle_unit": "both",
    "root_position": "both", "handedness": "both", "winding": "both", "flip_v": "both",
    "gte_scaling": "both",
}

# Labels in words where the option's name is an abbreviation or a flag.
_LABELS = {
    "allow_outside": "Folders outside the glTF's", "no_siblings": "This file only",
    "anim": "Extra animation files", "texture_root": "Media root folder",
    "with": "Other character files", "character": "Whole character",
    "no_parts": "Without the character's parts", "kind": "PET kind",
    "texture": "Texture image", "default_fps": "Frame rate when unset",
    "partial_triangles": "Incomplete triangles", "extract": "Write Lua sources to",
    "no_textures": "Without texture files", "no_animations": "Without animation files",
    "diffuse": "Diffuse texture", "mask": "Team colour mask", "material": "Material texture",
    "csg": "CSG shader", "csg_texture_dir": "CSG texture media folder",
    "ptx_bpp": "PTX bits per pixel", "pet_version": "PET version", "fps": "Frame rate",
    "splash_version": "SPLASHPACK version", "layout": "Version 1 layout",
    "bpp": "Texel bits per pixel", "lua": "Lua scripts", "gte_scaling": "GTE scaling",
    "flip_v": "Flip V", "max_influences": "Bone influences per vertex",
    "drop_shadows": "Without blob shadows", "alpha_mask": "Foliage as alpha mask",
    "state": "Damage state", "texture_dir": "Texture folders",
    "move_speed": "Player walk speed", "sprint_speed": "Player sprint speed",
    "jump_height": "Player jump height", "gravity": "Player gravity",
    "player_radius": "Player radius", "player_height": "Player eye height",
}
# Options naming files or folders on disk get Blender's browse button.
_PATHS = {"anim": "FILE_PATH", "diffuse": "FILE_PATH", "mask": "FILE_PATH",
          "material": "FILE_PATH", "texture": "FILE_PATH", "lua": "FILE_PATH",
          "with": "FILE_PATH", "texture_root": "DIR_PATH", "texture_dir": "DIR_PATH",
          "extract": "DIR_PATH", "allow_outside": "DIR_PATH"}

# Planetary Annihilation's team colours (primary, secondary) as the community's importer
# presets them: the MLA's blue and orange, the Legion's red and black.
TEAM_PRESETS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "MLA": ((0.0, 0.486, 1.0), (1.0, 0.394, 0.0)),
    "LEGION": ((1.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
}


def label(name: str) -> str:
    return _LABELS.get(name, name.replace("_", " ").capitalize())


def applies(option: Option, direction: Direction) -> bool:
    way = DIRECTIONS.get(option.name, "both")
    return way == "both" or way == ("read" if direction == "import" else "write")


def team_colors(preset: str, primary: Iterable[float], secondary: Iterable[float]
                ) -> tuple[str, str] | None:
    """The (primary, secondary) team colours as RRGGBB for a preset name (``CUSTOM`` takes
    the two colours given); None for no team colour."""
    if preset in TEAM_PRESETS:
        primary, secondary = TEAM_PRESETS[preset]
    elif preset != "CUSTOM":
        return None

    def hex6(rgb: Iterable[float]) -> str:
        return "".join(f"{round(min(max(float(c), 0.0), 1.0) * 255):02X}" for c in rgb)

    return hex6(primary), hex6(secondary)


@dataclass(frozen=True)
class PropSpec:
    """One operator property: its identifier, the option it feeds and how to show it."""

    name: str
    option: Option
    kind: Kind
    default: Any
    items: tuple[tuple[str, str, str], ...] = ()
    subtype: str = "NONE"  # FILE_PATH / DIR_PATH: a string with a browse button

    @property
    def label(self) -> str:
        return label(self.option.name)

    @property
    def description(self) -> str:
        text = self.option.help
        if self.option.multiple:
            text += " (several: separate with ;)"
        if self.kind in ("int", "float") and self.option.default is None:
            text += " (0: the format's default)"
        return text

    def value(self, raw: Any) -> Any:
        """The gamemesh option value of the property value ``raw``; None when unset."""
        opt = self.option
        if self.kind == "bool":
            return True if raw else None
        if self.kind == "enum":
            return None if raw == UNSET else opt.type(raw)
        if self.kind in ("int", "float"):
            return None if (opt.default is None and raw == 0) else opt.type(raw)
        text = str(raw).strip()
        if not text:
            return None
        if opt.multiple:
            parts = [p.strip() for p in text.split(";") if p.strip()]
            return parts or None
        return text


def _prop_name(option: Option) -> str:
    # Blender refuses Python keywords as property names (PET's ``--with``).
    return option.name + "_" if keyword.iskeyword(option.name) else option.name


def _prop_spec(option: Option) -> PropSpec:
    name = _prop_name(option)
    if option.choices:
        items = tuple((str(c), str(c), "") for c in option.choices)
        default = UNSET if option.default is None else str(option.default)
        if option.default is None:
            items = ((UNSET, "Default", "let the format decide"), *items)
        return PropSpec(name, option, "enum", default, items)
    if option.type is bool:
        return PropSpec(name, option, "bool", bool(option.default))
    if option.type in (int, float) and not option.multiple:
        kind: Kind = "int" if option.type is int else "float"
        return PropSpec(name, option, kind, option.type(option.default or 0))
    return PropSpec(name, option, "str", "" if option.default is None else str(option.default),
                    subtype=_PATHS.get(option.name, "NONE"))


def prop_specs(specs: Iterable[FormatSpec] | None = None,
               direction: Direction | None = None) -> list[PropSpec]:
    """One property per option name (several formats share ``texture_dir``), only those
    working in ``direction`` when given."""
    seen: dict[str, PropSpec] = {}
    for spec in formats() if specs is None else specs:
        for opt in spec.options:
            if direction is None or applies(opt, direction):
                seen.setdefault(opt.name, _prop_spec(opt))
    return list(seen.values())


def importable() -> list[FormatSpec]:
    """Formats the import menu offers: every one gamemesh reads into a scene, except glTF
    (Blender imports that itself)."""
    return [s for s in formats() if s.can_import and s.name != "gltf"]


def exportable() -> list[FormatSpec]:
    return [s for s in formats() if s.can_export and s.name != "gltf"]


def options_for(spec: FormatSpec, values: Mapping[str, Any]) -> dict[str, Any]:
    """The options of ``spec`` that are set among the property ``values`` (by property name);
    other formats' options stay out of the call."""
    out: dict[str, Any] = {}
    by_option = {p.option.name: p for p in prop_specs([spec])}
    for opt in spec.options:
        prop = by_option[opt.name]
        if prop.name in values:
            v = prop.value(values[prop.name])
            # The format's own default is left to the format (its notes then say "assumed").
            if v is not None and v != opt.default:
                out[opt.name] = v
    return out


def spec_for_path(path: str | Path, candidates: Iterable[FormatSpec]) -> FormatSpec | None:
    """The candidate whose extension the path has (the longest match wins)."""
    name = str(path).lower()
    best: tuple[int, FormatSpec] | None = None
    for spec in candidates:
        for ext in spec.extensions:
            if name.endswith(ext) and (best is None or len(ext) > best[0]):
                best = (len(ext), spec)
    return best[1] if best else None
