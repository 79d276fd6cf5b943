"""A PA unit is several files: finding a model's siblings on disk (``to_scene.load`` reads them).

PA's naming (spec "Which file holds what"): ``<name>.papa`` is the model, ``<name>_diffuse``,
``_mask`` and ``_material.papa`` its textures, ``<name>_anim_<clip>.papa`` its animations, all in
one folder. CSG models name linked textures by media-root paths (``/pa/terrain/...``), found under
``--texture-root``.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...safeio import folder_files

TEXTURE_ROLES = ("diffuse", "mask", "material")


def unit_name(path: Path) -> str | None:
    """The unit a model file names, or None for a file that is itself a sibling."""
    stem = path.stem
    if "_anim_" in stem or any(stem.endswith(f"_{r}") for r in TEXTURE_ROLES):
        return None
    return stem


def texture_siblings(path: Path, files: dict[str, str] | None = None) -> dict[str, Path]:
    """``files``: the folder's :func:`listing`, when the caller already has it."""
    name = unit_name(path)
    if name is None:
        return {}
    files = listing(path.parent) if files is None else files
    found = {r: os.path.normcase(f"{name}_{r}.papa") for r in TEXTURE_ROLES}
    return {r: path.with_name(files[k]) for r, k in found.items() if k in files}


def anim_siblings(path: Path, files: dict[str, str] | None = None) -> list[Path]:
    name = unit_name(path)
    if name is None:
        return []
    prefix = os.path.normcase(f"{name}_anim_")
    files = listing(path.parent) if files is None else files
    return sorted(path.with_name(real) for key, real in files.items()
                  if key.startswith(prefix) and key.endswith(".papa"))


def listing(folder: Path) -> dict[str, str]:
    """The files in ``folder`` by case-normalised name: one listing instead of a stat per
    candidate name and a glob."""
    return folder_files(folder, os.path.normcase)


def siblings(path: Path) -> list[Path]:
    """Every other file a default load of ``path`` reads."""
    path = Path(path)
    files = listing(path.parent) if unit_name(path) is not None else {}
    return [*texture_siblings(path, files).values(), *anim_siblings(path, files)]


def clip_name(path: Path) -> str:
    stem = path.stem
    return stem.split("_anim_", 1)[1] if "_anim_" in stem else stem


