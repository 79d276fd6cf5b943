"""Modern SPLASHPACK (versions 20..26): fixtures made by our writer read back byte for byte (main
file and .vram), match the byte layouts of specs/splashpack-modern.md, convert to valid glTF the
right way up with textures, skins, clips and lights, come back from glTF, respect the runtime's
limits, tell the PS1Godot fork apart, and fail cleanly when damaged."""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import FormatError, LimitError, UnsupportedVersionError
from gamemesh.formats.splashpack import SPEC
from gamemesh.formats.splashpack.modern import layout as ml
from gamemesh.formats.splashpack.modern.document import ModernDocument
from gamemesh.formats.splashpack.modern.from_scene import from_scene_modern
from gamemesh.formats.splashpack.modern.read import read_modern, read_vram
from gamemesh.formats.splashpack.modern.write import write_modern, write_vram
from gamemesh.formats.splashpack.read import sniff
from gamemesh.registry import Context
from gamemesh.scene import Mesh, Node, Scene, Skin
from gamemesh.textures import image_rgba
from helpers import assert_mutations_fail_cleanly, assert_truncations_fail_cleanly, replay_crashes
from splashpack_modern_fixtures import (
    FIXTURES,
    VERSIONS,
    checker,
    files,
    interior_document,
    quad,
    rich_document,
    scene,
)

HEADER_SIZES = {20: 120, 21: 128, 22: 144, 23: 144, 24: 148, 25: 156, 26: 156}


def fixture(v: int) -> tuple[bytes, bytes]:
    return ((FIXTURES / f"v{v}.splashpack").read_bytes(), (FIXTURES / f"v{v}.vram").read_bytes())


# -- native layer --------------------------------------------------------------------------------
@pytest.mark.parametrize("v", VERSIONS)
def test_fixtures_read_back_byte_for_byte_with_their_sidecar(v: int) -> None:
    main, vram = fixture(v)
    doc = gamemesh.read_native(FIXTURES / f"v{v}.splashpack")
    assert isinstance(doc, ModernDocument) and doc.version == v
    assert doc.sidecars == {"vram": f"v{v}.vram"} and doc.vram is not None
    assert SPEC.write(doc, Context()) == main
    assert write_vram(doc.vram) == vram
    assert [n.decode() for n in doc.names] == ["Floor", "Crate", "Pillar"]
    assert [len(m) for m in doc.meshes] == [2, 2, 16]
    assert len(doc.skins) == 1 and len(doc.animations) == 1
    assert len(doc.lights) == (1 if v >= 24 else 0)


@pytest.mark.parametrize("v", VERSIONS)
def test_the_writer_still_makes_the_checked_in_fixtures(v: int) -> None:
    assert files(v) == fixture(v)


@pytest.mark.parametrize("v", VERSIONS)
def test_fixtures_match_the_spec_byte_layout(v: int) -> None:
    data, vram = fixture(v)
    assert data[:2] == b"SP" and struct.unpack_from("<H", data, 2)[0] == v
    lua, go, atlas, clut = struct.unpack_from("<4H", data, 4)
    assert (lua, go, atlas, clut) == (0, 3, 1, 1)
    hsize = HEADER_SIZES[v]
    # The cursor region starts right after the header: 3 GameObjects of 92 bytes, the BVH
    # (32-byte nodes, then 4-byte refs; the scene is exterior), then the vestigial 12-byte atlas
    # and CLUT descriptors (no colliders, nav or rooms here).
    objs = [struct.unpack_from("<I3i9iHhIHBBI6i", data, hsize + 92 * k) for k in range(3)]
    nodes, refs, scene_type = struct.unpack_from("<3H", data, 32)
    assert scene_type == 0 and nodes == 1 and refs == 2 + 2 + 16  # 20 triangles fit one leaf
    bvh_at = hsize + 92 * 3
    root = struct.unpack_from("<6i4H", data, bvh_at)
    assert root[6:] == (0xFFFF, 0xFFFF, 0, 20)
    # The root box holds every GameObject's box (same world 20.12 frame).
    assert all(root[a] <= o[17 + a] and o[20 + a] <= root[3 + a] for o in objs for a in range(3))
    pairs = struct.unpack_from(f"<{2 * refs}H", data, bvh_at + 32)
    assert sorted(zip(pairs[::2], pairs[1::2], strict=True)) == \
        [(k, t) for k, n in enumerate((2, 2, 16)) for t in range(n)]
    cursor_end = bvh_at + 32 * nodes + 4 * refs + 12 + 12
    assert objs[0][0] == cursor_end  # the first Tri array follows at once (4-aligned)
    assert [o[13] for o in objs] == [2, 2, 16]  # polyCount
    assert [o[15] & ml.GO_SKINNED for o in objs] == [0, 0, ml.GO_SKINNED]
    assert all(o[16] == 0xFFFF for o in objs)  # no interactable
    atlas_desc = struct.unpack_from("<IHHHH", data, bvh_at + 32 * nodes + 4 * refs)
    assert atlas_desc[0] == 0 and atlas_desc[1:3] == (64, 256)  # 4 bpp, 256 rows
    # The name table: u8 length, bytes, NUL.
    (names_at,) = struct.unpack_from("<I", data, 60)
    assert data[names_at:names_at + 7] == b"\x05Floor\x00"
    # Tri: the pillar's triangles are untextured (tpage 0xFFFF), the floor's are 4 bpp with
    # the dither bit, their CLUT word x in units of 16.
    pillar = objs[2][0]
    assert struct.unpack_from("<H", data, pillar + 44)[0] == 0xFFFF
    tpage, cx, cy = struct.unpack_from("<3H", data, objs[0][0] + 44)
    assert tpage & 0x180 == 0 and tpage & 0x200 and (cx, cy) != (0, 0)
    # Version-gated header fields.
    if v >= 24:
        (lights_at,) = struct.unpack_from("<I", data, 144)
        assert struct.unpack_from("<HH", data, lights_at) == (1, 0)
        assert data[-6:] == b"\x00lamp\x00"[-6:]
    # .vram: 'VR', counts, then the atlas record with its VRAM position and size.
    assert vram[:2] == b"VR" and struct.unpack_from("<HHB", vram, 2) == (1, 1, 0)
    x, _y, w, h = struct.unpack_from("<4H", vram, 8)
    assert (w, h) == (64, 256) and x % 64 == 0 and x >= 320


def test_header_size_follows_the_version_alone() -> None:
    for v, size in HEADER_SIZES.items():
        assert ml.HEADERS[v].itemsize == size


def test_sniff_and_info_name_version_sidecars_and_sections(tmp_path: Path) -> None:
    data, _ = fixture(24)
    assert sniff(data[:64])
    got = gamemesh.info(FIXTURES / "v24.splashpack")
    native = got["native"]
    assert native["version"] == 24 and native["header_size"] == 148
    assert native["sidecars"] == {"vram": "v24.vram"}
    assert native["vram"] == {"atlases": 1, "atlas_depths": {"4bpp": 1}, "cluts": 1, "fonts": 0}
    assert native["untextured_triangles"] == 16 and native["point_lights"] == 1
    assert native["skinned_meshes"] == [{"object": 2, "bones": 2,
                                         "clips": [{"name": "bend", "fps": 30, "frames": 30}]}]
    assert native["animations"] == [{"name": "slide", "tracks": 1}]
    json.dumps(got)


def test_spu_sidecar_is_kept_byte_for_byte(tmp_path: Path) -> None:
    main, vram = fixture(23)
    (tmp_path / "s.splashpack").write_bytes(main)
    (tmp_path / "s.vram").write_bytes(vram)
    clip = struct.pack("<IHBB", 6, 22050, 1, 0) + b"\x01" * 6 + b"\0\0"
    spu = b"SA" + struct.pack("<H", 1) + clip
    (tmp_path / "s.spu").write_bytes(spu)
    doc = gamemesh.read_native(tmp_path / "s.splashpack")
    assert doc.spu == spu and doc.sidecars["spu"] == "s.spu"
    (tmp_path / "s.spu").write_bytes(spu[:-3])
    with pytest.raises(FormatError, match="spu"):
        gamemesh.read_native(tmp_path / "s.splashpack")


# -- to glTF ------------------------------------------------------------------------------------
def test_v24_converts_to_gltf_the_right_way_up_with_texture_skin_clips_and_light(
        tmp_path: Path, gltf_validator: Any) -> None:
    out = tmp_path / "v24.glb"
    gamemesh.convert(FIXTURES / "v24.splashpack", out)
    report = gltf_validator(out)
    assert report["errors"] == 0
    s = gamemesh.load(out)
    names = [n.name for n in s.nodes]
    assert names[:3] == ["Floor", "Crate", "Pillar"] and "lamp" in names
    floor = s.meshes[s.nodes[0].mesh].primitives[0]  # type: ignore[index]
    # Floor at y = 0, 4 units wide (GTEScaling 100 in, 100 assumed out), normals up.
    assert np.allclose(floor.positions[:, 1], 0, atol=1e-3)
    assert np.allclose(np.abs(floor.positions[:, [0, 2]]).max(), 2.0, atol=0.01)
    assert floor.normals is not None and (floor.normals[:, 1] > 0.99).all()
    crate = s.nodes[1]
    assert np.allclose(crate.translation, (1.0, 0.0, -1.0), atol=1e-3)
    # Texture: the page decodes to the checker's four colours where the floor samples it.
    img = image_rgba(s.images[s.materials[floor.material].base_color_texture.image])  # type: ignore[index,union-attr]
    assert img is not None
    uv = floor.texcoords[0]
    texels = img[(uv[:, 1] * 256).astype(int), (uv[:, 0] * 256).astype(int)]
    colours = {tuple(int(c) for c in t[:3]) for t in texels}
    assert colours <= {(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)}
    assert len(colours) >= 2
    # Skin: two flat joints under the pillar object, the mesh on an untransformed root node
    # (glTF ignores a skinned mesh node's own transform and the validator warns about one
    # under a parent), a 30-frame looping clip bending the top, closed by its first pose.
    pillar = s.nodes[names.index("Pillar_mesh")]
    assert s.parents()[names.index("Pillar_mesh")] is None
    assert pillar.skin is not None and len(s.skins[pillar.skin].joints) == 2
    bend = next(a for a in s.animations if a.name == "bend")
    assert bend.key_count == 31 and abs(bend.duration - 1.0) < 1e-6
    top = s.skins[pillar.skin].joints[1]
    rot = next(c for c in bend.channels if c.node == top and c.path == "rotation")
    # Mid-clip the top bone turns 45 degrees about Z.
    assert abs(2 * np.degrees(np.arccos(abs(rot.values[15][3]))) - 45) < 1.0
    slide = next(a for a in s.animations if a.name == "slide")
    tr = slide.channels[0]
    assert s.nodes[tr.node].name == "Crate" and np.allclose(tr.values[1], (1, 0.5, -1),
                                                            atol=0.03)
    # Point light as KHR_lights_punctual.
    assert len(s.lights) == 1 and s.lights[0].name == "lamp"
    assert np.allclose(s.lights[0].color, (1, 128 / 255, 64 / 255), atol=1e-3)
    assert abs(s.lights[0].intensity - 1.5) < 1e-3 and abs(s.lights[0].range - 4.0) < 0.01  # type: ignore[operator]
    lamp = s.nodes[names.index("lamp")]
    # One raw unit is 100/4096 units at GTEScaling 100.
    assert lamp.light == 0 and np.allclose(lamp.translation, (0, 2, 0), atol=0.025)


def test_skinned_vertices_follow_their_bones(tmp_path: Path) -> None:
    """The glTF skin poses the pillar like the runtime would: frame 15 moves the top ring."""
    s = gamemesh.load(FIXTURES / "v23.splashpack")
    pillar = next(n for n in s.nodes if n.name == "Pillar_mesh")
    prim = s.meshes[pillar.mesh].primitives[0]  # type: ignore[index]
    assert prim.joints is not None and set(np.unique(prim.joints[:, 0])) == {0, 1}
    top = prim.positions[prim.joints[:, 0] == 1]
    assert top[:, 1].min() > 0.99  # the bind pose: the top bone's corners are at y 1..2


def test_missing_vram_is_a_warning_and_untextured(tmp_path: Path) -> None:
    main, _ = fixture(23)
    (tmp_path / "alone.splashpack").write_bytes(main)
    s = gamemesh.load(tmp_path / "alone.splashpack")
    assert "splashpack.vram_missing" in {n.code for n in s.notes}
    assert not s.images


# -- from glTF ----------------------------------------------------------------------------------
def test_gltf_round_trip_keeps_geometry_texels_skin_clip_and_light(tmp_path: Path) -> None:
    gamemesh.convert(FIXTURES / "v24.splashpack", tmp_path / "a.glb")
    report = gamemesh.convert(tmp_path / "a.glb", tmp_path / "b.splashpack")  # 24: its source
    assert sorted(Path(p).name for p in report.outputs) == ["b.splashpack", "b.vram"]
    a = read_modern(fixture(24)[0])
    b = gamemesh.read_native(tmp_path / "b.splashpack")
    assert b.version == 24 and b.names == a.names
    for x, y in zip(a.meshes, b.meshes, strict=True):
        assert (x["v"] == y["v"]).all() and (x["uv"] == y["uv"]).all()
        assert (x["tpage"] == y["tpage"]).all() and (x["color"] == y["color"]).all()
    assert (a.objects["pos"] == b.objects["pos"]).all()
    assert (a.skins[0].bone_index == b.skins[0].bone_index).all()
    ma, mb = a.skins[0].clips[0].matrices, b.skins[0].clips[0].matrices
    assert np.abs(ma["r"].astype(int) - mb["r"]).max() <= 2
    assert np.abs(ma["t"].astype(int) - mb["t"]).max() <= 2
    assert (a.animations[0].tracks[0].keys == b.animations[0].tracks[0].keys).all()
    assert (a.lights[0].record == b.lights[0].record).all()
    # The texture comes back as the same 4 bpp page with the same palette.
    va, vb = read_vram(fixture(24)[1]), read_vram((tmp_path / "b.vram").read_bytes())
    assert [w.tolist() for w in va.clut_words] == [w.tolist() for w in vb.clut_words]
    assert len(va.atlas_pixels) == len(vb.atlas_pixels) == 1
    codes = {n.code for n in report.notes}
    assert "splashpack.not_built" in codes


def test_a_new_exterior_scene_gets_a_bvh_and_no_bvh_warning(tmp_path: Path) -> None:
    notes = gamemesh.save(scene(lights=False), tmp_path / "new.splashpack")
    doc = gamemesh.read_native(tmp_path / "new.splashpack")
    assert isinstance(doc, ModernDocument) and doc.hfield("scene_type") == 0
    assert len(doc.bvh_nodes) == 1 and len(doc.bvh_refs) == 20
    assert doc.bvh_nodes[0]["aabb"].tolist() == [
        int(doc.objects["aabb"][:, a].min()) if a < 3 else int(doc.objects["aabb"][:, a].max())
        for a in range(6)]
    msg = next(n.message for n in notes if n.code == "splashpack.not_built")
    assert "BVH" not in msg and "navigation" in msg


def test_version_option_and_default(tmp_path: Path) -> None:
    plain = scene(lights=False)
    gamemesh.save(plain, tmp_path / "d.splashpack")
    assert gamemesh.read_native(tmp_path / "d.splashpack").version == 21
    gamemesh.save(scene(), tmp_path / "l.splashpack", splash_version=24)
    assert gamemesh.read_native(tmp_path / "l.splashpack").version == 24
    notes = gamemesh.save(scene(), tmp_path / "n.splashpack", splash_version=23)
    assert "splashpack.lights_dropped" in {n.code for n in notes}
    gamemesh.save(plain, tmp_path / "old.bin", splash_version=1)
    old = gamemesh.read_native(tmp_path / "old.bin")
    assert old.version == 1 and old.layout == "G" and not (tmp_path / "old.vram").exists()
    gamemesh.save(plain, tmp_path / "h.bin", layout="H")
    assert gamemesh.read_native(tmp_path / "h.bin").layout == "H"
    with pytest.raises(ValueError, match="splash-version"):
        gamemesh.save(plain, tmp_path / "x.splashpack", splash_version=19)


def test_runtime_limits_are_limit_errors() -> None:
    s = Scene()
    mesh = s.add_mesh(Mesh(primitives=[quad(1.0)]))
    for k in range(17):
        body = s.add_node(Node(name=f"m{k}", mesh=mesh))
        j = s.add_node(Node(name=f"j{k}"), parent=body)
        s.nodes[body].skin = s.add_skin(Skin(joints=[j]))
    with pytest.raises(LimitError, match="16 skinned meshes"):
        from_scene_modern(s, Context())
    s = Scene()
    body = s.add_node(Node(name="many", mesh=s.add_mesh(Mesh(primitives=[quad(1.0)]))))
    joints = [s.add_node(Node(name=f"b{k}"), parent=body) for k in range(65)]
    s.nodes[body].skin = s.add_skin(Skin(joints=joints))
    with pytest.raises(LimitError, match="64 bones"):
        from_scene_modern(s, Context())
    s = Scene()
    pos = np.random.default_rng(1).uniform(-1, 1, (3 * 70_000, 3)).astype(np.float32)
    from gamemesh.scene import Primitive

    s.add_node(Node(mesh=s.add_mesh(Mesh(primitives=[Primitive(positions=pos)]))))
    with pytest.raises(LimitError, match="65535 triangles"):
        from_scene_modern(s, Context())


def test_long_names_are_cut_with_a_note() -> None:
    s = Scene()
    s.add_node(Node(name="x" * 40, mesh=s.add_mesh(Mesh(primitives=[quad(1.0)]))))
    ctx = Context()
    doc = from_scene_modern(s, ctx)
    assert doc.names == [b"x" * 24] and "splashpack.name_cut" in {n.code for n in ctx.notes}


# -- the PS1Godot fork ---------------------------------------------------------------------------
@pytest.mark.parametrize("v", [27, 30, 32])
def test_fork_only_versions_are_refused_by_name(v: int) -> None:
    data = bytearray(fixture(23)[0])
    data[2:4] = v.to_bytes(2, "little")
    with pytest.raises(UnsupportedVersionError, match="PS1Godot"):
        SPEC.read(bytes(data), Context())


def test_fork_sidecar_name_is_refused_by_name(tmp_path: Path) -> None:
    main, vram = fixture(23)
    (tmp_path / "scene.splashpack").write_bytes(main)
    (tmp_path / "scene.splashpack.vram").write_bytes(vram)
    with pytest.raises(UnsupportedVersionError, match="PS1Godot"):
        gamemesh.read_native(tmp_path / "scene.splashpack")
    # A v20 file from PS1Godot's f0593443 has the upstream layout: it is read, sidecar and all.
    main20, vram20 = fixture(20)
    (tmp_path / "old.splashpack").write_bytes(main20)
    (tmp_path / "old.splashpack.vram").write_bytes(vram20)
    doc = gamemesh.read_native(tmp_path / "old.splashpack")
    assert doc.version == 20 and doc.sidecars == {"vram": "old.splashpack.vram"}


def _skin_block(data: bytes) -> dict[str, Any]:
    """The first skinned mesh of a pack walked with struct from the byte rules of spec-modern
    §4.2 and §13 (splashedit-ng's skincheck.py reads v26 the same way): header counts, bone
    per corner, clips, then for v26 align 2, bones x i16[3] bind positions, bones x (u8 len,
    name, NUL)."""
    version, _, ngo = struct.unpack_from("<HHH", data, 2)
    hsize = HEADER_SIZES[version]
    (table,) = struct.unpack_from("<I", data, 116)
    at, _nlen, _, _, _, name_at = struct.unpack_from("<IBBBBI", data, table)
    go, bones, nclip = struct.unpack_from("<HBB", data, at)
    (poly,) = struct.unpack_from("<H", data, hsize + 92 * go + 52)
    p = (at + 4 + poly * 3 + 3) & ~3
    for _ in range(nclip):
        p += 1 + data[p] + 1 + 2
        p = (p + 1) & ~1
        (frames,) = struct.unpack_from("<H", data, p)
        p += 2 + frames * bones * 24
    bind: list[tuple[int, ...]] = []
    joints: list[bytes] = []
    if version >= 26:
        p = (p + 1) & ~1
        bind = [struct.unpack_from("<3h", data, p + 6 * b) for b in range(bones)]
        p += 6 * bones
        for _ in range(bones):
            joints.append(data[p + 1:p + 1 + data[p]])
            assert data[p + 1 + data[p]] == 0
            p += data[p] + 2
    return {"go": go, "bones": bones, "bind": bind, "joints": joints, "end": p,
            "name_at": name_at, "objects": ngo}


@pytest.mark.parametrize("v", [25, 26])
def test_upstream_25_and_26_read_and_write_by_their_layout(v: int, tmp_path: Path) -> None:
    """v25: a 156-byte header with the renderer's ordering-table and bump-allocator sizes at
    +148/+152 (the sizes psxsplash's renderer fixed before: 2048*3 and 8096*24); v26 adds
    the skin's bind positions and joint names after its clips, ending where the skin's name
    starts. Both round trip byte for byte and read back with the v24 fixture's counts."""
    data, vram = fixture(v)
    assert struct.unpack_from("<H", data, 2)[0] == v
    assert struct.unpack_from("<II", data, 148) == (6144, 194304)
    doc = SPEC.read(data, Context())
    assert doc.header.dtype.itemsize == 156
    assert write_modern(doc) == data and write_vram(read_vram(vram)) == vram
    ref = SPEC.read(fixture(24)[0], Context())
    counts = [(len(d.objects), d.triangle_count(), len(d.bvh_refs), len(d.skins),
               len(d.skins[0].clips), len(d.animations), len(d.lights)) for d in (doc, ref)]
    assert counts[0] == counts[1] == (3, 20, 20, 1, 1, 1, 1)
    blk = _skin_block(data)
    assert (blk["go"], blk["bones"]) == (2, 2)
    if v == 26:
        # hip at the pillar's origin, top 1 unit up: -1/100 * 4096 = -41 (Y negated).
        assert blk["bind"] == [(0, 0, 0), (0, -41, 0)]
        assert blk["joints"] == [b"hip", b"top"]
        assert blk["end"] == blk["name_at"]  # the joint names end where the name starts
        assert data[blk["name_at"]:blk["name_at"] + 7] == b"Pillar\0"
        assert doc.skins[0].joint_names == [b"hip", b"top"]
    else:
        assert doc.skins[0].bind is None and blk["bind"] == []
    # glTF and back (the version kept): joint names, bind positions and the renderer sizes.
    gamemesh.convert(FIXTURES / f"v{v}.splashpack", tmp_path / "a.glb")
    gamemesh.convert(tmp_path / "a.glb", tmp_path / "b.splashpack", splash_version=v)
    back = gamemesh.read_native(tmp_path / "b.splashpack")
    assert back.version == v and back.header[0].tobytes()[148:] == data[148:156]
    assert back.skins[0].joint_names == doc.skins[0].joint_names
    assert str(back.skins[0].bind) == str(doc.skins[0].bind)


def test_a_pack_of_upstream_layout_is_never_called_ps1godot() -> None:
    """The version alone never says PS1Godot: an upstream 25 reads, and a v23 body relabelled
    25 (too short a header for upstream 25's 156 bytes) fails naming the fork as the likely
    writer, because its layout is not upstream's."""
    SPEC.read(fixture(25)[0], Context())
    data = bytearray(fixture(23)[0])
    data[2:4] = (25).to_bytes(2, "little")
    with pytest.raises(FormatError, match="PS1Godot"):
        SPEC.read(bytes(data), Context())


def test_fork_v21_player_rig_header_is_not_read_as_upstream() -> None:
    """PS1Godot v21 puts a 16-byte player rig at +120 (a 136-byte header): upstream's 128-byte
    reading lands 8 bytes early in the cursor region and must fail, naming the fork."""
    up = fixture(21)[0]
    fork = up[:120] + struct.pack("<3h3hHH", 0, 100, 0, 0, 0, 0, 0xFFFF, 0) + up[128:]
    with pytest.raises(FormatError, match="PS1Godot"):
        SPEC.read(fork, Context())


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("v", [20, 24])
def test_truncations_and_mutations_fail_cleanly(v: int) -> None:
    data = fixture(v)[0]
    assert assert_truncations_fail_cleanly(SPEC, data) > 100
    assert_mutations_fail_cleanly(SPEC, data, count=1500, seed=v)
    assert replay_crashes(SPEC) >= 0


def test_audio_table_and_rooms_truncations_and_mutations_fail_cleanly() -> None:
    """The rich document (audio table, every cursor section) and the interior one (rooms)."""
    for k, doc in enumerate((rich_document(), interior_document(21))):
        data = write_modern(doc)
        assert assert_truncations_fail_cleanly(SPEC, data) > 100
        assert_mutations_fail_cleanly(SPEC, data, count=800, seed=40 + k)
    data = bytearray(write_modern(rich_document()))
    struct.pack_into("<I", data, 68, 0)  # clips counted, no table: refused by name
    with pytest.raises(FormatError, match="audio"):
        SPEC.read(bytes(data), Context())


def test_vram_truncations_and_mutations_fail_cleanly() -> None:
    vram = fixture(23)[1]
    rng = np.random.default_rng(7)
    for cut in list(range(40)) + list(range(40, len(vram), 997)):
        with pytest.raises(FormatError):
            read_vram(vram[:cut])
    for _ in range(400):
        b = bytearray(vram)
        for i in rng.integers(0, 64, 3):
            b[int(i)] = int(rng.integers(0, 256))
        with contextlib.suppress(FormatError):
            read_vram(bytes(b))


def test_dangling_offsets_name_the_field() -> None:
    data = bytearray(fixture(23)[0])
    struct.pack_into("<I", data, 60, len(data) + 4)  # name table past the end
    with pytest.raises(FormatError, match="name_table_offset"):
        SPEC.read(bytes(data), Context())
    data = bytearray(fixture(23)[0])
    struct.pack_into("<H", data, 112, 17)  # 17 skinned meshes: the runtime reads 16
    with pytest.raises(FormatError, match="16"):
        SPEC.read(bytes(data), Context())


def test_checker_is_four_colours() -> None:
    assert len({tuple(p) for p in checker().reshape(-1, 4)}) == 4


# -- what a scene cannot author ------------------------------------------------------------------
def _rich(tmp_path: Path) -> Path:
    doc = rich_document()
    assert doc.vram is not None and doc.spu is not None
    (tmp_path / "rich.splashpack").write_bytes(write_modern(doc))
    (tmp_path / "rich.vram").write_bytes(write_vram(doc.vram))
    (tmp_path / "rich.spu").write_bytes(doc.spu)
    return tmp_path / "rich.splashpack"


def test_every_cursor_section_and_an_opaque_block_round_trip_byte_for_byte(tmp_path: Path
                                                                           ) -> None:
    path = _rich(tmp_path)
    data = path.read_bytes()
    doc = gamemesh.read_native(path)
    assert SPEC.write(doc, Context()) == data
    assert (len(doc.colliders), len(doc.triggers), len(doc.interactables), len(doc.agents),
            len(doc.waypoints), len(doc.bvh_nodes), len(doc.nav_regions), len(doc.cutscenes)) == \
        (1, 1, 1, 1, 2, 1, 1, 1)
    assert doc.audio_names == [b"step", b"door_loop"]
    assert gamemesh.info(path)["native"]["audio_clips"] == ["step", "door_loop"]
    assert doc.audio_clips[["size", "rate", "loop"]].tolist() == [(64, 22050, 0), (48, 11025, 1)]
    raw = doc.opaque["memcard_offset"][1]
    assert len(raw) == 464 and raw[12:20] == b"GAMEMESH"
    # Moving an opaque block would break its own absolute offsets: refused, not corrupted.
    doc.names[0] = b"A much longer floor name"
    with pytest.raises(LimitError, match="memcard_offset"):
        SPEC.write(doc, Context())
    # The audio table is modelled: longer names move it and its names' offsets with it.
    del doc.opaque["memcard_offset"]
    doc.audio_names[0] = b"footstep"
    moved = SPEC.write(doc, Context())
    table = struct.unpack_from("<I", moved, 68)[0]
    assert table % 4 == 0 and table > struct.unpack_from("<I", data, 68)[0]
    name_at = struct.unpack_from("<I", moved, table + 12)[0]
    assert moved[name_at:name_at + 9] == b"footstep\0" and moved[table + 11] == 8


def test_native_records_come_back_from_gltf_and_stale_ones_are_dropped(tmp_path: Path) -> None:
    path = _rich(tmp_path)
    gamemesh.convert(path, tmp_path / "rich.glb")
    s = gamemesh.load(tmp_path / "rich.glb")
    nav = next(n for n in s.nodes if n.name == "navmesh_regions")
    nav_prim = s.meshes[nav.mesh].primitives[0]  # type: ignore[index]
    assert len(nav_prim.positions) == 6  # one square region, fanned into 2 triangles
    assert np.allclose(np.abs(nav_prim.positions[:, [0, 2]]), 200.0)  # 8192 raw x 100 / 4096
    rep = gamemesh.convert(tmp_path / "rich.glb", tmp_path / "back.splashpack")
    back = gamemesh.read_native(tmp_path / "back.splashpack")
    a = gamemesh.read_native(path)
    for name in ("colliders", "triggers", "interactables", "agents", "waypoints", "bvh_nodes",
                 "bvh_refs", "nav_regions", "nav_portals"):
        assert getattr(a, name).tobytes() == getattr(back, name).tobytes(), name
    assert back.lua == a.lua and back.hfield("scene_lua") == 0
    assert [t.keys.tobytes() for t in back.cutscenes[0].tracks] == \
        [t.keys.tobytes() for t in a.cutscenes[0].tracks]
    codes = {n.code for n in rep.notes}
    assert "splashpack.opaque_dropped" in codes and "splashpack.navmesh_dropped" not in codes
    assert back.audio_names == a.audio_names and back.spu == a.spu
    # A changed mesh makes the kept BVH stale: it is rebuilt over the new triangles.
    floor = s.meshes[s.nodes[0].mesh].primitives[0]  # type: ignore[index]
    one = floor.triangles()[:1].reshape(-1)
    floor.positions, floor.indices = floor.positions[one], None
    floor.normals, floor.colors = None, []
    floor.texcoords = [t[one] for t in floor.texcoords]
    notes = gamemesh.save(s, tmp_path / "changed.splashpack")
    changed = gamemesh.read_native(tmp_path / "changed.splashpack")
    assert len(changed.colliders) == 1
    assert changed.bvh_refs.tobytes() != a.bvh_refs.tobytes()
    assert len(changed.bvh_refs) == sum(len(m) for m in changed.meshes)
    dropped = [n.message for n in notes if n.code == "splashpack.derived_dropped"]
    assert not any("bvh_nodes" in m for m in dropped)


def test_blended_skin_weights_become_the_heaviest_bone_with_a_note() -> None:
    s = scene(lights=False)
    prim = s.meshes[s.nodes[2].mesh].primitives[0]  # type: ignore[index]
    assert prim.joints is not None and prim.weights is not None
    prim.joints[4:8, 1] = 0  # the middle ring: 70 % top bone, 30 % hip
    prim.weights[4:8, :2] = [0.7, 0.3]
    ctx = Context()
    doc = from_scene_modern(s, ctx)
    msg = next(n.message for n in ctx.notes if n.code == "splashpack.skin_rigid")
    assert "4 vertices" in msg
    ref = from_scene_modern(scene(lights=False), Context())
    assert (doc.skins[0].bone_index == ref.skins[0].bone_index).all()


def test_write_native_keeps_the_vram_sidecar(tmp_path: Path) -> None:
    """A native rewrite of a modern file writes its .vram beside it, byte for byte."""
    src = FIXTURES / "v23.splashpack"
    doc = gamemesh.read_native(src)
    gamemesh.write_native(doc, tmp_path / "copy.splashpack")
    assert (tmp_path / "copy.splashpack").read_bytes() == src.read_bytes()
    assert (tmp_path / "copy.vram").read_bytes() == src.with_suffix(".vram").read_bytes()
