"""A small scene with every modern SPLASHPACK feature the writer authors (textured and
untextured triangles, a skinned mesh with a clip, an object animation, a point light), and the
fixtures of versions 20..26 made from it by gamemesh's own writer. No tests here."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from gamemesh.formats.splashpack.modern import layout as ml
from gamemesh.formats.splashpack.modern.document import ModernDocument, Sequence, Track
from gamemesh.formats.splashpack.modern.from_scene import from_scene_modern
from gamemesh.formats.splashpack.modern.write import write_modern, write_vram
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
VERSIONS = (20, 21, 22, 23, 24, 25, 26)


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
    data records are the same; only the header grows; 25 adds the renderer sizes, 26 the skin's
    bind positions and joint names)."""
    doc = from_scene_modern(scene(lights=version >= 24),
                            Context(options={"splash_version": max(version, 23)}))
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


# Made-up SPU ADPCM: 7 blocks of 16 bytes (a shift/filter byte, a flags byte, 14 sample bytes).
ADPCM = bytes((k * 37 + 11) & 0xFF if k % 16 > 1 else (0x0C if k % 16 == 0 else 0)
              for k in range(112))


def spu_file(clips: list[tuple[int, int, bytes]]) -> bytes:
    """A ``.spu`` (spec-modern §7): 'SA', the clip count, then per clip its size, rate, loop and a
    pad byte, its ADPCM, an align to 4."""
    out = bytearray(b"SA" + struct.pack("<H", len(clips)))
    for rate, loop, data in clips:
        out += struct.pack("<IHBB", len(data), rate, loop, 0) + data
        out += bytes(-len(out) % 4)
    return bytes(out)


def interior_document(version: int = 21) -> ModernDocument:
    """The scene as an interior (sceneType 1) with two rooms, the catch-all, one portal between
    them, one cell per room and the portal refs, laid out as D23 §2.9 says SplashEdit writes
    them. The floor's first triangle is made untextured, so the floor's two materials interleave
    and a glTF holds its triangles in another order than the file (textured first)."""
    doc = document(version)
    doc.header["scene_type"] = 1
    doc.bvh_nodes, doc.bvh_refs = np.zeros(0, ml.BVH_NODE), np.zeros(0, ml.BVH_REF)
    floor = doc.meshes[0]
    floor[0]["tpage"], floor[0]["clut_x"], floor[0]["clut_y"] = 0xFFFF, 0, 0
    floor[0]["uv"] = 0
    doc.room_tri_refs = np.zeros(4, ml.ROOM_TRI_REF)
    # Room 0: the floor's triangles 0 and 1; room 1: the crate's 1 and 0; the catch-all: none.
    doc.room_tri_refs[["object", "tri"]] = [(0, 0), (0, 1), (1, 1), (1, 0)]
    doc.rooms = np.zeros(3, ml.ROOM)
    doc.rooms[["first_tri_ref", "tri_ref_count", "first_cell", "cell_count", "portal_ref_count",
               "first_portal_ref"]] = [(0, 2, 0, 1, 1, 0), (2, 2, 1, 1, 1, 1), (4, 0, 2, 0, 0, 2)]
    doc.rooms["aabb"] = [[-8192, -4096, -8192, 8192, 4096, 0], [0, -8192, -8192, 8192, 0, 8192],
                         [-40960, -40960, -40960, 40960, 40960, 40960]]
    doc.room_portals = np.zeros(1, ml.ROOM_PORTAL)
    doc.room_portals[0] = (0, 1, [4096, -2048, 0], 2048, 4096, [0, 0, 4096], 0, [4096, 0, 0],
                           [0, -4096, 0])
    doc.room_cells = np.zeros(2, ml.ROOM_CELL)
    doc.room_cells[["first_tri_ref", "tri_ref_count"]] = [(0, 2), (2, 2)]
    doc.room_cells["aabb"] = doc.rooms["aabb"][:2]
    doc.room_portal_refs = np.zeros(2, ml.ROOM_PORTAL_REF)
    doc.room_portal_refs[["portal", "other_room"]] = [(0, 1), (0, 0)]
    return doc


def rich_document() -> ModernDocument:
    """The v24 document plus what a scene cannot author: a Lua file, a collider, a trigger, an
    interactable, an agent with waypoints, a BVH, a square nav region with a portal, a cutscene
    with a camera track playing an audio clip, two audio clips with their ``.spu``, and a memory
    card block kept as opaque bytes at the offset it must have."""
    doc = document(24)
    doc.lua = [b"function onCreate(self) end\n"]
    doc.lua_desc = np.zeros(1, ml.LUA_DESC)
    doc.header["scene_lua"] = 0
    doc.colliders = np.zeros(1, ml.COLLIDER)
    doc.colliders[0] = ([-10, -10, -10, 10, 10, 10], 1, 0xFF, 1, 0)
    doc.triggers = np.zeros(1, ml.TRIGGER)
    doc.triggers[0] = ([0, 0, 0, 50, 50, 50], 0, 0, 0)
    doc.interactables = np.zeros(1, ml.INTERACTABLE)
    doc.interactables[0]["go_index"], doc.interactables[0]["prompt"] = 1, b"Open"
    doc.agents = np.zeros(1, ml.AGENT)
    doc.agents[0]["go_index"], doc.agents[0]["waypoint_count"] = 2, 2
    doc.waypoints = np.zeros(2, ml.WAYPOINT)
    doc.waypoints["v"] = [[0, 0, 0], [4096, 0, 4096]]
    doc.bvh_nodes = np.zeros(1, ml.BVH_NODE)
    doc.bvh_nodes[0] = ([-100, -100, -100, 100, 100, 100], 0xFFFF, 0xFFFF, 0, 2)
    doc.bvh_refs = np.zeros(2, ml.BVH_REF)
    doc.bvh_refs["object"], doc.bvh_refs["tri"] = [0, 0], [0, 1]
    doc.nav_header = np.zeros(1, ml.NAV_HEADER)
    doc.nav_regions = np.zeros(1, ml.NAV_REGION)
    reg = doc.nav_regions[0]
    reg["verts_x"][:4] = [-8192, 8192, 8192, -8192]
    reg["verts_z"][:4] = [-8192, -8192, 8192, 8192]
    reg["vert_count"], reg["room_index"] = 4, 0xFF
    doc.nav_portals = np.zeros(1, ml.NAV_PORTAL)
    keys = np.zeros(2, ml.KEY)
    keys["frame"], keys["v"] = [0, 60], [[0, -100, 0], [50, -100, 0]]
    doc.cutscenes = [Sequence(name=b"intro", header=np.zeros(1, ml.CUTSCENE_HEADER),
                              tracks=[Track(0, 0, b"", keys)])]
    # Two clips (their ADPCM in the .spu, 16-byte blocks as the SPU plays them) and a cutscene
    # event playing the second.
    doc.audio_clips = np.zeros(2, ml.AUDIO_CLIP)
    doc.audio_clips[["size", "rate", "loop"]] = [(64, 22050, 0), (48, 11025, 1)]
    doc.audio_names = [b"step", b"door_loop"]
    doc.spu = spu_file([(22050, 0, ADPCM[:64]), (11025, 1, ADPCM[64:112])])
    doc.cutscenes[0].audio_events = np.zeros(1, ml.AUDIO_EVENT)
    doc.cutscenes[0].audio_events[0] = (30, 1, 100, 64, 0)
    # A memory-card block (464 B, not modelled) where the writer puts the unmodelled blocks:
    # after the skins, before the lights.
    lights, doc.lights = doc.lights, []
    at = (len(write_modern(doc)) + 3) // 4 * 4
    doc.lights = lights
    doc.opaque["memcard_offset"] = (at, b"BI" + b"SLPS-00000" + b"GAMEMESH".ljust(32, b"\0") +
                                    bytes(464 - 44))
    return doc
