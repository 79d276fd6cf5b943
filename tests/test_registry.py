"""Format discovery and sniffing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gamemesh
from gamemesh import registry
from gamemesh.sample import sample_scene

EXPECTED = {"gltf", "image", "papa", "pba", "pet", "pmf", "ptx", "splashpack"}


def test_every_format_imports() -> None:
    assert {s.name for s in registry.formats()} == EXPECTED


def test_a_broken_format_package_fails_loudly(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A format package that does not import stops discovery with its name, not a silent
    gap that would read as "unknown file format"."""
    broken = tmp_path / "zz_broken"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise RuntimeError('boom')\n")
    import gamemesh.formats as pkg

    monkeypatch.setattr(pkg, "__path__", [*pkg.__path__, str(tmp_path)])
    registry._discover.cache_clear()
    try:
        with pytest.raises(registry.FormatImportError, match=r"zz_broken.*boom"):
            registry.formats()
    finally:
        monkeypatch.undo()
        registry._discover.cache_clear()
        sys.modules.pop("gamemesh.formats.zz_broken", None)
    assert {s.name for s in registry.formats()} == EXPECTED


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
