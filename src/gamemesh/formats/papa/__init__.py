"""Planetary Annihilation "Papa" (.papa) models, textures and animations.

Game: Planetary Annihilation / PA: TITANS (Uber Entertainment, 2014-). Version: 3.0, the only
one shipped (u16 minor 0, u16 major 3 after the magic bytes "apaP"). Spec:
``shared/specs/papa.md`` (it corrects the archived PA-wiki page in ``shared/specs/seeds``).
Public sources of the facts: Luther-1/Blender-PAPA-IO (MIT), ematarkus/PTexEdit,
Crauzer/PlanetaryAnnihilationToolkit, DeathByDenim/papatextureeditor and a scan of 2,092 real
files; no code was taken from them.

A unit is several files (model, ``_diffuse``/``_mask``/``_material`` textures,
``_anim_<clip>`` animations); ``load`` gathers them, ``save`` writes them the way papatran does.
"""

from __future__ import annotations

from typing import Any

from ...errors import FormatError
from ...registry import Context, FormatSpec, Option
from ...textures import encode_png
from . import layout as lay
from .document import PapaDocument
from .from_scene import from_scene, save
from .read import read, sniff
from .sample import make_sample
from .textures import can_decode, decode, format_name
from .to_scene import to_scene
from .unit import load, siblings
from .write import write

__all__ = ["SPEC", "PapaDocument", "info", "read", "write"]


def info(doc: PapaDocument) -> dict[str, Any]:
    out: dict[str, Any] = {
        "version": f"{doc.version[1]}.{doc.version[0]}",
        "kind": doc.kind,
        "layout": "as read" if doc.layout is not None else "papatran",
        "strings": len(doc.strings), "textures": len(doc.textures),
        "vertex_buffers": len(doc.vertex_buffers), "index_buffers": len(doc.index_buffers),
        "materials": len(doc.materials), "meshes": len(doc.meshes),
        "skeletons": len(doc.skeletons), "models": len(doc.models),
        "animations": len(doc.animations),
        "vertices": sum(len(vb.vertices) for vb in doc.vertex_buffers),
        "indices": sum(len(ib.indices) for ib in doc.index_buffers),
        "bones": sum(len(s.bones) for s in doc.skeletons),
    }
    sig = doc.signature.rstrip(b"\0")
    if sig:
        out["signature"] = sig.decode("ascii", errors="replace")
    if doc.vertex_buffers:
        out["vertex_formats"] = sorted({f"{vb.format} {lay.VERTEX_FORMATS[vb.format][0]}"
                                        for vb in doc.vertex_buffers})
    if doc.index_buffers:
        out["index_formats"] = sorted({lay.INDEX_FORMATS[ib.format][0] for ib in doc.index_buffers})
    if doc.textures:
        out["texture_list"] = [
            {"name": doc.string(t.name), "format": format_name(t.format), "width": t.width,
             "height": t.height, "mips": t.mips, "srgb": t.srgb, "linked": t.linked}
            for t in doc.textures]
    if doc.materials:
        out["shaders"] = sorted({doc.string(m.shader) for m in doc.materials})
    if doc.models:
        out["model_list"] = [{"name": doc.string(m.name), "skeleton": m.skeleton,
                              "mesh_bindings": len(m.bindings)} for m in doc.models]
    if doc.animations:
        out["animation_list"] = [{"tracks": len(a.bones), "frames": a.num_frames,
                                  "fps": f"{a.fps_num}/{a.fps_den}"} for a in doc.animations]
    return out


def export_png(doc: PapaDocument, ctx: Context) -> dict[str, bytes]:
    """Each texture's top mip as PNG (``gamemesh convert x_diffuse.papa x.png``)."""
    stem = ctx.path.stem if ctx.path is not None else "texture"
    files: dict[str, bytes] = {}
    usable = [k for k, t in enumerate(doc.textures) if not t.linked and can_decode(t.format)]
    if not usable:
        msg = "the file holds no texture that can be decoded to PNG"
        raise FormatError(lay.FMT, msg)
    for n, k in enumerate(usable):
        name = f"{stem}.png" if n == 0 else f"{stem}_{n}.png"
        files[name] = encode_png(decode(doc.textures[k], f"textures[{k}]"))
    return files


SPEC = FormatSpec(
    name="papa",
    title="Planetary Annihilation Papa",
    extensions=(".papa",),
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    load=load,
    save=save,
    info=info,
    siblings=siblings,
    document_type=PapaDocument,
    make_sample=make_sample,
    options=(
        Option("no_siblings", "papa: do not look for the unit's _diffuse/_mask/_material and "
               "_anim_ files next to the model", bool, False),
        Option("anim", "papa: an extra animation file to attach by bone names (repeatable)",
               str, None, multiple=True),
        Option("texture_root", "papa: media root folder for linked /pa/... texture names", str),
        Option("team_color", "papa: tint the base colour by the mask's primary channel "
               "(RRGGBB), a preview of team colour", str),
        Option("no_textures", "papa: when writing, do not write _diffuse/_mask/_material "
               "texture files", bool, False),
        Option("no_animations", "papa: when writing, do not write _anim_<clip> files", bool,
               False),
    ),
    exports={".png": export_png},
    notes="A unit is several files: converting the model finds its textures and animations.",
)
