"""``gamemesh formats``: what each format can read, write and convert."""

from __future__ import annotations

import argparse
from typing import Any

from ..registry import formats
from ._common import emit_json

HELP = "list the formats, their extensions and what gamemesh can do with each"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = [
        {"name": s.name, "title": s.title, "extensions": list(s.extensions),
         **s.capabilities(), "options": [o.flag for o in s.options]} for s in formats()]
    if args.json:
        emit_json(rows)
        return 0
    yes = {True: "yes", False: "-"}
    table = [["format", "extensions", "read", "write", "to glTF", "from glTF", "title"]]
    table += [[r["name"], " ".join(r["extensions"]), yes[r["read"]], yes[r["write"]],
               yes[r["to_scene"]], yes[r["from_scene"]], r["title"]] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]) - 1)]
    for row in table:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
    return 0
