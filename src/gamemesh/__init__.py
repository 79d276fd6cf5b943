"""gamemesh: read, write and convert game 3D formats to and from glTF 2.0.

Papa (Planetary Annihilation), PMF (Piece Model Editor), SPLASHPACK (psxsplash), PBA/PTX
(Praetorians) and PET (Pangya), through one scene model in glTF conventions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    BadMagicError,
    CorruptDataError,
    FormatError,
    LimitError,
    Note,
    TruncatedError,
    UnsupportedVersionError,
)

if TYPE_CHECKING:
    from .api import Report, convert, formats, info, load, read_native, save, sniff, write_native
    from .registry import FormatSpec
    from .scene import Scene

__version__ = "0.1.0"

# The API and the scene model import numpy: they load on first use (PEP 562), so
# `gamemesh --version` and `import gamemesh.errors` stay cheap.
_LAZY = {"Report": "api", "convert": "api", "formats": "api", "info": "api", "load": "api",
         "read_native": "api", "save": "api", "sniff": "api", "write_native": "api",
         "FormatSpec": "registry", "Scene": "scene"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

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
