"""PTX: the textures of Praetorians (Pyro Studios, 2003), read and written, to and from PNG.

A PTX file is one chunk: a 6-byte chunk header (``u16 id``, ``u32 length`` including the header;
the id is checked by no public reader, 7 is written), then ``u32 width, height, bitsPerPixel``
and ``width * height * bpp / 8`` bytes of BGR (24 bpp) or BGRA (32 bpp) pixels, rows in file
order (the first row is v = 0). Whatever follows the pixels (mip levels? nobody knows) is kept.

Spec: ``shared/specs/pba.md`` section b.9. Public sources of the facts: the Praetorians model and
map viewers (dcooliave, ``parse-ptx.js``) and the Praetorians map editor (hyperiris,
``ImageExt.cpp`` ``loadPackedPTX``). No public sample file exists; the fixtures are our own.
"""

from __future__ import annotations

from ...registry import FormatSpec, Option, lazy

__all__ = ["SPEC"]

SPEC = FormatSpec(
    name="ptx",
    title="Praetorians texture (PTX)",
    extensions=(".ptx",),
    sniff=lazy(__name__, "read:sniff"),
    read=lazy(__name__, "read:read"),
    write=lazy(__name__, "write:write"),
    to_scene=lazy(__name__, "to_scene:to_scene"),
    from_scene=lazy(__name__, "from_scene:from_scene"),
    info=lazy(__name__, "info:info"),
    document_type=lazy(__name__, "document:PtxDocument"),
    make_sample=lazy(__name__, "sample:make_sample"),
    options=(
        Option("ptx_bpp", "PTX bits per pixel to write (24 BGR or 32 BGRA; default: 32 when "
               "the image has alpha below 255, else 24)", int, None, (24, 32)),
    ),
    exports={".png": lazy(__name__, "to_scene:export_png")},
    notes="24/32 bpp BGR(A); trailing bytes kept",
)
