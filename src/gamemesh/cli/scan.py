"""``gamemesh scan DIR``: a coverage report of a folder, without converting anything: formats,
versions and variants seen, multi-file units, unreadable files with their error, totals."""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import emit_json, format_options

HELP = "report what a folder holds: formats, versions, variants, unreadable files (no output)"
FORMAT_OPTIONS = True


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="DIR", help="folder to scan (recursively)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="only paths matching GLOB; repeatable")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="leave out paths matching GLOB; repeatable")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="worker processes (default: all cores)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress")



def run(args: argparse.Namespace) -> int:
    from ..batch import ScanConfig, format_scan, scan_tree

    if args.jobs is not None and args.jobs < 1:
        msg = "--jobs must be at least 1"
        raise ValueError(msg)
    report = scan_tree(ScanConfig(root=Path(args.src), include=args.include,
                                  exclude=args.exclude, jobs=args.jobs,
                                  options=format_options(args), quiet=args.quiet))
    if args.json:
        emit_json(report)
    else:
        print(format_scan(report))
    return 0
