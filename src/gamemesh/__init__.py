"""gamemesh: read, write and convert game 3D formats to and from glTF 2.0.

Papa (Planetary Annihilation), PMF (Piece Model Editor), SPLASHPACK (psxsplash), PBA/PTX
(Praetorians) and PET (Pangya), through one scene model in glTF conventions.
"""

from __future__ import annotations

from .api import Report, convert, formats, info, load, read_native, save, sniff, write_native
from .errors import (
    BadMagicError,
    CorruptDataError,
    FormatError,
    LimitError,
    Note,
    TruncatedError,
    UnsupportedVersionError,
)
from .registry import FormatSpec
from .scene import Scene

__version__ = "0.1.0"

__all__ = [
    "BadMagicError",
    "CorruptDataError",
    "FormatError",
    "FormatSpec",
    "LimitError",
    "Note",
    "Report",
    "Scene",
    "TruncatedError",
    "UnsupportedVersionError",
    "__version__",
    "convert",
    "formats",
    "info",
    "load",
    "read_native",
    "save",
    "sniff",
    "write_native",
]
