"""``gamemesh blender-extension OUT.zip``: the Blender extension, ready for Install from Disk."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..blender.extension import PLATFORMS, BuildError, build_extension

NAME = "blender-extension"
HELP = ("build the Blender (4.2+) extension zip: File > Import/Export > gamemesh, with the "
        "gamemesh and Pillow wheels bundled")
EXAMPLES = (
    "gamemesh blender-extension gamemesh-blender.zip",
    "gamemesh blender-extension all.zip --platform linux-x64 --platform windows-x64",
)


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dst", metavar="OUT.zip", help="the extension zip to write")
    p.add_argument("--platform", action="append", choices=tuple(PLATFORMS),
                   # No host value in the help: docs/cli.md is generated from it and must
                   # read the same on every machine.
                   help="a Blender platform to bundle Pillow for (repeatable; default: this "
                        "machine's)")
    p.add_argument("--wheels", metavar="DIR", help="take the Pillow wheels from this folder "
                   "instead of downloading them from the package index (offline builds)")


def run(args: argparse.Namespace) -> int:
    wheels = Path(args.wheels) if args.wheels else None
    if wheels is not None and not wheels.is_dir():
        msg = f"--wheels {wheels}: not a folder"
        raise ValueError(msg)
    try:
        built = build_extension(Path(args.dst), args.platform, wheels)
    except BuildError as e:
        print(f"gamemesh: error: {e}", file=sys.stderr)
        return 1
    print(f"{built.path}: {built.size} bytes, Blender extension for "
          f"{', '.join(built.platforms)} with {', '.join(built.wheels)}")
    return 0
