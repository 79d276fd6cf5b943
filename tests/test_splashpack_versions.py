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
from splashpack_modern_fixtures import scene


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
