"""Write gamemesh's generated sample files for the peer timings.

    python tools/peers/samples.py OUTDIR [--format pba --format pet] [--size MB ...]

Each format's ``FormatSpec.make_sample`` builds a native file of about the given size (the same
generator ``python -m gamemesh.bench`` uses); the files are named ``sample_<MB>mb.<ext>``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gamemesh import registry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--format", action="append", dest="formats")
    ap.add_argument("--size", action="append", type=int, dest="sizes")
    args = ap.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    for name in args.formats or ["pba", "pet"]:
        spec = registry.by_name(name)
        if spec.make_sample is None:
            msg = f"{name} has no sample generator"
            raise SystemExit(msg)
        for mb in args.sizes or [1, 10, 50]:
            path = args.outdir / f"sample_{mb}mb{spec.extensions[0]}"
            path.write_bytes(spec.make_sample(mb * 1_000_000))
            print(path, path.stat().st_size)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
