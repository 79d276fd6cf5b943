"""PET BONE records found by one regular-expression scan against the record-by-record walk
and the Reader's field-by-field reader, bit for bit on random sections (timing-independent)."""

from __future__ import annotations

import importlib
import time
from typing import Any

import numpy as np
import pytest
from tests.helpers import PET_FIXTURES, assert_same_outcome

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
        assert_same_outcome(got, _outcome(*case))


def test_bone_sections_read_straight_from_the_bytes_match_the_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """BONE sections read without a Reader (when the kind's layout uses them up exactly):
    the documents, notes and errors of the Reader's way (which retries the other layout and
    keeps bytes after the records), for every kind and record layout, wide counts, bytes
    after the records, changed and cut sections."""
    from pathlib import Path

    from gamemesh.registry import Context

    rng = np.random.default_rng(103)
    cases = []
    for trial in range(900):
        version = [(1, 0), (1, 2), (1, 3)][trial % 3]
        layout_apet = trial % 4 == 0
        kind = "apet" if (layout_apet if trial % 7 else not layout_apet) else \
            str(rng.choice(["pet", "bpet", "mpet"]))
        tail = 0 if layout_apet else 48 + (4 if version >= (1, 3) else 0)
        body = _section(rng, int(rng.choice([0, 1, 5, 40, 300])), tail)
        if trial % 2:
            body = _mutate(rng, body)
        vers = b"VERS\x04\x00\x00\x00" + bytes([version[1], version[0], 0xFE, 0xFF])
        data = vers + b"BONE" + len(body).to_bytes(4, "little") + body
        cases.append((data, f"x.{kind}"))

    def outcome(data: bytes, name: str) -> Any:
        ctx = Context(Path(name), {})
        try:
            return read_mod.read(data, ctx), [(x.code, x.message) for x in ctx.notes]
        except gamemesh.FormatError as e:
            return str(e)

    straight = read_mod._bones_at
    took = []

    def counted(*args: Any) -> Any:
        out = straight(*args)
        took.append(out is not None)
        return out

    monkeypatch.setattr(read_mod, "_bones_at", counted)
    fast = [outcome(*c) for c in cases]
    assert sum(isinstance(f, str) for f in fast) > 50
    assert sum(not isinstance(f, str) and bool(f[1]) for f in fast) > 20  # retried layouts
    assert 300 < sum(took) < len(took) - 300
    monkeypatch.setattr(read_mod, "_bones_at", lambda *a: None)
    for case, got in zip(cases, fast, strict=True):
        assert_same_outcome(got, outcome(*case))


def _with_bone_section(payload: bytes) -> bytes:
    """tube_10.pet with its BONE section's payload replaced (sections: FourCC, u32 length)."""
    data = (PET_FIXTURES / "tube_10.pet").read_bytes()
    out, pos, seen = bytearray(), 0, False
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos + 4:pos + 8], "little")
        body = data[pos + 8:pos + 8 + length]
        if data[pos:pos + 4] == b"BONE":
            body, seen = payload, True
        out += data[pos:pos + 4] + len(body).to_bytes(4, "little") + body
        pos += 8 + length
    assert seen
    return bytes(out)


@pytest.mark.parametrize("payload", [
    bytes([200]) + b"A" * 65000,  # no NUL: no record anywhere
    bytes([200]) + b"A" * 64000 + b"\0",  # one NUL, at the end
    bytes([0, 44, 1]) + (b"\xfe" * 200 + b"\0") * 300,  # 300 names too long to scan
    bytes([120]) + (b"B" * 500 + b"\0\x01" + b"\0" * 52) * 120,  # fits, but long names
], ids=["no-nul", "nul-at-end", "fe-names", "long-names"])
def test_bone_scan_of_hostile_sections_is_linear(payload: bytes) -> None:
    """A BONE section of up to 64 KiB that is not a run of short records costs a bounded
    scan: the file load and the Reader's way both well under a second of CPU (an unbounded
    name pattern took ~20 s on the first one), and the scan gives the walk's answer."""
    data = _with_bone_section(payload)
    t0 = time.process_time()
    try:
        got: Any = gamemesh.load(data, format="pet").summary()["bones"]
    except gamemesh.FormatError as e:
        got = str(e)
    for version, apet in [((1, 3), False), ((1, 2), False), ((1, 0), True)]:
        scanned = _outcome(payload, version, apet)
        assert time.process_time() - t0 < 1.0
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(read_mod, "_SCAN_BYTES", -1)
            assert_same_outcome(scanned, _outcome(payload, version, apet))
    assert got is not None


def test_long_bone_names_are_read_by_the_walk() -> None:
    """Names longer than the scan's bound (and exactly at it) read as the walk reads them,
    in a section of their own and among short ones."""
    rng = np.random.default_rng(97)
    for trial in range(200):
        tail = [0, 48, 52][trial % 3]
        version, apet = [((1, 0), True), ((1, 2), False), ((1, 3), False)][trial % 3]
        n = int(rng.integers(1, 30))
        out = bytearray([n])
        for _ in range(n):
            size = int(rng.choice([3, read_mod._NAME_SCAN, read_mod._NAME_SCAN + 1, 300]))
            out += b"N" * size + b"\0" + bytes([int(rng.integers(0, 254))])
            out += rng.integers(0, 256, tail, dtype=np.uint8).tobytes()
        got = _outcome(bytes(out), version, apet)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(read_mod, "_SCAN_BYTES", -1)
            want = _outcome(bytes(out), version, apet)
        assert not isinstance(want, str)
        assert_same_outcome(got, want)
