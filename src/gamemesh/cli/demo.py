"""``gamemesh demo OUT/``: the bundled sample in every format, and each converted back to GLB.

The sample is a rigged, animated, textured column built in code (gamemesh.sample). For every
format that can be written from a scene, the demo writes ``sample.<ext>``, reads it back and
converts it to ``sample.<ext>.glb``, printing what each conversion noted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..registry import formats
from ._common import emit_json

HELP = "write the bundled sample model in every format and convert each back to GLB"

# Formats whose files are not models: the demo shows them through their own kinds of input.
_SKIP = {"gltf", "image"}


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("out", help="folder to write the demo files into")
    p.add_argument("--json", action="store_true", help="machine-readable summary")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print each conversion's notes (what each format lost or assumed)")


def run(args: argparse.Namespace) -> int:
    from ..api import convert, save
    from ..sample import sample_scene

    out = Path(args.out)
    scene = sample_scene()
    rows: list[dict[str, Any]] = []
    save(scene, out / "sample.glb")
    rows.append({"format": "gltf", "native": "sample.glb", "glb": "sample.glb", "notes": []})
    failed = 0
    for spec in formats():
        if spec.name in _SKIP or not spec.can_export or not spec.can_import:
            continue
        native = out / f"sample{spec.extensions[0]}"
        glb = out / f"sample{spec.extensions[0]}.glb"
        try:
            notes = save(scene, native, format=spec.name)
            report = convert(native, glb, from_format=spec.name)
        except FormatError as e:
            failed += 1
            rows.append({"format": spec.name, "error": str(e)})
            continue
        rows.append({"format": spec.name, "native": native.name, "glb": glb.name,
                     "summary": report.summary,
                     "notes": [str(n) for n in [*notes, *report.notes]]})
    if args.json:
        emit_json(rows)
    else:
        _print_rows(rows, scene.summary(), args.verbose)
        print(f"wrote {len(rows) - failed} sample(s) to {out}/ (open the .glb files in any "
              "glTF viewer, or run `gamemesh view` on them)")
    return 1 if failed else 0


def _print_rows(rows: list[dict[str, Any]], first: dict[str, Any], verbose: bool) -> None:
    """One line per sample, its notes counted (listed under it with ``-v``)."""
    hint = "" if verbose else " (-v lists them)"
    for r in rows:
        if "error" in r:
            print(f"{r['format']:<11} FAILED: {r['error']}")
            continue
        s = r.get("summary", first)
        count = len(r["notes"])
        noted = f", {count} note{'s' if count != 1 else ''}{hint}" if count else ""
        print(f"{r['format']:<11} {r['native']:<22} -> {r['glb']:<26} "
              f"{s['vertices']} vertices, {s['bones']} bones, {len(s['animations'])} clips"
              f"{noted}")
        for n in r["notes"] if verbose else ():
            print(f"{'':<11} {n}")
