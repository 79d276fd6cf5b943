"""CSG Papa written from a scene (issue 30 item 7): format 10 vertices with a tangent frame and a
shadow-map UV set, ``textured*`` shaders whose textures are linked by media path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gamemesh
from gamemesh.cli import main
from gamemesh.formats.papa.csg import tangent_frames
from gamemesh.scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef


def csg_scene(uv_sets: int = 2) -> Scene:
    """A textured quad (two triangles) with a diffuse and a normal image."""
    scene = Scene(name="rock")
    pos = np.array([[0, 0, 0], [2, 0, 0], [2, 0, -1], [0, 0, -1]], dtype=np.float32)
    uv = np.array([[0, 1], [1, 1], [1, 0], [0, 0]], dtype=np.float32)
    scene.images += [Image(name="rock_diffuse", pixels=np.full((4, 4, 4), 200, np.uint8)),
                     Image(name="rock_normal.png", pixels=np.full((4, 4, 4), 128, np.uint8))]
    mat = scene.add_material(Material(name="rock", base_color_texture=TextureRef(0),
                                      normal_texture=TextureRef(1)))
    prim = Primitive(positions=pos, normals=np.tile([0, 1, 0], (4, 1)).astype(np.float32),
                     tangents=np.tile([1, 0, 0, 1], (4, 1)).astype(np.float32),
                     texcoords=[uv, uv * 0.5][:uv_sets],
                     indices=np.array([0, 1, 2, 0, 2, 3], np.uint32), material=mat)
    scene.add_node(Node(name="rock", mesh=scene.add_mesh(Mesh(name="rock", primitives=[prim]))))
    return scene


def test_csg_model_has_format_10_textured_shader_and_linked_textures(tmp_path: Path) -> None:
    out = tmp_path / "rock.papa"
    notes = gamemesh.save(csg_scene(), out, csg="textured_normal_material")
    doc = gamemesh.read_native(out)
    assert [vb.format for vb in doc.vertex_buffers] == [10]
    v = doc.vertex_buffers[0].vertices
    # PA is Z-up: the quad lies in PA's XY plane, normal +Z; U runs along +X.
    np.testing.assert_allclose(v["normal"], np.tile([0, 0, 1], (4, 1)), atol=1e-6)
    np.testing.assert_allclose(v["tangent"], np.tile([1, 0, 0], (4, 1)), atol=1e-6)
    np.testing.assert_allclose(np.abs(v["binormal"]), np.tile([0, 1, 0], (4, 1)), atol=1e-6)
    np.testing.assert_allclose(v["texcoord1"], v["texcoord0"] * 0.5, atol=1e-6)
    mat = doc.materials[0]
    assert doc.string(mat.shader) == "textured_normal_material"
    params = {doc.string(int(p["name"])): doc.string(doc.textures[int(p["texture"])].name)
              for p in mat.textures}
    assert params == {"DiffuseTexture": "/pa/terrain/textures/rock_diffuse.papa",
                      "NormalTexture": "/pa/terrain/textures/rock_normal.papa",
                      "MaterialTexture": "/pa/terrain/textures/rock_material.papa"}
    assert all(t.linked and (t.width, t.format) == (0, 0) for t in doc.textures)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rock.papa"]  # no unit textures
    codes = {n.code for n in notes}
    assert "papa.csg_texture_unnamed" in codes  # the material has no material-map image
    assert "papa.attributes_dropped" not in codes  # the tangents went into format 10


def test_csg_paths_come_back_from_a_read_csg_model(tmp_path: Path) -> None:
    first = tmp_path / "a.papa"
    gamemesh.save(csg_scene(uv_sets=1), first, csg="textured_normal",
                  csg_texture_dir="/pa/terrain/moon/")
    scene = gamemesh.load(first)
    assert scene.materials[0].extras["papa_shader"] == "textured_normal"
    again = tmp_path / "b.papa"
    gamemesh.save(scene, again, csg="textured_normal")
    doc = gamemesh.read_native(again)
    names = sorted(doc.string(t.name) for t in doc.textures)
    assert names == ["/pa/terrain/moon/rock_diffuse.papa", "/pa/terrain/moon/rock_normal.papa"]
    v = doc.vertex_buffers[0].vertices
    np.testing.assert_array_equal(v["texcoord1"], v["texcoord0"])  # one UV set: copied


def test_csg_from_the_cli_and_its_limits(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    glb = tmp_path / "rock.glb"
    gamemesh.save(csg_scene(), glb)
    assert main(["convert", str(glb), str(tmp_path / "rock.papa"), "--csg", "textured"]) == 0
    doc = gamemesh.read_native(tmp_path / "rock.papa")
    assert doc.string(doc.materials[0].shader) == "textured" and len(doc.textures) == 1
    from gamemesh.sample import sample_scene
    with pytest.raises(gamemesh.FormatError, match="CSG model is static"):
        gamemesh.save(sample_scene(), tmp_path / "skinned.papa", csg="textured")
    capsys.readouterr()


def test_tangent_frames_survive_degenerate_uvs() -> None:
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float64)
    nrm = np.tile([0.0, 0.0, 1.0], (3, 1))
    t, b = tangent_frames(pos, nrm, np.zeros((3, 2)), np.array([[0, 1, 2]]))
    assert np.isfinite(t).all() and np.isfinite(b).all()
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0)
    np.testing.assert_allclose(np.einsum("ij,ij->i", t, nrm), 0.0, atol=1e-12)
