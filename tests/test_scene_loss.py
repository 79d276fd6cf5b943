"""The loss check (scene/loss.py) names each lost colour set and channel, once, and reports
nothing a file kept: a white colour set and a channel holding the rest value lose nothing."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

import gamemesh
from gamemesh.sample import sample_scene
from gamemesh.scene import Channel, Scene
from gamemesh.scene.loss import compare


def _two_color_sets() -> Scene:
    """Blender's shape: an all-white COLOR_0, then the user's layer as COLOR_1."""
    scene = sample_scene()
    prim = scene.meshes[0].primitives[0]
    n = prim.vertex_count
    user = np.zeros((n, 4), np.float32)
    user[:, 0] = np.linspace(0.0, 1.0, n)
    user[:, 3] = 1.0
    prim.colors = [np.ones((n, 4), np.float32), user]
    return scene


def test_colour_sets_are_compared_set_by_set_and_named() -> None:
    before = _two_color_sets()
    white_only = copy.deepcopy(before)
    white_only.meshes[0].primitives[0].colors = white_only.meshes[0].primitives[0].colors[:1]
    losses = [loss.message for loss in compare(before, white_only) if loss.prop == "colors"]
    assert losses == ["mesh 'column': vertex colours (COLOR_1)"]
    # The user's layer kept as the only set (COLOR_0) is not a loss.
    moved = copy.deepcopy(before)
    moved.meshes[0].primitives[0].colors = moved.meshes[0].primitives[0].colors[1:]
    assert [loss for loss in compare(before, moved) if loss.prop == "colors"] == []


def test_pba_keeps_the_colour_set_that_is_not_white(tmp_path: Path) -> None:
    scene = _two_color_sets()
    notes = gamemesh.save(scene, tmp_path / "c.pba")
    assert not [n for n in notes if "colors" in n.covers or "COLOR" in n.message]
    back = gamemesh.load(tmp_path / "c.pba")
    red = np.concatenate([p.colors[0][:, 0] for m in back.meshes for p in m.primitives])
    assert red.min() <= 1 / 255 and red.max() >= 254 / 255


def _with_scale_keys(offset: float) -> Scene:
    scene = sample_scene()
    anim = scene.animations[0]
    times = anim.channels[0].times
    for node in {c.node for c in anim.channels}:
        values = np.ones((len(times), 3), np.float32) + np.float32(offset)
        values[0] += np.float32(5e-7)  # exporter noise around the rest value
        anim.channels.append(Channel(node, "scale", times, values))
    return scene


def _without_scale(scene: Scene) -> Scene:
    out = copy.deepcopy(scene)
    for a in out.animations:
        a.channels = [c for c in a.channels if c.path != "scale"]
    return out


def test_channels_holding_the_rest_value_are_not_lost() -> None:
    rest = _with_scale_keys(0.0)
    assert [loss for loss in compare(rest, _without_scale(rest)) if loss.prop == "channels"] == []


def test_lost_channels_are_one_loss_per_clip_naming_each_kind() -> None:
    moving = _with_scale_keys(0.5)
    after = _without_scale(moving)
    after.animations[0].channels = [c for c in after.animations[0].channels
                                    if c.path != "rotation"]
    clip = moving.animations[0]
    nodes = len({c.node for c in clip.channels})
    turned = len({c.node for c in clip.channels if c.path == "rotation"})
    losses = [loss.message for loss in compare(moving, after) if loss.prop == "channels"]
    assert losses == [f"clip {clip.name!r}: rotation channels ({turned} nodes), scale "
                      f"channels ({nodes} nodes)"]


def test_meshes_merged_into_one_are_not_lost() -> None:
    """PET writes one mesh: fewer meshes holding every triangle were merged, not lost."""
    from gamemesh.sample import column
    from gamemesh.scene import Mesh, Node

    def scene_of(*prims_per_mesh: int) -> Scene:
        s = Scene()
        for k, count in enumerate(prims_per_mesh):
            mesh = s.add_mesh(Mesh(name=f"m{k}", primitives=[column() for _ in range(count)]))
            s.add_node(Node(name=f"n{k}", mesh=mesh))
        return s

    before = scene_of(1, 1, 1)
    assert [x for x in compare(before, scene_of(3)) if x.prop == "meshes"] == []
    assert [x.message for x in compare(before, scene_of(1, 1)) if x.prop == "meshes"] == [
        "1 of 3 meshes"]
