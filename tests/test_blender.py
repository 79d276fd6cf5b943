"""Blender, a real DCC: what it exports loads, and what we write imports into it.

The first test reads ``tests/fixtures/gltf/blender_rig.glb``, made by real Blender 5.0 with
``tests/blender/make_fixture.py``. The second has Blender import our GLB of every format; it
needs Blender's Python (``pip install bpy==5.0.1`` in a virtual environment of its own, since it
pins numpy < 2) named by ``GAMEMESH_BLENDER_PYTHON``, and is skipped, saying so, without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.registry import formats
from gamemesh.sample import sample_scene
from gamemesh.textures import decode_image

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "gltf" / "blender_rig.glb"


def test_blender_export_loads(tmp_path: Path, gltf_validator: Any) -> None:
    scene = gamemesh.load(FIXTURE)
    s = scene.summary()
    assert scene.extras["gltf_generator"].startswith("Khronos glTF Blender I/O")
    assert (s["nodes"], s["meshes"], s["vertices"], s["triangles"]) == (4, 1, 229, 316)
    assert (s["materials"], s["textures"], s["skins"], s["bones"]) == (1, 1, 1, 2)
    assert [(a["name"], a["keys"], a["duration"]) for a in s["animations"]] == [
        ("Bend", 24, 1.0)]
    assert sorted(scene.nodes[j].name for j in scene.skins[0].joints) == ["Lower", "Upper"]
    prim = scene.meshes[0].primitives[0]
    assert prim.joints is not None and prim.weights is not None
    np.testing.assert_allclose(prim.weights.sum(axis=1), 1.0, atol=1e-5)
    # Blender's PNG stays encoded on load (a writer that needs pixels decodes it).
    img = scene.images[0]
    assert img.pixels is None and img.mime_type == "image/png" and img.size == (8, 8)
    assert img.data is not None and decode_image(img.data).shape == (8, 8, 4)
    # Blender -> gamemesh -> GLB keeps it whole and valid.
    gamemesh.save(scene, tmp_path / "again.glb")
    gltf_validator(tmp_path / "again.glb")
    assert gamemesh.load(tmp_path / "again.glb").summary() == s


def _blender_python() -> str:
    exe = os.environ.get("GAMEMESH_BLENDER_PYTHON")
    if not exe:
        pytest.skip("GAMEMESH_BLENDER_PYTHON is not set (a Python with `bpy` installed)")
    return exe


def test_blender_imports_every_format(tmp_path: Path) -> None:
    exe = _blender_python()
    scene = sample_scene()
    expected: dict[str, dict[str, Any]] = {}
    for spec in formats():
        if not (spec.can_export and spec.can_import):
            continue
        native = tmp_path / f"sample{spec.extensions[0]}"
        glb = tmp_path / f"{spec.name}.glb"
        if spec.name == "gltf":
            gamemesh.save(scene, glb)
        else:
            gamemesh.save(scene, native, format=spec.name)
            gamemesh.convert(native, glb, from_format=spec.name)
        expected[str(glb)] = gamemesh.load(glb).summary()
    r = subprocess.run([exe, str(HERE / "blender" / "import_check.py"), *expected],
                       capture_output=True, text=True, timeout=600)
    results = [json.loads(line.split(" ", 1)[1]) for line in r.stdout.splitlines()
               if line.startswith("GAMEMESH_RESULT ")]
    assert len(results) == len(expected), r.stderr[-2000:]
    for got in results:
        want = expected[got["path"]]
        name = Path(got["path"]).stem
        assert "error" not in got, f"{name}: {got.get('error')}"
        assert got["meshes"] >= 1, name
        assert got["bones"] == want["bones"], name
        assert len(got["actions"]) == len(want["animations"]), name
        assert got["images"] == want["textures"] - want["textures_missing"], name
