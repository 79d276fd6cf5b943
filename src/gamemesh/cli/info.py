"""``gamemesh info FILE...``: the file's own facts, the scene's counts, the sibling files read
with it, and the notes, in separate sections (a Papa model holds 0 textures itself and its
scene 3 from its unit: both are true, of different things)."""

from __future__ import annotations

import argparse
from typing import Any

from ._common import (
    check_involved,
    each_input,
    emit_json,
    expand_inputs,
    format_options,
    open_input,
    print_error,
    source_spec,
)

HELP = "describe files: format, version or variant, counts, animations, siblings, notes"
FORMAT_OPTIONS = True
EXAMPLES = (
    "gamemesh info unit.papa",
    "gamemesh info models/*.pmf --json > facts.json",
    "cat unit.glb | gamemesh info - --from glb",
)

_SCENE_COUNTS = ("nodes", "meshes", "primitives", "vertices", "triangles", "materials",
                 "textures", "skins", "bones", "morph_targets")


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", nargs="+", metavar="FILE",
                   help="the files to describe (globs work; '-' is stdin, with --from)")
    p.add_argument("--from", dest="from_format", metavar="FORMAT",
                   help="the format, when sniffing is not enough")
    p.add_argument("--json", action="store_true",
                   help="machine-readable output (a list for several files; failures as "
                   '{"error": {...}})')


def run(args: argparse.Namespace) -> int:
    from ..api import info as describe

    inputs = expand_inputs(args.src)
    options = format_options(args)
    results: list[dict[str, Any]] = []

    def one(src: str) -> None:
        check_involved(options, [source_spec(src, args.from_format)])
        data = describe(open_input(src), args.from_format, **options)
        if src == "-":
            data["file"] = "-"
        if args.json:
            results.append(data)
        else:
            print_info(data, several=len(inputs) > 1)

    def failed(fields: dict[str, Any]) -> None:
        if args.json:
            results.append({"error": fields})
        print_error(fields)

    status = each_input(inputs, one, failed)
    if args.json:
        emit_json(results[0] if len(inputs) == 1 else results)
    return status


def print_info(info: dict[str, Any], several: bool = False) -> None:
    if several:
        print()
    print(f"{info['file']}: {info['format']}, {info['size']} bytes")
    native = info.get("native", {})
    if native:
        print(f"file ({info['format']}'s own records):")
        for k, v in native.items():
            print(f"  {k}: {v}")
    _print_scene(info)
    if info.get("siblings"):
        print("siblings attached (read with it):")
        for s in info["siblings"]:
            print(f"  {s}")
    if info.get("notes"):
        print("notes:")
        for n in info["notes"]:
            print(f"  {n['level']}: {n['code']}: {n['message']}")


def _print_scene(info: dict[str, Any]) -> None:
    if not any(k in info for k in _SCENE_COUNTS):
        return
    print("scene (as converted, siblings included):")
    for k in _SCENE_COUNTS:
        if k in info:
            print(f"  {k}: {info[k]}")
    if info.get("bounds"):
        print(f"  bounds: {info['bounds']['min']} .. {info['bounds']['max']}")
    for a in info.get("animations", []):
        print(f"  animation {a['name']!r}: {a['keys']} keys, {a['duration']:.3f} s, "
              f"{a['channels']} channels")
