"""No NaN or infinity reaches an output: a native file with NaN written over its numbers (keys,
transforms, positions) converts to a FormatError or to a GLB whose every number is finite;
Scene.validate names a non-finite transform or key; the glTF writer refuses one."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.formats.gltf.write import write_glb
from gamemesh.sample import sample_scene
from gamemesh.scene import InvalidSceneError

WRITERS = {"papa": ".papa", "pba": ".pba", "pet": ".pet", "pmf": ".pmf",
           "splashpack": ".splashpack"}
NAN, INF = struct.pack("<f", float("nan")), struct.pack("<f", float("-inf"))


def _refuse(name: str) -> Any:
    msg = f"{name} in the GLB's JSON"
    raise AssertionError(msg)


def _assert_finite_glb(data: bytes) -> None:
    (length,) = struct.unpack_from("<I", data, 12)
    doc = json.loads(data[20:20 + length], parse_constant=_refuse)
    binary = data[20 + length + 8:]
    for i, acc in enumerate(doc.get("accessors", [])):
        if acc["componentType"] != 5126 or "bufferView" not in acc:
            continue
        view = doc["bufferViews"][acc["bufferView"]]
        start = view.get("byteOffset", 0) + acc.get("byteOffset", 0)
        width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}[acc["type"]]
        floats = np.frombuffer(binary, "<f4", acc["count"] * width, start)
        assert np.isfinite(floats).all(), f"accessors[{i}] holds NaN or infinity"
    gamemesh.load(data, format="gltf")  # gamemesh's own reader takes it back


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_nan_written_over_native_numbers_ends_in_error_or_finite_glb(writer: str,
                                                                     tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    gamemesh.save(sample_scene(), src / f"sample{WRITERS[writer]}")
    files = {p.name: p.read_bytes() for p in sorted(src.iterdir())}
    natives = sorted(n for n in files if not n.endswith(".png"))  # numbers live in these
    main = f"sample{WRITERS[writer]}"
    rng = random.Random(29)
    outcomes = {"error": 0, "glb": 0}
    for trial in range(60):
        name = rng.choice(natives)
        data = bytearray(files[name])
        for _ in range(rng.choice((1, 4, 16))):
            at = rng.randrange(0, max(1, len(data) - 4)) & ~3
            data[at:at + 4] = NAN if rng.random() < 0.7 else INF
        case = tmp_path / f"t{trial}"
        case.mkdir()
        for other, body in files.items():
            (case / other).write_bytes(bytes(data) if other == name else body)
        try:
            gamemesh.convert(case / main, case / "out.glb")
        except FormatError:
            outcomes["error"] += 1
            continue
        _assert_finite_glb((case / "out.glb").read_bytes())
        outcomes["glb"] += 1
    assert outcomes["error"] + outcomes["glb"] == 60


def test_validate_names_non_finite_transforms_and_keys() -> None:
    scene = sample_scene()
    scene.nodes[1].translation = (0.0, float("nan"), 0.0)
    scene.animations[0].channels[0].values[0, 0] = np.inf
    scene.skins[0].inverse_bind_matrices[0, 0, 0] = np.nan
    with pytest.raises(InvalidSceneError) as err:
        scene.validate()
    found = " | ".join(err.value.problems)
    assert "nodes[1]" in found and "transform holds NaN or infinity" in found
    assert "keys hold NaN or infinity" in found
    assert "inverse_bind_matrices hold NaN or infinity" in found


def test_gltf_writer_refuses_non_finite_numbers() -> None:
    scene = sample_scene()
    scene.nodes[0].scale = (1.0, float("inf"), 1.0)
    with pytest.raises(FormatError, match=r"nodes\[0\]\.scale\[1\].*finite numbers"):
        write_glb(scene)
