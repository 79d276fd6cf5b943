"""``gamemesh view FILE``: convert to GLB in memory and show it in the browser (three.js)."""

from __future__ import annotations

import argparse
import sys
import webbrowser

from ..viewer.server import ViewerServer, prepare
from ._common import format_options

HELP = "show a file in a local web viewer (127.0.0.1 only; Ctrl-C stops it)"
FORMAT_OPTIONS = True


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="the file to show (its sibling files are loaded too)")
    p.add_argument("--port", type=int, default=0,
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="only print the address")
    p.add_argument("--from", dest="from_format", help="the format, when sniffing is not enough")
    p.add_argument("--verbose", action="store_true", help="log every request on stderr")



def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        msg = f"--port must be 0..65535, got {args.port}"
        raise ValueError(msg)
    model = prepare(args.src, args.from_format, **format_options(args))
    server = ViewerServer(model, port=args.port, quiet=not args.verbose)
    print(f"gamemesh: showing {args.src} at {server.url} (Ctrl-C to stop)", file=sys.stderr)
    print(server.url, flush=True)
    if not args.no_browser:
        webbrowser.open(server.url)
    server.serve_forever()
    print("gamemesh: viewer stopped", file=sys.stderr)
    return 0
