"""PBA: the models of Praetorians (Pyro Studios, 2003), read, written and converted.

A chunked little-endian format: one header DWORD (version 0, 1 or 2), then the main chunk with
the model name, bones, the texture list (no chunk header), the geometry pool (rigid, flexible,
animated and node meshes; named by damage state) and the animation pool (node tracks and
compressed animated-vertex tracks). Versions >= 2 add civilisation texture lists; version 0 is
read like 1 first and like 2 when that fits better. Textures are separate PTX files
(:mod:`gamemesh.formats.ptx`), looked up beside the model and in ``texturas/``.

Spec: ``shared/specs/pba.md`` (the seed ``seeds/003_0db96a4240486426.txt`` is an OCR-damaged
copy; the spec wins). Public sources of the facts: dcooliave/praetorians-model-viewer and
praetorians-map-viewer (JavaScript, MIT), hyperiris/praetoriansmapeditor (C++, MIT). Flexible
(type 2) and node (type 4) meshes and node tracks follow the seed alone and are unverified.
No public sample file exists: the fixtures come from this package's writer.
"""

from __future__ import annotations

from ...registry import FormatSpec, Option, lazy

__all__ = ["SPEC"]

SPEC = FormatSpec(
    name="pba",
    title="Praetorians model (PBA)",
    extensions=(".pba",),
    sniff=lazy(__name__, "read:sniff"),
    read=lazy(__name__, "read:read"),
    write=lazy(__name__, "write:write"),
    to_scene=lazy(__name__, "to_scene:to_scene"),
    from_scene=lazy(__name__, "from_scene:from_scene"),
    save=lazy(__name__, "from_scene:save"),
    info=lazy(__name__, "info:info"),
    siblings=lazy(__name__, "files:siblings"),
    document_type=lazy(__name__, "document:PbaDocument"),
    make_sample=lazy(__name__, "sample:make_sample"),
    options=(
        Option("state", "export only the meshes of this damage state (BASE, DETERIORADO_1, "
               "DESTRUIDO, RUINA...)"),
        Option("drop_shadows", "leave out the blob-shadow face groups (MATERIAL_ALPHASOMBRA)",
               bool, False),
        Option("alpha_mask", "export MATERIAL_ALPHA (foliage) groups as alpha MASK instead of "
               "BLEND: no sorting artifacts, hard edges", bool, False),
        Option("texture_dir", "another folder to look for PTX textures in (repeatable)",
               str, None, multiple=True),
        Option("ptx_bpp", "PTX bits per pixel to write (24 or 32; default: 32 when the image "
               "has alpha below 255)", int, None, (24, 32)),
    ),
    notes="versions 0-2; mesh types 2 and 4 unverified; textures as PTX beside the model",
)
