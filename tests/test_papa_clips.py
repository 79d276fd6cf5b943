"""Papa clips as the source had them: a clip keeps the tracks it had (a subset of the bones),
clips a model cannot drive are not attached under a made-up skeleton, and a clip shifted to
start at 0 says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import gamemesh
from gamemesh.sample import sample_scene
from gamemesh.scene import Scene


def _one_bone_clip() -> Scene:
    scene = sample_scene()
    bone1 = next(i for i, n in enumerate(scene.nodes) if n.name == "bone1")
    for a in scene.animations:
        a.channels = [c for c in a.channels if c.node == bone1]
    return scene


def test_a_clip_keeps_only_the_tracks_it_has(tmp_path: Path) -> None:
    gamemesh.save(_one_bone_clip(), tmp_path / "u.papa")
    doc = gamemesh.read_native(tmp_path / "u_anim_bend.papa")
    assert [doc.string(b) for b in doc.animations[0].bones.tolist()] == ["bone1"]
    back = gamemesh.load(tmp_path / "u.papa")
    for clip in back.animations:
        assert {back.nodes[c.node].name for c in clip.channels} == {"bone1"}


def test_clips_a_static_model_cannot_drive_are_not_attached(tmp_path: Path) -> None:
    static = sample_scene()
    static.skins, static.animations = [], []
    for n in static.nodes:
        n.skin = None
    for p in static.meshes[0].primitives:
        p.joints = p.weights = None
    gamemesh.save(static, tmp_path / "rock.papa")
    gamemesh.save(sample_scene(), tmp_path / "other" / "bot.papa")
    (tmp_path / "rock_anim_bend.papa").write_bytes(
        (tmp_path / "other" / "bot_anim_bend.papa").read_bytes())
    report = gamemesh.convert(tmp_path / "rock.papa", tmp_path / "rock.glb")
    back = gamemesh.load(tmp_path / "rock.glb")
    assert back.animations == [] and back.skins == []
    assert not {"bone0", "bone1", "bone2", "skeleton"} & {n.name for n in back.nodes}
    unattached = [n for n in report.notes if n.code == "papa.animations_unattached"]
    assert len(unattached) == 1 and "(bend)" in unattached[0].message
    assert unattached[0].level == "warning"


def test_a_clip_starting_late_is_noted_when_shifted(tmp_path: Path) -> None:
    scene = sample_scene()
    for c in scene.animations[0].channels:
        c.times = (c.times + np.float32(1 / 24)).astype(np.float32)
    notes = gamemesh.save(scene, tmp_path / "late.papa")
    shifted = [n for n in notes if n.code == "papa.clip_shifted"]
    assert len(shifted) == 1 and "'bend' starts at 0.0416667 s" in shifted[0].message


def test_a_string_length_counting_code_points_is_noted(tmp_path: Path) -> None:
    """Blender-PAPA-IO stores a string's length in code points: read to the terminator, with
    a note (the community importer cuts such names)."""
    scene = sample_scene()
    scene.meshes[0].name = scene.nodes[-1].name = "平面"
    gamemesh.save(scene, tmp_path / "u.papa")
    doc = gamemesh.read_native(tmp_path / "u.papa")
    k = next(i for i, s in enumerate(doc.strings) if s.raw == "平面".encode())
    doc.strings[k].length = 2
    gamemesh.write_native(doc, tmp_path / "odd.papa")
    report = gamemesh.convert(tmp_path / "odd.papa", tmp_path / "odd.glb")
    noted = [n for n in report.notes if n.code == "papa.string_length_code_points"]
    assert len(noted) == 1 and "(平面)" in noted[0].message
    assert "平面" in {m.name for m in gamemesh.load(tmp_path / "odd.glb").meshes}
