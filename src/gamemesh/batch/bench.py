"""Batch throughput on the generated tree: ``python -m gamemesh.batch.bench [--files N]
[--jobs 1 2]`` prints files/s and MB/s of a whole-tree conversion to GLB per job count."""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .run import BatchConfig, run_batch
from .sampletree import build_tree


def bench(files: int, jobs: Sequence[int], to: str = "glb") -> list[dict[str, Any]]:
    work = Path(tempfile.mkdtemp(prefix="gamemesh-batch-bench-"))
    try:
        t0 = time.perf_counter()
        tree = build_tree(work / "src", files)
        built = time.perf_counter() - t0
        rows = []
        for n in jobs:
            res = run_batch(BatchConfig(work / "src", work / f"dst{n}", to=to, jobs=n,
                                        quiet=True, stream=io.StringIO()))
            rows.append({"jobs": n, "files": len(tree.expect), "units": res.units,
                         "converted": res.converted, "ok": res.ok, "errors": res.errors,
                         "seconds": round(res.seconds, 3),
                         "files_per_s": round(res.files_per_second, 1),
                         "MB_per_s": round(res.mb_per_second, 2), "tree_build_s": round(built, 2),
                         "input_MB": round(res.bytes / 1e6, 2)})
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gamemesh.batch.bench", description=__doc__)
    p.add_argument("--files", type=int, default=1000, help="files in the tree (default 1000)")
    p.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="job counts (1 2)")
    p.add_argument("--to", default="glb")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = bench(args.files, args.jobs, args.to)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    for r in rows:
        print(f"batch --jobs {r['jobs']}: {r['files']} files, {r['units']} units, "
              f"{r['input_MB']} MB in {r['seconds']} s: {r['files_per_s']} files/s, "
              f"{r['MB_per_s']} MB/s ({r['ok']} ok, {r['errors']} errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
