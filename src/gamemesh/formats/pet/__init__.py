"""PET: Pangya "Puppet" models (Ntreev Soft, "WangReal" engine): ``.pet`` (items, clubs, course
objects), ``.bpet`` (character skeletons), ``.mpet`` (character parts) and ``.apet`` (motions).

Versions 1.0 (no VERS section), 1.1, 1.2 and 1.3; every kind reads and writes. Spec:
``shared/specs/pet.md`` (research notes, with a worked byte layout in §B.18); facts from the public
readers Acrisio-Filho/pet-source_tools, Acrisio-Filho/SuperSS-Dev, lbarceloss/GhostMapEditor,
danielagff/PangyaWeb, retreev/PangLib and retreev/io_scene_mpet, and pangbox/yabang's engine
headers. No code is taken from them. No real file is public: the fixtures are made by this
package's own writer (``sample.build``).

A character is several files: ``load`` assembles the ``.bpet`` skeleton, ``.mpet`` parts (matched
by bone name) and ``.apet`` motions given with ``with`` or found by the name-prefix rule (with
``character``, and by default when the file loaded is a ``.bpet``); ``siblings`` lists the files
a load reads with no options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...api import safe_name
from ...errors import FormatError
from ...registry import Context, Files, FormatSpec, Option
from ...scene import Image, Scene
from ...textures import encode_png
from .fromscene import build_document, from_scene
from .layout import FMT, FOURCCS, KINDS, PetDocument
from .read import read
from .sample import sample_bytes
from .scene import Unit, build_scene, to_scene
from .textures import TextureFinder
from .write import write

__all__ = ["SPEC", "PetDocument", "character_files", "info", "load", "read", "siblings", "sniff",
           "write"]

_EXTS = tuple(f".{k}" for k in KINDS)


def sniff(prefix: bytes) -> bool:
    """A known section header first, with a length that fits; then, where visible, another."""
    if len(prefix) < 8 or prefix[:4] not in FOURCCS:
        return False
    length = int.from_bytes(prefix[4:8], "little")
    if prefix[:4] == b"VERS" and (not 2 <= length <= 4 or len(prefix) < 10
                                  or prefix[9] != 1 or prefix[8] > 3):
        return False
    nxt = 8 + length
    if len(prefix) >= nxt + 4:
        return prefix[nxt:nxt + 4] in FOURCCS or prefix[nxt:nxt + 4].isalpha()
    return True


def info(doc: PetDocument) -> dict[str, Any]:
    out: dict[str, Any] = {"version": "{}.{}".format(*doc.version), "kind": doc.kind,
                           "sections": [s.fourcc.decode("latin-1") for s in doc.sections]}
    bones = doc.bones
    out["bones"] = bones.count if bones is not None else 0
    out["bone_layout"] = ("none" if bones is None else
                          "names only (apet)" if bones.matrices is None else "matrices")
    out["textures"] = len(doc.textures)
    mesh = doc.mesh
    if mesh is not None:
        out.update(vertices=mesh.vertex_count, triangles=mesh.poly_count, uv_sets=mesh.uv_sets,
                   max_influences=int(mesh.inf_count.max()) if mesh.vertex_count else 0,
                   mesh_layout="skin list (mpet)" if mesh.skins is not None else "plain")
    anim = doc.anim
    if anim is not None:
        out["tracks"] = len(anim.tracks)
        out["keys"] = int(sum(len(t.pos) + len(t.rot) + len(t.scale) for t in anim.tracks))
    for fourcc, attr, key in ((b"MOTI", "motions", "motions"), (b"COLL", "boxes", "boxes"),
                              (b"FRAM", "frames", "frames")):
        body = doc.get(fourcc)
        if body is not None and hasattr(body, attr):
            out[key] = len(getattr(body, attr))
    return out


def character_files(path: Path) -> list[Path]:
    """The other files of the character (the spec's prefix rule: the text before the first
    ``_``): every .bpet, .mpet and .apet of that prefix in the folder, sorted."""
    path = Path(path)
    name = path.name.lower()
    if "_" not in name or not name.endswith(_EXTS):
        return []
    prefix = name.split("_", 1)[0] + "_"
    try:
        entries = sorted(path.parent.iterdir())
    except OSError:
        return []
    return [p for p in entries if p.is_file() and p.name.lower().startswith(prefix)
            and p.suffix.lower() in (".bpet", ".mpet", ".apet") and p.name != path.name]


def siblings(path: Path) -> list[Path]:
    """The files a load of ``path`` reads besides it (with no options): for a skeleton
    (``.bpet``) its character's parts and motions, and for every file of the unit the
    textures (and their ``_mask`` companions) found beside it. So batch converts each
    character once, from its skeleton, with its textures. Shared textures found up the
    folder tree are not claimed: other models use them too."""
    parts = character_parts(Path(path))
    return parts + [t for t in _textures_beside([Path(path), *parts]) if t not in parts]


def character_parts(path: Path) -> list[Path]:
    """The part and motion files a plain load of ``path`` assembles: for a skeleton
    (``.bpet``) its character's .mpet and .apet files; other files stand alone."""
    if Path(path).suffix.lower() != ".bpet":
        return []
    return [p for p in character_files(path) if p.suffix.lower() != ".bpet"]


def _textures_beside(files: list[Path]) -> list[Path]:
    found: list[Path] = []
    for f in files:
        try:
            doc = read(f.read_bytes(), Context(f))
        except (OSError, FormatError):
            continue
        finder = TextureFinder(f.parent)
        for t in doc.textures:
            hit = finder.find(t.name)
            if hit is None or hit.parent != f.parent:
                continue
            for p in (hit, finder.mask_for(hit)):
                if p is not None and p not in found:
                    found.append(p)
    return found


def _part_paths(ctx: Context) -> list[Path]:
    given = ctx.opt("with", []) or []
    paths = [Path(p) for p in ([given] if isinstance(given, str | Path) else given)]
    given_alias = ctx.opt("parts", []) or []  # the API spelling (``with`` is a keyword)
    paths += [Path(p) for p in ([given_alias] if isinstance(given_alias, str | Path)
                                else given_alias)]
    if ctx.path is None:
        return paths
    if ctx.opt("character", False):
        found = character_files(ctx.path)
    elif not paths and not ctx.opt("no_parts", False):
        found = character_parts(ctx.path)
    else:
        found = []
    return paths + [p for p in found if p not in paths]


def load(data: bytes, ctx: Context) -> Scene:
    """One file, or a character: the main file plus the parts given with ``with`` or found
    with ``character``."""
    doc = read(data, ctx)
    units: list[Unit] = []
    for p in _part_paths(ctx):
        try:
            raw = p.read_bytes()
        except OSError as e:
            msg = f"cannot read character part {p.name} ({e.strerror})"
            raise FormatError(FMT, msg, path=str(p)) from None
        try:
            units.append(Unit(read(raw, Context(p, {}, ctx.notes)), p))
        except FormatError as e:
            raise e.with_path(str(p)) from None
    return build_scene(Unit(doc, ctx.path), units, ctx)


def save(scene: Scene, ctx: Context) -> Files:
    """The PET file and, beside it, the textures its TEXT section names."""
    name = ctx.path.name if ctx.path is not None else "out.pet"
    images: dict[str, Image] = {}
    doc = build_document(scene, ctx, images)
    files: Files = {name: write(doc, ctx)}
    for tex_name, img in images.items():
        data = _image_bytes(tex_name, img, ctx)
        if data is not None:
            try:
                files.setdefault(safe_name(tex_name), data)
            except ValueError:
                ctx.note("pet.texture_not_written", f"texture name {tex_name!r} is unusable")
    return files


def _image_bytes(name: str, img: Image, ctx: Context) -> bytes | None:
    ext = Path(name).suffix.lower()
    if img.data is not None and ((ext == ".png" and img.mime_type == "image/png")
                                 or (ext in (".jpg", ".jpeg") and img.mime_type == "image/jpeg")):
        return img.data
    if img.pixels is not None and ext == ".png":
        return encode_png(img.pixels)
    if img.data is None and img.pixels is None:
        ctx.note("pet.texture_not_written", f"texture {name!r} has no pixels to write")
    else:
        ctx.note("pet.texture_not_written", f"texture {name!r}: gamemesh writes .png/.jpg "
                 "textures only; the file is named but not written")
    return None


SPEC = FormatSpec(
    name="pet",
    title="Pangya Puppet (.pet/.apet/.bpet/.mpet)",
    extensions=_EXTS,
    sniff=sniff,
    read=read,
    write=write,
    to_scene=to_scene,
    from_scene=from_scene,
    load=load,
    save=save,
    info=info,
    siblings=siblings,
    document_type=PetDocument,
    make_sample=sample_bytes,
    options=(
        Option("kind", "PET kind when the extension does not say (or to override it)",
               choices=KINDS),
        Option("version", "PET version to write (1.0 to 1.3; default 1.3)",
               choices=("1.0", "1.1", "1.2", "1.3")),
        Option("texture_dir", "another folder to look for textures in", multiple=True),
        Option("max_influences", "keep at most this many bone influences per vertex "
               "(the largest, renormalized)", type=int),
        Option("with", "another file of the character (.bpet/.mpet/.apet) to assemble",
               multiple=True),
        Option("character", "assemble the character from the files sharing the name prefix "
               "(a .bpet does this unless --with or --no-parts is given)",
               type=bool, default=False),
        Option("no_parts", "convert a .bpet alone, without its character's parts", type=bool,
               default=False),
    ),
    notes="kind from the extension; characters assemble with --with or --character",
)
