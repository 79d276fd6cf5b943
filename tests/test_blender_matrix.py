"""Models gamemesh's tests did not make: glTF exported by real Blender 5.0
(tests/fixtures/gltf/matrix_*.glb, made once by tests/blender/make_matrix.py) through every
native writer. Each lost colour set or channel is named exactly once, nothing unchanged is
reported lost, and the second trip writes the first trip's bytes (glb -> F -> glb -> F)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import LimitError, Note
from gamemesh.scene import Scene

FIXTURES = Path(__file__).parent / "fixtures" / "gltf"
MATRIX = ["colors", "rig", "rigid", "scale_keys"]
WRITERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "papa": ("papa", ".papa", {}), "pba": ("pba", ".pba", {}), "pet": ("pet", ".pet", {}),
    "pmf": ("pmf", ".pmf", {}), "splashpack": ("splashpack", ".splashpack", {}),
    "splashpack_v1": ("splashpack", ".splashpack", {"splash_version": 1})}


def _warnings(notes: list[Note]) -> list[Note]:
    return [n for n in notes if n.level == "warning"]


def _paint_kept(src: Scene, back: Scene) -> bool:
    """Whether the user's colour layer (COLOR_1) survives in any set of the output."""
    paint = np.asarray(src.meshes[0].primitives[0].colors[1])[:, :3]
    want = np.unique(np.round(paint * 31).astype(int), axis=0)
    for m in back.meshes:
        for p in m.primitives:
            for c in p.colors:
                got = np.unique(np.round(np.asarray(c)[:, :3] * 31).astype(int), axis=0)
                if len(got) >= len(want) > 1 and not (set(map(tuple, want)) -
                                                       set(map(tuple, got))):
                    return True
    return False


def _convert(tmp_path: Path, writer: str, model: str) -> tuple[Scene, Path, list[Note]] | None:
    fmt, ext, opts = WRITERS[writer]
    src = FIXTURES / f"matrix_{model}.glb"
    first = tmp_path / "a" / f"m{ext}"
    try:
        report = gamemesh.convert(src, first, to_format=fmt, **opts)
    except LimitError:
        return None
    return gamemesh.load(src), first, report.notes


@pytest.mark.parametrize("model", MATRIX)
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_blender_models_lose_nothing_silently_and_nothing_falsely(
        tmp_path: Path, writer: str, model: str) -> None:
    done = _convert(tmp_path, writer, model)
    if done is None:
        pytest.skip(f"{writer} cannot hold {model} (LimitError)")
    src, first, notes = done
    warned = _warnings(notes)
    messages = [n.message for n in warned]
    assert len(messages) == len(set(messages)), messages  # each loss named once
    assert not [m for m in messages if "COLOR_0" in m], messages  # the white set loses nothing
    # Blender's scale keys are all 1 (+- float noise): never reported lost.
    assert not [m for m in messages if "scale channels" in m or "scale animation" in m], messages
    if model == "scale_keys":  # every translation key there holds the rest value too
        assert not [m for m in messages if "translation" in m], messages
    back = gamemesh.load(first, format=WRITERS[writer][0])
    if model == "colors":
        said = [m for m in messages if "COLOR_1" in m]
        assert len(said) == (0 if _paint_kept(src, back) else 1), messages
    for clip in src.animations:
        # A clip the output still holds is not reported lost as a whole.
        if any(a.name == clip.name for a in back.animations):
            assert not [m for m in messages if "every clip" in m and clip.name in m]


@pytest.mark.parametrize("model", MATRIX)
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_blender_models_reach_a_fixed_point_after_one_trip(
        tmp_path: Path, writer: str, model: str) -> None:
    done = _convert(tmp_path, writer, model)
    if done is None:
        pytest.skip(f"{writer} cannot hold {model} (LimitError)")
    _, first, _ = done
    fmt, _, opts = WRITERS[writer]
    glb = tmp_path / "back.glb"
    gamemesh.convert(first, glb, from_format=fmt)
    second = tmp_path / "b" / first.name
    gamemesh.convert(glb, second, to_format=fmt, **opts)
    a = {p.name: p.read_bytes() for p in sorted(first.parent.iterdir())}
    b = {p.name: p.read_bytes() for p in sorted(second.parent.iterdir())}
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
