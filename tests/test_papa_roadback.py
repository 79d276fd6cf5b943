"""Papa, the road back (glTF -> papa): version 2.0 files, models kept as models, vertex colours,
rigid animation as bones, the unit's texture options, and a fixed point after one trip; every
property Papa cannot hold is a ``papa.*`` warning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage
from tests.helpers import corpus_dir

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.formats.papa.info import info
from gamemesh.formats.papa.read import read
from gamemesh.formats.papa.write import write
from gamemesh.sample import checker, column, sample_scene
from gamemesh.scene import (
    Animation,
    Channel,
    Image,
    Material,
    Mesh,
    Node,
    Primitive,
    Scene,
    TextureRef,
)
from gamemesh.scene.math import euler_to_quat
from gamemesh.scene.model import MorphTarget

UNIT = "official_2014/pa/units/land_bots/assault_bot"
FACTORY = "official_2014/pa/units/air/air_factory"


def corpus(rel: str) -> Path:
    return corpus_dir("papa") / rel


def warnings(report: Any) -> list[str]:
    # The Papa writer's own warnings; the save path's generic loss check (papa.lost.*, issue 12
    # item 10) is tested in test_road_back.py.
    return sorted({n.code for n in report.notes if n.level == "warning"
                   and ".lost." not in n.code})


def message(report: Any, code: str) -> str:
    return " | ".join(n.message for n in report.notes if n.code == code)


# -- version 2.0 -----------------------------------------------------------------------------
def test_version_2_read_kept_shown_and_3_written_from_a_scene(tmp_path: Path) -> None:
    data = corpus(f"{UNIT}/assault_bot.papa").read_bytes()
    assert data[4:8] == b"\0\0\3\0"
    v2 = data[:6] + b"\2\0" + data[8:]  # a 2014 mod file: the same layout, major 2
    doc3, doc2 = read(data), read(v2)
    assert doc2.version == (0, 2)
    assert info(doc2)["version"] == "2.0"
    assert {k: v for k, v in info(doc2).items() if k != "version"} == \
        {k: v for k, v in info(doc3).items() if k != "version"}
    assert write(doc2) == v2  # a native rewrite keeps the version, byte for byte
    src = tmp_path / "old.papa"
    src.write_bytes(v2)
    assert gamemesh.info(src)["native"]["version"] == "2.0"
    scene = gamemesh.load(src, no_siblings=True)
    assert scene.extras["version"] == "2.0"
    gamemesh.save(scene, tmp_path / "out" / "old.papa")
    assert (tmp_path / "out" / "old.papa").read_bytes()[4:8] == b"\0\0\3\0"
    with pytest.raises(FormatError, match="version"):
        read(data[:6] + b"\1\0" + data[8:])


# -- corpus units: papa -> glb -> papa -------------------------------------------------------
def unit_models() -> list[Any]:
    try:
        root = corpus_dir("papa")
    except pytest.skip.Exception:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no papa corpus"))]
    return [pytest.param(p, id=p.name) for p in sorted(root.rglob("*.papa"))
            if "_anim_" not in p.name and not p.stem.endswith(("_diffuse", "_mask", "_material"))
            and read(p.read_bytes()).models]


def two_trips(src: Path, work: Path, **opts: Any) -> tuple[Path, Path, Any]:
    """src -> a.glb -> p1/ -> b.glb -> p2/; the first glb -> papa report."""
    gamemesh.convert(src, work / "a.glb")
    report = gamemesh.convert(work / "a.glb", work / "p1" / f"{src.stem}.papa", **opts)
    gamemesh.convert(work / "p1" / f"{src.stem}.papa", work / "b.glb")
    gamemesh.convert(work / "b.glb", work / "p2" / f"{src.stem}.papa", **opts)
    return work / "p1", work / "p2", report


def assert_same_files(p1: Path, p2: Path) -> None:
    names = sorted(p.name for p in p1.iterdir())
    assert names == sorted(p.name for p in p2.iterdir())
    for name in names:
        assert (p2 / name).read_bytes() == (p1 / name).read_bytes(), name


def _track(doc: Any, k: int) -> dict[str, Any]:
    a = doc.animations[k]
    return {doc.string(int(s)): a.transforms[:, j] for j, s in enumerate(a.bones)}


def assert_same_unit(src: Path, out: Path) -> None:
    a, b = read(src.read_bytes()), read(out.read_bytes())
    assert [(a.string(m.name), m.skeleton, len(m.bindings)) for m in a.models] == \
        [(b.string(m.name), m.skeleton, len(m.bindings)) for m in b.models]
    assert len(b.materials) == len(a.materials)
    for ma, mb in zip(a.models, b.models, strict=True):
        np.testing.assert_allclose(mb.model2scene, ma.model2scene, atol=1e-6)
        for ba, bb in zip(ma.bindings, mb.bindings, strict=True):
            assert b.string(bb.name) == a.string(ba.name)
            np.testing.assert_array_equal(bb.bone_map, ba.bone_map)
            mesh_a, mesh_b = a.meshes[ba.mesh], b.meshes[bb.mesh]
            ga, gb = mesh_a.groups, mesh_b.groups
            assert gb[["material", "first_index", "num_primitives"]].tolist() == \
                ga[["material", "first_index", "num_primitives"]].tolist()
            assert [b.string(int(x), "-") for x in gb["name"]] == \
                [a.string(int(x), "-") for x in ga["name"]]
            va = a.vertex_buffers[mesh_a.vertex_buffer]
            vb = b.vertex_buffers[mesh_b.vertex_buffer]
            assert vb.format == va.format
            for f in va.vertices.dtype.names or ():
                tol = 1e-5 if f == "normal" else 0.0
                np.testing.assert_allclose(vb.vertices[f].astype(float),
                                           va.vertices[f].astype(float), atol=tol, err_msg=f)
            np.testing.assert_array_equal(b.index_buffers[mesh_b.index_buffer].indices,
                                          a.index_buffers[mesh_a.index_buffer].indices)
    for sa, sb in zip(a.skeletons, b.skeletons, strict=True):
        assert [b.string(int(x)) for x in sb.bones["name"]] == \
            [a.string(int(x)) for x in sa.bones["name"]]
        np.testing.assert_array_equal(sb.bones["parent"], sa.bones["parent"])
        np.testing.assert_allclose(sb.bones["translation"], sa.bones["translation"], atol=1e-5)
    for role in ("diffuse", "mask", "material"):
        tex = src.parent / f"{src.stem}_{role}.papa"
        if tex.exists():
            ta = read(tex.read_bytes()).textures[0]
            tb = read((out.parent / tex.name).read_bytes()).textures[0]
            assert (tb.format, tb.srgb, tb.width, tb.height, tb.mips) == \
                (ta.format, ta.srgb, ta.width, ta.height, ta.mips), role
    for anim in sorted(src.parent.glob(f"{src.stem}_anim_*.papa")):
        da, db = read(anim.read_bytes()), read((out.parent / anim.name).read_bytes())
        ta, tb = _track(da, 0), _track(db, 0)
        assert da.animations[0].num_frames == db.animations[0].num_frames
        for name, tr in ta.items():
            np.testing.assert_allclose(tb[name]["translation"], tr["translation"], atol=1e-4)
            dots = np.abs(np.einsum("fi,fi->f", tb[name]["rotation"], tr["rotation"]))
            assert dots.min() > 1 - 1e-5, name


@pytest.mark.parametrize("path", unit_models())
def test_corpus_unit_round_trip_and_fixed_point(path: Path, tmp_path: Path) -> None:
    p1, p2, report = two_trips(path, tmp_path)
    assert_same_unit(path, p1 / path.name)
    assert_same_files(p1, p2)
    assert all(n.code.startswith(("papa.", "gltf.")) for n in report.notes)
    written = {p.name for p in p1.iterdir()}
    for role in ("diffuse", "mask", "material"):
        has = f"{path.stem}_{role}.papa" in written
        assert has == (f"papa.{role}_missing" not in warnings(report)), role


def test_air_factory_keeps_two_models_and_blender_papa_io_can_bind_them(tmp_path: Path) -> None:
    src = corpus(f"{FACTORY}/air_factory.papa")
    p1, _p2, _ = two_trips(src, tmp_path)
    doc = read((p1 / "air_factory.papa").read_bytes())
    rows = [(doc.string(m.name), m.skeleton, [(doc.string(b.name), len(b.bone_map))
                                               for b in m.bindings]) for m in doc.models]
    assert rows == [("air_factory_mesh", 0, [("air_factory_mesh", 4)]),
                    ("air_factory_nav", -1, [("air_factory_nav", 0)])]
    # Blender-PAPA-IO reads skeleton.num_bones entries of every binding's map in a model with a
    # skeleton (getBoneMapping): each such binding must have a full map.
    for m in doc.models:
        for b in m.bindings:
            if m.skeleton >= 0:
                assert len(b.bone_map) >= len(doc.skeletons[m.skeleton].bones)
    # The stock model's empty second group comes back.
    groups = doc.meshes[doc.models[0].bindings[0].mesh].groups
    assert groups["num_primitives"].tolist() == [1434, 0]
    assert (p1 / "air_factory_anim_build.papa").exists()


# -- the sample matrix: glTF scenes x the papa writer ----------------------------------------
def _static(name: str, material: int | None = None, colors: bool = False,
            offset: float = 0.0) -> Primitive:
    p = column(rings=3, height=1.0)
    p.joints = p.weights = None
    p.positions = (p.positions + np.array([offset, 0, 0])).astype(np.float32)
    p.colors = [np.tile(np.array([[0.2, 0.4, 0.6, 1.0]], np.float32), (p.vertex_count, 1))] \
        if colors else []
    p.material = material
    return p


def rigid_scene() -> Scene:
    """Three mesh nodes animated as rigid parts, no skin."""
    scene = Scene(name="rigid")
    root = scene.add_node(Node(name="root"))
    times = np.linspace(0.0, 1.0, 7, dtype=np.float32)
    channels = []
    parent = root
    for k in range(3):
        mesh = scene.add_mesh(Mesh(name=f"part{k}", primitives=[_static(f"part{k}")]))
        parent = scene.add_node(Node(name=f"part{k}", mesh=mesh,
                                     translation=(0.0, 1.0 if k else 0.0, 0.0)), parent)
        e = np.zeros((len(times), 3))
        e[:, 2] = np.sin(times * np.pi) * 0.3 * (k + 1)
        channels.append(Channel(parent, "rotation", times, euler_to_quat(e).astype(np.float32)))
    scene.animations.append(Animation(name="wave", channels=channels))
    return scene


def morph_scene() -> Scene:
    scene = Scene(name="morph")
    p = _static("blob")
    p.targets = [MorphTarget(positions=np.full((p.vertex_count, 3), 0.1, np.float32))]
    mesh = scene.add_mesh(Mesh(name="blob", primitives=[p], weights=[0.0]))
    node = scene.add_node(Node(name="blob", mesh=mesh))
    times = np.array([0.0, 1.0], np.float32)
    scene.animations.append(Animation(name="swell", channels=[
        Channel(node, "weights", times, np.array([[0.0], [1.0]], np.float32))]))
    return scene


def two_texture_scene() -> Scene:
    scene = Scene(name="twotex")
    a = scene.add_image(Image(name="paint", pixels=checker(16)))
    b = scene.add_image(Image(name="decal", pixels=checker(8, 2)))
    m0 = scene.add_material(Material(name="hull", base_color_texture=TextureRef(a)))
    m1 = scene.add_material(Material(name="decals", base_color_texture=TextureRef(b)))
    mesh = scene.add_mesh(Mesh(name="hull", primitives=[_static("a", m0),
                                                        _static("b", m1, offset=1.0)]))
    scene.add_node(Node(name="hull", mesh=mesh))
    return scene


def colour_scene() -> Scene:
    scene = Scene(name="colours")
    mesh = scene.add_mesh(Mesh(name="painted", primitives=[_static("c", colors=True)]))
    scene.add_node(Node(name="painted", mesh=mesh, translation=(1.0, 2.0, 3.0)))
    return scene


def multi_model_scene() -> Scene:
    """The skinned sample plus a mesh no bone carries (air_factory's nav mesh, generically)."""
    scene = sample_scene()
    for p in scene.meshes[0].primitives:
        p.colors = []
    mesh = scene.add_mesh(Mesh(name="nav", primitives=[_static("nav", offset=3.0)]))
    scene.add_node(Node(name="nav", mesh=mesh))
    return scene


def skinned_scene() -> Scene:
    return sample_scene()


# (scene, the warnings the first glb -> papa gives beyond the missing textures, a check)
def _check_skinned(doc: Any, files: set[str]) -> None:
    assert doc.vertex_buffers[0].format == 8
    assert {"skinned_anim_bend.papa", "skinned_anim_twist.papa"} <= files


def _check_rigid(doc: Any, files: set[str]) -> None:
    assert [doc.string(int(x)) for x in doc.skeletons[0].bones["name"]] == \
        ["part0", "part1", "part2"]
    assert doc.skeletons[0].bones["parent"].tolist() == [-1, 0, 1]
    for k, b in enumerate(doc.models[0].bindings):
        v = doc.vertex_buffers[doc.meshes[b.mesh].vertex_buffer].vertices
        assert (v["weights"][:, 0] == 255).all()
        assert (b.bone_map[v["bones"][:, 0]] == k).all()  # 100 % to its own node's bone
    assert "rigid_anim_wave.papa" in files


def _check_morph(doc: Any, files: set[str]) -> None:
    assert not [f for f in files if "_anim_" in f]  # never an empty animation file


def _check_two_textures(doc: Any, files: set[str]) -> None:
    assert [g["material"] for g in doc.meshes[0].groups] == [0, 1]
    assert "twotex_diffuse.papa" in files


def _check_colours(doc: Any, files: set[str]) -> None:
    v = doc.vertex_buffers[0]
    assert v.format == 6
    assert (v.vertices["color"] == [51, 102, 153, 255]).all()


def _check_multi(doc: Any, files: set[str]) -> None:
    rows = [(doc.string(m.name), m.skeleton, [len(b.bone_map) for b in m.bindings])
            for m in doc.models]
    assert rows == [("multi_mesh", 0, [3]), ("multi_mesh_static", -1, [0])]


SAMPLES: dict[str, tuple[Callable[[], Scene], list[str], str, Callable[[Any, set[str]], None]]] = {
    "skinned": (skinned_scene, ["papa.attributes_dropped", "papa.material_properties_dropped"],
                "COLOR_0", _check_skinned),
    "rigid": (rigid_scene, [], "", _check_rigid),
    "morph": (morph_scene, ["papa.animation_unbound", "papa.attributes_dropped",
                            "papa.morph_animation_dropped"], "morph targets", _check_morph),
    "twotex": (two_texture_scene, ["papa.texture_dropped"], "decal", _check_two_textures),
    "colours": (colour_scene, [], "", _check_colours),
    "multi": (multi_model_scene, ["papa.material_properties_dropped"], "roughness",
              _check_multi),
}
TEXTURE_WARNINGS = {"papa.diffuse_missing", "papa.mask_missing", "papa.material_missing"}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_matrix_warns_for_each_loss_and_settles_after_one_trip(name: str,
                                                                      tmp_path: Path) -> None:
    build, expected, words, check = SAMPLES[name]
    glb = tmp_path / f"{name}.glb"
    gamemesh.save(build(), glb)
    p1, p2 = tmp_path / "p1" / f"{name}.papa", tmp_path / "p2" / f"{name}.papa"
    report = gamemesh.convert(glb, p1)
    got = [c for c in warnings(report) if c not in TEXTURE_WARNINGS]
    assert got == expected
    for code in expected:
        assert words in " ".join(message(report, c) for c in expected), code
    assert all(n.code.startswith("papa.") for n in report.notes if n.level == "warning")
    files = {p.name for p in p1.parent.iterdir()}
    assert sorted(report.outputs) == sorted(str(p1.parent / f) for f in files)
    check(read(p1.read_bytes()), files)
    gamemesh.convert(p1, tmp_path / "again.glb")
    gamemesh.convert(tmp_path / "again.glb", p2)
    assert_same_files(p1.parent, p2.parent)


def test_rigid_clip_moves_the_parts_as_the_glb_did(tmp_path: Path) -> None:
    scene = rigid_scene()
    glb = tmp_path / "rigid.glb"
    gamemesh.save(scene, glb)
    gamemesh.convert(glb, tmp_path / "p" / "rigid.papa")
    back = gamemesh.load(tmp_path / "p" / "rigid.papa")
    clip = back.animations[0]
    assert clip.name == "wave"
    src = scene.animations[0].channels[2]
    node = next(i for i, n in enumerate(back.nodes) if n.name == "part2" and n.mesh is None)
    ch = next(c for c in clip.channels if c.node == node and c.path == "rotation")
    at = np.searchsorted(ch.times, src.times - 1e-6)
    assert np.abs(np.einsum("ij,ij->i", ch.values[at], src.values)).min() > 0.9999


# -- the unit's textures ---------------------------------------------------------------------
def _png(path: Path, rgba: tuple[int, int, int, int], size: int = 8) -> Path:
    PILImage.new("RGBA", (size, size), rgba).save(path)
    return path


def test_texture_options_and_format(tmp_path: Path) -> None:
    scene = sample_scene()
    glb = tmp_path / "s.glb"
    gamemesh.save(scene, glb)
    mask = _png(tmp_path / "m.png", (255, 0, 0, 255), 16)
    mat = _png(tmp_path / "g.png", (0, 200, 0, 255), 16)
    out = tmp_path / "out" / "unit.papa"
    report = gamemesh.convert(glb, out, mask=str(mask), material=str(mat),
                              texture_format="RGBA8")
    assert not TEXTURE_WARNINGS & set(warnings(report))
    for role, rgba in (("mask", (255, 0, 0, 255)), ("material", (0, 200, 0, 255))):
        tex = read((out.parent / f"unit_{role}.papa").read_bytes()).textures[0]
        assert (tex.format, tex.width, tex.srgb) == (1, 16, False)
        assert np.frombuffer(tex.data[:4], np.uint8).tolist() == list(rgba)
    diffuse = read((out.parent / "unit_diffuse.papa").read_bytes()).textures[0]
    assert (diffuse.format, diffuse.srgb) == (1, True)
    report = gamemesh.convert(glb, tmp_path / "dxt" / "unit.papa", diffuse=str(mask),
                              texture_format="DXT1")
    assert warnings(report) == ["papa.attributes_dropped", "papa.mask_missing",
                                "papa.material_missing", "papa.material_properties_dropped"]
    tex = read((tmp_path / "dxt" / "unit_diffuse.papa").read_bytes()).textures[0]
    assert (tex.format, tex.width) == (4, 16)
    with pytest.raises(FormatError, match="--mask"):
        gamemesh.convert(glb, tmp_path / "bad" / "unit.papa", mask=str(tmp_path / "none.png"))
    assert not (tmp_path / "bad" / "unit.papa").exists()


def test_dxt_textures_settle_after_one_trip() -> None:
    from gamemesh.formats.papa import textures as tx
    from gamemesh.formats.papa.document import Texture

    tex = read(corpus(f"{UNIT}/assault_bot_diffuse.papa").read_bytes()).textures[0]
    px = tx.decode(tex)
    for code in (4, 6):
        first, mips = tx.encode(px, code)
        again, _ = tx.encode(tx.decode(Texture(0, code, tex.width, tex.height, mips, True,
                                               first)), code)
        assert again == first
        err = np.abs(tx.decode(Texture(0, code, tex.width, tex.height, mips, True, first))
                     .astype(int) - px.astype(int))[..., :3].mean()
        assert err < 2.0


def test_dropped_nodes_and_material_properties_are_warned(tmp_path: Path) -> None:
    scene = colour_scene()
    scene.add_node(Node(name="socket_muzzle", translation=(0.0, 1.0, 0.0)))
    mat = scene.add_material(Material(name="glow", emissive_factor=(1.0, 0.5, 0.0),
                                      double_sided=True))
    scene.meshes[0].primitives[0].material = mat
    notes = gamemesh.save(scene, tmp_path / "x.papa")
    by_code = {n.code: n.message for n in notes if n.level == "warning"}
    assert "socket_muzzle" in by_code["papa.nodes_dropped"]
    assert "emissive, double-sided" in by_code["papa.material_properties_dropped"]


def test_cli_texture_flags(tmp_path: Path) -> None:
    from gamemesh.cli import main

    glb = tmp_path / "s.glb"
    gamemesh.save(sample_scene(), glb)
    mask = _png(tmp_path / "m.png", (255, 0, 0, 255))
    out = tmp_path / "o" / "unit.papa"
    assert main(["convert", str(glb), str(out), "--mask", str(mask), "--material", str(mask),
                 "--texture-format", "DXT5"]) == 0
    assert read((out.parent / "unit_mask.papa").read_bytes()).textures[0].format == 6
    assert (out.parent / "unit_material.papa").exists()


def sibling_files() -> list[Any]:
    try:
        root = corpus_dir("papa")
    except pytest.skip.Exception:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no papa corpus"))]
    return [pytest.param(p, id=p.name) for p in sorted(root.rglob("*.papa"))
            if "_anim_" in p.name or p.stem.endswith(("_diffuse", "_mask", "_material"))]


@pytest.mark.parametrize("path", sibling_files())
def test_texture_and_animation_files_alone_settle_after_one_trip(path: Path,
                                                                 tmp_path: Path) -> None:
    gamemesh.convert(path, tmp_path / "a.glb", no_siblings=True)
    report = gamemesh.convert(tmp_path / "a.glb", tmp_path / "p1" / path.name)
    assert not warnings(report)
    gamemesh.convert(tmp_path / "p1" / path.name, tmp_path / "b.glb", no_siblings=True)
    gamemesh.convert(tmp_path / "b.glb", tmp_path / "p2" / path.name)
    assert_same_files(tmp_path / "p1", tmp_path / "p2")
    a, b = read(path.read_bytes()), read((tmp_path / "p1" / path.name).read_bytes())
    if a.textures:
        ta, tb = a.textures[0], b.textures[0]
        assert (tb.format, tb.srgb, tb.width, tb.mips) == (ta.format, ta.srgb, ta.width, ta.mips)
    else:
        assert b.animations[0].num_frames == a.animations[0].num_frames
