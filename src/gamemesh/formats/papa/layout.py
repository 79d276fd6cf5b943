"""Record tables of the Papa format (versions 3.0 and 2.0 share them) as little-endian numpy
dtypes and structs.

Names follow ``shared/specs/papa.md`` ("Byte-level specification"); every record size below is
asserted against the spec's table so a typo here fails at import, not in a file.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

FMT = "papa"
MAGIC = b"apaP"  # the u32 0x50617061 ("Papa") as it sits on disk
VERSION = (0, 3)  # (minor, major): what new files get
# Versions read: 3.0, and 2.0 from 2014 mod files, whose layout is the same (Blender-PAPA-IO
# reads them). A native rewrite keeps the version it read.
VERSIONS = ((0, 3), (0, 2))
HEADER_SIZE = 104
ABSENT = -1
ALIGN = 8

# Header: magic, minor, major, nine u16 counts, 6 bytes of padding (signature), nine i64 offsets.
HEADER = struct.Struct("<4sHH9H6s9q")
assert HEADER.size == HEADER_SIZE

# Index into the header's count/offset arrays, in header order.
SECTIONS = ("strings", "textures", "vertex_buffers", "index_buffers", "materials", "meshes",
            "skeletons", "models", "animations")
(S_STRING, S_TEXTURE, S_VB, S_IB, S_MATERIAL, S_MESH, S_SKELETON, S_MODEL,
 S_ANIMATION) = range(9)
# papatran's section order on disk ("File layout"): model, mesh, material, texture, vertex
# buffer, index buffer, skeleton, animation, string.
BUILD_ORDER = (S_MODEL, S_MESH, S_MATERIAL, S_TEXTURE, S_VB, S_IB, S_SKELETON, S_ANIMATION,
               S_STRING)

STRING_ENTRY = np.dtype([("length", "<u4"), ("pad", "<u4"), ("offset", "<i8")])
TEXTURE_ENTRY = np.dtype([("name", "<u2"), ("format", "u1"), ("mips_srgb", "u1"),
                          ("width", "<u2"), ("height", "<u2"), ("data_size", "<u8"),
                          ("offset", "<i8")])
BUFFER_ENTRY = np.dtype([("format", "u1"), ("pad", "u1", (3,)), ("count", "<u4"),
                         ("data_size", "<u8"), ("offset", "<i8")])
MATERIAL_ENTRY = np.dtype([("shader", "<u2"), ("num_vector", "<u2"), ("num_texture", "<u2"),
                           ("num_matrix", "<u2"), ("vector_offset", "<i8"),
                           ("texture_offset", "<i8"), ("matrix_offset", "<i8")])
MESH_ENTRY = np.dtype([("vertex_buffer", "<u2"), ("index_buffer", "<u2"), ("num_groups", "<u2"),
                       ("pad", "<u2"), ("offset", "<i8")])
SKELETON_ENTRY = np.dtype([("num_bones", "<u2"), ("pad", "<u2", (3,)), ("offset", "<i8")])
MODEL_ENTRY = np.dtype([("name", "<u2"), ("skeleton", "<i2"), ("num_bindings", "<u2"),
                        ("pad", "<u2"), ("model2scene", "<f4", (16,)), ("offset", "<i8")])
ANIMATION_ENTRY = np.dtype([("name", "<u2"), ("num_bones", "<u2"), ("num_frames", "<u4"),
                            ("fps_num", "<u4"), ("fps_den", "<u4"), ("bone_table", "<i8"),
                            ("transforms", "<i8")])

VECTOR_PARAM = np.dtype([("name", "<u2"), ("pad", "<u2"), ("value", "<f4", (4,))])
TEXTURE_PARAM = np.dtype([("name", "<u2"), ("texture", "<u2")])
MATRIX_PARAM = np.dtype([("name", "<u2"), ("pad", "<u2"), ("value", "<f4", (16,))])
# Blender-PAPA-IO writes vector and matrix params 4 bytes wider than it reads them.
VECTOR_PARAM_24 = np.dtype({"names": ["name", "pad", "value"],
                            "formats": ["<u2", "<u2", ("<f4", (4,))],
                            "offsets": [0, 2, 4], "itemsize": 24})
MATRIX_PARAM_72 = np.dtype({"names": ["name", "pad", "value"],
                            "formats": ["<u2", "<u2", ("<f4", (16,))],
                            "offsets": [0, 2, 4], "itemsize": 72})

MATERIAL_GROUP = np.dtype([("name", "<u2"), ("material", "<u2"), ("first_index", "<u4"),
                           ("num_primitives", "<u4"), ("primitive_type", "u1"),
                           ("pad", "u1", (3,))])
BONE = np.dtype([("name", "<u2"), ("parent", "<i2"), ("translation", "<f4", (3,)),
                 ("rotation", "<f4", (4,)), ("shear_scale", "<f4", (9,)),
                 ("bind2bone", "<f4", (16,))])
MESH_BINDING = np.dtype([("name", "<u2"), ("mesh", "<u2"), ("num_bone_mappings", "<u2"),
                         ("pad", "<u2"), ("mesh2model", "<f4", (16,)), ("offset", "<i8")])
TRANSFORM = np.dtype([("translation", "<f4", (3,)), ("rotation", "<f4", (4,))])

for _dt, _size in ((STRING_ENTRY, 16), (TEXTURE_ENTRY, 24), (BUFFER_ENTRY, 24),
                   (MATERIAL_ENTRY, 32), (MESH_ENTRY, 16), (SKELETON_ENTRY, 16),
                   (MODEL_ENTRY, 80), (ANIMATION_ENTRY, 32), (VECTOR_PARAM, 20),
                   (TEXTURE_PARAM, 4), (MATRIX_PARAM, 68), (MATERIAL_GROUP, 16), (BONE, 132),
                   (MESH_BINDING, 80), (TRANSFORM, 28)):
    assert _dt.itemsize == _size, (_dt, _size)

ENTRY_DTYPES = (STRING_ENTRY, TEXTURE_ENTRY, BUFFER_ENTRY, BUFFER_ENTRY, MATERIAL_ENTRY,
                MESH_ENTRY, SKELETON_ENTRY, MODEL_ENTRY, ANIMATION_ENTRY)
# The same entries as structs, for reading: a table has a handful of entries, and unpacking
# them to tuples costs a fraction of a numpy view plus ``tolist``. Matrices are skipped here
# (``x``) and copied from the file as float32 bits.
ENTRY_STRUCTS = tuple(struct.Struct(f) for f in (
    "<IIq", "<HBBHHQq", "<B3sIQq", "<B3sIQq", "<HHHHqqq", "<HHHHq", "<HHHHq", "<HhHH64xq",
    "<HHIIIqq"))
MESH_BINDING_STRUCT = struct.Struct("<HHHH64xq")
MATRIX_OFFSET = 8  # where model2scene / mesh2model start in their entries
for _dt, _st in zip((*ENTRY_DTYPES, MESH_BINDING), (*ENTRY_STRUCTS, MESH_BINDING_STRUCT),
                    strict=True):
    assert _dt.itemsize == _st.size, (_dt, _st.format)


def _vertex(*fields: tuple[Any, ...]) -> np.dtype[Any]:
    return np.dtype(list(fields))


_P = ("position", "<f4", (3,))
_N = ("normal", "<f4", (3,))
_C = ("color", "u1", (4,))


def _uv(i: int) -> tuple[str, str, tuple[int]]:
    return (f"texcoord{i}", "<f4", (2,))


# Vertex formats 0-11 (interleaved, tightly packed). 1-4, 9 and 11 are known only from one
# reader's enum (the spec marks them "inferred"); 12-14 are names without a known layout.
VERTEX_FORMATS: dict[int, tuple[str, np.dtype[Any]]] = {
    0: ("Position3", _vertex(_P)),
    1: ("Position3Color4bTexCoord2", _vertex(_P, _C, _uv(0))),
    2: ("Position3Color4bTexCoord4", _vertex(_P, _C, _uv(0), _uv(1))),
    3: ("Position3Color4bTexCoord6", _vertex(_P, _C, _uv(0), _uv(1), _uv(2))),
    4: ("Position3Normal3", _vertex(_P, _N)),
    5: ("Position3Normal3TexCoord2", _vertex(_P, _N, _uv(0))),
    6: ("Position3Normal3Color4TexCoord2", _vertex(_P, _N, _C, _uv(0))),
    7: ("Position3Normal3Color4TexCoord4", _vertex(_P, _N, _C, _uv(0), _uv(1))),
    8: ("Position3Weights4bBones4bNormal3TexCoord2",
        _vertex(_P, ("weights", "u1", (4,)), ("bones", "u1", (4,)), _N, _uv(0))),
    9: ("Position3Normal3Tan3Bin3TexCoord2",
        _vertex(_P, _N, ("tangent", "<f4", (3,)), ("binormal", "<f4", (3,)), _uv(0))),
    10: ("Position3Normal3Tan3Bin3TexCoord4",
         _vertex(_P, _N, ("tangent", "<f4", (3,)), ("binormal", "<f4", (3,)), _uv(0), _uv(1))),
    11: ("Position3Normal3Tan3Bin3Color4TexCoord4",
         _vertex(_P, _N, ("tangent", "<f4", (3,)), ("binormal", "<f4", (3,)), _C, _uv(0),
                 _uv(1))),
}
UNSUPPORTED_VERTEX_FORMATS = {12: "TexCoord4", 13: "Position3Color8fTexCoord6", 14: "Matrix"}
for _code, _stride in ((0, 12), (1, 24), (2, 32), (3, 40), (4, 24), (5, 32), (6, 36), (7, 44),
                       (8, 40), (9, 56), (10, 64), (11, 68)):
    assert VERTEX_FORMATS[_code][1].itemsize == _stride

INDEX_FORMATS: dict[int, tuple[str, np.dtype[Any]]] = {0: ("UInt16", np.dtype("<u2")),
                                                      1: ("UInt32", np.dtype("<u4"))}

PRIMITIVE_TYPES = {0: "Points", 1: "Lines", 2: "Triangles"}

# Texture format codes (13 = R8, as four of the five tools have it; see the spec's warning).
TEXTURE_FORMATS = {
    0: "Invalid", 1: "R8G8B8A8", 2: "R8G8B8X8", 3: "B8G8R8A8", 4: "DXT1", 5: "DXT3", 6: "DXT5",
    7: "R32F", 8: "RG32F", 9: "RGBA32F", 10: "R16F", 11: "RG16F", 12: "RGBA16F", 13: "R8",
    14: "R8G8", 15: "D0", 16: "D16", 17: "D24", 18: "D24S8", 19: "D32", 20: "R8I", 21: "R8UI",
    22: "R16I", 23: "R16UI", 24: "RG8I", 25: "RG8UI", 26: "RG16I", 27: "RG16UI", 28: "R32I",
    29: "R32UI", 30: "Shadow16", 31: "Shadow24", 32: "Shadow32",
}
TEX_RGBA8, TEX_RGBX8, TEX_BGRA8, TEX_DXT1, TEX_DXT3, TEX_DXT5 = 1, 2, 3, 4, 5, 6
TEX_R8 = 13
# Bytes per pixel of the uncompressed formats we decode; DXT sizes are per 4x4 block.
TEXTURE_BPP = {1: 4, 2: 4, 3: 4, 7: 4, 8: 8, 9: 16, 10: 2, 11: 4, 12: 8, 13: 1, 14: 2}
DXT_BLOCK = {4: 8, 5: 16, 6: 16}


def align8(n: int) -> int:
    return (n + 7) & ~7


def level_size(fmt: int, width: int, height: int) -> int:
    """Bytes of one mip level, or -1 for formats whose size is not known."""
    if fmt in DXT_BLOCK:
        return max(1, (width + 3) // 4) * max(1, (height + 3) // 4) * DXT_BLOCK[fmt]
    if fmt in TEXTURE_BPP:
        return width * height * TEXTURE_BPP[fmt]
    return -1


def mip_dims(width: int, height: int, mips: int) -> list[list[int]]:
    """[width, height] of each stored level, largest first."""
    return [[width >> i or 1, height >> i or 1] for i in range(max(mips, 1))]


def mip_sizes(fmt: int, width: int, height: int, mips: int) -> list[tuple[int, int, int]]:
    """(width, height, bytes) of each stored level, largest first."""
    out = []
    for i in range(max(mips, 1)):
        w, h = max(width >> i, 1), max(height >> i, 1)
        out.append((w, h, level_size(fmt, w, h)))
    return out
