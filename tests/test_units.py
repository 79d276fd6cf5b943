"""Multi-file units (a Papa model with its texture and animation files, a PBA with its PTX, a
PET with its textures): a corrupt or missing sibling never fails the load or escapes as another
exception; the model still converts and a warning note names the file. Generic over every format
that loads siblings, through each format's own ``load`` (not the registry's guarded entry)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.registry import Context, FormatSpec, formats
from gamemesh.sample import sample_scene
from helpers import mutations

UNIT_FORMATS = [s for s in formats() if s.load is not None and s.siblings is not None
                and s.can_export and s.name != "gltf"]


def _unit(spec: FormatSpec, folder: Path) -> tuple[Path, list[Path]]:
    main = folder / f"unit{spec.extensions[0]}"
    gamemesh.save(sample_scene(), main, format=spec.name)
    assert spec.siblings is not None
    sibs = spec.siblings(main)
    assert sibs, f"{spec.name}: the sample unit should have sibling files"
    return main, sibs


@pytest.mark.parametrize("spec", UNIT_FORMATS, ids=lambda s: s.name)
def test_garbage_sibling_is_a_note(spec: FormatSpec, tmp_path: Path) -> None:
    assert spec.load is not None
    main, sibs = _unit(spec, tmp_path)
    for sib in sibs:
        orig = sib.read_bytes()
        sib.write_bytes(b"garbage" * 10)
        ctx = Context(main, {})
        scene = spec.load(main.read_bytes(), ctx)
        sib.write_bytes(orig)
        assert scene.summary()["vertices"] > 0
        assert any(n.level == "warning" and sib.name in n.message for n in ctx.notes), \
            f"{spec.name}: no warning names {sib.name}: {[str(n) for n in ctx.notes]}"


@pytest.mark.parametrize("spec", UNIT_FORMATS, ids=lambda s: s.name)
def test_mutated_siblings_fail_cleanly(spec: FormatSpec, tmp_path: Path) -> None:
    assert spec.load is not None
    main, sibs = _unit(spec, tmp_path)
    data = main.read_bytes()
    for sib in sibs:
        orig = sib.read_bytes()
        cases = [*mutations(orig, 150, seed=5),
                 *(orig[:cut] for cut in range(0, len(orig), max(1, len(orig) // 60)))]
        for case in cases:
            sib.write_bytes(case)
            with contextlib.suppress(FormatError):
                spec.load(data, Context(main, {}))
        sib.write_bytes(orig)


@pytest.mark.parametrize("spec", UNIT_FORMATS, ids=lambda s: s.name)
def test_missing_sibling_is_a_note(spec: FormatSpec, tmp_path: Path) -> None:
    assert spec.load is not None
    main, sibs = _unit(spec, tmp_path)
    for sib in sibs:
        sib.unlink()
    ctx = Context(main, {})
    assert spec.load(main.read_bytes(), ctx).summary()["vertices"] > 0
