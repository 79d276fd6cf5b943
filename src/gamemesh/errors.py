"""Errors raised for bad input and notes recorded for what a conversion lost or assumed.

Every error a reader raises is a :class:`FormatError` carrying the format, the byte offset, the
field path, what was expected and what was found; the message always has one shape::

    papa: at 0x1A4 (header.num_meshes): expected <= 4096, got 4294967295

The library never prints and never exits; the CLI turns these into one line and an exit code.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "BadMagicError",
    "CorruptDataError",
    "FormatError",
    "LimitError",
    "Note",
    "TruncatedError",
    "UnsupportedVersionError",
    "add_new_notes",
    "hex_offset",
]


class FormatError(ValueError):
    """Input that is not a valid file of the format, or a scene the format cannot hold."""

    def __init__(
        self,
        format: str,
        message: str | None = None,
        *,
        offset: int | None = None,
        field: str | None = None,
        expected: Any = None,
        actual: Any = None,
        path: str | None = None,
    ) -> None:
        self.format = format
        self.offset = offset
        self.field = field
        self.expected = expected
        self.actual = actual
        self.detail = message
        self.path = path
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = []
        if self.offset is not None:
            where.append(f"at {hex_offset(self.offset)}")
        if self.field:
            where.append(f"({self.field})")
        head = f"{self.format}: " + (" ".join(where) + ": " if where else "")
        parts = []
        if self.detail:
            parts.append(self.detail)
        if self.expected is not None or self.actual is not None:
            parts.append(f"expected {self.expected}, got {self.actual}")
        return head + ", ".join(parts)

    def with_path(self, path: str) -> FormatError:
        """Attach the file name (kept out of the message so the CLI can prefix it once)."""
        self.path = path
        return self


def hex_offset(n: int) -> str:
    """A byte offset as messages print it: ``0x1A4``; a negative one (a position before a
    window's start, computed from a hostile field) as ``-0x8``, not ``0x-8``."""
    return f"-0x{-n:X}" if n < 0 else f"0x{n:X}"


class TruncatedError(FormatError):
    """The file ends before a field it declares."""


class BadMagicError(FormatError):
    """The file does not start with the format's signature."""


class UnsupportedVersionError(FormatError):
    """A version or variant of the format that gamemesh does not read."""


class CorruptDataError(FormatError):
    """A field holds a value no valid file has (a count, an offset, an index out of range)."""


class LimitError(FormatError):
    """A scene cannot be written in this format without losing what the format cannot hold."""


@dataclass(frozen=True)
class Note:
    """Something a conversion lost, approximated or assumed. ``code`` is ``format.what``."""

    code: str
    message: str
    level: Literal["info", "warning"] = "warning"
    # The scene properties this note already names as lost or changed ("colors", "skins",
    # "clips"...; see gamemesh.scene.loss.PROPERTIES), so the save path's loss check does not
    # warn about them a second time. Left out of to_dict when empty: the JSON stays as it was.
    covers: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        # Built by hand: dataclasses.asdict deep-copies every field (a tenth of a small GLB).
        out: dict[str, Any] = {"code": self.code, "message": self.message, "level": self.level}
        if self.covers:
            out["covers"] = list(self.covers)
        return out

    def __str__(self) -> str:
        return f"{self.level}: {self.code}: {self.message}"


def add_new_notes(notes: list[Note], more: Iterable[Note]) -> None:
    """Append the notes of ``more`` that ``notes`` does not hold yet, in order, once each. A set
    decides, not ``note in notes``: a file with thousands of pieces can bring thousands of
    notes, and the list scan made that quadratic."""
    seen = set(notes)
    for n in more:
        if n not in seen:
            seen.add(n)
            notes.append(n)
