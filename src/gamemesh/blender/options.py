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

__all__ = ["UNSET", "PropSpec", "exportable", "importable", "options_for", "prop_specs",
           "spec_for_path"]

UNSET = "DEFAULT"
Kind = Literal["bool", "int", "float", "str", "enum"]


@dataclass(frozen=True)
class PropSpec:
    """One operator property: its identifier, the option it feeds and how to show it."""

    name: str
    option: Option
    kind: Kind
    default: Any
    items: tuple[tuple[str, str, str], ...] = ()

    @property
    def label(self) -> str:
        return self.option.name.replace("_", " ").capitalize()

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
    return PropSpec(name, option, "str", "" if option.default is None else str(option.default))


def prop_specs(specs: Iterable[FormatSpec] | None = None) -> list[PropSpec]:
    """One property per option name (several formats share ``texture_dir``)."""
    seen: dict[str, PropSpec] = {}
    for spec in formats() if specs is None else specs:
        for opt in spec.options:
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
