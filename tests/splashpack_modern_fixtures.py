"""A small scene with every modern SPLASHPACK feature the writer authors (textured and
untextured triangles, a skinned mesh with a clip, an object animation, a point light), and the
fixtures of versions 20..24 made from it by gamemesh's own writer. No tests here."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gamemesh.formats.splashpack import modern_layout as ml
from gamemesh.formats.splashpack.modern_document import ModernDocument
from gamemesh.formats.splashpack.modern_from_scene import from_scene_modern
from gamemesh.formats.splashpack.modern_write import write_modern, write_vram
from gamemesh.registry import Context
from gamemesh.scene import (
    Animation,
    Channel,
    Image,
    Light,
    Material,
    Mesh,
    Node,
    Primitive,
    Scene,
    Skin,
    TextureRef,
)

FIXTURES = Path(__file__).parent / "fixtures" / "splashpack_modern"
VERSIONS = (20, 21, 22, 23, 24)


def checker(n: int = 16) -> np.ndarray:
    """An RGBA checkerboard of 4 colours, n x n."""
    colours = np.array([[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255],
                        [255, 255, 255, 255]], dtype=np.uint8)
    idx = ((np.arange(n)[:, None] // 4) + (np.arange(n)[None, :] // 4) * 2) % 4
    return colours[idx]


def quad(size: float, y: float = 0.0) -> Primitive:
    p = np.array([[-size, y, -size], [size, y, -size], [size, y, size], [-size, y, size]],
                 dtype=np.float32)
    return Primitive(positions=p, normals=np.tile(np.float32([0, 1, 0]), (4, 1)),
                     texcoords=[np.float32([[0, 0], [1, 0], [1, 1], [0, 1]])],
                     indices=np.uint32([0, 2, 1, 0, 3, 2]))


def column() -> Primitive:
    """Two stacked boxes' side faces, 8 vertices: the lower 4 on bone 0, the upper 4 on bone 1."""
    ring = np.float32([[-0.2, 0, -0.2], [0.2, 0, -0.2], [0.2, 0, 0.2], [-0.2, 0, 0.2]])
    p = np.concatenate([ring, ring + np.float32([0, 1, 0]), ring + np.float32([0, 2, 0])])
    idx = []
    for level in (0, 1):
        for k in range(4):
            a, b = level * 4 + k, level * 4 + (k + 1) % 4
            idx += [a, b, b + 4, a, b + 4, a + 4]
    joints = np.zeros((12, 4), np.uint16)
    joints[4:, 0] = 1
    weights = np.zeros((12, 4), np.float32)
    weights[:, 0] = 1
    col = np.tile(np.float32([0.5, 0.25, 0.75]), (12, 1))
    return Primitive(positions=p, indices=np.uint32(idx), joints=joints, weights=weights,
                     colors=[col])


def scene(lights: bool = True) -> Scene:
    s = Scene(name="modern")
    img = s.add_image(Image(name="checker", pixels=checker()))
    tex = s.add_material(Material(name="floor", base_color_texture=TextureRef(img)))
    plain = s.add_material(Material(name="plain"))
    floor = quad(2.0)
    floor.material = tex
    s.add_node(Node(name="Floor", mesh=s.add_mesh(Mesh(name="floor", primitives=[floor]))))
    box = quad(0.5, 0.5)
    box.material = tex
    s.add_node(Node(name="Crate", translation=(1.0, 0.0, -1.0),
                    mesh=s.add_mesh(Mesh(name="crate", primitives=[box]))))
    col = column()
    col.material = plain
    body = s.add_node(Node(name="Pillar", translation=(-1.0, 0.0, 1.0),
                           mesh=s.add_mesh(Mesh(name="pillar", primitives=[col]))))
    j0 = s.add_node(Node(name="hip"), parent=body)
    j1 = s.add_node(Node(name="top", translation=(0.0, 1.0, 0.0)), parent=j0)
    ibm = np.tile(np.eye(4, dtype=np.float32), (2, 1, 1))
    ibm[1, 1, 3] = -1.0
    s.nodes[body].skin = s.add_skin(Skin(joints=[j0, j1], inverse_bind_matrices=ibm))
    t = np.float32([0.0, 0.5, 1.0])
    half = np.sin(np.pi / 8)
    bend = np.float32([[0, 0, 0, 1], [0, 0, half, np.cos(np.pi / 8)], [0, 0, 0, 1]])
    s.animations.append(Animation(name="bend", channels=[Channel(j1, "rotation", t, bend)]))
    s.animations.append(Animation(name="slide", channels=[
        Channel(1, "translation", t, np.float32([[1, 0, -1], [1, 0.5, -1], [1, 0, -1]]))]))
    if lights:
        li = s.add_light(Light(name="lamp", color=(1.0, 0.5, 0.25), intensity=1.5, range=4.0))
        s.add_node(Node(name="lamp", translation=(0.0, 2.0, 0.0), light=li))
    return s


def document(version: int) -> ModernDocument:
    """The scene written as ``version`` (20..22 by re-heading the v23 document: the cursor and
    data records are the same; only the header grows)."""
    doc = from_scene_modern(scene(lights=version >= 24),
                            Context(options={"version": max(version, 23)}))
    if version < 23:
        hdr = np.zeros(1, ml.HEADERS[version])
        for name in hdr.dtype.names or ():
            hdr[name] = doc.header[name]
        hdr["version"] = version
        doc.header = hdr
        if version < 22:
            doc.agents = np.zeros(0, ml.AGENT)
    return doc


def files(version: int) -> tuple[bytes, bytes]:
    doc = document(version)
    assert doc.vram is not None
    return write_modern(doc), write_vram(doc.vram)


def build(folder: Path = FIXTURES) -> list[Path]:
    """(Re)write the checked-in fixtures: ``v<N>.splashpack`` + ``v<N>.vram``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for v in VERSIONS:
        main, vram = files(v)
        (folder / f"v{v}.splashpack").write_bytes(main)
        (folder / f"v{v}.vram").write_bytes(vram)
        out.append(folder / f"v{v}.splashpack")
    return out
