"""Join a peer's timings and ours (JSON lines, matched by file) into a Markdown table.

    python tools/peers/compare.py PEER.jsonl OURS.jsonl

Throughputs are MB/s of the native file (10^6 bytes). The ratios are ours / the peer's speed:
``load`` (path -> Scene) and ``load from bytes`` against the peer's parse of an in-memory
buffer, and ``native read`` (bytes -> document, the like-for-like step) against the same.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def rows(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            out[str(Path(row["file"]).resolve())] = row
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    peer, ours = rows(Path(argv[0])), rows(Path(argv[1]))
    print("| file | MB | peer parse MB/s | load MB/s (x) | load from bytes MB/s (x) "
          "| native read MB/s (x) |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, p in peer.items():
        o = ours.get(key)
        if o is None or "error" in p:
            print(f"| {Path(key).name} | {p['size'] / 1e6:.1f} | {p.get('error', 'no match')} "
                  "| | | |")
            continue
        cells = [f"{o[k]:.0f} ({o[k] / p['mb_s']:.2f}x)"
                 for k in ("load_mb_s", "load_bytes_mb_s", "read_mb_s")]
        print(f"| {Path(key).name} | {p['size'] / 1e6:.1f} | {p['mb_s']:.1f} | "
              + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
