"""The bounded Reader and the patching Writer."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from gamemesh.binary import Reader, Writer
from gamemesh.errors import BadMagicError, CorruptDataError, FormatError, TruncatedError


def test_scalars_and_field_paths() -> None:
    data = struct.pack("<IhBf", 7, -2, 255, 1.5)
    r = Reader(data, "demo")
    assert (r.u32(), r.i16(), r.u8(), r.f32()) == (7, -2, 255, 1.5)
    assert r.at_end()
    r.seek(0)
    with r.field("header"), r.field("bones[3]"), pytest.raises(TruncatedError) as e:
        r.skip(4)
        r.u64("offset")
    err = e.value
    assert err.format == "demo" and err.offset == 4 and err.field == "header.bones[3].offset"
    assert str(err) == ("demo: at 0x4 (header.bones[3].offset): unexpected end of data, "
                        "expected 8 bytes, got 7 left")


def test_message_shape() -> None:
    err = CorruptDataError("papa", offset=0x1A4, field="header.num_meshes",
                           expected="<= 4096", actual=4294967295)
    assert str(err) == "papa: at 0x1A4 (header.num_meshes): expected <= 4096, got 4294967295"
    assert isinstance(err, ValueError) and isinstance(err, FormatError)


def test_count_is_checked_before_allocation() -> None:
    r = Reader(b"\xff\xff\xff\xff" + b"\0" * 2044, "demo")
    n = r.u32("num_vertices")
    with pytest.raises(TruncatedError) as e:
        r.array("<f4", n, "vertices")
    assert e.value.field == "vertices" and "4294967295 x 4 bytes" in str(e.value)
    with pytest.raises(CorruptDataError):
        r.count(10, 1, "n", limit=5)
    with pytest.raises(CorruptDataError):
        r.count(-1, 1, "n")


def test_arrays_are_views_with_structured_dtypes() -> None:
    dt = np.dtype([("pos", "<f4", 3), ("bone", "<u2")])
    rec = np.zeros(3, dtype=dt)
    rec["pos"] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    rec["bone"] = [5, 6, 7]
    r = Reader(b"\xAA" + rec.tobytes(), "demo")
    r.skip(1)
    got = r.array(dt, 3)
    assert got["bone"].tolist() == [5, 6, 7] and got["pos"][2].tolist() == [7, 8, 9]
    assert not got.flags.writeable


def test_windows_bound_reads() -> None:
    r = Reader(bytes(range(16)), "demo")
    sub = r.sub(4, "chunk")
    assert r.tell() == 4 and sub.bytes(4) == b"\0\1\2\3"
    with pytest.raises(TruncatedError):
        sub.u8()
    w = r.window(8, 4)
    assert w.u32() == struct.unpack("<I", bytes([8, 9, 10, 11]))[0]
    with pytest.raises(TruncatedError):
        r.window(14, 4)
    with pytest.raises(CorruptDataError):
        r.seek(17)


def test_magic() -> None:
    with pytest.raises(BadMagicError) as e:
        Reader(b"PAPX", "papa").magic(b"apaP")
    assert "expected b'apaP', got b'PAPX'" in str(e.value)


def test_writer_align_reserve_patch() -> None:
    w = Writer()
    w.u8(1)
    slot = w.reserve("u32")
    w.align(8)
    assert w.tell() == 8
    w.write(b"abc")
    w.align(4, b"\xcc")
    w.patch(slot, 0xDEADBEEF)
    assert w.getvalue() == b"\x01\xef\xbe\xad\xde\0\0\0abc\xcc"
    w.array(np.arange(3), "<u2")
    assert w.getvalue()[-6:] == b"\0\0\1\0\2\0"


def test_names_strings_and_fixed_records() -> None:
    data = b"root\0" + struct.pack("<I", 3) + b"abc" + struct.pack("<hIhI", -1, 2, 5, 6) + b"x"
    for buf in (data, bytearray(data), memoryview(data)):
        r = Reader(buf, "demo")
        assert r.cstr("name") == b"root" and r.tell() == 5
        assert r.lstr("label") == b"abc"
        assert r.records(struct.Struct("<hI"), 2, "count") == [(-1, 2), (5, 6)]
        assert r.raw == data and r.remaining() == 1
    r = Reader(data, "demo", end=4)
    with r.field("bones[0]"), pytest.raises(TruncatedError) as e:
        r.cstr("name")
    assert e.value.field == "bones[0].name" and e.value.offset == 0
    r = Reader(struct.pack("<I", 9) + b"abc", "demo")
    with pytest.raises(TruncatedError, match="9 x 1 bytes"):
        r.lstr("label")
    r = Reader(b"\0" * 10, "demo")
    with pytest.raises(TruncatedError, match="2 x 6 bytes"):
        r.records(struct.Struct("<hI"), 2, "count")
    r.need(10)
    with pytest.raises(TruncatedError, match="11 bytes, got 10 left"):
        r.need(11, "block")
