"""The public API: sniff, read_native, write_native, load, save, convert, formats."""

from __future__ import annotations

import base64
import functools
import json
import mimetypes
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar
from urllib.parse import unquote

from . import registry
from .errors import FormatError, Note, add_new_notes
from .fileio import safe_name, write_files
from .registry import Context, FormatSpec, guarded
from .safeio import MAX_INPUT_BYTES, read_prefix, read_regular
from .scene import Scene
from .scene.loss import compare
from .textures import image_pixel_limit

Source = str | os.PathLike[str] | bytes | bytearray | memoryview | IO[bytes]
"""A path, the file's bytes, or a binary file object open for reading (``sys.stdin.buffer``,
``io.BytesIO``). Bytes and streams have no name: give ``format=`` unless the content says."""
Destination = str | os.PathLike[str] | IO[bytes]
"""A path, or a binary file object open for writing (then the format must be given)."""

# Formats that hold the whole scene model (glTF is its own format): reading every GLB back would
# cost twice its write time in batch conversions and find nothing the glTF tests do not cover.
_HUB_FORMATS = frozenset({"gltf"})

# Leading characters some formats put before a texture's name as flags (Pangya's "]" blend, "["
# mask): the name after them is the one that carries the output's stem.
_FLAGS = "[+}^]!{~@"

__all__ = ["Report", "convert", "formats", "info", "load", "read_native", "save", "sniff",
           "write_native"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _memory_refused(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A MemoryError anywhere in ``fn`` (a reader's guard turns its own into a FormatError; the
    scene's summary, a writer, the loss check have none) becomes a FormatError naming the input,
    so the CLI says it in one line instead of a traceback."""

    @functools.wraps(fn)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except MemoryError:
            pass  # raise outside the handler: its traceback holds the frames that ran out
        src = args[0] if args else kwargs.get("src")
        name = str(src) if isinstance(src, str | os.PathLike) else "<bytes>"
        msg = "not enough memory to read or convert this input"
        raise FormatError(format="gamemesh", message=msg, path=name)

    return call


@dataclass
class Report:
    """What a conversion did: formats, files written, and the notes on what was lost."""

    source: str
    destination: str
    source_format: str
    target_format: str
    outputs: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "destination": self.destination,
                "source_format": self.source_format, "target_format": self.target_format,
                "outputs": self.outputs, "notes": [n.to_dict() for n in self.notes],
                "summary": self.summary}


def formats() -> list[FormatSpec]:
    return registry.formats()


def _is_stream(obj: object) -> bool:
    return not isinstance(obj, str | os.PathLike | bytes | bytearray | memoryview)


def read_stream(stream: IO[bytes], limit: int = MAX_INPUT_BYTES) -> bytes:
    """A file object read whole, refusing more than ``limit`` bytes without holding them."""
    data = stream.read(limit + 1)
    if not isinstance(data, bytes | bytearray):
        msg = f"the input stream must be binary (open it with 'rb'), got {type(data).__name__}"
        raise TypeError(msg)
    if len(data) > limit:
        raise FormatError(format="gamemesh", message="input too large",
                          expected=f"<= {limit} bytes", actual="more",
                          path="<stream>")
    return bytes(data)


def _read_source(src: Source, max_size: int | None = None) -> tuple[bytes, Path | None]:
    """The input's bytes: only a regular file (a device, FIFO or socket is refused, never read)
    and at most ``max_size`` bytes (``max_input_size``, default 4 GiB), whatever stat says."""
    limit = MAX_INPUT_BYTES if max_size is None else max_size
    if isinstance(src, Path):  # the usual case first; Path(a Path) would parse it again
        return read_regular(src, limit), src
    if isinstance(src, bytes | bytearray | memoryview):
        if len(src) > limit:
            msg = "the input is too large (raise the limit with --max-input-size)"
            raise FormatError(format="gamemesh", message=msg, expected=f"<= {limit} bytes",
                              actual=f"{len(src)} bytes", path="<bytes>")
        return bytes(src), None
    if not isinstance(src, str | os.PathLike):
        return read_stream(src, limit), None
    path = Path(src)
    return read_regular(path, limit), path


def _spec_for(data: bytes, path: Path | None, format: str | None) -> FormatSpec:
    if format:
        return registry.by_name(format)
    spec = registry.sniff(data[: registry.SNIFF_BYTES], path)
    if spec is None:
        raise registry.unknown_format(path)
    return spec


def sniff(src: Source) -> str | None:
    """The format's name from the content, then the extension; None when nothing matches."""
    if isinstance(src, bytes | bytearray | memoryview):
        prefix, path = bytes(src[: registry.SNIFF_BYTES]), None
    elif not isinstance(src, str | os.PathLike):
        msg = "sniff needs a path or bytes (a stream would be consumed): read it first"
        raise TypeError(msg)
    else:
        path = Path(src)
        prefix = read_prefix(path, registry.SNIFF_BYTES)
    spec = registry.sniff(prefix, path)
    return spec.name if spec else None


def read_native(src: Source, format: str | None = None, **options: Any) -> Any:
    """The format's native document (a dataclass that mirrors the file)."""
    data, path = _read_source(src, options.get("max_input_size"))
    spec = _spec_for(data, path, format)
    spec.check_options(options)
    with image_pixel_limit(options.get("max_image_pixels")):
        return spec.read_doc(data, Context(path, options))


def write_native(doc: Any, dst: str | os.PathLike[str], **options: Any) -> None:
    spec = registry.for_document(doc)
    if spec.write is None:
        msg = f"{spec.name} cannot be written"
        raise FormatError(spec.name, msg)
    dst = Path(dst)
    ctx = Context(dst, options)
    files = spec.write_files(doc, ctx) if spec.write_files is not None else \
        {dst.name: spec.write(doc, ctx)}
    write_files(dst.parent, files)


@_memory_refused
def load(src: Source, format: str | None = None, **options: Any) -> Scene:
    """A Scene from any supported file (siblings resolved where the format has them)."""
    data, path = _read_source(src, options.get("max_input_size"))
    return _load(data, path, _spec_for(data, path, format), options)


@_memory_refused
def info(src: Source, format: str | None = None, **options: Any) -> dict[str, Any]:
    """What ``gamemesh info`` shows, as a dict: the file's format and size, the format's own
    facts (``native``: version, layout, section counts), and the scene's summary and notes.
    The file is parsed once: the scene reuses the native document."""
    data, path = _read_source(src, options.get("max_input_size"))
    spec = _spec_for(data, path, format)
    spec.check_options(options)
    out: dict[str, Any] = {"file": str(src) if path is not None else "<bytes>",
                           "format": spec.name, "size": len(data),
                           "siblings": _siblings(spec, path, options)}
    doc, parsed = None, Context(path, options)
    if spec.read is not None and spec.info is not None:
        with image_pixel_limit(options.get("max_image_pixels")):
            doc = spec.read_doc(data, parsed)
        out["native"] = spec.info(doc)
    if spec.can_import:
        scene = _load(data, path, spec, options, parsed, doc)
        out.update(scene.summary())
        out["notes"] = [n.to_dict() for n in scene.notes]
    return out


def _siblings(spec: FormatSpec, path: Path | None, options: dict[str, Any]) -> list[str]:
    """The other files a load of ``path`` reads with it (a unit's textures, a character's
    parts); none when the options turn sibling loading off."""
    if path is None or spec.siblings is None:
        return []
    if options.get("no_siblings") or options.get("no_parts"):
        return []
    return [str(p) for p in spec.siblings(path)]


def _load(data: bytes, path: Path | None, spec: FormatSpec, options: dict[str, Any],
          parsed: Context | None = None, doc: Any = None) -> Scene:
    """The scene of bytes already read. When they were already parsed to ``doc`` (under the
    context ``parsed``, whose notes carry over), the document is reused, not parsed again."""
    spec.check_options(options)
    ctx = Context(path, options, list(parsed.notes) if parsed else [])
    with image_pixel_limit(options.get("max_image_pixels")):
        if doc is not None and spec.load is None and spec.to_scene is not None:
            scene: Scene = guarded(spec.name, ctx, lambda: spec.to_scene(doc, ctx))  # type: ignore[misc]
        else:
            scene = spec.load_scene(data, ctx)
    for folder, files in ctx.extracted:
        write_files(folder, files)
    # glTF names its other files inside itself and its reader reports each it cannot reach.
    if path is None and spec.siblings is not None and spec.name not in _HUB_FORMATS and not (
            options.get("no_siblings") or options.get("no_parts")):
        ctx.note(f"{spec.name}.siblings_not_read", "read from bytes or a stream, which have no "
                 "folder: the files a load reads beside this one (textures, animations, parts, "
                 "sidecars) were not looked for; give the file's path to include them")
    add_new_notes(scene.notes, ctx.notes)
    scene.extras.setdefault("source_format", spec.name)
    if path is not None:
        scene.extras.setdefault("source_file", path.name)
    return scene


def save(scene: Scene, dst: Destination, format: str | None = None, *,
         check_loss: bool = True, **options: Any) -> list[Note]:
    """Write a scene in the format of ``format`` or of the destination's extension; returns the
    notes on what the target format could not hold. ``dst`` may be a binary file object (then
    ``format`` is required, and the format must write a single file: ``glb`` is GLB, ``gltf``
    one .gltf with its buffer and images embedded as ``data:`` URIs).
    ``check_loss`` reads the written files back and warns about every property they lost that
    no writer note names (see :func:`gamemesh.scene.loss.compare`); turn it off only to time
    the writer alone."""
    return _save(scene, dst, format, options, check_loss)[1]


def _target_spec(dst: Destination, format: str | None) -> FormatSpec:
    if format:
        return registry.by_name(format)
    if _is_stream(dst):
        msg = "writing to a file object needs the format (format= / --to)"
        raise ValueError(msg)
    spec = registry.by_extension(Path(dst))  # type: ignore[arg-type]
    if spec is None:
        msg = f"cannot tell the output format from {Path(dst).name!r}; give one with --to"  # type: ignore[arg-type]
        raise ValueError(msg)
    return spec


def _stream_name(spec: FormatSpec, format: str | None) -> Path:
    """The name a stream's output is made under. glTF is GLB unless ``gltf`` was asked for by
    name: then one .gltf whose buffer and images are ``data:`` URIs (see :func:`_embedded`)."""
    if spec.name == "gltf":
        wanted = (format or "").lower().lstrip(".")
        return Path("stream.gltf" if wanted == "gltf" else "stream.glb")
    return Path(f"stream{spec.extensions[0]}")


def _embedded(files: dict[str, bytes]) -> dict[str, bytes]:
    """A .gltf and the files it names (``.bin``, images) as one .gltf holding them as base64
    ``data:`` URIs: what a stream, which holds one file, can carry."""
    name, *_ = files
    doc = json.loads(files[name])
    used = {name}
    for kind, default in (("buffers", "application/octet-stream"), ("images", "image/png")):
        for entry in doc.get(kind, []):
            uri = entry.get("uri")
            key = uri if uri in files else unquote(uri or "")
            if key not in files:
                continue
            mime = entry.get("mimeType") or mimetypes.guess_type(key)[0] or default
            entry["uri"] = f"data:{mime};base64,{base64.b64encode(files[key]).decode('ascii')}"
            used.add(key)
    left = sorted(set(files) - used)
    if left:
        msg = f"the .gltf does not name {', '.join(left)}; a stream holds one file"
        raise ValueError(msg)
    return {name: json.dumps(doc, indent=1, ensure_ascii=False).encode("utf-8")}


def _write_stream(stream: IO[bytes], files: dict[str, bytes]) -> list[str]:
    if len(files) != 1:
        names = ", ".join(files)
        msg = (f"this output is {len(files)} files ({names}); a stream holds one: write to a "
               "file name, or turn the extra files off (papa: --no-textures --no-animations)")
        raise ValueError(msg)
    stream.write(next(iter(files.values())))
    stream.flush()
    return ["-"]


def _save(scene: Scene, dst: Destination, format: str | None, options: dict[str, Any],
          check_loss: bool = True) -> tuple[list[str], list[Note]]:
    spec = _target_spec(dst, format)
    spec.check_options(options)
    # A scene breaking the model's invariants is a converter bug: name it before any writer
    # turns it into a file real tools choke on.
    scene.validate()
    stream = _is_stream(dst)
    path = _stream_name(spec, format) if stream else Path(dst)  # type: ignore[arg-type]
    ctx = Context(path, options)
    # Images kept encoded (PNG/JPEG from an image file or a glTF) are decoded here when the
    # target needs pixels: under the caller's pixel limit, as a load would be.
    with image_pixel_limit(options.get("max_image_pixels")):
        files = spec.save_scene(scene, ctx)
        if not stream:
            _refuse_foreign(spec.name, path, files)
        if check_loss:
            ctx.notes.extend(_lost(scene, spec, files, ctx.notes))
    if stream:
        if path.suffix == ".gltf":
            files = _embedded(files)
        return _write_stream(dst, files), ctx.notes  # type: ignore[arg-type]
    return write_files(path.parent, files), ctx.notes


def _refuse_foreign(fmt: str, dst: Path, files: dict[str, bytes]) -> None:
    """A file written beside the destination (a texture, an animation) never replaces a file
    this conversion did not make. Such files are named ``<stem>_...`` after the destination, so
    an existing one of that name is an earlier output of the same conversion and goes as the
    destination itself does; any other existing file is refused by name (unless it already
    holds exactly these bytes), before anything is written."""
    stem = dst.stem.lower() + "_"
    for name in list(files)[1:]:
        target = dst.parent / safe_name(name)
        if not target.exists() or target.name.lower().lstrip(_FLAGS).startswith(stem):
            continue
        if target.is_file() and target.stat().st_size == len(files[name]) and (
                target.read_bytes() == files[name]):
            continue
        msg = (f"{target.name} already exists beside {dst.name} and this conversion did not "
               "write it; nothing was written (choose another output folder or name)")
        raise FormatError(fmt, msg, path=str(target))


def _lost(scene: Scene, spec: FormatSpec, files: dict[str, bytes], notes: list[Note]
          ) -> list[Note]:
    """Warnings for what the written files do not give back and no note already names. The
    files are read back from a private folder, so siblings (textures, animations) resolve and
    nothing else beside the destination is picked up."""
    if not files or not spec.can_import or spec.name in _HUB_FORMATS:
        return []
    with tempfile.TemporaryDirectory(prefix="gamemesh-check-") as tmp:
        try:
            write_files(Path(tmp), files)
        except OSError as e:  # a full scratch disk: skip the check, the real write decides
            msg = f"the written files could not be read back ({e.strerror}); nothing checked"
            return [Note(f"{spec.name}.lost.unchecked", msg, "info")]
        main = Path(tmp) / next(iter(files))
        try:
            back = spec.load_scene(main.read_bytes(), Context(main, {}))
        except FormatError as e:
            msg = f"the written file does not read back ({e}); nothing could be checked"
            return [Note(f"{spec.name}.lost.unreadable", msg)]
    covered = {p for n in notes for p in n.covers}
    return [Note(f"{spec.name}.lost.{loss.prop}", loss.message + " not written", "warning",
                 (loss.prop,))
            for loss in compare(scene, back) if loss.prop not in covered]


@_memory_refused
def convert(src: Source, dst: Destination, *, from_format: str | None = None,
            to_format: str | None = None, check_loss: bool = True, **options: Any) -> Report:
    """load + save, with every note collected in the report. A destination the source format
    exports straight from its native document (a VRAM sheet as PNG) skips the scene. ``src``
    may be bytes or a binary file object, ``dst`` a binary file object (then ``to_format`` is
    required)."""
    if _is_stream(dst):
        if not to_format:
            msg = "writing to a file object needs the format (to_format= / --to)"
            raise ValueError(msg)
    else:
        dst = Path(dst)  # type: ignore[arg-type]
        if isinstance(src, str | os.PathLike) and _same_file(Path(src), dst):
            msg = f"the destination {dst} is the input itself; choose another name"
            raise ValueError(msg)
    # Read once: the export check and the load share the bytes.
    data, path = _read_source(src, options.get("max_input_size"))
    spec = _spec_for(data, path, from_format)
    if isinstance(dst, Path):
        exported = _try_export(data, path, spec, dst, to_format, options)
        if exported is not None:
            return exported
    scene = _load(data, path, spec, options)
    written, notes = _save(scene, dst, to_format, options, check_loss)
    target = _target_spec(dst, to_format).name
    return Report(source=str(path) if path is not None else "<bytes>",
                  destination=str(dst) if isinstance(dst, Path) else "-",
                  source_format=str(scene.extras.get("source_format", "")),
                  target_format=target, outputs=written, notes=[*scene.notes, *notes],
                  summary=scene.summary())


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (b.exists() and a.samefile(b))
    except OSError:
        return False


def _try_export(data: bytes, path: Path | None, spec: FormatSpec, dst: Path,
                to_format: str | None, options: dict[str, Any]) -> Report | None:
    if to_format:
        return None
    ext = next((e for e in spec.exports if dst.name.lower().endswith(e)), None)
    if ext is None:
        return None
    ctx = Context(path, options)
    with image_pixel_limit(options.get("max_image_pixels")):
        doc = spec.read_doc(data, ctx)
    out_ctx = Context(dst, options, ctx.notes)
    files = guarded(spec.name, out_ctx, lambda: spec.exports[ext](doc, out_ctx))
    written = write_files(dst.parent, files)
    return Report(source=str(path or "<bytes>"), destination=str(dst), source_format=spec.name,
                  target_format=ext.lstrip("."), outputs=written, notes=out_ctx.notes)


