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

from ...registry import FormatSpec, Option
from .document import ModernDocument, SplashpackDocument
from .files import siblings
from .from_scene import from_scene, save, write_files
from .info import info
from .read import read, sniff
from .sample import make_sample
from .to_scene import to_scene
from .vram import vram_png
from .write import write

__all__ = ["SPEC", "ModernDocument", "SplashpackDocument", "info", "make_sample"]


SPEC = FormatSpec(
    name="splashpack",
    title="SPLASHPACK (psxsplash PS1 scene: version 1 layouts B..H, versions 20..26)",
    extensions=(".splashpack", ".bin"),
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    save=save,
    write_files=write_files,
    info=info,
    siblings=siblings,
    document_type=(SplashpackDocument, ModernDocument),
    make_sample=make_sample,
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
    ),
    exports={".png": vram_png},
    notes="The whole VRAM converts to PNG: gamemesh convert scene.bin vram.png",
)
