"""PET test data built by the package's own writer: the spec's worked layout (§B.18) as a
document and as bytes, and the generated fixtures of every kind and version."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from gamemesh.formats.pet.document import (
    BoneSection,
    MeshSection,
    PetDocument,
    Section,
    TextSection,
    Texture,
    Vers,
    corner_records,
)
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context

FIXTURES = Path(__file__).parent / "fixtures" / "pet"
KINDS = ("pet", "apet", "bpet", "mpet")
VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))


def ctx(path: str | Path | None = None, **opts: Any) -> Context:
    return Context(Path(path) if path else None, opts)


def b18_document() -> PetDocument:
    """The spec's worked example: v1.3 .pet, 1 texture, 1 bone, 1 triangle."""
    bones = BoneSection(names=[b"root"], parents=[-1], parent_wide=[False],
                        matrices=np.array([[1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]], np.float32),
                        extra=np.array([-1.0], np.float32))
    mesh = MeshSection(
        positions=np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32),
        inf_count=np.ones(3, np.int32), inf_weight=np.full((3, 1), 255, np.uint8),
        inf_bone=np.zeros((3, 1), np.int32), inf_wide=np.zeros((3, 1), bool),
        pad=np.zeros((3, 2), np.uint8), corners=corner_records(
            [0, 1, 2], np.tile(np.float32([0, 0, -1]), (3, 1)),
            np.array([[[0, 0]], [[1, 0]], [[0, 1]]], np.float32), np.ones(3)),
        texture=np.array([0], np.uint8),
        specular=np.array([0xFF], np.uint8))
    return PetDocument("pet", (1, 3), [
        Section(b"VERS", Vers()),
        Section(b"TEXT", TextSection([Texture(b"item.jpg".ljust(32, b"\0"))])),
        Section(b"BONE", bones), Section(b"MESH", mesh)])


def b18_expected() -> bytes:
    """§B.18 written out byte by byte from the spec's table."""
    f = struct.Struct("<f")
    out = b"VERS" + (4).to_bytes(4, "little") + bytes([3, 1, 0xFE, 0xFF])
    out += b"TEXT" + (48).to_bytes(4, "little") + (1).to_bytes(4, "little")
    out += b"item.jpg" + b"\0" * 24 + b"\0\0\0\0" + b"\xff" * 4 + b"\0" * 4
    out += b"BONE" + (59).to_bytes(4, "little") + b"\x01" + b"root\0\xff"
    out += b"".join(f.pack(v) for v in (1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0))
    out += b"\x00\x00\x80\xbf"
    out += b"MESH" + (133).to_bytes(4, "little") + (3).to_bytes(4, "little")
    for p in ((0, 0, 0), (1, 0, 0), (0, 1, 0)):
        out += b"".join(f.pack(v) for v in p) + b"\xff\x00" + b"\x00\x00"
    out += (1).to_bytes(4, "little")
    for i, uv in enumerate(((0, 0), (1, 0), (0, 1))):
        out += i.to_bytes(4, "little") + b"".join(f.pack(v) for v in (0, 0, -1))
        out += b"\x01" + b"".join(f.pack(v) for v in uv)
    out += b"\x00\xff"
    return out


def fixture(kind: str, version: tuple[int, int], escape: bool = False) -> bytes:
    return write(build(kind, version, escape=escape))
