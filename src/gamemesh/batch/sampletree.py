"""A generated "game install" for the batch tests and benchmark, built from every registered
format: each format's ``make_sample`` files, the sample scene saved in each format that can
write (multi-file units where the format saves several files: a Papa model with its texture
and animations, a PBA with its PTX), damaged files (cut in half, garbage under the right
extension, empty), models renamed to a foreign extension (found by content) and files no
format reads. It returns what a correct batch must make of every file.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import api
from ..registry import FormatSpec, formats, sniff
from ..sample import sample_scene

__all__ = ["Expect", "Tree", "build_tree"]

_SAMPLE_BYTES = 1500  # make_sample's target: small files keep a 1,000-file tree quick
_FOLDERS = ("units", "art/props", "art/vehicles/land", "mods/extra", "data/models")


@dataclass(frozen=True)
class Expect:
    """What a batch should record for one file. ``status`` None: not an input."""

    format: str | None
    status: str | None  # "ok" | "error" | "grouped" | None
    group_of: str | None = None
    kind: str = ""  # sample | unit | member | truncated | garbage | empty | renamed | other


@dataclass
class Tree:
    root: Path
    expect: dict[str, Expect] = field(default_factory=dict)
    # Templates that could not be made (a format whose sample generator failed): name -> error.
    problems: dict[str, str] = field(default_factory=dict)

    def inputs(self) -> dict[str, Expect]:
        return {k: v for k, v in self.expect.items() if v.status is not None}


@dataclass
class _Unit:
    """Files saved together (name -> bytes) and which one is the model."""

    format: str
    primary: str
    files: dict[str, bytes]


def _sample(spec: FormatSpec) -> bytes | None:
    if spec.make_sample is None:
        return None
    data = spec.make_sample(_SAMPLE_BYTES)
    # A sample is only a template when it is recognised as its own format.
    return data if sniff(data[:64], f"x{spec.extensions[0]}") is spec else None


def _saved_unit(spec: FormatSpec) -> _Unit | None:
    """The sample scene saved in ``spec``'s format: one file or a unit of several."""
    if not spec.can_export:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="gamemesh-tree-"))
    try:
        main = tmp / f"scene_{spec.name}{spec.extensions[0]}"
        api.save(sample_scene(), main, format=spec.name)
        files = {p.relative_to(tmp).as_posix(): p.read_bytes()
                 for p in sorted(tmp.rglob("*")) if p.is_file()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _Unit(spec.name, main.name, files) if main.name in files else None


_SMALL = 32 << 10  # bulk copies stay under this; bigger samples appear once each


@dataclass
class _Templates:
    small: list[tuple[str, str, bytes]] = field(default_factory=list)  # (format, ext, bytes)
    big: list[tuple[str, str, bytes]] = field(default_factory=list)
    units: list[_Unit] = field(default_factory=list)
    samples: dict[str, bytes] = field(default_factory=dict)  # one per format, for damage


def _templates(tree: Tree, ext: Callable[[str], str]) -> _Templates:
    t = _Templates()
    for spec in formats():
        try:
            s = _sample(spec)
            u = _saved_unit(spec)
        except Exception as e:  # another engineer's format failing must not hide the rest
            tree.problems[spec.name] = f"{type(e).__name__}: {e}"
            continue
        if s is not None:
            t.samples[spec.name] = s
            (t.small if len(s) <= _SMALL else t.big).append((spec.name, ext(spec.name), s))
        if u is not None and len(u.files) == 1:
            data = u.files[u.primary]
            t.samples.setdefault(spec.name, data)
            t.small.append((spec.name, Path(u.primary).suffix, data))
        elif u is not None:
            t.units.append(u)
    return t


def build_tree(root: Path, files: int = 1000, seed: int = 0,
               extension_of: Callable[[str], str] | None = None) -> Tree:
    """At least ``files`` files under ``root``; ``expect`` says what each should become."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    tree = Tree(root)
    ext = extension_of or (lambda name: _spec(name).extensions[0])
    t = _templates(tree, ext)
    _damaged(tree, t.samples, t.units, rng, ext)
    _renamed_and_other(tree, t.samples, rng)
    for i, (name, e, data) in enumerate(t.big):
        _write(tree, f"big/b{i:02d}{e}", data, Expect(name, "ok", kind="sample"))
    if not t.small and not t.units:
        return tree
    n = 0
    while len(tree.expect) < files:
        if t.units and (n % 6 == 5 or not t.small):
            _put_unit(tree, t.units[(n // 6) % len(t.units)], f"units/u{n:05d}")
        else:
            name, e, data = t.small[n % len(t.small)]
            folder = _FOLDERS[rng.randrange(len(_FOLDERS))]
            _write(tree, f"{folder}/m{n:05d}{e}", data, Expect(name, "ok", kind="sample"))
        n += 1
    return tree


def _spec(name: str) -> FormatSpec:
    return next(s for s in formats() if s.name == name)


def _write(tree: Tree, rel: str, data: bytes, expect: Expect) -> None:
    p = tree.root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    tree.expect[rel] = expect


def _put_unit(tree: Tree, unit: _Unit, folder: str) -> None:
    """The files a format saved together. Those its ``siblings`` names for the model convert
    with it, as one unit; any other (a texture a PET names, which its load finds by itself)
    is an input of its own."""
    primary = f"{folder}/{unit.primary}"
    for name, data in unit.files.items():
        p = tree.root / folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    spec = _spec(unit.format)
    listed = spec.siblings(tree.root / primary) if spec.siblings is not None else []
    claimed = {Path(x).resolve() for x in listed}
    for name, data in unit.files.items():
        rel = f"{folder}/{name}"
        fmt = sniff(data[:64], rel)
        if rel == primary:
            tree.expect[rel] = Expect(unit.format, "ok", kind="unit")
        elif (tree.root / rel).resolve() in claimed:
            # A sidecar no format reads on its own (a SPLASHPACK .vram) is no input of the
            # batch: the scan never lists it, its model's load reads it.
            tree.expect[rel] = Expect(fmt.name if fmt else None, "grouped" if fmt else None,
                                      primary, kind="member")
        else:
            tree.expect[rel] = Expect(fmt.name if fmt else None, "ok" if fmt else None,
                                      kind="companion")


def _damaged(tree: Tree, samples: dict[str, bytes], units: list[_Unit], rng: random.Random,
             ext: Callable[[str], str]) -> None:
    """Per format: cut in half, garbage under its extension, an empty file; the unit's model
    cut in half too (its members are still grouped with it, and it fails)."""
    for name, data in sorted(samples.items()):
        e = ext(name)
        _write(tree, f"broken/{name}/half{e}", data[: len(data) // 2],
               Expect(name, "error", kind="truncated"))
        junk = bytes(rng.randrange(256) for _ in range(97))
        _write(tree, f"broken/{name}/garbage{e}", b"\x00JUNK" + junk,
               Expect(name, "error", kind="garbage"))
        _write(tree, f"broken/{name}/empty{e}", b"", Expect(name, "error", kind="empty"))
    for unit in units:
        if len(unit.files) < 2:
            continue
        folder = f"broken/unit_{unit.format}"
        _put_unit(tree, unit, folder)
        rel = f"{folder}/{unit.primary}"
        data = unit.files[unit.primary]
        _write(tree, rel, data[: len(data) // 2], Expect(unit.format, "error", kind="truncated"))
        # Whether a damaged model still names its parts is the format's call (names on disk:
        # yes; names inside the file: no), so its parts may be grouped or convert alone.
        for k, v in list(tree.expect.items()):
            if k.startswith(folder + "/") and v.kind == "member" and v.status is not None:
                tree.expect[k] = Expect(v.format, "grouped", v.group_of, kind="broken-member")


def _renamed_and_other(tree: Tree, samples: dict[str, bytes], rng: random.Random) -> None:
    """Models under a name no format claims (found by content) and files that are no model."""
    for name, data in sorted(samples.items()):
        got = sniff(data[:64], None)
        if got is not None and got.name == name:
            _write(tree, f"extracted/{name}_asset.dat", data,
                   Expect(name, "ok", kind="renamed"))
    for i in range(8):
        _write(tree, f"docs/readme{i}.txt", f"notes {i}\n".encode() * (i + 1),
               Expect(None, None, kind="other"))
    _write(tree, "data/blob.dat", bytes(rng.randrange(256) for _ in range(300)) + b"\x00" * 64,
           Expect(None, None, kind="other"))
