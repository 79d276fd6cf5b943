"""PET bad input: cut files and sections, seeded mutations, kept crash inputs, records that run
past their section and hostile sections that must be refused quickly, always as a FormatError."""

from __future__ import annotations

import contextlib

import pytest
from tests.pet_fixtures import KINDS, b18_expected, ctx, fixture

from gamemesh.errors import FormatError, TruncatedError
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.read import read
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import section_bytes


def test_weights_that_never_reach_255_are_an_error() -> None:
    data = bytearray(b18_expected())
    # Vertex 2's weight 255 -> 1: its pairs then run into the polygon data and past the end.
    at = 0x8F + 4 + 2 * 16 + 12
    assert data[at] == 0xFF
    for w in (0, 1):
        data[at] = w
        with pytest.raises(FormatError):
            read(bytes(data), ctx("w.pet"))
    # Pairs that run to the end of the section: an error naming the vertex, never a hang.
    payload = (1).to_bytes(4, "little") + b"\0" * 12 + b"\x00\x00" * 3000
    mesh = b"MESH" + len(payload).to_bytes(4, "little") + payload
    with pytest.raises(TruncatedError, match=r"vertices\[0\]\.weights"):
        read(mesh, ctx("w.pet"))


def test_truncations_fail_cleanly() -> None:
    from tests.helpers import assert_truncations_fail_cleanly

    total = 0
    for kind in KINDS:
        total += assert_truncations_fail_cleanly(SPEC, fixture(kind, (1, 3)))
    total += assert_truncations_fail_cleanly(SPEC, fixture("mpet", (1, 0), escape=True))
    total += assert_truncations_fail_cleanly(SPEC, b18_expected())
    assert total > 2000


@pytest.mark.parametrize(("kind", "version", "escape"),
                         [("pet", (1, 3), True), ("mpet", (1, 0), True), ("apet", (1, 1), False),
                          ("mpet", (1, 2), False)])
def test_section_truncations_fail_cleanly(kind: str, version: tuple[int, int],
                                          escape: bool) -> None:
    """A cut file fails at the container (the last length runs past the end); so also cut
    each section's payload with its length fixed up, to reach every section reader."""
    from tests.helpers import parse_raw

    doc = build(kind, version, escape=escape)
    payloads = [(s.fourcc, section_bytes(s.body, version)) for s in doc.sections]
    checked = 0
    for i, (_, body) in enumerate(payloads):
        step = max(1, len(body) // 150)
        for cut in range(0, len(body), step):
            out = b"".join(f + len(b).to_bytes(4, "little") + b if j != i else
                           f + cut.to_bytes(4, "little") + b[:cut]
                           for j, (f, b) in enumerate(payloads))
            with contextlib.suppress(FormatError):
                parse_raw(SPEC, out)
            checked += 1
    assert checked > 300


@pytest.mark.parametrize(("kind", "version", "seed", "count"),
                         [("pet", (1, 3), 1, 2000), ("mpet", (1, 2), 2, 600),
                          ("pet", (1, 0), 3, 600)])
def test_mutations_fail_cleanly(kind: str, version: tuple[int, int], seed: int,
                                count: int) -> None:
    from tests.helpers import assert_mutations_fail_cleanly

    # 2000 on the richest file; the other layouts (skin list, 1.0) get fewer to keep the
    # suite fast (each mutation is read and converted to a scene, ~10 ms).
    assert_mutations_fail_cleanly(SPEC, fixture(kind, version), count=count, seed=seed)


def test_crash_inputs_replay_cleanly() -> None:
    from tests.helpers import replay_crashes

    replay_crashes(SPEC)


def test_empty_and_garbage_input() -> None:
    for data in (b"", b"VERS", b"VERS\xff\xff\xff\xff", b"MESH\x04\0\0\0\xff\xff\xff\xff"):
        with pytest.raises(FormatError):
            SPEC.to_scene(read(data, ctx("x.pet")), ctx("x.pet"))
    with pytest.raises(TruncatedError):
        read(b"BONE\x10\0\0\0\x01", ctx("x.pet"))


def _with_bone_section(payload: bytes) -> bytes:
    """tube_10.pet with its BONE section's payload replaced (sections: FourCC, u32 length)."""
    from tests.pet_fixtures import FIXTURES

    data = (FIXTURES / "tube_10.pet").read_bytes()
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


@pytest.mark.parametrize(("payload", "bones"), [
    (bytes([200]) + b"A" * 65000, None),  # no NUL: no record anywhere
    (bytes([200]) + b"A" * 64000 + b"\0", None),  # one NUL, at the end
    (bytes([0, 44, 1]) + (b"\xfe" * 200 + b"\0") * 300, None),  # long names, no ids
    (bytes([120]) + (b"B" * 500 + b"\0\x01" + b"\0" * 52) * 120, 120),  # fits, long names
], ids=["no-nul", "nul-at-end", "fe-names", "long-names"])
def test_hostile_bone_sections_are_read_or_refused_quickly(payload: bytes,
                                                           bones: int | None) -> None:
    """A 64 KiB BONE section that is not a run of short records costs one pass over it: the
    load well under a second of CPU (a name pattern once took ~20 s on the first one), the
    error naming the bone and field, or the bones read."""
    import time

    import gamemesh

    t0 = time.process_time()
    try:
        got: object = gamemesh.load(_with_bone_section(payload), format="pet").summary()["bones"]
    except FormatError as e:
        got = e.field
    assert time.process_time() - t0 < 1.0
    assert got == (bones if bones is not None else got)
    if bones is None:
        assert isinstance(got, str) and got.startswith("BONE.bones[")


def test_one_vertex_with_a_huge_pair_count_is_refused_quickly() -> None:
    """Thousands of vertices, one of them with ~100k zero-weight pairs (read record by
    record): refused as a FormatError naming the vertex, not a table of vertices x pairs."""
    import time

    vertex = bytes(12) + b"\xff\x01\0\0"  # one pair of weight 255, then the pad
    big = bytes(12) + b"\x00\x01" * 100_000 + b"\xff\x01"
    payload = (5001).to_bytes(4, "little") + vertex * 2500 + big + vertex * 2500
    payload += (0).to_bytes(4, "little")
    data = b"MESH" + len(payload).to_bytes(4, "little") + payload
    t0 = time.process_time()
    with pytest.raises(FormatError, match=r"vertices\[2500\]\.weights"):
        read(data, ctx("h.pet"))
    assert time.process_time() - t0 < 2.0
