"""PBA native layer: the spec's worked file (b.11) byte for byte, a hand-packed file checked
against the writer, fixtures of every version, mesh type and track kind built by our writer,
and bad input. Run ``python tests/test_pba.py`` to regenerate tests/fixtures/pba/ (a test fails
when the checked-in files drift from the builders)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from gamemesh.errors import BadMagicError, FormatError, TruncatedError, UnsupportedVersionError
from gamemesh.formats.pba import SPEC
from gamemesh.formats.pba.document import (
    FaceGroup,
    NodeTrack,
    PbaDocument,
    PbaMesh,
    Sequence,
    VertexGroup,
    VertexTrack,
)
from gamemesh.formats.pba.layout import (
    ANIM_ROT,
    ANIM_ROTPOS,
    ANIMATED,
    BONE,
    FLEXIBLE,
    NAME,
    NODES,
    RIGID,
    ROT_KEY,
    ROTPOS_KEY,
    VERTEX,
    vertex_key,
)
from gamemesh.formats.pba.read import read, sniff
from gamemesh.formats.pba.write import write
from gamemesh.registry import Context
from helpers import (
    assert_mutations_fail_cleanly,
    assert_truncations_fail_cleanly,
    corpus_files,
    replay_crashes,
)

FIXTURES = Path(__file__).parent / "fixtures" / "pba"

# The spec's worked minimal file (b.11), typed in from the spec.
WORKED_B11 = bytes.fromhex(
    "02000000" "0103" "48000000" + "656d707479".ljust(64, "0")
    + "0603" "0a000000" "00000000"
    + "00000000"
    + "0203" "0a000000" "00000000"
    + "0403" "0a000000" "00000000")


# -- fixture builders ------------------------------------------------------------------------
def nm(s: str) -> bytes:
    return s.encode().ljust(32, b"\0")


def names(*items: str) -> np.ndarray:
    return np.array([s.encode() for s in items], dtype=NAME)


def box_vertices(size: float = 0.5, center: tuple[float, float, float] = (0, 0, 0)
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A box in file (left-handed) axes: 24 vertices, 12 triangles whose winding cross product
    (v1 - v0) x (v2 - v0) points along the stored normal (the spec's b.10 front-face test)."""
    faces = [((1, 0, 0), (0, 1, 0), (0, 0, 1)), ((-1, 0, 0), (0, 0, 1), (0, 1, 0)),
             ((0, 1, 0), (0, 0, 1), (1, 0, 0)), ((0, -1, 0), (1, 0, 0), (0, 0, 1)),
             ((0, 0, 1), (1, 0, 0), (0, 1, 0)), ((0, 0, -1), (0, 1, 0), (1, 0, 0))]
    n = np.repeat(np.array([f[0] for f in faces], float), 4, axis=0)
    u = np.repeat(np.array([f[1] for f in faces], float), 4, axis=0)
    v = np.repeat(np.array([f[2] for f in faces], float), 4, axis=0)
    su = np.tile([-1, 1, 1, -1], 6)[:, None]
    sv = np.tile([-1, -1, 1, 1], 6)[:, None]
    verts = np.zeros(24, dtype=VERTEX)
    verts["pos"] = (n + su * u + sv * v) * size + np.asarray(center)
    verts["normal"] = n
    verts["color"] = np.tile([[10, 20, 30, 255], [40, 50, 60, 128]], (12, 1))  # B, G, R, A
    verts["uv"] = np.stack([(su[:, 0] + 1) / 2, (1 - sv[:, 0]) / 2], axis=1)
    quad = np.array([0, 1, 2, 0, 2, 3])
    idx = (quad[None, :] + 4 * np.arange(6)[:, None]).reshape(-1).astype(np.uint16)
    return verts, idx


def bones(*items: tuple[str, int, tuple[float, ...], tuple[float, ...]]) -> np.ndarray:
    out = np.zeros(len(items), dtype=BONE)
    for i, (name, parent, rot, pos) in enumerate(items):
        out[i] = (name.encode(), parent, rot, pos)
    return out


def rigid_mesh(name: str, groups: list[tuple[int, int, tuple[str, ...] | None]],
               center: tuple[float, float, float] = (0, 0, 0)) -> PbaMesh:
    mesh = PbaMesh(mesh_type=RIGID, name=nm(name), center=np.array(center, "<f4"),
                   radius=np.array([0.87], "<f4"))
    for k, (tex, flags, civ) in enumerate(groups):
        v, idx = box_vertices(0.5, (k * 1.5, 0, 0))
        mesh.groups.append(FaceGroup(tex, flags, idx, None if civ is None else names(*civ),
                                     vertices=v, num_vertices=len(v)))
    return mesh


def animated_mesh(name: str, civ: bool) -> PbaMesh:
    """Two face groups over consecutive slices of one shared array (two boxes)."""
    v0, idx = box_vertices(0.5, (0, 0, 0))
    v1, _ = box_vertices(0.25, (0, 1, 0))
    g0 = FaceGroup(0, 0, idx, names("TRE_HUT", "TGE_HUT", "TEE_HUT") if civ else None,
                   num_vertices=24)
    g1 = FaceGroup(1, 2, idx[:18].copy(), names() if civ else None, num_vertices=24)
    return PbaMesh(mesh_type=ANIMATED, name=nm(name), vertices=np.concatenate([v0, v1]),
                   groups=[g0, g1], center=np.array([0, 0.5, 0], "<f4"),
                   radius=np.array([1.0], "<f4"))


def vertex_track(mesh: PbaMesh, node_id: int, keys: int = 3) -> VertexTrack:
    assert mesh.vertices is not None
    nv = len(mesh.vertices)
    lo = np.array([-1, -1, -1], "<f4")
    hi = np.array([1, 2, 1], "<f4")
    k = np.zeros(keys, dtype=vertex_key(nv))
    k["time"] = np.arange(keys) * 100
    base = (mesh.vertices["pos"] - lo) / (hi - lo) * 255
    lift = np.array([0, 30, 0])
    k["pos"] = np.clip(np.rint(base[None] + lift * np.arange(keys)[:, None, None] / 2), 0, 255)
    return VertexTrack(node_id, nv, lo, hi, k)


def rot_track(node: int) -> NodeTrack:
    keys = np.zeros(3, dtype=ROT_KEY)
    keys["time"] = [0, 250, 500]
    a = np.array([0, 0.5, 1.0])
    keys["rot"] = np.stack([np.cos(a / 2), np.zeros(3), np.sin(a / 2), np.zeros(3)], axis=1)
    return NodeTrack(node, ANIM_ROT, keys, np.array([0, 1, 2], "<f4"))


def rotpos_track(node: int) -> NodeTrack:
    keys = np.zeros(2, dtype=ROTPOS_KEY)
    keys["time"] = [0, 500]
    keys["rot"] = [[1, 0, 0, 0], [0.70710677, 0.70710677, 0, 0]]
    keys["pos"] = [[0, 0, 0], [0, 0, 3]]
    return NodeTrack(node, ANIM_ROTPOS, keys)


def model_rigid_v1() -> PbaDocument:
    """Version 1 (no civilisation lists): two damage states, bones placing them, a node clip."""
    doc = PbaDocument(version=1, name=nm("tge_altar"), civ_lists=False)
    c = np.cos(np.pi / 8)
    s = np.sin(np.pi / 8)
    doc.bones = bones(("BASE", -1, (c, 0, s, 0), (1, 0, 2)),
                      ("DESTRUIDO", -1, (1, 0, 0, 0), (0, 0, 0)))
    doc.textures = names("tge_altar", "tge_altar_alpha")
    doc.meshes = [rigid_mesh("BASE", [(0, 0, None), (1, 2, None)]),
                  rigid_mesh("DESTRUIDO", [(0, 0, None), (-1, 3, None)])]
    doc.sequences = [Sequence(nm("sway"), 500, [rot_track(0), rotpos_track(1)])]
    return doc


def model_animated_v2() -> PbaDocument:
    """Version 2: a vertex-animated mesh (first, track i = mesh i), a rigid one, civ lists,
    one sequence with a vertex track and node tracks of both kinds."""
    doc = PbaDocument(version=2, name=nm("tre_molino"))
    doc.bones = bones(("ROOT", -1, (1, 0, 0, 0), (0, 0, 0)),
                      ("BASE", 0, (1, 0, 0, 0), (0, 0, 5)),
                      ("ASPAS", 0, (1, 0, 0, 0), (0, 3, 0)))
    doc.textures = names("tre_molino", "tre_aspas")
    anim = animated_mesh("ASPAS", civ=True)
    doc.meshes = [anim, rigid_mesh("BASE", [(0, 1, ("TRE_MOLINO", "TGE_MOLINO"))])]
    doc.sequences = [Sequence(nm("girar"), 500, [rot_track(2), rotpos_track(1)],
                              [vertex_track(anim, 0)])]
    return doc


def model_flexible_v2() -> PbaDocument:
    v, idx = box_vertices()
    mesh = PbaMesh(mesh_type=FLEXIBLE, name=nm("BASE"), vertices=v,
                   blend_positions=np.arange(12, dtype="<f4").reshape(4, 3),
                   blend_normals=np.tile(np.array([0, 1, 0], "<f4"), (2, 1)),
                   groups=[FaceGroup(0, 0, idx)])
    return PbaDocument(version=2, name=nm("flex"), textures=names("flex"), meshes=[mesh])


def model_nodes_v2() -> PbaDocument:
    """Type 4: two face groups over slices; two vertex groups named after bones."""
    v0, idx = box_vertices(0.5, (0, 0, 0))
    v1, _ = box_vertices(0.5, (0, 2, 0))
    mesh = PbaMesh(mesh_type=NODES, name=nm("BASE"), num_vertices=48,
                   groups=[FaceGroup(0, 0, idx, num_vertices=24),
                           FaceGroup(0, 0, idx.copy(), num_vertices=24)],
                   vertex_groups=[VertexGroup(nm("hueso0"), v0), VertexGroup(nm("hueso1"), v1)],
                   civ_textures=names("TRE_CATAPULTA"))
    doc = PbaDocument(version=2, name=nm("catapulta"), textures=names("catapulta"), meshes=[mesh])
    doc.bones = bones(("hueso0", -1, (1, 0, 0, 0), (0, 0, 0)),
                      ("hueso1", -1, (1, 0, 0, 0), (0, 2, 0)))
    doc.sequences = [Sequence(nm("disparo"), 500, [rot_track(1)])]
    return doc


def model_v0(civ: bool) -> PbaDocument:
    doc = model_rigid_v1()
    doc.version = 0
    doc.civ_lists = civ
    doc.sequences = []
    if civ:
        for m in doc.meshes:
            for g in m.groups:
                g.civ_textures = names("TRE_X", "TGE_X")
    return doc


def model_odd_chunks() -> PbaDocument:
    """An unknown mesh type and an unknown chunk id kept raw, tails kept, trailing bytes."""
    doc = model_rigid_v1()
    doc.version = 2
    doc.civ_lists = True
    for m in doc.meshes:
        for g in m.groups:
            g.civ_textures = names()
    doc.meshes.append(PbaMesh(mesh_type=9, raw=struct.pack("<I", 9) + nm("RUINA") + b"\x01" * 7))
    doc.meshes.append(PbaMesh(mesh_type=0, chunk_id=0x0777, raw=b"\xaa" * 5))
    doc.meshes[0].tail = b"\x00\x01"
    doc.sequences.append(Sequence(chunk_id=0x0399, raw=b"odd sequence"))
    doc.bones_tail = b"\x05" * 4
    doc.trailing = b"\x00" * 3
    return doc


def model_two_dword() -> PbaDocument:
    doc = model_flexible_v2()
    doc.header_extra = 0
    return doc


BUILDERS = {
    "empty_v2": lambda: PbaDocument(version=2, name=nm("empty")),
    "rigid_v1": model_rigid_v1,
    "animated_v2": model_animated_v2,
    "flexible_v2": model_flexible_v2,
    "nodes_v2": model_nodes_v2,
    "rigid_v0": lambda: model_v0(False),
    "rigid_v0_civ": lambda: model_v0(True),
    "odd_chunks_v2": model_odd_chunks,
    "two_dword_v2": model_two_dword,
}


def build_all() -> dict[str, bytes]:
    return {name: write(make()) for name, make in BUILDERS.items()}


def regenerate() -> None:  # pragma: no cover - run by hand
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for name, data in build_all().items():
        (FIXTURES / f"{name}.pba").write_bytes(data)


FILES = build_all()


def ctx() -> Context:
    return Context(None, {})


# -- the worked layouts ----------------------------------------------------------------------
def test_worked_file_b11_exact_bytes() -> None:
    assert len(WORKED_B11) == 76
    assert FILES["empty_v2"] == WORKED_B11
    doc = read(WORKED_B11, ctx())
    assert (doc.version, doc.label, len(doc.bones), len(doc.textures)) == (2, "empty", 0, 0)
    assert doc.meshes == [] and doc.sequences == []
    assert write(doc) == WORKED_B11


def _pack_vertices(v: np.ndarray) -> bytes:
    out = b""
    for r in v:  # independent of numpy's record layout: one struct per vertex (tiny data)
        out += struct.pack("<6f4B2f", *r["pos"], *r["normal"], *r["color"], *r["uv"])
    return out


def test_hand_packed_rigid_v1_matches_writer() -> None:
    """Version 1, one bone, one texture, one rigid mesh of one group, no sequences, packed
    field by field from spec b.3-b.5 (no civilisation list in version 1)."""
    v, idx = box_vertices()
    bone = struct.pack("<32si4f3f", b"BASE", -1, 1, 0, 0, 0, 1, 2, 3)
    group = struct.pack("<iII", 0, 2, len(idx)) + idx.astype("<u2").tobytes()
    body = (struct.pack("<I32s3ff", 1, b"BASE", 0, 0, 0, 0.87) + struct.pack("<I", 1) + group
            + struct.pack("<I", 24) + _pack_vertices(v))
    mesh = struct.pack("<HI", 0x0303, 6 + len(body)) + body
    geoms = struct.pack("<HII", 0x0302, 10 + len(mesh), 1) + mesh
    bones_chunk = struct.pack("<HII", 0x0306, 10 + 64, 1) + bone
    tex = struct.pack("<I32s", 1, b"tex")
    anims = struct.pack("<HII", 0x0304, 10, 0)
    main_body = nm("hand") + bones_chunk + tex + geoms + anims
    packed = struct.pack("<IHI", 1, 0x0301, 6 + len(main_body)) + main_body

    doc = PbaDocument(version=1, name=nm("hand"), civ_lists=False, textures=names("tex"),
                 bones=bones(("BASE", -1, (1, 0, 0, 0), (1, 2, 3))))
    doc.meshes = [PbaMesh(mesh_type=RIGID, name=nm("BASE"), radius=np.array([0.87], "<f4"),
                          groups=[FaceGroup(0, 2, idx, None, vertices=v)])]
    assert write(doc) == packed
    back = read(packed, ctx())
    assert back.civ_lists is False
    assert back.meshes[0].groups[0].alpha_flags == 2
    np.testing.assert_array_equal(back.meshes[0].groups[0].vertices["pos"], v["pos"])
    # MAIN length = file size - 4 (the spec's sniff check holds for our files)
    assert struct.unpack_from("<I", packed, 6)[0] == len(packed) - 4


def test_hand_packed_animated_mesh_v2_matches_writer() -> None:
    """A type-3 mesh chunk of version 2 (b.5): shared vertices first, then the face groups with
    their slice sizes and civilisation lists."""
    mesh = animated_mesh("ASPAS", civ=True)
    assert mesh.vertices is not None
    body = struct.pack("<I32s3ff", 3, b"ASPAS", 0, 0.5, 0, 1.0)
    body += struct.pack("<I", 48) + _pack_vertices(mesh.vertices) + struct.pack("<I", 2)
    for g in mesh.groups:
        body += struct.pack("<iIII", g.texture_id, g.alpha_flags, g.num_vertices,
                            len(g.indices)) + g.indices.astype("<u2").tobytes()
        civ = g.civ_textures.tolist() if g.civ_textures is not None else []
        body += struct.pack("<I", len(civ)) + b"".join(c.ljust(32, b"\0") for c in civ)
    chunk = struct.pack("<HI", 0x0303, 6 + len(body)) + body
    data = write(PbaDocument(version=2, name=nm("m"), meshes=[mesh]))
    start = data.index(struct.pack("<H", 0x0303))
    assert data[start:start + len(chunk)] == chunk
    back = read(data, ctx()).meshes[0]
    assert back.tail == b"" and back.raw is None and len(back.groups) == 2


def test_hand_packed_sequence_layout() -> None:
    """A sequence chunk: name, duration, node tracks (chunks), vertex tracks (chunks)."""
    doc = model_animated_v2()
    data = write(doc)
    seq = doc.sequences[0]
    anim_pool = data.index(struct.pack("<H", 0x0304) + struct.pack("<I", len(data) - 4 - (
        data.index(struct.pack("<H", 0x0304)) - 4)))
    pos = anim_pool + 6
    assert struct.unpack_from("<I", data, pos)[0] == 1  # numSequences
    sid, slen = struct.unpack_from("<HI", data, pos + 4)
    assert sid == 0x0305 and pos + 4 + slen == len(data)
    body = pos + 10
    assert data[body:body + 32] == nm("girar")
    assert struct.unpack_from("<II", data, body + 32) == (500, 2)
    # ROT track: chunk header, node id, key count, type 1, fixed position, 3 x 20-byte keys
    tid, tlen = struct.unpack_from("<HI", data, body + 40)
    assert (tid, tlen) == (0x0307, 6 + 12 + 12 + 3 * 20)
    assert struct.unpack_from("<III3f", data, body + 46) == (2, 3, 1, 0.0, 1.0, 2.0)
    at = body + 40 + tlen
    tid, tlen = struct.unpack_from("<HI", data, at)
    assert tlen == 6 + 12 + 2 * 32
    assert struct.unpack_from("<III", data, at + 6) == (1, 2, ANIM_ROTPOS)
    at += tlen
    assert struct.unpack_from("<I", data, at)[0] == 1  # numVertexTracks
    vt = seq.vertex_tracks[0]
    tid, tlen = struct.unpack_from("<HI", data, at + 4)
    assert tlen == 6 + 12 + 24 + 3 * (4 + 48 * 3)
    assert struct.unpack_from("<III6f", data, at + 10) == (0, 3, 48, -1, -1, -1, 1, 2, 1)
    first_key = at + 10 + 36
    assert struct.unpack_from("<I", data, first_key)[0] == 0
    assert data[first_key + 4:first_key + 7] == bytes(vt.keys["pos"][0, 0])


# -- fixtures: every variant round-trips and matches the checked-in files ---------------------
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_fixture_round_trip(name: str) -> None:
    data = FILES[name]
    c = ctx()
    doc = read(data, c)
    assert write(doc) == data
    assert sniff(data[:64])


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_fixture_files_current(name: str) -> None:
    path = FIXTURES / f"{name}.pba"
    assert path.is_file(), f"run python tests/test_pba.py to create {path}"
    assert path.read_bytes() == FILES[name]
    assert write(read(path.read_bytes(), ctx())) == path.read_bytes()


def test_version1_has_no_civ_lists_and_rigid_content() -> None:
    doc = read(FILES["rigid_v1"], ctx())
    assert doc.version == 1 and doc.civ_lists is False
    assert [m.label for m in doc.meshes] == ["BASE", "DESTRUIDO"]
    g = doc.meshes[0].groups
    assert [(x.texture_id, x.alpha_flags, len(x.indices)) for x in g] == [(0, 0, 36), (1, 2, 36)]
    assert g[0].civ_textures is None
    assert g[0].vertices is not None and len(g[0].vertices) == 24
    assert doc.bones["rot"][0][0] == pytest.approx(np.cos(np.pi / 8))
    seq = doc.sequences[0]
    assert seq.duration == 500
    assert [(t.node_id, t.anim_type, len(t.keys)) for t in seq.node_tracks] == [
        (0, ANIM_ROT, 3), (1, ANIM_ROTPOS, 2)]
    assert seq.node_tracks[0].position is not None
    assert list(seq.node_tracks[0].position) == [0, 1, 2]


def test_version2_animated_and_civ_lists() -> None:
    doc = read(FILES["animated_v2"], ctx())
    anim = doc.meshes[0]
    assert anim.mesh_type == ANIMATED and anim.vertices is not None and len(anim.vertices) == 48
    assert [g.num_vertices for g in anim.groups] == [24, 24]
    civ = anim.groups[0].civ_textures
    assert civ is not None and civ.tolist() == [b"TRE_HUT", b"TGE_HUT", b"TEE_HUT"]
    vt = doc.sequences[0].vertex_tracks[0]
    assert (vt.node_id, vt.num_vertices, len(vt.keys)) == (0, 48, 3)
    assert vt.keys["time"].tolist() == [0, 100, 200]
    # v = min + byte * (max - min) / 255 : key 0 reproduces the base within the 1/255 box
    assert np.abs(vt.positions()[0] - anim.vertices["pos"]).max() <= 3 / 255 / 2 + 1e-6


def test_version0_reads_like_1_then_retries_like_2() -> None:
    c = ctx()
    plain = read(FILES["rigid_v0"], c)
    assert plain.version == 0 and plain.civ_lists is False
    c2 = ctx()
    civ = read(FILES["rigid_v0_civ"], c2)
    assert civ.civ_lists is True
    assert civ.meshes[0].raw is None and civ.meshes[0].tail == b""
    g = civ.meshes[0].groups[0].civ_textures
    assert g is not None and g.tolist() == [b"TRE_X", b"TGE_X"]
    assert any(n.code == "pba.version0" and "with civ" in n.message for n in c2.notes)
    assert write(civ) == FILES["rigid_v0_civ"]


def test_unverified_types_parse_from_seed_layout() -> None:
    flex = read(FILES["flexible_v2"], ctx()).meshes[0]
    assert flex.raw is None and flex.mesh_type == FLEXIBLE
    assert flex.blend_positions is not None and flex.blend_positions.shape == (4, 3)
    assert flex.vertices is not None and len(flex.vertices) == 24
    assert len(flex.groups) == 1 and len(flex.groups[0].indices) == 36
    nodes = read(FILES["nodes_v2"], ctx()).meshes[0]
    assert nodes.raw is None and nodes.num_vertices == 48
    assert [vg.name.rstrip(b"\0") for vg in nodes.vertex_groups] == [b"hueso0", b"hueso1"]
    assert nodes.civ_textures is not None and nodes.civ_textures.tolist() == [b"TRE_CATAPULTA"]
    info = SPEC.info(read(FILES["nodes_v2"], ctx()))
    assert info["unverified_mesh_types"] == ["nodes"]
    assert info["meshes"][0]["unverified"] is True


def test_unverified_layout_misfit_falls_back_to_raw() -> None:
    """A type-4 chunk whose guessed layout does not end at the chunk end is kept raw."""
    data = bytearray(FILES["nodes_v2"])
    doc = read(bytes(data), ctx())
    doc.meshes[0].tail = b"\x01\x02\x03"  # now the guessed layout leaves bytes over
    odd = write(doc)
    c = ctx()
    back = read(odd, c)
    assert back.meshes[0].raw is not None and back.meshes[0].mesh_type == NODES
    assert any(n.code == "pba.mesh_unparsed" for n in c.notes)
    assert write(back) == odd


def test_odd_chunks_kept_raw_with_notes() -> None:
    c = ctx()
    doc = read(FILES["odd_chunks_v2"], c)
    codes = {n.code for n in c.notes}
    assert {"pba.unknown_mesh_type", "pba.unknown_chunk", "pba.mesh_tail",
            "pba.bones_tail"} <= codes
    assert doc.meshes[2].raw is not None and doc.meshes[2].mesh_type == 9
    assert doc.meshes[3].chunk_id == 0x0777 and doc.meshes[3].raw == b"\xaa" * 5
    assert doc.sequences[1].raw == b"odd sequence"
    assert doc.trailing == b"\x00" * 3 and doc.bones_tail == b"\x05" * 4
    info = SPEC.info(doc)
    assert info["meshes"][2]["kept_raw_bytes"] == 4 + 32 + 7


def test_two_dword_header_accepted_with_note() -> None:
    c = ctx()
    doc = read(FILES["two_dword_v2"], c)
    assert doc.header_extra == 0 and doc.version == 2
    assert any(n.code == "pba.two_dword_header" for n in c.notes)
    assert SPEC.info(doc)["header_dwords"] == 2


def test_info_reports_version_layout_counts() -> None:
    info = SPEC.info(read(FILES["animated_v2"], ctx()))
    assert info["version"] == 2 and info["layout"] == "civilisation lists"
    assert info["bones"] == 3 and info["textures"] == ["tre_molino", "tre_aspas"]
    assert [(m["name"], m["kind"], m["vertices"], m["triangles"]) for m in info["meshes"]] == [
        ("ASPAS", "animated", 48, 18), ("BASE", "rigid", 24, 12)]
    assert info["sequences"][0] == {"name": "girar", "duration_ms": 500, "node_tracks": 2,
                                    "vertex_tracks": 1, "node_track_types": ["ROT", "ROTPOS"]}


# -- rejection -------------------------------------------------------------------------------
def test_rejects_other_pba_formats_and_versions() -> None:
    with pytest.raises(BadMagicError, match="main chunk id"):
        read(b"\x02\0\0\0" + b"\x10\x00" + b"\0" * 40, ctx())
    bad = bytearray(WORKED_B11)
    bad[0] = 3
    with pytest.raises(UnsupportedVersionError, match="version"):
        read(bytes(bad), ctx())
    assert not sniff(bytes(bad[:64]))
    assert not sniff(b"PK\x03\x04" + b"\0" * 60)


def test_truncated_main_chunk_names_field() -> None:
    with pytest.raises(TruncatedError) as e:
        read(WORKED_B11[:60], ctx())
    assert e.value.field == "main"
    assert "pba: at 0x" in str(e.value)


def test_bad_chunk_length_is_corrupt() -> None:
    bad = bytearray(WORKED_B11)
    struct.pack_into("<I", bad, 0x2C, 3)  # bones chunk length 3 < 6
    with pytest.raises(FormatError, match="shorter than its header"):
        read(bytes(bad), ctx())


@pytest.mark.parametrize("name", ["rigid_v1", "animated_v2", "nodes_v2", "odd_chunks_v2",
                                  "rigid_v0_civ"])
def test_truncations_fail_cleanly(name: str) -> None:
    assert assert_truncations_fail_cleanly(SPEC, FILES[name]) > 0


@pytest.mark.parametrize(("name", "count"), [("animated_v2", 2000), ("rigid_v1", 1000),
                                             ("nodes_v2", 500), ("flexible_v2", 500)])
def test_mutations_fail_cleanly(name: str, count: int) -> None:
    assert_mutations_fail_cleanly(SPEC, FILES[name], count=count, seed=6)


def test_crash_inputs_replay_cleanly() -> None:
    replay_crashes(SPEC)


def test_corpus_round_trip() -> None:
    files = corpus_files("pba", "*.pba")
    for f in files:
        data = f.read_bytes()
        assert write(read(data, ctx())) == data, f.name


def test_make_sample_size_and_validity() -> None:
    data = SPEC.make_sample(6_000_000)
    assert 3_000_000 < len(data) < 9_000_000
    doc = read(data, ctx())
    assert write(doc) == data
    assert doc.meshes[0].mesh_type == ANIMATED and len(doc.sequences[0].vertex_tracks) == 1


if __name__ == "__main__":  # pragma: no cover
    regenerate()
