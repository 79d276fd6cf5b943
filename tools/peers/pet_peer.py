"""Time pet-source_tools' PET reader (Acrisio-Filho/pet-source_tools, pure Python) on PET files.

    python tools/peers/pet_peer.py CHECKOUT [--repeat N] FILE.pet...

CHECKOUT is a checkout of the peer repository; this script fetches nothing and copies nothing
from it (the repository states no license: it is only run). Its ``pet.py`` imports
``.ioutil`` relatively and its ``__init__.py`` is a Blender add-on (``bpy``), so the two files
are loaded as submodules of an empty package made here: the add-on is never imported and
nothing needs stubbing. Each file's bytes are read once; every parse gets a fresh
``io.BytesIO`` over them (named like the file: the reader picks PET/APET/MPET by extension)
and is timed with ``time.process_time()`` (CPU time), best of N. The reader's own prints (it
prints the version block) go to a null stream. One JSON line per file: ``file``, ``parse_s``,
``mb_s`` and the counts the reader produced, or ``error``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

_PACKAGE = "pet_source_tools_peer"


def load_peer(checkout: Path) -> types.ModuleType:
    """``pet.py`` of the checkout, imported as ``<empty package>.pet``."""
    package = types.ModuleType(_PACKAGE)
    package.__path__ = [str(checkout)]
    sys.modules[_PACKAGE] = package
    for name in ("ioutil", "pet"):
        spec = importlib.util.spec_from_file_location(f"{_PACKAGE}.{name}", checkout / f"{name}.py")
        if spec is None or spec.loader is None:
            msg = f"{checkout / (name + '.py')} cannot be imported"
            raise SystemExit(msg)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules[f"{_PACKAGE}.pet"]


def counts(puppet: Any) -> dict[str, int]:
    mesh = puppet.mesh
    return {"bones": len(puppet.bones), "textures": len(puppet.textures),
            "vertices": len(mesh.vertices) if mesh is not None else 0,
            "polygons": len(mesh.polygons) if mesh is not None else 0,
            "animations": len(puppet.animations)}


def time_file(pet: types.ModuleType, path: Path, repeat: int) -> dict[str, Any]:
    data = path.read_bytes()
    row: dict[str, Any] = {"file": str(path), "size": len(data),
                           "peer": "pet-source_tools pet.py Puppet.load"}
    best = float("inf")
    puppet = None
    for _ in range(repeat):
        stream = io.BytesIO(data)
        stream.name = str(path)  # type: ignore[misc]
        puppet = pet.Puppet()
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            t0 = time.process_time()
            try:
                puppet.load(stream)
            except Exception as e:  # the peer's failures are results, not crashes
                row["error"] = f"{type(e).__name__}: {e}"
                return row
            best = min(best, time.process_time() - t0)
    row.update({"parse_s": best, "mb_s": len(data) / best / 1e6}, **counts(puppet))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("files", type=Path, nargs="+")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    pet = load_peer(args.checkout)
    for f in args.files:
        print(json.dumps(time_file(pet, f, args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
