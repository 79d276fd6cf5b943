"""``gamemesh batch SRC DST``: convert a whole folder (a game install, a mod collection).

Also ``gamemesh batch --report DST [--json]``: the summary of what a batch left in DST.
Exit codes: 0 all converted, 1 some inputs could not be converted (they are in the manifest and
the report), 2 usage, 130 interrupted (a rerun finishes the rest).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import emit_json, format_options

if TYPE_CHECKING:
    from ..batch.run import BatchResult

HELP = "convert every model in a folder tree, in parallel and resumably (or --report DST)"
FORMAT_OPTIONS = True


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", nargs="?", help="folder to convert (searched recursively)")
    p.add_argument("dst", nargs="?", help="output folder: mirrors SRC, holds the manifest")
    p.add_argument("--report", metavar="DST", help="print the summary of the batch in DST and exit")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--to", default="glb", help="output format or extension (default: glb)")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help="files converting at once: local worker processes (default: all "
                   "cores); with a Dask cluster, a cap (default: two per worker thread)")
    p.add_argument("--include", action="append", default=[], metavar="GLOB",
                   help="only paths (relative to SRC) matching GLOB; repeatable; a pattern "
                   "without '/' matches file names anywhere")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="leave out paths matching GLOB; repeatable")
    p.add_argument("--format", action="append", default=[], metavar="NAME", dest="only",
                   help="only inputs of this format (repeatable)")
    p.add_argument("--force", action="store_true", help="convert again even what is unchanged")
    p.add_argument("--retry-errors", action="store_true",
                   help="convert again the inputs that failed last time")
    cluster = p.add_mutually_exclusive_group()
    cluster.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                         help="run on a Dask distributed cluster (pip install "
                         "'gamemesh[cluster]'); workers need SRC and DST at the same paths")
    cluster.add_argument("--scheduler-file", metavar="FILE", type=Path,
                         help="the cluster a Dask scheduler file names (dask-jobqueue, dask-mpi)")
    p.add_argument("--connect-timeout", type=float, default=5.0, metavar="S",
                   help="seconds to reach the scheduler or its file (default 5)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress, no summary")
    p.add_argument("--progress-interval", type=float, default=5.0, metavar="S",
                   help="seconds between progress lines when stderr is not a terminal")
    p.add_argument("--thumbnails", action="store_true",
                   help="a thumbnail beside each output, a contact sheet per folder and an "
                   "index of the whole tree (DST/contact_sheet_index.html)")
    p.add_argument("--post-step", action="append", default=[], metavar="MODULE:FUNC",
                   help="call FUNC(main_output, source) after each conversion; it returns the "
                   "extra files it wrote (thumbnails)")



THUMBNAIL_STEP = "gamemesh.viewer.thumbnail:batch_thumbnail"


def run(args: argparse.Namespace) -> int:
    from ..batch import BatchConfig, run_batch

    if args.report is not None:
        if args.src or args.dst:
            print("gamemesh: usage error: --report takes only DST", file=sys.stderr)
            return 2
        return _report(Path(args.report), args.json)
    if not args.src or not args.dst:
        print("gamemesh: usage error: batch needs SRC and DST (or --report DST)",
              file=sys.stderr)
        return 2
    if args.jobs is not None and args.jobs < 1:
        print("gamemesh: usage error: --jobs must be at least 1", file=sys.stderr)
        return 2
    if not args.connect_timeout > 0:
        print("gamemesh: usage error: --connect-timeout must be positive", file=sys.stderr)
        return 2
    post = list(args.post_step)
    if args.thumbnails:
        post.append(THUMBNAIL_STEP)
    cfg = BatchConfig(src=Path(args.src), dst=Path(args.dst), to=args.to, jobs=args.jobs,
                      include=args.include, exclude=args.exclude, formats=args.only,
                      force=args.force,
                      retry_errors=args.retry_errors, options=format_options(args),
                      scheduler=args.scheduler, scheduler_file=args.scheduler_file,
                      connect_timeout=args.connect_timeout, quiet=args.quiet,
                      progress_interval=args.progress_interval, post=post)
    res = run_batch(cfg)
    if args.thumbnails and not res.interrupted:
        from ..viewer.thumbnail import folder_contact_sheets

        sheets = folder_contact_sheets(Path(args.dst))
        if not args.quiet:
            print(f"gamemesh: {len(sheets)} contact sheet(s) written", file=sys.stderr)
    if args.json:
        emit_json(res.to_dict())
    elif not args.quiet:
        _print_summary(res)
    if res.interrupted:
        return 130
    return 1 if res.errors_total else 0


def _report(dst: Path, as_json: bool) -> int:
    from ..batch import format_report, summarize

    summary = summarize(dst)
    if as_json:
        emit_json(summary)
    else:
        print(format_report(summary))
    return 0


def _print_summary(res: BatchResult) -> None:
    from ..batch.executors import executor_label

    err = sys.stderr
    state = "interrupted" if res.interrupted else "done"
    print(f"gamemesh: batch {state}: {res.units} units from {res.inputs} files "
          f"({res.grouped} part of multi-file units, {res.unrecognised} not recognised); "
          f"converted {res.converted} (ok {res.ok}, errors {res.errors}), unchanged "
          f"{res.skipped}, in {res.seconds:.1f} s: {res.files_per_second:.1f} files/s, "
          f"{res.mb_per_second:.2f} MB/s ({executor_label(res.executor, res.jobs)})", file=err)
    for path, msg in res.failed[:10]:
        print(f"gamemesh: error: {path}: {msg}", file=err)
    if len(res.failed) > 10:
        print(f"gamemesh: ... {len(res.failed) - 10} more errors: gamemesh batch --report DST",
              file=err)
    if res.interrupted:
        print("gamemesh: run the same command again to finish the rest", file=err)
