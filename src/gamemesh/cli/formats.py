"""``gamemesh formats``: what each format can read, write and convert."""

from __future__ import annotations

import argparse

from ..registry import formats
from ._common import emit_json

HELP = "list the formats, their extensions and what gamemesh can do with each"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args: argparse.Namespace) -> int:
    rows = [{"name": s.name, "title": s.title, "extensions": list(s.extensions),
             **s.capabilities(), "options": [o.flag for o in s.options]} for s in formats()]
    if args.json:
        emit_json(rows)
        return 0
    yes = {True: "yes", False: "-"}
    print(f"{'format':<12}{'extensions':<26}{'read':<6}{'write':<7}{'to glTF':<9}{'from glTF':<10}"
          "title")
    for r in rows:
        print(f"{r['name']:<12}{' '.join(r['extensions']):<26}{yes[r['read']]:<6}"
              f"{yes[r['write']]:<7}{yes[r['to_scene']]:<9}{yes[r['from_scene']]:<10}{r['title']}")
    return 0
