"""Small scenes built in code, each stressing one thing a native writer may lose: a skin, a rigid
node animation, morph targets, two textures, vertex colours, several models. The road-back
tests save them as GLB with gamemesh's own writer and convert that GLB to every format."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gamemesh.sample import checker, column, sample_scene
from gamemesh.scene import (
    Animation,
    Channel,
    Image,
    Material,
    Mesh,
    MorphTarget,
    Node,
    Primitive,
    Scene,
    TextureRef,
)
from gamemesh.scene.math import euler_to_quat, vertex_normals


def _box(size: float = 0.5, offset: tuple[float, float, float] = (0, 0, 0)) -> Primitive:
    """A closed box, 8 shared corners, counter-clockwise outward faces, UVs from x/y."""
    c = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], np.float32)
    pos = c * size + np.asarray(offset, np.float32)
    tris = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                     [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]],
                    np.uint32)
    uv = (c[:, :2] * 0.5 + 0.5).astype(np.float32)
    return Primitive(positions=pos, normals=vertex_normals(pos, tris), texcoords=[uv],
                     indices=tris.reshape(-1))


def skinned() -> Scene:
    """The bundled sample: a column skinned to three bones, two clips, colours, one texture."""
    return sample_scene()


def _textured(scene: Scene, name: str, rgb: tuple[int, int, int]) -> int:
    px = checker(8, 2)
    px[::2, ::2, :3] = rgb
    img = scene.add_image(Image(name=name, pixels=px))
    return scene.add_material(Material(name=name, base_color_texture=TextureRef(img)))


def rigid_animated() -> Scene:
    """Three box nodes in a chain, no skin, one clip rotating and moving them."""
    scene = Scene(name="rigid")
    mat = _textured(scene, "paint", (200, 40, 40))
    parent = scene.add_node(Node(name="base"))
    nodes = []
    for k in range(3):
        prim = _box(0.3, (0, 0.3, 0))
        prim.material = mat
        mesh = scene.add_mesh(Mesh(name=f"part{k}", primitives=[prim]))
        parent = scene.add_node(Node(name=f"part{k}", mesh=mesh,
                                     translation=(0.0, 0.0 if k == 0 else 0.6, 0.0)), parent)
        nodes.append(parent)
    times = np.linspace(0, 1, 5, dtype=np.float32)
    chans = []
    for k, n in enumerate(nodes):
        e = np.zeros((len(times), 3))
        e[:, 2] = np.sin(times * np.pi) * 0.4 * (k + 1)
        chans.append(Channel(n, "rotation", times, euler_to_quat(e).astype(np.float32)))
    move = np.zeros((len(times), 3), np.float32)
    move[:, 0] = times * 0.5
    chans.append(Channel(nodes[0], "translation", times, move))
    scene.animations.append(Animation(name="wave", channels=chans))
    return scene


def morph() -> Scene:
    """A box with two morph targets and a clip driving their weights."""
    scene = Scene(name="morph")
    prim = _box()
    lift = np.zeros_like(prim.positions)
    lift[prim.positions[:, 1] > 0, 1] = 0.5
    widen = np.zeros_like(prim.positions)
    widen[:, 0] = prim.positions[:, 0] * 0.5
    prim.targets = [MorphTarget(positions=lift), MorphTarget(positions=widen)]
    mesh = scene.add_mesh(Mesh(name="blob", primitives=[prim], weights=[0.0, 0.0],
                               target_names=["lift", "widen"]))
    node = scene.add_node(Node(name="blob", mesh=mesh))
    times = np.array([0.0, 0.5, 1.0], np.float32)
    w = np.array([[0, 0], [1, 0], [0, 1]], np.float32)
    scene.animations.append(Animation(name="squash", channels=[
        Channel(node, "weights", times, w)]))
    return scene


def two_textures() -> Scene:
    """One static mesh of two primitives, each with its own base-colour texture."""
    scene = Scene(name="crate")
    a, b = _textured(scene, "wood", (150, 100, 40)), _textured(scene, "metal", (90, 90, 110))
    p1, p2 = _box(0.5), _box(0.25, (0, 0.75, 0))
    p1.material, p2.material = a, b
    mesh = scene.add_mesh(Mesh(name="crate", primitives=[p1, p2]))
    scene.add_node(Node(name="crate", mesh=mesh))
    return scene


def colors() -> Scene:
    """A static box with red-to-blue vertex colours and no material."""
    scene = Scene(name="tinted")
    prim = _box()
    t = (prim.positions[:, 1] > 0).astype(np.float32)
    prim.colors = [np.stack([1 - t, np.full_like(t, 0.2), t, np.ones_like(t)], 1)]
    mesh = scene.add_mesh(Mesh(name="tinted", primitives=[prim]))
    scene.add_node(Node(name="tinted", mesh=mesh))
    return scene


def multi_model() -> Scene:
    """The skinned sample plus a second, unskinned model (a Papa unit's nav mesh)."""
    scene = sample_scene()
    prim = column(2, 0.1, 1.0)
    prim.colors = []
    mesh = scene.add_mesh(Mesh(name="nav", primitives=[prim]))
    scene.add_node(Node(name="nav", mesh=mesh))
    return scene


SAMPLES: dict[str, Callable[[], Scene]] = {
    "skinned": skinned, "rigid": rigid_animated, "morph": morph, "two_textures": two_textures,
    "colors": colors, "multi_model": multi_model}
