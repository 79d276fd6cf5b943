"""Digests of every output gamemesh makes from the corpus, the fixtures and generated samples,
so a refactor can show that it changed no output byte.

    python tools/output_digest.py OUT.json [--corpus ../shared/corpus]
    python tools/output_digest.py NEW.json --against OLD.json   # prints what differs

For every real file and fixture: the native rewrite (``write(read(b))``, every file of it) and
the GLB of ``convert``. For the generated samples of every format (1 MB and 64 KB), the same.
For every GLB that came from a fixture or a sample, and the demo's sample scene: the native
files of every format that writes from a scene. Notes are digested too (their text is output).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from gamemesh import api
from gamemesh.errors import FormatError
from gamemesh.registry import Context, formats
from gamemesh.sample import sample_scene

ROOT = Path(__file__).resolve().parent.parent


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def _native(path: Path, out: dict[str, Any], key: str) -> None:
    try:
        doc = api.read_native(path)
    except (FormatError, ValueError) as e:
        out[key + ":native"] = f"error {type(e).__name__}: {e}"
        return
    spec = next(s for s in formats() if s.document_type and isinstance(doc, s.document_type))
    ctx = Context(path, {})
    try:
        files = (spec.write_files(doc, ctx) if spec.write_files
                 else {path.name: spec.write(doc, ctx)})
    except (FormatError, ValueError) as e:
        out[key + ":native"] = f"error {type(e).__name__}: {e}"
        return
    for name, data in files.items():
        out[f"{key}:native:{name}"] = _h(data)


def _glb(path: Path, tmp: Path, out: dict[str, Any], key: str) -> Path | None:
    dst = tmp / (_h(str(path).encode()) + ".glb")
    try:
        report = api.convert(path, dst)
    except (FormatError, ValueError) as e:
        out[key + ":glb"] = f"error {type(e).__name__}: {e}"
        return None
    out[key + ":glb"] = _h(dst.read_bytes())
    out[key + ":glb:notes"] = _h("\n".join(sorted(str(n) for n in report.notes)).encode())
    return dst


def _to_formats(glb: Path, tmp: Path, out: dict[str, Any], key: str) -> None:
    scene = api.load(glb)
    for spec in formats():
        if not spec.can_export or spec.name in ("gltf", "image"):
            continue
        folder = tmp / f"{_h(key.encode())}-{spec.name}"
        folder.mkdir()
        try:
            notes = api.save(scene, folder / f"out{spec.extensions[0]}", format=spec.name)
        except (FormatError, ValueError) as e:
            out[f"{key}:to:{spec.name}"] = f"error {type(e).__name__}: {e}"
            continue
        for f in sorted(folder.iterdir()):
            out[f"{key}:to:{spec.name}:{f.name}"] = _h(f.read_bytes())
        out[f"{key}:to:{spec.name}:notes"] = _h("\n".join(sorted(map(str, notes))).encode())


def collect(corpus: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    inputs = sorted(p for p in corpus.rglob("*") if p.is_file() and p.suffix != ".md") \
        if corpus.is_dir() else []
    fixtures = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*")
                      if p.is_file() and p.suffix not in (".md", ".png"))
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for path in inputs + fixtures:
            rel = str(path.relative_to(corpus if path in inputs else ROOT))
            if path.suffix == ".vram":
                continue
            _native(path, out, rel)
            glb = _glb(path, tmp, out, rel)
            if glb is not None and path in fixtures:
                _to_formats(glb, tmp, out, rel)
        for spec in formats():
            if spec.make_sample is None:
                continue
            for size in (1 << 16, 1 << 20):
                src = tmp / f"sample-{size}{spec.extensions[0]}"
                src.write_bytes(spec.make_sample(size))
                key = f"generated:{spec.name}:{size}"
                _native(src, out, key)
                glb = _glb(src, tmp, out, key)
                if glb is not None:
                    _to_formats(glb, tmp, out, key)
        demo = tmp / "demo.glb"
        api.save(sample_scene(), demo)
        out["demo:glb"] = _h(demo.read_bytes())
        _to_formats(demo, tmp, out, "demo")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    p.add_argument("--against", type=Path, help="an earlier digest to compare with")
    args = p.parse_args()
    digest = collect(args.corpus)
    args.out.write_text(json.dumps(digest, indent=0, sort_keys=True))
    print(f"{len(digest)} outputs digested into {args.out}")
    if args.against:
        old = json.loads(args.against.read_text())
        diff = sorted(k for k in old.keys() | digest.keys() if old.get(k) != digest.get(k))
        for k in diff[:50]:
            print(f"differs: {k}: {old.get(k)} -> {digest.get(k)}")
        print(f"{len(diff)} of {len(digest)} outputs differ")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
