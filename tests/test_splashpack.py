"""SPLASHPACK native layer: the 12 real files byte for byte, fixtures of every layout B..H made by
our writer and checked against the spec's byte layouts, layout detection, and bad input."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import (
    BadMagicError,
    CorruptDataError,
    FormatError,
    TruncatedError,
    UnsupportedVersionError,
)
from gamemesh.formats.splashpack import SPEC
from gamemesh.formats.splashpack.info import info
from gamemesh.formats.splashpack.read import sniff
from gamemesh.formats.splashpack.sample import make_sample
from gamemesh.registry import Context
from helpers import (
    assert_mutations_fail_cleanly,
    assert_truncations_fail_cleanly,
    corpus_files,
    replay_crashes,
)
from splashpack_fixtures import (
    CLUT4_XY,
    CLUT8_XY,
    IDENTITY,
    LUA0,
    LUA1,
    PLAYER_HEIGHT,
    PLAYER_POS,
    PLAYER_ROT,
    ROT_90_Y,
    TPAGE_4,
    TPAGE_8,
    build_doc,
)

LAYOUTS = "BCDEFGH"
CTX = Context()

# Counts from shared/corpus/splashpack/PROVENANCE.md, by the commit in the file name:
# layout, objects' triangles, navmesh triangles, atlases, CLUTs, Lua files.
EXPECTED = {
    "6808479": ("B", [464, 112, 72, 9], [], 1, 4, 0),
    "cc1b2c8": ("C", [968, 528], [], 6, 6, 0),
    "651cbcd": ("D", [754, 164], [], 6, 6, 0),
    "bc0795e": ("E", [1180, 164], [180], 6, 6, 0),
    "febb6f3": ("F", [164, 1180], [195], 5, 6, 0),
    "441acbb": ("G", [1180, 164], [195], 5, 6, 1),
    "f8ab161": ("G", [164, 1180], [195], 5, 6, 1),
    "b5b0ae4": ("G", [1180, 164], [195], 5, 6, 1),
    "7e4532d": ("H", [164, 1180], [195], 5, 6, 1),
    "5b761ab": ("H", [164, 1180], [882], 5, 6, 1),
    "8bc15db": ("H", [1180, 164], [882], 5, 6, 2),
    "55c1d2c": ("H", [534, 238, 120, 36, 2248, 382], [2102], 1, 0, 1),
}


def corpus() -> list[Path]:
    return corpus_files("splashpack", "*.bin")


def commit_of(p: Path) -> str:
    return p.stem.rsplit("-", 1)[-1]


# -- real files ----------------------------------------------------------------------------------
def test_corpus_round_trips_byte_for_byte_with_named_counts() -> None:
    files = corpus()
    assert len(files) == 12
    for p in files:
        data = p.read_bytes()
        doc = SPEC.read(data, CTX)
        lay, tris, nav, atlases, cluts, lua = EXPECTED[commit_of(p)]
        assert doc.layout == lay, p.name
        assert [len(m) for m in doc.meshes] == tris, p.name
        assert [len(n) for n in doc.navmeshes] == nav, p.name
        assert len(doc.atlas_pixels) == atlases, p.name
        assert len(doc.clut_entries()) == cluts, p.name
        assert len(doc.lua) == lua, p.name
        assert SPEC.write(doc, CTX) == data, p.name
        assert sniff(data[:64]), p.name
        assert gamemesh.sniff(p) == "splashpack"


def test_corpus_details_match_the_provenance_notes() -> None:
    by = {commit_of(p): SPEC.read(p.read_bytes(), CTX) for p in corpus()}
    b = by["6808479"]
    assert [(int(a["x"]), int(a["y"]), int(a["width"]), int(a["height"])) for a in b.atlases] == [
        (320, 0, 128, 256)]
    assert [y for _, y, _ in b.clut_entries()] == [240, 241, 242, 243]
    c = by["cc1b2c8"]
    assert [int(x["count"]) for x in c.cluts] == [256] * 5 + [16]
    assert int(c.atlases[-1]["width"]) == 64 and int(c.atlases[-1]["x"]) == 960  # 4 bpp
    h16 = by["55c1d2c"]
    assert {int(t) for m in h16.meshes for t in m["tpage"]} == {0x0305}
    assert int(h16.objects["flags"][0]) & 1 == 1
    assert by["5b761ab"].hfield("scene_lua") == -1 and b"\r\n" in by["5b761ab"].lua[0]
    assert by["8bc15db"].hfield("scene_lua") == 1
    assert by["441acbb"].hfield("player_height") == 243
    assert list(by["441acbb"].hfield("player_pos")) == [-585, 64, -722]
    assert len(by["441acbb"].lua[0]) == 149


def test_info_names_the_layout_and_counts() -> None:
    for p in corpus():
        got = info(SPEC.read(p.read_bytes(), CTX))
        lay, tris, nav, atlases, _, lua = EXPECTED[commit_of(p)]
        assert got["layout"] == lay and got["version"] == 1
        assert got["triangles"] == sum(tris) and got["navmesh_triangles"] == sum(nav)
        assert got["atlases"] == atlases and got["lua_files"] == lua
    h16 = info(SPEC.read(next(p for p in corpus() if "55c1d2c" in p.name).read_bytes(), CTX))
    assert h16["atlas_depths"] == {"16bpp": 1} and h16["scene_lua_index"] == 0


# -- fixtures of every layout ----------------------------------------------------------------
@pytest.mark.parametrize("lay", LAYOUTS)
def test_fixture_round_trips_and_is_detected(lay: str) -> None:
    data = SPEC.write(build_doc(lay), CTX)
    doc = SPEC.read(data, CTX)
    assert doc.layout == lay
    assert SPEC.write(doc, CTX) == data
    assert sniff(data[:64])
    assert [len(m) for m in doc.meshes] == [2, 3]


def test_layout_g_bytes_match_the_spec() -> None:
    """Spec §b.1-b.8: header, descriptor tables, aligned data blocks, no trailing pad."""
    doc = build_doc("G")
    doc.gaps = {1: b"-- tail"}  # the uncounted Lua tail the exporter's length bug leaves
    data = SPEC.write(doc, CTX)
    hdr = struct.pack("<2sHHHHHH3h3hHhH", b"SP", 1, 2, 2, 1, 2, 2, *PLAYER_POS, *PLAYER_ROT,
                      PLAYER_HEIGHT, 0, 0)
    assert data[:32] == hdr
    tables = 32 + 2 * 8 + 2 * 56 + 8 + 2 * 12 + 2 * 12
    assert tables == 216
    lua0 = tables
    assert data[0x20:0x28] == struct.pack("<II", lua0, len(LUA0))
    lua1 = lua0 + len(LUA0) + 7  # 45 bytes + the 7 kept: 268, a multiple of 4
    assert lua1 % 4 == 0 and data[lua0 + len(LUA0):lua1] == b"-- tail"
    assert data[0x28:0x30] == struct.pack("<II", lua1, len(LUA1))
    mesh0 = (lua1 + len(LUA1) + 3) // 4 * 4
    assert data[lua1 + len(LUA1):mesh0] == b"\0" * (mesh0 - lua1 - len(LUA1))
    go0 = struct.pack("<I3i9iHh", mesh0, 100, -200, 300, *IDENTITY, 2, 0)
    assert data[0x30:0x30 + 56] == go0
    go1 = struct.pack("<I3i9iHh", mesh0 + 2 * 52, -50, 0, 4000, *ROT_90_Y, 3, -1)
    assert data[0x68:0x68 + 56] == go1
    tri0 = struct.pack("<9h3h12B6BHHHHH", 0, 0, 0, 0, 0, 100, 100, 0, 0, 0, -4096, 0,
                       128, 64, 32, 0, 204, 100, 0, 0, 1, 2, 3, 0,
                       0, 0, 3, 1, 1, 3, 0, TPAGE_8, CLUT8_XY[0] // 16, CLUT8_XY[1], 0)
    assert data[mesh0:mesh0 + 52] == tri0
    nav_off = mesh0 + 5 * 52
    assert data[0xA0:0xA8] == struct.pack("<IHH", nav_off, 2, 0)
    assert data[nav_off:nav_off + 36] == struct.pack("<9i", -1000, 50, -1000, 1000, 50, -1000,
                                                     -1000, 50, 1000)
    atlas0 = nav_off + 2 * 36
    assert data[0xA8:0xB4] == struct.pack("<IHHHH", atlas0, 128, 4, 320, 0)
    atlas1 = atlas0 + 128 * 4 * 2
    assert data[0xB4:0xC0] == struct.pack("<IHHHH", atlas1, 64, 4, 960, 0)
    clut0 = atlas1 + 64 * 4 * 2
    assert data[0xC0:0xCC] == struct.pack("<IHHHH", clut0, 0, 240, 6, 0)
    assert data[0xCC:0xD8] == struct.pack("<IHHHH", clut0 + 12, 0, 241, 16, 0)
    assert len(data) == clut0 + 12 + 32  # ends right after the last CLUT word
    back = SPEC.read(data, CTX)
    assert back.gaps == {1: b"-- tail"} and back.lua == [LUA0, LUA1]
    assert SPEC.write(back, CTX) == data


def test_layout_h_and_b_bytes_match_the_spec() -> None:
    h = SPEC.write(build_doc("H"), CTX)
    assert struct.unpack_from("<hH", h, 0x1C) == (1, 0)  # scene Lua index, pad
    go0 = 0x20 + 2 * 8
    assert struct.unpack_from("<HhI", h, go0 + 0x34) == (2, 0, 1)  # tris, Lua, flags
    assert struct.unpack_from("<HhI", h, go0 + 60 + 0x34) == (3, -1, 0)
    b = SPEC.write(build_doc("B"), CTX)
    assert struct.unpack_from("<2sHHH", b, 0) == (b"SP", 1, 2, 1)
    # 572-byte object: pos, rot, triCount, tpage, clutX, clutY, clut[256], meshOffset
    assert struct.unpack_from("<HHHH", b, 8 + 48) == (2, TPAGE_8, 0, 240)
    mesh0 = struct.unpack_from("<I", b, 8 + 568)[0]
    assert mesh0 == 8 + 2 * 572 + 12
    # 44-byte triangle: vertices, normal, UVs + pad, then the colours
    assert b[mesh0:mesh0 + 44] == struct.pack("<9h3h6BH12B", 0, 0, 0, 0, 0, 100, 100, 0, 0, 0,
                                              -4096, 0, 0, 0, 3, 1, 1, 3, 0, 128, 64, 32, 0,
                                              204, 100, 0, 0, 1, 2, 3, 0)
    c = SPEC.write(build_doc("C"), CTX)
    clut_desc = 12 + 2 * 56 + 2 * 12
    assert struct.unpack_from("<HHHH", c, clut_desc + 512) == (0, 240, 6, 0)
    d = SPEC.write(build_doc("D"), CTX)
    assert struct.unpack_from("<2s4H3H", d, 0) == (b"SP", 1, 2, 2, 2, 0, 0, 0)
    d_mesh0 = 16 + 2 * 56 + 2 * 12 + 2 * 12
    assert struct.unpack_from("<I3i", d, 16) == (d_mesh0, 100, -200, 300)  # offset first
    d_clut0 = d_mesh0 + 5 * 52 + 128 * 4 * 2 + 64 * 4 * 2
    assert struct.unpack_from("<IHHHH", d, 16 + 2 * 56 + 2 * 12) == (d_clut0, 0, 240, 6, 0)
    e = SPEC.write(build_doc("E"), CTX)
    assert struct.unpack_from("<2sH4H", e, 0) == (b"SP", 1, 2, 1, 2, 2)
    f = SPEC.write(build_doc("F"), CTX)
    assert struct.unpack_from("<3h3hH", f, 12) == (*PLAYER_POS, *PLAYER_ROT, PLAYER_HEIGHT)
    assert CLUT4_XY == (0, 241) and TPAGE_4 == 0x020F


# -- versions and layouts we refuse ---------------------------------------------------------------
def test_versions_17_to_19_are_refused_and_a_v1_body_is_no_modern_file() -> None:
    data = bytearray(SPEC.write(build_doc("G"), CTX))
    data[2:4] = (17).to_bytes(2, "little")
    with pytest.raises(UnsupportedVersionError, match=r"version 17.*not supported"):
        SPEC.read(bytes(data), CTX)
    assert not sniff(bytes(data[:64]))
    # Versions 20..24 are read (test_splashpack_modern.py); a v1 body under that number is not
    # a modern file and fails its checks instead of becoming a garbled scene.
    data[2:4] = (24).to_bytes(2, "little")
    with pytest.raises(FormatError):
        SPEC.read(bytes(data), CTX)


def test_layout_a_is_refused_by_name() -> None:
    go = struct.pack("<3i9iHHI", 0, 0, 0, *IDENTITY, TPAGE_8, 1, 8 + 56)
    tri = b"\0" * 44
    data = struct.pack("<2sHHH", b"SP", 1, 1, 0) + go + tri
    with pytest.raises(UnsupportedVersionError, match="layout A"):
        SPEC.read(data, CTX)


def test_bad_magic_and_inconsistent_arithmetic() -> None:
    with pytest.raises(BadMagicError):
        SPEC.read(b"PS" + bytes(62), CTX)
    data = bytearray(SPEC.write(build_doc("G"), CTX))
    struct.pack_into("<I", data, 0x30, 4)  # object 0's mesh offset into the header
    with pytest.raises(CorruptDataError, match="layout G"):
        SPEC.read(bytes(data), CTX)
    with pytest.raises(FormatError, match="bytes after the last block"):
        SPEC.read(SPEC.write(build_doc("G"), CTX) + b"\0\0\0\0", CTX)
    with pytest.raises(TruncatedError):
        SPEC.read(b"SP\x01", CTX)


def test_sniff_is_strict() -> None:
    rng = np.random.default_rng(7)
    for _ in range(200):
        junk = b"SP\x01\x00" + rng.integers(0, 256, 60, dtype=np.uint8).tobytes()
        assert not sniff(junk)
    assert not sniff(b"\x89PNG\r\n\x1a\n" + bytes(56))
    assert not sniff(b"glTF" + bytes(60))
    for lay in LAYOUTS:
        assert sniff(SPEC.write(build_doc(lay), CTX)[:64]), lay


# -- bad input -----------------------------------------------------------------------------------
def test_truncations_of_fixtures_and_corpus_fail_cleanly() -> None:
    n = 0
    for lay in LAYOUTS:
        n += assert_truncations_fail_cleanly(SPEC, SPEC.write(build_doc(lay), CTX))
    for p in corpus():
        n += assert_truncations_fail_cleanly(SPEC, p.read_bytes())
    assert n > 7000


@pytest.mark.parametrize(("lay", "count"), [("G", 2000), ("B", 500), ("C", 500), ("H", 500)])
def test_mutations_of_fixtures_fail_cleanly(lay: str, count: int) -> None:
    assert_mutations_fail_cleanly(SPEC, SPEC.write(build_doc(lay), CTX), count=count,
                                  seed=ord(lay))


def test_mutations_of_a_real_file_fail_cleanly() -> None:
    p = next(p for p in corpus() if "55c1d2c" in p.name)
    assert_mutations_fail_cleanly(SPEC, p.read_bytes(), count=200, seed=4)


def test_kept_crash_inputs_replay_cleanly() -> None:
    replay_crashes(SPEC)


# -- benchmark sample ------------------------------------------------------------------------------
def test_make_sample_is_valid_and_about_the_size() -> None:
    data = make_sample(2_000_000)
    assert abs(len(data) - 2_000_000) < 100_000
    t = time.perf_counter()
    doc = SPEC.read(data, CTX)
    dt = time.perf_counter() - t
    assert doc.layout == "G" and doc.triangle_count() > 30_000
    assert SPEC.write(doc, CTX) == data
    print(f"splashpack read: {len(data) / dt / 1e6:.0f} MB/s")


def test_edited_documents_write_consistently() -> None:
    doc = SPEC.read(SPEC.write(build_doc("G"), CTX), CTX)
    doc.lua.append(b"-- added\n")
    doc.navmeshes.append(doc.navmeshes[0][:1])
    back = SPEC.read(SPEC.write(doc, CTX), CTX)
    assert back.lua[-1] == b"-- added\n" and [len(n) for n in back.navmeshes] == [2, 1]
    assert info(back)["lua_files"] == 3
    doc.meshes.append(doc.meshes[0])  # an object without its descriptor
    with pytest.raises(FormatError, match="disagree"):
        SPEC.write(doc, CTX)
    e = build_doc("E")
    e.lua = [b"x"]
    with pytest.raises(FormatError, match="layout E has no lua table"):
        SPEC.write(e, CTX)
