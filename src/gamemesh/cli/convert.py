"""``gamemesh convert SRC DST``: any supported format to any other, through the scene."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..api import convert
from ..fileio import write_files
from ._common import add_format_options, format_options

HELP = "convert a file (glTF, Papa, PMF, SPLASHPACK, PBA/PTX, PET) to another format"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="input file")
    p.add_argument("dst", help="output file (.glb, .gltf, or a native extension)")
    p.add_argument("--from", dest="from_format", help="input format (default: from content)")
    p.add_argument("--to", dest="to_format", help="output format (default: from DST's extension)")
    p.add_argument("--report", metavar="R.json", help="write what was lost or approximated as JSON")
    add_format_options(p)


def run(args: argparse.Namespace) -> int:
    report = convert(args.src, args.dst, from_format=args.from_format,
                     to_format=args.to_format, **format_options(args))
    if args.report:
        out = Path(args.report)
        write_files(out.parent, {out.name: json.dumps(report.to_dict(), indent=2).encode()})
    for n in report.notes:
        print(f"gamemesh: {n}", file=sys.stderr)
    return 0
