"""Papa fixtures made by our own writer: every vertex, texture and index format no corpus file
has, the spec's worked byte layouts, from_scene and PA's limits, bad input, and speed."""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import (
    assert_mutations_fail_cleanly,
    assert_truncations_fail_cleanly,
    corpus_dir,
    replay_crashes,
)

import gamemesh
from gamemesh.errors import (
    BadMagicError,
    CorruptDataError,
    LimitError,
    TruncatedError,
    UnsupportedVersionError,
)
from gamemesh.formats.papa import SPEC
from gamemesh.formats.papa import layout as lay
from gamemesh.formats.papa.document import (
    NONE16,
    Animation,
    IndexBuffer,
    Material,
    Mesh,
    MeshBinding,
    Model,
    PapaDocument,
    PapaString,
    Texture,
    VertexBuffer,
)
from gamemesh.formats.papa.info import info
from gamemesh.formats.papa.read import read
from gamemesh.formats.papa.textures import export_png
from gamemesh.formats.papa.write import write
from gamemesh.registry import Context
from gamemesh.sample import sample_scene
from gamemesh.scene import Mesh as SMesh
from gamemesh.scene import Node, Primitive, Scene, Skin

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "papa"


def ctx(path: Path | None = None, **opts: Any) -> Context:
    return Context(path, opts)


# -- fixture builders ------------------------------------------------------------------------
def triangle_doc(fmt: int, index_fmt: int = 0) -> PapaDocument:
    """One triangle in vertex format ``fmt`` facing +Z (PA up), all attributes set."""
    dt = lay.VERTEX_FORMATS[fmt][1]
    v = np.zeros(3, dtype=dt)
    v["position"] = [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    names = dt.names or ()
    if "normal" in names:
        v["normal"] = [0, 0, 1]
    if "color" in names:
        v["color"] = [[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 128]]
    for k in range(3):
        if f"texcoord{k}" in names:
            v[f"texcoord{k}"] = [[0, 0], [1, 0], [0, 1]]
            v[f"texcoord{k}"][:, 0] += k
    if "tangent" in names:
        v["tangent"] = [1, 0, 0]
        v["binormal"] = [0, 1, 0]
    if "weights" in names:
        v["weights"] = [[255, 0, 0, 0], [200, 55, 0, 0], [128, 127, 0, 0]]
        v["bones"] = [[0, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]]
    doc = PapaDocument()
    doc.vertex_buffers.append(VertexBuffer(fmt, v))
    idx = np.array([0, 1, 2], dtype=lay.INDEX_FORMATS[index_fmt][1])
    doc.index_buffers.append(IndexBuffer(index_fmt, idx))
    groups = np.zeros(1, dtype=lay.MATERIAL_GROUP)
    groups[0] = (NONE16, 0, 0, 1, 2, (0, 0, 0))
    doc.meshes.append(Mesh(0, 0, groups))
    vec = np.zeros(1, dtype=lay.VECTOR_PARAM)
    vec[0] = (doc.add_string("DiffuseColor"), 0, (0.5, 0.25, 1.0, 0.0))
    doc.materials.append(Material(doc.add_string("solid"), vec))
    name = doc.add_string("tri")
    model = Model(name, -1, bindings=[MeshBinding(name, 0)])
    if fmt == 8:
        from gamemesh.formats.papa.document import Skeleton

        bones = np.zeros(2, dtype=lay.BONE)
        bones["name"] = [doc.add_string("root"), doc.add_string("tip")]
        bones["parent"] = [-1, 0]
        bones["translation"] = [[0, 0, 0], [0, 0, 1]]
        bones["rotation"] = [0, 0, 0, 1]
        bones["shear_scale"] = np.eye(3).reshape(9)
        b2b = np.tile(np.eye(4), (2, 1, 1))
        b2b[1, 2, 3] = -1.0
        bones["bind2bone"] = b2b.transpose(0, 2, 1).reshape(2, 16)
        doc.skeletons.append(Skeleton(bones))
        model.skeleton = 0
        model.bindings[0].bone_map = np.array([0, 1], dtype="<u2")
    doc.models.append(model)
    return doc


def texture_doc(code: int, w: int = 8, h: int = 4) -> tuple[PapaDocument, np.ndarray]:
    """A texture in format ``code`` holding a known gradient; returns the RGBA it stands for."""
    yy, xx = np.mgrid[0:h, 0:w]
    rgba = np.zeros((h, w, 4), dtype=np.uint8)
    rgba[..., 0] = xx * 255 // max(w - 1, 1)
    rgba[..., 1] = yy * 255 // max(h - 1, 1)
    rgba[..., 2] = 77
    rgba[..., 3] = 200
    if code == 1:
        data = rgba.tobytes()
    elif code == 2:
        data = np.concatenate([rgba[..., :3], np.full((h, w, 1), 0xFF, np.uint8)], 2).tobytes()
    elif code == 3:
        data = rgba[..., [2, 1, 0, 3]].copy().tobytes()
    elif code == 13:
        data = rgba[..., 0].copy().tobytes()
    elif code == 14:
        data = rgba[..., :2].copy().tobytes()
    elif code in (7, 8, 9):
        ch = {7: 1, 8: 2, 9: 4}[code]
        data = (rgba[..., :ch].astype("<f4") / 255.0).tobytes()
    elif code in (10, 11, 12):
        ch = {10: 1, 11: 2, 12: 4}[code]
        data = (rgba[..., :ch].astype("<f2") / np.float16(255.0)).astype("<f2").tobytes()
    else:
        from gamemesh.formats.papa.textures import encode

        data, mips = encode(rgba, code)
        doc = PapaDocument(strings=[PapaString.of("/pa/test/t.png")],
                           textures=[Texture(0, code, w, h, mips, code == 6, data)])
        return doc, rgba
    doc = PapaDocument(strings=[PapaString.of("/pa/test/t.png")],
                       textures=[Texture(0, code, w, h, 1, False, data)])
    return doc, rgba


def roundtrip(doc: PapaDocument) -> tuple[bytes, PapaDocument]:
    data = write(doc)
    back = read(data)
    assert write(back) == data
    return data, back


# -- worked byte layouts ---------------------------------------------------------------------
def test_header_only_file_bytes() -> None:
    data = write(PapaDocument())
    expected = b"apaP" + struct.pack("<HH", 0, 3) + b"\0" * 18 + b"\0" * 6 + b"\xff" * 72
    assert data == expected and len(data) == 104
    scene = SPEC.to_scene(read(data), ctx())  # type: ignore[misc]
    assert not scene.nodes
    assert info(read(data))["kind"] == "header-only"


def test_string_layout_matches_spec() -> None:
    # Strings: table at 104 (16 bytes each), data NUL-terminated and 8-aligned after it; a
    # 7-char string takes exactly 8 bytes.
    doc = PapaDocument(strings=[PapaString.of("abcdefg"), PapaString.of("hi")])
    data = write(doc)
    assert struct.unpack_from("<9H", data, 8) == (2, 0, 0, 0, 0, 0, 0, 0, 0)
    assert struct.unpack_from("<q", data, 32) == (104,)
    assert struct.unpack_from("<IIq", data, 104) == (7, 0, 136)
    assert struct.unpack_from("<IIq", data, 120) == (2, 0, 144)
    assert data[136:144] == b"abcdefg\0" and data[144:152] == b"hi\0\0\0\0\0\0"
    assert len(data) == 152


def test_texture_only_layout_puts_data_at_128() -> None:
    doc, _ = texture_doc(4, 8, 8)
    data = write(doc)
    # texture table at 104 (24 bytes) -> data at 128, then the string section.
    assert struct.unpack_from("<q", data, 32 + 8) == (104,)
    _name, fmt, ms, w, h, size, off = struct.unpack_from("<HBBHHQq", data, 104)
    assert (fmt, w, h, off) == (4, 8, 8, 128)
    assert ms == 3  # 8x8 -> 8, 4, 2: mips = log2(8)
    assert size == 32 + 8 + 8
    assert data[128:128 + size] == doc.textures[0].data


def test_model_layout_section_order() -> None:
    doc = triangle_doc(8)
    data = write(doc)
    offsets = struct.unpack_from("<9q", data, 32)
    order = sorted((o, lay.SECTIONS[s]) for s, o in enumerate(offsets) if o >= 0)
    assert [n for _, n in order] == ["models", "meshes", "materials", "vertex_buffers",
                                     "index_buffers", "skeletons", "strings"]
    assert offsets[lay.S_MODEL] == 104
    assert all(o % 8 == 0 for o in offsets if o >= 0) and len(data) % 8 == 0
    # Model entry: skeleton 0, 1 binding; the binding table follows the 80-byte model table.
    assert struct.unpack_from("<HhHH", data, 104)[1:3] == (0, 1)
    assert struct.unpack_from("<q", data, 104 + 72) == (184,)
    # Its bone map (2 x u16) follows the 80-byte binding, 8-aligned.
    assert struct.unpack_from("<HHH", data, 184)[2] == 2
    assert struct.unpack_from("<q", data, 184 + 72) == (264,)
    assert struct.unpack_from("<HH", data, 264) == (0, 1)


# -- every vertex / index / texture format ---------------------------------------------------
@pytest.mark.parametrize("fmt", list(range(12)))
def test_vertex_formats(fmt: int) -> None:
    doc = triangle_doc(fmt)
    _, back = roundtrip(doc)
    vb = back.vertex_buffers[0]
    assert vb.format == fmt and vb.vertices.dtype.itemsize == lay.VERTEX_FORMATS[fmt][1].itemsize
    np.testing.assert_array_equal(vb.vertices["position"],
                                  doc.vertex_buffers[0].vertices["position"])
    scene = SPEC.to_scene(back, ctx())  # type: ignore[misc]
    scene.validate()
    p = scene.meshes[0].primitives[0]
    # PA (x, y, z) -> glTF (x, z, -y): the PA +Y vertex goes to glTF -Z.
    np.testing.assert_allclose(p.positions[2], [0, 0, -1])
    names = lay.VERTEX_FORMATS[fmt][1].names or ()
    if "normal" in names:
        np.testing.assert_allclose(p.normals, [[0, 1, 0]] * 3)  # PA up (+Z) -> glTF up (+Y)
    assert len(p.texcoords) == sum(f"texcoord{k}" in names for k in range(3))
    if "color" in names:
        np.testing.assert_allclose(p.colors[0][2], [0, 0, 1, 128 / 255])
    if "tangent" in names:
        assert p.tangents is not None
        np.testing.assert_allclose(p.tangents[0], [1, 0, 0, 1])
    if fmt == 8:
        assert p.joints is not None and p.weights is not None
        np.testing.assert_allclose(p.weights[1], [200 / 255, 55 / 255, 0, 0])
        assert p.joints[2].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("fmt", [12, 13, 14])
def test_unknown_vertex_layouts_rejected_by_name(fmt: int) -> None:
    doc = triangle_doc(0)
    data = bytearray(write(doc))
    vb_table = struct.unpack_from("<q", data, 32 + 2 * 8)[0]
    data[vb_table] = fmt
    with pytest.raises(UnsupportedVersionError, match=lay.UNSUPPORTED_VERTEX_FORMATS[fmt]):
        read(bytes(data))


def test_u32_indices() -> None:
    doc = triangle_doc(5, index_fmt=1)
    _, back = roundtrip(doc)
    assert back.index_buffers[0].format == 1 and back.index_buffers[0].indices.dtype == "<u4"
    assert info(back)["index_formats"] == ["UInt32"]


@pytest.mark.parametrize("code", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14])
def test_texture_formats_decode(code: int) -> None:
    doc, rgba = texture_doc(code)
    _, back = roundtrip(doc)
    scene = SPEC.to_scene(back, ctx())  # type: ignore[misc]
    px = scene.images[0].pixels
    assert px is not None and px.shape == (4, 8, 4)
    if code in (4, 5, 6):
        # DXT is lossy (4 colours on a line per 4x4 block): compare the mean error.
        err = np.abs(px[..., :3].astype(int) - rgba[..., :3].astype(int)).mean()
        assert err < 30
        return
    channels = {1: 4, 2: 3, 3: 4, 13: 1, 14: 2, 7: 1, 8: 2, 9: 4, 10: 1, 11: 2, 12: 4}[code]
    tol = 1 if code in (7, 8, 9, 10, 11, 12) else 0
    np.testing.assert_allclose(px[..., :channels].astype(int), rgba[..., :channels].astype(int),
                               atol=tol)
    if code == 2:
        assert (px[..., 3] == 255).all()
    if code == 13:
        assert (px[..., 1] == px[..., 0]).all()  # R8 shown as grey
    assert scene.images[0].extras["papa_format"] == lay.TEXTURE_FORMATS[code]


def test_render_target_texture_formats_are_kept_and_noted() -> None:
    doc = PapaDocument(strings=[PapaString.of("depth")],
                       textures=[Texture(0, 16, 2, 2, 1, False, b"\0" * 8)])
    data, back = roundtrip(doc)
    c = ctx()
    scene = SPEC.to_scene(back, c)  # type: ignore[misc]
    assert not scene.images
    assert any(n.code == "papa.texture_not_decoded" and "D16" in n.message for n in c.notes)
    bad = bytearray(data)
    bad[104 + 2] = 99
    with pytest.raises(UnsupportedVersionError, match="texture format"):
        read(bytes(bad))


def test_mips_and_srgb_in_extras() -> None:
    doc, _ = texture_doc(6, 16, 16)
    scene = SPEC.to_scene(read(write(doc)), ctx())  # type: ignore[misc]
    ex = scene.images[0].extras
    assert ex["srgb"] is True and ex["mips"] == 4
    assert ex["mip_sizes"] == [[16, 16], [8, 8], [4, 4], [2, 2]]


def test_linked_texture_with_texture_root(tmp_path: Path) -> None:
    # A CSG-style model: a textured_normal material whose textures are linked entries.
    doc = triangle_doc(10)
    doc.materials[0] = Material(doc.add_string("textured_normal"))
    d_name, n_name = "/pa/terrain/rock_diffuse.papa", "/pa/terrain/rock_normal.papa"
    doc.textures = [Texture(doc.add_string(d_name), 0, 0, 0, 0, False, None),
                    Texture(doc.add_string(n_name), 0, 0, 0, 0, False, None)]
    tp = np.zeros(2, dtype=lay.TEXTURE_PARAM)
    tp[0] = (doc.add_string("DiffuseTexture"), 0)
    tp[1] = (doc.add_string("NormalTexture"), 1)
    doc.materials[0].textures = tp
    data, back = roundtrip(doc)
    tex_table = struct.unpack_from("<q", data, 40)[0]
    assert struct.unpack_from("<q", data, tex_table + 16) == (-1,)
    assert back.textures[0].linked
    root = tmp_path / "media"
    (root / "pa" / "terrain").mkdir(parents=True)
    for name in (d_name, n_name):
        tdoc, _ = texture_doc(1)
        (root / name.lstrip("/")).write_bytes(write(tdoc))
    model = tmp_path / "rock.papa"
    model.write_bytes(data)
    scene = gamemesh.load(model, texture_root=str(root))
    mat = scene.materials[0]
    assert mat.base_color_texture is not None and mat.normal_texture is not None
    missing = gamemesh.load(model)
    assert any(n.code == "papa.texture_missing" for n in missing.notes)
    assert missing.materials[0].base_color_texture is None


# -- animations ------------------------------------------------------------------------------
def test_animation_frame_major_and_bound_by_name() -> None:
    doc = triangle_doc(8)
    tr = np.zeros((3, 2), dtype=lay.TRANSFORM)
    tr["rotation"] = [0, 0, 0, 1]
    tr["translation"][:, 0] = [[0, 0, 0], [0, 0, 1], [0, 0, 2]]  # track 0 = "tip"
    tr["rotation"][2, 1] = [0, 0, 0, -1]  # sign flip on the last key of "root"
    names = np.array([doc.add_string("tip"), doc.add_string("ghost")], dtype="<u2")
    doc.animations.append(Animation(NONE16, names, tr, 30, 1))
    data, back = roundtrip(doc)
    anim_off = struct.unpack_from("<q", data, 32 + 8 * 8)[0]
    assert struct.unpack_from("<HHIII", data, anim_off) == (NONE16, 2, 3, 30, 1)
    c = ctx()
    scene = SPEC.to_scene(back, c)  # type: ignore[misc]
    anim = scene.animations[0]
    tip = next(i for i, n in enumerate(scene.nodes) if n.name == "tip")
    ch = next(x for x in anim.channels if x.node == tip and x.path == "translation")
    np.testing.assert_allclose(ch.times, [0, 1 / 30, 2 / 30], atol=1e-7)
    np.testing.assert_allclose(ch.values[:, 1], [0, 1, 2])  # PA z -> glTF y
    assert any(n.code == "papa.track_unbound" and "ghost" in n.message for n in c.notes)
    assert write(back) == data  # the unbound track stays in the file


def test_quaternion_signs_made_continuous() -> None:
    from gamemesh.formats.papa.to_scene import continuous_quats

    q = np.array([[0, 0, 0, 1], [0, 0, 0, -1], [0, 0.1, 0, -0.99], [0, 0, 0, 1.0]])
    out = continuous_quats(q)
    assert (np.einsum("ij,ij->i", out[1:], out[:-1]) > 0).all()
    np.testing.assert_allclose(np.abs(out), np.abs(q))


# -- from_scene ------------------------------------------------------------------------------
def test_sample_scene_unit_round_trip(tmp_path: Path, gltf_validator: Any) -> None:
    scene = sample_scene()
    out = tmp_path / "column.papa"
    report = gamemesh.save(scene, out)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["column.papa", "column_anim_bend.papa", "column_anim_twist.papa",
                     "column_diffuse.papa"]
    # Format 8 has no colour; a unit without mask and material textures is said each time.
    # (the save path's loss check, papa.lost.*, is tested in test_road_back.py)
    assert sorted(n.code for n in report if n.level == "warning" and ".lost." not in n.code) == [
        "papa.attributes_dropped", "papa.mask_missing", "papa.material_missing",
        "papa.material_properties_dropped"]
    assert "COLOR_0" in next(n.message for n in report if n.code == "papa.attributes_dropped")
    doc = read(out.read_bytes())
    assert doc.vertex_buffers[0].format == 8
    w = doc.vertex_buffers[0].vertices["weights"].astype(int)
    assert (w.sum(axis=1) == 255).all() and (np.diff(w, axis=1) <= 0).all()
    zero = doc.vertex_buffers[0].vertices["weights"] == 0
    assert (doc.vertex_buffers[0].vertices["bones"][zero] == 0).all()
    assert len(doc.skeletons[0].bones) == 3
    tex = read((tmp_path / "column_diffuse.papa").read_bytes()).textures[0]
    assert (tex.format, tex.srgb, tex.width, tex.mips) == (6, True, 16, 4)
    anim = read((tmp_path / "column_anim_bend.papa").read_bytes()).animations[0]
    assert (anim.fps_num, anim.fps_den, anim.num_frames) == (60, 1, 61)
    back = gamemesh.load(out)
    p0, p1 = scene.meshes[0].primitives[0], back.meshes[0].primitives[0]
    np.testing.assert_allclose(p1.positions, p0.positions, atol=1e-6)
    np.testing.assert_allclose(p1.normals, p0.normals, atol=1e-6)
    np.testing.assert_allclose(p1.weights, p0.weights, atol=1 / 255)
    assert sorted(a.name for a in back.animations) == ["bend", "twist"]
    # The bend clip at its key times matches the source rotations.
    src = scene.animations[0].channels[2]
    got = next(a for a in back.animations if a.name == "bend")
    bone2 = next(i for i, n in enumerate(back.nodes) if n.name == "bone2")
    ch = next(c for c in got.channels if c.node == bone2 and c.path == "rotation")
    at = np.searchsorted(ch.times, src.times - 1e-6)
    dots = np.abs(np.einsum("ij,ij->i", ch.values[at], src.values))
    assert dots.min() > 0.9999
    glb = tmp_path / "again.glb"
    gamemesh.save(back, glb)
    gltf_validator(glb)


def test_papa_glb_papa_keeps_content(tmp_path: Path) -> None:
    unit = corpus_dir("papa") / "official_2014/pa/units/land_bots/assault_bot"
    glb = tmp_path / "bot.glb"
    gamemesh.convert(unit / "assault_bot.papa", glb)
    out = tmp_path / "again" / "assault_bot.papa"
    gamemesh.convert(glb, out)
    a = read((unit / "assault_bot.papa").read_bytes())
    b = read(out.read_bytes())
    va, vb = a.vertex_buffers[0].vertices, b.vertex_buffers[0].vertices
    np.testing.assert_allclose(vb["position"], va["position"], atol=1e-5)
    np.testing.assert_allclose(vb["normal"], va["normal"], atol=1e-5)
    np.testing.assert_array_equal(vb["weights"], va["weights"])
    np.testing.assert_array_equal(vb["bones"], va["bones"])
    np.testing.assert_array_equal(b.index_buffers[0].indices, a.index_buffers[0].indices)
    ba, bb = a.skeletons[0].bones, b.skeletons[0].bones
    np.testing.assert_allclose(bb["translation"], ba["translation"], atol=1e-5)
    np.testing.assert_allclose(bb["bind2bone"], ba["bind2bone"], atol=1e-5)
    np.testing.assert_allclose(np.abs(np.einsum("ij,ij->i", bb["rotation"], ba["rotation"])),
                               1.0, atol=1e-5)
    for clip in ("run", "idle"):
        o = read((unit / f"assault_bot_anim_{clip}.papa").read_bytes()).animations[0]
        c = read((out.parent / f"assault_bot_anim_{clip}.papa").read_bytes())
        ca = c.animations[0]
        names_o = [read((unit / f"assault_bot_anim_{clip}.papa").read_bytes()).string(int(x))
                   for x in o.bones]
        names_c = [c.string(int(x)) for x in ca.bones]
        tc = ca.transforms[:, [names_c.index(n) for n in names_o]]
        assert tc.shape == o.transforms.shape
        np.testing.assert_allclose(tc["translation"], o.transforms["translation"], atol=1e-4)
        dots = np.abs(np.einsum("fbi,fbi->fb", tc["rotation"], o.transforms["rotation"]))
        assert dots.min() > 1 - 1e-5
    for role in ("diffuse", "mask", "material"):
        t0 = read((unit / f"assault_bot_{role}.papa").read_bytes()).textures[0]
        t1 = read((out.parent / f"assault_bot_{role}.papa").read_bytes()).textures[0]
        assert (t1.width, t1.height, t1.mips, t1.srgb) == (t0.width, t0.height, t0.mips, t0.srgb)
        from gamemesh.formats.papa.textures import decode

        err = np.abs(decode(t1).astype(int) - decode(t0).astype(int))[..., :3].mean()
        assert err < 6, (role, err)


def _skinned_scene(bones: int, influences: int = 4) -> Scene:
    """A strip of quads along +X, each quad skinned to its own bone (and neighbours)."""
    n = bones
    xs = np.arange(n + 1, dtype=np.float32)
    pos = np.zeros((2 * (n + 1), 3), dtype=np.float32)
    pos[0::2, 0] = xs
    pos[1::2, 0] = xs
    pos[1::2, 1] = 1.0
    tris = []
    for q in range(n):
        a = 2 * q
        tris += [a, a + 2, a + 1, a + 1, a + 2, a + 3]
    nv = len(pos)
    joints = np.zeros((nv, influences), dtype=np.uint16)
    weights = np.zeros((nv, influences), dtype=np.float32)
    for k in range(influences):
        joints[:, k] = np.minimum(np.arange(nv) // 2 + k, n - 1) if k == 0 else \
            (np.arange(nv) // 2 + k) % n
    weights[:] = np.linspace(1.0, 0.2, influences)
    weights /= weights.sum(axis=1, keepdims=True)
    prim = Primitive(positions=pos, indices=np.array(tris, dtype=np.uint32), joints=joints,
                     weights=weights)
    scene = Scene(name="strip")
    scene.add_mesh(SMesh(name="strip", primitives=[prim]))
    root = scene.add_node(Node(name="root"))
    jn = [scene.add_node(Node(name=f"b{k}", translation=(float(k), 0, 0)), root)
          for k in range(n)]
    ibm = np.tile(np.eye(4, dtype=np.float32), (n, 1, 1))
    ibm[:, 0, 3] = -np.arange(n)
    scene.add_skin(Skin(joints=jn, inverse_bind_matrices=ibm))
    scene.add_node(Node(name="strip", mesh=0, skin=0))
    return scene


def test_more_than_32_bones_split_into_bindings() -> None:
    c = ctx(Path("strip.papa"))
    doc = SPEC.from_scene(_skinned_scene(40, 2), c)  # type: ignore[misc]
    assert len(doc.skeletons[0].bones) == 40
    bindings = doc.models[0].bindings
    assert len(bindings) >= 2
    for b in bindings:
        vb = doc.vertex_buffers[doc.meshes[b.mesh].vertex_buffer].vertices
        used = np.unique(vb["bones"][vb["weights"] > 0])
        assert len(used) <= 32 and used.max() < 32
        assert len(b.bone_map) == 40
    assert any(n.code == "papa.split_bindings" for n in c.notes)
    # The split model still converts back to every bone and the same triangles.
    scene = SPEC.to_scene(read(write(doc)), ctx())  # type: ignore[misc]
    assert sum(p.triangle_count for m in scene.meshes for p in m.primitives) == 80


def test_more_than_4_influences_reduced() -> None:
    c = ctx(Path("strip.papa"))
    doc = SPEC.from_scene(_skinned_scene(8, 8), c)  # type: ignore[misc]
    w = doc.vertex_buffers[0].vertices["weights"].astype(int)
    assert (w.sum(axis=1) == 255).all()
    assert any(n.code == "papa.influences_reduced" for n in c.notes)


def test_limits() -> None:
    with pytest.raises(LimitError, match="256"):
        SPEC.from_scene(_skinned_scene(257, 1), ctx())  # type: ignore[misc]
    scene = sample_scene()
    scene.meshes[0].primitives[0].mode = 1
    with pytest.raises(LimitError, match="triangles"):
        SPEC.from_scene(scene, ctx())  # type: ignore[misc]


def test_static_scene_uses_format_5_6_or_7() -> None:
    scene = sample_scene()
    scene.skins.clear()
    for n in scene.nodes:
        n.skin = None
    scene.animations.clear()
    doc = SPEC.from_scene(scene, ctx())  # type: ignore[misc]
    assert doc.vertex_buffers[0].format == 6  # the sample has vertex colours, one UV set
    colors = np.asarray(scene.meshes[0].primitives[0].colors[0])
    got = doc.vertex_buffers[0].vertices["color"].astype(float) / 255
    np.testing.assert_allclose(got, colors, atol=0.5 / 255 + 1e-6)
    uv = scene.meshes[0].primitives[0].texcoords[0]
    scene.meshes[0].primitives[0].texcoords = [uv, uv * 0.5]
    doc = SPEC.from_scene(scene, ctx())  # type: ignore[misc]
    assert doc.vertex_buffers[0].format == 7
    np.testing.assert_allclose(doc.vertex_buffers[0].vertices["texcoord1"], uv * 0.5)
    scene.meshes[0].primitives[0].texcoords = [uv]
    scene.meshes[0].primitives[0].colors = []
    doc = SPEC.from_scene(scene, ctx())  # type: ignore[misc]
    assert doc.vertex_buffers[0].format == 5
    assert doc.models[0].skeleton == -1


# -- bad input -------------------------------------------------------------------------------
def fixture_files() -> list[bytes]:
    out = [write(triangle_doc(f)) for f in (0, 5, 7, 8, 10, 11)]
    anim = triangle_doc(8)
    tr = np.zeros((2, 1), dtype=lay.TRANSFORM)
    tr["rotation"] = [0, 0, 0, 1]
    anim.animations.append(Animation(NONE16, np.array([anim.add_string("root")], "<u2"), tr))
    out.append(write(anim))
    out.append(write(texture_doc(6)[0]))
    out.append(write(texture_doc(13)[0]))
    return out


def test_checked_in_fixtures_round_trip() -> None:
    files = sorted(FIXTURES.glob("*.papa"))
    assert len(files) >= 3
    for f in files:
        data = f.read_bytes()
        assert write(read(data)) == data, f.name


def test_bad_magic_and_version() -> None:
    data = bytearray(write(PapaDocument()))
    with pytest.raises(BadMagicError):
        read(b"Papa" + bytes(data[4:]))
    data[6] = 4
    with pytest.raises(UnsupportedVersionError, match="version"):
        read(bytes(data))
    with pytest.raises(TruncatedError):
        read(bytes(data[:50]).replace(b"\x04", b"\x03", 1))


def test_corrupt_references_are_format_errors() -> None:
    doc = triangle_doc(8)
    doc.index_buffers[0] = IndexBuffer(0, np.array([0, 1, 7], dtype="<u2"))
    with pytest.raises(CorruptDataError, match="index past"):
        SPEC.to_scene(read(write(doc)), ctx())  # type: ignore[misc]
    doc = triangle_doc(8)
    doc.skeletons[0].bones["parent"][0] = 1
    with pytest.raises(CorruptDataError, match="parent"):
        SPEC.to_scene(read(write(doc)), ctx())  # type: ignore[misc]


def test_truncations_of_fixtures() -> None:
    for data in fixture_files():
        assert assert_truncations_fail_cleanly(SPEC, data) > 0


def test_truncations_of_corpus() -> None:
    base = corpus_dir("papa")
    for rel in ("official_2014/pa/units/land_bots/assault_bot/assault_bot.papa",
                "official_2014/pa/units/land_bots/assault_bot/assault_bot_anim_run.papa",
                "official_2014/pa/units/air/fighter_adv/fighter_adv_anim_landed.papa",
                "official_2014/pa/units/air/air_factory/air_factory.papa",
                "w40k_mod_2024/pa/units/air/transport/transport.papa",
                "official_2014/pa/units/land_bots/assault_bot/assault_bot_mask.papa"):
        assert assert_truncations_fail_cleanly(SPEC, (base / rel).read_bytes()) > 0


@pytest.mark.parametrize("which", ["fixture_skinned", "fixture_anim", "corpus_bot",
                                   "corpus_anim", "corpus_texture"])
def test_mutations(which: str) -> None:
    if which.startswith("fixture"):
        data = fixture_files()[3 if which == "fixture_skinned" else 6]
    else:
        base = corpus_dir("papa") / "official_2014/pa/units"
        rel = {"corpus_bot": "land_bots/assault_bot/assault_bot.papa",
               "corpus_anim": "air/fighter_adv/fighter_adv_anim_landed.papa",
               "corpus_texture": "land_bots/assault_bot/assault_bot_mask.papa"}[which]
        data = (base / rel).read_bytes()
    assert_mutations_fail_cleanly(SPEC, data, count=2000, seed=3)


def test_replay_crashes() -> None:
    # Hostile inputs kept forever: a huge string count, a bone parent cycle, a frame count
    # overflow, a vertex bone slot past its bone map. Each must end in a FormatError.
    assert replay_crashes(SPEC) >= 4


# -- info, samples, speed --------------------------------------------------------------------
def test_info_reports_the_format_facts() -> None:
    i = info(read(write(triangle_doc(8))))
    assert i["version"] == "3.0" and i["kind"] == "model"
    assert i["vertex_formats"] == ["8 Position3Weights4bBones4bNormal3TexCoord2"]
    assert (i["vertices"], i["indices"], i["bones"], i["models"]) == (3, 3, 2, 1)
    t = info(read(write(texture_doc(6)[0])))
    assert t["kind"] == "texture" and t["texture_list"][0]["format"] == "DXT5"


def test_png_export_of_a_texture_doc(tmp_path: Path) -> None:
    doc, rgba = texture_doc(1)
    files = export_png(doc, ctx(tmp_path / "t.png"))
    from gamemesh.textures import decode_image

    np.testing.assert_array_equal(decode_image(files["t.png"]), rgba)


def test_make_sample_size_and_speed() -> None:
    data = SPEC.make_sample(2_000_000)  # type: ignore[misc]
    assert 1_500_000 < len(data) < 2_600_000
    doc = read(data)
    assert doc.vertex_buffers[0].format == 8
    t0 = time.process_time()
    for _ in range(5):
        read(data)
    dt = (time.process_time() - t0) / 5
    mbs = len(data) / dt / 1e6
    print(f"papa read: {mbs:.0f} MB/s on {len(data) / 1e6:.1f} MB")
    assert mbs > 200  # numpy views: the read does not touch the vertex bytes


def test_corpus_read_time_per_file() -> None:
    from tests.helpers import corpus_files

    files = [p.read_bytes() for p in corpus_files("papa", "*.papa")]
    models = [d for d in files if read(d).kind != "texture"]
    t0 = time.process_time()
    for _ in range(20):
        for d in models:
            read(d)
    per = (time.process_time() - t0) / 20 / len(models) * 1e3
    print(f"papa: {per:.3f} ms per non-texture corpus file")
    assert per < 2.0


# -- quirks real files have ------------------------------------------------------------------
def test_blender_24_byte_param_stride_round_trips() -> None:
    # Blender-PAPA-IO writes vector/matrix params at 24/72 bytes; papatran at 20/68. With two
    # params of a kind the reader tells them apart by where the next block starts.
    for stride, mstride in ((20, 68), (24, 72)):
        doc = triangle_doc(5)
        vec = np.zeros(2, dtype=lay.VECTOR_PARAM)
        vec[0] = (doc.add_string("DiffuseColor"), 0, (0.1, 0.2, 0.3, 0.4))
        vec[1] = (doc.add_string("Glow"), 0, (1.0, 2.0, 3.0, 4.0))
        mat = np.zeros(2, dtype=lay.MATRIX_PARAM)
        mat["name"] = [doc.add_string("M0"), doc.add_string("M1")]
        mat["value"][1] = np.arange(16)
        doc.materials[0] = Material(doc.materials[0].shader, vec, matrices=mat,
                                    vector_stride=stride, matrix_stride=mstride)
        data, back = roundtrip(doc)
        m = back.materials[0]
        assert (m.vector_stride, m.matrix_stride) == (stride, mstride)
        np.testing.assert_array_equal(m.vectors["value"][1], [1, 2, 3, 4])
        np.testing.assert_array_equal(m.matrices["value"][1], np.arange(16))
        assert back.layout is not None
        assert back.layout[("vec", 0)][1] == 2 * stride
        scene = SPEC.to_scene(back, ctx())  # type: ignore[misc]
        assert scene.materials[0].extras["vector_params"]["Glow"] == [1.0, 2.0, 3.0, 4.0]
        assert len(data) % 8 == 0


def test_zero_vertex_buffer_and_empty_group() -> None:
    doc = triangle_doc(7)
    v = np.zeros(0, dtype=lay.VERTEX_FORMATS[7][1])
    doc.vertex_buffers.append(VertexBuffer(7, v))
    doc.index_buffers.append(IndexBuffer(0, np.zeros(0, dtype="<u2")))
    groups = np.zeros(1, dtype=lay.MATERIAL_GROUP)
    groups[0] = (NONE16, 0, 0, 0, 2, (0, 0, 0))
    doc.meshes.append(Mesh(1, 1, groups))
    doc.models[0].bindings.append(MeshBinding(doc.add_string("empty"), 1))
    data, back = roundtrip(doc)
    assert len(back.vertex_buffers[1].vertices) == 0
    vb_table = struct.unpack_from("<q", data, 32 + 2 * 8)[0]
    assert struct.unpack_from("<BxxxIQ", data, vb_table + 24) == (7, 0, 0)
    scene = SPEC.to_scene(back, ctx())  # type: ignore[misc]
    assert [len(m.primitives) for m in scene.meshes] == [1, 0]


def test_string_without_terminator_and_code_point_length() -> None:
    doc = PapaDocument(strings=[PapaString("平面".encode(), 2), PapaString(b"end", 3, 0, False)])
    data, back = roundtrip(doc)
    assert back.strings[0].text == "平面" and back.strings[0].length == 2
    length, _pad, off = struct.unpack_from("<IIq", data, 104 + 16)
    assert (length, data[off:off + 3]) == (3, b"end")
    # The code-point length (2) is kept, and the terminator found after the 6 UTF-8 bytes.
    _, _, off0 = struct.unpack_from("<IIq", data, 104)
    assert data[off0:off0 + 7] == "平面".encode() + b"\0"


def test_texture_destination_writes_a_texture_file(tmp_path: Path) -> None:
    doc, _ = texture_doc(1, 16, 16)
    src = tmp_path / "t.papa"
    src.write_bytes(write(doc))
    glb = tmp_path / "t.glb"
    gamemesh.convert(src, glb)
    out = tmp_path / "unit_mask.papa"
    gamemesh.convert(glb, out)
    back = read(out.read_bytes())
    assert back.kind == "texture" and len(back.textures) == 1
    t = back.textures[0]
    # The texture came from papa as RGBA8: it goes back as RGBA8 with its sRGB flag.
    src_tex = doc.textures[0]
    assert (t.format, t.srgb, t.width, t.mips) == (lay.TEX_RGBA8, src_tex.srgb, 16, 4)
    assert t.data is not None and src_tex.data is not None
    assert t.data[:16 * 16 * 4] == src_tex.data[:16 * 16 * 4]  # RGBA8 is lossless
    gamemesh.convert(glb, out, texture_format="DXT1")
    t = read(out.read_bytes()).textures[0]
    assert (t.format, t.width, t.mips) == (lay.TEX_DXT1, 16, 4)


def test_every_readable_mutation_writes_back_identically() -> None:
    # The document keeps what it takes: even odd files (a count with offset -1, an offset with
    # count 0, a non-zero gap) come back byte for byte.
    from tests.helpers import mutations

    base = corpus_dir("papa") / "official_2014/pa/units"
    sources = [fixture_files()[3], fixture_files()[6],
               (base / "air/fighter_adv/fighter_adv_anim_landed.papa").read_bytes(),
               (base / "air/bomb/bomb.papa").read_bytes()]
    readable = 0
    for data in sources:
        for m in mutations(data, 300, seed=5):
            try:
                doc = read(m)
            except (CorruptDataError, TruncatedError, UnsupportedVersionError, BadMagicError):
                continue
            readable += 1
            assert write(doc) == m
    assert readable > 300


def test_duplicate_bone_names_are_made_unique() -> None:
    scene = _skinned_scene(3, 1)
    for node in scene.nodes:
        if node.name.startswith("b"):
            node.name = "bone"
    c = ctx(Path("strip.papa"))
    doc = SPEC.from_scene(scene, c)  # type: ignore[misc]
    names = [doc.string(int(n)) for n in doc.skeletons[0].bones["name"]]
    assert names == ["bone", "bone_2", "bone_3"]
    assert any(n.code == "papa.bone_renamed" for n in c.notes)
