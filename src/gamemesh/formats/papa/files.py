"""A PA unit is several files: finding a model's siblings on disk (``to_scene.load`` reads them).

PA's naming (spec "Which file holds what"): ``<name>.papa`` is the model, ``<name>_diffuse``,
``_mask`` and ``_material.papa`` its textures, ``<name>_anim_<clip>.papa`` its animations, all in
one folder. CSG models name linked textures by media-root paths (``/pa/terrain/...``), found under
``--texture-root``.
"""

from __future__ import annotations

from pathlib import Path

TEXTURE_ROLES = ("diffuse", "mask", "material")


def unit_name(path: Path) -> str | None:
    """The unit a model file names, or None for a file that is itself a sibling."""
    stem = path.stem
    if "_anim_" in stem or any(stem.endswith(f"_{r}") for r in TEXTURE_ROLES):
        return None
    return stem


def texture_siblings(path: Path) -> dict[str, Path]:
    name = unit_name(path)
    if name is None:
        return {}
    found = {r: path.with_name(f"{name}_{r}.papa") for r in TEXTURE_ROLES}
    return {r: p for r, p in found.items() if p.is_file()}


def anim_siblings(path: Path) -> list[Path]:
    name = unit_name(path)
    if name is None or not path.parent.is_dir():
        return []
    return sorted(p for p in path.parent.glob(f"{name}_anim_*.papa") if p.is_file())


def siblings(path: Path) -> list[Path]:
    """Every other file a default load of ``path`` reads."""
    path = Path(path)
    return [*texture_siblings(path).values(), *anim_siblings(path)]


def clip_name(path: Path) -> str:
    stem = path.stem
    return stem.split("_anim_", 1)[1] if "_anim_" in stem else stem


