"""Time gamemesh on the files a peer was timed on, as JSON lines beside the peer's.

    python tools/peers/ours.py [--repeat N] [--malloc default] FILE...

Per file, each best of N in CPU time (``time.process_time()``): ``load_s`` is
``gamemesh.load(path)`` (read the file, parse, build the Scene: what the issue's rows quote),
``load_bytes_s`` the same from bytes already in memory (what the peers are timed on: their
parse gets an in-memory buffer), ``read_s`` the native parse alone (bytes -> document, no
Scene). malloc is tuned as the ``gamemesh`` command tunes it unless ``--malloc default``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gamemesh
from gamemesh import allocator, registry
from gamemesh.registry import Context


def best(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm: imports, caches
    out = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        out = min(out, time.process_time() - t0)
    return out


def time_file(path: Path, repeat: int) -> dict[str, Any]:
    data = path.read_bytes()
    spec = registry.by_name(gamemesh.sniff(path) or "")
    mb = len(data) / 1e6
    row: dict[str, Any] = {"file": str(path), "size": len(data), "format": spec.name}
    for key, fn in (("load_s", lambda: gamemesh.load(path)),
                    ("load_bytes_s", lambda: gamemesh.load(data, format=spec.name)),
                    ("read_s", lambda: spec.read_doc(data, Context(path, {})))):
        s = best(fn, repeat)
        row[key] = round(s, 6)
        row[key.replace("_s", "_mb_s")] = round(mb / s, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", type=Path, nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--malloc", choices=("tuned", "default"), default="tuned")
    args = ap.parse_args(argv)
    if args.malloc == "tuned":
        allocator.tune()
    for f in args.files:
        print(json.dumps(time_file(f, args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
