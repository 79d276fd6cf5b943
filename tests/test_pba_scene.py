"""PBA <-> Scene <-> glTF: axes and winding, placement by bones, damage states, materials and
PTX textures found beside the model, node and vertex animations, from_scene (rigid, animated,
group splitting, names), and round trips through GLB with the Khronos validator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.formats.pba import SPEC
from gamemesh.formats.pba.document import PbaDocument
from gamemesh.formats.pba.files import TextureFinder
from gamemesh.formats.pba.from_scene import MAX_GROUP_VERTICES, split_triangles
from gamemesh.formats.pba.layout import ANIMATED, NAME, RIGID, VERTEX
from gamemesh.formats.pba.read import read
from gamemesh.formats.pba.to_scene import MAX_MORPH_TARGETS, _primitive, flip_winding
from gamemesh.formats.pba.write import write
from gamemesh.formats.ptx.document import PtxDocument
from gamemesh.formats.ptx.read import read as read_ptx
from gamemesh.formats.ptx.write import write as write_ptx
from gamemesh.registry import Context
from gamemesh.sample import sample_scene
from gamemesh.scene import (
    Animation,
    Channel,
    Image,
    Material,
    Mesh,
    MorphTarget,
    Node,
    Primitive,
    Scene,
    TextureRef,
)
from gamemesh.scene.math import face_normals, world_matrices
from gamemesh.textures import image_rgba
from test_pba import FILES, box_vertices, model_animated_v2, vertex_track


def ctx(**options: Any) -> Context:
    return Context(None, options)


def scene_of(name: str, **options: Any) -> Scene:
    c = ctx(**options)
    scene = SPEC.to_scene(read(FILES[name], c), c)
    scene.validate()
    return scene


def node(scene: Scene, name: str, with_mesh: bool = False) -> Node:
    return next(n for n in scene.nodes if n.name == name and (n.mesh is not None or not with_mesh))


def winding_dots(scene: Scene) -> list[float]:
    out = []
    for mesh in scene.meshes:
        for p in mesh.primitives:
            fn = face_normals(p.positions, p.triangles())
            fn /= np.linalg.norm(fn, axis=1, keepdims=True)
            assert p.normals is not None
            vn = p.normals[p.triangles()].mean(axis=1)
            out.append(float(np.mean(np.sum(fn * vn, axis=1))))
    return out


def ptx_file(rgba: np.ndarray) -> bytes:
    bpp = 32 if np.any(rgba[..., 3] < 255) else 24
    px = rgba[..., [2, 1, 0, 3][: bpp // 8]]
    return write_ptx(PtxDocument(rgba.shape[1], rgba.shape[0], bpp, np.ascontiguousarray(px)))


def checker(h: int = 4, w: int = 8, alpha: int = 255) -> np.ndarray:
    px = np.zeros((h, w, 4), np.uint8)
    px[..., 0] = np.arange(w)[None, :] * 30
    px[..., 1] = np.arange(h)[:, None] * 60
    px[..., 2] = 77
    px[..., 3] = alpha
    return px


# -- axes, winding, placement ----------------------------------------------------------------
def test_axes_flip_z_and_reverse_winding() -> None:
    doc = read(FILES["rigid_v1"], ctx())
    scene = scene_of("rigid_v1")
    g = doc.meshes[0].groups[0]
    assert g.vertices is not None
    prim = scene.meshes[0].primitives[0]
    np.testing.assert_allclose(prim.positions, g.vertices["pos"] * [1, 1, -1])
    np.testing.assert_allclose(prim.normals, g.vertices["normal"] * [1, 1, -1])
    np.testing.assert_array_equal(prim.indices[:3], g.indices[[0, 2, 1]])
    # D3D colour bytes B, G, R, A -> RGBA
    assert prim.colors[0][0].tolist() == pytest.approx([30 / 255, 20 / 255, 10 / 255, 1.0])
    assert prim.colors[0][1][3] == pytest.approx(128 / 255)
    np.testing.assert_allclose(prim.texcoords[0], g.vertices["uv"])  # no V flip


@pytest.mark.parametrize("name", ["rigid_v1", "animated_v2", "flexible_v2", "nodes_v2",
                                  "rigid_v0_civ"])
def test_front_faces_agree_with_normals(name: str) -> None:
    dots = winding_dots(scene_of(name))
    assert dots and min(dots) > 0.5


def test_rigid_mesh_sits_on_its_bone() -> None:
    scene = scene_of("rigid_v1")
    base = node(scene, "BASE", with_mesh=True)
    c, s = np.cos(np.pi / 8), np.sin(np.pi / 8)
    # file (w, x, y, z) = (c, 0, s, 0) -> glTF [-x, -y, z, w]
    assert base.rotation == pytest.approx((0, -s, 0, c), abs=1e-6)
    assert base.translation == pytest.approx((1, 0, -2))
    assert base.extras["pba_state"] == "BASE" and base.extras["pba_bone"] == 0
    assert node(scene, "DESTRUIDO", with_mesh=True).extras["pba_state"] == "DESTRUIDO"
    assert scene.extras["pba_bone_hierarchy"] == "flat"
    assert scene.extras["format"] == "pba" and scene.extras["pba_version"] == 1
    root = scene.nodes[scene.roots[0]]
    assert root.name == "tge_altar" and root.extras["pba_root"] is True


def test_identity_parents_make_a_hierarchy() -> None:
    scene = scene_of("animated_v2")
    assert scene.extras["pba_bone_hierarchy"] == "parented"
    root_bone = scene.nodes.index(node(scene, "ROOT"))
    assert scene.nodes.index(node(scene, "BASE")) in scene.nodes[root_bone].children


def test_state_option_exports_one_state() -> None:
    scene = scene_of("rigid_v1", state="destruido")
    assert [n.name for n in scene.nodes if n.mesh is not None] == ["DESTRUIDO"]
    c = ctx(state="RUINA")
    SPEC.to_scene(read(FILES["rigid_v1"], c), c)
    assert any(n.code == "pba.state_missing" for n in c.notes)


def test_materials_alpha_modes_and_shadow_groups() -> None:
    scene = scene_of("rigid_v1")
    mats = {(m.extras["pba_texture"], m.extras["pba_alpha_flags"]): m for m in scene.materials}
    assert mats[("tge_altar", 0)].alpha_mode == "OPAQUE"
    assert mats[("tge_altar_alpha", 2)].alpha_mode == "MASK"
    shadow = mats[("", 3)]
    assert shadow.alpha_mode == "BLEND" and shadow.extras["pba_shadow"] is True
    assert shadow.base_color_texture is None
    assert len(scene.materials) == 3  # (tex 0, 0) is shared by both meshes
    dropped = scene_of("rigid_v1", drop_shadows=True)
    destroyed = dropped.meshes[node(dropped, "DESTRUIDO", True).mesh]  # type: ignore[index]
    assert len(destroyed.primitives) == 1


def test_alpha_mask_option_and_its_round_trip() -> None:
    scene = scene_of("animated_v2", alpha_mask=True)
    blend = next(m for m in scene.materials if m.extras["pba_alpha_flags"] == 1)
    assert (blend.alpha_mode, blend.alpha_cutoff) == ("MASK", 0.5)
    doc = SPEC.from_scene(scene, ctx())
    assert doc.meshes[1].groups[0].alpha_flags == 1  # back to MATERIAL_ALPHA, not ALPHATEST
    plain = next(m for m in scene_of("animated_v2").materials
                 if m.extras["pba_alpha_flags"] == 1)
    assert plain.alpha_mode == "BLEND"


def test_civilisation_lists_in_material_extras() -> None:
    scene = scene_of("animated_v2")
    civ = [m.extras.get("pba_civ_textures") for m in scene.materials]
    assert ["TRE_HUT", "TGE_HUT", "TEE_HUT"] in civ
    assert ["TRE_MOLINO", "TGE_MOLINO"] in civ


def test_civilisation_variants_data(tmp_path: Path) -> None:
    """KHR_materials_variants as data: the variant list in scene.extras, one mapping per
    civilisation texture in the primitive's extras, each a material textured by that PTX."""
    (tmp_path / "m.pba").write_bytes(FILES["animated_v2"])
    (tmp_path / "texturas").mkdir()
    (tmp_path / "texturas" / "tge_hut.ptx").write_bytes(ptx_file(checker(2, 2)))
    scene = gamemesh.load(tmp_path / "m.pba")
    assert scene.extras["KHR_materials_variants"]["variants"] == [
        {"name": "civilisation_0"}, {"name": "civilisation_1"}, {"name": "civilisation_2"}]
    mesh = next(m for m in scene.meshes if m.name == "ASPAS")
    maps = mesh.primitives[0].extras["KHR_materials_variants"]["mappings"]
    assert [m["variants"] for m in maps] == [[0], [1], [2]]
    mats = [scene.materials[m["material"]] for m in maps]
    assert [m.extras["pba_texture"] for m in mats] == ["TRE_HUT", "TGE_HUT", "TEE_HUT"]
    assert mats[1].base_color_texture is not None
    np.testing.assert_array_equal(scene.images[mats[1].base_color_texture.image].pixels,
                                  checker(2, 2))
    assert "KHR_materials_variants" not in mesh.primitives[1].extras  # an empty list
    assert any(n.code == "pba.civ_texture_missing" and n.level == "info" for n in scene.notes)


# -- textures --------------------------------------------------------------------------------
def test_textures_found_beside_and_in_texturas(tmp_path: Path) -> None:
    (tmp_path / "altar.pba").write_bytes(FILES["rigid_v1"])
    sub = tmp_path / "Texturas"
    sub.mkdir()
    (sub / "TGE_ALTAR.PTX").write_bytes(ptx_file(checker()))
    assert SPEC.siblings is not None
    assert SPEC.siblings(tmp_path / "altar.pba") == [sub / "TGE_ALTAR.PTX"]
    scene = gamemesh.load(tmp_path / "altar.pba")
    img = {i.name: i for i in scene.images}
    assert img["tge_altar"].pixels is not None
    np.testing.assert_array_equal(img["tge_altar"].pixels, checker())
    assert img["tge_altar_alpha"].pixels is None
    assert img["tge_altar_alpha"].uri == "tge_altar_alpha.ptx"
    assert any(n.code == "pba.texture_missing" and "tge_altar_alpha" in n.message
               for n in scene.notes)
    other = tmp_path / "more"
    other.mkdir()
    (other / "tge_altar_alpha.ptx").write_bytes(ptx_file(checker(2, 2, 100)))
    scene = gamemesh.load(tmp_path / "altar.pba", texture_dir=[str(other)])
    assert all(i.pixels is not None for i in scene.images)


def test_vertex_attributes_match_the_plain_formulas() -> None:
    """The fast path (raw field copies, z by its sign bit, colours swapped as uint32) gives the
    same bits as the plain numpy formulas, on a strided slice of records with -0.0, huge and
    tiny numbers."""
    rng = np.random.default_rng(7)
    recs = np.zeros(1001, dtype=VERTEX)
    recs["pos"] = rng.normal(size=(1001, 3)) * 1e3
    recs["normal"] = rng.normal(size=(1001, 3))
    recs["uv"] = rng.normal(size=(1001, 2))
    recs["color"] = rng.integers(0, 256, (1001, 4))
    recs["pos"][:3] = [[0.0, -0.0, -0.0], [3e38, -3e38, 1e-45], [0.0, 1.0, 0.0]]
    verts = recs[::2]  # not contiguous
    tris = np.arange(len(verts) - len(verts) % 3, dtype=np.uint16)[::-1].copy()
    prim = _primitive(verts, tris, "test")
    want_pos = (verts["pos"].astype(np.float32) * np.array([1, 1, -1], np.float32))
    assert prim.positions.tobytes() == want_pos.astype(np.float32).tobytes()
    assert prim.normals is not None and prim.normals.tobytes() == (
        verts["normal"] * np.array([1, 1, -1], np.float32)).astype(np.float32).tobytes()
    assert prim.texcoords[0].tobytes() == np.ascontiguousarray(verts["uv"]).tobytes()
    want_rgba = verts["color"][:, [2, 1, 0, 3]].astype(np.float32) / np.float32(255)
    assert prim.colors[0].tobytes() == want_rgba.tobytes()
    assert prim.indices is not None
    assert prim.indices.tolist() == tris.astype(np.uint32).reshape(-1, 3)[:, [0, 2, 1]].ravel(
    ).tolist()
    assert all(a.flags.c_contiguous for a in (prim.positions, prim.normals, prim.texcoords[0],
                                              prim.colors[0], prim.indices))


def test_flip_winding_refuses_partial_triangles() -> None:
    assert flip_winding(np.array([1, 2, 3, 4, 5, 6], np.uint16)).tolist() == [1, 3, 2, 4, 6, 5]
    with pytest.raises(ValueError, match="whole triangles"):
        flip_winding(np.arange(4))


def test_texture_finder_lists_folders_only_when_asked(tmp_path: Path) -> None:
    (tmp_path / "texturas").mkdir()
    (tmp_path / "texturas" / "Wall.PTX").write_bytes(b"a")
    (tmp_path / "wall.ptx").write_bytes(b"b")  # beside the model: found first
    (tmp_path / "roof.ptx").mkdir()  # a folder is not a texture
    finder = TextureFinder(model=tmp_path / "m.pba")
    assert finder._index is None and finder._dirs is None
    assert finder.find("WALL") == tmp_path / "wall.ptx"
    assert finder.find("roof") is None
    assert finder.dirs == [tmp_path, tmp_path / "texturas"]
    (tmp_path / "wall.ptx").unlink()
    again = TextureFinder(model=tmp_path / "m.pba")
    assert again.find("wall") == tmp_path / "texturas" / "Wall.PTX"


# -- animations ------------------------------------------------------------------------------
def test_node_tracks_become_channels() -> None:
    scene = scene_of("rigid_v1")
    anim = scene.animations[0]
    assert anim.name == "sway"
    by = {(scene.nodes[c.node].name, c.path): c for c in anim.channels}
    rot = by[("BASE", "rotation")]
    assert rot.times.tolist() == pytest.approx([0, 0.25, 0.5])
    np.testing.assert_allclose(np.linalg.norm(rot.values, axis=1), 1, atol=1e-6)
    # ROT keeps a fixed position: (0, 1, 2) -> (0, 1, -2) at every key
    np.testing.assert_allclose(by[("BASE", "translation")].values, [[0, 1, -2]] * 3)
    # ROTPOS second key: w=x=0.7071 (90 degrees about x) -> [-x, -y, z, w]
    np.testing.assert_allclose(by[("DESTRUIDO", "rotation")].values[1],
                               [-0.70710677, 0, 0, 0.70710677], atol=1e-6)
    np.testing.assert_allclose(by[("DESTRUIDO", "translation")].values[1], [0, 0, -3])


def test_vertex_track_becomes_morph_targets_and_weights() -> None:
    doc = model_animated_v2()
    scene = scene_of("animated_v2")
    mesh = scene.meshes[node(scene, "ASPAS", with_mesh=True).mesh]  # type: ignore[index]
    assert mesh.extras["pba_mesh_type"] == "animated"
    assert [len(p.targets) for p in mesh.primitives] == [3, 3]
    assert mesh.weights == [0, 0, 0]
    ch = next(c for c in scene.animations[0].channels if c.path == "weights")
    assert ch.times.tolist() == pytest.approx([0, 0.1, 0.2])
    np.testing.assert_array_equal(ch.values, np.eye(3))
    # target k = decoded key k - base, in glTF axes; group 1 is the second slice
    keys = doc.sequences[0].vertex_tracks[0].positions()
    base = doc.meshes[0].vertices["pos"]  # type: ignore[index]
    want = (keys[2] - base)[24:] * [1, 1, -1]
    np.testing.assert_allclose(mesh.primitives[1].targets[2].positions, want, atol=1e-6)
    # the lift of 30 bytes per key step over a 3-unit box is 30 * 3/255 / 2 per key
    assert float(np.median(mesh.primitives[0].targets[2].positions[:, 1])) == pytest.approx(
        30 * 3 / 255, abs=0.02)


def test_nodes_type_skins_vertex_groups_to_bones() -> None:
    scene = scene_of("nodes_v2")
    assert len(scene.skins) == 1
    skin = scene.skins[0]
    assert [scene.nodes[j].name for j in skin.joints] == ["hueso0", "hueso1"]
    prim = scene.meshes[0].primitives[1]
    assert prim.joints is not None and set(prim.joints[:, 0].tolist()) == {1}
    assert prim.weights is not None and np.all(prim.weights[:, 0] == 1)
    # bound at the initial transforms: the rest pose leaves the vertices where they are
    assert skin.inverse_bind_matrices is not None
    np.testing.assert_allclose(skin.inverse_bind_matrices[1][:3, 3], [0, -2, 0])
    assert any(n.code == "pba.unverified_mesh_type" for n in scene.notes)


# -- to glTF ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FILES))
def test_fixture_to_glb_validates(name: str, tmp_path: Path, gltf_validator: Any) -> None:
    src = tmp_path / f"{name}.pba"
    src.write_bytes(FILES[name])
    (tmp_path / "tre_molino.ptx").write_bytes(ptx_file(checker()))
    gamemesh.convert(src, tmp_path / f"{name}.glb")
    gltf_validator(tmp_path / f"{name}.glb")
    back = gamemesh.load(tmp_path / f"{name}.glb")
    assert len([n for n in back.nodes if n.mesh is not None]) == len(
        [n for n in scene_of(name).nodes if n.mesh is not None])


def test_glb_morph_animation_survives(tmp_path: Path, gltf_validator: Any) -> None:
    src = tmp_path / "m.pba"
    src.write_bytes(FILES["animated_v2"])
    gamemesh.convert(src, tmp_path / "m.glb")
    report = gltf_validator(tmp_path / "m.glb")
    assert report["errors"] == 0
    back = gamemesh.load(tmp_path / "m.glb")
    mesh = next(m for m in back.meshes if m.primitives[0].targets)
    assert len(mesh.primitives[0].targets) == 3
    assert any(c.path == "weights" for a in back.animations for c in a.channels)


# -- from_scene ------------------------------------------------------------------------------
def test_sample_scene_to_pba_and_back() -> None:
    src = sample_scene()
    c = ctx()
    doc = SPEC.from_scene(src, c)
    assert any(n.code == "pba.skin_baked" for n in c.notes)  # the clips move the column
    data = write(doc)
    back = read(data, ctx())
    assert write(back) == data and back.version == 2 and back.civ_lists
    assert [m.mesh_type for m in back.meshes] == [ANIMATED]
    assert [s.label for s in back.sequences] == ["bend", "twist"]
    assert list(doc.ptx_files) == ["model_checker.ptx"]
    ptx = read_ptx(doc.ptx_files["model_checker.ptx"], ctx())
    np.testing.assert_array_equal(ptx.rgba(), src.images[0].pixels)
    scene = SPEC.to_scene(back, ctx())
    scene.validate()
    prim = scene.meshes[0].primitives[0]
    np.testing.assert_allclose(prim.positions, src.meshes[0].primitives[0].positions, atol=1e-6)
    np.testing.assert_allclose(prim.colors[0], src.meshes[0].primitives[0].colors[0],
                               atol=1 / 255)
    assert min(winding_dots(scene)) > 0
    # the bend clip's keys are model space in the file; the scene keeps the bone hierarchy
    # (item 9 of issue 12), so bone2's keys are relative to bone1 again
    names = [n.name for n in scene.nodes]
    parents = scene.parents()
    bone2 = names.index("bone2")
    assert parents[bone2] == names.index("bone1")
    bend = scene.animations[0]
    ch = next(ch for ch in bend.channels if ch.node == bone2 and ch.path == "translation")
    assert len(ch.times) == 9 and ch.times[-1] == pytest.approx(1.0)
    # (the writer snaps composed transforms to a 2e-6 grid: each side within half a step)
    assert ch.values[0] == pytest.approx([0, 2 / 3, 0], abs=2e-6)


def test_bounding_sphere_computed() -> None:
    doc = SPEC.from_scene(sample_scene(), ctx())
    mesh = doc.meshes[0]
    assert mesh.center.tolist() == pytest.approx([0, 1, 0], abs=1e-6)
    assert float(mesh.radius[0]) == pytest.approx(np.sqrt(0.25 ** 2 * 2 + 1), abs=1e-5)


def _morph_test_scene() -> Scene:
    """A textured rigid quad plus a morphing box, made in glTF conventions."""
    scene = Scene(name="morph_test")
    img = scene.add_image(Image(name="wood", pixels=checker(8, 8, 200)))
    mat = scene.add_material(Material(name="wood", base_color_texture=TextureRef(img),
                                      alpha_mode="BLEND",
                                      extras={"pba_civ_textures": ["TRE_WOOD", "TGE_WOOD"]}))
    quad = Primitive(positions=np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]],
                                        np.float32),
                     normals=np.tile(np.array([0, 0, 1], np.float32), (4, 1)),
                     texcoords=[np.array([[0, 1], [1, 1], [1, 0], [0, 0]], np.float32)],
                     indices=np.array([0, 1, 2, 0, 2, 3], np.uint32), material=mat)
    rigid = scene.add_mesh(Mesh(name="sign", primitives=[quad]))
    scene.add_node(Node(name="sign", mesh=rigid, translation=(2.0, 0.0, 1.0)))
    v, idx = box_vertices()
    pos = v["pos"] * [1, 1, -1]
    box = Primitive(positions=pos.astype(np.float32),
                    normals=(v["normal"] * [1, 1, -1]).astype(np.float32),
                    indices=idx.reshape(-1, 3)[:, [0, 2, 1]].reshape(-1).astype(np.uint32),
                    targets=[MorphTarget(positions=np.tile(np.float32([0, 1, 0]), (24, 1))),
                             MorphTarget(positions=(pos * 0.5).astype(np.float32))])
    morph = scene.add_mesh(Mesh(name="blob", primitives=[box], weights=[0.0, 0.0]))
    n = scene.add_node(Node(name="blob", mesh=morph))
    times = np.array([0, 0.5, 1.0], np.float32)
    weights = np.array([[0, 0], [1, 0], [0.5, 1]], np.float32)
    scene.animations.append(Animation(name="pulse",
                                      channels=[Channel(n, "weights", times, weights)]))
    return scene


def test_gltf_rigid_textured_and_morph_to_pba_ptx_and_back(tmp_path: Path,
                                                            gltf_validator: Any) -> None:
    src = _morph_test_scene()
    gamemesh.save(src, tmp_path / "in.glb")
    gltf_validator(tmp_path / "in.glb")
    report = gamemesh.convert(tmp_path / "in.glb", tmp_path / "out.pba")
    assert sorted(Path(p).name for p in report.outputs) == ["out.pba", "out_wood.ptx"]
    doc = read((tmp_path / "out.pba").read_bytes(), ctx())
    assert [m.mesh_type for m in doc.meshes] == [ANIMATED, RIGID]  # animated first (rule 3)
    vt = doc.sequences[0].vertex_tracks[0]
    assert (vt.node_id, len(vt.keys), vt.keys["time"].tolist()) == (0, 3, [0, 500, 1000])
    assert doc.meshes[1].groups[0].alpha_flags == 1
    civ = doc.meshes[1].groups[0].civ_textures
    assert civ is not None and civ.tolist() == [b"TRE_WOOD", b"TGE_WOOD"]
    ptx = read_ptx((tmp_path / "out_wood.ptx").read_bytes(), ctx())
    assert ptx.bpp == 32
    gamemesh.convert(tmp_path / "out.pba", tmp_path / "back.glb")
    gltf_validator(tmp_path / "back.glb")
    back = gamemesh.load(tmp_path / "back.glb")
    # the texture came back through PTX unchanged
    wood = next(i for i in back.images if i.name == "out_wood")
    assert wood.pixels is None and wood.size == (8, 8)  # kept encoded by the glTF reader
    np.testing.assert_array_equal(image_rgba(wood), checker(8, 8, 200))
    # the rigid quad keeps its world placement
    worlds = world_matrices(back)
    sign = next(i for i, nd in enumerate(back.nodes) if nd.name == "sign" and nd.mesh is not None)
    prim = back.meshes[back.nodes[sign].mesh].primitives[0]  # type: ignore[index]
    pts = prim.positions @ worlds[sign][:3, :3].T + worlds[sign][:3, 3]
    assert sorted(map(tuple, np.round(pts, 5).tolist())) == sorted(
        map(tuple, (src.meshes[0].primitives[0].positions + np.array([2, 0, 1])).tolist()))
    # the morph key poses within the 1/255 box quantization
    blob = next(i for i, nd in enumerate(back.nodes) if nd.name == "blob" and nd.mesh is not None)
    bprim = back.meshes[back.nodes[blob].mesh].primitives[0]  # type: ignore[index]
    assert len(bprim.targets) == 3
    base = src.meshes[1].primitives[0]
    tol = (vt.box_max - vt.box_min).max() / 255
    for k, w in enumerate([[0, 0], [1, 0], [0.5, 1]]):
        want = base.positions + w[0] * base.targets[0].positions + w[1] * base.targets[1].positions
        got = bprim.positions + bprim.targets[k].positions  # type: ignore[operator]
        assert np.abs(np.sort(got, axis=0) - np.sort(want, axis=0)).max() <= tol


def test_pba_glb_pba_keeps_geometry_bones_animation(tmp_path: Path) -> None:
    src = tmp_path / "a.pba"
    src.write_bytes(FILES["animated_v2"])
    gamemesh.convert(src, tmp_path / "a.glb")
    gamemesh.convert(tmp_path / "a.glb", tmp_path / "b.pba")
    a = read(FILES["animated_v2"], ctx())
    b = read((tmp_path / "b.pba").read_bytes(), ctx())
    assert [m.label for m in b.meshes] == ["ASPAS", "BASE"]
    assert [m.mesh_type for m in b.meshes] == [ANIMATED, RIGID]
    assert a.meshes[0].vertices is not None and b.meshes[0].vertices is not None
    np.testing.assert_allclose(b.meshes[0].vertices["pos"], a.meshes[0].vertices["pos"],
                               atol=1e-5)
    # bones keep names, model-space placement
    bones_a = {n.rstrip(b"\0"): p for n, p in zip(a.bones["name"], a.bones["pos"], strict=True)}
    bones_b = {n.rstrip(b"\0"): p for n, p in zip(b.bones["name"], b.bones["pos"], strict=True)}
    for name in (b"ROOT", b"BASE", b"ASPAS"):
        np.testing.assert_allclose(bones_b[name], bones_a[name], atol=1e-5)
    ta, tb = a.sequences[0].vertex_tracks[0], b.sequences[0].vertex_tracks[0]
    assert tb.keys["time"].tolist() == ta.keys["time"].tolist()
    tol = float((ta.box_max - ta.box_min).max()) / 255 * 1.01
    assert np.abs(tb.positions() - ta.positions()).max() <= tol
    rot_a = a.sequences[0].node_tracks[0]
    rot_b = next(t for t in b.sequences[0].node_tracks
                 if b.bones["name"][t.node_id] == b"ASPAS")
    assert rot_b.keys["time"].tolist() == [0, 250, 500]
    dots = np.abs(np.sum(rot_a.keys["rot"] * rot_b.keys["rot"], axis=1))
    assert dots == pytest.approx([1, 1, 1], abs=1e-5)


def test_large_primitive_split_into_u16_groups() -> None:
    n = MAX_GROUP_VERTICES + 3000
    rng = np.random.default_rng(3)
    pos = rng.random((n, 3)).astype(np.float32)
    tris = np.arange(n - n % 3, dtype=np.uint32)
    parts = split_triangles(tris.reshape(-1, 3), n)
    assert len(parts) == 2 and all(len(sel) <= MAX_GROUP_VERTICES for sel, _ in parts)
    assert sum(len(local) for _, local in parts) == len(tris)
    scene = Scene(name="big")
    m = scene.add_mesh(Mesh(name="big", primitives=[Primitive(positions=pos, indices=tris)]))
    scene.add_node(Node(name="big", mesh=m))
    c = ctx()
    doc = SPEC.from_scene(scene, c)
    assert len(doc.meshes[0].groups) == 2
    assert any(note.code == "pba.group_split" for note in c.notes)
    back = SPEC.to_scene(read(write(doc), ctx()), ctx())
    got = np.concatenate([p.positions[p.indices] for p in back.meshes[0].primitives])
    np.testing.assert_allclose(np.sort(got, axis=0), np.sort(pos[tris], axis=0), atol=1e-6)


def test_long_names_cut_with_note() -> None:
    scene = sample_scene()
    scene.nodes[4].name = "x" * 40
    scene.animations[0].name = "a" * 50
    c = ctx()
    doc = SPEC.from_scene(scene, c)
    # The column is skinned and moved by the clips: an animated mesh named after its node.
    assert doc.meshes[0].name.rstrip(b"\0") == b"x" * 31
    assert doc.sequences[0].name == b"a" * 31 + b"\0"
    assert any(n.code == "pba.names_cut" for n in c.notes)


def test_empty_scene_makes_a_valid_file() -> None:
    c = ctx()
    doc = SPEC.from_scene(Scene(name="empty"), c)
    assert write(doc) == FILES["empty_v2"]
    assert any(n.code == "pba.no_meshes" for n in c.notes)
    assert isinstance(doc, PbaDocument) and doc.textures.dtype == NAME


# -- a real glTF consumer: three.js in Chromium plays the morph animation ---------------------
def test_morph_targets_animate_in_threejs(tmp_path: Path) -> None:
    """The converted vertex animation drives morphTargetInfluences in three.js's GLTFLoader
    (the lead's viewer page and playwright driver, tests/js/view_check.mjs)."""
    import json
    import os
    import shutil
    import subprocess

    from gamemesh.viewer.server import ViewerServer, prepare

    root = Path(__file__).resolve().parent.parent
    chromium = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    if shutil.which("node") is None or not chromium.exists() or not (
            root / "node_modules" / "playwright-core").is_dir():
        pytest.skip("node, playwright-core or Chromium is missing")
    # Vertex animation only (no node tracks), so any pose change comes from the morphs.
    doc = model_animated_v2()
    doc.sequences[0].node_tracks = []
    src = tmp_path / "molino.pba"
    src.write_bytes(write(doc))
    glb = tmp_path / "molino.glb"
    gamemesh.convert(src, glb)
    with ViewerServer(prepare(glb)) as srv:
        jobs = [{"url": srv.url, "clip": "girar", "time": 0.15, "play_ms": 300}]
        (tmp_path / "jobs.json").write_text(json.dumps(jobs))
        run = subprocess.run(["node", str(root / "tests" / "js" / "view_check.mjs"),
                              str(tmp_path / "jobs.json")], cwd=root, capture_output=True,
                             text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    res = json.loads(run.stdout)[0]
    assert not res.get("error"), res
    assert res["clips"] == ["girar"] and res["played"] is True
    assert res["pose_change"] > 0.05, res


def test_morph_target_count_is_bounded() -> None:
    """Each key is a target and the weights animation is keys x targets: past the cap, whole
    tracks are dropped with a note instead of allocating a quadratic array."""
    doc = model_animated_v2()
    first = vertex_track(doc.meshes[0], 0, keys=MAX_MORPH_TARGETS - 48)
    second = vertex_track(doc.meshes[0], 0, keys=100)
    doc.sequences[0].vertex_tracks = [first, second]
    c = ctx()
    scene = SPEC.to_scene(read(write(doc), c), c)
    scene.validate()
    mesh = next(m for m in scene.meshes if m.name == "ASPAS")
    assert len(mesh.primitives[0].targets) == MAX_MORPH_TARGETS - 48
    assert any(n.code == "pba.morph_limit" for n in c.notes)


def test_written_files_follow_writer_rules_e() -> None:
    """Spec §e, checked on the raw bytes of a from_scene file: one header DWORD (version 2), the
    bones chunk exactly 10 + 64 n bytes with the texture list right after it (the model viewer
    skips by length, the map editor reads on), animated meshes first with track i on mesh i
    (nodeId = i), an animation pool, and every chunk length covering its chunk."""
    import struct

    scene = _morph_test_scene()
    blob2 = scene.add_node(Node(name="blob2", mesh=scene.nodes[1].mesh,
                                translation=(0.0, 3.0, 0.0)))
    pulse = scene.animations[0].channels[0]
    scene.animations[0].channels.append(Channel(blob2, "weights", pulse.times[:2],
                                                pulse.values[:2]))
    data = write(SPEC.from_scene(scene, ctx()))
    assert struct.unpack_from("<IH", data, 0) == (2, 0x0301)
    assert struct.unpack_from("<I", data, 6)[0] == len(data) - 4
    pos = 10 + 32
    bid, blen, nbones = struct.unpack_from("<HII", data, pos)
    assert bid == 0x0306 and blen == 10 + 64 * nbones and nbones == 1  # "sign"
    pos += blen
    ntex = struct.unpack_from("<I", data, pos)[0]
    assert data[pos + 4:pos + 4 + 32 * ntex].split(b"\0")[0] == b"model_wood"
    pos += 4 + 32 * ntex
    gid, glen, nmesh = struct.unpack_from("<HII", data, pos)
    assert gid == 0x0302 and nmesh == 3
    kinds, sizes = [], []
    at = pos + 10
    for _ in range(nmesh):
        mid, mlen, mtype = struct.unpack_from("<HII", data, at)
        assert mid == 0x0303
        kinds.append(mtype)
        if mtype == 3:
            sizes.append(struct.unpack_from("<I", data, at + 6 + 4 + 32 + 16)[0])
        at += mlen
    assert at == pos + glen and kinds == [3, 3, 1]
    aid, alen, nseq = struct.unpack_from("<HII", data, at)
    assert aid == 0x0304 and at + alen == len(data) and nseq == 1
    seq = at + 10 + 6
    ntracks_node = struct.unpack_from("<I", data, seq + 36)[0]
    assert ntracks_node == 0  # the model viewer skips sequences with node tracks
    nvt = struct.unpack_from("<I", data, seq + 40)[0]
    assert nvt == 2
    tr = seq + 44
    for i in range(nvt):
        _, tlen, node_id, _, nv = struct.unpack_from("<HIIII", data, tr)
        assert (node_id, nv) == (i, sizes[i])
        tr += tlen


def test_non_finite_values_never_reach_the_scene() -> None:
    """Kept inputs (tests/crashes/pba): an infinite vertex-track box drops the track with a
    note; a NaN vertex position is a CorruptDataError naming the field."""
    from gamemesh.errors import CorruptDataError

    crashes = Path(__file__).parent / "crashes" / "pba"
    c = ctx()
    scene = SPEC.to_scene(read((crashes / "nonfinite-track-box.bin").read_bytes(), c), c)
    scene.validate()
    assert not any(p.targets for m in scene.meshes for p in m.primitives)
    assert any(n.code == "pba.track_unmatched" for n in c.notes)
    with pytest.raises(CorruptDataError, match="NaN") as e:
        SPEC.to_scene(read((crashes / "nan-vertex.bin").read_bytes(), ctx()), ctx())
    assert e.value.field == "meshes[1].groups[0].vertices.pos"


def test_to_local_row_parents_match_the_indexed_form() -> None:
    """``to_local(..., None)`` (row k's parent is row k, used without a gather) gives the bits
    of the indexed form with parents 0..N-1, and a partly parented set keeps the unparented
    rows (rotations normalised)."""
    from gamemesh.formats.pba.to_scene import to_local
    from gamemesh.scene.math import quat_normalize

    rng = np.random.default_rng(14)
    for n in (1, 2, 7, 8, 9, 40):
        t, pt = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
        q, pq = rng.normal(size=(n, 4)), rng.normal(size=(n, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        pq[rng.random(pq.shape) < 0.2] = 0.0
        got = to_local(t, q, pt, pq, None)
        want = to_local(t, q, pt, pq, list(range(n)))
        assert [a.tobytes() for a in got] == [a.tobytes() for a in want]
        parents = [-1 if k % 3 == 0 else k for k in range(n)]
        lt, lq = to_local(t, q, pt, pq, parents)
        keep = [k for k in range(n) if k % 3 == 0]
        moved = [k for k in range(n) if k % 3]
        assert lt[keep].tobytes() == t[keep].tobytes()
        # No parent at all: the input comes back as it is; else every rotation is normalised.
        assert lq[keep].tobytes() == (quat_normalize(q) if moved else q)[keep].tobytes()
        assert lt[moved].tobytes() == want[0][moved].tobytes()
        assert lq[moved].tobytes() == want[1][moved].tobytes()


def test_skinned_clips_are_baked_into_vertex_animation(tmp_path: Path) -> None:
    """PBA has no skin: a skinned mesh a clip moves becomes an animated mesh whose vertex keys
    hold the skinned poses, so the model moves in the game (within the keys' 1/255 of the
    track's box)."""
    from gamemesh.sample import sample_scene
    from gamemesh.viewer.pose import pose_scene

    src = sample_scene()
    notes = gamemesh.save(src, tmp_path / "s.pba")
    assert "pba.skin_baked" in {n.code for n in notes}
    back = gamemesh.load(tmp_path / "s.pba")
    assert [a.name for a in back.animations] == ["bend", "twist"]
    for clip in ("bend", "twist"):
        for t in (0.25, 0.5, 0.875):
            want = np.concatenate([p.positions for p in pose_scene(src, clip, t)])
            got = np.concatenate([p.positions for p in pose_scene(back, clip, t)])
            span = np.ptp(want, axis=0).max()
            assert got.shape == want.shape
            assert np.abs(got - want).max() <= span / 255 + 1e-4, (clip, t)
    # The bend clip moves the column's top away from its rest place: motion was kept.
    rest = np.concatenate([p.positions for p in pose_scene(back)])
    bent = np.concatenate([p.positions for p in pose_scene(back, "bend", 0.25)])
    assert np.abs(bent - rest).max() > 0.3
