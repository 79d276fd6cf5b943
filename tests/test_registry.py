"""Format discovery and sniffing."""

from __future__ import annotations

from pathlib import Path

import gamemesh
from gamemesh import registry
from gamemesh.sample import sample_scene


def test_every_format_imports() -> None:
    assert registry.import_errors() == {}


def test_gltf_first_and_names_unique() -> None:
    names = [s.name for s in registry.formats()]
    assert names[0] == "gltf"
    assert len(names) == len(set(names))
    exts = [e for s in registry.formats() for e in s.extensions]
    assert all(e.startswith(".") and e == e.lower() for e in exts)


def test_content_before_extension(tmp_path: Path) -> None:
    glb = tmp_path / "model.png"  # a GLB with a misleading name
    gamemesh.save(sample_scene(), tmp_path / "x.glb")
    glb.write_bytes((tmp_path / "x.glb").read_bytes())
    assert gamemesh.sniff(glb) == "gltf"
    assert gamemesh.load(glb).summary()["bones"] == 3
    assert gamemesh.sniff(b"nothing anybody reads") is None


def test_sniffers_reject_empty_and_random() -> None:
    for spec in registry.formats():
        assert not spec.sniff(b""), spec.name
        assert not spec.sniff(bytes(range(64))), spec.name


def test_public_formats_survives_subpackage_import() -> None:
    import gamemesh.formats.gltf  # binds the subpackage as gamemesh.formats

    names = [s.name for s in gamemesh.formats()]
    assert names == [s.name for s in registry.formats()] and "gltf" in names


def test_option_values_are_checked(tmp_path: Path) -> None:
    import pytest

    from gamemesh.cli import main

    gamemesh.save(sample_scene(), tmp_path / "s.glb")
    spec = registry.by_name("pmf")
    opt = next(o for o in spec.options if o.choices)
    with pytest.raises(ValueError, match=f"pmf option {opt.flag}: expected one of"):
        gamemesh.save(sample_scene(), tmp_path / "s.pmf", **{opt.name: "nonsense"})
    assert not (tmp_path / "s.pmf").exists()
    # On the command line argparse already refuses it: a usage error, exit 2.
    with pytest.raises(SystemExit) as e:
        main(["convert", str(tmp_path / "s.glb"), str(tmp_path / "t.pmf"), opt.flag, "nonsense"])
    assert e.value.code == 2
