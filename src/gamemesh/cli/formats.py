"""``gamemesh formats [NAME]``: what each format can read, write and convert; with NAME, that
format's options (the flags convert, info, thumbnail, view, scan and batch accept for it)."""

from __future__ import annotations

import argparse
from typing import Any

from ..registry import FormatSpec, Option, by_name, formats
from ._common import emit_json, option_kwargs

HELP = "list the formats and what gamemesh does with each; NAME: that format's options"
EXAMPLES = (
    "gamemesh formats",
    "gamemesh formats papa",
    "gamemesh formats pet --json",
)


# The capabilities in the words of the formats table (the JSON keeps the API's names).
_CAN = {"read": "read", "write": "write", "to_scene": "to glTF", "from_scene": "from glTF"}


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="a format (or an extension: glb, papa, pmf) to show in full")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _row(s: FormatSpec) -> dict[str, Any]:
    return {"name": s.name, "title": s.title, "extensions": list(s.extensions),
            **s.capabilities(), "options": [o.flag for o in s.options]}


def run(args: argparse.Namespace) -> int:
    if args.name:
        return _one(by_name(args.name), args.json)
    rows = [_row(s) for s in formats()]
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
    print("\n`gamemesh formats NAME` lists a format's options.")
    return 0


def option_help(spec: FormatSpec, opt: Option) -> str:
    """The option's help without a repeated ``papa:`` lead (the listing names the format)."""
    text = opt.help
    prefix = f"{spec.name}: "
    return text[len(prefix):] if text.lower().startswith(prefix) else text


def _one(spec: FormatSpec, as_json: bool) -> int:
    if as_json:
        row = _row(spec)
        row["options"] = [{"flag": o.flag, "keyword": o.name, "type": o.type.__name__,
                           "help": option_help(spec, o), "choices": list(o.choices),
                           "repeatable": o.multiple} for o in spec.options]
        row["notes"] = spec.notes
        emit_json(row)
        return 0
    print(describe(spec))
    return 0


def describe(spec: FormatSpec) -> str:
    """A format in full: what it can do, and its options as flags (and API keywords)."""
    caps = [_CAN[k] for k, v in spec.capabilities().items() if v]
    lines = [f"{spec.name}: {spec.title}", f"  extensions: {' '.join(spec.extensions)}",
             f"  can: {', '.join(caps) or 'nothing'}"]
    if spec.notes:
        lines.append(f"  {spec.notes}")
    if not spec.options:
        return "\n".join([*lines, "", f"{spec.name} has no options."])
    parser = argparse.ArgumentParser(prog="gamemesh", add_help=False, usage=argparse.SUPPRESS)
    group = parser.add_argument_group(f"{spec.name} options (API: the keyword in brackets)")
    for o in spec.options:
        group.add_argument(o.flag, **option_kwargs(o, f"{option_help(spec, o)} [{o.name}]"))
    return "\n".join([*lines, "", parser.format_help().rstrip()])
