"""One :class:`FormatSpec` per format, and finding the right one for a file.

A format is a package under ``gamemesh.formats`` whose ``__init__`` defines ``SPEC``; the registry
discovers them, so adding a format adds one folder and nothing else. Content sniffing comes
first (``sniff(prefix)`` on the first :data:`SNIFF_BYTES` bytes), the extension second.

A ``SPEC`` names its functions with :func:`lazy` (``lazy(__name__, "read:read")``): a format's
readers and writers, and numpy under them, are imported when a call first needs that format, so
``gamemesh --version``, ``--help`` and a conversion between two formats load only what they use.

This module is also the one exception boundary: whatever slips out of a reader as
``struct.error``, ``IndexError`` and the like becomes a :class:`CorruptDataError`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import CorruptDataError, FormatError, Note

if TYPE_CHECKING:
    from .scene import Scene

SNIFF_BYTES = 64

__all__ = ["SNIFF_BYTES", "Context", "FormatSpec", "Lazy", "Option", "by_name", "for_document",
           "formats", "lazy", "sniff"]


@cache
def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Lazy:
    """A function (or a class) of a format's module, named ``"package.module:attribute"`` and
    imported on its first use: calling it calls the function, and ``isinstance(x, lazy)``
    checks against the class."""

    target: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _resolve(self.target)(*args, **kwargs)

    def __instancecheck__(self, obj: object) -> bool:
        return isinstance(obj, _resolve(self.target))

    @property
    def resolved(self) -> Any:
        return _resolve(self.target)


def lazy(package: str, name: str) -> Lazy:
    """``lazy(__name__, "read:read")`` in a format's ``__init__``: ``read`` of its ``read``
    module, imported when first called."""
    return Lazy(f"{package}.{name}")


Files = dict[str, bytes]
"""Output files by name relative to the destination's folder (the first is the main file)."""


@dataclass
class Context:
    """What a format's functions get besides the data: where it came from or goes, the user's
    options (named as the CLI flags, ``gte_scaling``), and the notes the conversion collects."""

    path: Path | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    # Files a format asks the front end to write beside the conversion (``--extract``), by
    # folder: formats never touch the disk themselves.
    extracted: list[tuple[Path, Files]] = field(default_factory=list)

    def opt(self, name: str, default: Any = None) -> Any:
        v = self.options.get(name)
        return default if v is None else v

    def note(self, code: str, message: str, level: Literal["info", "warning"] = "warning",
             covers: tuple[str, ...] = ()) -> None:
        """Record a note; ``covers`` names the scene properties it reports as lost (see
        :data:`gamemesh.scene.loss.PROPERTIES`)."""
        self.notes.append(Note(code, message, level, covers))

    @property
    def name(self) -> str:
        return self.path.name if self.path else "<bytes>"


@dataclass(frozen=True)
class Option:
    """A format option, passed to the format as ``ctx.opt(name)`` and shown on the CLI as
    ``--name-with-dashes``. ``type`` bool makes a flag; ``multiple`` collects repeated flags."""

    name: str
    help: str
    type: type = str
    default: Any = None
    choices: tuple[Any, ...] = ()
    multiple: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class FormatSpec:
    """Everything the front ends need to know about one format."""

    name: str
    title: str
    extensions: tuple[str, ...]
    sniff: Callable[[bytes], bool]
    read: Callable[[bytes, Context], Any] | None = None
    write: Callable[[Any, Context], bytes] | None = None
    to_scene: Callable[[Any, Context], Scene] | None = None
    from_scene: Callable[[Scene, Context], Any] | None = None
    # Optional overrides: whole-file-set loading (siblings) and multi-file saving.
    load: Callable[[bytes, Context], Scene] | None = None
    save: Callable[[Scene, Context], Files] | None = None
    # A native document that is several files (SPLASHPACK v20+ with its .vram sidecar):
    # ``write_native`` writes them all (the first is the main file).
    write_files: Callable[[Any, Context], Files] | None = None
    info: Callable[[Any], dict[str, Any]] | None = None
    # The other files a load of this path reads (a Papa unit's textures and animations, a
    # Pangya character's parts); batch converts such a group once, as a whole.
    siblings: Callable[[Path], list[Path]] | None = None
    document_type: type | Lazy | tuple[type | Lazy, ...] | None = None
    # For the benchmark and the demo: a native file of about ``size`` bytes.
    make_sample: Callable[[int], bytes] | None = None
    options: tuple[Option, ...] = ()
    # Outputs made straight from the native document, by destination extension
    # (".png" -> the SPLASHPACK VRAM sheet); convert uses them before the scene path.
    exports: Mapping[str, Callable[[Any, Context], Files]] = field(default_factory=dict)
    # Files that belong to a main file of this format and are not read alone, by extension,
    # with what they hold (".vram": "VRAM sidecar"): given alone, the error says so.
    sidecars: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def can_read(self) -> bool:
        return self.read is not None

    @property
    def can_write(self) -> bool:
        return self.write is not None

    @property
    def can_import(self) -> bool:
        """Native -> Scene."""
        return self.load is not None or (self.read is not None and self.to_scene is not None)

    @property
    def can_export(self) -> bool:
        """Scene -> native."""
        return self.save is not None or (self.from_scene is not None and self.write is not None)

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Values of this format's options must fit their declared type and choices; a bad one
        is the caller's mistake (a usage error), never "malformed data". Options of other
        formats pass through: one convert call carries both sides' options."""
        if not options:
            return
        for opt in self.options:
            value = options.get(opt.name)
            if value is None:
                continue
            values = value if opt.multiple and isinstance(value, list | tuple) else [value]
            for v in values:
                _check_option(self.name, opt, v)

    def capabilities(self) -> dict[str, bool]:
        return {"read": self.can_read, "write": self.can_write, "to_scene": self.can_import,
                "from_scene": self.can_export}

    # -- guarded entry points --------------------------------------------------------------
    def read_doc(self, data: bytes, ctx: Context) -> Any:
        read = self.read
        if read is None:
            msg = "this format cannot be read"
            raise FormatError(self.name, msg)
        return guarded(self.name, ctx, lambda: read(data, ctx))

    def load_scene(self, data: bytes, ctx: Context) -> Scene:
        load, to_scene = self.load, self.to_scene
        if load is not None:
            scene: Scene = guarded(self.name, ctx, lambda: load(data, ctx))
            return scene
        if to_scene is None:
            msg = "this format cannot be converted to a scene"
            raise FormatError(self.name, msg)
        doc = self.read_doc(data, ctx)
        converted: Scene = guarded(self.name, ctx, lambda: to_scene(doc, ctx))
        return converted

    def save_scene(self, scene: Scene, ctx: Context) -> Files:
        name = ctx.path.name if ctx.path else f"out{self.extensions[0]}"
        if self.save is not None:
            return self.save(scene, ctx)
        if self.from_scene is None or self.write is None:
            msg = "this format cannot be written from a scene"
            raise FormatError(self.name, msg)
        doc = self.from_scene(scene, ctx)
        return {name: self.write(doc, ctx)}


def _check_option(fmt: str, opt: Option, v: Any) -> None:
    ok_type = (isinstance(v, opt.type)
               or (opt.type is float and isinstance(v, int) and not isinstance(v, bool))
               or (opt.type is str and isinstance(v, os.PathLike)))
    if opt.type is not bool and isinstance(v, bool):
        ok_type = False
    if not ok_type:
        msg = (f"{fmt} option {opt.flag}: expected {opt.type.__name__}, got "
               f"{type(v).__name__} {v!r}")
        raise ValueError(msg)
    if opt.choices and v not in opt.choices:
        msg = f"{fmt} option {opt.flag}: expected one of {list(opt.choices)}, got {v!r}"
        raise ValueError(msg)


_INTERNAL = (struct.error, IndexError, KeyError, UnicodeDecodeError, OverflowError,
             ZeroDivisionError, RecursionError, TypeError, AttributeError, ValueError)


def guarded(fmt: str, ctx: Context, fn: Callable[[], Any]) -> Any:
    """Run a reader; anything it lets slip that is not a FormatError becomes one."""
    try:
        return fn()
    except FormatError as e:
        raise e.with_path(str(ctx.path) if ctx.path else "<bytes>") from None
    except MemoryError as e:
        err = CorruptDataError(fmt, message="the file asks for more memory than it can hold")
        raise err.with_path(ctx.name) from e
    except _INTERNAL as e:
        err = CorruptDataError(fmt, f"malformed data ({type(e).__name__}: {e})")
        raise err.with_path(str(ctx.path) if ctx.path else "<bytes>") from e


class FormatImportError(ImportError):
    """A package under ``gamemesh.formats`` does not import: a broken install or a bug, never
    something to skip quietly (a format that silently disappears reads as "unknown file
    format" to the user)."""


@cache
def _discover() -> tuple[FormatSpec, ...]:
    # By full name: the package attribute ``gamemesh.formats`` is the public function.
    pkg = importlib.import_module("gamemesh.formats")
    specs: list[FormatSpec] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        try:
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        except Exception as e:
            msg = f"format package gamemesh.formats.{info.name} does not import: " \
                  f"{type(e).__name__}: {e}"
            raise FormatImportError(msg) from e
        spec = getattr(mod, "SPEC", None)
        if not isinstance(spec, FormatSpec):
            msg = f"format package gamemesh.formats.{info.name} defines no SPEC"
            raise FormatImportError(msg)
        specs.append(spec)
    # glTF first: it is the hub every conversion goes through.
    specs.sort(key=lambda s: (s.name != "gltf", s.name))
    return tuple(specs)


def formats() -> list[FormatSpec]:
    return list(_discover())


def by_name(name: str) -> FormatSpec:
    key = name.lower().lstrip(".")
    for spec in _discover():
        if spec.name == key or key in (e.lstrip(".") for e in spec.extensions):
            return spec
    known = ", ".join(s.name for s in _discover())
    msg = f"unknown format {name!r} (known: {known})"
    raise ValueError(msg)


def by_extension(path: str | Path) -> FormatSpec | None:
    """The format whose extension ends the name (the longest one when several do)."""
    name = str(path).lower()
    simple, compound = _extension_table()
    suffix = name[name.rfind("."):] if "." in name else ""
    best = simple.get(suffix)
    for ext, spec in compound:  # other extensions, longest first
        if name.endswith(ext) and (best is None or len(ext) > len(suffix)):
            return spec
    return best


@cache
def _extension_table() -> tuple[dict[str, FormatSpec], list[tuple[str, FormatSpec]]]:
    """Single-dot extensions by name (the first format listing one wins), and the rest."""
    simple: dict[str, FormatSpec] = {}
    compound: list[tuple[str, FormatSpec]] = []
    for spec in _discover():
        for ext in spec.extensions:
            if ext.count(".") == 1 and ext.startswith("."):
                simple.setdefault(ext, spec)
            else:
                compound.append((ext, spec))
    compound.sort(key=lambda e: -len(e[0]))
    return simple, compound


def sniff(prefix: bytes, path: str | Path | None = None) -> FormatSpec | None:
    """Content first (every format's ``sniff``), then the extension. When the extension's
    format accepts the content it is the answer (among several that accept it, the extension
    decides anyway), which spares the other sniffers on every ordinary file."""
    by_ext = by_extension(path) if path is not None else None
    if by_ext is not None and _safe_sniff(by_ext, prefix):
        return by_ext
    hits = [s for s in _discover() if _safe_sniff(s, prefix)]
    if len(hits) == 1:
        return hits[0]
    if hits:
        # Several formats accept the bytes (PET kinds share one layout): the extension decides.
        return by_ext if by_ext in hits else hits[0]
    return by_ext


def unknown_format(path: Path | None) -> FormatError:
    """The error for a file no format recognises; a sidecar of some format's main file (a
    SPLASHPACK ``.vram``) is named as one, with the main file to open instead."""
    name = str(path) if path is not None else "<bytes>"
    lower = name.lower()
    for spec in _discover():
        for ext, what in spec.sidecars.items():
            if lower.endswith(ext):
                main = _main_of(Path(name[: -len(ext)]), spec)
                msg = (f"a {spec.name.upper()} {what}, not a file of its own: open its "
                       f"{main or spec.extensions[0]} (which reads it)")
                return FormatError(format="gamemesh", message=msg, path=name)
    msg = "unknown file format (no format recognises its content or extension)"
    return FormatError(format="gamemesh", message=msg, path=name)


def _main_of(stem: Path, spec: FormatSpec) -> str | None:
    """The main file beside a sidecar: ``scene.vram`` -> ``scene.splashpack`` (or a fork's
    ``scene.splashpack.vram`` -> ``scene.splashpack``), when it exists."""
    for candidate in (stem, *(stem.with_name(stem.name + e) for e in spec.extensions)):
        if candidate.suffix.lower() in spec.extensions and candidate.is_file():
            return candidate.name
    return None


def _safe_sniff(spec: FormatSpec, prefix: bytes) -> bool:
    try:
        return bool(spec.sniff(prefix))
    except Exception:  # a sniffer must never break detection of the other formats
        return False


def for_document(doc: Any) -> FormatSpec:
    for spec in _discover():
        if spec.document_type is not None and isinstance(doc, spec.document_type):  # type: ignore[arg-type]
            return spec
    msg = f"no format writes a {type(doc).__name__}"
    raise TypeError(msg)
