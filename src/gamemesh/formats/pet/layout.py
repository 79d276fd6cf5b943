"""PET record tables (spec §B): constants and the fixed-size dtypes (the document is in
:mod:`.document`).

The document mirrors the file section by section, in file order, so that an unedited file writes
back byte for byte: raw fixed-size name fields (with the garbage after the NUL), the encoding of
every bone id (1 byte or the 0xFE escape), padding bytes, bytes left over at the end of a section
and unknown sections as raw blobs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .options import EXTENSIONS as EXTENSIONS  # re-exported: the readers import them here
from .options import KINDS as KINDS

FMT = "pet"
ENCODING = "cp949"

VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))

FOURCCS = (b"VERS", b"TEXT", b"SMTL", b"BONE", b"ANIM", b"MESH", b"FANM", b"FRAM", b"MOTI",
           b"COLL", b"EXTR")

# Sections a writer emits per kind (§B.2, #1's eFILE_TYPE masks); readers accept any section.
KIND_SECTIONS: dict[str, tuple[bytes, ...]] = {
    "pet": FOURCCS,
    "bpet": (b"VERS", b"BONE", b"EXTR", b"COLL"),
    "apet": (b"VERS", b"BONE", b"ANIM", b"FRAM", b"MOTI"),
    "mpet": (b"VERS", b"TEXT", b"SMTL", b"BONE", b"MESH", b"FANM"),
}
# #1's writer order (§B.1).
WRITE_ORDER = (b"VERS", b"TEXT", b"SMTL", b"BONE", b"ANIM", b"MESH", b"FANM", b"FRAM", b"MOTI",
               b"EXTR", b"COLL")

FPS = 30.0

# -- fixed-size records ----------------------------------------------------------------------
TEXT_DT = np.dtype([("name", "S32"), ("flag", "i1"), ("group", "u1"), ("pad", "V2"),
                    ("diffuse", "<u4"), ("handle", "<u4")])
SKIN_DT = np.dtype([("bone", "u1"), ("pad", "V3"), ("vtx_start", "<u4"), ("vtx_count", "<u4"),
                    ("poly_start", "<u4"), ("poly_count", "<u4")])
FANM_DT = np.dtype([("group", "u1"), ("name", "V32"), ("material", "V32")])
# SMTL value sizes by type; 7 (MATRIXARRAY) has no known size and 8 (TEXTURE) is an lstr.
SMTL_SIZES = {0: 4, 1: 4, 2: 4, 3: 8, 4: 12, 5: 16, 6: 64}

# Writer limits per minor version (§B.14, pet-source_tools' exporter): animation tracks and
# FRAM frame scripts.
TRACK_LIMIT = {0: 127, 1: 256, 2: 512, 3: 1024}
FRAME_LIMIT = {0: 256, 1: 512, 2: 10000, 3: 20000}
# The 0xFE escape carries an i16; the fork (#3) reads it as u16, so stay below 0x7FFF (§E.4).
MAX_BONE_ID = 0x7FFE

F32 = npt.NDArray[np.float32]
U8 = npt.NDArray[np.uint8]
I32 = npt.NDArray[np.int32]


def corner_dtype(nuv: int, with_count: bool) -> np.dtype[Any]:
    """A triangle corner: vertex index, normal, (≥1.2: UV-set count,) UV sets."""
    fields: list[Any] = [("vertex", "<u4"), ("normal", "<f4", (3,))]
    if with_count:
        fields.append(("nuv", "u1"))
    fields.append(("uv", "<f4", (nuv, 2)))
    return np.dtype(fields)


def fixstr(raw: bytes) -> str:
    """A NUL-terminated fixed-size CP949 field or an lstr's text (#1 splits both at the first
    NUL: garbage or trailing NULs after it are not part of the text); bad bytes replaced."""
    text = raw.split(b"\0", 1)[0]
    # ASCII, which CP949 keeps as is, by the cheaper ASCII decoder.
    return text.decode("ascii") if text.isascii() else text.decode(ENCODING, errors="replace")


# Characters that flag a material in the first 5 characters of a texture name (§B.4).
MASK_FLAGS = "[+}^"


FLAG_CHARS = "[+}^]!{~@"
