"""PMF <-> scene <-> glTF: the mapping, the open conventions as options, from_scene on any
scene (the sample's skinned column, a rigid hierarchy with rest rotations and scale), and the
PMF -> glb -> PMF round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import LimitError
from gamemesh.formats.pmf import SPEC
from gamemesh.formats.pmf.document import Animation, Piece, PmfDocument
from gamemesh.formats.pmf.from_scene import _triangles
from gamemesh.formats.pmf.layout import make_frames, pack_name
from gamemesh.registry import Context
from gamemesh.sample import sample_scene
from gamemesh.scene import Animation as SceneAnimation
from gamemesh.scene import Channel, Mesh, Node, Primitive, Scene
from gamemesh.scene.math import (
    euler_to_quat,
    face_normals,
    quat_multiply,
    quat_to_matrix,
    trs_to_matrix,
)
from gamemesh.scene.sampling import sample_channel, slerp
from test_pmf import FIXTURES, build_triangle, cube_vertices, figure_doc, tri_vertices

RAD_TOL = 1e-5


def load(name: str, **opts: Any) -> tuple[Scene, Context]:
    ctx = Context(options=opts)
    doc = SPEC.read((FIXTURES / name).read_bytes(), ctx)
    return SPEC.to_scene(doc, ctx), ctx


def mean_normal_agreement(scene: Scene) -> float:
    dots = []
    for m in scene.meshes:
        for p in m.primitives:
            fn = face_normals(p.positions, p.triangles())
            vn = np.asarray(p.normals)[p.triangles()].sum(axis=1)
            fn /= np.linalg.norm(fn, axis=1, keepdims=True)
            vn /= np.linalg.norm(vn, axis=1, keepdims=True)
            dots.append(np.sum(fn * vn, axis=1))
    return float(np.mean(np.concatenate(dots)))


# -- PMF -> scene -------------------------------------------------------------------------------
def test_triangle_file_maps_to_nodes_mesh_and_clip() -> None:
    scene, _ = load("triangle_anim.pmf")
    scene.validate()
    assert len(scene.nodes) == 1 and scene.nodes[0].translation == (1.0, 2.0, 3.0)
    prim = scene.meshes[0].primitives[0]
    assert prim.indices is None
    assert prim.positions.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0]]
    assert prim.normals.tolist() == [[0, 0, 1]] * 3
    assert prim.texcoords[0].tolist() == [[0, 0], [1, 0], [0, 1]]
    anim = scene.animations[0]
    assert anim.name == "spin"
    rot = next(c for c in anim.channels if c.path == "rotation")
    assert rot.times.tolist() == pytest.approx([0.0, 0.1])
    s = np.sqrt(0.5)
    assert rot.values[1] == pytest.approx([s, 0, 0, s], abs=1e-6)  # 90 degrees about X
    tr = next(c for c in anim.channels if c.path == "translation")
    assert tr.node == 0 and tr.values.tolist() == [[0, 0, 0], [0, 1, 0]]
    assert anim.extras == {"loop": True, "fps": 10, "frame_count": 2, "flags": 1,
                           "keyframes": [0, 1], "events": [1]}
    assert scene.extras["format"] == "pmf" and scene.extras["version"] == "PMF1"
    assert scene.extras["pmf_conventions"]["angle_unit"] == "degrees"


def test_figure_scene_tree_and_clips() -> None:
    scene, ctx = load("figure.pmf")
    scene.validate()
    assert [n.name for n in scene.nodes][:4] == ["body", "neck", "head", "hat"]
    assert scene.roots == [0] and scene.nodes[0].children == [1, 6, 8, 10]
    assert scene.nodes[1].mesh is None and scene.nodes[10].mesh is None  # empty pieces
    assert len(scene.meshes) == 8
    assert [a.name for a in scene.animations] == ["walk", "wave", "pose"]
    walk = scene.animations[0]
    assert len(walk.channels) == 12  # 11 rotations + the root's translation
    assert walk.extras["events"] == [5, 9] and walk.extras["keyframes"] == [0, 4, 8, 11]
    assert walk.channels[0].times[-1] == pytest.approx(11 / 12)
    notes = {n.code: n for n in ctx.notes}
    assert notes["pmf.angle_unit"].level == "info"  # 60 degrees > 2 pi: certain
    assert "pmf.conventions" in notes


def test_normals_agree_with_winding() -> None:
    scene, _ = load("figure.pmf")
    assert mean_normal_agreement(scene) > 0.99


def _clockwise_figure() -> bytes:
    doc = figure_doc()
    for p in doc.pieces:
        v = p.vertices.reshape(-1, 3)[:, [0, 2, 1]].reshape(-1)
        p.vertices = v
    return SPEC.write(doc, Context())


def test_clockwise_file_is_detected_and_reversed() -> None:
    data = _clockwise_figure()
    ctx = Context()
    scene = SPEC.to_scene(SPEC.read(data, ctx), ctx)
    assert scene.extras["pmf_conventions"]["winding_flipped"] is True
    assert mean_normal_agreement(scene) > 0.99
    forced = Context(options={"winding": "ccw"})
    scene2 = SPEC.to_scene(SPEC.read(data, forced), forced)
    assert mean_normal_agreement(scene2) < -0.99  # the option is obeyed, even when wrong


def _one_piece_clip(rot: list[float], root: list[float] = (0, 0, 0), fps: int = 10) -> bytes:
    piece = Piece(pack_name("p"), np.array([0, 5, 0], "<f4"), tri_vertices())
    frames = make_frames(1, [[rot]], [root])
    return SPEC.write(PmfDocument([piece], [Animation(pack_name("a"), 0, fps, frames)]),
                      Context())


def _rotation(data: bytes, **opts: Any) -> np.ndarray:
    ctx = Context(options=opts)
    scene = SPEC.to_scene(SPEC.read(data, ctx), ctx)
    return next(c for c in scene.animations[0].channels if c.path == "rotation").values[0]


def test_euler_order_and_unit_options() -> None:
    data = _one_piece_clip([30, 40, 50])
    xyz = _rotation(data)
    zyx = _rotation(data, euler_order="ZYX")
    a = np.deg2rad([30, 40, 50])
    assert xyz == pytest.approx(euler_to_quat(a, "XYZ"), abs=1e-6)
    assert zyx == pytest.approx(euler_to_quat(a, "ZYX"), abs=1e-6)
    assert not np.allclose(xyz, zyx, atol=1e-3)
    # R = Rx Ry Rz: the matrix the default order means.
    rx = quat_to_matrix([np.sin(a[0] / 2), 0, 0, np.cos(a[0] / 2)])
    ry = quat_to_matrix([0, np.sin(a[1] / 2), 0, np.cos(a[1] / 2)])
    rz = quat_to_matrix([0, 0, np.sin(a[2] / 2), np.cos(a[2] / 2)])
    assert quat_to_matrix(xyz) == pytest.approx(rx @ ry @ rz, abs=1e-6)
    small = _one_piece_clip([0.5, 0, 0])
    assert _rotation(small, angle_unit="radians") == pytest.approx(
        [np.sin(0.25), 0, 0, np.cos(0.25)], abs=1e-6)
    assert _rotation(small) == pytest.approx(euler_to_quat(np.deg2rad([0.5, 0, 0])), abs=1e-6)


def test_ambiguous_angle_unit_is_a_warning_note() -> None:
    ctx = Context()
    SPEC.to_scene(SPEC.read(_one_piece_clip([0.5, 0, 0]), ctx), ctx)
    note = next(n for n in ctx.notes if n.code == "pmf.angle_unit")
    assert note.level == "warning" and "cannot be told" in note.message


def test_root_position_handedness_and_flip_v_options() -> None:
    data = _one_piece_clip([0, 0, 0], root=[1, 2, 3])

    def root_and_node(**opts: Any) -> tuple[list[float], tuple[float, ...], Scene]:
        ctx = Context(options=opts)
        scene = SPEC.to_scene(SPEC.read(data, ctx), ctx)
        tr = next(c for c in scene.animations[0].channels if c.path == "translation")
        return tr.values[0].tolist(), scene.nodes[0].translation, scene

    assert root_and_node()[0] == [1, 2, 3]
    assert root_and_node(root_position="add")[0] == [1, 7, 3]
    root, node, scene = root_and_node(handedness="left")
    assert root == [1, 2, -3] and node == (0, 5, -0.0)
    assert scene.meshes[0].primitives[0].normals[0].tolist() == [0, 0, -1]
    assert mean_normal_agreement(scene) > 0.99  # mirrored and re-wound
    quat = _rotation(_one_piece_clip([10, 20, 30]), handedness="left")
    base = euler_to_quat(np.deg2rad([10, 20, 30]), "XYZ")
    assert quat == pytest.approx(base * [-1, -1, 1, 1], abs=1e-6)
    _, _, flipped = root_and_node(flip_v=True)
    assert flipped.meshes[0].primitives[0].texcoords[0].tolist() == [[0, 1], [1, 1], [0, 0]]


def test_odd_fixture_fps_zero_and_empty_clip_are_noted() -> None:
    scene, ctx = load("odd.pmf")
    scene.validate()
    assert [a.name for a in scene.animations] == ["zero"]
    assert scene.animations[0].channels[0].times.tolist() == pytest.approx([0, 0.1])
    codes = [n.code for n in ctx.notes]
    assert "pmf.fps_zero" in codes and "pmf.empty_clip" in codes


# -- scene -> PMF -------------------------------------------------------------------------------
def test_sample_scene_becomes_rigid_pieces() -> None:
    scene = sample_scene()
    ctx = Context()
    doc = SPEC.from_scene(scene, ctx)
    # The sample has two roots (the armature and the skinned column): a synthetic root.
    assert [p.text for p in doc.pieces] == ["root", "sample", "bone0", "bone1", "bone2",
                                            "column"]
    assert [p.parent for p in doc.pieces] == [-1, 0, 1, 2, 3, 0]
    counts = [p.vertex_count for p in doc.pieces]
    tris = scene.meshes[0].primitives[0].triangle_count
    assert counts[:2] == [0, 0] and counts[5] == 0 and sum(counts) == 3 * tris
    assert all(c > 0 for c in counts[2:5])
    # Placed back at their bones' rest positions, the pieces' triangles are the column's.
    seg = 2.0 / 3
    placed = np.concatenate([doc.pieces[2 + j].vertices["position"] + [0, j * seg, 0]
                             for j in range(3)]).reshape(-1, 9)
    prim = scene.meshes[0].primitives[0]
    original = prim.positions[prim.triangles().reshape(-1)].reshape(-1, 9)

    def rows(a: np.ndarray) -> np.ndarray:
        a = np.round(a.astype(np.float64), 5)
        return a[np.lexsort(a.T[::-1])]
    assert rows(placed) == pytest.approx(rows(original), abs=1e-5)
    # The lowest bone gets the bottom cap, the top bone the top cap.
    assert doc.pieces[2].vertices["position"][:, 1].min() == 0
    assert doc.pieces[4].vertices["position"][:, 1].max() == pytest.approx(2 - 2 * seg)
    assert [(a.text, a.fps, a.frame_count) for a in doc.animations] == [("bend", 8, 9),
                                                                          ("twist", 8, 9)]
    bend = doc.animations[0].frames
    assert np.all(bend["flags"] == 1)
    times = np.arange(9) / 8
    for k in range(3):
        expected = np.rad2deg(np.sin(times * np.pi * 2) * 0.5 * (k + 1) / 3)
        assert bend["rot"][:, 2 + k, 2] == pytest.approx(expected, abs=1e-3)
        assert np.abs(bend["rot"][:, 2 + k, :2]).max() < 1e-3
    codes = [n.code for n in ctx.notes]
    assert "pmf.skin_split" in codes
    data = SPEC.write(doc, Context())
    assert SPEC.write(SPEC.read(data, Context()), Context()) == data


def rigid_scene() -> Scene:
    """A rigid hierarchy with rest rotations, a scaled piece, a strip, an animated root
    translation and rotation clips with LINEAR, STEP and CUBICSPLINE keys."""
    s = Scene()
    cube = cube_vertices(0.3)
    prim = Primitive(positions=cube["position"].copy(), normals=cube["normal"].copy(),
                     texcoords=[cube["uv"].copy()])
    m = s.add_mesh(Mesh("cube", [prim]))
    root = s.add_node(Node("Wurzel ü", translation=(0, 1, 0), mesh=m))
    q = euler_to_quat(np.deg2rad([0, 0, 30]))
    arm = s.add_node(Node("arm", translation=(1, 0, 0), rotation=tuple(q), mesh=m), root)
    hand = s.add_node(Node("hand_with_a_very_long_name_over_31_bytes", translation=(0.8, 0, 0),
                           scale=(1, 2, 1), mesh=m), arm)
    strip = Primitive(positions=np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], "f4"),
                      indices=np.array([0, 1, 2, 3], np.uint32), mode=5)
    s.add_node(Node("flag", translation=(0, 0.5, 0), mesh=s.add_mesh(Mesh("flag", [strip]))),
               hand)
    t = np.arange(5, dtype=np.float32) / 4
    bend = euler_to_quat(np.deg2rad(np.column_stack([np.zeros(5), 40 * t, 10 * t])))
    arm_rot = quat_multiply(q, bend)  # bending around the rest rotation
    cub = euler_to_quat(np.deg2rad(np.column_stack([20 * t, np.zeros(5), np.zeros(5)])))
    cubic = np.stack([np.zeros_like(cub), cub, np.zeros_like(cub)], axis=1).reshape(-1, 4)
    channels = [
        Channel(arm, "rotation", t, arm_rot.astype("f4")),
        Channel(hand, "rotation", t, cubic.astype("f4"), "CUBICSPLINE"),
        Channel(root, "rotation", t, euler_to_quat(np.deg2rad(
            np.column_stack([np.zeros(5), 90 * t, np.zeros(5)]))).astype("f4"), "STEP"),
        Channel(root, "translation", t, np.column_stack([t, np.ones(5), np.zeros(5)]).astype("f4")),
        Channel(hand, "translation", t, np.tile([0.8, 0, 0], (5, 1)).astype("f4")),
    ]
    s.animations.append(SceneAnimation("move", channels))
    return s


def posed_world_vertices(scene: Scene, t: float) -> dict[str, np.ndarray]:
    """World positions of every mesh node's triangle corners at time ``t`` (clip 0)."""
    anim = scene.animations[0]
    local: list[np.ndarray] = []
    for i, n in enumerate(scene.nodes):
        trs = {"translation": n.translation, "rotation": n.rotation, "scale": n.scale}
        for c in anim.channels:
            if c.node == i:
                trs[c.path] = sample_channel(c, [t])[0]
        local.append(trs_to_matrix(trs["translation"], trs["rotation"], trs["scale"]))
    world = [np.eye(4)] * len(scene.nodes)
    for i in scene.walk():
        parent = scene.parents()[i]
        world[i] = local[i] if parent is None else world[parent] @ local[i]
    out = {}
    for i, n in enumerate(scene.nodes):
        if n.mesh is not None:
            prim = scene.meshes[n.mesh].primitives[0]
            tris = _triangles(prim)
            p = prim.positions[tris.reshape(-1)].astype(np.float64)
            out[n.name[:4]] = p @ world[i][:3, :3].T + world[i][:3, 3]
    return out


def test_rigid_hierarchy_round_trips_through_pmf() -> None:
    src = rigid_scene()
    ctx = Context()
    doc = SPEC.from_scene(src, ctx)
    data = SPEC.write(doc, Context())
    doc2 = SPEC.read(data, Context())
    names = [p.text for p in doc2.pieces]
    assert names == ["Wurzel u", "arm", "hand_with_a_very_long_name_over", "flag"]
    assert len(names[2]) == 31
    assert doc2.animations[0].fps == 4 and doc2.animations[0].frame_count == 5
    assert doc2.pieces[3].vertex_count == 6  # the strip's two triangles
    codes = {n.code for n in ctx.notes}
    assert {"pmf.piece_names", "pmf.scale_baked", "pmf.rest_rotation_baked"} <= codes
    # The hand's translation keys hold its rest translation: dropping them loses nothing.
    assert "pmf.dropped_channels" not in codes
    back = SPEC.to_scene(doc2, Context())
    for t in (0.0, 0.25, 0.5, 1.0):  # the frame times (the clip is sampled at 4 fps)
        want = posed_world_vertices(src, t)
        got = posed_world_vertices(back, t)
        assert want.keys() == got.keys()
        for k in want:
            assert got[k] == pytest.approx(want[k], abs=2e-4), (t, k)


def test_several_roots_get_a_synthetic_root_and_names_stay_unique() -> None:
    s = Scene()
    for _ in range(3):
        s.add_node(Node("same"))
    ctx = Context()
    doc = SPEC.from_scene(s, ctx)
    assert [p.text for p in doc.pieces] == ["root", "same", "same~2", "same~3"]
    assert doc.pieces[0].children == [1, 2, 3]
    assert "pmf.synthetic_root" in {n.code for n in ctx.notes}


def test_frame_limit_is_a_limit_error() -> None:
    s = Scene()
    n = s.add_node(Node("a"))
    t = np.array([0, 5000], np.float32)
    q = np.tile([0, 0, 0, 1], (2, 1)).astype("f4")
    s.animations.append(SceneAnimation("long", [Channel(n, "rotation", t, q)]))
    with pytest.raises(LimitError, match="too many frames"):
        SPEC.from_scene(s, Context(options={"fps": 30}))


def test_written_conventions_read_back_the_same() -> None:
    src = rigid_scene()
    for opts in ({"handedness": "left"}, {"winding": "cw"}, {"angle_unit": "radians",
                                                            "euler_order": "ZXY"},
                 {"root_position": "add"}):
        data = SPEC.write(SPEC.from_scene(src, Context(options=opts)), Context())
        back = SPEC.to_scene(SPEC.read(data, Context(options=opts)), Context(options=opts))
        assert mean_normal_agreement(back) > 0.99, opts
        for t in (0.0, 0.5):
            want, got = posed_world_vertices(src, t), posed_world_vertices(back, t)
            for k in want:
                assert got[k] == pytest.approx(want[k], abs=2e-4), (opts, t, k)


# -- sampling --------------------------------------------------------------------------------------
def test_sampler_interpolations() -> None:
    t = np.array([0, 1, 2], np.float32)
    lin = Channel(0, "translation", t, np.array([[0, 0, 0], [2, 0, 0], [2, 4, 0]], "f4"))
    assert sample_channel(lin, [-1, 0.5, 1.5, 3]).tolist() == [[0, 0, 0], [1, 0, 0],
                                                               [2, 2, 0], [2, 4, 0]]
    step = Channel(0, "translation", t, lin.values, "STEP")
    assert sample_channel(step, [0.9, 1.0, 2.5]).tolist() == [[0, 0, 0], [2, 0, 0], [2, 4, 0]]
    # Cubic Hermite with tangents: value 0 -> 1 over 1 s, out-tangent 3, in-tangent 0.
    vals = np.array([[0], [0], [3], [0], [1], [0]], "f4")  # (in, v, out) per key
    cub = Channel(0, "weights", np.array([0, 1], "f4"), vals, "CUBICSPLINE")
    s = 0.5
    want = (s**3 - 2 * s**2 + s) * 3 + (-2 * s**3 + 3 * s**2) * 1
    assert sample_channel(cub, [0.5])[0, 0] == pytest.approx(want)
    qa = euler_to_quat([0, 0, 0])
    qb = euler_to_quat([0, np.pi / 2, 0])
    mid = slerp(qa[None], qb[None], [0.5])[0]
    assert mid == pytest.approx(euler_to_quat([0, np.pi / 4, 0]), abs=1e-9)
    # The short way round: -qb is the same rotation.
    assert slerp(qa[None], -qb[None], [0.5])[0] == pytest.approx(mid, abs=1e-9)


# -- PMF -> glb -> PMF ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["figure.pmf", "deep.pmf", "triangle_anim.pmf"])
def test_pmf_to_glb_to_pmf_keeps_pieces_vertices_and_rotations(
        name: str, tmp_path: Path, gltf_validator: Any) -> None:
    src = SPEC.read((FIXTURES / name).read_bytes(), Context())
    glb = tmp_path / (name + ".glb")
    report = gamemesh.convert(FIXTURES / name, glb)
    assert report.source_format == "pmf"
    gltf_validator(glb)
    scene = gamemesh.load(glb)
    assert mean_normal_agreement(scene) > 0.99
    back = SPEC.from_scene(scene, Context())
    assert [p.text for p in back.pieces] == [p.text for p in src.pieces]
    assert [p.parent for p in back.pieces] == [p.parent for p in src.pieces]
    for a, b in zip(src.pieces, back.pieces, strict=True):
        assert b.translation == pytest.approx(a.translation, abs=1e-6)
        assert b.vertex_count == a.vertex_count
        for f in ("position", "normal", "uv"):
            assert b.vertices[f] == pytest.approx(a.vertices[f], abs=1e-6)
    for a, b in zip(src.animations, back.animations, strict=True):
        assert (b.text, b.fps, b.flags, b.frame_count) == (a.text, a.fps, a.flags, a.frame_count)
        assert b.frames["flags"].tolist() == a.frames["flags"].tolist()
        err = np.abs(np.deg2rad(b.frames["rot"].astype(np.float64) - a.frames["rot"]))
        assert err.max() < RAD_TOL, (a.text, err.max())
        assert b.frames["root"] == pytest.approx(a.frames["root"], abs=1e-6)


@pytest.mark.parametrize("name", ["minimal.pmf", "odd.pmf"])
def test_every_fixture_converts_to_a_valid_glb(name: str, tmp_path: Path,
                                              gltf_validator: Any) -> None:
    glb = tmp_path / (name + ".glb")
    gamemesh.convert(FIXTURES / name, glb)
    gltf_validator(glb)


def test_build_triangle_glb_time_and_extras(tmp_path: Path) -> None:
    path = tmp_path / "t.pmf"
    path.write_bytes(build_triangle())
    scene = gamemesh.load(gamemesh.convert(path, tmp_path / "t.glb").outputs[0])
    assert scene.animations[0].extras["events"] == [1]
    assert scene.animations[0].channels[0].times.tolist() == pytest.approx([0, 0.1])


def test_from_scene_copes_with_points_missing_normals_and_matrices() -> None:
    s = Scene()
    tri = Primitive(positions=np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], "f4"))
    pts = Primitive(positions=np.zeros((2, 3), "f4"), mode=0)
    fan = Primitive(positions=np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], "f4"),
                    mode=6)
    m = s.add_mesh(Mesh("m", [tri, pts, fan]))
    mat = np.eye(4, dtype=np.float32)
    mat[:3, 3] = (2, 3, 4)
    root = s.add_node(Node("r", matrix=mat))
    s.add_node(Node("c", mesh=m, translation=(1, 0, 0)), root)
    ctx = Context()
    doc = SPEC.from_scene(s, ctx)
    assert doc.pieces[0].translation.tolist() == [2, 3, 4]
    child = doc.pieces[1]
    assert child.vertex_count == 9  # one triangle + a fan of two
    assert child.vertices["normal"][:, 2].tolist() == [1.0] * 9  # computed, facing +Z
    assert child.vertices["uv"].tolist() == [[0, 0]] * 9
    assert "pmf.points_lines_dropped" in {n.code for n in ctx.notes}


def test_deep_hierarchy_converts_to_a_valid_glb(tmp_path: Path, gltf_validator: Any) -> None:
    from test_pmf import chain

    glb = tmp_path / "deep.glb"
    gamemesh.convert(chain(500, verts=True), glb, from_format="pmf")
    gltf_validator(glb)
    back = SPEC.from_scene(gamemesh.load(glb), Context())
    assert len(back.pieces) == 500 and back.pieces[499].parent == 498


def test_events_keep_their_time_when_resampled() -> None:
    scene, _ = load("figure.pmf")  # walk: 12 fps, events at frames 5 and 9
    doc = SPEC.from_scene(scene, Context(options={"fps": 24}))
    walk = doc.animations[0]
    assert walk.fps == 24 and walk.frame_count == 23
    assert np.flatnonzero(walk.frames["flags"] & 2).tolist() == [10, 18]
    assert np.all(walk.frames["flags"] & 1)  # resampled: every frame a keyframe


@pytest.mark.parametrize("order", ["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"])
def test_euler_conversion_inverts_for_every_order(order: str) -> None:
    from gamemesh.formats.pmf.conventions import euler_to_quats, quats_to_euler

    rng = np.random.default_rng(1)
    e = rng.uniform(-80, 80, size=(50, 2, 3))
    for left in (False, True):
        q = euler_to_quats(e, order, "degrees", left)
        assert quats_to_euler(q, order, "degrees", left) == pytest.approx(e, abs=1e-6)


def test_rigidly_skinned_mesh_with_rotated_joints_poses_the_same() -> None:
    """Each triangle weighted fully to one joint: after the split into pieces the posed
    world-space triangles must be exactly the skinned ones, whatever the joints' rest rotations."""
    from gamemesh.scene import Skin

    s = Scene()
    root = s.add_node(Node("arm", translation=(0, 1, 0),
                           rotation=tuple(euler_to_quat(np.deg2rad([0, 0, 90])))))
    j0 = s.add_node(Node("upper", translation=(0.5, 0, 0),
                         rotation=tuple(euler_to_quat(np.deg2rad([30, 0, 0])))), root)
    j1 = s.add_node(Node("lower", translation=(1, 0, 0), scale=(1, 1.5, 1)), j0)
    cube = cube_vertices(0.2)
    pos = np.concatenate([cube["position"] + [0.3, 0, 0], cube["position"] + [1.3, 0, 0]])
    # Vertices are in the bind (mesh) space: put them where the rest pose has the joints.
    joints = np.zeros((len(pos), 4), np.uint16)
    joints[36:, 0] = 1
    weights = np.zeros((len(pos), 4), np.float32)
    weights[:, 0] = 1
    prim = Primitive(positions=pos.astype("f4"), joints=joints, weights=weights)
    mesh = s.add_mesh(Mesh("skin", [prim]))
    # Bind pose = rest pose: IBM = inverse(world rest) of each joint.
    from gamemesh.scene.math import world_matrices

    worlds = world_matrices(s)
    ibm = np.stack([np.linalg.inv(worlds[j0]), np.linalg.inv(worlds[j1])]).astype("f4")
    skin = s.add_skin(Skin([j0, j1], ibm))
    s.add_node(Node("body", mesh=mesh, skin=skin))
    t = np.arange(3, dtype=np.float32) / 2
    bend = euler_to_quat(np.deg2rad(np.column_stack([np.zeros(3), 50 * t, 20 * t])))
    s.animations.append(SceneAnimation("bend", [
        Channel(j1, "rotation", t, quat_multiply(s.nodes[j1].rotation, bend).astype("f4")),
        Channel(j0, "rotation", t, quat_multiply(s.nodes[j0].rotation, bend).astype("f4"))]))

    doc = SPEC.from_scene(s, Context())
    back = SPEC.to_scene(SPEC.read(SPEC.write(doc, Context()), Context()), Context())
    by_name = {n.name: i for i, n in enumerate(back.nodes)}
    for time in (0.0, 0.5, 1.0):
        # The skinned original: v_world = W_joint(t) @ IBM_joint @ v (weights are 0/1).
        posed = posed_world_matrices(s, time)
        want = []
        for j, node in enumerate((j0, j1)):
            sel = pos[joints[:, 0] == j]
            m = posed[node] @ ibm[j].astype(np.float64)
            want.append(sel @ m[:3, :3].T + m[:3, 3])
        got_m = posed_world_matrices(back, time)
        got = []
        for name in ("upper", "lower"):
            i = by_name[name]
            p = back.meshes[back.nodes[i].mesh].primitives[0].positions.astype(np.float64)
            got.append(p @ got_m[i][:3, :3].T + got_m[i][:3, 3])
        for w, g in zip(want, got, strict=True):
            assert g == pytest.approx(w, abs=2e-5), time


def posed_world_matrices(scene: Scene, t: float) -> list[np.ndarray]:
    anim = scene.animations[0]
    local = []
    for i, n in enumerate(scene.nodes):
        trs = {"translation": n.translation, "rotation": n.rotation, "scale": n.scale}
        for c in anim.channels:
            if c.node == i:
                trs[c.path] = sample_channel(c, [t])[0]
        local.append(trs_to_matrix(trs["translation"], trs["rotation"], trs["scale"]))
    world = [np.eye(4)] * len(scene.nodes)
    parents = scene.parents()
    for i in scene.walk():
        p = parents[i]
        world[i] = local[i] if p is None else world[p] @ local[i]
    return world


def test_sample_scene_to_pmf_and_back_to_a_valid_glb(tmp_path: Path,
                                                    gltf_validator: Any) -> None:
    gamemesh.save(sample_scene(), tmp_path / "sample.glb")
    report = gamemesh.convert(tmp_path / "sample.glb", tmp_path / "sample.pmf")
    assert "pmf.skin_split" in {n.code for n in report.notes}
    gamemesh.convert(tmp_path / "sample.pmf", tmp_path / "again.glb")
    gltf_validator(tmp_path / "again.glb")
    scene = gamemesh.load(tmp_path / "again.glb")
    assert [n.name for n in scene.nodes] == ["root", "sample", "bone0", "bone1", "bone2",
                                             "column"]
    assert mean_normal_agreement(scene) > 0.8  # smooth normals on a square column: ~0.9


def test_texture_option_puts_one_material_on_every_piece(tmp_path: Path,
                                                        gltf_validator: Any) -> None:
    from gamemesh.sample import checker
    from gamemesh.textures import encode_png

    (tmp_path / "skin.png").write_bytes(encode_png(checker()))
    src = tmp_path / "figure.pmf"
    src.write_bytes((FIXTURES / "figure.pmf").read_bytes())
    scene = gamemesh.load(src, texture="skin.png")
    assert len(scene.materials) == 1 and scene.images[0].mime_type == "image/png"
    assert {p.material for m in scene.meshes for p in m.primitives} == {0}
    assert "pmf.texture" in {n.code for n in scene.notes}
    report = gamemesh.convert(src, tmp_path / "textured.glb", texture="skin.png")
    assert report.outputs
    gltf_validator(tmp_path / "textured.glb")
    with pytest.raises(FileNotFoundError):
        gamemesh.load(src, texture="missing.png")


def test_non_finite_angles_are_noted_per_clip_and_turn_as_zero() -> None:
    """The clips' angles are tested once, joined: each clip's note still counts its own
    NaN/infinite angles (in clip order), and those angles convert as 0 would."""
    piece = Piece(pack_name("p"), np.array([0, 5, 0], "<f4"), tri_vertices())
    clean = make_frames(1, [[[10, 20, 30]], [[0, 0, 0]], [[40, 50, 60]]])
    bad = make_frames(1, [[[np.nan, 20, 30]], [[np.inf, -np.inf, 0]], [[40, 50, 60]]])
    empty = make_frames(1, np.zeros((0, 1, 3)))
    doc = PmfDocument([piece], [Animation(pack_name("a"), 0, 10, clean),
                                Animation(pack_name("b"), 0, 10, bad),
                                Animation(pack_name("c"), 0, 10, empty),
                                Animation(pack_name("d"), 0, 10, bad[:1])])
    ctx = Context()
    scene = SPEC.to_scene(doc, ctx)
    notes = [n.message for n in scene.notes if n.code == "pmf.non_finite"]
    assert notes == ["animation 1 rotations: 3 NaN/infinite values set to 0",
                     "animation 3 rotations: 1 NaN/infinite values set to 0"]
    by_name = {a.name: a for a in scene.animations}
    assert set(by_name) == {"a", "b", "d"}  # the empty clip is skipped (and noted)
    got = next(c for c in by_name["b"].channels if c.path == "rotation").values
    want = next(c for c in by_name["a"].channels if c.path == "rotation").values
    zeroed = make_frames(1, [[[0, 20, 30]], [[0, 0, 0]], [[40, 50, 60]]])
    ref = SPEC.to_scene(PmfDocument([piece], [Animation(pack_name("z"), 0, 10, zeroed)]),
                        Context()).animations[0]
    assert got.tobytes() == next(c for c in ref.channels if c.path == "rotation").values.tobytes()
    assert not np.array_equal(got, want)  # the NaN frame is not the clean clip's


def test_pmf_to_gltf_writes_a_plain_material_and_the_trip_back_loses_none(
        tmp_path: Path) -> None:
    """glTF's default material is fully metallic (renders dark): every piece gets a plain
    non-metallic one, which the trip back to PMF does not report lost."""
    src = Path(__file__).parent / "fixtures" / "pmf" / "figure.pmf"
    gamemesh.convert(src, tmp_path / "f.glb")
    back = gamemesh.load(tmp_path / "f.glb")
    assert len(back.materials) == 1
    mat = back.materials[0]
    assert (mat.metallic_factor, mat.roughness_factor) == (0.0, 1.0)
    assert mat.base_color_factor == (1.0, 1.0, 1.0, 1.0)
    assert all(p.material == 0 for m in back.meshes for p in m.primitives)
    notes = gamemesh.save(back, tmp_path / "f.pmf")
    assert not [n for n in notes if n.level == "warning" and "material" in n.message]


def _random_rigid_scene(seed: int) -> Scene:
    """A chain of pieces with random rest rotations whose keys hold random rotations, some
    with the middle Euler angle within 1e-3 rad of +-90 degrees (where a decomposition
    multiplies float noise) and some on half steps of the 20-bit angle grid (where any
    noise decides which way rounding goes)."""
    rng = np.random.default_rng(seed)
    s = Scene()
    cube = cube_vertices(0.2)
    m = s.add_mesh(Mesh("cube", [Primitive(positions=cube["position"].copy())]))
    parent = None
    keys = 6
    t = np.arange(keys, dtype=np.float32) / 10
    channels = []
    for i in range(4):
        rest = euler_to_quat(rng.uniform(-np.pi, np.pi, 3))
        node = s.add_node(Node(f"p{i}", translation=tuple(rng.uniform(-1, 1, 3)),
                               rotation=tuple(rest), mesh=m), parent)
        ang = rng.uniform(-np.pi, np.pi, (keys, 3))
        ang[:, 1] = rng.choice([-1, 1], keys) * (np.pi / 2 - rng.uniform(0, 1e-3, keys))
        half = (np.round(rng.uniform(-1.5, 1.5, keys) * 2**19) + 0.5) / 2**19
        ang[::2, 0] = half[::2]
        local = quat_multiply(np.tile(rest, (keys, 1)), euler_to_quat(ang))
        channels.append(Channel(node, "rotation", t, local.astype("f4")))
        parent = node
    s.animations.append(SceneAnimation("turn", channels))
    return s


@pytest.mark.parametrize("seed", range(8))
def test_random_rigid_hierarchies_reach_a_fixed_point_after_one_pmf_trip(
        tmp_path: Path, seed: int) -> None:
    src = tmp_path / "src.glb"
    gamemesh.save(_random_rigid_scene(seed), src)
    first, back, second = tmp_path / "a.pmf", tmp_path / "back.glb", tmp_path / "b.pmf"
    gamemesh.convert(src, first, to_format="pmf")
    gamemesh.convert(first, back, from_format="pmf")
    gamemesh.convert(back, second, to_format="pmf")
    assert len(SPEC.read(first.read_bytes(), Context()).animations[0].frames) == 6
    assert first.read_bytes() == second.read_bytes()
