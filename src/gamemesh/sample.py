"""A small rigged, animated, textured model built in code: the demo's input and the tests'
common fixture for every format's from_scene.

A four-sided column two units tall, skinned to a chain of three bones, with a checker texture,
vertex colours and two clips ("bend" and "twist").
"""

from __future__ import annotations

import numpy as np

from .scene import (
    Animation,
    Channel,
    Image,
    Material,
    Mesh,
    Node,
    Primitive,
    Scene,
    Skin,
    TextureRef,
)
from .scene.math import euler_to_quat, vertex_normals


def checker(size: int = 16, cells: int = 4) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size] * cells // size
    on = ((xx + yy) % 2).astype(bool)
    px = np.empty((size, size, 4), dtype=np.uint8)
    px[on] = (230, 120, 40, 255)
    px[~on] = (40, 90, 200, 255)
    return px


def column(rings: int = 5, height: float = 2.0, radius: float = 0.25) -> Primitive:
    """A closed square column along +Y, counter-clockwise outward faces, flat-ish UVs."""
    ys = np.linspace(0.0, height, rings)
    corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], dtype=np.float64) * radius
    # ring vertices: (rings, 4, 3)
    ring = np.zeros((rings, 4, 3))
    ring[:, :, 0] = corners[None, :, 0]
    ring[:, :, 2] = corners[None, :, 1]
    ring[:, :, 1] = ys[:, None]
    pos = ring.reshape(-1, 3)
    uv = np.zeros((rings, 4, 2))
    uv[:, :, 0] = np.array([0, 0.25, 0.5, 0.75])[None, :]
    uv[:, :, 1] = 1.0 - ys[:, None] / height
    r = np.arange(rings - 1)[:, None]
    c = np.arange(4)[None, :]
    a = r * 4 + c
    b = r * 4 + (c + 1) % 4
    a2, b2 = a + 4, b + 4
    # Outward-facing CCW seen from outside: (a, a2, b) and (b, a2, b2).
    sides = np.stack([np.stack([a, a2, b], -1), np.stack([b, a2, b2], -1)], 2).reshape(-1, 3)
    n = len(pos)
    cap_lo = np.array([[0, 1, 2], [0, 2, 3]])
    top = (rings - 1) * 4
    cap_hi = np.array([[top, top + 2, top + 1], [top, top + 3, top + 2]])
    tris = np.concatenate([sides, cap_lo, cap_hi]).astype(np.uint32)
    positions = pos.astype(np.float32)
    colors = np.ones((n, 4), dtype=np.float32)
    colors[:, 0] = np.linspace(0.6, 1.0, n)
    return Primitive(positions=positions, normals=vertex_normals(positions, tris),
                     texcoords=[uv.reshape(-1, 2).astype(np.float32)], colors=[colors],
                     indices=tris.reshape(-1))


def sample_scene(bones: int = 3, rings: int = 5) -> Scene:
    scene = Scene(name="gamemesh_sample")
    img = scene.add_image(Image(name="checker", pixels=checker(), uri="checker.png"))
    mat = scene.add_material(Material(name="checker", base_color_texture=TextureRef(img),
                                      roughness_factor=0.8))
    prim = column(rings)
    prim.material = mat
    height = 2.0
    seg = height / bones
    # Rigid-ish weights: each ring to the bone below it, blended at joints.
    y = prim.positions[:, 1] / seg
    lo = np.clip(np.floor(y).astype(np.int64), 0, bones - 1)
    hi = np.clip(lo + 1, 0, bones - 1)
    frac = np.clip(y - lo, 0, 1)
    w_hi = np.where(hi != lo, np.clip((frac - 0.5) * 0.8, 0, 0.4), 0.0)
    joints = np.zeros((len(y), 4), dtype=np.uint16)
    weights = np.zeros((len(y), 4), dtype=np.float32)
    joints[:, 0] = lo
    joints[:, 1] = np.where(w_hi > 0, hi, 0)
    weights[:, 0] = 1.0 - w_hi
    weights[:, 1] = w_hi
    prim.joints, prim.weights = joints, weights
    mesh = scene.add_mesh(Mesh(name="column", primitives=[prim]))

    root = scene.add_node(Node(name="sample"))
    joint_nodes: list[int] = []
    parent = root
    for b in range(bones):
        t = (0.0, 0.0 if b == 0 else seg, 0.0)
        parent = scene.add_node(Node(name=f"bone{b}", translation=t), parent)
        joint_nodes.append(parent)
    ibm = np.tile(np.eye(4, dtype=np.float32), (bones, 1, 1))
    ibm[:, 1, 3] = -np.arange(bones) * seg
    skin = scene.add_skin(Skin(joints=joint_nodes, inverse_bind_matrices=ibm,
                               skeleton=joint_nodes[0], name="rig"))
    # A skinned mesh's node is a root: glTF ignores its parents' transforms anyway.
    scene.add_node(Node(name="column", mesh=mesh, skin=skin))

    times = np.linspace(0.0, 1.0, 9, dtype=np.float32)
    bend, twist = [], []
    for k, j in enumerate(joint_nodes):
        angle = np.sin(times * np.pi * 2) * 0.5 * (k + 1) / bones
        e = np.zeros((len(times), 3))
        e[:, 2] = angle
        bend.append(Channel(j, "rotation", times, euler_to_quat(e).astype(np.float32)))
        e2 = np.zeros((len(times), 3))
        e2[:, 1] = times * np.pi / 2
        twist.append(Channel(j, "rotation", times, euler_to_quat(e2).astype(np.float32)))
    scene.animations.append(Animation(name="bend", channels=bend))
    scene.animations.append(Animation(name="twist", channels=twist))
    scene.extras["generator"] = "gamemesh.sample"
    return scene
