"""PET bytes -> :class:`PetDocument` (spec §B.1-§B.13, reader algorithm §B.17).

Each section has one parser, reading through the bounded :class:`~gamemesh.binary.Reader`; the
MESH vertex list, whose records have variable size, is found by :mod:`.vertices`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from ...binary import Reader
from ...errors import CorruptDataError, FormatError, UnsupportedVersionError
from ...registry import Context
from .document import (
    AnimSection,
    BoneSection,
    CollBox,
    CollSection,
    ExtrSection,
    FanmSection,
    Frame,
    FramSection,
    MeshSection,
    Motion,
    MotiSection,
    Payload,
    PetDocument,
    RawSection,
    Section,
    SmtlMaterial,
    SmtlSection,
    SmtlValue,
    TextSection,
    Texture,
    Track,
    Vers,
)
from .layout import FANM_DT, FMT, FOURCCS, KINDS, SKIN_DT, SMTL_SIZES, VERSIONS, corner_dtype
from .vertices import follow, vertex_records

_HEADER = struct.Struct("<4sI")
# A TEXT record: name, flag, group, pad, diffuse, handle (the fields of :class:`Texture`).
_TEXT_REC = struct.Struct("<32sbB2sII")


def kind_of(ctx: Context) -> str:
    """The kind from the option, else from the extension, else plain .pet."""
    opt = ctx.opt("kind")
    if opt:
        k = str(opt).lower().lstrip(".")
        if k not in KINDS:
            raise UnsupportedVersionError(FMT, "unknown PET kind", field="kind",
                                          expected="/".join(KINDS), actual=opt)
        return k
    if ctx.path is not None:
        ext = Path(ctx.path).suffix.lower().lstrip(".")
        if ext in KINDS:
            return ext
    return "pet"


def read(data: bytes, ctx: Context) -> PetDocument:
    kind = kind_of(ctx)
    r = Reader(data, FMT)
    spans, tail = _split(r)
    version = _find_version(r, spans)
    doc = PetDocument(kind=kind, version=version, tail=tail)
    for fourcc, start, end in spans:
        sub = r.window(start, end - start)
        with sub.field(fourcc.decode("latin-1")):
            body = _read_section(sub, fourcc, version, kind, ctx)
        doc.sections.append(Section(fourcc, body))
    return doc


def _split(r: Reader) -> tuple[list[tuple[bytes, int, int]], bytes]:
    """(FourCC, payload start, payload end) per section; a last partial header is kept raw."""
    spans: list[tuple[bytes, int, int]] = []
    while r.remaining() >= 8:
        at = r.tell()
        fourcc, length = r.unpack(_HEADER)
        if length > r.remaining():
            raise r.truncated(expected=f"{length} bytes of {fourcc!r}",
                              actual=f"{r.remaining()} left", field="section.length", offset=at)
        spans.append((fourcc, r.tell(), r.tell() + length))
        r.skip(length)
    if not spans:
        msg = "not a PET file: no section"
        raise r.corrupt(msg, expected="a section header",
                        actual=f"{r.remaining()} bytes", offset=0)
    return spans, r.rest()


def _find_version(r: Reader, spans: list[tuple[bytes, int, int]]) -> tuple[int, int]:
    """VERS found in a pre-pass (§B.17: robust against a VERS that is not first); none = 1.0."""
    for fourcc, start, end in spans:
        if fourcc == b"VERS":
            if not 2 <= end - start <= 4:
                msg = "bad VERS length"
                raise r.corrupt(msg, expected="2..4", actual=end - start,
                                offset=start - 4, field="VERS.length")
            minor, major = r.window(start, 2).bytes(2)
            if (major, minor) not in VERSIONS:
                raise r.error(UnsupportedVersionError, "PET version not supported",
                              expected="1.0..1.3", actual=f"{major}.{minor}", offset=start,
                              field="VERS")
            return (major, minor)
    return (1, 0)


def _read_section(r: Reader, fourcc: bytes, version: tuple[int, int], kind: str,
                  ctx: Context) -> Payload:
    if fourcc == b"VERS":
        return Vers(r.rest())
    if fourcc == b"BONE":
        return _with_retry(r, "BONE", kind == "apet",
                           lambda rr, alt: _read_bones(rr, version, apet=alt), ctx)
    if fourcc == b"MESH":
        return _with_retry(r, "MESH", kind == "mpet",
                           lambda rr, alt: _read_mesh(rr, version, mpet=alt), ctx)
    if fourcc == b"SMTL":
        try:
            return _finish(r, _read_smtl(r, version))
        except _Unsupported as e:
            ctx.note("pet.smtl_kept_raw", f"SMTL kept as raw bytes: {e}")
            return RawSection(fourcc, r.window(r.start, r.end - r.start).rest())
    parse = _PARSERS.get(fourcc)
    if parse is None:
        if fourcc not in FOURCCS:
            ctx.note("pet.unknown_section", f"unknown section {fourcc!r} kept as raw bytes",
                     "info")
        return RawSection(fourcc, r.rest())
    return _finish(r, parse(r, version))


def _finish(r: Reader, body: Any) -> Payload:
    """Bytes after the parsed payload are ignored by every reader; keep them for the round trip."""
    body.trailing = r.rest()
    return body  # type: ignore[no-any-return]


def _with_retry(r: Reader, name: str, primary: bool,
                parse: Callable[[Reader, bool], Any], ctx: Context) -> Payload:
    """§B.17 step 3: the kind decides the layout, but a section must be used up exactly; if it
    is not, the other layout is tried and kept when it fits exactly."""
    start, end = r.start, r.end
    first_err: FormatError | None = None
    body: Any = None
    try:
        body = parse(r, primary)
        if r.at_end():
            return body  # type: ignore[no-any-return]
    except FormatError as e:
        first_err = e
    other = r.window(start, end - start)  # with this reader's field path
    try:
        alt = parse(other, not primary)
    except FormatError:
        alt = None
    if alt is not None and other.at_end():
        ctx.note(f"pet.{name.lower()}_layout",
                 f"{name} did not fit the layout of the file's kind; read with the "
                 f"{'other' if primary else 'apet/mpet'} layout, which uses it up exactly")
        alt.trailing = b""
        return alt  # type: ignore[no-any-return]
    if first_err is not None:
        raise first_err
    return _finish(r, body)


class _Unsupported(Exception):
    pass


def read_boneid(r: Reader, field: str = "bone") -> tuple[int, bool]:
    """§B.0: u8; 0xFF = none; 0xFE escapes to an i16 (kept as read; negative = none)."""
    b = r.u8(field)
    if b == 0xFF:
        return -1, False
    if b == 0xFE:
        return r.i16(field), True
    return b, False


# -- sections ------------------------------------------------------------------------------------
def _read_text(r: Reader, version: tuple[int, int]) -> TextSection:
    recs = r.records(_TEXT_REC, r.u32("count"), "count")
    return TextSection([Texture(*rec) for rec in recs])


def _read_smtl(r: Reader, version: tuple[int, int]) -> SmtlSection:
    out = SmtlSection()
    n = r.count(r.u32("count"), 8, "count")
    for i in range(n):
        with r.field(f"materials[{i}]"):
            mat = SmtlMaterial(r.lstr("name"))
            nv = r.count(r.u32("nvalues"), 12, "nvalues")
            for j in range(nv):
                with r.field(f"values[{j}]"):
                    mat.values.append(_smtl_value(r))
            out.materials.append(mat)
    return out


def _smtl_value(r: Reader) -> SmtlValue:
    name = r.lstr("name")
    kind = r.u32("type")
    if kind == 8:
        return SmtlValue(name, kind, r.lstr("value"))
    if kind in SMTL_SIZES:
        return SmtlValue(name, kind, r.bytes(SMTL_SIZES[kind], "value"))
    if kind == 7:
        msg = "a MATRIXARRAY value (size unknown, no implementation reads it)"
        raise _Unsupported(msg)
    msg = "unknown SMTL value type"
    raise r.corrupt(msg, expected="0..8", actual=kind, field="type")


def _read_bones(r: Reader, version: tuple[int, int], apet: bool) -> BoneSection:
    """The records walked one by one over the bytes (name up to its NUL, parent id, in
    .bpet/.pet/.mpet files the matrix and in 1.3 a float; a few plain steps a bone, the
    bound checks of the Reader's calls made inline), the matrices gathered at once."""
    out = BoneSection()
    n = r.u8("count")
    if n == 0 and r.remaining() >= 2:
        n = r.u16("count")
        out.wide_count = True
    extra = version >= (1, 3) and not apet
    tail = 0 if apet else 48 + 4 * extra
    r.count(n, 2 + tail, "count")
    raw, p, end = r.raw, r.tell(), r.end
    names, parents, wides, bodies = out.names, out.parents, out.parent_wide, []
    for i in range(n):
        k = raw.find(b"\0", p, end)
        if k < 0:
            raise r.truncated(expected="a NUL-terminated name", actual="no NUL",
                              field=f"bones[{i}].name", offset=p)
        names.append(raw[p:k])
        p = k + 2
        if p > end:
            _bone_short(r, i, "parent", k + 1, 1)
        b = raw[k + 1]
        if b == 0xFE:
            if p + 2 > end:
                _bone_short(r, i, "parent", p, 2)
            parents.append(int.from_bytes(raw[p:p + 2], "little", signed=True))
            p += 2
        else:
            parents.append(-1 if b == 0xFF else b)
        wides.append(b == 0xFE)
        bodies.append(p)
        if p + tail > end:
            field, at, size = ("matrix", p, 48) if p + 48 > end else ("extra", p + 48, 4)
            _bone_short(r, i, field, at, size)
        p += tail
    r.seek(p)
    if not apet:
        rows = np.array(bodies, np.int64)[:, None] + np.arange(tail)
        recs = np.frombuffer(raw, np.uint8)[rows].reshape(n, tail)
        out.matrices = recs[:, :48].copy().view("<f4").reshape(n, 12)
        if extra:
            out.extra = recs[:, 48:].copy().view("<f4").reshape(n)
    return out


def _bone_short(r: Reader, i: int, field: str, at: int, size: int) -> NoReturn:
    """Raise the Reader's error for a bone field of ``size`` bytes at ``at`` that does not fit."""
    raise r.truncated(expected=f"{size} bytes", actual=f"{max(0, r.end - at)} left",
                      field=f"bones[{i}].{field}", offset=at)


# Per key list: its count's field, its record size, its field.
_KEYS = (("npos", 16, "pos"), ("nrot", 20, "rot"), ("nscale", 16, "scale"))
_KEYS_13 = (*_KEYS, ("nflag", 8, "flags"))
# A key record of each size as one item of that many floats (an (n, width) array at once).
_KEY_ROWS = {size: np.dtype(("<f4", (size // 4,))) for size in (8, 16, 20)}


def _read_anim(r: Reader, version: tuple[int, int]) -> AnimSection:
    """§B.7: the all-versions layout ({t,xyz}, {t,xyzw}, scale list always, flags in 1.3)."""
    out = AnimSection(terminator=b"")
    kinds = _KEYS_13 if version >= (1, 3) else _KEYS
    i = 0
    while not r.at_end():
        at = r.tell()
        bone, wide = read_boneid(r, f"tracks[{i}].bone")
        if bone == -1:
            out.terminator = bytes(r.data[at:r.tell()])
            break
        keys: list[npt.NDArray[np.float32]] = []
        with r.field(f"tracks[{i}]"):
            for count, size, name in kinds:
                keys.append(r.array(_KEY_ROWS[size], r.count(r.u32(count), size, count), name))
        out.tracks.append(Track(bone, wide, *keys))
        i += 1
    return out


def _read_fanm(r: Reader, version: tuple[int, int]) -> FanmSection:
    n = r.count(r.u32("count"), FANM_DT.itemsize, "count")
    return FanmSection(entries=r.array(FANM_DT, n, "entries").copy())


def _read_fram(r: Reader, version: tuple[int, int]) -> FramSection:
    out = FramSection()
    n = r.count(r.u32("count"), 16, "count")
    for i in range(n):
        with r.field(f"frames[{i}]"):
            index = r.u32("index")
            chunks = (r.lstr("chunk0"), r.lstr("chunk1"), r.lstr("chunk2"))
            # #2/#3 omit `check` in short sections; read it only when 4 bytes remain (§B.10).
            check = r.u32("check") if r.remaining() >= 4 else None
            out.frames.append(Frame(index, chunks, check))
    return out


def _read_moti(r: Reader, version: tuple[int, int]) -> MotiSection:
    out = MotiSection()
    n = r.count(r.u32("count"), 28, "count")
    for i in range(n):
        with r.field(f"motions[{i}]"):
            out.motions.append(Motion(
                name=r.lstr("name"), frame_start=r.u32("frame_start"),
                frame_end=r.u32("frame_end"), next_move=r.lstr("next_move"),
                connection_method=r.lstr("connection_method"),
                connection_time=r.f32("connection_time"), root_bone=r.lstr("root_bone")))
    return out


def _read_coll(r: Reader, version: tuple[int, int]) -> CollSection:
    out = CollSection()
    n = r.count(r.u32("count"), 48, "count")
    for i in range(n):
        with r.field(f"boxes[{i}]"):
            shape, show = r.u32("shape"), r.u32("show")
            names = [r.lstr(f) for f in ("box_name", "bone_name", "option1", "option2")]
            box = r.array("<f4", 6, "box").copy()
            out.boxes.append(CollBox(shape, show, names[0], names[1], names[2], names[3], box))
    return out


def _read_extr(r: Reader, version: tuple[int, int]) -> ExtrSection:
    out = ExtrSection()
    n = r.count(r.u32("count"), 1, "count")
    for i in range(n):
        bone, wide = read_boneid(r, f"bones[{i}]")
        out.bones.append(bone)
        out.wide.append(wide)
    return out


_PARSERS: dict[bytes, Callable[[Reader, tuple[int, int]], Any]] = {
    b"TEXT": _read_text, b"ANIM": _read_anim, b"FANM": _read_fanm, b"FRAM": _read_fram,
    b"MOTI": _read_moti, b"COLL": _read_coll, b"EXTR": _read_extr}


# -- MESH -----------------------------------------------------------------------------------------
def _read_mesh(r: Reader, version: tuple[int, int], mpet: bool) -> MeshSection:
    skins = None
    if mpet:
        ns = r.u8("nskin")
        skins = r.array(SKIN_DT, ns, "skins").copy()
    nvert = r.count(r.u32("nvert"), 16, "nvert")
    with r.field("vertices"):
        verts = vertex_records(r, nvert, 16 if mpet else 12)
    npoly = r.count(r.u32("npoly"), 3 * (17 if version >= (1, 2) else 24), "npoly")
    with r.field("polygons"):
        corners = _read_corners(r, 3 * npoly, version >= (1, 2))
    texture = r.array("u1", npoly, "texture").copy()
    specular = r.array("u1", npoly, "specular").copy() if version >= (1, 2) else None
    return MeshSection(positions=verts["positions"], inf_count=verts["count"],
                       inf_weight=verts["weight"], inf_bone=verts["bone"],
                       inf_wide=verts["wide"], pad=verts["pad"],
                       corners=corners, texture=texture,
                       specular=specular, skins=skins, global_weight=verts.get("global"))


def _read_corners(r: Reader, n: int, with_count: bool) -> npt.NDArray[np.void]:
    """The ``n`` triangle corner records: fixed ones, or from 1.2 records with a UV-set count."""
    if not with_count:
        return r.array(corner_dtype(1, False), n, "corners")
    if n == 0:
        return np.zeros(0, corner_dtype(0, True))
    s0 = r.tell()
    r.need(17)
    buf = np.frombuffer(r.data, np.uint8)
    nuv = int(buf[s0 + 16])
    size = 17 + 8 * nuv
    # Every corner's UV-set count, read through a strided view (no index array).
    if n * size <= r.remaining() and np.all(buf[s0 + 16:s0 + 16 + size * n:size] == nuv):
        # Every corner has the same number of UV sets (every file seen): the records stay a
        # read-only view of the input (most of a PET file is its corners), their count field
        # left out (the mesh's corner_nuv is None: every corner has all the sets). The chain
        # search below would take ~2x the whole 20 MB sample's read.
        return r.array(corner_dtype(nuv, True), n, "corners")[["vertex", "normal", "uv"]]
    return _read_corners_varying(r, buf, n)


def _read_corners_varying(r: Reader, buf: npt.NDArray[np.uint8], n: int) -> npt.NDArray[np.void]:
    """Corners whose UV-set count varies (§B.8: take the max and pad)."""
    s0, end = r.tell(), r.end
    # Offsets the corner list can reach: a window for ~2 UV sets a corner, doubled while the
    # chain runs past it (int32: inputs are under 1 GiB).
    est = n * (17 + 16) + 1
    while True:
        lim = min(end, s0 + est)
        cand = np.arange(s0, lim + 1, dtype=np.int32)
        nxt = cand + 17 + 8 * buf[np.minimum(cand + 16, len(buf) - 1)].astype(np.int32)
        d = len(cand)
        # Sentinels: D = runs past the section, D + 1 = past the window.
        jn = np.where((cand + 17 <= end) & (nxt <= end),
                      np.where(nxt <= lim, nxt - s0, d + 1), d).astype(np.int32)
        del cand, nxt
        jn = np.concatenate([jn, np.array([d, d + 1], np.int32)])
        chain = follow(jn, n + 1).astype(np.int64)
        if lim < end and np.any(chain == d + 1):
            est *= 2
            continue
        break
    bad = np.flatnonzero(chain >= d)
    if len(bad):
        raise r.truncated(expected=f"{n} corners", actual="the section ended first",
                          field=f"corners[{int(bad[0]) - 1}]")
    st = s0 + chain[:-1]
    nuv = buf[st + 16]
    recs = np.zeros(n, corner_dtype(int(nuv.max()), True))
    raw = recs.view(np.uint8).reshape(n, recs.dtype.itemsize)
    raw[:, :17] = buf[st[:, None] + np.arange(17)]  # vertex, normal, UV-set count
    for k in range(int(nuv.max())):  # per UV set, not per corner
        has = nuv > k
        raw[has, 17 + 8 * k:25 + 8 * k] = buf[st[has, None] + 17 + 8 * k + np.arange(8)]
    r.seek(int(s0 + chain[-1]))
    return recs


def check_corner_range(mesh: MeshSection, cv: npt.NDArray[Any]) -> None:
    """The corners' vertex indices (``cv``: the mesh's, converted) must name a vertex."""
    if len(cv) and int(cv.max()) >= mesh.vertex_count:
        bad = int(np.argmax(cv >= mesh.vertex_count))
        raise CorruptDataError(FMT, "corner vertex index out of range",
                               field=f"MESH.corners[{bad}].vertex",
                               expected=f"< {mesh.vertex_count}", actual=int(cv[bad]))


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
