"""What one fuzz input goes through, and the seeds each format's campaign starts from.

An input is read with the format's own reader, turned into a scene (``load`` where the format has
one, else ``to_scene``), checked against the scene model's invariants and written as GLB, all
through the format's *own* functions rather than the registry's guarded entry points, so the
boundary that turns stray exceptions into "malformed data" hides no bug. The only exception an
input may end in is :class:`gamemesh.errors.FormatError`.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

FORMATS = ("papa", "pmf", "splashpack", "pba", "ptx", "pet", "gltf", "image")

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CRASHES = ROOT / "tests" / "crashes"

# Seeds larger than this are left out: mutating a 1 MiB file is slow and finds nothing a small
# one does not.
MAX_SEED = 64 * 1024


def run_one(fmt: str, data: bytes) -> None:
    """read -> scene -> validate -> GLB; returns, or raises FormatError (anything else is a bug)."""
    from gamemesh.formats.gltf import SPEC as GLTF
    from gamemesh.registry import Context, by_name

    spec = by_name(fmt)
    ctx = Context(None, {})
    assert spec.read is not None
    doc = spec.read(data, ctx)
    if spec.load is not None:
        scene = spec.load(data, ctx)
    elif spec.to_scene is not None:
        scene = spec.to_scene(doc, ctx)
    else:  # pragma: no cover - every fuzzed format converts
        return
    scene.validate()
    GLTF.save_scene(scene, Context(Path("fuzz.glb"), {}))


def seeds(fmt: str) -> list[bytes]:
    """The format's fixtures plus the demo sample written in it (and, for glTF, as .gltf too)."""
    from gamemesh.registry import Context, by_name
    from gamemesh.sample import sample_scene

    out: list[bytes] = []
    folder = FIXTURES / fmt
    if folder.is_dir():
        out += [p.read_bytes() for p in sorted(folder.iterdir())
                if p.is_file() and p.suffix != ".md" and p.stat().st_size <= MAX_SEED]
    spec = by_name(fmt)
    scene = sample_scene()
    if fmt == "image":
        out += _image_seeds()
    elif spec.can_export:
        glb = spec.save_scene(scene, Context(Path(f"sample{spec.extensions[0]}"), {}))
        out.append(next(iter(glb.values())))
    if fmt == "gltf":
        out.append(_embedded_gltf(out[-1]))
    if spec.make_sample is not None:
        out.append(spec.make_sample(2000))
    return [s for s in out if len(s) <= MAX_SEED]


def _embedded_gltf(glb: bytes) -> bytes:
    """A .gltf (JSON) holding the GLB's buffer as a data: URI, so it reads from bytes alone."""
    import base64
    import json
    import struct

    jlen = struct.unpack_from("<I", glb, 12)[0]
    gltf = json.loads(glb[20:20 + jlen])
    blen = struct.unpack_from("<I", glb, 20 + jlen)[0]
    blob = glb[28 + jlen:28 + jlen + blen]
    gltf["buffers"][0]["uri"] = ("data:application/octet-stream;base64,"
                                 + base64.b64encode(blob).decode())
    return json.dumps(gltf).encode()


def _image_seeds() -> list[bytes]:
    from PIL import Image

    from gamemesh.sample import checker

    px = checker(16)
    out = []
    for fmt, mode in (("PNG", "RGBA"), ("JPEG", "RGB"), ("BMP", "RGB"), ("TGA", "RGBA"),
                      ("DDS", "RGBA")):
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(px), "RGBA").convert(mode).save(buf, fmt)
        out.append(buf.getvalue())
    return out


def crash_files(fmt: str) -> list[Path]:
    """Inputs kept in tests/crashes/<fmt>/ (every file but notes)."""
    d = CRASHES / fmt
    return sorted(p for p in d.iterdir() if p.is_file() and p.suffix != ".md") \
        if d.is_dir() else []
