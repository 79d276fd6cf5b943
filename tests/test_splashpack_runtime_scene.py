"""What a modern SPLASHPACK written from a scene means to the psxsplash runtime: the player can
move and starts where the scene says, lights reach objects, skin clips loop without a hitch,
animated children move in world space, and colours survive a trip through glTF."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.formats.splashpack.modern.document import ModernDocument
from gamemesh.formats.splashpack.modern.from_scene import from_scene_modern
from gamemesh.registry import Context
from gamemesh.scene import Mesh, Node, Scene
from splashpack_modern_fixtures import quad

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus" / "splashpack"
V1_F = CORPUS / "v1-F_28byte-header-player__psxsplash-febb6f3.bin"


def _plain(nodes: int = 1) -> Scene:
    s = Scene(name="plain")
    mesh = s.add_mesh(Mesh(name="floor", primitives=[quad(1.0)]))
    for k in range(nodes):
        s.add_node(Node(name=f"obj{k}", mesh=mesh, translation=(3.0 * k, 0.0, 0.0)))
    return s


def _doc(scene: Scene, **opts: object) -> ModernDocument:
    return from_scene_modern(scene, Context(options={"splash_version": 23, **opts}))


# -- item 3: the player ------------------------------------------------------------------------
def test_movement_fields_are_splashedit_defaults_at_gte_100() -> None:
    """SplashEdit's PSXPlayer defaults (psxsplash/splashedit Runtime/PSXPlayer.cs: height 1.8,
    radius 0.5, move 3, sprint 8, jump height 2, gravity 20) through PSXSceneWriter.cs:209-222
    (per frame at 30 fps, sqrt(2 g h), / GTEScaling, 4.12)."""
    h = _doc(_plain()).header[0]
    assert int(h["move_speed"]) == round(3 / 30 / 100 * 4096) == 4
    assert int(h["sprint_speed"]) == round(8 / 30 / 100 * 4096) == 11
    assert int(h["jump_velocity"]) == round(math.sqrt(2 * 20 * 2) / 100 * 4096) == 366
    assert int(h["gravity"]) == round(20 / 100 * 4096) == 819
    assert int(h["player_radius"]) == round(0.5 / 100 * 4096) == 20
    assert int(h["player_height"]) == round(1.8 / 100 * 4096) == 74
    assert list(h["player_pos"]) == [0, 0, 0]


def test_movement_options_set_the_fields() -> None:
    """The same formulas (PSXSceneWriter.cs:209-222) on the options' values."""
    h = _doc(_plain(), move_speed=6.0, sprint_speed=12.0, jump_height=1.0, gravity=10.0,
             player_radius=0.25, player_height=2.0).header[0]
    assert [int(h[k]) for k in ("move_speed", "sprint_speed", "jump_velocity", "gravity",
                                "player_radius", "player_height")] == [
        round(6 / 30 / 100 * 4096), round(12 / 30 / 100 * 4096),
        round(math.sqrt(2 * 10 * 1) / 100 * 4096), round(10 / 100 * 4096),
        round(0.25 / 100 * 4096), round(2 / 100 * 4096)]


def test_player_start_node_gives_position_rotation_and_height(tmp_path: Path) -> None:
    """Position: the header's (x, -y, z) / GTEScaling in 4.12 with glTF = (-X, -Y, Z)
    (spec-modern §2.1); rotation: splashedit-ng core/splashpack.cpp writes Unity Euler degrees
    / 180 in 4.12 (psyqo::Angle units). A quarter turn about glTF +Y is Unity yaw -90 (X is
    mirrored), i.e. 270 degrees = -90: -2048 (same angle modulo 2 pi)."""
    s = _plain()
    c = math.cos(math.pi / 4)
    s.add_node(Node(name="player_start", translation=(1.0, 2.0, 3.0), rotation=(0, c, 0, c),
                    extras={"splashpack": {"player": True, "height": 1.5}}))
    h = _doc(s).header[0]
    assert list(h["player_pos"]) == [-round(1 / 100 * 4096), -round(2 / 100 * 4096),
                                     round(3 / 100 * 4096)]
    assert int(h["player_height"]) == round(1.5 / 100 * 4096)
    assert list(h["player_rot"]) == [0, -2048, 0]
    gamemesh.save(s, tmp_path / "p.splashpack", splash_version=23)
    back = gamemesh.load(tmp_path / "p.splashpack")
    node = next(n for n in back.nodes if n.name == "player_start")
    assert np.allclose(node.translation, (1.0, 2.0, 3.0), atol=0.02)
    assert np.allclose(np.abs(np.dot(node.rotation, (0, c, 0, c))), 1.0, atol=1e-3)


@pytest.mark.skipif(not V1_F.exists(), reason="corpus not present (../shared/corpus)")
def test_v1_player_start_carries_into_a_modern_pack(tmp_path: Path) -> None:
    """The corpus's layout-F pack stores the start (-585, 64, -722) and height 243
    (v1 reader, spec §b); a v23 pack converted from it keeps them at GTEScaling 100."""
    gamemesh.convert(V1_F, tmp_path / "f.splashpack", splash_version=23)
    doc = gamemesh.read_native(tmp_path / "f.splashpack")
    h = doc.header[0]
    assert list(h["player_pos"]) == [-585, 64, -722] and int(h["player_height"]) == 243
    assert int(h["move_speed"]) == 4 and int(h["gravity"]) == 819
    # Read back: the start is a node again, and a second write gives the same header.
    back = gamemesh.load(tmp_path / "f.splashpack")
    node = next(n for n in back.nodes if n.name == "player_start")
    assert node.extras["splashpack"]["height_raw"] == 243
    gamemesh.save(back, tmp_path / "g.splashpack")
    again = gamemesh.read_native(tmp_path / "g.splashpack").header[0]
    for k in ("player_pos", "player_rot", "player_height", "move_speed", "jump_velocity"):
        assert np.array_equal(again[k], h[k]), k


# -- item 5: looping skin clips ----------------------------------------------------------------
def _skinned(loop: bool | None, fps: int = 15) -> Scene:
    from splashpack_modern_fixtures import scene

    s = scene(lights=False)
    s.animations = [a for a in s.animations if a.name == "bend"]
    info = {"fps": fps} | ({} if loop is None else {"loop": loop})
    s.animations[0].extras["splashpack"] = info
    return s


@pytest.mark.parametrize(("loop", "frames"), [(True, 15), (None, 15), (False, 16)])
def test_loop_clips_store_no_duplicate_end_frame(loop: bool | None, frames: int) -> None:
    """psxsplash src/skinmesh.cpp / animation.cpp loop with currentFrame % frameCount, so a
    looping clip of 1.0 s at 15 fps is 15 frames (splashedit-ng tests/skincheck.py); a
    one-shot clip keeps ceil(length x fps) + 1 = 16 and ends on its last pose. A glTF clip
    says nothing about looping: it loops (the default of SplashEdit's skin events)."""
    doc = _doc(_skinned(loop))
    clip = doc.skins[0].clips[0]
    assert clip.matrices.shape[0] == frames and clip.fps == 15
    assert clip.flags & 1 == (0 if loop is False else 1)
    if loop is not False:
        # The last stored pose is not the first again (the bend is at its peak at 0.5 s).
        assert not np.array_equal(clip.matrices[-1], clip.matrices[0])


def test_a_looping_clip_reads_back_with_its_length_and_writes_the_same_frames(
        tmp_path: Path) -> None:
    """Reading closes the loop (the first pose again at frames / fps), so the glTF clip lasts
    1.0 s as the source did and a second write stores the same 15 frames, byte for byte."""
    gamemesh.save(_skinned(True), tmp_path / "a.splashpack", splash_version=23)
    back = gamemesh.load(tmp_path / "a.splashpack")
    clip = next(a for a in back.animations if a.name == "bend")
    assert clip.duration == pytest.approx(1.0, abs=1e-6)
    ch = clip.channels[0]
    assert len(ch.times) == 16 and np.array_equal(ch.values[0], ch.values[-1])
    gamemesh.save(back, tmp_path / "b.splashpack", splash_version=23)
    first = gamemesh.read_native(tmp_path / "a.splashpack").skins[0].clips[0].matrices
    again = gamemesh.read_native(tmp_path / "b.splashpack").skins[0].clips[0].matrices
    assert again.shape[0] == 15 and first.tobytes() == again.tobytes()


# -- item 4: runtime lights --------------------------------------------------------------------
def _lit_scene() -> Scene:
    """Near (1 unit from the lamp), Far (20 units), a skinned pillar under the lamp."""
    from gamemesh.scene import Light
    from splashpack_modern_fixtures import scene

    s = scene(lights=True)  # Floor, Crate, Pillar (skinned) and "lamp" at (0, 2, 0), range 4
    far = s.add_mesh(Mesh(name="far", primitives=[quad(0.5)]))
    s.add_node(Node(name="Far", mesh=far, translation=(0.0, 0.0, 20.0)))
    s.add_node(Node(name="sun", light=s.add_light(Light(type="directional", name="sun"))))
    return s


def _flags(doc: ModernDocument) -> dict[str, int]:
    return {n.decode(): int(f) for n, f in zip(doc.names, doc.objects["flags"], strict=True)}


def test_objects_a_light_reaches_are_runtime_lit() -> None:
    """splashedit-ng core/splashpack.cpp (lightReaches, checked by tests/lightcheck.py): 'auto'
    sets 0x10000 when the nearest point of the object's world AABB is within the light's
    range; out of range stays unlit; skinned meshes are never runtime-lit. A directional light
    is not a runtime light: warned by name and left out of the table."""
    ctx = Context(options={"splash_version": 24})
    doc = from_scene_modern(_lit_scene(), ctx)
    flags = _flags(doc)
    assert flags["Floor"] & 0x30000 == 0x10000 and flags["Crate"] & 0x30000 == 0x10000
    assert flags["Far"] & 0x30000 == 0
    assert flags["Pillar"] & 0x30000 == 0 and flags["Pillar"] & 0x10
    assert [lt.name for lt in doc.lights] == [b"lamp"]
    notes = [n.message for n in ctx.notes if n.code == "splashpack.light_not_runtime"]
    assert len(notes) == 1 and "'sun'" in notes[0]


def test_no_dynamic_bits_without_runtime_lights() -> None:
    """splashedit-ng writes the bits only when the file has runtime lights (lightcheck.py:
    'no dynamic flags without runtime lights')."""
    s = _lit_scene()
    for n in s.nodes:
        n.light = None
    doc = from_scene_modern(s, Context(options={"splash_version": 24}))
    assert not doc.lights and all(f & 0x30000 == 0 for f in _flags(doc).values())


def test_more_than_16_lights_keep_the_first_16_with_a_warning() -> None:
    """splashedit-ng keeps the first 16 runtime lights in scene order (MAX_SCENE_LIGHTS) and
    names the rest in a warning (lightcheck.py 'cap at 16')."""
    from gamemesh.scene import Light

    s = _plain()
    for k in range(18):
        s.add_node(Node(name=f"P{k:02d}", translation=(0.0, 1.0, float(k)),
                        light=s.add_light(Light(name=f"P{k:02d}", range=1.0))))
    ctx = Context(options={"splash_version": 24})
    doc = from_scene_modern(s, ctx)
    assert [lt.name.decode() for lt in doc.lights] == [f"P{k:02d}" for k in range(16)]
    cut = [n.message for n in ctx.notes if n.code == "splashpack.lights_cut"]
    assert len(cut) == 1 and cut[0].endswith("left out: P16, P17")
    # Every lamp is 1 unit above the floor with range 1: at exactly its range, which the
    # runtime's test (d^2 < r^2 on the stored integers, 41 and 41) does not count as reached.
    assert _flags(doc)["obj0"] & 0x30000 == 0


# -- item 6: animated children -----------------------------------------------------------------
def _arm() -> Scene:
    """A root 'shoulder' turning a quarter about +Y over 1 s, its child 'hand' 1 unit along +X
    sliding out to 2 units; both carry a mesh."""
    from gamemesh.scene import Animation, Channel

    s = Scene(name="arm")
    mesh = s.add_mesh(Mesh(name="box", primitives=[quad(0.1)]))
    sh = s.add_node(Node(name="shoulder", mesh=mesh))
    hand = s.add_node(Node(name="hand", mesh=mesh, translation=(1.0, 0.0, 0.0)), parent=sh)
    c = math.cos(math.pi / 4)
    t = np.float32([0.0, 1.0])
    s.animations.append(Animation(name="reach", channels=[
        Channel(sh, "rotation", t, np.float32([[0, 0, 0, 1], [0, c, 0, c]])),
        Channel(hand, "translation", t, np.float32([[1, 0, 0], [2, 0, 0]]))]))
    return s


def test_a_child_gets_world_position_and_rotation_keys(tmp_path: Path) -> None:
    """psxsplash src/animation.cpp sets an object's world position and rotation from
    objPos / objRot keys (GameObjects have no parent). At 1 s the shoulder has turned +90
    degrees about glTF +Y, so the hand's local (2, 0, 0) is at world (0, 0, -2), turned as the
    shoulder: position keys (x, -y, z) / GTEScaling in 4.12, rotation keys (-x, y, -z) Unity
    Euler in 1024 per pi, Unity yaw = -(glTF yaw) = -90 degrees -> -512."""
    ctx = Context(options={"splash_version": 23})
    doc = from_scene_modern(_arm(), ctx)
    seq = doc.animations[0]
    by = {(t.target, t.type): t.keys for t in seq.tracks}
    pos = by[(b"hand", 2)]
    assert (pos["frame"] & 0x1FFF).tolist() == [0, 30]
    assert pos["v"].tolist() == [[-41, 0, 0], [0, 0, -82]]
    assert by[(b"hand", 3)]["v"].tolist() == [[0, 0, 0], [0, -512, 0]]
    assert by[(b"shoulder", 3)]["v"].tolist() == [[0, 0, 0], [0, -512, 0]]
    assert not [n for n in ctx.notes if n.code == "splashpack.track_parented"]
    # Read back (objects are roots there): the hand ends where glTF puts it, not 0.78 off.
    gamemesh.save(_arm(), tmp_path / "arm.splashpack", splash_version=23)
    back = gamemesh.load(tmp_path / "arm.splashpack")
    hand = next(i for i, n in enumerate(back.nodes) if n.name == "hand")
    ch = next(c for a in back.animations for c in a.channels
              if c.node == hand and c.path == "translation")
    assert np.allclose(ch.values[-1], (0.0, 0.0, -2.0), atol=0.02)


# -- item 9: colours as the console shows them, skinned mesh nodes at the root -----------------
def _coloured() -> Scene:
    s = _plain()
    prim = s.meshes[0].primitives[0]
    prim.colors = [np.float32([[1.0, 1.0, 1.0], [0.5, 0.25, 1.0], [0.0, 0.75, 1.0],
                               [1.0, 0.5, 0.5]])]
    return s


@pytest.mark.parametrize("version", [1, 23])
def test_gltf_splashpack_gltf_keeps_vertex_colours(tmp_path: Path, version: int) -> None:
    """The GPU modulates by colour / 128 (psyqo Color; 128 leaves the texel unchanged): 1.0
    writes as 128 and 128 reads as 1.0, so a trip keeps COLOR_0 (it used to come back as
    128 / 255 = 0.502), and a second trip writes the first one's bytes."""
    src = tmp_path / "src.glb"
    gamemesh.save(_coloured(), src)
    gamemesh.convert(src, tmp_path / "a.splashpack", splash_version=version)
    doc = gamemesh.read_native(tmp_path / "a.splashpack")
    assert sorted(set(doc.meshes[0]["color"][:, :, :3].reshape(-1).tolist())) == [
        0, 32, 64, 96, 128]
    gamemesh.convert(tmp_path / "a.splashpack", tmp_path / "back.glb")
    back = gamemesh.load(tmp_path / "back.glb")
    got = np.concatenate([p.colors[0] for m in back.meshes for p in m.primitives
                          if p.colors and m.name.startswith(("obj", "object"))])
    want = _coloured().meshes[0].primitives[0].colors[0]
    assert {tuple(c) for c in got.tolist()} == {tuple(c) for c in want.tolist()}
    gamemesh.convert(tmp_path / "back.glb", tmp_path / "b.splashpack", splash_version=version)
    assert (tmp_path / "b.splashpack").read_bytes() == (tmp_path / "a.splashpack").read_bytes()


def test_bright_bytes_read_as_1_with_a_note_and_write_back_exactly(tmp_path: Path) -> None:
    """Bytes above 128 (SplashEdit bakes light up to 204) brighten the texel on the console:
    COLOR_0 cannot, so they read as 1.0, a note names the mesh and the corners clamped, and
    the bytes kept in the mesh's extras are written again while COLOR_0 is unchanged."""
    doc = _doc(_coloured())
    doc.meshes[0]["color"][0, :, :3] = [[204, 204, 204], [128, 0, 0], [10, 200, 10]]
    gamemesh.write_native(doc, tmp_path / "bright.splashpack")
    gamemesh.convert(tmp_path / "bright.splashpack", tmp_path / "bright.glb")
    scene = gamemesh.load(tmp_path / "bright.splashpack")
    note = next(n for n in scene.notes if n.code == "splashpack.colors_clamped")
    assert "'obj0' 2" in note.message
    col = scene.meshes[0].primitives[0].colors[0]
    assert float(col.max()) == 1.0 and float(col.min()) >= 0.0
    gamemesh.convert(tmp_path / "bright.glb", tmp_path / "again.splashpack")
    assert (tmp_path / "again.splashpack").read_bytes() == \
        (tmp_path / "bright.splashpack").read_bytes()


def test_a_corner_is_bright_when_a_colour_byte_is_over_128_never_for_the_fourth_byte() -> None:
    """Every byte value in each channel of each corner: a corner counts once when r, g or b is
    above 128 (128 itself is neutral), the unused fourth byte never counts, and the kept bytes
    are the corners' r, g, b in vertex order (v0, v2, v1)."""
    import base64

    from gamemesh.formats.splashpack.common import corner_colors, keep_bright
    from gamemesh.formats.splashpack.conventions import SWAP
    from gamemesh.formats.splashpack.v1.layout import TRI

    tris = np.zeros(256 * 3, TRI)
    for ch in range(3):
        tris["color"][ch * 256:(ch + 1) * 256, ch, ch] = np.arange(256)
        tris["color"][ch * 256:(ch + 1) * 256, (ch + 1) % 3, ch] = 255 - np.arange(256)
    tris["color"][:, :, 3] = 255
    rgb = tris["color"][:, :, :3].tolist()
    want = sum(any(b > 128 for b in corner) for t in rgb for corner in t)
    mesh = Mesh(name="m")
    assert keep_bright(mesh, 0, corner_colors(tris)) == want == 3 * 2 * 127
    kept = base64.b64decode(mesh.extras["splashpack"]["colors_raw"]["0"])
    assert kept == np.take(tris["color"][:, :, :3], SWAP, axis=1).tobytes()
    assert keep_bright(Mesh(name="dim"), 0, corner_colors(np.zeros(5, TRI))) == 0


def test_a_skinned_pack_reads_back_with_no_validator_warning(tmp_path: Path,
                                                            gltf_validator: Any) -> None:
    """The skinned mesh node is a root (glTF ignores its transform; under a parent the
    Khronos validator warns NODE_SKINNED_MESH_NON_ROOT)."""
    from splashpack_modern_fixtures import FIXTURES

    gamemesh.convert(FIXTURES / "v24.splashpack", tmp_path / "v24.glb")
    report = gltf_validator.report(tmp_path / "v24.glb")
    warnings = [m["code"] for m in report["messages"] if m["severity"] in ("error", "warning")]
    assert warnings == []
