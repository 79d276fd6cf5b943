"""PET's vectorized paths against plain reference versions (timing-independent): the vertex and
bone record finders, the corner dedup of to_scene and the shared folder listings."""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image as PILImage
from tests.helpers import assert_same_tree, pet_test_files

import gamemesh
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context

read_mod = importlib.import_module("gamemesh.formats.pet.read")
ts = importlib.import_module("gamemesh.formats.pet.to_scene")
anim = importlib.import_module("gamemesh.formats.pet.animation")
corner_mod = importlib.import_module("gamemesh.formats.pet.corners")
infl = importlib.import_module("gamemesh.formats.pet.influences")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
files_mod = importlib.import_module("gamemesh.formats.pet.files")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"


def _vertex_windows(seed: int, trials: int, most: int
                    ) -> Iterator[tuple[npt.NDArray[np.uint8], int, int, int]]:
    """Random vertex sections (buffer, first candidate, last candidate, end) over three byte
    alphabets: any byte, the weights and ids that end walks (255, 0xFE escapes), and tiny
    weights that make long walks."""
    rng = np.random.default_rng(seed)
    alphabets = [np.arange(256), np.array([0, 1, 5, 100, 200, 254, 255, 0xFE, 0xFF]),
                 np.array([0, 1, 2, 3, 0xFE])]
    for trial in range(trials):
        n = int(rng.integers(1, most))
        buf = rng.choice(alphabets[trial % 3], n).astype(np.uint8)
        s0 = int(rng.integers(0, max(1, n // 4)))
        end = int(rng.integers(s0, n + 1))
        lim = int(rng.integers(s0, end + 1))
        yield buf, s0, lim - (lim - s0) % 2, end


@pytest.mark.parametrize("tail", [1 << 14, 0])  # long walks' counts at once, or one by one
def test_vertex_next_of_every_offset_matches_the_walker(monkeypatch: pytest.MonkeyPatch,
                                                       tail: int) -> None:
    """The prefix-sum finder gives the walker's answer for every offset: runs past the
    section (-1), more than 32 pairs (-2) and escaped ids included."""
    monkeypatch.setattr(read_mod, "_TAIL", tail)
    for trial, (buf, s0, lim, end) in enumerate(_vertex_windows(3, 150, 2000)):
        for head in (12, 16):
            cand = np.arange(s0, lim + 1, 2, dtype=np.int32)
            want = read_mod._vertex_next(buf, cand, end, head, read_mod._FAST_PAIRS)
            got = read_mod._next_of_offsets(buf, s0, lim, end, head)
            assert np.array_equal(want, got), (trial, head)


def _finder_links(buf: Any, s0: int, lim: int, end: int, head: int) -> tuple[Any, Any]:
    """The prefix-sum finder's next record starts (no escapes) as offsets, and as the lazy
    links give them: offset slots, d for none, d + 1 past the end, d + 2 beyond the window."""
    nxt = read_mod._next_of_offsets(buf, s0, lim, end, head, escapes=False)
    d = len(nxt)
    want = np.where(nxt == -1, d, np.where(nxt == -2, d + 1, (nxt - s0) // 2))
    return nxt, np.where((nxt >= 0) & (want >= d), d + 2, want)

@pytest.mark.parametrize("chunk", [1 << 18, 7, 1])
def test_lazy_links_match_the_offsets_finder(monkeypatch: pytest.MonkeyPatch,
                                             chunk: int) -> None:
    """The chunked links (no escapes) are the prefix-sum finder's answers, as links."""
    monkeypatch.setattr(read_mod, "_CHUNK", chunk)
    for trial, (buf, s0, lim, end) in enumerate(_vertex_windows(31, 100, 1500)):
        for head in (12, 16):
            _, want = _finder_links(buf, s0, lim, end, head)
            d = len(want)
            got = read_mod._lazy_links(buf, s0, lim, end, head)
            assert np.array_equal(got[:d], want), (trial, head)
            assert got[d:].tolist() == [d, d + 1, d + 2]


@pytest.mark.parametrize("counted", [2, 4, 33])  # the first rank whose walks are counted
def test_lazy_links_of_long_walks_match_the_offsets_finder(monkeypatch: pytest.MonkeyPatch,
                                                           counted: int) -> None:
    """Walks over tiny weights (many pairs: the binary search of the running sum, and more
    than 32 pairs) give the prefix-sum finder's links."""
    monkeypatch.setattr(read_mod, "_COUNTED", counted)
    rng = np.random.default_rng(41)
    seen_over = seen_long = 0
    for trial in range(120):
        n = int(rng.integers(50, 3000))
        buf = rng.choice(np.array([0, 1, 2, 255, 0xFE]), n,
                         p=[0.6, 0.25, 0.1, 0.03, 0.02]).astype(np.uint8)
        if trial % 3 == 0:
            buf[:] = 0
        s0 = int(rng.integers(0, n // 4))
        end = int(rng.integers(s0, n + 1))
        lim = int(rng.integers(s0, end + 1))
        lim -= (lim - s0) % 2
        for head in (12, 16):
            nxt, want = _finder_links(buf, s0, lim, end, head)
            d = len(want)
            got = read_mod._lazy_links(buf, s0, lim, end, head)
            assert np.array_equal(got[:d], want), (trial, head)
            seen_over += int((want == d + 1).any())
            seen_long += int(((nxt - s0) // 2 - np.arange(d) - head // 2 > 8).any())
    assert seen_over and seen_long


def test_bone_records_found_at_once_match_the_record_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    docs = pet_test_files()
    fast = [read_mod.read(d, Context(Path(n), {})) for d, n in docs]
    monkeypatch.setattr(read_mod, "_bones_fast", lambda *a: False)
    for (d, n), doc in zip(docs, fast, strict=True):
        assert_same_tree(doc, read_mod.read(d, Context(Path(n), {})))


def test_small_record_walks_match_the_vectorized_finders(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Up to ``_SMALL`` bones and vertices are walked one by one: the same documents (and the
    same errors) as the vectorized finders, on the fixtures, escaped ids, and mutated and cut
    copies of them."""
    docs = pet_test_files()
    rng = np.random.default_rng(5)
    cases = list(docs)
    for d, n in docs:
        for _ in range(12):
            m = bytearray(d)
            at = rng.integers(0, len(m), 4)
            m[at[0]] = int(rng.integers(0, 256))
            m[at[1]] = rng.choice([0, 0xFE, 0xFF, 255])
            cases.append((bytes(m), n))
        cases.append((d[:int(rng.integers(8, len(d)))], n))

    def outcome(d: bytes, n: str) -> Any:
        try:
            return read_mod.read(d, Context(Path(n), {}))
        except gamemesh.FormatError as e:
            return str(e)

    small = [outcome(d, n) for d, n in cases]
    monkeypatch.setattr(read_mod, "_SMALL", 0)
    for (d, n), got in zip(cases, small, strict=True):
        want = outcome(d, n)
        if isinstance(want, str):
            assert got == want
        else:
            assert_same_tree(got, want)


def test_folder_listings_follow_changes(tmp_path: Path) -> None:
    """A listing is reused while the folder is unchanged, and a texture added later is
    found (the folder's mtime changes); a folder changed within 2 s is not cached."""
    folder = tmp_path / "m"
    folder.mkdir()
    model = folder / "a.pet"
    model.write_bytes(write(build("pet", (1, 3))))
    old = time.time() - 60
    os.utime(folder, (old, old))
    s1 = gamemesh.load(model)
    assert files_mod._LISTINGS.get((folder, str(folder))) is not None
    assert any(n.code == "pet.texture_missing" and "item1_01" in n.message for n in s1.notes)
    rgb = np.zeros((8, 8, 3), np.uint8)
    PILImage.fromarray(rgb).save(folder / "item1_01.jpg", quality=95)
    s2 = gamemesh.load(model)
    assert not any(n.code == "pet.texture_missing" and "item1_01" in n.message
                   for n in s2.notes)
    assert files_mod._LISTINGS.get((folder, str(folder))) is None  # changed just now: not kept


def test_plain_parse_matches_the_rank_walk() -> None:
    """Records placed without escapes parse, from their lengths, to the general parse's fields
    (values; the plain parse's influence fields are slot-major); a record with an escaped id
    gives None (the exact search and general parse then decide)."""
    rng = np.random.default_rng(37)
    seen_none = seen_plain = 0
    for trial in range(40):
        escape = trial % 4 == 0
        doc = build("pet" if trial % 2 else "mpet", (1, 3), escape=escape,
                    rings=int(rng.integers(2, 30)), sides=int(rng.integers(3, 30)))
        data = write(doc)
        r = read_mod.Reader(data, "pet")
        spans, _ = read_mod._split(r)
        start, end = next((s, e) for f, s, e in spans if f == b"MESH")
        sub = r.window(start, end - start)
        head = 12 if trial % 2 else 16
        if head == 16:
            sub.skip(sub.u8("nskin") * read_mod.SKIN_DT.itemsize)
        nvert = sub.u32("nvert")
        buf = np.frombuffer(sub._view, np.uint8)
        starts = read_mod._vertex_starts(sub, buf, nvert, head)
        want = read_mod._parse_vertices(buf, starts, head)
        got = read_mod._parse_plain(buf, starts, head)
        if got is None:
            assert want["wide"].any()
            seen_none += 1
            continue
        seen_plain += 1
        assert sorted(got) == sorted(want)
        for key, value in want.items():
            assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
            assert np.array_equal(got[key], value), key
    assert seen_none and seen_plain
