"""Planetary Annihilation "Papa" (.papa) models, textures and animations.

Game: Planetary Annihilation / PA: TITANS (Uber Entertainment, 2014-). Version: 3.0 (u16
minor 0, u16 major 3 after the magic bytes "apaP"); 2.0, in 2014 mod files, has the same
layout. Spec: ``shared/specs/papa.md`` (it corrects the archived PA-wiki page in
``shared/specs/seeds``).
Public sources of the facts: Luther-1/Blender-PAPA-IO (MIT), ematarkus/PTexEdit,
Crauzer/PlanetaryAnnihilationToolkit, DeathByDenim/papatextureeditor and a scan of 2,092 real
files; no code was taken from them.

A unit is several files (model, ``_diffuse``/``_mask``/``_material`` textures,
``_anim_<clip>`` animations); ``load`` gathers them, ``save`` writes them the way papatran does.
"""

from __future__ import annotations

from ...registry import FormatSpec, Option, lazy
from .options import CSG_SHADERS, DEFAULT_TEXTURE_DIR

__all__ = ["SPEC"]


SPEC = FormatSpec(
    name="papa",
    title="Planetary Annihilation Papa",
    extensions=(".papa",),
    sniff=lazy(__name__, "read:sniff"),
    read=lazy(__name__, "read:read"),
    write=lazy(__name__, "write:write"),
    to_scene=lazy(__name__, "to_scene:to_scene"),
    from_scene=lazy(__name__, "from_scene:from_scene"),
    load=lazy(__name__, "to_scene:load"),
    save=lazy(__name__, "from_scene:save"),
    info=lazy(__name__, "info:info"),
    siblings=lazy(__name__, "files:siblings"),
    document_type=lazy(__name__, "document:PapaDocument"),
    make_sample=lazy(__name__, "sample:make_sample"),
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
        Option("diffuse", "papa: when writing, the unit's diffuse texture (an image file or a "
               "papa texture file); replaces the scene's base colour image", str),
        Option("mask", "papa: when writing, the unit's team-colour mask texture (R primary, "
               "G secondary, B glow; an image or papa texture file)", str),
        Option("material", "papa: when writing, the unit's material texture (R specular, "
               "G gloss, B emissive; an image or papa texture file)", str),
        Option("texture_format", "papa: when writing, the format of every texture file "
               "(default DXT5 for the diffuse, DXT1 for mask and material)", str,
               choices=("DXT1", "DXT5", "RGBA8")),
        Option("csg", "papa: when writing, a CSG model (terrain feature) with this shader: "
               "vertex format 10 (tangents, a second UV set for the shadow map) and textures "
               "linked by media path", str, choices=CSG_SHADERS),
        Option("csg_texture_dir", "papa: when writing CSG, the media folder of linked textures "
               f"a material names by image only (default {DEFAULT_TEXTURE_DIR})", str),
    ),
    exports={".png": lazy(__name__, "textures:export_png"),
             ".dds": lazy(__name__, "textures:export_dds")},
    notes="A unit is several files: converting the model finds its textures and animations.",
)
