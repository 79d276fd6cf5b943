"""``gamemesh view FILE``: convert to GLB in memory and show it in the browser (three.js);
``gamemesh view DIR``: a list of every model under DIR, click one to view it."""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import UsageError, check_involved, format_options, source_spec

if TYPE_CHECKING:
    from ..viewer.server import ViewerServer

HELP = "show a file, or browse a folder's models, in a local web viewer (127.0.0.1 only)"
FORMAT_OPTIONS = True
EXAMPLES = (
    "gamemesh view unit.papa",
    "gamemesh view ~/games/PA/media/pa/units/   # a list of models; click to view",
    "gamemesh view hero.pet --no-browser --port 8000",
)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="FILE|DIR",
                   help="the file to show (siblings loaded too), or a folder to browse")
    p.add_argument("--port", type=int, default=0,
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="only print the address")
    p.add_argument("--from", dest="from_format", metavar="FORMAT",
                   help="the format, when sniffing is not enough")
    p.add_argument("--verbose", action="store_true", help="log every request on stderr")


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        msg = f"--port must be 0..65535, got {args.port}"
        raise UsageError(msg)
    from ..viewer.browser import FolderServer
    from ..viewer.server import ViewerServer, prepare

    options = format_options(args)
    server: ViewerServer
    if Path(args.src).is_dir():
        server = FolderServer(Path(args.src), port=args.port, quiet=not args.verbose,
                              from_format=args.from_format, **options)
        what = f"{len(server.models)} models under {args.src}"
    else:
        check_involved(options, [source_spec(args.src, args.from_format)])
        model = prepare(args.src, args.from_format, **options)
        server = ViewerServer(model, port=args.port, quiet=not args.verbose)
        what = args.src
    print(f"gamemesh: showing {what} at {server.url} (Ctrl-C to stop)", file=sys.stderr)
    print(server.url, flush=True)
    if not args.no_browser:
        webbrowser.open(server.url)
    server.serve_forever()
    print("gamemesh: viewer stopped", file=sys.stderr)
    return 0
