"""``gamemesh thumbnail FILE OUT.png`` (or ``FILE... -o OUT/``): a lit, textured picture
without a browser or a GPU."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ._common import (
    UsageError,
    check_involved,
    each_input,
    expand_inputs,
    format_options,
    output_paths,
    source_spec,
)

HELP = "render thumbnail PNGs of files (software rendering, no browser needed)"
FORMAT_OPTIONS = True
EXAMPLES = (
    "gamemesh thumbnail unit.papa unit.png --size 256",
    "gamemesh thumbnail models/*.pmf -o thumbs/",
    "gamemesh thumbnail hero.pet hero.png --clip walk --time 0.5 --shading flat",
)


def add_args(p: argparse.ArgumentParser) -> None:
    p.usage = ("%(prog)s FILE OUT.png [options]\n"
               "       %(prog)s FILE... -o OUT/ [options]")
    p.add_argument("paths", nargs="+", metavar="FILE",
                   help="FILE and OUT.png; or several FILE with -o (sibling files are loaded)")
    p.add_argument("-o", "--out-dir", metavar="OUT/", help="write OUT/<name>.png for each FILE")
    p.add_argument("--size", type=int, default=512, help="width and height in pixels (512)")
    p.add_argument("--clip", help="pose the model in this animation clip (name or index)")
    p.add_argument("--time", type=float, help="seconds into the clip (default: its start; "
                   "without --clip, the first clip)")
    p.add_argument("--shading", choices=("smooth", "flat", "unlit"), default="smooth",
                   help="smooth (stored normals), flat (normals from the winding) or unlit")
    p.add_argument("--from", dest="from_format", metavar="FORMAT",
                   help="the format, when sniffing is not enough")
    p.add_argument("-q", "--quiet", action="store_true", help="do not list the files written")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also list the inputs read as part of a unit")


def _pairs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    if args.out_dir is not None:
        from .convert import units_only

        inputs = units_only(expand_inputs(args.paths), args)
        return list(zip(inputs, output_paths(inputs, args.out_dir, ".png"), strict=True))
    if len(args.paths) != 2:
        msg = f"thumbnail needs FILE and OUT.png, or several FILE and -o OUT/ (got " \
              f"{len(args.paths)} paths)"
        raise UsageError(msg)
    return [(args.paths[0], Path(args.paths[1]))]


def run(args: argparse.Namespace) -> int:
    if not 1 <= args.size <= 4096:
        msg = f"--size must be 1..4096, got {args.size}"
        raise UsageError(msg)
    if args.time is not None and not math.isfinite(args.time):
        msg = f"--time must be a finite number of seconds, got {args.time}"
        raise UsageError(msg)
    from ..api import load
    from ..fileio import write_files
    from ..textures import encode_png
    from ..viewer.thumbnail import render_thumbnail

    pairs = dict(_pairs(args))
    options = format_options(args)

    def one(src: str) -> None:
        check_involved(options, [source_spec(src, args.from_format)])
        scene = load(src, args.from_format, **options)
        img = render_thumbnail(scene, args.size, args.clip, args.time, shading=args.shading)
        out = pairs[src]
        for path in write_files(out.parent, {out.name: encode_png(img)}):
            if not args.quiet:
                print(path, flush=True)

    return each_input(list(pairs), one)
