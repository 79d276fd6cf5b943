"""PET's small-file paths (plain-Python walks over a few records, keys or bones) against the
general ones they stand in for: the same documents, channels, clips, bones and errors, bit for
bit (timing-independent)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import assert_same_outcome, pet_test_files

import gamemesh
from gamemesh.registry import Context

read_mod = importlib.import_module("gamemesh.formats.pet.read")
ts = importlib.import_module("gamemesh.formats.pet.to_scene")
anim = importlib.import_module("gamemesh.formats.pet.animation")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
files_mod = importlib.import_module("gamemesh.formats.pet.files")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"


def test_small_section_readers_match_the_field_by_field_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """TEXT, SMTL, ANIM, FANM, FRAM, MOTI, COLL and EXTR read straight from the bytes
    give the Reader walk's documents, notes and errors: on the fixtures and on copies with
    bytes of those sections changed (counts, string lengths, bone ids) or cut."""
    docs = pet_test_files()
    rng = np.random.default_rng(29)
    cases = list(docs)
    wanted = {b"TEXT", b"SMTL", b"ANIM", b"FANM", b"FRAM", b"MOTI", b"COLL", b"EXTR"}
    for d, n in docs:
        spans = []
        at = 0
        while at + 8 <= len(d):
            length = int.from_bytes(d[at + 4:at + 8], "little")
            if d[at:at + 4] in wanted and length:
                spans.append((at + 8, at + 8 + length))
            at += 8 + length
        for _ in range(40):
            s0, s1 = spans[int(rng.integers(0, len(spans)))]
            m = bytearray(d)
            for _ in range(int(rng.integers(1, 4))):
                k = int(rng.integers(s0, s1))
                m[k] = int(rng.choice([0, 1, 2, 7, 8, 9, 0x40, 0xFE, 0xFF, rng.integers(0, 256)]))
            if rng.random() < 0.2:
                m = m[:int(rng.integers(s0, s1 + 1))]
            cases.append((bytes(m), n))

    def outcome(d: bytes, n: str) -> Any:
        ctx = Context(Path(n), {})
        try:
            return read_mod.read(d, ctx), [(x.code, x.message) for x in ctx.notes]
        except gamemesh.FormatError as e:
            return str(e)

    fast = [outcome(d, n) for d, n in cases]
    assert sum(isinstance(f, str) for f in fast) > 20  # errors are among the cases
    # The Reader walk: no fast reader, neither straight from the bytes nor in a window.
    monkeypatch.setattr(read_mod, "_section_at", lambda *a: None)
    monkeypatch.setattr(read_mod, "_fast", lambda *a: None)
    for (d, n), got in zip(cases, fast, strict=True):
        assert_same_outcome(got, outcome(d, n))


def test_character_files_match_a_path_listing(tmp_path: Path) -> None:
    """One scandir (names first) finds what the sorted Path listing found: case-insensitive
    prefix and extension, folders and broken or looping links left out."""
    for name in ("Tube_a.MPET", "tube_b.apet", "tube_z.bpet", "tube_.mpet", "tube_d.txt",
                 "other_x.mpet", "tube_c.mpet.bak", "TUBE_e.Apet", "tube_00.mpet"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "tube_dir.mpet").mkdir()
    (tmp_path / "tube_gone.apet").symlink_to(tmp_path / "missing")
    (tmp_path / "tube_loop.apet").symlink_to(tmp_path / "tube_loop.apet")
    (tmp_path / "tube_link.mpet").symlink_to(tmp_path / "tube_b.apet")
    for main in ("tube_z.bpet", "Tube_a.MPET", "notube.bpet", "x_y.txt"):
        path = tmp_path / main
        want = [] if "_" not in main.lower() or not main.lower().endswith(
            (".pet", ".apet", ".bpet", ".mpet")) else [
            p for p in sorted(tmp_path.iterdir()) if p.is_file()
            and p.name.lower().startswith(main.lower().split("_", 1)[0] + "_")
            and p.suffix.lower() in (".bpet", ".mpet", ".apet") and p.name != main]
        assert files_mod.character_files(path) == want


def test_walk_up_is_reused_until_a_folder_on_it_changes(tmp_path: Path) -> None:
    """The shared texture folders above a model: the walk is kept while every folder on it
    has its mtime (only when none changed in the last 2 s), and a folder made on the way is
    found by the next walk."""
    import time as _time

    top = tmp_path / "a"
    model = top / "b" / "c" / "d" / "e" / "m"  # the walk: m, e, d, c, b, a
    model.mkdir(parents=True)
    (top / "Z_Common").mkdir()
    old = _time.time() - 60
    for d in (model, *model.parents):
        if d == tmp_path:
            break
        os.utime(d, (old, old))
    key = (model, os.getcwd())
    want = [top / "Z_Common"]
    assert files_mod._walk_up(model) == want
    assert files_mod._WALKS[key][1] == want
    assert files_mod._walk_up(model) == want  # from the memo
    (model.parent / "texture_dds").mkdir()  # e's mtime changes
    want = [model.parent / "texture_dds", top / "Z_Common"]
    assert files_mod._walk_up(model) == want
    assert files_mod._WALKS[key][1] != want  # e changed just now: the new walk is not kept
    assert list(files_mod.TextureFinder(model)._shared_roots()) == want


def test_shared_folders_of_a_folder_match_its_listing(tmp_path: Path) -> None:
    """The walk's name-only scan finds the shared folders the full listing finds: any case,
    links to folders, not files, links to files or broken links with those names; a kept
    result is redone when the folder changes."""
    import time as _time

    d = tmp_path / "f"
    d.mkdir()
    (d / "Z_Common").mkdir()
    (d / "misc").mkdir()
    (d / "NPC").write_bytes(b"x")  # a file with a shared folder's name
    (d / "other").mkdir()
    (d / "x.png").write_bytes(b"x")
    (d / "skybox").symlink_to(d / "other")  # a link to a folder
    (d / "effect").symlink_to(d / "x.png")  # a link to a file
    (d / "Ppl").symlink_to(d / "nowhere")  # a broken link
    old = _time.time() - 60
    os.utime(d, (old, old))

    def found() -> list[str]:
        files_mod._SHARED.clear()
        files_mod._LISTINGS.clear()
        return sorted(files_mod._shared_of(d, os.stat(d).st_mtime_ns))

    want = sorted(files_mod._scan(d)[2])
    assert want == sorted(str(d / n) for n in ("Z_Common", "misc", "skybox"))
    assert found() == want
    mtime = os.stat(d).st_mtime_ns
    assert files_mod._SHARED[(d, os.path.abspath(d))] == (mtime, files_mod._shared_of(d, mtime))
    (d / "TEXTURE_DDS").mkdir()  # a change: the kept result no longer applies
    got = files_mod._shared_of(d, os.stat(d).st_mtime_ns)
    assert sorted(got) == sorted([*want, str(d / "TEXTURE_DDS")])
    assert sorted(got) == sorted(files_mod._scan(d)[2])


def _reference_safe_inverse(a: Any) -> Any:
    """scene.skinning.safe_inverse as it was (every stack through the cleaning passes)."""
    a = np.asarray(a, np.float64)
    out = np.tile(np.eye(a.shape[-1]), (len(a), 1, 1))
    if not len(a):
        return out
    finite = np.all(np.isfinite(a.reshape(len(a), -1)), axis=1)
    with np.errstate(all="ignore"):
        det = np.linalg.det(np.where(np.isfinite(a), a, 0.0))
    ok = finite & np.isfinite(det) & (np.abs(det) > 1e-12)
    if np.any(ok):
        out[ok] = np.linalg.inv(a[ok])
    return out


def test_safe_inverse_of_finite_invertible_stacks_skips_the_cleaning() -> None:
    """Bit for bit the cleaning way's inverses: invertible, singular, nearly singular,
    overflowing and non-finite matrices, alone and mixed in a stack."""
    from gamemesh.scene.skinning import safe_inverse

    rng = np.random.default_rng(43)
    for trial in range(600):
        n, k = int(rng.integers(0, 8)), int(rng.choice([3, 4]))
        a = rng.normal(size=(n, k, k)) * rng.choice([1.0, 1e-5, 1e80, 1e120], (n, 1, 1),
                                                     p=[.85, .05, .05, .05])
        if n and trial % 4 == 0:
            a[rng.integers(0, n), rng.integers(0, k)] = 0.0  # singular
        if n and trial % 5 == 0:
            a[rng.integers(0, n), rng.integers(0, k), rng.integers(0, k)] = rng.choice(
                [np.nan, np.inf])
        with np.errstate(all="ignore"):
            got, want = safe_inverse(a), _reference_safe_inverse(a)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    assert safe_inverse(np.diag([2.0, 4.0])).tobytes() == np.diag([0.5, 0.25]).tobytes()


def _reference_split(r: Any) -> Any:
    """read._split as it was: every header through the Reader's checked calls."""
    spans = []
    while r.remaining() >= 8:
        at = r.tell()
        fourcc = r.bytes(4)
        length = r.u32("section.length")
        if length > r.remaining():
            raise r.truncated(expected=f"{length} bytes of {fourcc!r}",
                              actual=f"{r.remaining()} left", field="section.length", offset=at)
        spans.append((fourcc, r.tell(), r.tell() + length))
        r.skip(length)
    if not spans:
        msg = "not a PET file: no section"
        raise r.corrupt(msg, expected="a section header", actual=f"{r.remaining()} bytes",
                        offset=0)
    return spans, r.rest()


def test_section_headers_through_struct_match_the_reader_walk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut files, lengths past the end and short tails: the same sections and errors."""
    from gamemesh.binary import Reader

    rng = np.random.default_rng(47)
    cases = [b"", b"VERS", b"VERS\x02\x00\x00\x00\x03\x01", b"VERS\xff\xff\xff\xff\x03\x01"]
    for d, _ in pet_test_files():
        for _ in range(20):
            m = bytearray(d[:int(rng.integers(0, len(d) + 1))])
            if len(m) > 8 and rng.random() < 0.5:
                m[4 + 8 * int(rng.integers(0, 2))] ^= 0x40
            cases.append(bytes(m))

    def outcome(data: bytes) -> Any:
        try:
            return read_mod._split(Reader(data, "pet"))
        except gamemesh.FormatError as e:
            return str(e)

    fast = [outcome(d) for d in cases]
    monkeypatch.setattr(read_mod, "_split", _reference_split)
    assert fast == [outcome(d) for d in cases]
    assert sum(isinstance(f, str) for f in fast) > 10


