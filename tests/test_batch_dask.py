"""The Dask path (``--scheduler tcp://HOST:PORT``) against a LocalCluster on loopback: the same
manifest and the same output bytes as the local process pool."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from gamemesh.batch import MANIFEST_NAME, BatchConfig, Manifest, run_batch
from gamemesh.batch.sampletree import build_tree

# Columns that legitimately differ between two runs of the same conversions.
_VOLATILE = ("started", "finished", "seconds", "timings", "worker", "run")


def normalized(dst: Path) -> list[dict[str, Any]]:
    with Manifest(dst / MANIFEST_NAME, create=False) as m:
        rows = [{k: v for k, v in r.items() if k not in _VOLATILE} for r in m.rows()]
    for r in rows:
        # Pillow's messages name a BytesIO by its memory address.
        r["error"] = re.sub(r"object at 0x[0-9a-f]+", "object", r["error"] or "") or None
    return rows


def outputs(dst: Path) -> dict[str, str]:
    return {p.relative_to(dst).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(dst.rglob("*")) if p.is_file() and not p.name.startswith(
                "gamemesh-batch.")}


def test_dask_cluster_matches_local_pool(tmp_path: Path) -> None:
    distributed = pytest.importorskip(
        "distributed", reason="dask[distributed] is not installed (pip install "
        "'gamemesh[cluster]'): the --scheduler path cannot be tested")
    tree = build_tree(tmp_path / "src", 80, seed=11)
    local = run_batch(BatchConfig(tree.root, tmp_path / "local", jobs=2, quiet=True))
    assert local.executor == "local" and local.converted == local.units

    # Threads in this process (processes=False): nothing to spawn, loopback TCP only.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  protocol="tcp", host="127.0.0.1", scheduler_port=0,
                                  dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")
        remote = run_batch(BatchConfig(tree.root, tmp_path / "dask", scheduler=addr,
                                       quiet=True))
        assert (remote.executor, remote.jobs) == ("dask", 2)
        assert (remote.converted, remote.ok, remote.errors) == (local.converted, local.ok,
                                                                local.errors)
        again = run_batch(BatchConfig(tree.root, tmp_path / "dask", scheduler=addr,
                                      quiet=True))
        assert (again.converted, again.skipped) == (0, local.units)

    assert normalized(tmp_path / "dask") == normalized(tmp_path / "local")
    got = outputs(tmp_path / "dask")
    assert got == outputs(tmp_path / "local")
    assert sum(k.endswith(".glb") for k in got) == local.ok
