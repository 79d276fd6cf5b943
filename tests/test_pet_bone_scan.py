"""PET BONE records found by one regular-expression scan against the record-by-record walk
and the Reader's field-by-field reader, bit for bit on random sections (timing-independent)."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from tests.helpers import assert_same_tree

import gamemesh
from gamemesh.binary import Reader
from gamemesh.formats.pet.document import BoneSection

read_mod = importlib.import_module("gamemesh.formats.pet.read")


def _section(rng: np.random.Generator, n: int, tail: int) -> bytes:
    """A BONE payload: the count (u8, or 00 + u16), then ``n`` records with random names (any
    bytes but NUL, 0xFE and 0xFF among them), ids plain, none (0xFF) or escaped (0xFE + i16),
    and ``tail`` random bytes (NULs and 0xFE among them); sometimes bytes after them."""
    out = bytearray([n] if 0 < n < 256 and rng.random() < 0.7 else [0, n & 255, n >> 8])
    for _ in range(n):
        name = rng.choice([0x41, 0x62, 0xFE, 0xFF, 0x80, 0x20], int(rng.integers(0, 12)))
        out += bytes(name.astype(np.uint8)) + b"\0"
        kind = rng.random()
        if kind < 0.2:
            out += b"\xfe" + int(rng.integers(-400, 400)).to_bytes(2, "little", signed=True)
        elif kind < 0.3:
            out += b"\xff"
        else:
            out += bytes([int(rng.integers(0, 254))])
        body = rng.integers(0, 256, tail, dtype=np.uint8)
        body[rng.random(tail) < 0.3] = rng.choice([0, 0xFE])
        out += body.tobytes()
    if rng.random() < 0.2:
        out += rng.integers(0, 256, int(rng.integers(1, 40)), dtype=np.uint8).tobytes()
    return bytes(out)


def _mutate(rng: np.random.Generator, data: bytes) -> bytes:
    m = bytearray(data)
    if len(m) > 1 and rng.random() < 0.5:
        for _ in range(int(rng.integers(1, 4))):
            m[int(rng.integers(1, len(m)))] = int(rng.choice([0, 0xFE, 0xFF, 7]))
    if rng.random() < 0.3:
        m = m[:int(rng.integers(0, len(m) + 1))]
    return bytes(m)


def _outcome(data: bytes, version: tuple[int, int], apet: bool) -> Any:
    r = Reader(data, "pet")
    try:
        out: BoneSection = read_mod._read_bones(r, version, apet)
    except gamemesh.FormatError as e:
        return str(e)
    return out, r.tell()


@pytest.mark.parametrize("way", ["walk", "reader"])
def test_bone_scan_matches_the_record_walk_and_the_reader(
        way: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names with 0xFE and 0xFF bytes, escaped, plain and missing parents, NULs and 0xFE in
    the matrices, bytes after the records, changed and cut sections, every record layout:
    the same sections, reader positions and errors."""
    rng = np.random.default_rng(83)
    cases = []
    for trial in range(1500):
        version = [(1, 0), (1, 2), (1, 3)][trial % 3]
        apet = trial % 5 == 0
        tail = 0 if apet else 48 + (4 if version >= (1, 3) else 0)
        n = int(rng.choice([0, 1, 2, 5, 40, 300]))
        data = _section(rng, n, tail)
        cases.append((_mutate(rng, data) if trial % 2 else data, version, apet))
    scanned = [_outcome(*c) for c in cases]
    assert sum(isinstance(s, str) for s in scanned) > 100
    assert sum(not isinstance(s, str) and s[0].count > 0 for s in scanned) > 500
    monkeypatch.setattr(read_mod, "_SCAN_BYTES", -1)
    if way == "reader":
        monkeypatch.setattr(read_mod, "_bones_fast", lambda *a: False)
    for case, got in zip(cases, scanned, strict=True):
        want = _outcome(*case)
        if isinstance(want, str):
            assert got == want
        else:
            assert not isinstance(got, str)
            assert_same_tree(got[0], want[0])
            assert got[1] == want[1]
