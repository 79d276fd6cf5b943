"""The road back (issue 12): glTF -> every native writer keeps what the format holds, warns about
the rest, and reaches a fixed point after one trip (glb -> F -> glb -> F writes the first F's
bytes again). The samples are scenes built in code (tests/scene_samples.py) saved as GLB by
gamemesh's own writer."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import FormatError, LimitError, Note
from gamemesh.scene.loss import PROPERTIES, compare
from scene_samples import SAMPLES

# writer -> (format, extension, options): SPLASHPACK twice, the default (modern, v23) and v1.
WRITERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "papa": ("papa", ".papa", {}), "pba": ("pba", ".pba", {}), "ptx": ("ptx", ".ptx", {}),
    "pet": ("pet", ".pet", {}), "pmf": ("pmf", ".pmf", {}),
    "splashpack": ("splashpack", ".splashpack", {}),
    "splashpack_v1": ("splashpack", ".splashpack", {"splash_version": 1})}

# Cases that wait on other work, each with its reason (checked: they fail today).
PENDING: dict[tuple[str, str], str] = {}


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _warned(notes: list[Note]) -> set[str]:
    """The properties the notes report as lost."""
    return {p for n in notes if n.level == "warning" for p in n.covers}


@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_loss_is_warned_and_the_second_trip_is_identical(
        tmp_path: Path, writer: str, sample: str, request: pytest.FixtureRequest) -> None:
    if (writer, sample) in PENDING:
        request.applymarker(pytest.mark.xfail(reason=PENDING[(writer, sample)], strict=False))
    fmt, ext, opts = WRITERS[writer]
    src = tmp_path / "in.glb"
    gamemesh.save(SAMPLES[sample](), src)
    scene = gamemesh.load(src)
    first = tmp_path / "a" / f"m{ext}"
    if fmt == "ptx" and not any(im.pixels is not None or im.data is not None
                                  for im in scene.images):
        with pytest.raises(LimitError):
            gamemesh.convert(src, first, to_format=fmt, **opts)
        return
    report = gamemesh.convert(src, first, to_format=fmt, **opts)
    # Report.outputs is every file written, textures beside the model included.
    assert sorted(Path(p).name for p in report.outputs) == sorted(_files(first.parent))
    # Read back independently of the save path: every property lost has a warning naming it.
    back = gamemesh.load(first, format=fmt)
    lost = {loss.prop for loss in compare(scene, back)}
    assert lost <= _warned(report.notes), (lost - _warned(report.notes), report.notes)
    # The second trip writes the same bytes, siblings included.
    glb = tmp_path / "back.glb"
    gamemesh.convert(first, glb, from_format=fmt)
    second = tmp_path / "b" / first.name
    gamemesh.convert(glb, second, to_format=fmt, **opts)
    a, b = _files(first.parent), _files(second.parent)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []


def _codes(notes: list[Note]) -> set[str]:
    return {n.code for n in notes if n.level == "warning"}


@pytest.mark.parametrize("sample", ["two_textures", "skinned"])
def test_pmf_warns_that_materials_and_textures_are_dropped(tmp_path: Path, sample: str) -> None:
    gamemesh.save(SAMPLES[sample](), tmp_path / "in.glb")
    report = gamemesh.convert(tmp_path / "in.glb", tmp_path / "out.pmf")
    assert {"pmf.lost.materials", "pmf.lost.textures"} <= _codes(report.notes)
    msg = next(n.message for n in report.notes if n.code == "pmf.lost.textures")
    assert "base color textures" in msg
    # ...and in the --report JSON, with what they cover
    row = next(n.to_dict() for n in report.notes if n.code == "pmf.lost.materials")
    assert row["covers"] == ["materials"] and row["level"] == "warning"


def test_specific_losses_are_named(tmp_path: Path) -> None:
    gamemesh.save(SAMPLES["colors"](), tmp_path / "c.glb")
    pet = gamemesh.convert(tmp_path / "c.glb", tmp_path / "c.pet")
    assert "colors" in _warned(pet.notes)
    pba = gamemesh.convert(tmp_path / "c.glb", tmp_path / "c.pba")
    assert "colors" not in _warned(pba.notes)  # PBA vertices hold a colour
    assert gamemesh.load(tmp_path / "c.pba").meshes[0].primitives[0].colors
    gamemesh.save(SAMPLES["skinned"](), tmp_path / "s.glb")
    sp = gamemesh.convert(tmp_path / "s.glb", tmp_path / "s.splashpack", splash_version=1)
    assert {"skins", "clips"} <= _warned(sp.notes)
    pba = gamemesh.convert(tmp_path / "s.glb", tmp_path / "s.pba")
    assert "skins" in _warned(pba.notes)


# sample -> {Papa's own warning: the properties it covers}; the generic check adds no
# papa.lost.<property> for them, so each loss is warned once.
PAPA_COVERS: dict[str, dict[str, set[str]]] = {
    "skinned": {"papa.attributes_dropped": {"colors"}},
    "morph": {"papa.attributes_dropped": {"targets"}, "papa.animation_unbound": {"clips"},
              "papa.morph_animation_dropped": {"channels"}},
    "two_textures": {"papa.texture_dropped": {"textures"}}}


@pytest.mark.parametrize("sample", sorted(PAPA_COVERS))
def test_papa_warns_each_loss_once(tmp_path: Path, sample: str) -> None:
    gamemesh.save(SAMPLES[sample](), tmp_path / "in.glb")
    notes = gamemesh.convert(tmp_path / "in.glb", tmp_path / "out.papa").notes
    covers = {n.code: set(n.covers) for n in notes if n.level == "warning"}
    for code, props in PAPA_COVERS[sample].items():
        assert covers.get(code) == props, (code, covers)
    own = {p for n in notes if n.level == "warning" and ".lost." not in n.code
           for p in n.covers}
    generic = {p for n in notes if ".lost." in n.code for p in n.covers}
    assert own >= {p for ps in PAPA_COVERS[sample].values() for p in ps}
    assert not own & generic, (own & generic, notes)


def test_note_json_stays_the_same_without_covers() -> None:
    assert Note("x.y", "m").to_dict() == {"code": "x.y", "message": "m", "level": "warning"}
    assert Note("x.y", "m", "info", ("colors",)).to_dict() == {
        "code": "x.y", "message": "m", "level": "info", "covers": ["colors"]}


def test_loss_check_names_what_a_writer_forgot() -> None:
    """compare() on its own: two scenes in, the missing properties out."""
    before = SAMPLES["skinned"]()
    after = copy.deepcopy(before)
    prim = after.meshes[0].primitives[0]
    prim.colors, prim.texcoords = [], []
    after.nodes[2].children = []  # bone1 loses bone2
    after.roots.append(3)
    after.animations[1].channels = after.animations[1].channels[:1]
    after.materials[0].base_color_texture = None
    props = {loss.prop: loss.message for loss in compare(before, after)}
    assert set(props) == {"colors", "texcoords", "hierarchy", "channels", "textures"}
    assert "bone2" in props["hierarchy"] and "'twist'" in props["channels"]
    assert "column" in props["colors"] and "TEXCOORD_0" in props["texcoords"]
    assert compare(before, copy.deepcopy(before)) == []
    assert set(PROPERTIES) >= set(props)


def test_all_white_colours_are_no_loss() -> None:
    before = SAMPLES["colors"]()
    prim = before.meshes[0].primitives[0]
    prim.colors = [np.ones((prim.vertex_count, 4), np.float32)]
    after = copy.deepcopy(before)
    after.meshes[0].primitives[0].colors = []
    assert compare(before, after) == []


def test_check_can_be_skipped(tmp_path: Path) -> None:
    gamemesh.save(SAMPLES["colors"](), tmp_path / "c.glb")
    scene = gamemesh.load(tmp_path / "c.glb")
    assert "pmf.lost.colors" in _codes(gamemesh.save(scene, tmp_path / "c.pmf"))
    quiet = gamemesh.save(scene, tmp_path / "d.pmf", check_loss=False)
    assert not any(".lost." in n.code for n in quiet)


# -- item 7: texture files belong to their model --------------------------------------------
@pytest.mark.parametrize("fmt", ["pba", "pet"])
def test_second_model_in_the_same_folder_keeps_the_first_ones_textures(tmp_path: Path,
                                                                        fmt: str) -> None:
    gamemesh.save(SAMPLES["two_textures"](), tmp_path / "crate.glb")
    gamemesh.save(SAMPLES["rigid"](), tmp_path / "rigid.glb")
    out = tmp_path / "out"
    first = gamemesh.convert(tmp_path / "crate.glb", out / f"one.{fmt}")
    before = _files(out)
    second = gamemesh.convert(tmp_path / "rigid.glb", out / f"two.{fmt}")
    names = [Path(p).name for p in first.outputs + second.outputs]
    assert len(names) == len(set(names))  # nothing written twice
    assert all(n.startswith(("one", "two", "]one", "]two", "[one", "[two")) for n in names)
    after = _files(out)
    assert {k: after[k] for k in before} == before
    # the first model still shows its own textures
    one = gamemesh.load(out / f"one.{fmt}")
    assert len(one.images) == 2
    assert all(im.pixels is not None or im.data is not None for im in one.images)


def test_a_file_this_conversion_did_not_make_is_never_replaced(tmp_path: Path) -> None:
    """A PET read back keeps its texture names (a.pet -> a_checker.png); written as b.pet into a
    folder that already holds another a_checker.png, the conversion stops and names it."""
    gamemesh.save(SAMPLES["skinned"](), tmp_path / "src" / "a.pet")
    gamemesh.convert(tmp_path / "src" / "a.pet", tmp_path / "a.glb")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a_checker.png").write_bytes(b"someone else's picture")
    with pytest.raises(FormatError, match=r"a_checker\.png"):
        gamemesh.convert(tmp_path / "a.glb", out / "b.pet")
    assert sorted(p.name for p in out.iterdir()) == ["a_checker.png"]
    assert (out / "a_checker.png").read_bytes() == b"someone else's picture"
    # the same bytes are no harm: then it goes through
    (out / "a_checker.png").write_bytes((tmp_path / "src" / "a_checker.png").read_bytes())
    gamemesh.convert(tmp_path / "a.glb", out / "b.pet")
    # and converting to the same output again replaces its own files
    gamemesh.convert(tmp_path / "a.glb", tmp_path / "src" / "a.pet")


# -- items 8 and 9: animation structure survives ---------------------------------------------
def test_pet_keeps_a_rigid_node_animation_as_bones_and_its_clip_name(tmp_path: Path) -> None:
    gamemesh.save(SAMPLES["rigid"](), tmp_path / "r.glb")
    report = gamemesh.convert(tmp_path / "r.glb", tmp_path / "r.pet")
    assert not {"clips", "channels"} & {loss for n in report.notes for loss in n.covers}
    back = gamemesh.load(tmp_path / "r.pet")
    assert [a.name for a in back.animations] == ["wave"]
    moved = {back.nodes[c.node].name for c in back.animations[0].channels}
    assert moved == {"part0", "part1", "part2"}
    # each part's vertices follow their own bone wholly
    prim = back.meshes[0].primitives[0]
    assert prim.weights is not None and np.all(prim.weights.max(axis=1) == 1.0)
    skin = back.skins[0]
    joints = {back.nodes[skin.joints[j]].name for j in np.unique(prim.joints[:, 0])}
    assert joints == {"part0", "part1", "part2"}


def test_pet_single_clip_keeps_its_name(tmp_path: Path) -> None:
    scene = SAMPLES["skinned"]()
    scene.animations = scene.animations[:1]
    gamemesh.save(scene, tmp_path / "skinned.pet")
    assert [a.name for a in gamemesh.load(tmp_path / "skinned.pet").animations] == ["bend"]


def test_pba_keeps_the_bone_hierarchy(tmp_path: Path) -> None:
    gamemesh.save(SAMPLES["rigid"](), tmp_path / "r.glb")
    gamemesh.convert(tmp_path / "r.glb", tmp_path / "r.pba")
    gamemesh.convert(tmp_path / "r.pba", tmp_path / "back.glb")
    back = gamemesh.load(tmp_path / "back.glb")
    names = [n.name for n in back.nodes]
    parents = back.parents()
    assert parents[names.index("part2")] == names.index("part1")
    assert parents[names.index("part1")] == names.index("part0")
    doc = gamemesh.read_native(tmp_path / "r.pba")
    bone_names = [bytes(n).rstrip(b"\0").decode() for n in doc.bones["name"]]
    parent_names = [bone_names[p] if p >= 0 else None for p in doc.bones["parent"]]
    assert dict(zip(bone_names, parent_names, strict=True))["part2"] == "part1"
    # and the world placement is the original's
    from gamemesh.scene.math import world_matrices

    src = gamemesh.load(tmp_path / "r.glb")
    w0 = world_matrices(src)[[n.name for n in src.nodes].index("part2")]
    w1 = world_matrices(back)[names.index("part2")]
    np.testing.assert_allclose(w1, w0, atol=1e-5)
