"""``gamemesh convert SRC DST`` (or ``SRC... -o OUT/``): any supported format to any other,
through the scene. ``-`` is stdin (its format sniffed from the content, or ``--from``) or stdout
(with ``--to``: ``glb``, or ``gltf`` for one .gltf with its data embedded)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ._common import (
    STDIO,
    UsageError,
    check_involved,
    each_input,
    expand_inputs,
    format_options,
    group_units,
    open_input,
    output_paths,
    source_spec,
    target_spec,
)

if TYPE_CHECKING:
    from ..api import Report

HELP = "convert files (glTF, Papa, PMF, SPLASHPACK, PBA/PTX, PET) to another format"
FORMAT_OPTIONS = True
EXAMPLES = (
    "gamemesh convert unit.papa unit.glb",
    "gamemesh convert maps/*.pba -o out/ --to glb",
    "gamemesh convert unit.papa - --to glb | gltf-transform inspect /dev/stdin",
    "cat unit.pmf | gamemesh convert - - --to gltf > unit.gltf   # data embedded",
)


def add_args(p: argparse.ArgumentParser) -> None:
    p.usage = ("%(prog)s SRC DST [options]\n"
               "       %(prog)s SRC... -o OUT/ [--to FORMAT] [options]")
    p.add_argument("paths", nargs="+", metavar="FILE",
                   help="SRC and DST; or several SRC with -o. '-' is stdin / stdout")
    p.add_argument("-o", "--out-dir", metavar="OUT/",
                   help="write each input to OUT/<name>.<ext of --to> (default --to glb)")
    p.add_argument("--from", dest="from_format", metavar="FORMAT",
                   help="input format (default: from content, stdin's too)")
    p.add_argument("--to", dest="to_format", metavar="FORMAT",
                   help="output format (default: from DST's extension; needed for '-': glb, or "
                   "gltf for one .gltf with its data embedded)")
    p.add_argument("--report", metavar="R.json",
                   help="write what was lost or approximated as JSON (one input)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing but errors (not the files written, not the warnings)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print the notes at info level")


def _pairs(args: argparse.Namespace) -> list[tuple[str, str]]:
    paths = list(args.paths)
    if args.out_dir is not None:
        inputs = units_only(expand_inputs(paths), args)
        to = args.to_format = args.to_format or "glb"
        # glTF has two extensions; the name given picks one (.gltf writes .bin and images too).
        ext = f".{to}" if to in ("glb", "gltf") else target_spec("x", to).extensions[0]
        return [(i, str(o)) for i, o in zip(inputs, output_paths(inputs, args.out_dir, ext),
                                            strict=True)]
    if len(paths) != 2:
        msg = ("convert needs SRC and DST, or several SRC and -o OUT/ "
               f"(got {len(paths)} path{'s' if len(paths) != 1 else ''})")
        raise UsageError(msg)
    return [(paths[0], paths[1])]


def units_only(inputs: list[str], args: argparse.Namespace) -> list[str]:
    """The inputs that are units: a unit's textures and animations given beside it (``units/*``)
    are read with it, not converted as models of their own; said once on stderr (each with
    ``-v``)."""
    units, members = group_units(inputs, args.from_format, format_options(args))
    parts = sum(len(m) for m in members.values())
    if parts and not args.quiet:
        print(f"gamemesh: {parts} input{'s' if parts != 1 else ''} read as part of "
              f"{len(members)} unit{'s' if len(members) != 1 else ''}, not converted alone"
              f"{'' if args.verbose else ' (-v lists them)'}", file=sys.stderr)
        for unit, names in members.items() if args.verbose else ():
            print(f"gamemesh: {unit}: reads {', '.join(names)}", file=sys.stderr)
    return units


def run(args: argparse.Namespace) -> int:
    from ..api import convert
    from ..fileio import write_files

    pairs = _pairs(args)
    if args.report and len(pairs) != 1:
        msg = "--report takes one input (use `gamemesh batch` for a folder's report)"
        raise UsageError(msg)
    options = format_options(args)
    if pairs[0][1] == STDIO and not args.to_format:
        msg = "writing stdout ('-') needs --to FORMAT"
        raise UsageError(msg)
    target = {dst: target_spec(dst, args.to_format) for _, dst in pairs}

    def one(src: str) -> None:
        dst = dict(pairs)[src]
        source = open_input(src, options)
        check_involved(options, [source_spec(src, args.from_format, source), target[dst]])
        report = convert(source, _destination(dst), from_format=args.from_format,
                         to_format=args.to_format, **options)
        _say(report, args, src)
        if args.report:
            out = Path(args.report)
            write_files(out.parent, {out.name: json.dumps(report.to_dict(), indent=2).encode()})

    return each_input([s for s, _ in pairs], one)


def _destination(dst: str) -> str | IO[bytes]:
    return sys.stdout.buffer if dst == STDIO else dst


def _say(report: Report, args: argparse.Namespace, src: str) -> None:
    """One line per file written (stdout, unless stdout carries the data), then the notes on
    stderr: warnings always, info with -v; -q silences both."""
    if args.quiet:
        return
    if report.destination != STDIO:
        for path in report.outputs:
            print(path, flush=True)
    for n in report.notes:
        if n.level != "info" or args.verbose:
            print(f"gamemesh: {src}: {n}", file=sys.stderr)
