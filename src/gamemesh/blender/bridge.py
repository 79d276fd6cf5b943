"""The gamemesh half of the Blender operators, without ``bpy`` (so it is tested anywhere).

Import: a native file (and its siblings) -> a GLB in memory for Blender's glTF importer, with
the provenance Blender has no field for as plain custom-property data. Export: the GLB Blender's
glTF exporter wrote -> gamemesh's writer for the chosen format, its notes returned for the report.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import api
from ..errors import FormatError, Note
from ..formats.gltf.read import parse
from ..registry import Context, FormatSpec, by_name
from ..scene import Image, Scene
from .options import exportable, importable, options_for, prop_specs, spec_for_path

__all__ = ["GlbImage", "Imported", "attach_maps", "blender_rate", "clip_fps", "collapse_notes",
           "export_defaults", "export_glb", "glb_images", "id_property", "import_glb",
           "match_bones", "resolve_format", "retarget_glb"]

# How deep a node hierarchy Blender's glTF importer takes: it walks the tree recursively
# (vnode.py), and a deeper chain ends in Python's RecursionError deep inside Blender (5.0.1:
# a 700-deep chain imports, a 1,000-deep one fails). A file deeper than this is refused before
# the importer, in one line, with room left for the callers' own frames.
MAX_DEPTH = 500
# Blender-PAPA-IO's "fuzzy match": an armature takes an animation when at most a tenth of the
# animation's tracks find no bone.
FUZZY_MISSES = 0.1

# Blender ID properties hold str/int/float and nested dicts/lists of them; strings are capped
# here so a file's big native blob does not bloat the .blend.
_MAX_TEXT = 4096


@dataclass
class Imported:
    """What an import hands Blender: the GLB, the format, the notes and the custom properties."""

    glb: bytes
    format: str
    notes: list[Note] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass
class GlbImage:
    """One image of the GLB: Blender's importer keeps only those a material samples, so the
    others (a Papa unit's mask and material maps) are added by the operator from these."""

    index: int
    name: str
    suffix: str
    data: bytes
    extras: dict[str, Any]


def glb_images(glb: bytes) -> list[GlbImage]:
    """The images embedded in a GLB gamemesh wrote (bufferView images)."""
    doc = parse(glb, Context(None, {}))
    views = doc.json.get("bufferViews", [])
    out = []
    for i, im in enumerate(doc.json.get("images", [])):
        if "bufferView" not in im:
            continue
        v = views[im["bufferView"]]
        start = v.get("byteOffset", 0)
        data = doc.buffers[v.get("buffer", 0)][start:start + v["byteLength"]]
        suffix = ".jpg" if im.get("mimeType") == "image/jpeg" else ".png"
        out.append(GlbImage(i, im.get("name") or f"image_{i}", suffix, data,
                            dict(im.get("extras", {}))))
    return out


def resolve_format(path: str | Path, chosen: str, *, export: bool) -> FormatSpec:
    """The format of ``chosen`` (a name) or, for ``AUTO``, of the file: its content when it
    exists and is read, else its extension."""
    candidates = exportable() if export else importable()
    if chosen and chosen.upper() != "AUTO":
        return by_name(chosen)
    if not export:
        found = api.sniff(path)
        if found is not None and found in {s.name for s in candidates}:
            return by_name(found)
    spec = spec_for_path(path, candidates)
    if spec is None:
        exts = " ".join(e for s in candidates for e in s.extensions)
        msg = f"cannot tell the format (expected one of: {exts})"
        raise FormatError(format="gamemesh", message=msg, path=str(path))
    return spec


def import_glb(path: str | Path, chosen: str, values: Mapping[str, Any],
               secondary: str | None = None) -> Imported:
    """Load ``path`` as the chosen format with the dialog's option ``values`` and write it as
    GLB bytes (Blender's importer then reads them from a temporary file). ``secondary``: a
    team's secondary colour (RRGGBB) for a Papa unit's mask's green channel; the primary is
    the reader's ``team_color``."""
    spec = resolve_format(path, chosen, export=False)
    opts = options_for(spec, values)
    scene = api.load(path, spec.name, **opts)
    _check_depth(scene, path)
    notes: list[Note] = []
    if secondary and opts.get("team_color"):
        _tint_secondary(scene, secondary, notes)
    files = by_name("gltf").save_scene(scene, Context(Path("import.glb"), {}, notes))
    glb = next(iter(files.values()))
    props = {"format": spec.name, "source_file": Path(path).name,
             "options": id_property(opts), "extras": id_property(scene.extras),
             "notes": [f"{n.code}: {n.message}" for n in scene.notes]}
    fps = clip_fps(scene)
    if fps is not None:
        props["fps"] = fps
    return Imported(glb, spec.name, [*scene.notes, *notes], props, scene.summary())


def _tint_secondary(scene: Scene, color: str, notes: list[Note]) -> None:
    """Tint the unit's diffuse by its mask's green channel (PA's secondary team colour), as
    the reader tints it by the red one for the primary."""
    diffuse = next((im for im in scene.images if "team_color" in im.extras), None)
    mask = next((im for im in scene.images if im.extras.get("role") == "mask"), None)
    if diffuse is None or mask is None or diffuse.pixels is None or mask.pixels is None \
            or mask.pixels.shape[:2] != diffuse.pixels.shape[:2]:
        return
    rgb = np.array([int(color[i:i + 2], 16) for i in (0, 2, 4)], dtype=np.float32) / 255.0
    k = (mask.pixels[..., 1].astype(np.float32) / 255.0)[..., None]
    px = diffuse.pixels.astype(np.float32)
    px[..., :3] = px[..., :3] * (1.0 - k + k * rgb)
    diffuse.pixels = np.clip(px + 0.5, 0, 255).astype(np.uint8)
    diffuse.extras["team_secondary"] = color
    notes.append(Note("gamemesh.team_secondary", f"base colour tinted by the mask's secondary "
                      f"channel with #{color}", "info"))


def _check_depth(scene: Scene, path: str | Path) -> None:
    depth: dict[int, int] = {}
    parents = scene.parents()
    for i in scene.walk():  # parents come before their children
        p = parents[i]
        depth[i] = 1 if p is None else depth.get(p, 0) + 1
        if depth[i] > MAX_DEPTH:
            msg = (f"node hierarchy {depth[i]}+ levels deep at node {scene.nodes[i].name!r}: "
                   f"Blender's glTF importer takes at most {MAX_DEPTH} (convert it with the "
                   "gamemesh command line instead)")
            raise FormatError(format="gamemesh", message=msg, path=str(path))


def normal_name(name: str) -> str:
    """A bone name compared loosely: case, separators and Blender's ``.001`` suffixes aside."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r"\.\d{3}$", "", name.lower()))


def match_bones(tracks: list[str], bones: list[str]) -> dict[str, str]:
    """Each animation track's bone among ``bones``: the same name, else the same name
    compared loosely (``normal_name``); tracks finding none are left out."""
    exact = set(bones)
    loose: dict[str, str] = {}
    for b in bones:
        loose.setdefault(normal_name(b), b)
    out = {}
    for t in tracks:
        hit = t if t in exact else loose.get(normal_name(t))
        if hit is not None:
            out[t] = hit
    return out


def retarget_glb(target: str | Path, path: str | Path, chosen: str,
                 values: Mapping[str, Any]) -> tuple[bytes, Imported, list[str]]:
    """A GLB of the target armature (the GLB Blender exported of it, rest pose only) moved by
    the clips of ``path``, tracks matched to its bones by name, loosely; with the import
    record and the tracks that found no bone. Too many misses is a FormatError."""
    imported = import_glb(path, chosen, values)
    source = api.load(imported.glb, "gltf")
    rig = api.load(target, "gltf")
    rig.extras.pop("source_file", None)
    moved = sorted({source.nodes[c.node].name for a in source.animations for c in a.channels})
    names = {n.name: i for i, n in enumerate(rig.nodes) if n.name}
    found = match_bones(moved, list(names))
    missed = [t for t in moved if t not in found]
    if not moved or len(missed) > FUZZY_MISSES * len(moved):
        msg = (f"the selected armature has bones for {len(found)} of the {len(moved)} animated "
               f"bones (at least {1 - FUZZY_MISSES:.0%} must match; missing: "
               f"{', '.join(missed[:5])}{', ...' if len(missed) > 5 else ''})")
        raise FormatError(format="gamemesh", message=msg, path=str(path))
    for anim in source.animations:
        anim.channels = [c for c in anim.channels if source.nodes[c.node].name in found]
        for c in anim.channels:
            c.node = names[found[source.nodes[c.node].name]]
        rig.animations.append(anim)
    files = by_name("gltf").save_scene(rig, Context(Path("retarget.glb"), {}, []))
    return next(iter(files.values())), imported, missed


def export_glb(glb: str | Path, dst: str | Path, chosen: str, values: Mapping[str, Any],
               maps: Mapping[str, Mapping[str, GlbImage]] | None = None,
               ) -> tuple[FormatSpec, list[Note], Scene]:
    """Write the GLB Blender exported as ``dst`` in the chosen format (or ``dst``'s extension);
    returns the format, the notes on what it could not hold, and the scene written. ``maps``
    are the extra maps of each material by name and role (a Papa unit's mask), which Blender's
    glTF exporter leaves out."""
    spec = resolve_format(dst, chosen, export=True)
    scene = api.load(glb, "gltf")
    # The GLB is a temporary file: the scene names the user's file, not it.
    scene.extras.pop("source_file", None)
    attach_maps(scene, maps or {})
    notes = api.save(scene, dst, spec.name, **options_for(spec, values))
    return spec, [*scene.notes, *notes], scene


def export_defaults(props: Mapping[str, Any]) -> dict[str, Any]:
    """The export dialog's starting values for an object imported (or last exported) with
    ``props`` (its ``gamemesh`` custom properties): the same format, the version and layout
    the file had, and the options that work both ways as they were; the choices of the last
    export, kept under ``export``, win. Keys are operator property names, plus ``stem``."""
    out: dict[str, Any] = {}
    fmt = str(props.get("format", ""))
    if fmt in {s.name for s in exportable()}:
        out["format"] = fmt.upper()
    if props.get("source_file"):
        out["stem"] = Path(str(props["source_file"])).name.split(".")[0]
    extras = props.get("extras", {})
    if isinstance(extras, Mapping):
        out.update(_kept_version(fmt, extras))
    spec = by_name(fmt) if "format" in out else None
    if spec is not None:
        both = {p.option.name: p.name for p in prop_specs([spec], "export")}
        options = props.get("options", {})
        if isinstance(options, Mapping):
            out.update({both[k]: v for k, v in options.items() if k in both})
    last = props.get("export")
    if isinstance(last, Mapping):
        out.update({str(k): v for k, v in last.items()})
    return out


def _kept_version(fmt: str, extras: Mapping[str, Any]) -> dict[str, Any]:
    """The version (and SPLASHPACK layout, PMF conventions) the imported file had, as the
    export operator's property values."""
    if fmt == "splashpack":
        out: dict[str, Any] = {}
        if str(extras.get("version", "")).isdigit():
            out["splash_version"] = str(int(extras["version"]))
        variant = str(extras.get("variant", ""))
        if variant.startswith("v1-") and variant[3:] in ("G", "H"):
            out["layout"] = variant[3:]
        return out
    if fmt == "pet" and extras.get("pet_version"):
        return {"pet_version": str(extras["pet_version"])}
    conv = extras.get("pmf_conventions")
    if fmt == "pmf" and isinstance(conv, Mapping):
        return {k: str(v) for k, v in conv.items()
                if k in ("euler_order", "angle_unit", "root_position", "handedness")}
    return {}


def attach_maps(scene: Scene, maps: Mapping[str, Mapping[str, GlbImage]]) -> None:
    """Put each material's extra maps into the scene as images its ``<role>_image`` extras
    name. Indices left in extras from the import would name images of another file: they go."""
    for mat in scene.materials:
        for key in [k for k, v in mat.extras.items() if k.endswith("_image") and
                    isinstance(v, int)]:
            del mat.extras[key]
        for role, image in maps.get(mat.name, {}).items():
            mat.extras[f"{role}_image"] = len(scene.images)
            scene.images.append(Image(name=image.name, data=image.data,
                                      mime_type="image/jpeg" if image.suffix == ".jpg"
                                      else "image/png", extras=dict(image.extras)))


def clip_fps(scene: Scene) -> float | None:
    """The frame rate the scene's clips were made at: the finest a clip declares (``fps`` in
    its extras, as ``[num, den]`` or a number, at the top or one level down), else the finest
    its key spacing shows; None without animation. Blender turns glTF seconds into frames at
    the scene's rate, so a clip read at another rate loses or smears frames."""
    rates = [r for r in (_declared_fps(a.extras) or _key_fps(a) for a in scene.animations)
             if r is not None]
    return max(rates) if rates else None


def _declared_fps(extras: Mapping[str, Any]) -> float | None:
    for value in (extras.get("fps"), *(v.get("fps") for v in extras.values()
                                       if isinstance(v, Mapping))):
        if isinstance(value, list | tuple) and len(value) == 2 and all(
                isinstance(x, int | float) and x > 0 for x in value):
            return float(value[0]) / float(value[1])
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def _key_fps(anim: Any) -> float | None:
    """1 / the most common key spacing of the clip's channels (spacings grouped to 0.1 ms,
    the group's mean taken, a rate within 0.1 % of a whole number made whole)."""
    steps = [np.diff(np.asarray(c.times, dtype=np.float64)) for c in anim.channels
             if len(c.times) > 1]
    flat = np.concatenate(steps) if steps else np.zeros(0)
    flat = flat[flat > 1e-6]
    if not len(flat):
        return None
    groups = np.round(flat, 4)
    values, counts = np.unique(groups, return_counts=True)
    rate = 1.0 / float(flat[groups == values[np.argmax(counts)]].mean())
    return float(round(rate)) if abs(rate - round(rate)) < 1e-3 * rate else rate


def blender_rate(fps: float) -> tuple[int, float]:
    """Blender's ``render.fps`` (an integer) and ``fps_base`` for a rate: fps / fps_base."""
    whole = max(1, round(fps))
    if abs(whole - fps) < 1e-3:
        return whole, 1.0
    whole = max(1, math.ceil(fps))
    return whole, whole / fps


def id_property(value: Any) -> Any:
    """``value`` as data a Blender ID property holds: dict keys as strings, None dropped, numpy
    and other objects as text."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        # Blender's integer properties are 32-bit.
        return value if -(1 << 31) <= value < (1 << 31) else str(value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        return value[:_MAX_TEXT]
    if isinstance(value, Mapping):
        return {str(k): id_property(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        items = [id_property(v) for v in value if v is not None]
        # An ID property array is one type; mixed lists are kept as JSON text.
        if len({type(v) for v in items}) > 1:
            return json.dumps(items, default=str)[:_MAX_TEXT]
        return items
    return str(value)[:_MAX_TEXT]


def collapse_notes(notes: list[Note]) -> list[tuple[Note, int]]:
    """Each distinct note once, in first-seen order, with how often it came (a writer notes
    once per channel; the report area shows it once)."""
    counts: dict[tuple[str, str, str], int] = {}
    first: dict[tuple[str, str, str], Note] = {}
    for n in notes:
        key = (n.code, n.message, n.level)
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, n)
    return [(first[k], c) for k, c in counts.items()]
