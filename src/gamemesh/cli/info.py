"""``gamemesh info FILE...``: the file's own facts, the scene's counts, the sibling files read
with it, and the notes, in separate sections (a Papa model holds 0 textures itself and its
scene 3 from its unit: both are true, of different things)."""

from __future__ import annotations

import argparse
from typing import Any

from ..words import fields, table, words
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
    "cat unit.glb | gamemesh info -",
)

_SCENE_COUNTS = ("nodes", "meshes", "primitives", "vertices", "triangles", "materials",
                 "textures", "skins", "bones", "morph_targets")


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", nargs="+", metavar="FILE",
                   help="the files to describe (globs work; '-' is stdin)")
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
    printed: list[str] = []

    def one(src: str) -> None:
        source = open_input(src, options)
        check_involved(options, [source_spec(src, args.from_format, source)])
        data = describe(source, args.from_format, **options)
        if src == "-":
            data["file"] = "-"
        if args.json:
            results.append(data)
        else:
            print_info(data, several=bool(printed))
            printed.append(src)

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
    print("\n".join(info_lines(info)))


def info_lines(info: dict[str, Any]) -> list[str]:
    """What ``info`` prints: words and aligned tables in sections."""
    lines = [f"{info['file']}: {info['format']}, {info['size']:,} bytes"]
    native = info.get("native", {})
    if native:
        lines.append(f"file ({info['format']}'s own records):")
        lines += fields(list(native.items()))
    lines += _scene_lines(info)
    if info.get("siblings"):
        lines.append("siblings attached (read with it):")
        lines += [f"  {s}" for s in info["siblings"]]
    if info.get("notes"):
        lines.append("notes:")
        lines += table([{"level": n["level"], "code": n["code"], "message": n["message"]}
                        for n in info["notes"]], "  ")[1:]
    return lines


def _scene_lines(info: dict[str, Any]) -> list[str]:
    if not any(k in info for k in _SCENE_COUNTS):
        return []
    items: list[tuple[str, Any]] = [(k, info[k]) for k in _SCENE_COUNTS if k in info]
    if info.get("bounds"):
        b = info["bounds"]
        items.append(("bounds", f"{words(b['min'])} .. {words(b['max'])}"))
    clips = [{"animation": a["name"], "keys": a["keys"], "duration": f"{a['duration']:.3f} s",
              "channels": a["channels"]} for a in info.get("animations", [])]
    if clips:
        items.append(("animations", clips))
    return ["scene (as converted, siblings included):", *fields(items)]
