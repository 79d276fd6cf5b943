"""SPLASHPACK: the scene file of psxsplash, a PlayStation 1 engine, written by the SplashEdit
Unity exporter and linked into the PS-EXE.

Versions: the version field is 1 for eight layouts (A..H, 2025-03-22 to 2025-09-04). Layouts B..H
are read and written back byte for byte, found by the file's own arithmetic; layout A (no public
sample) is refused with UnsupportedVersionError. Versions 20..26 (the 2026 rewrite, SplashEdit
and splashedit-ng, with the ``.vram``/``.spu`` sidecars) are read and written back byte for byte
(``shared/specs/splashpack-modern.md``); 2..19 and the PS1Godot fork's
own layouts (its 27..32, and its 21..26 told apart from upstream by layout) are refused by
name. New files are version 21 (the newest the public runtime loads), or another version, or
version 1 in layout G (the seed's) or H on request.

Spec: ``shared/specs/splashpack.md`` (it corrects the seed ``002_a0486480ea728084.txt``: 36-byte
navmesh triangles, signed player fields, GTEScaling not stored). Public sources of the facts:
psxsplash/splashedit ``Runtime/PSXSceneExporter.cs`` (writer), psxsplash/psxsplash
``src/splashpack.cpp`` (reader), psyqo (``TPageAttr``, ``Color``) and the ``output.bin`` samples
the psxsplash author committed from 2025-03-26 to 2025-09-04.

Layout: one subpackage per generation, each with the module shape of every format
(``v1/``: version 1; ``modern/``: versions 20+, with ``bvh``); the top-level ``read``, ``write``,
``to_scene``, ``from_scene`` and ``info`` pick the generation by the version, and what both
generations use lives in ``conventions`` (axes, rotations, tracks), ``common`` (triangles <->
primitives, Lua, GTEScaling) and ``vram`` (textures in VRAM, both ways).
"""

from __future__ import annotations

from ...registry import FormatSpec, Option, lazy
from .options import PLAYER_DEFAULTS

__all__ = ["SPEC"]


SPEC = FormatSpec(
    name="splashpack",
    title="SPLASHPACK (psxsplash PS1 scene: version 1 layouts B..H, versions 20..26)",
    extensions=(".splashpack", ".bin"),
    sniff=lazy(__name__, "read:sniff"),
    read=lazy(__name__, "read:read"),
    write=lazy(__name__, "write:write"),
    to_scene=lazy(__name__, "to_scene:to_scene"),
    from_scene=lazy(__name__, "from_scene:from_scene"),
    save=lazy(__name__, "from_scene:save"),
    write_files=lazy(__name__, "from_scene:write_files"),
    info=lazy(__name__, "info:info"),
    siblings=lazy(__name__, "files:siblings"),
    document_type=(lazy(__name__, "document:SplashpackDocument"),
                   lazy(__name__, "document:ModernDocument")),
    make_sample=lazy(__name__, "sample:make_sample"),
    options=(
        Option("gte_scaling", "scene units per GTE unit (not stored in the file; reading "
               "assumes 100, writing keeps the scene's or 100 when the meshes fit, else picks "
               "one from the bounds)", float),
        Option("splash_version", "version of new files: 21 (default: the newest the public "
               "psxsplash runtime loads), 20, 22..26 (24+ keeps point lights; only splashedit-ng's "
               "tools read 22+), or 1 (the seed's 2025 layout)", int,
               None, (1, 20, 21, 22, 23, 24, 25, 26)),
        Option("layout", "version-1 layout of new files: G (the seed's) or H (60-byte objects, "
               "scene Lua); implies --splash-version 1", str, None, ("G", "H")),
        Option("no_siblings", "do not read the .vram/.spu sidecars beside a version 20+ file",
               bool),
        Option("extract", "also write the Lua sources as .lua files into this folder", str),
        Option("bpp", "texel depth for written textures (default: 4 or 8 from the colour count; "
               "16 = direct colour)", int, None, (4, 8, 16)),
        Option("lua", "a Lua source file to add to a written scene (repeatable)", str,
               multiple=True),
        *(Option(name, f"version 20+: the player's {what} in scene units (default: the "
                 f"scene's, else SplashEdit's {PLAYER_DEFAULTS[name]:g})", float)
          for name, what in (("move_speed", "walk speed per second"),
                             ("sprint_speed", "sprint speed per second"),
                             ("jump_height", "jump height"),
                             ("gravity", "gravity per second squared"),
                             ("player_radius", "collision radius"),
                             ("player_height", "eye height"))),
    ),
    exports={".png": lazy(__name__, "vram:vram_png")},
    sidecars={".vram": "VRAM sidecar (the scene's textures)",
              ".spu": "SPU sidecar (the scene's audio)"},
    notes="The whole VRAM converts to PNG: gamemesh convert scene.bin vram.png",
)
