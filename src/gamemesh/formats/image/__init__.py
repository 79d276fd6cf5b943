"""Plain images (PNG, JPEG, TGA, DDS, BMP) as a format: a texture converts to and from a scene
holding that one image on a unit quad, so ``gamemesh convert x.ptx x.png`` and back go the same
way as every other conversion.

A PNG or JPEG that glTF can embed as it is stays encoded: the scene's image holds the file's
bytes (``Image.data``), only its header is read (its structure checked end to end, see
:mod:`gamemesh.textures.encoded`), and a GLB, or a file of the same type, gets the bytes back
unchanged. Every other image is decoded by Pillow.
"""

from __future__ import annotations

from ...registry import FormatSpec, lazy

__all__ = ["SPEC"]

_MAGICS = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"DDS ", b"BM")


def _sniff(prefix: bytes) -> bool:
    return any(prefix.startswith(m) for m in _MAGICS)


SPEC = FormatSpec(
    name="image",
    title="Plain image (PNG, JPEG, TGA, DDS, BMP) as a textured quad",
    extensions=(".png", ".jpg", ".jpeg", ".tga", ".dds", ".bmp"),
    sniff=_sniff,
    read=lazy(__name__, "codec:_read"),
    write=lazy(__name__, "codec:_write"),
    to_scene=lazy(__name__, "codec:_to_scene"),
    save=lazy(__name__, "codec:_save"),
    info=lazy(__name__, "codec:_info"),
    document_type=lazy(__name__, "codec:ImageDocument"),
)
