"""glTF 2.0, the hub every conversion goes through: GLB and .gltf (+ .bin + images) both ways.

Spec: Khronos glTF 2.0 (https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html). Writing
keeps provenance and notes in ``asset.extras`` and native data in each object's ``extras``;
reading keeps KHR_texture_transform on texture references and KHR_materials_emissive_strength
and KHR_materials_unlit on materials.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...registry import Context, FormatSpec, Option, lazy

if TYPE_CHECKING:
    from ...scene import Scene
    from .read import GltfDocument

__all__ = ["SPEC", "GltfDocument", "write_glb", "write_gltf"]

# Names kept importable from the package, imported on first use (PEP 562).
_LAZY = {"GltfDocument": "read", "write_glb": "write", "write_gltf": "write"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return lazy(__name__, f"{_LAZY[name]}:{name}").resolved
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def _sniff(prefix: bytes) -> bool:
    if prefix[:4] == b"glTF":
        return True
    head = prefix.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"{") and b'"asset"' in prefix


def _save(scene: Scene, ctx: Context) -> dict[str, bytes]:
    from .write import write_glb, write_gltf

    name = ctx.path.name if ctx.path else "scene.glb"
    if Path(name).suffix.lower() == ".gltf":
        return write_gltf(scene, name, ctx.notes)
    return {name: write_glb(scene, ctx.notes)}


def _info(doc: GltfDocument) -> dict[str, object]:
    asset = doc.json.get("asset", {})
    return {"container": "glb" if doc.glb else "gltf", "version": asset.get("version"),
            "generator": asset.get("generator", ""),
            "extensions_used": doc.json.get("extensionsUsed", [])}


def _write(doc: GltfDocument, ctx: Context) -> bytes:
    """Re-emit a parsed glTF from the scene (glTF has no native layer beyond its JSON)."""
    from .read import to_scene

    scene = to_scene(doc, ctx)
    files = _save(scene, ctx)
    return next(iter(files.values()))


def _siblings(path: Path) -> list[Path]:
    """The external buffers and images a .gltf (or a GLB) names: batch converts them with it
    instead of as files of their own. Unreadable input names none (the load will say why)."""
    from ...errors import FormatError
    from ...safeio import read_regular
    from .read import external_uris
    from .uris import resolve_uri

    try:
        uris = external_uris(read_regular(path))
    except (OSError, FormatError):
        return []
    out = []
    for i, uri in enumerate(uris):
        try:  # a name the load will refuse is no sibling (the load will say why)
            p = resolve_uri(uri, path.parent, (), f"uri {i}")
        except FormatError:
            continue
        if p.is_file() and p != path.resolve():
            out.append(p)
    return out


def _sample(size: int) -> bytes:
    from ...sample import sample_scene
    from .write import write_glb

    rings = max(5, size // 600)
    return write_glb(sample_scene(rings=rings))


SPEC = FormatSpec(
    name="gltf",
    title="glTF 2.0 (Khronos)",
    extensions=(".glb", ".gltf"),
    sniff=_sniff,
    read=lazy(__name__, "read:parse"),
    write=_write,
    to_scene=lazy(__name__, "read:to_scene"),
    save=_save,
    info=_info,
    document_type=lazy(__name__, "read:GltfDocument"),
    make_sample=_sample,
    siblings=_siblings,
    options=(
        Option("allow_outside", "a folder outside the .gltf's own from which its buffers and "
               "images may also be read (repeatable; by default only the .gltf's folder is)",
               str, multiple=True),
    ),
)
