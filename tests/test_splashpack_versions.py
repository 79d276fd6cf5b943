"""Which SPLASHPACK version gamemesh writes (issue 28 items 2 and 7): the default is one the
public runtime (psxsplash main @ fd34188, versions 20 and 21) loads, a newer version says who reads
it, a feature the version cannot hold is a warning naming the option that keeps it, and a scene
read from a SPLASHPACK goes back to its own version and layout."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import gamemesh
from gamemesh.formats.splashpack.modern import layout as ml
from splashpack_modern_fixtures import FIXTURES, scene


def _codes(notes: list[gamemesh.Note]) -> dict[str, gamemesh.Note]:
    return {n.code: n for n in notes}


def test_default_is_v21_which_the_public_runtime_loads(tmp_path: Path) -> None:
    notes = _codes(gamemesh.save(scene(lights=True), tmp_path / "d.splashpack"))
    data = (tmp_path / "d.splashpack").read_bytes()
    # fd34188 asserts magic "SP" and version >= 20 and takes the 128-byte header for 21.
    assert data[:2] == b"SP" and struct.unpack_from("<H", data, 2)[0] == 21
    (go_count,) = struct.unpack_from("<H", data, 6)
    (first_mesh,) = struct.unpack_from("<I", data, 128)  # GameObject 0 starts at 128
    assert go_count == 3 and first_mesh % 4 == 0 and 128 < first_mesh < len(data)
    assert "splashpack.runtime_version" not in notes
    lost = notes["splashpack.lights_dropped"]
    assert lost.level == "warning" and "1 light(s)" in lost.message
    assert "--splash-version 24" in lost.message


@pytest.mark.parametrize("v", [22, 23, 24, 25, 26])
def test_a_version_the_public_runtime_cannot_load_says_so(v: int, tmp_path: Path) -> None:
    notes = _codes(gamemesh.save(scene(lights=True), tmp_path / "n.splashpack", splash_version=v))
    note = notes["splashpack.runtime_version"]
    assert note.level == "info" and f"version {v}" in note.message
    assert "psxsplash main (fd34188)" in note.message and ml.READERS[v] in note.message
    assert ("splashpack.lights_dropped" in notes) == (v < 24)
    assert gamemesh.read_native(tmp_path / "n.splashpack").version == v


@pytest.mark.parametrize("v", [20, 21])
def test_the_runtime_versions_give_no_runtime_note(v: int, tmp_path: Path) -> None:
    notes = _codes(gamemesh.save(scene(lights=False), tmp_path / "o.splashpack", splash_version=v))
    assert "splashpack.runtime_version" not in notes
    assert gamemesh.read_native(tmp_path / "o.splashpack").version == v


# -- item 7: a scene read from a SPLASHPACK goes back to its own version -------------------------
def _v1_pack(tmp_path: Path, layout: str) -> Path:
    """A version-1 pack of our own writer (layout G or H), with its navmesh."""
    path = tmp_path / f"src_{layout}.bin"
    gamemesh.save(scene(lights=False), path, layout=layout)
    return path


@pytest.mark.parametrize("layout", ["G", "H"])
def test_v1_scene_through_gltf_is_written_as_v1_with_its_navmesh(layout: str,
                                                                  tmp_path: Path) -> None:
    src = _v1_pack(tmp_path, layout)
    a = gamemesh.read_native(src)
    gamemesh.convert(src, tmp_path / "a.glb")
    report = gamemesh.convert(tmp_path / "a.glb", tmp_path / "b.bin")
    b = gamemesh.read_native(tmp_path / "b.bin")
    assert (b.version, b.layout) == (1, layout)
    assert [len(m) for m in b.navmeshes] == [len(m) for m in a.navmeshes] == [2]
    codes = _codes(report.notes)
    assert "splashpack.navmesh_dropped" not in codes
    assert f"version 1 layout {layout}" in codes["splashpack.source_version"].message


def test_modern_scene_through_gltf_keeps_its_version(tmp_path: Path) -> None:
    for v in (20, 23, 26):
        gamemesh.convert(FIXTURES / f"v{v}.splashpack", tmp_path / f"{v}.glb")
        gamemesh.convert(tmp_path / f"{v}.glb", tmp_path / f"{v}.splashpack")
        assert gamemesh.read_native(tmp_path / f"{v}.splashpack").version == v
    # The option still wins over the source's version.
    gamemesh.convert(tmp_path / "26.glb", tmp_path / "x.splashpack", splash_version=21)
    assert gamemesh.read_native(tmp_path / "x.splashpack").version == 21


def test_blender_export_finds_the_source_on_the_imported_object(tmp_path: Path) -> None:
    """The Blender extension keeps the imported file's scene extras on the root object
    (``gamemesh.extras``) and its glTF export carries them as node extras: that is the source."""
    src = _v1_pack(tmp_path, "H")
    s = gamemesh.load(src)
    kept = dict(s.extras)
    s.extras.clear()
    s.nodes[0].extras["gamemesh"] = {"format": "splashpack", "extras": kept}
    gamemesh.save(s, tmp_path / "blender.bin")
    b = gamemesh.read_native(tmp_path / "blender.bin")
    assert (b.version, b.layout) == (1, "H") and len(b.navmeshes) == 1
    # A scene that never was a SPLASHPACK gets the default.
    gamemesh.save(scene(lights=False), tmp_path / "new.bin")
    assert gamemesh.read_native(tmp_path / "new.bin").version == ml.DEFAULT_VERSION


@pytest.mark.parametrize("v", [20, 21, 22, 23, 24, 25, 26])
def test_every_version_round_trips_through_gltf_byte_for_byte(v: int, tmp_path: Path) -> None:
    """scene -> pack (version v) -> glb -> pack, the second conversion with no option: the
    scene remembers its version and the second pack and .vram are the first's bytes."""
    gamemesh.save(scene(), tmp_path / "p.splashpack", splash_version=v)
    gamemesh.convert(tmp_path / "p.splashpack", tmp_path / "b.glb")
    gamemesh.convert(tmp_path / "b.glb", tmp_path / "q.splashpack")
    p, q = (tmp_path / "p.splashpack").read_bytes(), (tmp_path / "q.splashpack").read_bytes()
    assert struct.unpack_from("<H", q, 2)[0] == v and p == q
    assert (tmp_path / "p.vram").read_bytes() == (tmp_path / "q.vram").read_bytes()
    doc = gamemesh.read_native(tmp_path / "q.splashpack")
    assert (len(doc.objects), doc.triangle_count(), len(doc.skins), len(doc.animations),
            len(doc.lights)) == (3, 20, 1, 1, 1 if v >= 24 else 0)


@pytest.mark.parametrize("v", [20, 21, 25])
def test_v26_joint_names_written_as_an_older_version_are_named_in_a_warning(v: int,
                                                                             tmp_path: Path
                                                                             ) -> None:
    gamemesh.convert(FIXTURES / "v26.splashpack", tmp_path / "v26.glb")
    notes = _codes(gamemesh.save(gamemesh.load(tmp_path / "v26.glb"),
                                 tmp_path / "out.splashpack", splash_version=v))
    msg = notes["splashpack.joint_names_dropped"].message
    assert "skin 'Pillar_skin' of 'Pillar'" in msg and "['hip', 'top']" in msg
    assert f"version {v} has no joint names" in msg and "--splash-version 26" in msg


def test_no_joint_names_warning_without_v26_names(tmp_path: Path) -> None:
    """No false alarm: v26 keeps the names; a v25 skin has none (its joints' names are made
    up); a v26 skin whose names are empty gave none either."""
    for src, v in (("v26", 26), ("v25", 21)):
        gamemesh.convert(FIXTURES / f"{src}.splashpack", tmp_path / f"{src}.glb")
        notes = gamemesh.save(gamemesh.load(tmp_path / f"{src}.glb"),
                              tmp_path / f"{src}-{v}.splashpack", splash_version=v)
        assert "splashpack.joint_names_dropped" not in _codes(notes)
    doc = gamemesh.read_native(FIXTURES / "v26.splashpack")
    doc.skins[0].joint_names = [b"", b""]
    gamemesh.write_native(doc, tmp_path / "unnamed.splashpack")
    gamemesh.convert(tmp_path / "unnamed.splashpack", tmp_path / "unnamed.glb")
    notes = gamemesh.save(gamemesh.load(tmp_path / "unnamed.glb"),
                          tmp_path / "unnamed-21.splashpack", splash_version=21)
    assert "splashpack.joint_names_dropped" not in _codes(notes)
