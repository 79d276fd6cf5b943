"""Batch throughput on the generated tree: ``python -m gamemesh.batch.bench [--files N]
[--jobs 1 2] [--cluster 1 2]`` prints files/s and MB/s of a whole-tree conversion to GLB per
job count of the local pool and, with ``--cluster``, per worker count of a Dask LocalCluster
(worker processes with one thread each, on loopback), with the scaling ratio and the overhead
per file of the cluster against the local pool."""

from __future__ import annotations

import argparse
import importlib
import io
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .run import BatchConfig, BatchResult, run_batch
from .sampletree import build_tree

__all__ = ["bench", "warm_worker"]


def _row(res: BatchResult, files: int, built: float, **what: Any) -> dict[str, Any]:
    return {**what, "files": files, "units": res.units, "converted": res.converted,
            "ok": res.ok, "errors": res.errors, "seconds": round(res.seconds, 3),
            "files_per_s": round(res.files_per_second, 1),
            "MB_per_s": round(res.mb_per_second, 2), "tree_build_s": round(built, 2),
            "input_MB": round(res.bytes / 1e6, 2)}


def warm_worker() -> int:
    """Run on each cluster worker before the clock starts: a spawned worker imports gamemesh
    and every format on its first task, which forked pool workers have already done."""
    registry = importlib.import_module("gamemesh.registry")
    importlib.import_module("gamemesh.batch.work")
    return len(registry.formats())


def _cluster_row(src: Path, dst: Path, workers: int, to: str, files: int,
                 built: float) -> dict[str, Any]:
    dist: Any = importlib.import_module("distributed")  # the 'cluster' extra
    with dist.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                           protocol="tcp", host="127.0.0.1", scheduler_port=0,
                           dashboard_address="127.0.0.1:0") as cluster, dist.Client(
            cluster.scheduler_address, set_as_default=False) as client:
        client.run(warm_worker)
        res = run_batch(BatchConfig(src, dst, to=to, scheduler=cluster.scheduler_address,
                                    quiet=True, stream=io.StringIO()))
    return _row(res, files, built, jobs=workers, executor="dask")


def bench(files: int, jobs: Sequence[int], to: str = "glb",
          cluster: Sequence[int] = ()) -> list[dict[str, Any]]:
    """One row per local job count (``executor`` "local") and per cluster worker count
    ("dask"); a cluster row carries ``overhead_ms_per_file`` against the local row of the same
    count and ``scaling`` (files/s against its first row) as every row does."""
    work = Path(tempfile.mkdtemp(prefix="gamemesh-batch-bench-"))
    try:
        t0 = time.perf_counter()
        tree = build_tree(work / "src", files)
        built = time.perf_counter() - t0
        rows = [_row(run_batch(BatchConfig(work / "src", work / f"dst{n}", to=to, jobs=n,
                                           quiet=True, stream=io.StringIO())),
                     len(tree.expect), built, jobs=n, executor="local") for n in jobs]
        rows += [_cluster_row(work / "src", work / f"dask{n}", n, to, len(tree.expect), built)
                 for n in cluster]
        _compare(rows)
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _compare(rows: list[dict[str, Any]]) -> None:
    local = {r["jobs"]: r for r in rows if r["executor"] == "local"}
    for kind in ("local", "dask"):
        mine = [r for r in rows if r["executor"] == kind]
        for r in mine:
            r["scaling"] = round(r["files_per_s"] / mine[0]["files_per_s"], 2) if mine[
                0]["files_per_s"] else None
    for r in rows:
        base = local.get(r["jobs"])
        if r["executor"] == "dask" and base and r["converted"]:
            r["overhead_ms_per_file"] = round(
                (r["seconds"] - base["seconds"]) / r["converted"] * 1000, 2)


def describe(r: dict[str, Any]) -> str:
    head = (f"batch --jobs {r['jobs']}" if r["executor"] == "local" else
            f"batch on a LocalCluster of {r['jobs']} worker process" + "es" * (r["jobs"] > 1))
    extra = f", x{r['scaling']} of the first row" if r.get("scaling") else ""
    if "overhead_ms_per_file" in r:
        extra += (f", {r['overhead_ms_per_file']} ms per file more than --jobs {r['jobs']}")
    return (f"{head}: {r['files']} files, {r['units']} units, {r['input_MB']} MB in "
            f"{r['seconds']} s: {r['files_per_s']} files/s, {r['MB_per_s']} MB/s "
            f"({r['ok']} ok, {r['errors']} errors{extra})")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gamemesh.batch.bench", description=__doc__)
    p.add_argument("--files", type=int, default=1000, help="files in the tree (default 1000)")
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="job counts (1 2)")
    p.add_argument("--cluster", type=int, nargs="*", default=[], metavar="WORKERS",
                   help="also on a Dask LocalCluster of these worker counts (needs the "
                   "'cluster' extra), e.g. --cluster 1 2")
    p.add_argument("--to", default="glb")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = bench(args.files, args.jobs, args.to, args.cluster)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    for r in rows:
        print(describe(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
