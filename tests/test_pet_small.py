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
from tests.helpers import assert_same_outcome, assert_same_tree, cut_pet_tracks, pet_test_files

import gamemesh
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context

read_mod = importlib.import_module("gamemesh.formats.pet.read")
ts = importlib.import_module("gamemesh.formats.pet.to_scene")
anim = importlib.import_module("gamemesh.formats.pet.animation")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
files_mod = importlib.import_module("gamemesh.formats.pet.files")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"


def _random_tracks(rng: np.random.Generator, dtype: Any = np.float32) -> list[Any]:
    """Tracks with repeated, unsorted, negative and non-finite times and values."""
    from gamemesh.formats.pet.document import Track

    tracks = []
    for bone in range(int(rng.integers(1, 6))):
        keys = []
        for width in (3, 4, 3):
            n = int(rng.integers(0, 9))
            t = rng.integers(-2, 30, n) / 30.0 + rng.choice([0.0, 0.0, 1e-5, -3e-5], n)
            if rng.random() < 0.5:
                t = np.sort(t)
            v = rng.normal(size=(n, width)) * rng.choice([1.0, 1e30, 1e-20, 1e-300], (n, 1))
            rows = np.concatenate([t[:, None], v], 1)
            if n and rng.random() < 0.3:
                rows[rng.integers(0, n), rng.integers(0, width + 1)] = rng.choice(
                    [np.nan, np.inf, -np.inf, -0.0, 0.0])
            if n > 1 and rng.random() < 0.3:
                rows[1, 0] = rows[0, 0]
            keys.append(rows.astype(dtype))
        tracks.append(Track(bone=bone, pos=keys[0], rot=keys[1], scale=keys[2]))
    return tracks



def test_few_keys_channels_and_clips_match_the_numpy_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk over a few keys as Python floats gives the vectorized way's channels and clips
    bit for bit, with the same notes."""
    rng = np.random.default_rng(21)
    cases = []
    for trial in range(400):
        tracks = _random_tracks(rng, np.float64 if trial % 4 == 3 else np.float32)
        frames = [(int(f0), int(max(f0, f1)) if trial % 3 else int(f1))
                  for f0, f1 in rng.integers(0, 35, (int(rng.integers(1, 5)), 2))]
        cases.append((tracks, [(f0 / 30.0, max(f0, f1) / 30.0) for f0, f1 in frames]))

    def run() -> list[Any]:
        return cut_pet_tracks(cases)

    monkeypatch.setattr(anim, "_SMALL_KEYS", 1 << 30)  # every case by the walk
    monkeypatch.setattr(anim, "_SMALL_CUT", 1 << 30)
    small = run()
    monkeypatch.setattr(anim, "_SMALL_KEYS", -1)
    monkeypatch.setattr(anim, "_SMALL_CUT", -1)
    assert run() == small


def _reference_bone_tree(parents: list[int], n: int) -> tuple[list[int], list[int], int]:
    """The bone order as it was first written (visited flags, cycles cut at their first
    bone)."""
    par = [p if 0 <= p < n and p != i else -1 for i, p in enumerate(parents)]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(par):
        if p >= 0:
            children[p].append(i)
    order: list[int] = []
    seen = [False] * n
    cut = sum(1 for i, p in enumerate(parents) if p >= 0 and par[i] < 0)
    roots = [i for i in range(n) if par[i] < 0]
    while True:
        stack = list(reversed(roots))
        while stack:
            i = stack.pop()
            if not seen[i]:
                seen[i] = True
                order.append(i)
                stack.extend(reversed(children[i]))
        rest = [i for i in range(n) if not seen[i]]
        if not rest:
            return order, par, cut
        par[rest[0]] = -1
        children = [[c for c in ch if c != rest[0]] for ch in children]
        roots = [rest[0]]
        cut += 1


def test_bone_order_and_world_matrices_match_the_bone_by_bone_way(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees, chains, cycles and bad links: the same order, cuts and world matrices (bit for
    bit: np.matmul bone by bone) with depths from a Python walk or by pointer jumping."""
    rng = np.random.default_rng(23)
    for trial in range(300):
        n = int(rng.integers(0, 60))
        if trial % 3 == 0:
            parents = [i - 1 for i in range(n)]  # a chain
        else:
            parents = [int(rng.integers(-1, max(1, i + 1))) for i in range(n)]
        for _ in range(int(rng.integers(0, 4))):
            if n:
                parents[int(rng.integers(0, n))] = int(rng.integers(-3, n + 3))
        got = skel.bone_tree(parents, n)
        assert got == _reference_bone_tree(parents, n)
        order, par, _ = got
        # The order make_skeleton takes: the same parents and cuts, parents first.
        fast_order, fast_par, fast_cut = skel.bone_order(parents, n)
        assert (fast_par, fast_cut) == got[1:] and sorted(fast_order) == list(range(n))
        place = {b: k for k, b in enumerate(fast_order)}
        assert all(place[p] < place[i] for i, p in enumerate(fast_par) if p >= 0)
        local = rng.normal(size=(n, 4, 4)) * 10.0 ** rng.integers(-3, 4, (n, 1, 1))
        want = local.copy()
        for i in order:
            if par[i] >= 0:
                want[i] = np.matmul(want[par[i]], local[i])
        for small in (4096, -1):
            monkeypatch.setattr(skel, "_SMALL_BONES", small)
            assert skel.bone_worlds(local, par, order).tobytes() == want.tobytes()
            assert skel.bone_worlds(local, par, fast_order).tobytes() == want.tobytes()


def test_bone_names_decode_as_cp949() -> None:
    cases = [[], [b""], [b"Bip01", b"", b"a b"], ["\ud55c\uae00".encode("cp949"), b"x"],
             [b"\xff\xfe", b"ok"], [b"a\0b", b"c"], [bytes(range(128))]]
    for raw in cases:
        assert skel.decode_names(raw) == [b.decode("cp949", errors="replace") for b in raw]


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


def test_few_bones_trs_split_matches_the_batch() -> None:
    """Bone by bone in plain floats: the batch's translations, rotations, scales and shear
    flags bit for bit (rotations, scalings with a mirror or a zero axis, shear, huge and tiny
    values); a non-finite split is left to the batch."""
    from gamemesh.scene.math import quat_to_matrix

    rng = np.random.default_rng(31)
    left = 0
    for trial in range(3000):
        n = int(rng.integers(1, 25))
        q = rng.normal(size=(n, 4))
        m = np.zeros((n, 4, 4))
        m[:, :3, :3] = quat_to_matrix(q) * rng.choice([1.0, -1.0, 0.0, 1e-30, 3.7, 1e160],
                                                       (n, 1, 3), p=[.5, .2, .05, .05, .195, .005])
        if trial % 3 == 0:
            m[:, :3, :3] += rng.normal(size=(n, 3, 3)) * rng.choice([0.0, 1e-9, 1e-3, 1.0])
        m[:, :3, 3] = rng.normal(size=(n, 3)) * rng.choice([1.0, 1e5, 1e-20])
        m[:, 3, 3] = 1.0
        if trial % 7 == 0:
            m[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] = \
                rng.choice([np.nan, np.inf, -0.0])
        with np.errstate(all="ignore"):  # as build_scene runs it
            gl = skel.S4 @ m @ skel.S4
            few = skel._bone_trs_few(gl.copy())
            batch = skel._bone_trs(gl.copy())
        if few is None:  # a non-finite matrix or split
            left += 1
            continue
        for got, want in zip(few[:3], batch[:3], strict=True):
            assert np.array(got).tobytes() == np.array(want).tobytes()
        assert few[3] == batch[3]
    assert 0 < left < 1000


def test_parts_sharing_bones_share_their_skeleton_and_bind_transforms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A character's parts with the same bones reuse one skeleton and bind transform; parts
    with other matrices, parents or names get their own: the GLB is the one made part by
    part."""
    import io

    (tmp_path / "h_def.bpet").write_bytes(write(build("bpet", (1, 3))))
    docs = {name: build("mpet", (1, 3), rings=rings, sides=5)
            for name, rings in (("a", 3), ("b", 4), ("c", 3), ("d", 5), ("e", 4))}
    bc, bd, be = docs["c"].bones, docs["d"].bones, docs["e"].bones
    assert bc is not None and bc.matrices is not None and bd is not None and be is not None
    bc.matrices[2, 9] += 0.25  # another bind pose
    bd.names[1] = b"Bip01 Other"  # a bone the skeleton lacks
    be.parents[3] = 0
    for name, doc in docs.items():
        (tmp_path / f"h_{name}_01.mpet").write_bytes(write(doc))

    def glb() -> bytes:
        buf = io.BytesIO()
        gamemesh.save(gamemesh.load(tmp_path / "h_def.bpet"), buf, format="glb")
        return buf.getvalue()

    shared = glb()
    calls: list[int] = []
    make = ts.make_skeleton
    monkeypatch.setattr(ts, "make_skeleton", lambda *a: calls.append(1) or make(*a))
    assert glb() == shared and len(calls) == 1 + 4  # the skeleton, then a, c, d, e

    def uncached_rebind(self: Any, wm: Any, bone_map: Any) -> Any:
        return self.sk.world[bone_map] @ ts.safe_inverse(wm)

    monkeypatch.setattr(ts._MeshBuilder, "_own_skeleton",
                        lambda self, unit: make(unit, Context(None, {}, [])))
    monkeypatch.setattr(ts._MeshBuilder, "_rebind", uncached_rebind)
    assert glb() == shared


def test_bone_lookup_by_name_matches_the_linear_search() -> None:
    """The first exact match, else the first match ignoring case (repeated names, names
    differing in case only, non-ASCII)."""
    rng = np.random.default_rng(37)
    pool = ["Bip01", "bip01", "BIP01", "Spine", "spine", "\ud55c\uae00", "Bone001", ""]
    for _ in range(300):
        names = [str(rng.choice(pool)) for _ in range(int(rng.integers(0, 8)))]
        sk = skel.Skeleton(None, names, [-1] * len(names), np.zeros((0, 4, 4)),
                         np.zeros((0, 4, 4)))
        for query in [*pool, "BONE001", "nope"]:
            want = next((i for i, n in enumerate(names) if n == query),
                        next((i for i, n in enumerate(names) if n.lower() == query.lower()),
                             None))
            assert sk.find(query) == want


def test_bone_locals_match_the_tiled_identity_way() -> None:
    from gamemesh.formats.pet.document import BoneSection

    rng = np.random.default_rng(41)
    for trial in range(200):
        n = int(rng.integers(0, 12))
        mats = (rng.normal(size=(n, 12)) * 10.0 ** rng.integers(-20, 20, (n, 1))).astype(
            np.float32)
        if n and trial % 3 == 0:
            mats[rng.integers(0, n), rng.integers(0, 12)] = rng.choice([np.nan, np.inf, -0.0])
        bs = BoneSection(names=[b"b"] * n, parents=[-1] * n,
                         matrices=None if trial % 10 == 0 else mats)
        want = np.tile(np.eye(4), (n, 1, 1))
        if bs.matrices is not None and n:
            rows = np.asarray(mats, np.float64).reshape(n, 4, 3)
            want[:, :3, :3] = np.transpose(rows[:, :3, :], (0, 2, 1))
            want[:, :3, 3] = rows[:, 3, :]
            want[~np.all(np.isfinite(want.reshape(n, 16)), axis=1)] = np.eye(4)
        got = skel.bone_locals(bs)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


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


def test_few_keys_clip_groups_match_the_numpy_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """A group built by the walk holds the numpy way's arrays (so either cut may use it)."""
    rng = np.random.default_rng(53)
    for _ in range(200):
        tracks = _random_tracks(rng)
        chs = anim.track_channels(tracks, list(range(len(tracks))),
                                [str(i) for i in range(len(tracks))], Context(None))
        monkeypatch.setattr(anim, "_SMALL_CUT", 1 << 30)
        small = anim.Clipper(chs).groups
        monkeypatch.setattr(anim, "_SMALL_CUT", -1)
        for a, b in zip(small, anim.Clipper(chs).groups, strict=True):
            assert (a.index, a.rotation) == (b.index, b.rotation)
            for name in ("times", "values", "starts", "ends", "seg"):
                assert_same_tree(getattr(a, name), getattr(b, name))
