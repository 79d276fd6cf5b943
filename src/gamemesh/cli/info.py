"""``gamemesh info FILE``: the format's own facts, the scene's counts, and the notes."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..api import info as describe
from ._common import add_format_options, emit_json, format_options

HELP = "describe a file: format, version or variant, counts, animations, notes"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="the file to describe")
    p.add_argument("--from", dest="from_format", help="the format, when sniffing is not enough")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_format_options(p)


def run(args: argparse.Namespace) -> int:
    info = describe(Path(args.src), args.from_format, **format_options(args))
    if args.json:
        emit_json(info)
        return 0
    print(f"{info['file']}: {info['format']} ({info['size']} bytes)")
    for k, v in info.get("native", {}).items():
        print(f"  {k}: {v}")
    for k in ("nodes", "meshes", "primitives", "vertices", "triangles", "materials", "textures",
              "skins", "bones", "morph_targets"):
        if k in info:
            print(f"  {k}: {info[k]}")
    if info.get("bounds"):
        print(f"  bounds: {info['bounds']['min']} .. {info['bounds']['max']}")
    for a in info.get("animations", []):
        print(f"  animation {a['name']!r}: {a['keys']} keys, {a['duration']:.3f} s, "
              f"{a['channels']} channels")
    for n in info.get("notes", []):
        print(f"  {n['level']}: {n['code']}: {n['message']}")
    return 0
