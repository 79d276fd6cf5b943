"""Scene invariants, summaries and the transform helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gamemesh
from gamemesh.sample import column, sample_scene
from gamemesh.scene import Channel, InvalidSceneError, Mesh, Node, Primitive, Scene, problems
from gamemesh.scene.math import (
    euler_to_quat,
    matrix_to_quat,
    matrix_to_trs,
    quat_to_euler,
    quat_to_matrix,
    trs_to_matrix,
    world_matrices,
)
from gamemesh.scene.sampling import sample_channel


def test_sample_is_valid_and_summarized() -> None:
    s = sample_scene()
    assert problems(s) == []
    summ = s.summary()
    assert summ["vertices"] == 20 and summ["triangles"] == 36 and summ["bones"] == 3
    assert summ["bounds"] == {"min": [-0.25, 0.0, -0.25], "max": [0.25, 2.0, 0.25]}
    assert summ["animations"][0] == {"name": "bend", "channels": 3, "keys": 9, "duration": 1.0}


@pytest.mark.parametrize(("breaker", "needle"), [
    (lambda s: setattr(s.nodes[0], "children", [99]), "nodes[0] ('sample'): child 99"),
    (lambda s: setattr(s.nodes[0], "rotation", (0, 0, 0, 2)), "not a unit quaternion"),
    (lambda s: setattr(s.meshes[0].primitives[0], "indices",
                       np.array([0, 1, 500], dtype=np.uint32)), "index 500 out of range"),
    (lambda s: setattr(s.meshes[0].primitives[0], "normals", np.zeros((3, 3), np.float32)),
     "normals has 3 rows for 20 positions"),
    (lambda s: setattr(s.skins[0], "joints", [1, 2]), "uses joint 2 of 2"),
    (lambda s: s.animations[0].channels.append(
        Channel(1, "rotation", np.float32([1, 0]), np.float32([[0, 0, 0, 1]] * 2))),
     "not strictly increasing"),
    (lambda s: setattr(s.materials[0].base_color_texture, "image", 3), "image 3 out of range"),
])
def test_validate_names_the_culprit(breaker, needle) -> None:  # type: ignore[no-untyped-def]
    s = sample_scene()
    breaker(s)
    with pytest.raises(InvalidSceneError) as e:
        s.validate()
    assert needle in str(e.value)


def test_walk_is_iterative() -> None:
    s = Scene()
    parent = None
    for i in range(50_000):
        parent = s.add_node(Node(name=str(i)), parent)
    assert len(s.walk()) == 50_000
    assert world_matrices(s)[-1].shape == (4, 4)


def test_quaternion_round_trips() -> None:
    rng = np.random.default_rng(3)
    q = rng.normal(size=(200, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 3] < 0] *= -1
    np.testing.assert_allclose(matrix_to_quat(quat_to_matrix(q)), q, atol=1e-9)
    for order in ("XYZ", "ZYX", "YXZ", "ZXY"):
        e = rng.uniform(-1.2, 1.2, size=(50, 3))
        back = quat_to_euler(euler_to_quat(e, order), order)
        np.testing.assert_allclose(back, e, atol=1e-9)


def test_euler_order_meaning() -> None:
    # "XYZ" is R = Rx @ Ry @ Rz: a point on +X rotated 90 deg about Z then X lands on +Z.
    q = euler_to_quat(np.array([np.pi / 2, 0, np.pi / 2]), "XYZ")
    np.testing.assert_allclose(quat_to_matrix(q) @ [1, 0, 0], [0, 0, 1], atol=1e-12)


def test_trs_matrix() -> None:
    m = trs_to_matrix((1, 2, 3), (0, 0, np.sqrt(0.5), np.sqrt(0.5)), (2, 2, 2))
    t, r, s = matrix_to_trs(m)
    np.testing.assert_allclose(t, [1, 2, 3])
    np.testing.assert_allclose(s, [2, 2, 2])
    np.testing.assert_allclose(r, [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-12)


def test_primitive_counts() -> None:
    p = Primitive(positions=np.zeros((6, 3), np.float32))
    assert p.triangle_count == 2 and p.triangles().tolist() == [[0, 1, 2], [3, 4, 5]]


def test_matrix_to_quat_half_turns() -> None:
    """w = 0: the signs of x, y, z relative to each other must survive (a real SPLASHPACK
    object is turned half way about a tilted axis)."""
    axes = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, -1, 0], [0, 1, -1],
                     [1, -2, 3], [-1, 0.5, 0.25]], dtype=np.float64)
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    q = np.concatenate([axes, np.zeros((len(axes), 1))], axis=1)  # 180 degrees
    got = matrix_to_quat(quat_to_matrix(q))
    same = np.minimum(np.abs(got - q).max(axis=1), np.abs(got + q).max(axis=1))
    assert same.max() < 1e-9
    np.testing.assert_allclose(quat_to_matrix(got), quat_to_matrix(q), atol=1e-12)


def test_sampling_interpolations() -> None:
    """The shared sampler (PMF frames, Papa frames, PBA keys): before the first key the
    first value, after the last the last."""
    times = np.array([0.0, 0.25, 0.5, 1.0, 2.0])
    lin = Channel(0, "translation", np.array([0.0, 1.0], np.float32),
                  np.array([[0, 0, 0], [2, 4, 6]], np.float32))
    np.testing.assert_allclose(sample_channel(lin, times)[:, 1], [0, 1, 2, 4, 4])
    step = Channel(0, "translation", np.array([0.0, 0.5], np.float32),
                   np.array([[1, 0, 0], [3, 0, 0]], np.float32), "STEP")
    np.testing.assert_allclose(sample_channel(step, times)[:, 0], [1, 1, 3, 3, 3])
    # CUBICSPLINE with zero tangents: Hermite smoothstep between the two values.
    vals = np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [8, 0, 0], [0, 0, 0]],
                    np.float32)
    cub = Channel(0, "translation", np.array([0.0, 1.0], np.float32), vals, "CUBICSPLINE")
    np.testing.assert_allclose(sample_channel(cub, times)[:, 0], [0, 1.25, 4, 8, 8])
    # Rotation: slerp half way between identity and 90 deg about Y is 45 deg.
    s = np.sqrt(0.5)
    rot = Channel(0, "rotation", np.array([0.0, 1.0], np.float32),
                  np.array([[0, 0, 0, 1], [0, s, 0, s]], np.float32))
    q = sample_channel(rot, np.array([0.5]))[0]
    np.testing.assert_allclose(q, [0, np.sin(np.pi / 8), 0, np.cos(np.pi / 8)], atol=1e-6)


def test_summary_counts_shared_vertices_once(tmp_path: Path) -> None:
    """Primitives over one vertex array (a Papa vertex buffer's groups, glTF primitives sharing
    accessors) hold its vertices once: `info` counts them once, also after a glTF trip."""
    prim = column()
    half = len(prim.indices) // 2
    other = Primitive(positions=prim.positions, normals=prim.normals,
                      texcoords=list(prim.texcoords), indices=prim.indices[half:])
    prim.indices = prim.indices[:half]
    scene = Scene()
    scene.add_node(Node(mesh=scene.add_mesh(Mesh(name="two", primitives=[prim, other]))))
    assert scene.summary()["vertices"] == prim.vertex_count == 20
    gamemesh.save(scene, tmp_path / "s.glb")
    assert gamemesh.load(tmp_path / "s.glb").summary()["vertices"] == 20
