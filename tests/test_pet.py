"""PET (Pangya puppets): native layer, fixtures against the spec's worked layout (§B.18),
scene conversion both ways, character assembly, bad input."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.errors import FormatError, LimitError
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.document import (
    MeshSection,
    TextSection,
)
from gamemesh.formats.pet.files import character_files, siblings
from gamemesh.formats.pet.read import read
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import section_bytes, write
from gamemesh.sample import sample_scene
from gamemesh.scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from gamemesh.scene.math import face_normals
from helpers import corpus_files
from pet_fixtures import KINDS, VERSIONS, ctx, fixture


# -- to the scene ------------------------------------------------------------------------------
def _mean_winding_dot(scene: Scene) -> float:
    dots = []
    for m in scene.meshes:
        for p in m.primitives:
            tri = p.triangles()
            fn = face_normals(p.positions, tri)
            fn /= np.linalg.norm(fn, axis=1, keepdims=True)
            assert p.normals is not None
            dots.append(np.sum(fn * p.normals[tri].mean(axis=1), axis=1))
    return float(np.concatenate(dots).mean())


@pytest.mark.parametrize(("kind", "version"), list(itertools.product(("pet", "mpet"), VERSIONS)))
def test_to_scene_geometry_skin_and_winding(kind: str, version: tuple[int, int]) -> None:
    scene = SPEC.to_scene(read(fixture(kind, version), ctx(f"t.{kind}")), ctx(f"t.{kind}"))
    scene.validate()
    assert _mean_winding_dot(scene) > 0.8
    pos = np.concatenate([p.positions for p in scene.meshes[0].primitives])
    # The tube: a hexagon of radius 0.3 around +Y, 2 units tall (after the bones' transforms).
    half = 0.3 * np.sin(np.pi / 3)
    assert np.allclose(pos.min(axis=0), [-0.3, 0, -half], atol=1e-5)
    assert np.allclose(pos.max(axis=0), [0.3, 2, half], atol=1e-5)
    for p in scene.meshes[0].primitives:
        assert p.joints is not None and p.weights is not None
        assert p.joints.shape[1] == 8  # five influences -> JOINTS_0 + JOINTS_1
        assert np.allclose(p.weights.sum(axis=1), 1.0, atol=1e-6)
        assert np.all(p.joints[p.weights == 0] == 0)
        assert len(p.texcoords) == (2 if version >= (1, 2) else 1)
    assert scene.extras["pet_version"] == "{}.{}".format(*version)
    assert scene.extras["pet_kind"] == kind
    assert len(scene.skins) == 1 and len(scene.skins[0].joints) == 5


def test_skeleton_and_animation_conventions() -> None:
    scene = SPEC.to_scene(read(fixture("pet", (1, 3)), ctx("a.pet")), ctx("a.pet"))
    names = [n.name for n in scene.nodes]
    spine1 = scene.nodes[names.index("Bip01 Spine1")]
    # Half a unit above its parent, turned 20 degrees about Y: mirrored z turns the other way.
    assert np.allclose(spine1.translation, (0, 0.5, 0), atol=1e-6)
    assert np.allclose(spine1.rotation, (0, -np.sin(np.radians(10)), 0, np.cos(np.radians(10))),
                       atol=1e-6)
    spine2 = scene.nodes[names.index("Bip01 Spine3")]
    assert np.allclose(spine2.scale, (1.25, 1.25, 1.25), atol=1e-6)
    assert spine2.extras["pet_bone_extra"] == -1.0
    assert [a.name for a in scene.animations] == ["idle", "walk"]
    idle = scene.animations[0]
    assert idle.extras["pet_motion"]["next_move"] == "walk"
    assert idle.extras["pet_motion"]["connection_time"] == 0.25
    rot = next(c for c in idle.channels if c.path == "rotation")
    assert rot.times[0] == 0 and abs(rot.times[-1] - 0.5) < 1e-6
    assert np.allclose(np.linalg.norm(rot.values, axis=1), 1, atol=1e-6)
    # File quaternion about +z (x, y, z, w) -> glTF (x, y, -z, w).
    t = 20 / 30
    half = 0.3 * np.sin(t * 4) / 2
    walk_rot = next(c for c in scene.animations[1].channels if c.path == "rotation")
    k = int(np.argmin(np.abs(walk_rot.times - (t - 0.5))))
    assert np.allclose(walk_rot.values[k], (0, 0, -np.sin(half), np.cos(half)), atol=1e-5)
    box = next(n for n in scene.nodes if "pet_coll" in n.extras)
    assert box.name == "body" and box.extras["pet_coll"]["bone_name"] == "Bip01 Spine1"
    assert np.allclose(box.extras["pet_coll"]["min"], (-0.3, 0, -0.25))
    assert scene.nodes.index(box) in spine1.children
    mats = {m.name: m for m in scene.materials}
    assert mats["]glass.png"].alpha_mode == "BLEND"
    assert np.allclose(mats["]glass.png"].base_color_factor, (128 / 255, 128 / 255,
                                                              128 / 255, 1))


def test_max_influences_option() -> None:
    c = ctx("m.pet", max_influences=4)
    scene = SPEC.to_scene(read(fixture("pet", (1, 3)), c), c)
    for p in scene.meshes[0].primitives:
        assert p.joints is not None and p.weights is not None
        assert p.joints.shape[1] == 4
        assert np.allclose(p.weights.sum(axis=1), 1.0, atol=1e-6)
    assert any(n.code == "pet.influences_limited" for n in c.notes)


def test_textures_found_case_insensitively_with_mask(tmp_path: Path) -> None:
    model = tmp_path / "models" / "ball.pet"
    model.parent.mkdir()
    model.write_bytes(fixture("pet", (1, 3)))
    rgb = np.zeros((8, 8, 3), np.uint8)
    rgb[..., 0] = 200
    PILImage.fromarray(rgb).save(model.parent / "ITEM1_01.JPG", quality=95)
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[:, 4:] = 255
    PILImage.fromarray(mask).save(model.parent / "item1_01_mask.png")
    shared = tmp_path / "z_common" / "sub"
    shared.mkdir(parents=True)
    PILImage.fromarray(np.full((4, 4, 4), 90, np.uint8)).save(shared / "]glass.png")
    scene = gamemesh.load(model)
    imgs = {i.uri: i for i in scene.images}
    item = imgs["item1_01.jpg"]
    assert item.pixels is not None and item.pixels.shape == (8, 8, 4)
    assert item.pixels[0, 0, 3] < 10 and item.pixels[0, 7, 3] > 245
    glass = imgs["]glass.png"]
    assert glass.data is not None and glass.mime_type == "image/png"
    assert not any(n.code == "pet.texture_missing" for n in scene.notes)
    gamemesh.save(scene, tmp_path / "ball.glb")
    (shared / "]glass.png").unlink()
    again = gamemesh.load(model)
    assert any(n.code == "pet.texture_missing" and "glass" in n.message for n in again.notes)
    placeholder = next(i for i in again.images if i.uri == "]glass.png")
    assert placeholder.pixels is None and placeholder.data is None


def test_texture_dir_tga_and_mpet_float(tmp_path: Path) -> None:
    model = tmp_path / "m" / "h_ha_01.mpet"
    model.parent.mkdir()
    model.write_bytes(fixture("mpet", (1, 3)))
    extra = tmp_path / "elsewhere"
    extra.mkdir()
    tga = np.zeros((2, 2, 4), np.uint8)
    tga[..., 1] = 255
    tga[..., 3] = 128
    PILImage.fromarray(tga).save(extra / "Item1_01.tga")
    # The TEXT name is item1_01.jpg: a .tga of that stem is not it; the name must match.
    scene = gamemesh.load(model, texture_dir=[extra])
    assert any(n.code == "pet.texture_missing" for n in scene.notes)
    PILImage.fromarray(tga).save(extra / "]GLASS.tga")
    doc = read(model.read_bytes(), ctx(model))
    text = doc.get(b"TEXT")
    assert isinstance(text, TextSection)
    text.textures[1].name_raw = b"]glass.tga".ljust(32, b"\0")
    model.write_bytes(write(doc))
    scene = gamemesh.load(model, texture_dir=[extra])
    glass = next(i for i in scene.images if i.uri == "]glass.tga")
    assert glass.pixels is not None and glass.pixels[0, 0].tolist() == [0, 255, 0, 128]
    mat = next(m for m in scene.materials if m.name == "]glass.tga")
    assert mat.alpha_mode == "BLEND"
    node = next(n for n in scene.nodes if n.mesh is not None)
    assert node.extras["pet_global_weight"] == 1.0
    out = tmp_path / "out" / "h_ha_01.mpet"
    notes = gamemesh.save(scene, out)
    back = read(out.read_bytes(), ctx(out))
    assert back.mesh is not None and back.mesh.global_weight is not None
    assert np.all(back.mesh.global_weight == 1.0)
    assert any(n.code == "pet.texture_not_written" and "glass.tga" in n.message for n in notes)


@pytest.mark.parametrize(("kind", "version"), list(itertools.product(KINDS, VERSIONS)))
def test_glb_is_valid(tmp_path: Path, gltf_validator: Any, kind: str,
                      version: tuple[int, int]) -> None:
    src = tmp_path / f"f.{kind}"
    src.write_bytes(fixture(kind, version, escape=kind == "pet"))
    gamemesh.convert(src, tmp_path / "f.glb")
    gltf_validator(tmp_path / "f.glb")


# -- from the scene ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_sample_scene_to_every_kind(tmp_path: Path, kind: str) -> None:
    dst = tmp_path / f"sample.{kind}"
    notes = gamemesh.save(sample_scene(), dst)
    data = dst.read_bytes()
    doc = read(data, ctx(dst))
    assert write(doc) == data and doc.version == (1, 3)
    # §E: VERS always with its 4 bytes; ANIM always ends with 0xFF.
    assert data[:12] == b"VERS\x04\x00\x00\x00\x03\x01\xfe\xff"
    if b"ANIM" in data:
        at = data.index(b"ANIM")
        end = at + 8 + int.from_bytes(data[at + 4:at + 8], "little")
        assert data[end - 1] == 0xFF
    bones = doc.bones
    assert bones is not None
    assert [b.decode() for b in bones.names][:3] == ["bone0", "bone1", "bone2"]
    if kind in ("pet", "mpet"):
        assert (tmp_path / "sample_checker.png").is_file()
        assert doc.textures[0].name == "sample_checker.png"
        mesh = doc.mesh
        assert mesh is not None
        assert np.all(mesh.inf_weight.astype(int).sum(axis=1) == 255)
        back = gamemesh.load(dst)
        assert _mean_winding_dot(back) > 0.5
    if kind == "mpet":
        assert b"SAMPLE" in bones.names
    if kind == "apet":
        moti = doc.get(b"MOTI")
        assert moti is not None and [m.name for m in moti.motions] == [b"bend", b"twist"]
        assert moti.motions[1].frame_start == moti.motions[0].frame_end + 1
    if kind == "bpet":
        assert doc.mesh is None and doc.anim is None
        assert any(n.code == "pet.sections_dropped" and "MESH" in n.message for n in notes)
    assert all(n.code.startswith("pet.") for n in notes)


def test_version_option_and_limits(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "old.pet", pet_version="1.0")
    doc = read((tmp_path / "old.pet").read_bytes(), ctx("old.pet"))
    assert doc.version == (1, 0)
    with pytest.raises(ValueError, match="version"):  # the registry checks the choices
        gamemesh.save(sample_scene(), tmp_path / "bad.pet", pet_version="2.0")
    with pytest.raises(LimitError):
        SPEC.from_scene(sample_scene(), ctx("bad.pet", pet_version="2.0"))
    scene = sample_scene()
    prim = scene.meshes[0].primitives[0]
    tris = prim.triangles()
    for i in range(256):
        scene.images.append(Image(name=f"t{i}", pixels=np.zeros((1, 1, 4), np.uint8)))
        scene.materials.append(Material(name=f"m{i}",
                                        base_color_texture=TextureRef(len(scene.images) - 1)))
    mesh = scene.meshes[0]
    mesh.primitives = [Primitive(positions=prim.positions, normals=prim.normals,
                                 indices=tris[i % len(tris)].copy(), material=1 + i)
                       for i in range(256)]
    with pytest.raises(LimitError, match="texture"):
        SPEC.from_scene(scene, ctx("many.pet"))


def test_track_and_frame_script_limits() -> None:
    from gamemesh.scene import Animation, Channel

    scene = Scene()
    parent = None
    for i in range(130):
        parent = scene.add_node(Node(name=f"b{i}", translation=(0, 0.1, 0)), parent)
    times = np.array([0, 1], np.float32)
    scene.animations.append(Animation("a", [Channel(i, "translation", times,
                                                    np.zeros((2, 3), np.float32))
                                            for i in range(130)]))
    with pytest.raises(LimitError, match="tracks"):
        SPEC.from_scene(scene, ctx("x.apet", pet_version="1.0"))
    doc = SPEC.from_scene(scene, ctx("x.apet", pet_version="1.1"))
    assert doc.anim is not None and len(doc.anim.tracks) == 130
    scene.extras["pet"] = {"x.apet": {"fram": [{"index": i, "chunks": ["*a()", "", ""],
                                                "check": 0} for i in range(600)]}}
    with pytest.raises(LimitError, match="FRAM"):
        SPEC.from_scene(scene, ctx("x.apet", pet_version="1.1"))
    doc = SPEC.from_scene(scene, ctx("x.apet", pet_version="1.2"))
    fram = doc.get(b"FRAM")
    assert fram is not None and len(fram.frames) == 600  # type: ignore[union-attr]


def test_static_scene_without_skin(tmp_path: Path) -> None:
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    scene = Scene()
    mesh = scene.add_mesh(Mesh(primitives=[Primitive(positions=pos,
                                                     indices=np.array([0, 1, 2], np.uint32))]))
    scene.add_node(Node(name="thing", mesh=mesh, translation=(0, 0, 5)))
    doc = SPEC.from_scene(scene, ctx("thing.pet"))
    back = SPEC.to_scene(read(write(doc), ctx("thing.pet")), ctx("thing.pet"))
    p = back.meshes[0].primitives[0]
    assert np.allclose(np.sort(p.positions[:, 2]), [5, 5, 5])
    assert _mean_winding_dot(back) > 0.99


def test_pet_glb_pet_keeps_content(tmp_path: Path) -> None:
    doc = build("pet", (1, 3))
    assert doc.mesh is not None
    cv = doc.mesh.corner_vertex
    # The fixture's zero normal (which comes back computed) replaced by its smooth value.
    twin = int(np.flatnonzero(cv == cv[0])[1])
    doc.mesh.corner_normal[0] = doc.mesh.corner_normal[twin]
    src = tmp_path / "a.pet"
    src.write_bytes(write(doc))
    gamemesh.convert(src, tmp_path / "a.glb")
    gamemesh.convert(tmp_path / "a.glb", tmp_path / "b.pet")
    a = read(src.read_bytes(), ctx(src))
    b = read((tmp_path / "b.pet").read_bytes(), ctx(tmp_path / "b.pet"))
    assert [s.fourcc for s in a.sections] == [s.fourcc for s in b.sections]
    assert a.bones is not None and b.bones is not None
    assert a.bones.names == b.bones.names and a.bones.parents == b.bones.parents
    assert a.bones.matrices is not None and b.bones.matrices is not None
    assert np.allclose(a.bones.matrices, b.bones.matrices, atol=1e-5)
    ma, mb = a.mesh, b.mesh
    assert ma is not None and mb is not None
    assert ma.vertex_count == mb.vertex_count and ma.poly_count == mb.poly_count

    def corners(m: MeshSection) -> Any:
        # Per corner: stored position, weights by bone, normal and UVs, in a sortable form.
        w = np.zeros((len(m.positions), 5))
        for k in range(m.inf_bone.shape[1]):
            on = k < m.inf_count
            np.add.at(w, (np.flatnonzero(on), m.inf_bone[on, k]), m.inf_weight[on, k])
        cv = m.corner_vertex
        rows = np.concatenate([m.positions[cv], w[cv] / 255, m.corner_normal,
                               m.corner_uv.reshape(len(cv), -1)], axis=1)
        return rows[np.lexsort(np.round(rows, 4).T[::-1])]

    ca, cb = corners(ma), corners(mb)
    assert np.allclose(ca[:, :3], cb[:, :3], atol=1e-5)
    assert np.allclose(ca[:, 3:8], cb[:, 3:8], atol=1 / 255 + 1e-6)
    assert np.allclose(ca[:, 8:], cb[:, 8:], atol=1e-5)
    ta, tb = a.anim, b.anim
    assert ta is not None and tb is not None and len(ta.tracks) == len(tb.tracks)
    for x, y in zip(ta.tracks, tb.tracks, strict=True):
        assert x.bone == y.bone
        for k in ("pos", "rot", "scale"):
            ka, kb = getattr(x, k), getattr(y, k)
            # Clips cut at the MOTI frame ranges come back with keys added at the cuts.
            assert set(np.round(ka[:, 0], 5)) <= set(np.round(kb[:, 0], 5)), k
            back = np.stack([np.interp(ka[:, 0], kb[:, 0], kb[:, c])
                             for c in range(1, ka.shape[1])], axis=1)
            assert np.allclose(back, ka[:, 1:], atol=1e-5), k
    for x, y in zip(ta.tracks, tb.tracks, strict=True):
        assert x.flags is not None and y.flags is not None
        assert np.array_equal(x.flags, y.flags)  # the 1.3 flag keys, through extras
    assert b.bones.extra is not None and np.array_equal(a.bones.extra, b.bones.extra)
    for fourcc in (b"TEXT", b"SMTL", b"FANM", b"FRAM", b"MOTI", b"COLL", b"EXTR"):
        assert a.get(fourcc) is not None
        assert section_bytes(a.get(fourcc), a.version) == section_bytes(  # type: ignore[arg-type]
            b.get(fourcc), b.version), fourcc  # type: ignore[arg-type]


# -- characters ----------------------------------------------------------------------------------
def _character(folder: Path) -> dict[str, Path]:
    files = {"bpet": folder / "h_def.bpet", "ha": folder / "h_ha_01.mpet",
             "ts": folder / "h_ts_01.mpet", "apet": folder / "h_def.apet",
             "other": folder / "k_def.bpet"}
    files["bpet"].write_bytes(fixture("bpet", (1, 3)))
    files["ha"].write_bytes(write(build("mpet", (1, 3), rings=3, sides=5)))
    files["ts"].write_bytes(write(build("mpet", (1, 2), rings=4, sides=8)))
    files["apet"].write_bytes(fixture("apet", (1, 3)))
    files["other"].write_bytes(fixture("bpet", (1, 1)))
    return files


def test_siblings_follow_the_prefix_rule(tmp_path: Path) -> None:
    f = _character(tmp_path)
    # A skeleton's load reads its character; parts alone read nothing else.
    assert siblings(f["bpet"]) == sorted([f["apet"], f["ha"], f["ts"]])
    assert siblings(f["ha"]) == [] and siblings(f["apet"]) == []
    assert character_files(f["ha"]) == sorted([f["apet"], f["bpet"], f["ts"]])
    assert SPEC.siblings is siblings
    alone = gamemesh.load(f["bpet"], no_parts=True)
    assert not alone.meshes and not alone.animations
    part = gamemesh.load(f["ha"])
    assert [n.name for n in part.nodes if n.mesh is not None] == ["h_ha_01"]


@pytest.mark.parametrize("how", ["with", "character", "default"])
def test_character_assembles_into_one_glb(tmp_path: Path, gltf_validator: Any,
                                          how: str) -> None:
    f = _character(tmp_path)
    opts: dict[str, Any] = {"with": {"with": [f["ha"], f["ts"], f["apet"]]},
                            "character": {"character": True}, "default": {}}[how]
    # --character works from any file of the character; a .bpet reads its parts by default.
    main = f["ha"] if how == "character" else f["bpet"]
    scene = gamemesh.load(main, **opts)
    scene.validate()
    assert len(scene.skins) == 1 and len(scene.skins[0].joints) == 5
    skinned = [n for n in scene.nodes if n.mesh is not None]
    assert sorted(n.name for n in skinned) == ["h_ha_01", "h_ts_01"]
    assert all(n.skin == 0 for n in skinned)
    assert [a.name for a in scene.animations] == ["idle", "walk"]
    bone_nodes = set(scene.skins[0].joints)
    assert all(c.node in bone_nodes for a in scene.animations for c in a.channels)
    # The parts sit on the .bpet's bind pose: the same tube as the .pet gives.
    for n in skinned:
        pos = np.concatenate([p.positions for p in scene.meshes[n.mesh].primitives])  # type: ignore[index]
        assert np.allclose(pos[:, 1].min(), 0, atol=1e-4)
        assert np.allclose(pos[:, 1].max(), 2, atol=2e-2)
    assert _mean_winding_dot(scene) > 0.8
    out = tmp_path / "h.glb"
    report = gamemesh.convert(main, out, **opts)
    assert report.outputs == [str(out)]
    gltf_validator(out)


def test_missing_part_is_a_format_error(tmp_path: Path) -> None:
    f = _character(tmp_path)
    with pytest.raises(FormatError, match="cannot read"):
        gamemesh.load(f["bpet"], **{"with": [tmp_path / "nope.mpet"]})


def test_mesh_without_triangles_converts(tmp_path: Path, gltf_validator: Any) -> None:
    src = tmp_path / "zero.pet"
    src.write_bytes((Path(__file__).parent / "crashes" / "pet" / "zero-polygons.bin").read_bytes())
    report = gamemesh.convert(src, tmp_path / "zero.glb")
    assert [n.code for n in report.notes] == ["pet.mesh_empty"]
    gltf_validator(tmp_path / "zero.glb")


def test_corpus_winding_check_b19() -> None:
    """§B.19 check 1 on real files (when someone supplies them): in file space the standard
    cross product of each stored triangle agrees with its stored normals (v >= 1.1)."""
    for p in corpus_files("pet"):
        doc = read(p.read_bytes(), ctx(p))
        mesh = doc.mesh
        if mesh is None or doc.version < (1, 1) or not mesh.poly_count:
            continue
        scene = SPEC.to_scene(doc, ctx(p))
        assert _mean_winding_dot(scene) > 0, p.name


def test_unique_rows_matches_np_unique_and_survives_collisions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The corner dedup finds exactly np.unique's distinct rows (-0.0 equal to 0.0), in
    first-occurrence order; when every hash collides it still never merges different rows."""
    import importlib

    ts = importlib.import_module("gamemesh.formats.pet.corners")
    rng = np.random.default_rng(7)
    n = 5000
    cv = rng.integers(0, 800, n)
    nrm = rng.integers(-1, 2, (n, 3)).astype(np.float32)
    nrm[::7] *= -0.0
    uv = rng.integers(0, 2, (n, 4)).astype(np.float32)
    rec = np.concatenate([cv[:, None], nrm, uv], axis=1).astype(np.float64)
    expect = len(np.unique(rec, axis=0))
    for prime in (ts._FNV_PRIME, np.uint64(0)):  # 0: every row hashes the same
        monkeypatch.setattr(ts, "_FNV_PRIME", prime)
        first, inverse = ts.unique_rows(cv, nrm, uv)
        assert len(first) == expect
        assert np.array_equal(rec[first][inverse], rec)
        assert np.all(np.diff(first) > 0) and first[0] == 0
    empty = ts.unique_rows(np.zeros(0, np.int64), np.zeros((0, 3), np.float32))
    assert len(empty[0]) == len(empty[1]) == 0
