"""PET through the scene both ways: valid GLBs from every kind and version, scenes written
as PET (kinds, versions, limits, static scenes), PET -> GLB -> PET, and the generated samples."""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import mean_winding_dot

import gamemesh
from gamemesh.errors import LimitError
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.document import (
    MeshSection,
)
from gamemesh.formats.pet.read import read
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import section_bytes, write
from gamemesh.registry import Context
from gamemesh.sample import sample_scene
from gamemesh.scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef

anim = importlib.import_module("gamemesh.formats.pet.animation")
KINDS = ("pet", "apet", "bpet", "mpet")
VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))


def ctx(path: str | Path | None = None, **opts: Any) -> Context:
    return Context(Path(path) if path else None, opts)


def fixture(kind: str, version: tuple[int, int], escape: bool = False) -> bytes:
    return write(build(kind, version, escape=escape))


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
        assert mean_winding_dot(back) > 0.5
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
    assert mean_winding_dot(back) > 0.99


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
