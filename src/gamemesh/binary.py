"""Bounded binary reading and writing shared by every format.

:class:`Reader` checks every read against the bytes that are left *before* it allocates anything,
tracks a field path for messages (``with r.field("bones[3]")``) and returns bulk records as numpy
views over the input through structured dtypes. :class:`Writer` appends, aligns, and reserves slots
that are patched once the value is known (offsets, sizes, counts).
"""

from __future__ import annotations

import builtins
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import BadMagicError, CorruptDataError, FormatError, TruncatedError, hex_offset

__all__ = ["Reader", "Slot", "Writer"]

_SCALARS = {
    "u8": struct.Struct("<B"),
    "i8": struct.Struct("<b"),
    "u16": struct.Struct("<H"),
    "i16": struct.Struct("<h"),
    "u32": struct.Struct("<I"),
    "i32": struct.Struct("<i"),
    "u64": struct.Struct("<Q"),
    "i64": struct.Struct("<q"),
    "f32": struct.Struct("<f"),
    "f64": struct.Struct("<d"),
}
_I8, _U16, _I16, _U32, _I32, _U64, _I64, _F32, _F64 = (
    _SCALARS[k].unpack_from for k in ("i8", "u16", "i16", "u32", "i32", "u64", "i64", "f32", "f64"))


class Reader:
    """A cursor over immutable bytes that never reads past ``end``.

    ``fmt`` names the format in error messages. ``start``/``end`` bound a window (a chunk or a
    section): reads outside it raise :class:`TruncatedError` even when the file goes on. The
    field path (``with r.field(...)``) is a list of names joined only when an error is raised;
    scalars go through precompiled structs with one bound check each, so that a format reads
    its small records through the Reader rather than beside it.
    """

    __slots__ = ("_fields", "_raw", "_view", "end", "fmt", "pos", "start")

    def __init__(self, data: bytes | bytearray | memoryview, fmt: str,
                 start: int = 0, end: int | None = None) -> None:
        self._view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
        # The bytes themselves where the input is bytes: ``find`` for NUL-terminated names.
        self._raw: builtins.bytes | None = data if isinstance(data, bytes) else None
        self.fmt = fmt
        self.start = start
        self.end = len(self._view) if end is None else end
        self.pos = start
        self._fields: list[str] = []

    @property
    def data(self) -> memoryview:
        """The whole buffer (read-only), for numpy views of bulk records; the window is
        ``start``..``end``."""
        return self._view

    @property
    def raw(self) -> builtins.bytes:
        """The whole buffer as bytes (the input itself when it is bytes), for ``find`` and
        plain indexing in a format's walk over small variable-size records."""
        if self._raw is None:
            self._raw = bytes(self._view)
        return self._raw

    def _child(self, start: int, end: int, fields: list[str]) -> Reader:
        child = Reader.__new__(Reader)
        child._view, child._raw, child.fmt = self._view, self._raw, self.fmt
        child.start, child.end, child.pos, child._fields = start, end, start, fields
        return child

    # -- position ---------------------------------------------------------------------------
    def tell(self) -> int:
        return self.pos

    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def seek(self, pos: int, field: str | None = None) -> None:
        if not self.start <= pos <= self.end:
            raise self.corrupt(message="offset out of range", expected=f"{self.start}..{self.end}",
                               actual=pos, field=field)
        self.pos = pos

    def skip(self, n: int, field: str | None = None) -> None:
        self.need(n, field)
        self.pos += n

    def align(self, n: int) -> None:
        """Skip to the next multiple of ``n`` (clamped to the end: a last gap may be cut)."""
        self.pos = min(self.end, (self.pos + n - 1) // n * n)

    def sub(self, length: int, field: str | None = None) -> Reader:
        """A reader over the next ``length`` bytes; the parent skips past them."""
        with self.field(field) if field else _NullContext():
            self.need(length)
        child = self._child(self.pos, self.pos + length,
                            [*self._fields, field] if field else list(self._fields))
        self.pos += length
        return child

    def window(self, offset: int, length: int | None = None, field: str | None = None
               ) -> Reader:
        """A reader over ``[offset, offset + length)`` of the same data, without moving this one;
        ``field`` names what it reads in its errors (under this reader's path)."""
        end = self.end if length is None else offset + length
        if offset < 0 or end > self.end or offset > end:
            raise self.truncated(expected=f"range within {hex_offset(self.end)}",
                                 actual=f"{hex_offset(offset)}..{hex_offset(end)}")
        return self._child(offset, end,
                           [*self._fields, field] if field else list(self._fields))

    # -- field paths -------------------------------------------------------------------------
    def field(self, name: str) -> _Field:
        """``with r.field("bones[3]"):`` names what is read inside in error messages. A plain
        class, not a generator context manager: readers enter one per record, and this is
        several times cheaper."""
        return _Field(self._fields, name)

    def path(self, leaf: str | None = None) -> str:
        parts = [*self._fields, leaf] if leaf else self._fields
        out = ""
        for p in parts:
            out += p if (not out or p.startswith("[")) else "." + p
        return out

    # -- errors ------------------------------------------------------------------------------
    def _err(self, cls: type[FormatError], message: str | None, expected: Any, actual: Any,
             field: str | None, offset: int | None) -> FormatError:
        return cls(self.fmt, message, offset=self.pos if offset is None else offset,
                   field=self.path(field) or None, expected=expected, actual=actual)

    def truncated(self, expected: Any = None, actual: Any = None, field: str | None = None,
                  offset: int | None = None) -> FormatError:
        return self._err(TruncatedError, "unexpected end of data", expected, actual, field, offset)

    def corrupt(self, message: str | None = None, *, expected: Any = None, actual: Any = None,
                field: str | None = None, offset: int | None = None) -> FormatError:
        return self._err(CorruptDataError, message, expected, actual, field, offset)

    def error(self, cls: type[FormatError], message: str | None = None, *, expected: Any = None,
              actual: Any = None, field: str | None = None,
              offset: int | None = None) -> FormatError:
        return self._err(cls, message, expected, actual, field, offset)

    def need(self, n: int, field: str | None = None) -> None:
        """Raise :class:`TruncatedError` unless ``n`` more bytes are inside the window."""
        if n < 0 or self.pos + n > self.end:
            raise self._short(n, field)

    def _short(self, n: int, field: str | None) -> FormatError:
        left = max(0, self.end - self.pos)
        return self.truncated(expected=f"{n} bytes", actual=f"{left} left", field=field)

    # -- scalars -----------------------------------------------------------------------------
    def _scalar(self, unpack: Any, size: int, field: str | None) -> Any:
        pos = self.pos
        if pos + size > self.end:
            raise self._short(size, field)
        self.pos = pos + size
        return unpack(self._view, pos)[0]

    def u8(self, field: str | None = None) -> int:
        pos = self.pos
        if pos >= self.end:
            raise self._short(1, field)
        self.pos = pos + 1
        return self._view[pos]

    def i8(self, field: str | None = None) -> int:
        return int(self._scalar(_I8, 1, field))

    def u16(self, field: str | None = None) -> int:
        return int(self._scalar(_U16, 2, field))

    def i16(self, field: str | None = None) -> int:
        return int(self._scalar(_I16, 2, field))

    def u32(self, field: str | None = None) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self._short(4, field)
        self.pos = pos + 4
        return int(_U32(self._view, pos)[0])

    def i32(self, field: str | None = None) -> int:
        return int(self._scalar(_I32, 4, field))

    def u64(self, field: str | None = None) -> int:
        return int(self._scalar(_U64, 8, field))

    def i64(self, field: str | None = None) -> int:
        return int(self._scalar(_I64, 8, field))

    def f32(self, field: str | None = None) -> float:
        return float(self._scalar(_F32, 4, field))

    def f64(self, field: str | None = None) -> float:
        return float(self._scalar(_F64, 8, field))

    def unpack(self, st: struct.Struct, field: str | None = None) -> tuple[Any, ...]:
        """Several fields at once through a precompiled little-endian struct."""
        pos = self.pos
        if pos + st.size > self.end:
            raise self._short(st.size, field)
        self.pos = pos + st.size
        return st.unpack_from(self._view, pos)

    def records(self, st: struct.Struct, count: int, field: str | None = None
                ) -> list[tuple[Any, ...]]:
        """``count`` fixed-size records through one ``struct.iter_unpack`` (the count checked
        first), as tuples."""
        self.count(count, st.size, field)
        pos = self.pos
        self.pos = pos + st.size * count
        return list(st.iter_unpack(self._view[pos:self.pos]))

    def bytes(self, n: int, field: str | None = None) -> bytes:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise self._short(n, field)
        self.pos = pos + n
        return bytes(self._view[pos:pos + n])

    def rest(self) -> builtins.bytes:
        return self.bytes(self.end - self.pos)

    def peek(self, n: int) -> builtins.bytes:
        return bytes(self._view[self.pos:min(self.end, self.pos + n)])

    def magic(self, expected: builtins.bytes, field: str = "magic") -> builtins.bytes:
        got = self.peek(len(expected))
        if got != expected:
            raise self._err(BadMagicError, None, repr(expected), repr(got), field, None)
        self.pos += len(expected)
        return got

    def cstr(self, field: str | None = None) -> builtins.bytes:
        """Bytes up to a NUL, which is consumed; the NUL must come before the window ends."""
        raw, pos = self.raw, self.pos
        k = raw.find(b"\0", pos, self.end)
        if k < 0:
            raise self.truncated(expected="a NUL-terminated name", actual="no NUL", field=field)
        self.pos = k + 1
        return raw[pos:k]

    def lstr(self, field: str | None = None) -> builtins.bytes:
        """A u32 length, then that many bytes."""
        n = self.u32(field)
        self.count(n, 1, field)
        return self.bytes(n, field)

    # -- counts and arrays -------------------------------------------------------------------
    def count(self, n: int, item_size: int, field: str | None = None,
              limit: int | None = None) -> int:
        """Check that ``n`` items of ``item_size`` bytes can still follow (and ``n <= limit``).

        Call this on every count read from the file before looping or allocating with it: a
        count of four billion in a 2 KB file must be an error, never an allocation.
        """
        if n < 0:
            raise self.corrupt(expected=">= 0", actual=n, field=field)
        if limit is not None and n > limit:
            raise self.corrupt(expected=f"<= {limit}", actual=n, field=field)
        if n * max(item_size, 0) > self.end - self.pos:
            raise self.truncated(expected=f"{n} x {item_size} bytes",
                                 actual=f"{self.end - self.pos} left", field=field)
        return n

    def array(self, dtype: npt.DTypeLike, count: int, field: str | None = None) -> npt.NDArray[Any]:
        """``count`` records of ``dtype`` as a read-only numpy view (no copy)."""
        dt = np.dtype(dtype)
        self.count(count, dt.itemsize, field)
        a = np.frombuffer(self._view, dtype=dt, count=count, offset=self.pos)
        self.pos += dt.itemsize * count
        return a

    def cstring(self, size: int, field: str | None = None, encoding: str = "ascii") -> str:
        """A fixed-size NUL-padded string."""
        raw = self.bytes(size, field)
        return raw.split(b"\0", 1)[0].decode(encoding, errors="replace")


class _Field:
    __slots__ = ("fields", "name")

    def __init__(self, fields: list[str], name: str) -> None:
        self.fields, self.name = fields, name

    def __enter__(self) -> None:
        self.fields.append(self.name)

    def __exit__(self, *exc: object) -> None:
        self.fields.pop()


class _NullContext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class Slot:
    """A reserved place in a :class:`Writer` to be patched once its value is known."""

    __slots__ = ("fmt", "pos")

    def __init__(self, pos: int, fmt: struct.Struct) -> None:
        self.pos = pos
        self.fmt = fmt


class Writer:
    """An append-only byte buffer with alignment and patchable slots."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def tell(self) -> int:
        return len(self.buf)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        pos = len(self.buf)
        self.buf += data
        return pos

    def pad(self, n: int, fill: int = 0) -> None:
        self.buf += bytes([fill]) * n

    def align(self, n: int, fill: bytes = b"\0") -> None:
        """Pad with ``fill`` (repeated and cut) to the next multiple of ``n``."""
        gap = (-len(self.buf)) % n
        if gap:
            self.buf += (fill * gap)[:gap]

    def _put(self, kind: str, v: Any) -> None:
        self.buf += _SCALARS[kind].pack(v)

    def u8(self, v: int) -> None:
        self._put("u8", v)

    def i8(self, v: int) -> None:
        self._put("i8", v)

    def u16(self, v: int) -> None:
        self._put("u16", v)

    def i16(self, v: int) -> None:
        self._put("i16", v)

    def u32(self, v: int) -> None:
        self._put("u32", v)

    def i32(self, v: int) -> None:
        self._put("i32", v)

    def u64(self, v: int) -> None:
        self._put("u64", v)

    def i64(self, v: int) -> None:
        self._put("i64", v)

    def f32(self, v: float) -> None:
        self._put("f32", v)

    def f64(self, v: float) -> None:
        self._put("f64", v)

    def pack(self, st: struct.Struct, *values: Any) -> None:
        self.buf += st.pack(*values)

    def array(self, a: npt.NDArray[Any], dtype: npt.DTypeLike | None = None) -> int:
        """Append an array's bytes (converted to ``dtype`` first when given)."""
        arr = np.ascontiguousarray(a if dtype is None else np.asarray(a).astype(dtype, copy=False))
        return self.write(arr.tobytes())

    def cstring(self, s: str | bytes, size: int, encoding: str = "ascii") -> None:
        raw = s.encode(encoding) if isinstance(s, str) else s
        if len(raw) > size:
            raise CorruptDataError(format="writer", message="string too long",
                                   expected=f"<= {size} bytes", actual=len(raw))
        self.buf += raw + b"\0" * (size - len(raw))

    def reserve(self, kind: str | struct.Struct) -> Slot:
        st = _SCALARS[kind] if isinstance(kind, str) else kind
        slot = Slot(len(self.buf), st)
        self.buf += b"\0" * st.size
        return slot

    def patch(self, slot: Slot, *values: Any) -> None:
        slot.fmt.pack_into(self.buf, slot.pos, *values)

    def getvalue(self) -> bytes:
        return bytes(self.buf)
