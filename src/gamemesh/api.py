"""The public API: sniff, read_native, write_native, load, save, convert, formats."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import registry
from .errors import FormatError, Note
from .fileio import write_files
from .registry import Context, FormatSpec, guarded
from .safeio import MAX_INPUT_BYTES, read_prefix, read_regular
from .scene import Scene
from .textures import image_pixel_limit

Source = str | os.PathLike[str] | bytes | bytearray | memoryview

__all__ = ["Report", "convert", "formats", "info", "load", "read_native", "save", "sniff",
           "write_native"]



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


def _read_source(src: Source, max_size: int | None = None) -> tuple[bytes, Path | None]:
    """The input's bytes: only a regular file (a device, FIFO or socket is refused, never read)
    and at most ``max_size`` bytes (``max_input_size``, default 4 GiB), whatever stat says."""
    limit = MAX_INPUT_BYTES if max_size is None else max_size
    if isinstance(src, bytes | bytearray | memoryview):
        if len(src) > limit:
            msg = "the input is too large (raise the limit with --max-input-size)"
            raise FormatError(format="gamemesh", message=msg, expected=f"<= {limit} bytes",
                              actual=f"{len(src)} bytes", path="<bytes>")
        return bytes(src), None
    path = Path(src)
    return read_regular(path, limit), path


def _spec_for(data: bytes, path: Path | None, format: str | None) -> FormatSpec:
    if format:
        return registry.by_name(format)
    spec = registry.sniff(data[: registry.SNIFF_BYTES], path)
    if spec is None:
        msg = "unknown file format (no format recognises its content or extension)"
        raise FormatError(format="gamemesh", message=msg, path=str(path) if path else "<bytes>")
    return spec


def sniff(src: Source) -> str | None:
    """The format's name from the content, then the extension; None when nothing matches."""
    if isinstance(src, bytes | bytearray | memoryview):
        prefix, path = bytes(src[: registry.SNIFF_BYTES]), None
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
    write_files(dst.parent, {dst.name: spec.write(doc, Context(dst, options))})


def load(src: Source, format: str | None = None, **options: Any) -> Scene:
    """A Scene from any supported file (siblings resolved where the format has them)."""
    data, path = _read_source(src, options.get("max_input_size"))
    return _load(data, path, _spec_for(data, path, format), options)


def info(src: Source, format: str | None = None, **options: Any) -> dict[str, Any]:
    """What ``gamemesh info`` shows, as a dict: the file's format and size, the format's own
    facts (``native``: version, layout, section counts), and the scene's summary and notes.
    The file is parsed once: the scene reuses the native document."""
    data, path = _read_source(src, options.get("max_input_size"))
    spec = _spec_for(data, path, format)
    spec.check_options(options)
    out: dict[str, Any] = {"file": str(src) if path is not None else "<bytes>",
                           "format": spec.name, "size": len(data)}
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
    scene.notes.extend(n for n in ctx.notes if n not in scene.notes)
    scene.extras.setdefault("source_format", spec.name)
    if path is not None:
        scene.extras.setdefault("source_file", path.name)
    return scene


def save(scene: Scene, dst: str | os.PathLike[str], format: str | None = None,
         **options: Any) -> list[Note]:
    """Write a scene in the format of ``format`` or of the destination's extension; returns the
    notes on what the target format could not hold."""
    return _save(scene, Path(dst), format, options)[1]


def _save(scene: Scene, dst: Path, format: str | None,
          options: dict[str, Any]) -> tuple[list[str], list[Note]]:
    spec = registry.by_name(format) if format else registry.by_extension(dst)
    if spec is None:
        msg = f"cannot tell the output format from {dst.name!r}; give one with --to"
        raise ValueError(msg)
    spec.check_options(options)
    # A scene breaking the model's invariants is a converter bug: name it before any writer
    # turns it into a file real tools choke on.
    scene.validate()
    ctx = Context(dst, options)
    files = spec.save_scene(scene, ctx)
    written = write_files(dst.parent, files)
    return written, ctx.notes


def convert(src: Source, dst: str | os.PathLike[str], *, from_format: str | None = None,
            to_format: str | None = None, **options: Any) -> Report:
    """load + save, with every note collected in the report. A destination the source format
    exports straight from its native document (a VRAM sheet as PNG) skips the scene."""
    dst = Path(dst)
    if not isinstance(src, bytes | bytearray | memoryview) and _same_file(Path(src), dst):
        msg = f"the destination {dst} is the input itself; choose another name"
        raise ValueError(msg)
    # Read once: the export check and the load share the bytes.
    data, path = _read_source(src, options.get("max_input_size"))
    spec = _spec_for(data, path, from_format)
    exported = _try_export(data, path, spec, dst, to_format, options)
    if exported is not None:
        return exported
    scene = _load(data, path, spec, options)
    written, notes = _save(scene, dst, to_format, options)
    target = to_format or (registry.by_extension(dst) or registry.by_name("gltf")).name
    return Report(source=str(src) if not isinstance(src, bytes | bytearray | memoryview)
                  else "<bytes>", destination=str(dst),
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


