"""PET writing: the spec's worked layout byte for byte, the checked-in fixtures, and real files
written back as read."""

from __future__ import annotations

import itertools

from tests.helpers import corpus_files
from tests.pet_fixtures import FIXTURES, KINDS, VERSIONS, b18_document, b18_expected, ctx, fixture

from gamemesh.formats.pet.info import info
from gamemesh.formats.pet.read import read
from gamemesh.formats.pet.write import write


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


def test_corpus_round_trips() -> None:
    files = corpus_files("pet")
    for p in files:
        data = p.read_bytes()
        assert write(read(data, ctx(p))) == data, p.name
