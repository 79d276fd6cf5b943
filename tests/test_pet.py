"""PET (Pangya puppets): native layer, fixtures against the spec's worked layout (§B.18),
scene conversion both ways, character assembly, bad input."""

from __future__ import annotations

import contextlib
import itertools
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gamemesh.errors import FormatError, TruncatedError, UnsupportedVersionError
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.document import (
    BoneSection,
    MeshSection,
    PetDocument,
    Section,
    TextSection,
    Texture,
    Vers,
)
from gamemesh.formats.pet.info import info
from gamemesh.formats.pet.read import read, sniff
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import section_bytes, write
from gamemesh.registry import Context
from gamemesh.registry import sniff as registry_sniff
from helpers import corpus_files

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
        pad=np.zeros((3, 2), np.uint8), corner_vertex=np.array([0, 1, 2], np.uint32),
        corner_normal=np.tile(np.float32([0, 0, -1]), (3, 1)),
        corner_uv=np.array([[[0, 0]], [[1, 0]], [[0, 1]]], np.float32),
        corner_nuv=np.ones(3, np.uint8), texture=np.array([0], np.uint8),
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


# -- native layer ------------------------------------------------------------------------------
def test_worked_layout_b18_exact_bytes() -> None:
    data = write(b18_document())
    expected = b18_expected()
    assert len(data) == 276 == len(expected)
    assert data == expected
    # The offsets the spec's table names.
    assert data[0x0C:0x10] == b"TEXT" and data[0x44:0x48] == b"BONE"
    assert data[0x87:0x8B] == b"MESH" and data[0x112:] == b"\x00\xff"
    doc = read(data, ctx("x.pet"))
    assert write(doc) == data
    assert info(doc) == {"version": "1.3", "kind": "pet",
                         "sections": ["VERS", "TEXT", "BONE", "MESH"], "bones": 1,
                         "bone_layout": "matrices", "textures": 1, "vertices": 3,
                         "triangles": 1, "uv_sets": 1, "max_influences": 1,
                         "mesh_layout": "plain"}


def test_checked_in_fixtures_match_the_writer() -> None:
    files = sorted(FIXTURES.glob("*.*pet")) + sorted(FIXTURES.glob("*.pet"))
    assert len(set(files)) >= 9
    assert (FIXTURES / "b18.pet").read_bytes() == b18_expected()
    for kind, (major, minor) in itertools.product(KINDS, VERSIONS):
        p = FIXTURES / f"tube_{major}{minor}.{kind}"
        assert p.read_bytes() == fixture(kind, (major, minor)), p.name
    assert (FIXTURES / "escape_13.pet").read_bytes() == fixture("pet", (1, 3), True)


@pytest.mark.parametrize(("kind", "version", "escape"),
                         list(itertools.product(KINDS, VERSIONS, (False, True))))
def test_every_kind_and_version_round_trips(kind: str, version: tuple[int, int],
                                            escape: bool) -> None:
    data = fixture(kind, version, escape)
    doc = read(data, ctx(f"m.{kind}"))
    assert doc.kind == kind and doc.version == version
    assert write(doc) == data
    facts = info(doc)
    assert facts["bones"] == (300 if escape else 5)
    assert facts["bone_layout"] == ("names only (apet)" if kind == "apet" else "matrices")
    if kind in ("pet", "mpet"):
        assert facts["vertices"] == 30 and facts["triangles"] == 48
        assert facts["max_influences"] == 5
        assert facts["uv_sets"] == (2 if version >= (1, 2) else 1)
        assert facts["mesh_layout"] == ("skin list (mpet)" if kind == "mpet" else "plain")
    if version == (1, 0):
        assert "VERS" not in facts["sections"]
    assert sniff(data[:64])
    assert registry_sniff(data[:64], f"x.{kind}") is SPEC


def test_escape_and_raw_fields_are_kept() -> None:
    data = fixture("pet", (1, 3), escape=True)
    doc = read(data, ctx("e.pet"))
    bones = doc.bones
    assert bones is not None and bones.wide_count  # 300 bones: 00 + u16
    assert bones.parents[299] == 298 and bones.parents[1] == 0 and bones.parent_wide[1]
    mesh = doc.mesh
    assert mesh is not None
    assert 299 in mesh.inf_bone and bool(mesh.inf_wide[mesh.inf_bone == 299].all())
    assert b"\xfe\x2b\x01" in data  # FE + i16 299
    anim = doc.anim
    assert anim is not None and anim.tracks[-1].bone == 299 and anim.tracks[-1].wide
    assert doc.textures[0].name == "item1_01.jpg"
    assert doc.textures[0].name_raw[12:17] == b"\0\xcc\xcc\x13\x37"  # garbage after the NUL
    assert doc.textures[2].name == "\ud55c\uae00.png"  # CP949


def test_varying_uv_set_counts_round_trip() -> None:
    doc = build("pet", (1, 2))
    mesh = doc.mesh
    assert mesh is not None
    nuv = np.full(len(mesh.corner_vertex), 2, np.uint8)
    nuv[::5] = 1
    mesh.corner_nuv = nuv
    mesh.corner_uv[nuv == 1, 1] = 0
    data = write(doc)
    back = read(data, ctx("v.pet"))
    assert back.mesh is not None and np.array_equal(back.mesh.corner_nuv, nuv)
    assert np.array_equal(back.mesh.corner_uv, mesh.corner_uv)
    assert write(back) == data


def test_weights_that_never_reach_255_are_an_error() -> None:
    data = bytearray(b18_expected())
    # Vertex 2's weight 255 -> 1: its pairs then run into the polygon data and past the end.
    at = 0x8F + 4 + 2 * 16 + 12
    assert data[at] == 0xFF
    for w in (0, 1):
        data[at] = w
        with pytest.raises(FormatError):
            read(bytes(data), ctx("w.pet"))
    # Pairs that run to the end of the section: an error naming the vertex, never a hang.
    payload = (1).to_bytes(4, "little") + b"\0" * 12 + b"\x00\x00" * 3000
    mesh = b"MESH" + len(payload).to_bytes(4, "little") + payload
    with pytest.raises(TruncatedError, match=r"vertices\[0\]\.weights"):
        read(mesh, ctx("w.pet"))


def test_wrong_kind_is_detected_by_exact_consumption() -> None:
    data = fixture("apet", (1, 3))
    c = ctx("m.pet")
    doc = read(data, c)
    assert doc.bones is not None and doc.bones.matrices is None
    assert any(n.code == "pet.bone_layout" for n in c.notes)
    assert write(doc) == data
    mdata = fixture("mpet", (1, 2))
    c = ctx(None, kind="pet")
    mdoc = read(mdata, c)
    assert mdoc.mesh is not None and mdoc.mesh.skins is not None
    assert write(mdoc) == mdata


def test_unsupported_version_and_unknown_section() -> None:
    data = bytearray(b18_expected())
    data[9] = 2
    with pytest.raises(UnsupportedVersionError, match=r"2\.3"):
        read(bytes(data), ctx("x.pet"))
    extra = b18_expected() + b"ZZZZ" + (3).to_bytes(4, "little") + b"abc" + b"\x01\x02"
    c = ctx("x.pet")
    doc = read(extra, c)
    assert doc.sections[-1].fourcc == b"ZZZZ" and doc.tail == b"\x01\x02"
    assert write(doc) == extra
    with pytest.raises(UnsupportedVersionError):
        read(b18_expected(), ctx("x.pet", kind="qpet"))


# -- bad input -----------------------------------------------------------------------------------
def test_truncations_fail_cleanly() -> None:
    from helpers import assert_truncations_fail_cleanly

    total = 0
    for kind in KINDS:
        total += assert_truncations_fail_cleanly(SPEC, fixture(kind, (1, 3)))
    total += assert_truncations_fail_cleanly(SPEC, fixture("mpet", (1, 0), escape=True))
    total += assert_truncations_fail_cleanly(SPEC, b18_expected())
    assert total > 2000


@pytest.mark.parametrize(("kind", "version", "escape"),
                         [("pet", (1, 3), True), ("mpet", (1, 0), True), ("apet", (1, 1), False),
                          ("mpet", (1, 2), False)])
def test_section_truncations_fail_cleanly(kind: str, version: tuple[int, int],
                                          escape: bool) -> None:
    """A cut file fails at the container (the last length runs past the end); so also cut
    each section's payload with its length fixed up, to reach every section reader."""
    from helpers import parse_raw

    doc = build(kind, version, escape=escape)
    payloads = [(s.fourcc, section_bytes(s.body, version)) for s in doc.sections]
    checked = 0
    for i, (_, body) in enumerate(payloads):
        step = max(1, len(body) // 150)
        for cut in range(0, len(body), step):
            out = b"".join(f + len(b).to_bytes(4, "little") + b if j != i else
                           f + cut.to_bytes(4, "little") + b[:cut]
                           for j, (f, b) in enumerate(payloads))
            with contextlib.suppress(FormatError):
                parse_raw(SPEC, out)
            checked += 1
    assert checked > 300


@pytest.mark.parametrize(("kind", "version", "seed", "count"),
                         [("pet", (1, 3), 1, 2000), ("mpet", (1, 2), 2, 600),
                          ("pet", (1, 0), 3, 600)])
def test_mutations_fail_cleanly(kind: str, version: tuple[int, int], seed: int,
                                count: int) -> None:
    from helpers import assert_mutations_fail_cleanly

    # 2000 on the richest file; the other layouts (skin list, 1.0) get fewer to keep the
    # suite fast (each mutation is read and converted to a scene, ~10 ms).
    assert_mutations_fail_cleanly(SPEC, fixture(kind, version), count=count, seed=seed)


def test_crash_inputs_replay_cleanly() -> None:
    from helpers import replay_crashes

    replay_crashes(SPEC)


def test_empty_and_garbage_input() -> None:
    for data in (b"", b"VERS", b"VERS\xff\xff\xff\xff", b"MESH\x04\0\0\0\xff\xff\xff\xff"):
        with pytest.raises(FormatError):
            SPEC.to_scene(read(data, ctx("x.pet")), ctx("x.pet"))
    with pytest.raises(TruncatedError):
        read(b"BONE\x10\0\0\0\x01", ctx("x.pet"))


def test_corpus_round_trips() -> None:
    files = corpus_files("pet")
    for p in files:
        data = p.read_bytes()
        assert write(read(data, ctx(p))) == data, p.name


