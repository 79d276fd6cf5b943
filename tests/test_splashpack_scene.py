"""SPLASHPACK <-> Scene <-> glTF: decoded textures against raw VRAM words, orientation, the GLB
validator, splashpack -> glb -> splashpack, and glTF-like scenes written for the v1 runtime."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.errors import LimitError
from gamemesh.formats.splashpack import SPEC
from gamemesh.formats.splashpack.conventions import object_rotations
from gamemesh.formats.splashpack.document import SplashpackDocument
from gamemesh.formats.splashpack.v1.to_scene import tris52
from gamemesh.registry import Context
from gamemesh.sample import sample_scene
from gamemesh.scene import Image, Material, Mesh, Node, Primitive, Scene, TextureRef
from gamemesh.scene.math import euler_to_quat, matrix_to_quat, world_matrices
from gamemesh.textures import psx
from helpers import corpus_files
from splashpack_fixtures import build_doc, corner_texels, runtime_problems

CTX = Context()
AXES = np.array([-1.0, -1.0, 1.0])


def corpus(commit: str) -> Path:
    files = [p for p in corpus_files("splashpack", "*.bin") if commit in p.name]
    assert files, commit
    return files[0]


def read(p: Path) -> SplashpackDocument:
    return SPEC.read(p.read_bytes(), CTX)


def to_scene(doc: SplashpackDocument, **options: Any) -> Scene:
    return SPEC.to_scene(doc, Context(None, options))


# -- textures: decoded texels against the raw VRAM words ---------------------------------------
def _raw_texel(doc: SplashpackDocument, tpage: int, cx: int, cy: int, u: int, v: int) -> tuple[int,
                                                                                            ...]:
    """Spec §b.8, one texel at a time, straight from the atlas and CLUT records."""
    px0, py0 = (tpage & 15) * 64, ((tpage >> 4) & 1) * 256
    mode = (tpage >> 7) & 3
    per = {0: 4, 1: 2}.get(mode, 1)
    wx, wy = px0 + u // per, py0 + v
    word = 0
    for d, px in zip(doc.atlases, doc.atlas_pixels, strict=True):
        x, y, w, h = int(d["x"]), int(d["y"]), int(d["width"]), int(d["height"])
        if x <= wx < x + w and y <= wy < y + h:
            word = int(px[wy - y, wx - x])
    if per > 1:
        bits = 16 // per
        idx = (word >> (bits * (u % per))) & ((1 << bits) - 1)
        pal = next(w for x, y, w in doc.clut_entries() if (x, y) == (cx * 16, cy))
        word = int(pal[idx]) if idx < len(pal) else 0
    r, g, b = word & 31, (word >> 5) & 31, (word >> 10) & 31
    return ((r << 3) | (r >> 2), (g << 3) | (g >> 2), (b << 3) | (b >> 2),
            0 if word == 0 else 255)


@pytest.mark.parametrize(("commit", "tpage"), [("cc1b2c8", 0x020F), ("cc1b2c8", 0x0285),
                                               ("55c1d2c", 0x0305), ("6808479", 0x0285)])
def test_decoded_pages_match_raw_vram_words(commit: str, tpage: int) -> None:
    doc = read(corpus(commit))
    scene = to_scene(doc)
    images = [im for im in scene.images if im.extras["splashpack"]["tpage"] == tpage]
    assert images
    rng = np.random.default_rng(tpage)
    for im in images:
        cx, cy = im.extras["splashpack"]["clut"]
        assert im.pixels is not None and im.pixels.shape == (256, 256, 4)
        assert im.extras["splashpack"]["bpp"] == {0: 4, 1: 8, 2: 16}[(tpage >> 7) & 3]
        for u, v in rng.integers(0, 256, size=(150, 2)):
            assert tuple(im.pixels[v, u]) == _raw_texel(doc, tpage, cx, cy, int(u), int(v))


def test_fixture_pages_decode_indices_past_the_clut_as_transparent() -> None:
    doc = SPEC.read(SPEC.write(build_doc("G"), CTX), CTX)
    scene = to_scene(doc)
    page8 = next(im for im in scene.images if im.extras["splashpack"]["bpp"] == 8).pixels
    assert page8 is not None
    # row 0: index = u % 6 -> entry 1 = pure red, entry 5 = 0x8000 (opaque black), entry 0 clear
    assert tuple(page8[0, 1]) == (255, 0, 0, 255)
    assert tuple(page8[0, 5]) == (0, 0, 0, 255)
    assert page8[0, 0, 3] == 0
    assert page8[100, 0, 3] == 0  # outside the 4-row atlas: index 0 = transparent
    page4 = next(im for im in scene.images if im.extras["splashpack"]["bpp"] == 4).pixels
    assert page4 is not None
    assert tuple(page4[0, 3]) == tuple(psx.words_to_rgba(np.uint16(3 * 0x0421 + 1)))
    mats = {m.name: m for m in scene.materials}
    assert any(m.alpha_mode == "MASK" for m in mats.values())


# -- geometry and orientation ----------------------------------------------------------------------
def _face_normal_agreement(scene: Scene) -> float:
    dots = []
    for mesh in scene.meshes:
        for p in mesh.primitives:
            if p.normals is None:
                continue
            v = p.positions.reshape(-1, 3, 3).astype(np.float64)
            fn = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
            ok = np.linalg.norm(fn, axis=1) > 1e-12
            dots.append(np.sign((fn[ok] * p.normals[::3][ok]).sum(axis=1)))
    return float(np.concatenate(dots).mean())


def test_corpus_faces_point_the_way_of_their_normals_and_the_scene_is_upright() -> None:
    for p in corpus_files("splashpack", "*.bin"):
        doc = read(p)
        scene = to_scene(doc)
        scene.validate()
        assert _face_normal_agreement(scene) > 0.99, p.name
        assert scene.extras["variant"] == f"v1-{doc.layout}"
        assert scene.extras["splashpack"]["gte_scaling"] == 100.0
        if not doc.spec_layout.has_player:
            continue
        player = next(n for n in scene.nodes if n.name == "player_start")
        nav = next(m for m in scene.meshes if m.name == "navmesh_0").primitives[0].positions
        # The eye stands above the floor under it: +Y is up after the axis change.
        xz = np.array([player.translation[0], player.translation[2]])
        near = nav[np.argmin(np.linalg.norm(nav[:, [0, 2]] - xz, axis=1))]
        assert player.translation[1] > near[1], p.name


def test_object_nodes_carry_position_rotation_and_raw_units() -> None:
    doc = SPEC.read(SPEC.write(build_doc("H"), CTX), CTX)
    scene = to_scene(doc, gte_scaling=409.6)  # 0.1 unit per raw unit
    obj0, obj1 = scene.nodes[0], scene.nodes[1]
    assert np.allclose(obj0.translation, (-10.0, 20.0, 30.0))
    assert np.allclose(obj1.translation, (5.0, 0.0, 400.0))
    # 90 degrees about Y in PSX space stays 90 degrees about Y after C R C.
    assert np.allclose(np.abs(obj1.rotation), np.abs(euler_to_quat([0, np.pi / 2, 0])), atol=1e-6)
    prim = scene.meshes[obj0.mesh or 0].primitives[0]
    # v0 = (0, 0, 0), v2 = (100, 0, 0) -> second corner after the swap: (-10, 0, 0) units
    assert np.allclose(prim.positions[:3], [[0, 0, 0], [-10.0, 0, 0], [0, 0, 10.0]])
    assert _face_normal_agreement(scene) == 1.0
    assert np.allclose(prim.normals[0], (0, 1, 0))
    assert np.allclose(prim.colors[0][0], (1.0, 0.5, 0.25))  # byte / 128: the console's modulation
    assert np.allclose(prim.texcoords[0][:3], (np.array([[0, 0], [1, 3], [3, 1]]) + 0.5) / 256)
    assert obj0.extras["splashpack"]["flags"] == 1 and obj0.extras["splashpack"]["lua_index"] == 0
    assert scene.extras["splashpack"]["scene_lua_index"] == 1
    assert scene.extras["splashpack"]["lua"][1]["source"] == "-- scene script\nlocal x = 1\n"
    nav = next(n for n in scene.nodes if n.name == "navmesh_0")
    assert nav.extras["splashpack"]["navmesh"] == 0
    assert scene.materials[scene.meshes[nav.mesh or 0].primitives[0].material or 0].unlit


def test_batched_object_rotations_match_one_matrix_at_a_time() -> None:
    """The objects' rotations go through one stacked SVD; each must have the bits the
    per-matrix path (SVD, reflection fix, scene.math.matrix_to_quat of one matrix) gives,
    half turns included."""
    rng = np.random.default_rng(7)
    turns = [np.diag(d) * 4096 for d in ((1, 1, 1), (-1, -1, 1), (1, -1, -1), (-1, 1, -1))]
    perm = np.array([[0, 1, 0], [0, 0, -1], [-1, 0, 0]]) * 4096
    raw = np.concatenate([np.array([*turns, perm, -perm]).reshape(-1, 9),
                          rng.integers(-4200, 4200, (200, 9)),
                          np.zeros((1, 9))]).astype(np.int32)
    quats, errs = object_rotations(raw)
    for k, m in enumerate(raw):
        r = AXES[:, None] * (m.astype(np.float64).reshape(3, 3) / 4096.0) * AXES[None, :]
        u, _, vt = np.linalg.svd(r)
        rot = u @ vt
        if np.linalg.det(rot) < 0:
            u[:, -1] = -u[:, -1]
            rot = u @ vt
        want = tuple(float(x) for x in matrix_to_quat(rot))
        assert repr(quats[k]) == repr(want), k
        assert errs[k] == float(np.abs(rot - r).max())


# -- glTF ----------------------------------------------------------------------------------------
def test_every_corpus_file_converts_to_a_valid_glb(tmp_path: Path, gltf_validator: Any) -> None:
    for p in corpus_files("splashpack", "*.bin"):
        out = tmp_path / (p.stem + ".glb")
        gamemesh.convert(p, out)
        report = gltf_validator(out)
        assert report["errors"] == 0 and report["warnings"] == 0
    out = tmp_path / "g.gltf"
    gamemesh.convert(corpus("441acbb"), out)
    gltf_validator(out)


def _sorted_tris(t: np.ndarray) -> list[bytes]:
    return sorted(np.ascontiguousarray(t).reshape(len(t), -1)[i].tobytes() for i in range(len(t)))


@pytest.mark.parametrize("commit", ["f8ab161", "8bc15db", "55c1d2c", "cc1b2c8", "6808479"])
def test_splashpack_to_glb_and_back_keeps_content(commit: str, tmp_path: Path) -> None:
    src = corpus(commit)
    doc = read(src)
    glb = tmp_path / "scene.glb"
    gamemesh.convert(src, glb)
    back_path = tmp_path / "back.splashpack"
    gamemesh.convert(glb, back_path, splash_version=1)  # the v1 writer under test
    back = read(back_path)
    assert runtime_problems(back) == []
    assert back.layout == ("H" if doc.layout == "H" else "G")
    assert len(back.meshes) == len(doc.meshes)
    for i in range(len(doc.meshes)):
        # Geometry is exact in fixed point (triangles regroup by material, so compare as sets).
        a, b = tris52(doc, i), back.meshes[i]
        assert _sorted_tris(a["v"]) == _sorted_tris(b["v"])
        assert (doc.objects["pos"][i] == back.objects["pos"][i]).all()
        assert (doc.objects["rot"][i] == back.objects["rot"][i]).all()
        # Colours and the texels every corner samples come back bit-exact.
        assert _sorted_tris(a["color"]) == _sorted_tris(b["color"])
        assert corner_texels(doc, i) == corner_texels(back, i)
        # Normals pass through unit floats: within 1/4096 per component (stated tolerance 2).
        oa = np.lexsort(a["v"].reshape(len(a), -1).T)
        ob = np.lexsort(b["v"].reshape(len(b), -1).T)
        diff = a["normal"][oa].astype(np.int64) - b["normal"][ob].astype(np.int64)
        assert np.abs(diff).max() <= 2
    if doc.navmeshes:
        for n0, n1 in zip(doc.navmeshes, back.navmeshes, strict=True):
            assert _sorted_tris(n0) == _sorted_tris(n1)
    else:  # layouts before E: the runtime of G needs one, a flat quad under the scene
        assert [len(n) for n in back.navmeshes] == [2]
        assert len(np.unique(back.navmeshes[0][:, :, 1])) == 1
    assert back.lua == doc.lua
    if doc.spec_layout.has_player:
        for f in ("player_pos", "player_rot", "player_height"):
            assert (back.hfield(f) == doc.hfield(f)).all()
    if doc.layout == "H":
        assert back.hfield("scene_lua") == doc.hfield("scene_lua")
        assert (back.objects["flags"] == doc.objects["flags"]).all()
    if commit in ("f8ab161", "8bc15db", "55c1d2c"):
        # Nothing was re-quantized: the same atlases and CLUTs come back.
        assert len(back.atlas_pixels) == len(doc.atlas_pixels)
        assert len(back.clut_words) == len(doc.clut_words)


def test_vram_png_export_and_lua_extract(tmp_path: Path) -> None:
    src = corpus("8bc15db")
    doc = read(src)
    gamemesh.convert(src, tmp_path / "vram.png")
    im = np.asarray(PILImage.open(tmp_path / "vram.png").convert("RGBA"))
    assert im.shape == (512, 1024, 4)
    a = doc.atlases[0]
    word = doc.atlas_pixels[0][10, 20]
    assert tuple(im[int(a["y"]) + 10, int(a["x"]) + 20, :3]) == tuple(
        psx.words_to_rgba(word)[:3])
    gamemesh.load(src, extract=str(tmp_path / "lua"))
    assert (tmp_path / "lua" / "lua_0.lua").read_bytes() == doc.lua[0]
    assert (tmp_path / "lua" / "lua_1.lua").read_bytes() == doc.lua[1]


# -- scenes from elsewhere --------------------------------------------------------------------
def _box(size: float) -> Primitive:
    c = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], np.float32)
    faces = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                      [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]],
                     dtype=np.uint32)
    pos = c * size / 2
    uv = (c[:, :2] + 1) / 2
    return Primitive(positions=pos, texcoords=[uv.astype(np.float32)],
                     indices=faces.reshape(-1))


def _quad(w: float, y: float = 0.0) -> Primitive:
    pos = np.array([[-w, y, -w], [-w, y, w], [w, y, w], [w, y, -w]], np.float32)
    uv = np.array([[0, 0], [0, 1], [1, 1], [1, 0]], np.float32)
    return Primitive(positions=pos, texcoords=[uv], normals=np.tile([[0, 1, 0]], (4, 1)).astype(
        np.float32), indices=np.array([0, 1, 2, 0, 2, 3], np.uint32))


def multi_node_scene() -> Scene:
    scene = Scene(name="built")
    yy, xx = np.mgrid[0:32, 0:64]
    grad = np.stack([xx * 4, yy * 8, (xx * yy) % 256, np.full_like(xx, 255)], -1).astype(np.uint8)
    few = np.zeros((16, 16, 4), np.uint8)
    few[:, :8] = (0, 0, 0, 255)  # opaque black must stay opaque
    few[:, 8:] = (250, 200, 10, 255)
    few[:4, :4, 3] = 0  # a transparent corner
    i_grad = scene.add_image(Image(name="grad", pixels=grad))
    i_few = scene.add_image(Image(name="few", pixels=few))
    m_grad = scene.add_material(Material(name="grad", base_color_texture=TextureRef(i_grad)))
    m_few = scene.add_material(Material(name="few", base_color_texture=TextureRef(i_few),
                                        alpha_mode="MASK"))
    m_plain = scene.add_material(Material(name="plain", base_color_factor=(0.5, 0.5, 0.5, 1)))
    box = _box(2.0)
    box.material = m_grad
    lamp = _quad(0.5)
    lamp.material = m_few
    floor = _quad(8.0, -1.0)
    floor.material = m_plain
    nav = _quad(6.0, -1.0)
    x, y, z, w = (float(c) for c in euler_to_quat([0, np.pi / 2, 0]))
    rot = (x, y, z, w)
    crate = scene.add_node(Node(name="crate", translation=(2, 0, 0), rotation=rot,
                                scale=(2, 2, 2),
                                mesh=scene.add_mesh(Mesh(name="box", primitives=[box]))))
    scene.add_node(Node(name="lamp", translation=(0, 1, 0),
                        mesh=scene.add_mesh(Mesh(name="lamp", primitives=[lamp]))), crate)
    scene.add_node(Node(name="floor", mesh=scene.add_mesh(Mesh(name="floor",
                                                               primitives=[floor]))))
    scene.add_node(Node(name="walkable", extras={"splashpack": {"navmesh": 0}},
                        mesh=scene.add_mesh(Mesh(name="nav", primitives=[nav]))))
    return scene


def _world_corners(doc: SplashpackDocument, i: int, s: float) -> np.ndarray:
    t = doc.meshes[i]
    r = doc.objects["rot"][i].reshape(3, 3).astype(np.float64) / 4096
    v = t["v"].astype(np.float64) @ r.T + doc.objects["pos"][i]
    return np.asarray(v[:, [0, 2, 1]] * AXES * s)


def test_multi_node_gltf_to_splashpack_meets_the_runtime_rules(tmp_path: Path,
                                                               gltf_validator: Any) -> None:
    scene = multi_node_scene()
    glb = tmp_path / "built.glb"
    gamemesh.save(scene, glb)
    loaded = gamemesh.load(glb)
    out = tmp_path / "built.splashpack"
    notes = gamemesh.save(loaded, out, splash_version=1)
    doc = read(out)
    assert runtime_problems(doc) == []
    codes = {n.code for n in notes}
    assert "splashpack.texture_quantized" in codes  # the gradient has > 256 colours
    assert "splashpack.gte_scaling_chosen" in codes
    assert "splashpack.navmesh_added" not in codes  # the flagged node is the navmesh
    assert [len(m) for m in doc.meshes] == [12, 2, 2]
    assert len(doc.navmeshes) == 1 and len(doc.navmeshes[0]) == 2
    bpps = sorted(int(a["width"]) for a in doc.atlases)
    assert bpps == [64, 128]  # one 4 bpp atlas (the small image and the white texel), one 8 bpp
    lengths = sorted(len(w) for w in doc.clut_words)
    assert lengths[:2] == [2, 4] and len(lengths) == 3 and lengths[2] % 2 == 0 <= 256 - lengths[2]
    # Geometry in place: world corners within a raw unit (plus the 4.12 rotation's rounding).
    chosen = next(n.message for n in notes if n.code == "splashpack.gte_scaling_chosen")
    s = float(re.search(r"GTEScaling ([0-9.e+-]+)", chosen).group(1)) / 4096  # type: ignore[union-attr]
    worlds = world_matrices(loaded)
    box_world = loaded.meshes[0].primitives[0]
    ref = box_world.positions[box_world.triangles()] @ worlds[0][:3, :3].T + worlds[0][:3, 3]
    got = _world_corners(doc, 0, s)
    assert _close_sets(ref, got, 2 * s + 2e-3)
    # Opaque black stays opaque (0x8000), the transparent corner is 0x0000.
    few = next(w for w in doc.clut_words if len(w) == 4)
    assert 0x8000 in few and 0x0000 in few
    floor = doc.meshes[2]
    assert (floor["color"][:, :, :3] == 64).all()  # 0.5 factor x neutral 128 on a white texel
    # ... and the written file converts to a valid, right-way-round glTF again.
    again = tmp_path / "again.glb"
    gamemesh.convert(out, again)
    gltf_validator(again)
    assert _face_normal_agreement(gamemesh.load(again)) > 0.99


def _close_sets(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    ka = np.sort(np.round(a.reshape(len(a), -1), 1), axis=0)
    kb = np.sort(np.round(b.reshape(len(b), -1), 1), axis=0)
    return bool(np.abs(ka - kb).max() <= tol + 0.1)


def test_sample_scene_becomes_a_valid_file_with_notes() -> None:
    ctx = Context(None, {"splash_version": 1})
    doc = SPEC.from_scene(sample_scene(), ctx)
    data = SPEC.write(doc, ctx)
    back = SPEC.read(data, CTX)
    assert runtime_problems(back) == []
    codes = {n.code for n in ctx.notes}
    assert {"splashpack.dropped", "splashpack.navmesh_added",
            "splashpack.player_default"} <= codes
    assert back.triangle_count() == sample_scene().meshes[0].primitives[0].triangle_count
    assert len(back.cluts) == 1 and len(back.clut_words[0]) == 2  # the checker's two colours


def test_layout_h_lua_option_bpp16_and_limits(tmp_path: Path) -> None:
    lua = tmp_path / "scene.lua"
    lua.write_bytes(b"print('scene')\n")
    ctx = Context(None, {"layout": "H", "lua": [str(lua)], "bpp": 16})
    doc = SPEC.from_scene(multi_node_scene(), ctx)
    back = SPEC.read(SPEC.write(doc, ctx), CTX)
    assert back.layout == "H" and back.lua == [b"print('scene')\n"]
    assert back.hfield("scene_lua") == 0 and (back.objects["flags"] == 1).all()
    assert {int(a["width"]) for a in back.atlases} == {256} and not back.clut_words
    with pytest.raises(LimitError, match="layout G or H"):
        SPEC.from_scene(multi_node_scene(), Context(None, {"layout": "C"}))
    small = Context(None, {"gte_scaling": 1.0})
    SPEC.from_scene(multi_node_scene(), small)
    assert "splashpack.clamped" in {n.code for n in small.notes}


def test_too_many_textures_is_a_limit_error() -> None:
    scene = Scene()
    rng = np.random.default_rng(3)
    for k in range(12):
        # 200 colours each: an exact 8 bpp palette, one whole 8 bpp page per texture
        colours = rng.integers(0, 256, size=(200, 4), dtype=np.uint8)
        colours[:, 3] = 255
        px = colours[rng.integers(0, 200, size=(256, 256))]
        img = scene.add_image(Image(name=f"noise{k}", pixels=px))
        prim = _quad(1.0, float(k))
        prim.material = scene.add_material(Material(base_color_texture=TextureRef(img)))
        scene.add_node(Node(mesh=scene.add_mesh(Mesh(primitives=[prim]))))
    with pytest.raises(LimitError, match="do not fit in VRAM"):
        SPEC.from_scene(scene, Context())


def test_objects_over_65535_triangles_are_split() -> None:
    n = 70_000
    rng = np.random.default_rng(5)
    pos = rng.uniform(-1, 1, size=(n * 3, 3)).astype(np.float32)
    scene = Scene()
    scene.add_node(Node(mesh=scene.add_mesh(Mesh(primitives=[Primitive(positions=pos)]))))
    ctx = Context(None, {"splash_version": 1})
    doc = SPEC.from_scene(scene, ctx)
    assert [len(m) for m in doc.meshes] == [65535, n - 65535]
    assert "splashpack.object_split" in {x.code for x in ctx.notes}
    assert SPEC.read(SPEC.write(doc, ctx), CTX).triangle_count() == n


def test_png_of_a_page_is_what_the_scene_holds() -> None:
    scene = to_scene(read(corpus("f8ab161")))
    im = scene.images[0]
    assert im.pixels is not None
    buf = io.BytesIO()
    PILImage.fromarray(im.pixels).save(buf, "PNG")
    assert np.array_equal(np.asarray(PILImage.open(buf)), im.pixels)


def test_tiny_scene_with_a_nan_fits_without_clamping() -> None:
    rng = np.random.default_rng(0)
    pos = rng.uniform(-0.01, 0.01, size=(30, 3)).astype(np.float32)
    pos[3] = np.nan
    scene = Scene()
    scene.add_node(Node(mesh=scene.add_mesh(Mesh(primitives=[Primitive(positions=pos)]))))
    ctx = Context(None, {"splash_version": 1})
    doc = SPEC.read(SPEC.write(SPEC.from_scene(scene, ctx), ctx), CTX)
    codes = {n.code for n in ctx.notes}
    assert "splashpack.clamped" not in codes and "splashpack.gte_scaling_chosen" in codes
    assert runtime_problems(doc) == []
    assert 0 < int(doc.hfield("player_height")) < 16384


def test_skewed_fixed_point_rotation_keeps_vertices_exact(tmp_path: Path) -> None:
    """A 4.12 matrix a few percent off a rotation: the node gets its nearest rotation, and the
    way back stores the original matrix and the original vertices."""
    doc = build_doc("G")
    doc.objects["rot"][0] = (4000, 30, 0, -20, 4200, 0, 0, 0, 4096)
    doc.meshes[0]["v"] *= 130  # vertices out to 14300 raw units (of 16383)
    src = tmp_path / "skew.bin"
    src.write_bytes(SPEC.write(doc, CTX))
    notes = gamemesh.convert(src, tmp_path / "skew.glb").notes
    assert "splashpack.rotation_not_orthonormal" in {n.code for n in notes}  # 2.5% off
    gamemesh.convert(tmp_path / "skew.glb", tmp_path / "back.bin")
    back = read(tmp_path / "back.bin")
    assert list(back.objects["rot"][0]) == [4000, 30, 0, -20, 4200, 0, 0, 0, 4096]
    assert _sorted_tris(back.meshes[0]["v"]) == _sorted_tris(doc.meshes[0]["v"])


def test_non_utf8_lua_survives_as_base64() -> None:
    doc = build_doc("G")
    doc.lua = [b"\xff\xfe-- latin-1 \xe9\r\n", LUA_TEXT]
    scene = to_scene(SPEC.read(SPEC.write(doc, CTX), CTX))
    entries = scene.extras["splashpack"]["lua"]
    assert "base64" in entries[0] and entries[1]["source"] == LUA_TEXT.decode()
    back = SPEC.from_scene(scene, Context())
    assert back.lua == doc.lua
    assert list(back.objects["lua_index"]) == [0, -1]


LUA_TEXT = b"-- plain\nreturn 1\n"
