"""``gamemesh textures FILE OUT/``: every texture of a model, unit or character as files.

A format that exports its textures straight from the file (Papa: ``.png``, ``.dds``) is asked
for them, file by file over the unit's siblings, so DXT data lands in DDS exactly as stored,
every mip level included. Other formats give the images of the converted scene.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import FormatError, Note
from ..registry import FormatSpec
from ._common import UsageError, check_involved, format_options, source_spec

if TYPE_CHECKING:
    from ..scene import Image

HELP = "write every texture of a model, unit or character as PNG or DDS files"
FORMAT_OPTIONS = True
EXAMPLES = (
    "gamemesh textures unit.papa textures/",
    "gamemesh textures unit.papa textures/ --format dds   # DXT kept as stored, with mips",
    "gamemesh textures hero.pet hero-textures/",
)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", metavar="FILE", help="the model, unit or character (siblings read too)")
    p.add_argument("out", metavar="OUT/", help="the folder to write the textures into")
    p.add_argument("--format", dest="image_format", choices=("png", "dds"), default="png",
                   help="png (default), or dds: DXT data as stored, other data as RGBA8")
    p.add_argument("--from", dest="from_format", metavar="FORMAT",
                   help="the format, when sniffing is not enough")
    p.add_argument("-q", "--quiet", action="store_true", help="do not list the files written")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also say which files held no texture, and the info notes")


def run(args: argparse.Namespace) -> int:
    if args.src == "-":
        msg = "textures reads a file (its unit's siblings are found beside it), not stdin"
        raise UsageError(msg)
    options = format_options(args)
    spec = source_spec(args.src, args.from_format)
    check_involved(options, [spec])
    ext = f".{args.image_format}"
    out = Path(args.out)
    written = _exported(spec, Path(args.src), out, ext, args) if ext in spec.exports else []
    if not written:
        written = _from_scene(args, out, ext, options)
    if not written:
        msg = "no texture found (not in the file, not in the files read with it)"
        raise FormatError(spec.name, msg, path=args.src)
    if not args.quiet:
        for w in written:
            print(w)
    return 0


def _exported(spec: FormatSpec, src: Path, out: Path, ext: str,
              args: argparse.Namespace) -> list[str]:
    from ..api import convert

    files = [src]
    if spec.siblings is not None and not getattr(args, "no_siblings", None):
        files += spec.siblings(src)
    written: list[str] = []
    for f in files:
        try:
            report = convert(f, out / (f.stem + ext), from_format=spec.name)
        except FormatError as e:
            # Animation files and the model itself hold no textures: not an error of the unit.
            if args.verbose:
                print(f"gamemesh: {f}: no texture written: {e}", file=sys.stderr)
            continue
        written += report.outputs
        _notes(report.notes, str(f), args)
    return written


def _from_scene(args: argparse.Namespace, out: Path, ext: str,
                options: dict[str, object]) -> list[str]:
    from ..api import load
    from ..fileio import safe_name, write_files

    scene = load(args.src, args.from_format, **options)
    _notes(scene.notes, args.src, args)
    files: dict[str, bytes] = {}
    for i, im in enumerate(scene.images):
        data = _encoded(im, ext)
        if data is None:
            print(f"gamemesh: warning: {args.src}: texture {im.uri or im.name or i!r} was not "
                  "found; not written", file=sys.stderr)
            continue
        stem = safe_name(im.name or f"texture{i}").replace("/", "_")
        name, n = stem + ext, 1
        while name in files:  # two images of one name: keep both
            name, n = f"{stem}_{n}{ext}", n + 1
        files[name] = data
    return write_files(out, files) if files else []


def _encoded(im: Image, ext: str) -> bytes | None:
    from ..textures import encode_png, image_rgba
    from ..textures.dds import encode_dds_rgba

    if ext == ".png" and im.data is not None and im.mime_type == "image/png":
        return im.data  # already a PNG: as it is
    pixels = image_rgba(im, "image")
    if pixels is None:
        return None
    return encode_png(pixels) if ext == ".png" else encode_dds_rgba(pixels)


def _notes(notes: list[Note], src: str, args: argparse.Namespace) -> None:
    if args.quiet:
        return
    for n in notes:
        if n.level != "info" or args.verbose:
            print(f"gamemesh: {src}: {n}", file=sys.stderr)
