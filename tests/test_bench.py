"""The benchmark entry point runs for every format with a sample generator and reports real
figures."""

from __future__ import annotations

import json

import pytest

from gamemesh import bench
from gamemesh.registry import formats


def test_bench_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--size", "0.3", "--repeat", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["format"] for r in rows}
    assert names == {s.name for s in formats() if s.make_sample is not None}
    assert {"gltf", "papa", "pba", "pet", "pmf", "ptx", "splashpack"} <= names
    for r in rows:
        assert r["bytes"] > 100_000, r["format"]
        assert r["read_MBps"] > 0 and r["to_glb_MBps"] > 0 and r["peak_MiB"] > 0
        assert r["glb_bytes"] > 0
