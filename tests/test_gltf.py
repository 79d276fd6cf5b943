"""glTF 2.0 in and out: validator-clean output, every reader feature, lossless round trips."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.registry import by_name
from gamemesh.sample import sample_scene
from gamemesh.scene import Animation, Channel, Mesh, MorphTarget, Node, Primitive, Scene
from gamemesh.scene.math import face_normals
from gamemesh.textures import image_rgba
from gltf_fixtures import features_gltf, glb_bytes
from helpers import assert_mutations_fail_cleanly, assert_truncations_fail_cleanly


def test_sample_glb_is_valid_and_round_trips(tmp_path: Path, gltf_validator: Any) -> None:
    scene = sample_scene()
    gamemesh.save(scene, tmp_path / "s.glb")
    report = gltf_validator(tmp_path / "s.glb")
    assert report["warnings"] == 0
    back = gamemesh.load(tmp_path / "s.glb")
    assert back.summary() == scene.summary()
    assert back.summary()["bones"] == 3
    assert [a["name"] for a in back.summary()["animations"]] == ["bend", "twist"]
    p0, p1 = scene.meshes[0].primitives[0], back.meshes[0].primitives[0]
    np.testing.assert_allclose(p1.positions, p0.positions)
    np.testing.assert_allclose(p1.texcoords[0], p0.texcoords[0])
    np.testing.assert_array_equal(p1.joints, p0.joints)
    np.testing.assert_allclose(p1.weights, p0.weights, atol=1e-6)
    np.testing.assert_allclose(back.skins[0].inverse_bind_matrices,
                               scene.skins[0].inverse_bind_matrices)
    # The PNG stays encoded on load; decoded, it is the sample's pixels.
    assert back.images[0].pixels is None
    assert np.array_equal(image_rgba(back.images[0]), scene.images[0].pixels)


def test_glb_gltf_glb_keeps_everything(tmp_path: Path, gltf_validator: Any) -> None:
    """The issue's check: sample.glb -> x.gltf -> y.glb through the CLI keeps meshes, skins,
    animations, materials and images, and all three files validate."""
    from gamemesh.cli import main

    gamemesh.save(sample_scene(), tmp_path / "sample.glb")
    assert main(["convert", str(tmp_path / "sample.glb"), str(tmp_path / "x.gltf")]) == 0
    assert main(["convert", str(tmp_path / "x.gltf"), str(tmp_path / "y.glb")]) == 0
    assert (tmp_path / "x.bin").is_file()
    assert len(list(tmp_path.glob("x_*.png"))) == 1
    summaries = []
    for name in ("sample.glb", "x.gltf", "y.glb"):
        gltf_validator(tmp_path / name)
        summaries.append(gamemesh.load(tmp_path / name).summary())
    assert summaries[0] == summaries[1] == summaries[2]


def test_equal_data_written_once(tmp_path: Path) -> None:
    scene = sample_scene()
    # Two nodes share one mesh; animations share their time keys.
    scene.add_node(Node(name="copy", mesh=0, skin=0))
    gamemesh.save(scene, tmp_path / "s.gltf")
    js = json.loads((tmp_path / "s.gltf").read_text())
    inputs = {s["input"] for a in js["animations"] for s in a["samplers"]}
    assert len(inputs) == 1  # 6 channels, one time accessor
    offsets = [v["byteOffset"] for v in js["bufferViews"]]
    assert all(o % 4 == 0 for o in offsets)
    assert len(js["meshes"]) == 1


def test_reader_features(tmp_path: Path, gltf_validator: Any) -> None:
    path = features_gltf(tmp_path)
    gltf_validator(path, allow={"UNUSED_OBJECT"})
    scene = gamemesh.load(path)
    assert scene.name == "main"  # the default scene, not the first
    assert [n.name for n in scene.nodes] == ["root", "quad"]
    assert any(n.code == "gltf.extra_scenes" for n in scene.notes)
    prim = scene.meshes[0].primitives[0]
    np.testing.assert_allclose(prim.normals, np.tile([0, 0, 1], (4, 1)))  # strided view
    np.testing.assert_allclose(prim.colors[0][3], [1, 1, 1, 128 / 255], atol=1e-6)
    np.testing.assert_allclose(prim.targets[0].positions[2], [0, 0, 0.5])  # sparse
    np.testing.assert_allclose(prim.targets[0].positions[[0, 1, 3]], 0)
    assert scene.meshes[0].target_names == ["lift"]
    assert scene.meshes[0].weights == [0.25]
    mat = scene.materials[0]
    assert mat.alpha_mode == "BLEND" and mat.emissive_strength == 3.0
    assert mat.base_color_texture is not None
    assert mat.base_color_texture.extensions["KHR_texture_transform"]["scale"] == [2, 2]
    assert mat.base_color_texture.sampler is not None
    assert mat.base_color_texture.sampler.mag_filter == 9728
    assert scene.images[0].pixels is None and scene.images[0].size == (4, 4)
    px = image_rgba(scene.images[0])
    assert px is not None and px[0, 0, 0] == 200
    assert scene.images[0].uri == "tex%20ture.png"
    chans = {c.path: c for c in scene.animations[0].channels}
    assert chans["translation"].interpolation == "CUBICSPLINE"
    assert chans["translation"].values.shape == (9, 3)
    assert chans["rotation"].interpolation == "STEP"
    assert chans["weights"].values.shape == (3, 1)
    scene.validate()
    # And out again: the validator accepts what we make of it, extensions included.
    gamemesh.save(scene, tmp_path / "again.glb")
    gltf_validator(tmp_path / "again.glb")
    again = gamemesh.load(tmp_path / "again.glb")
    assert again.summary() == scene.summary()
    tt = again.materials[0].base_color_texture
    assert tt is not None and "KHR_texture_transform" in tt.extensions


def test_external_buffer(tmp_path: Path) -> None:
    path = features_gltf(tmp_path, data_uri=False)
    assert gamemesh.load(path).summary()["vertices"] == 4


def test_missing_external_image_is_a_note(tmp_path: Path, gltf_validator: Any) -> None:
    path = features_gltf(tmp_path)
    (tmp_path / "tex ture.png").unlink()
    scene = gamemesh.load(path)
    assert scene.images[0].pixels is None
    assert any(n.code == "gltf.image_missing" for n in scene.notes)
    notes = gamemesh.save(scene, tmp_path / "out.glb")
    assert any(n.code == "gltf.image_missing" for n in notes)
    gltf_validator(tmp_path / "out.glb")


def _morph_scene() -> Scene:
    scene = Scene()
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
    prim = Primitive(positions=pos, normals=np.tile(np.float32([0, 0, 1]), (3, 1)),
                     targets=[MorphTarget(positions=np.float32([[0, 0, 0], [0, 0, 0],
                                                                [0, 0, 1]])),
                              MorphTarget(positions=np.float32([[0, 0, 0], [1, 0, 0],
                                                                [0, 0, 0]]))])
    scene.add_mesh(Mesh(name="m", primitives=[prim], weights=[0, 0], target_names=["a", "b"]))
    scene.add_node(Node(name="n", mesh=0))
    t = np.float32([0, 1, 2])
    w = np.float32([[1, 0], [0, 1], [0, 0]])
    scene.animations.append(Animation("morph", [Channel(0, "weights", t, w)]))
    return scene


def test_morph_weights_animation(tmp_path: Path, gltf_validator: Any) -> None:
    scene = _morph_scene()
    scene.validate()
    gamemesh.save(scene, tmp_path / "m.glb")
    gltf_validator(tmp_path / "m.glb")
    back = gamemesh.load(tmp_path / "m.glb")
    assert back.summary()["morph_targets"] == 2
    assert back.meshes[0].target_names == ["a", "b"]
    ch = back.animations[0].channels[0]
    assert ch.path == "weights"
    np.testing.assert_allclose(ch.values.reshape(3, 2), [[1, 0], [0, 1], [0, 0]])


def test_eight_influences_split_in_two_sets(tmp_path: Path, gltf_validator: Any) -> None:
    """Five influences need a second JOINTS/WEIGHTS set; a joint named twice for a vertex is
    folded into its first slot (glTF forbids duplicates)."""
    scene = sample_scene(bones=5)
    prim = scene.meshes[0].primitives[0]
    n = prim.vertex_count
    joints = np.zeros((n, 8), dtype=np.uint16)
    weights = np.zeros((n, 8), dtype=np.float32)
    joints[:, :4] = [0, 1, 2, 3]
    joints[:, 4] = 4
    joints[:, 5] = 1  # a duplicate of slot 1
    weights[:, :4] = 0.15
    weights[:, 4] = 0.3
    weights[:, 5] = 0.1
    prim.joints, prim.weights = joints, weights
    gamemesh.save(scene, tmp_path / "s.gltf")
    js = json.loads((tmp_path / "s.gltf").read_text())
    attrs = js["meshes"][0]["primitives"][0]["attributes"]
    assert {"JOINTS_0", "JOINTS_1", "WEIGHTS_0", "WEIGHTS_1"} <= set(attrs)
    gltf_validator(tmp_path / "s.gltf")
    back = gamemesh.load(tmp_path / "s.gltf").meshes[0].primitives[0]
    assert back.joints is not None and back.joints.shape == (n, 8)
    np.testing.assert_allclose(back.weights[:, 4], 0.3, atol=1e-6)
    np.testing.assert_allclose(back.weights[:, 1], 0.25, atol=1e-6)
    np.testing.assert_allclose(back.weights[:, 5], 0.0)


def test_winding_agrees_with_normals() -> None:
    prim = sample_scene().meshes[0].primitives[0]
    fn = face_normals(prim.positions, prim.triangles())
    vn = prim.normals[prim.triangles()].mean(axis=1)
    assert float(np.mean(np.sum(fn * vn, axis=1) > 0)) == 1.0


def test_truncated_glb_raises_format_error(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "s.glb")
    data = (tmp_path / "s.glb").read_bytes()
    assert assert_truncations_fail_cleanly(by_name("gltf"), data) > 100


def test_mutated_glb_fails_cleanly(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "s.glb")
    data = (tmp_path / "s.glb").read_bytes()
    # Mutate the binary chunk and JSON alike; the JSON must stay parseable only sometimes.
    assert_mutations_fail_cleanly(by_name("gltf"), data, count=1500, seed=7)


@pytest.mark.parametrize("js", [
    {"asset": {"version": "2.0"}, "accessors": [{"componentType": 5126, "count": 4000000000,
                                                  "type": "VEC3", "bufferView": 0}],
     "bufferViews": [{"buffer": 0, "byteLength": 12}], "buffers": [{"byteLength": 12}],
     "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}]},
    {"asset": {"version": "2.0"}, "nodes": [{"children": [1]}, {"children": [0]}]},
    {"asset": {"version": "2.0"}, "nodes": [{"mesh": 5}]},
    {"asset": {"version": "1.0"}},
])
def test_hostile_json(js: dict[str, Any]) -> None:
    with pytest.raises(FormatError):
        gamemesh.load(glb_bytes(js, b"\0" * 12), format="gltf")


def test_materials_variants_round_trip(tmp_path: Path, gltf_validator: Any) -> None:
    """Formats put KHR_materials_variants in extras (PBA's civilisation texture sets); the
    writer makes them real extensions and the reader gives them back."""
    from gamemesh.scene import Material

    scene = sample_scene()
    scene.add_material(Material(name="roman", base_color_factor=(1, 0, 0, 1)))
    scene.extras["KHR_materials_variants"] = {"variants": [{"name": "iberian"},
                                                           {"name": "roman"}]}
    prim = scene.meshes[0].primitives[0]
    prim.extras["KHR_materials_variants"] = {"mappings": [{"material": 0, "variants": [0]},
                                                          {"material": 1, "variants": [1]}]}
    gamemesh.save(scene, tmp_path / "v.gltf")
    js = json.loads((tmp_path / "v.gltf").read_text())
    assert js["extensionsUsed"] == ["KHR_materials_variants"]
    assert js["extensions"]["KHR_materials_variants"]["variants"][1] == {"name": "roman"}
    assert "KHR_materials_variants" in js["meshes"][0]["primitives"][0]["extensions"]
    gltf_validator(tmp_path / "v.gltf")
    back = gamemesh.load(tmp_path / "v.gltf")
    assert back.extras["KHR_materials_variants"] == scene.extras["KHR_materials_variants"]
    assert back.meshes[0].primitives[0].extras == prim.extras


def test_missing_image_noted_once(tmp_path: Path) -> None:
    scene = sample_scene()
    scene.images[0].pixels = None
    notes = gamemesh.save(scene, tmp_path / "m.glb")
    assert [n.code for n in notes] == ["gltf.image_missing"]


def test_siblings_name_external_files(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "s.gltf")
    sibs = by_name("gltf").siblings
    assert sibs is not None
    assert sorted(p.name for p in sibs(tmp_path / "s.gltf")) == ["s.bin", "s_0_checker.png"]
    gamemesh.save(sample_scene(), tmp_path / "s.glb")
    assert sibs(tmp_path / "s.glb") == []
    (tmp_path / "junk.gltf").write_text("{ not json")
    assert sibs(tmp_path / "junk.gltf") == []


def test_image_errors_are_stable() -> None:
    from gamemesh.textures import decode_image

    with pytest.raises(FormatError) as e:
        decode_image(b"\x89PNG\r\n\x1a\n garbage", "image")
    assert "0x" not in str(e.value)


def test_equal_bytes_of_different_layouts_get_separate_views(tmp_path: Path,
                                                            gltf_validator: Any) -> None:
    """All-zero u8 JOINTS_1 and all-zero float WEIGHTS_1 of the same byte length must not share
    a view: glTF needs a byteStride on a view two vertex accessors share."""
    scene = sample_scene()
    prim = scene.meshes[0].primitives[0]
    n = prim.vertex_count
    prim.joints = np.concatenate([prim.joints, np.zeros((n, 4), np.uint16)], axis=1)
    prim.weights = np.concatenate([prim.weights, np.zeros((n, 4), np.float32)], axis=1)
    # 5 vertices of float VEC4 zeros = 80 bytes = 20 vertices of u8 VEC4 zero joints.
    assert n == 20
    other = Primitive(positions=prim.positions[:5].copy(),
                      indices=np.array([0, 1, 2], dtype=np.uint32),
                      colors=[np.zeros((5, 4), np.float32)])
    scene.meshes[0].primitives.append(other)
    gamemesh.save(scene, tmp_path / "z.gltf")
    gltf_validator(tmp_path / "z.gltf")
    js = json.loads((tmp_path / "z.gltf").read_text())
    by_view: dict[int, set[tuple[int, str]]] = {}
    for acc in js["accessors"]:
        by_view.setdefault(acc["bufferView"], set()).add((acc["componentType"], acc["type"]))
    assert all(len(layouts) == 1 for layouts in by_view.values())


def test_padded_matrix_accessors() -> None:
    """MAT2 of u8 and MAT3 of i16 start each column on a 4-byte boundary (glTF 3.6.2.4)."""
    from gamemesh.formats.gltf.read import accessor, parse
    from gamemesh.registry import Context

    # Two MAT2 u8: columns (1,2)(3,4) and (5,6)(7,8), each column padded by 2 bytes.
    mat2 = bytes([1, 2, 0, 0, 3, 4, 0, 0, 5, 6, 0, 0, 7, 8, 0, 0])
    # One MAT3 i16: columns (-1,2,-3)(4,-5,6)(7,8,-9), each column padded by 2 bytes.
    cols = [(-1, 2, -3), (4, -5, 6), (7, 8, -9)]
    mat3 = b"".join(np.array(c, "<i2").tobytes() + b"\0\0" for c in cols)
    binary = mat2 + mat3
    js = {"asset": {"version": "2.0"}, "buffers": [{"byteLength": len(binary)}],
          "bufferViews": [{"buffer": 0, "byteLength": 16},
                          {"buffer": 0, "byteOffset": 16, "byteLength": 24}],
          "accessors": [{"bufferView": 0, "componentType": 5121, "count": 2, "type": "MAT2"},
                        {"bufferView": 1, "componentType": 5122, "count": 1, "type": "MAT3"}]}
    doc = parse(glb_bytes(js, binary), Context())
    assert accessor(doc, 0).tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert accessor(doc, 1).tolist() == [[-1, 2, -3, 4, -5, 6, 7, 8, -9]]


def test_clip_outputs_share_one_view(tmp_path: Path, gltf_validator: Any) -> None:
    """A clip's channel outputs are laid end to end in one buffer view, each accessor at its
    byte offset; equal outputs share an accessor; every key reads back exactly."""
    scene = Scene()
    for i in range(3):
        scene.add_node(Node(name=f"n{i}"))
    times = np.array([0.0, 0.5, 1.0], dtype=np.float32)
    move = np.array([[0, 0, 0], [1, 2, 3], [4, 5, 6]], dtype=np.float32)
    turn = np.array([[0, 0, 0, 1], [0, 0.6, 0, 0.8], [0, 1, 0, 0]], dtype=np.float32)
    scene.animations.append(Animation("clip", [
        Channel(0, "translation", times, move), Channel(1, "translation", times, move.copy()),
        Channel(2, "rotation", times, turn), Channel(0, "scale", times, move + 1)]))
    out = tmp_path / "clip.glb"
    gamemesh.save(scene, out)
    gltf_validator(out)
    js = json.loads(out.read_bytes()[20:20 + int.from_bytes(out.read_bytes()[12:16], "little")])
    samplers = js["animations"][0]["samplers"]
    outputs = [js["accessors"][s["output"]] for s in samplers]
    assert samplers[0]["output"] == samplers[1]["output"]  # equal keys, one accessor
    assert len({a["bufferView"] for a in outputs}) == 1
    assert [a.get("byteOffset", 0) for a in outputs] == [0, 0, 36, 84]
    back = gamemesh.load(out)
    got = {(c.node, c.path): c.values for c in back.animations[0].channels}
    assert np.array_equal(got[(0, "translation")], move)
    assert np.array_equal(got[(1, "translation")], move)
    assert np.array_equal(got[(2, "rotation")], turn)
    assert np.array_equal(got[(0, "scale")], move + 1)


def test_repeated_joints_same_for_every_joint_type() -> None:
    """The repeated-joint check gives the same answer for uint8/uint16 ids (compared in
    their own type, distinct ids above every joint for the empty slots), signed ids and ids
    near the type's top (the widened way)."""
    import importlib

    write = importlib.import_module("gamemesh.formats.gltf.write")
    rng = np.random.default_rng(43)
    j = rng.integers(0, 6, (4000, 8))
    w = rng.random((4000, 8)).astype(np.float32)
    w[rng.random((4000, 8)) < 0.4] = 0.0
    wt = np.ascontiguousarray(w.T)
    want = np.zeros(4000, bool)
    for a in range(8):
        for b in range(a + 1, 8):
            want |= (j[:, a] == j[:, b]) & (w[:, a] > 0) & (w[:, b] > 0)
    assert want.any() and not want.all()
    for dtype in (np.uint8, np.uint16, np.int32, np.int64):
        assert np.array_equal(write._repeated_joints(j.astype(dtype), wt), want), dtype
    top = j.astype(np.uint16) + np.uint16(65530)  # ids near the top: no room for the marks
    assert np.array_equal(write._repeated_joints(top, wt), want)


def test_structured_extras_are_written_as_json_text_and_read_back(tmp_path: Path) -> None:
    """Every extras object holds only strings, numbers and booleans at its top (assimp 5.2
    aborts copying a node whose extras hold an array, an object or null): a structured value
    goes as JSON text under ``key.json``, and the reader gives the value back."""
    scene = sample_scene()
    node = scene.nodes[0]
    node.extras = {"m": np.arange(4, dtype=np.float32), "nested": {"a": [1, None]},
                   "none": None, "n": -3, "s": "x", "f": 0.5, "b": True}
    scene.meshes[0].target_names = []
    gamemesh.save(scene, tmp_path / "e.gltf")
    js = json.loads((tmp_path / "e.gltf").read_text())
    assert js["nodes"][0]["extras"] == {
        "m.json": "[0.0,1.0,2.0,3.0]", "nested.json": '{"a":[1,null]}', "none.json": "null",
        "n": -3, "s": "x", "f": 0.5, "b": True}
    for where in ("nodes", "meshes", "materials", "images", "animations"):
        for obj in js.get(where, []):
            for value in obj.get("extras", {}).values():
                assert type(value) in (str, int, float, bool), (where, value)
    back = gamemesh.load(tmp_path / "e.gltf")
    assert back.nodes[0].extras == {"m": [0.0, 1.0, 2.0, 3.0], "nested": {"a": [1, None]},
                                    "none": None, "n": -3, "s": "x", "f": 0.5, "b": True}


@pytest.mark.parametrize("text", ["not json", "[" * 100 + "]" * 100, "NaN"])
def test_extras_text_that_is_not_ours_stays_text(text: str) -> None:
    from gamemesh.formats.gltf.extras import unpack_extras

    assert unpack_extras({"k.json": text}) == {"k.json": text}
