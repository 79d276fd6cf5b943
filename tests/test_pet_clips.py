"""PET animation to the scene: ANIM tracks to channels and the MOTI motions cut out of them
as clips, against np.interp per channel."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.formats.pet.document import Track
from gamemesh.registry import Context
from gamemesh.scene import Animation, Channel, Mesh, Node, Primitive, Scene
from gamemesh.scene.loss import compare
from gamemesh.scene.math import local_matrix, matrix_to_trs, trs_to_matrices, world_matrices
from gamemesh.scene.sampling import sample_channel

anim = importlib.import_module("gamemesh.formats.pet.animation")


def _reference_cut(ch: Any, t0: float, t1: float) -> tuple[bytes, bytes]:
    """A motion's part of a channel as it was computed channel by channel (np.interp)."""
    t = ch.times.astype(np.float64)
    v = ch.values.astype(np.float64)
    if ch.path == "rotation" and len(v) > 1:
        d = np.sum(v[1:] * v[:-1], axis=1)
        v = v * np.concatenate([[1.0], np.cumprod(np.where(d < 0, -1.0, 1.0))])[:, None]
    t = np.where(np.abs(t - t0) < 1e-4, t0, np.where(np.abs(t - t1) < 1e-4, t1, t))
    inside = (t > t0) & (t < t1)
    times = np.concatenate([[t0], t[inside], [t1]]) if t1 > t0 else np.array([t0])
    vals = np.stack([np.interp(times, t, v[:, c]) for c in range(v.shape[1])], axis=1)
    if ch.path == "rotation":
        vals /= np.maximum(np.linalg.norm(vals, axis=1, keepdims=True), 1e-12)
    return (times - t0).astype(np.float32).tobytes(), vals.astype(np.float32).tobytes()


@pytest.mark.parametrize("chunk", [1 << 20, 1])
def test_motion_clips_of_all_channels_match_np_interp_per_channel(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clips are cut for all channels at once with np.interp's rule written out: the same
    bits as np.interp channel by channel (keys near the bounds, one-key channels, empty
    and reversed frame ranges, large and tiny values, unsorted and repeated times), all
    motions at once or one at a time."""
    monkeypatch.setattr(anim, "_CUT_ROWS", chunk)

    rng = np.random.default_rng(9)
    for _ in range(150):
        tracks = []
        for bone in range(int(rng.integers(1, 5))):
            keys = []
            for width in (3, 4, 3):
                n = int(rng.integers(0, 7))
                t = np.sort(rng.integers(0, 40, n) / 30.0
                            + rng.choice([0.0, 1e-5, -3e-5, 0.01], n)).astype(np.float32)
                if n and rng.random() < 0.2:
                    t = rng.permutation(t)
                v = rng.normal(size=(n, width)) * rng.choice([1.0, 1e30, 1e-20])
                keys.append(np.concatenate([t[:, None], v], 1).astype(np.float32))
            tracks.append(Track(bone=bone, pos=keys[0], rot=keys[1], scale=keys[2]))
        channels = anim.track_channels(tracks, list(range(len(tracks))),
                                       [str(i) for i in range(len(tracks))], Context(None))
        frames = [(int(f0), int(max(f0, f1))) for f0, f1 in rng.integers(0, 45, (4, 2))]
        bounds = [(f0 / 30.0, f1 / 30.0) for f0, f1 in frames]
        for motion, got in zip(bounds, anim.Clipper(channels).cut(bounds), strict=True):
            assert len(got) == len(channels)
            for ch, cut in zip(channels, got, strict=True):
                assert (cut.node, cut.path) == (ch.node, ch.path)
                assert (cut.times.tobytes(), cut.values.tobytes()) == _reference_cut(ch, *motion)


# -- clips in sequence ---------------------------------------------------------------------
FIXTURES = Path(__file__).parent / "fixtures" / "gltf"


def _cube(half: float = 0.5) -> Primitive:
    p = np.array([[x, y, z] for x in (-half, half) for y in (-half, half) for z in (-half, half)],
                 np.float32)
    tris = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
                     [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]],
                    np.uint32)
    return Primitive(positions=p, indices=tris.reshape(-1))


def five_objects() -> Scene:
    """A chain of 5 cube objects and 5 clips, clip k moving object k alone (even clips lift
    it by 1 in y, odd ones turn it about y), as Blender exports one action per object."""
    scene = Scene(name="five")
    parent: int | None = None
    for i in range(5):
        m = scene.add_mesh(Mesh(name=f"Cube{i}", primitives=[_cube()]))
        parent = scene.add_node(Node(name=f"Obj{i}", translation=(0.0, 0.0, 2.0 * (i > 0)),
                                     mesh=m), parent)
    t = np.array([0.0, 0.5, 1.0], np.float32)
    for k in range(5):
        if k % 2 == 0:
            rest = np.array(scene.nodes[k].translation, np.float32)
            ch = Channel(k, "translation", t, rest + np.array([[0, 0, 0], [0, 1, 0], [0, 1, 0]],
                                                               np.float32))
        else:
            half = np.array([0.0, 0.35, 0.7])
            ch = Channel(k, "rotation", t, np.stack(
                [np.zeros(3), np.sin(half), np.zeros(3), np.cos(half)], 1).astype(np.float32))
        scene.animations.append(Animation(name=f"clip{k}", channels=[ch]))
    return scene


def _rig_with_more_clips() -> Scene:
    """Blender's rig with its clip 'Bend' (every bone keyed), then a clip that moves only
    'Lower' and one that turns only 'Upper', starting late."""
    scene = gamemesh.load(FIXTURES / "blender_rig.glb")
    by = {n.name: i for i, n in enumerate(scene.nodes)}
    t = np.array([0.0, 0.4], np.float32)
    scene.animations.append(Animation(name="Shift", channels=[Channel(
        by["Lower"], "translation", t, np.array([[0, 0, 0], [0.5, 0, 0]], np.float32))]))
    turn = np.array([[0, 0, 0, 1], [0, 0, 0.6, 0.8]], np.float32)
    scene.animations.append(Animation(name="Turn", channels=[Channel(
        by["Upper"], "rotation", np.array([0.3, 0.9], np.float32), turn)]))
    return scene


def posed_worlds(scene: Scene, anim: Animation, times: np.ndarray) -> dict[str, np.ndarray]:
    """Every named node's world matrix at ``times`` (T, 4, 4), the clip played alone: a node
    it does not animate holds its own (rest) transform."""
    local = []
    for i, n in enumerate(scene.nodes):
        rest = (matrix_to_trs(local_matrix(n)) if n.matrix is not None
                else (n.translation, n.rotation, n.scale))
        trs = {p: np.repeat(np.asarray(v, np.float64)[None], len(times), axis=0)
               for p, v in zip(("translation", "rotation", "scale"), rest, strict=True)}
        for c in anim.channels:
            if c.node == i and c.path in trs:
                trs[c.path] = sample_channel(c, times)
        local.append(trs_to_matrices(trs["translation"], trs["rotation"], trs["scale"]))
    world: list[np.ndarray] = [np.eye(4)[None]] * len(scene.nodes)
    parents = scene.parents()
    for i in scene.walk():
        p = parents[i]
        world[i] = local[i] if p is None else world[p] @ local[i]
    return {n.name: world[i] for i, n in enumerate(scene.nodes) if n.name}


@pytest.mark.parametrize("make", [five_objects, _rig_with_more_clips])
def test_each_clip_read_back_poses_every_node_as_the_clip_alone(
        tmp_path: Path, make: Any) -> None:
    """PET lays the clips end to end on one timeline: a bone a clip leaves alone must not keep
    the previous clip's last pose. Each clip of the PET read back poses every node (world
    matrices at 9 times) as the source clip does alone."""
    src = make()
    notes = gamemesh.save(src, tmp_path / "m.pet")
    back = gamemesh.load(tmp_path / "m.pet")
    assert [a.name for a in back.animations] == [a.name for a in src.animations]
    assert not [n for n in notes if n.code.startswith("pet.lost.clips")]
    moved = 0.0
    for a, b in zip(src.animations, back.animations, strict=True):
        times = np.linspace(0.0, a.duration, 9)
        want, got = posed_worlds(src, a, times), posed_worlds(back, b, times)
        bones = sorted(set(want) & set(got))
        assert len(bones) >= 2, bones
        for name in bones:
            assert got[name] == pytest.approx(want[name], abs=2e-5), (a.name, name)
            moved = max(moved, float(np.abs(want[name] - want[name][:1]).max()))
    assert moved > 0.3  # the clips do move things


def test_lossy_keys_are_one_note_per_clip_naming_the_nodes(tmp_path: Path) -> None:
    """STEP keys that change value, CUBICSPLINE keys and morph weights: one note per clip and
    kind, naming the nodes (not one per channel); STEP keys that hold one value lose nothing
    and get no note."""
    scene = five_objects()
    t = np.array([0.0, 0.5, 1.0], np.float32)
    for k, anim in enumerate(scene.animations[:2]):
        for i in range(5):
            v = np.zeros((3, 3), np.float32)
            v[:, 2] = [2.0 * (i > 0), 2.0 * (i > 0) + k, 2.0 * (i > 0)]  # k == 0: held
            anim.channels.append(Channel(i, "translation", t, v, "STEP"))
    cubic = np.zeros((9, 4), np.float32)
    cubic[1::3, 3] = 1.0
    scene.animations[2].channels.append(Channel(3, "rotation", t, cubic, "CUBICSPLINE"))
    for i in (0, 1):
        scene.animations[3].channels.append(Channel(i, "weights", t, np.zeros((3, 1),
                                                                             np.float32)))
    notes = gamemesh.save(scene, tmp_path / "m.pet")
    got = sorted((n.code, n.message) for n in notes if n.code.startswith("pet.anim"))
    assert got == [
        ("pet.anim_channel_dropped", "animation 'clip3': channels 'weights of Obj0', "
                                     "'weights of Obj1' left out (PET animates bones, not "
                                     "morph weights or other nodes)"),
        ("pet.anim_cubic", "animation 'clip2': CUBICSPLINE keys of 'Obj3' written as linear "
                           "keys (tangents dropped)"),
        ("pet.anim_step", "animation 'clip1': STEP keys of 'Obj0', 'Obj1', 'Obj2', 'Obj3' "
                          "(+1 more) written as linear keys (PET has no step)")]


def test_meshes_merged_into_one_are_an_info_note_not_a_loss(tmp_path: Path) -> None:
    """PET holds one mesh: 5 meshes become one with every triangle kept. That is an info note
    (covering "meshes"), and the loss check reports only the mesh names, which PET has none
    of."""
    src = five_objects()
    notes = gamemesh.save(src, tmp_path / "m.pet")
    assert [(n.code, n.level, n.message) for n in notes if "mesh" in n.code] == [
        ("pet.meshes_merged", "info", "5 meshes merged into the one mesh a PET file holds")]
    assert [n.code for n in notes if n.level == "warning"] == ["pet.lost.names"]
    back = gamemesh.load(tmp_path / "m.pet")
    assert back.summary()["triangles"] == 5 * 12
    # The loss check itself: the names are lost, the meshes (every triangle kept) are not.
    assert [(x.prop, x.message) for x in compare(src, back)] == [
        ("names", "mesh names 'Cube0', 'Cube1', 'Cube2', 'Cube3' (+1 more)")]
    # Drop one cube's triangles: now meshes are lost too.
    prim = back.meshes[0].primitives[0]
    assert prim.indices is not None
    prim.indices = prim.indices[:-36]
    assert "meshes" in {x.prop for x in compare(src, back)}


def _quat(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=4)
    return np.asarray(v / np.linalg.norm(v))


def _twisted_rig(seed: int) -> Scene:
    """Blender's rig with bones turned and moved at random (inverse binds to match), random
    two-bone weights, and a clip of random rotation keys that flip sign and are off unit
    length by ~1e-3."""
    rng = np.random.default_rng(seed)
    scene = gamemesh.load(FIXTURES / "blender_rig.glb")
    for i in (0, 1):
        scene.nodes[i].rotation = tuple(_quat(rng))
        scene.nodes[i].translation = tuple(rng.normal(size=3))
    world = world_matrices(scene)
    scene.skins[0].inverse_bind_matrices = np.stack(
        [np.linalg.inv(world[j]) for j in scene.skins[0].joints]).astype(np.float32)
    prim = scene.meshes[0].primitives[0]
    w = rng.random((len(prim.positions), 4)) * (np.arange(4) < 2)
    prim.weights = (w / w.sum(axis=1, keepdims=True)).astype(np.float32)
    t = np.linspace(0, 0.7, 6).astype(np.float32)
    q = np.stack([_quat(rng) * rng.choice([-1, 1]) * (1 + rng.normal() * 1e-3) for _ in t])
    scene.animations.append(Animation(name="Wobble", channels=[
        Channel(0, "rotation", t, q.astype(np.float32))]))
    return scene


def _twisted_objects(seed: int) -> Scene:
    """The 5-object hierarchy with every object turned, moved up to ~10 units and (odd seeds)
    scaled unevenly, so its world placements shear."""
    rng = np.random.default_rng(seed)
    scene = five_objects()
    for n in scene.nodes:
        n.rotation = tuple(_quat(rng))
        n.translation = tuple(rng.normal(size=3) * 3)
        n.scale = tuple(rng.uniform(0.5, 2.0, 3)) if seed % 2 else (1.0, 1.0, 1.0)
    return scene


@pytest.mark.parametrize("make", ["blender_rig", "five_objects", "rig_with_more_clips",
                                  *(f"rig{s}" for s in range(1, 4)),
                                  *(f"objects{s}" for s in (1, 4, 5, 13, 14))])
def test_second_trip_through_glb_writes_the_first_pet_again(tmp_path: Path, make: str) -> None:
    """glb -> PET -> glb -> PET gives the first PET's bytes for glTF the tests did not shape
    for PET: Blender's rig (a clip starting at 1/24 s, equal 0.5/0.5 weights, which quantize
    to 127 + 128), scenes whose clips end off the 30 fps grid, and random rigs and object
    hierarchies (the seeds are ones that differed before bone rows, positions, normals and
    rotation keys were put on grids)."""
    src = tmp_path / "src.glb"
    if make == "blender_rig":
        src.write_bytes((FIXTURES / "blender_rig.glb").read_bytes())
    elif make.startswith("rig") and make[3:].isdigit():
        gamemesh.save(_twisted_rig(int(make[3:])), src)
    elif make.startswith("objects"):
        gamemesh.save(_twisted_objects(int(make[7:])), src)
    else:
        gamemesh.save(five_objects() if make == "five_objects" else _rig_with_more_clips(), src)
    gamemesh.convert(src, tmp_path / "a.pet")
    gamemesh.convert(tmp_path / "a.pet", tmp_path / "b.glb")
    gamemesh.convert(tmp_path / "b.glb", tmp_path / "c.pet")
    first = (tmp_path / "a.pet").read_bytes()
    assert b"ANIM" in first and b"MOTI" in first
    assert (tmp_path / "c.pet").read_bytes() == first
