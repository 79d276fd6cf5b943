"""``gamemesh thumbnail FILE OUT.png``: a lit, textured picture without a browser or a GPU."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..api import load
from ..fileio import write_files
from ..textures import encode_png
from ..viewer.thumbnail import render_thumbnail
from ._common import add_format_options, format_options

HELP = "render a thumbnail PNG of a file (software rendering, no browser needed)"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="the file to draw (its sibling files are loaded too)")
    p.add_argument("dst", metavar="OUT.png", help="the PNG to write")
    p.add_argument("--size", type=int, default=512, help="width and height in pixels (512)")
    p.add_argument("--clip", help="pose the model in this animation clip (name or index)")
    p.add_argument("--time", type=float, help="seconds into the clip (default: its start; "
                   "without --clip, the first clip)")
    p.add_argument("--shading", choices=("smooth", "flat", "unlit"), default="smooth",
                   help="smooth (stored normals), flat (normals from the winding) or unlit")
    p.add_argument("--from", dest="from_format", help="the format, when sniffing is not enough")
    add_format_options(p)


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.size <= 4096:
        msg = f"--size must be 1..4096, got {args.size}"
        raise ValueError(msg)
    if args.time is not None and not math.isfinite(args.time):
        msg = f"--time must be a finite number of seconds, got {args.time}"
        raise ValueError(msg)
    scene = load(args.src, args.from_format, **format_options(args))
    img = render_thumbnail(scene, args.size, args.clip, args.time, shading=args.shading)
    out = Path(args.dst)
    write_files(out.parent, {out.name: encode_png(img)})
    return 0
