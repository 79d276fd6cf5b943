"""``gamemesh info FILE``: the format's own facts, the scene's counts, and the notes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..api import _load, _read_source, _spec_for
from ..registry import Context
from ._common import add_format_options, emit_json, format_options

HELP = "describe a file: format, version or variant, counts, animations, notes"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", help="the file to describe")
    p.add_argument("--from", dest="from_format", help="the format, when sniffing is not enough")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_format_options(p)


def describe(src: Path, from_format: str | None, options: dict[str, Any]) -> dict[str, Any]:
    data, path = _read_source(src, options.get("max_input_size"))
    spec = _spec_for(data, path, from_format)
    spec.check_options(options)
    out: dict[str, Any] = {"file": str(src), "format": spec.name, "size": len(data)}
    doc, parsed = None, Context(path, options)
    if spec.read is not None and spec.info is not None:
        doc = spec.read_doc(data, parsed)
        out["native"] = spec.info(doc)
    if spec.can_import:
        scene = _load(data, path, spec, options, parsed, doc)  # parses once: reuses ``doc``
        out.update(scene.summary())
        out["notes"] = [n.to_dict() for n in scene.notes]
    return out


def run(args: argparse.Namespace) -> int:
    info = describe(Path(args.src), args.from_format, format_options(args))
    if args.json:
        emit_json(info)
        return 0
    print(f"{info['file']}: {info['format']} ({info['size']} bytes)")
    for k, v in info.get("native", {}).items():
        print(f"  {k}: {v}")
    for k in ("nodes", "meshes", "primitives", "vertices", "triangles", "materials", "textures",
              "skins", "bones", "morph_targets"):
        if k in info:
            print(f"  {k}: {info[k]}")
    if info.get("bounds"):
        print(f"  bounds: {info['bounds']['min']} .. {info['bounds']['max']}")
    for a in info.get("animations", []):
        print(f"  animation {a['name']!r}: {a['keys']} keys, {a['duration']:.3f} s, "
              f"{a['channels']} channels")
    for n in info.get("notes", []):
        print(f"  {n['level']}: {n['code']}: {n['message']}")
    return 0
