"""A PA unit is several files: finding a model's siblings on disk and loading them together.

PA's naming (spec "Which file holds what"): ``<name>.papa`` is the model, ``<name>_diffuse``,
``_mask`` and ``_material.papa`` its textures, ``<name>_anim_<clip>.papa`` its animations, all in
one folder. CSG models name linked textures by media-root paths (``/pa/terrain/...``), found under
``--texture-root``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ...errors import FormatError
from ...registry import Context
from ...scene import Scene
from .document import PapaDocument
from .read import read
from .to_scene import Unit, build

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


def load(data: bytes, ctx: Context) -> Scene:
    doc = read(data, ctx)
    path = ctx.path
    unit = Unit(doc, path.stem if path is not None else "papa")
    extra_anims = [Path(p) for p in _as_list(ctx.opt("anim"))]
    if path is not None and not ctx.opt("no_siblings", False):
        tex = texture_siblings(path)
        if doc.models and unit_name(path) is not None:
            for role in ("diffuse", "mask", "material"):
                if role not in tex:
                    ctx.note("papa.texture_missing", f"no {path.stem}_{role}.papa next to the "
                             "model; converted without it", "info")
        for role, p in tex.items():
            sib = _read_sibling(p, ctx)
            if sib is not None:
                unit.textures[role] = sib
        if doc.models:
            extra_anims = [*anim_siblings(path), *extra_anims]
    for p in extra_anims:
        sib = _read_sibling(p, ctx)
        if sib is not None:
            unit.animations.append((clip_name(p), sib))
    root = ctx.opt("texture_root")
    if root:
        _linked(doc, Path(str(root)), unit, ctx)
    return build(unit, ctx)


def _as_list(v: object) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str | Path):
        return [str(v)]
    if isinstance(v, list | tuple):
        return [str(x) for x in v]
    return [str(v)]


def _read_sibling(p: Path, ctx: Context) -> PapaDocument | None:
    try:
        return read(p.read_bytes(), ctx)
    except (OSError, FormatError) as e:
        ctx.note("papa.sibling_unreadable", f"{p.name}: {e}; skipped")
        return None


def _linked(doc: PapaDocument, root: Path, unit: Unit, ctx: Context) -> None:
    """Linked textures name media-root paths; read them from under ``root`` only."""
    base = root.resolve()
    for tex in doc.textures:
        if not tex.linked:
            continue
        name = doc.string(tex.name)
        parts = [x for x in PurePosixPath(name.replace("\\", "/")).parts
                 if x not in ("/", "", ".", "..")]
        if not parts:
            continue
        target = base.joinpath(*parts)
        if not target.suffix:
            target = target.with_suffix(".papa")
        if target.suffix.lower() != ".papa":
            target = target.with_suffix(".papa")
        try:
            target.resolve().relative_to(base)
        except ValueError:
            continue
        if target.is_file():
            sib = _read_sibling(target, ctx)
            if sib is not None:
                unit.linked[name] = sib
