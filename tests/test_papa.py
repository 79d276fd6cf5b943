"""Papa (.papa): native round trips on the real corpus and generated fixtures, byte layouts,
the scene conversion (axes, winding, skin, animations, textures) and whole units."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import corpus_dir, corpus_files

import gamemesh
from gamemesh.formats.papa import SPEC
from gamemesh.formats.papa.document import (
    NONE16,
)
from gamemesh.formats.papa.info import info
from gamemesh.formats.papa.read import read
from gamemesh.formats.papa.to_scene import mat_to_gl
from gamemesh.formats.papa.write import write
from gamemesh.registry import Context
from gamemesh.scene.math import face_normals, world_matrices

UNIT = "official_2014/pa/units/land_bots/assault_bot"


def ctx(path: Path | None = None, **opts: Any) -> Context:
    return Context(path, opts)


def corpus(rel: str) -> Path:
    return corpus_dir("papa") / rel


def winding_agrees(scene: gamemesh.Scene) -> list[float]:
    """Per triangle primitive: the share of faces whose winding normal agrees with the vertex
    normals (degenerate faces excluded)."""
    out = []
    for mesh in scene.meshes:
        for p in mesh.primitives:
            if p.mode != 4 or p.normals is None:
                continue
            tris = p.triangles()
            fn = face_normals(p.positions, tris)
            keep = np.linalg.norm(fn, axis=1) > 1e-12
            vn = p.normals[tris].sum(axis=1)
            out.append(float(np.mean(np.einsum("ij,ij->i", fn[keep], vn[keep]) > 0)))
    return out


# -- corpus ----------------------------------------------------------------------------------
def corpus_params() -> list[Any]:
    try:
        return [pytest.param(p, id=p.name) for p in corpus_files("papa", "*.papa")]
    except pytest.skip.Exception:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no papa corpus"))]


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_round_trip_byte_exact(path: Path) -> None:
    data = path.read_bytes()
    doc = read(data)
    assert write(doc) == data
    # The papatran layout rebuilt from scratch gives a file that reads back the same.
    doc.layout = None
    again = read(write(doc))
    assert [s.raw for s in again.strings] == [s.raw for s in doc.strings]
    assert len(write(doc)) == len(data)


def test_corpus_count_is_23() -> None:
    assert len(corpus_files("papa", "*.papa")) == 23


def test_fresh_layout_reproduces_papatran_files_with_index_ordered_strings() -> None:
    # Where the string data happens to be in index order, papatran's layout is reproduced
    # byte for byte without the kept offsets: proof that the section order and alignment match.
    same = 0
    for p in corpus_files("papa", "*.papa"):
        data = p.read_bytes()
        doc = read(data)
        offs = [doc.layout[("str", i)][0] for i in range(len(doc.strings))]  # type: ignore[index]
        if offs == sorted(offs):
            doc.layout = None
            assert write(doc) == data, p.name
            same += 1
    assert same >= 14


def test_assault_bot_counts() -> None:
    doc = read(corpus(f"{UNIT}/assault_bot.papa").read_bytes())
    assert len(doc.skeletons[0].bones) == 21
    assert len(doc.vertex_buffers[0].vertices) == 1270
    assert doc.vertex_buffers[0].format == 8
    assert len(doc.index_buffers[0].indices) == 2055
    assert doc.index_buffers[0].format == 0
    assert doc.string(doc.models[0].name) == "assault_bot_mesh"
    # Weights: every vertex sums to exactly 255, sorted descending.
    w = doc.vertex_buffers[0].vertices["weights"].astype(int)
    assert (w.sum(axis=1) == 255).all()
    assert (np.diff(w, axis=1) <= 0).all()
    # Material groups: first_index counts indices; the 2nd group is empty.
    g = doc.meshes[0].groups
    assert g["num_primitives"].tolist() == [685, 0]
    assert g["first_index"].tolist() == [0, 2055]


def test_air_factory_has_two_models() -> None:
    doc = read(corpus("official_2014/pa/units/air/air_factory/air_factory.papa").read_bytes())
    assert [doc.string(m.name) for m in doc.models] == ["air_factory_mesh", "air_factory_nav"]
    assert [m.skeleton for m in doc.models] == [0, -1]
    assert [vb.format for vb in doc.vertex_buffers] == [8, 7]
    assert info(doc)["models"] == 2
    # A file's own block layout is no news (issue 31): only a scene's fresh layout is named.
    assert "layout" not in info(doc)
    doc.layout = None
    assert info(doc)["layout"] == "papatran"


def test_transport_string_length_counts_code_points() -> None:
    data = corpus("w40k_mod_2024/pa/units/air/transport/transport.papa").read_bytes()
    doc = read(data)
    s = doc.strings[2]
    assert s.text == "平面" and s.length == 2 and len(s.raw) == 6
    assert doc.vertex_buffers[0].format == 5
    assert write(doc) == data


def test_signatures_kept() -> None:
    jam = read(corpus("w40k_mod_2024/pa_ex1/units/land/radar_jammer/radar_jammer.papa")
               .read_bytes())
    loop = read(corpus("w40k_mod_2024/pa_ex1/units/land/radar_jammer/radar_jammer_anim_loop.papa")
                .read_bytes())
    assert jam.signature == b"Anon2\0" and info(jam)["signature"] == "Anon2"
    assert loop.signature == b"Luther"
    assert loop.animations[0].transforms.shape == (361, 10)


def test_fighter_vector_params_are_8_aligned() -> None:
    doc = read(corpus("official_2014/pa/units/air/fighter/fighter.papa").read_bytes())
    assert doc.layout is not None
    assert [doc.layout[("vec", i)][0] for i in range(2)] == [384, 408]
    assert doc.materials[0].vector_stride == 20
    assert doc.string(int(doc.materials[0].vectors[0]["name"])) == "DiffuseColor"


def test_texture_and_animation_files() -> None:
    tex = read(corpus(f"{UNIT}/assault_bot_diffuse.papa").read_bytes())
    t = tex.textures[0]
    assert (t.format, t.width, t.height, t.mips, t.srgb) == (6, 128, 128, 7, True)
    assert tex.layout is not None and tex.layout[("tex", 0)][0] == 128
    assert tex.string(t.name) == "/pa/units/land/assault_bot/assault_bot_diffuse.png"
    anim = read(corpus(f"{UNIT}/assault_bot_anim_run.papa").read_bytes())
    a = anim.animations[0]
    assert a.transforms.shape == (28, 21) and (a.fps_num, a.fps_den) == (60, 1)
    assert a.name == NONE16
    tiny = read(corpus("official_2014/pa/units/air/fighter_adv/fighter_adv_anim_landed.papa")
                .read_bytes())
    assert tiny.animations[0].transforms.shape == (5, 3)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_to_scene_winding_and_validity(path: Path) -> None:
    doc = read(path.read_bytes())
    scene = SPEC.to_scene(doc, ctx())  # type: ignore[misc]
    scene.validate()
    for share in winding_agrees(scene):
        assert share > 0.95, path.name
    worlds = world_matrices(scene)
    for si, skin in enumerate(scene.skins):
        # At bind pose, joint world . IBM = model2scene . mesh2model (in glTF axes) for every
        # joint: the papatran identity bind2bone = inverse(global bind pose) holds.
        model = doc.models[0]
        pa = model.model2scene.reshape(4, 4).T @ model.bindings[si].mesh2model.reshape(4, 4).T
        expected = mat_to_gl(pa.T.reshape(16))
        assert skin.inverse_bind_matrices is not None
        for k, j in enumerate(skin.joints):
            np.testing.assert_allclose(worlds[j] @ skin.inverse_bind_matrices[k], expected,
                                       atol=2e-3)
    for mesh in scene.meshes:
        for p in mesh.primitives:
            if p.weights is not None and p.joints is not None:
                np.testing.assert_allclose(p.weights.sum(axis=1), 1.0, atol=1e-6)
                assert (p.joints[p.weights == 0] == 0).all()


def test_assault_bot_stands_upright_facing_plus_z() -> None:
    scene = SPEC.to_scene(read(corpus(f"{UNIT}/assault_bot.papa").read_bytes()), ctx())  # type: ignore[misc]
    pos = scene.meshes[0].primitives[0].positions
    assert pos[:, 1].min() > -0.01 and 3.4 < pos[:, 1].max() < 3.7  # feet at 0, head at ~3.6
    worlds = world_matrices(scene)
    by_name = {n.name: i for i, n in enumerate(scene.nodes)}
    # PA muzzles point -Y; in glTF they are in front (+Z). The left shoulder stays at +X.
    assert worlds[by_name["socket_rightMuzzle"]][2, 3] > 0.3
    assert worlds[by_name["bone_leftShoulder"]][0, 3] > 0.3


def test_titan_shear_scale_kept_as_scale() -> None:
    scene = SPEC.to_scene(read(corpus("w40k_mod_2024/pa_ex1/units/air/titan_air/titan_air.papa")
                               .read_bytes()), ctx())  # type: ignore[misc]
    node = next(n for n in scene.nodes if n.name == "socket_muzzle_center")
    np.testing.assert_allclose(node.scale, (2.4222,) * 3, atol=1e-3)


def test_capsule_matrices_applied() -> None:
    doc = read(corpus("official_2014/pa/units/air/missile_orbital_capsule01/"
                      "missile_orbital_capsule01.papa").read_bytes())
    m2s = doc.models[0].model2scene.reshape(4, 4).T
    assert not np.allclose(m2s, np.eye(4))
    scene = SPEC.to_scene(doc, ctx())  # type: ignore[misc]
    model = scene.nodes[scene.roots[0]]
    # -90 deg about X (PA) is a rotation, so the node has a non-identity rotation in glTF.
    assert not np.allclose(model.rotation, (0, 0, 0, 1))


# -- whole units -----------------------------------------------------------------------------
def test_unit_loads_with_textures_and_clips() -> None:
    scene = gamemesh.load(corpus(f"{UNIT}/assault_bot.papa"))
    assert sorted(a.name for a in scene.animations) == ["idle", "run"]
    assert len(scene.images) == 3
    roles = sorted(img.extras["role"] for img in scene.images)
    assert roles == ["diffuse", "mask", "material"]
    mat = scene.materials[0]
    assert mat.base_color_texture is not None
    assert scene.images[mat.base_color_texture.image].extras["srgb"] is True
    assert mat.extras["mask_image"] == roles.index("mask") or "mask_image" in mat.extras
    run = next(a for a in scene.animations if a.name == "run")
    assert len(run.channels) == 42
    np.testing.assert_allclose(run.channels[0].times[:3], [0, 1 / 60, 2 / 60], atol=1e-6)
    for ch in run.channels:
        assert (np.diff(ch.times) > 0).all()
        if ch.path == "rotation":
            np.testing.assert_allclose(np.linalg.norm(ch.values, axis=1), 1.0, atol=1e-5)
            assert (np.einsum("ij,ij->i", ch.values[1:], ch.values[:-1]) >= 0).all()
    assert [str(p.name) for p in SPEC.siblings(corpus(f"{UNIT}/assault_bot.papa"))] == [  # type: ignore[misc]
        "assault_bot_diffuse.papa", "assault_bot_mask.papa", "assault_bot_material.papa",
        "assault_bot_anim_idle.papa", "assault_bot_anim_run.papa"]


def test_unit_options(tmp_path: Path) -> None:
    model = corpus(f"{UNIT}/assault_bot.papa")
    bare = gamemesh.load(model, no_siblings=True)
    assert not bare.images and not bare.animations
    run = str(corpus(f"{UNIT}/assault_bot_anim_run.papa"))
    one = gamemesh.load(model, no_siblings=True, anim=[run])
    assert [a.name for a in one.animations] == ["run"]
    plain = gamemesh.load(model)
    tinted = gamemesh.load(model, team_color="ff0000")
    a = plain.images[plain.materials[0].base_color_texture.image].pixels  # type: ignore[union-attr]
    b = tinted.images[tinted.materials[0].base_color_texture.image].pixels  # type: ignore[union-attr]
    assert a is not None and b is not None
    assert (b[..., 1] <= a[..., 1]).all() and (b[..., 1] < a[..., 1]).any()
    assert any(n.code == "papa.team_color" for n in tinted.notes)
    # A model alone in a folder: converted, with a note per missing texture.
    lone = tmp_path / "assault_bot.papa"
    lone.write_bytes(model.read_bytes())
    scene = gamemesh.load(lone)
    assert sum(n.code == "papa.texture_missing" for n in scene.notes) == 3


def test_unit_to_glb_validates(tmp_path: Path, gltf_validator: Any) -> None:
    out = tmp_path / "assault_bot.glb"
    gamemesh.convert(corpus(f"{UNIT}/assault_bot.papa"), out)
    gltf_validator(out)
    back = gamemesh.load(out)
    assert len(back.animations) == 2 and len(back.images) == 3 and len(back.skins) == 1


def test_every_corpus_file_to_glb_validates(tmp_path: Path, gltf_validator: Any) -> None:
    for p in corpus_files("papa", "*.papa"):
        out = tmp_path / f"{p.stem}.glb"
        gamemesh.convert(p, out)
        gltf_validator(out)


def test_texture_file_to_png(tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    report = gamemesh.convert(corpus(f"{UNIT}/assault_bot_diffuse.papa"), out)
    assert report.outputs == [str(out)]
    from PIL import Image as PILImage

    with PILImage.open(out) as im:
        assert im.size == (128, 128) and im.mode == "RGBA"


def test_animation_only_file_makes_a_skeleton() -> None:
    scene = gamemesh.load(corpus(f"{UNIT}/assault_bot_anim_idle.papa"))
    assert len(scene.nodes) == 22 and scene.nodes[0].name == "skeleton"
    assert [a.name for a in scene.animations] == ["idle"]
    assert len(scene.animations[0].channels) == 42


def bind_pose_world(scene: gamemesh.Scene) -> np.ndarray:
    """Every triangle corner in world space at bind pose (skinned: sum of w . joint world .
    IBM; static: the node's world matrix)."""
    worlds = world_matrices(scene)
    out = []
    for i, node in enumerate(scene.nodes):
        if node.mesh is None:
            continue
        for p in scene.meshes[node.mesh].primitives:
            pos = np.c_[p.positions.astype(np.float64), np.ones(len(p.positions))]
            if node.skin is not None and p.joints is not None and p.weights is not None:
                skin = scene.skins[node.skin]
                assert skin.inverse_bind_matrices is not None
                mats = np.stack([worlds[j] @ skin.inverse_bind_matrices[k]
                                 for k, j in enumerate(skin.joints)])
                m = np.einsum("vk,vkij->vij", p.weights, mats[p.joints])
                w = np.einsum("vij,vj->vi", m, pos)[:, :3]
            else:
                w = (pos @ worlds[i].T)[:, :3]
            out.append(w[p.triangles().reshape(-1)])
    return np.concatenate(out)


def model_params() -> list[Any]:
    return [p for p in corpus_params() if p.values[0] is None or (
        "_anim_" not in p.values[0].name
        and not p.values[0].stem.endswith(("_diffuse", "_mask", "_material")))]


@pytest.mark.parametrize("path", model_params())
def test_papa_glb_papa_keeps_world_geometry(path: Path, tmp_path: Path) -> None:
    first = gamemesh.load(path, no_siblings=True)
    glb = tmp_path / f"{path.stem}.glb"
    gamemesh.save(first, glb)
    gamemesh.convert(glb, tmp_path / f"{path.stem}.papa")
    again = gamemesh.load(tmp_path / f"{path.stem}.papa", no_siblings=True)
    a, b = bind_pose_world(first), bind_pose_world(again)
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("size", [(4, 4), (16, 8), (13, 6)])
def test_bcn_decodes_into_its_buffer_as_pillow_does(n: int, size: tuple[int, int]) -> None:
    """DXT1/3/5 decoded straight into the numpy buffer equal Pillow's own decode, cropped."""
    from PIL import Image as PILImage

    from gamemesh.textures import bcn_size, decode_bcn

    w, h = size
    data = np.random.default_rng(n).integers(0, 256, bcn_size(w, h, n), np.uint8).tobytes()
    pw, ph = (w + 3) // 4 * 4, (h + 3) // 4 * 4
    ref = np.asarray(PILImage.frombytes("RGBA", (pw, ph), data, "bcn", n))[:h, :w]
    got = decode_bcn(data, w, h, n)
    assert got.shape == (h, w, 4) and got.flags.writeable
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("shape", [(5, 7), (3, 9, 2), (4, 4, 3), (6, 2, 4)])
def test_png_round_trips_through_pillow(shape: tuple[int, ...]) -> None:
    import io

    from PIL import Image as PILImage

    from gamemesh.textures import encode_png

    px = np.random.default_rng(len(shape)).integers(0, 256, shape, np.uint8)
    with PILImage.open(io.BytesIO(encode_png(px))) as im:
        back = np.asarray(im)
    assert np.array_equal(back.reshape(px.shape), px)


def test_bcn_encoder_output_is_checked_before_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow before 11.2 accepts pixel_format and writes raw pixels under it: the blocks cut
    from that would be noise, so encode_bcn refuses an output whose FourCC or size is wrong."""
    from PIL import Image as PILImage

    from gamemesh.errors import LimitError
    from gamemesh.textures import decode_bcn, encode_bcn

    px = np.zeros((8, 8, 4), np.uint8)
    px[..., 0], px[..., 3] = 200, 255
    blocks = encode_bcn(px, 3)
    assert len(blocks) == 64
    assert np.abs(decode_bcn(blocks, 8, 8, 3).astype(int) - px).max() <= 8  # 5-bit red
    real_save = PILImage.Image.save

    def old_pillow(self: Any, fp: Any, format: Any = None, **kw: Any) -> None:
        kw.pop("pixel_format", None)  # what Pillow 11.1 did: uncompressed RGBA
        real_save(self, fp, format, **kw)

    monkeypatch.setattr(PILImage.Image, "save", old_pillow)
    with pytest.raises(LimitError, match=r"did not compress to DXT5.*got b'\\x00"):
        encode_bcn(px, 3)
