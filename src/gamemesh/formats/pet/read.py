"""PET bytes -> :class:`PetDocument` (spec §B.1-§B.13, reader algorithm §B.17)."""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
from .layout import (
    FANM_DT,
    FMT,
    FOURCCS,
    KINDS,
    SKIN_DT,
    SMTL_SIZES,
    TEXT_DT,
    VERSIONS,
    corner_dtype,
)

# A vertex with more influence pairs than this is walked by the slow path (no real file has it).
_FAST_PAIRS = 32
# Up to this many records (bones, vertices) are found by a plain walk over the bytes: a few
# hundred small records cost less that way than the vectorized search's fixed numpy cost.
_SMALL = 512
_EMPTY = b""


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
        path = ctx.path if isinstance(ctx.path, Path) else Path(ctx.path)
        ext = path.suffix.lower().lstrip(".")
        if ext in KINDS:
            return ext
    return "pet"


def read(data: bytes, ctx: Context) -> PetDocument:
    kind = kind_of(ctx)
    r = Reader(data, FMT)
    spans, tail = _split(r)
    version = _find_version(r, spans)
    doc = PetDocument(kind=kind, version=version, tail=tail)
    fast = _FAST_13 if version >= (1, 3) else _FAST_12
    view = r._view
    for fourcc, start, end in spans:
        body: Payload | None
        if fourcc == b"BONE":
            body = _bones_at(view, start, end, version, kind == "apet")
        else:
            body = _section_at(view, start, end, fast.get(fourcc))
        if body is None:
            sub = r.window(start, end - start)
            with sub.field(fourcc.decode("latin-1")):
                body = _read_section(sub, fourcc, version, kind, ctx)
        doc.sections.append(Section(fourcc, body))
    return doc


def _section_at(view: memoryview, start: int, end: int, parse: _ParseAt | None) -> Any:
    """:func:`_read_section`'s body of a section whose fast reader (``parse``) reads it:
    what the section's Reader would give when that reader takes it, without the Reader (a
    window and a field path cost more than the parse of a small section). None when there
    is no such reader or it gives up: the Reader's way then reads (and reports)."""
    if parse is None:
        return None
    try:
        body, pos = parse(view, start, end)
    except _Short:
        return None
    body.trailing = bytes(view[pos:end])
    return body


def _split(r: Reader) -> tuple[list[tuple[bytes, int, int]], bytes]:
    """(FourCC, payload start, payload end) per section; a last partial header is kept raw."""
    spans: list[tuple[bytes, int, int]] = []
    # The headers through struct; a length that does not fit is left to the checked walk
    # below, which reports it.
    view, pos, end = r._view, r.pos, r.end
    while end - pos >= 8:
        length = _U32.unpack_from(view, pos + 4)[0]
        if length > end - pos - 8:
            break
        spans.append((bytes(view[pos:pos + 4]), pos + 8, pos + 8 + length))
        pos += 8 + length
    r.seek(pos)
    while r.remaining() >= 8:
        at = r.tell()
        fourcc = r.bytes(4)
        length = r.u32("section.length")
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
            return _finish(r, _read_smtl(r))
        except _Unsupported as e:
            ctx.note("pet.smtl_kept_raw", f"SMTL kept as raw bytes: {e}")
            return RawSection(fourcc, r.window(r.start, r.end - r.start).rest())
    if fourcc == b"ANIM":
        return _finish(r, _read_anim(r, version))
    fn = _READERS.get(fourcc)
    if fn is None:
        if fourcc not in FOURCCS:
            ctx.note("pet.unknown_section", f"unknown section {fourcc!r} kept as raw bytes",
                     "info")
        return RawSection(fourcc, r.rest())
    return _finish(r, fn(r))


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
    other = r.window(start, end - start)
    other._fields = list(r._fields)  # keep the field path for messages
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


# -- small fields -------------------------------------------------------------------------------
def read_boneid(r: Reader, field: str = "bone") -> tuple[int, bool]:
    """§B.0: u8; 0xFF = none; 0xFE escapes to an i16 (kept as read; negative = none)."""
    b = r.u8(field)
    if b == 0xFF:
        return -1, False
    if b == 0xFE:
        return r.i16(field), True
    return b, False


def _lstr(r: Reader, field: str) -> bytes:
    n = r.u32(field)
    r.count(n, 1, field)
    return r.bytes(n, field)


def _cstr(r: Reader, field: str) -> bytes:
    """Bytes up to a NUL, which is consumed; the NUL must come before the section ends."""
    rest = r.peek(r.remaining())
    k = rest.find(b"\0")
    if k < 0:
        raise r.truncated(expected="a NUL-terminated name", actual="no NUL", field=field)
    r.skip(k + 1)
    return rest[:k]


# -- sections ------------------------------------------------------------------------------------
def _read_text(r: Reader) -> TextSection:
    fast = _fast(r, _text_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    n = r.count(r.u32("count"), TEXT_DT.itemsize, "count")
    recs = r.array(TEXT_DT, n, "textures")
    raw = recs.tobytes()
    out = TextSection()
    for i in range(n):
        rec = recs[i]
        base = i * TEXT_DT.itemsize
        out.textures.append(Texture(name_raw=raw[base:base + 32], flag=int(rec["flag"]),
                                    group=int(rec["group"]), pad=raw[base + 34:base + 36],
                                    diffuse=int(rec["diffuse"]), handle=int(rec["handle"])))
    return out


def _read_smtl(r: Reader) -> SmtlSection:
    fast = _fast(r, _smtl_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    out = SmtlSection()
    n = r.count(r.u32("count"), 8, "count")
    for i in range(n):
        with r.field(f"materials[{i}]"):
            mat = SmtlMaterial(_lstr(r, "name"))
            nv = r.count(r.u32("nvalues"), 12, "nvalues")
            for j in range(nv):
                with r.field(f"values[{j}]"):
                    name = _lstr(r, "name")
                    kind = r.u32("type")
                    if kind == 8:
                        value = _lstr(r, "value")
                    elif kind in SMTL_SIZES:
                        value = r.bytes(SMTL_SIZES[kind], "value")
                    elif kind == 7:
                        msg = "a MATRIXARRAY value (size unknown, no implementation reads it)"
                        raise _Unsupported(msg)
                    else:
                        msg = "unknown SMTL value type"
                        raise r.corrupt(msg, expected="0..8",
                                        actual=kind, field="type")
                    mat.values.append(SmtlValue(name, kind, value))
            out.materials.append(mat)
    return out


def _read_bones(r: Reader, version: tuple[int, int], apet: bool) -> BoneSection:
    out = BoneSection()
    n = r.u8("count")
    if n == 0 and r.remaining() >= 2:
        n = r.u16("count")
        out.wide_count = True
    per = 2 + (0 if apet else 48 + (4 if version >= (1, 3) else 0))
    r.count(n, per, "count")
    if _bones_fast(r, n, per - 2, version >= (1, 3) and not apet, out):
        return out
    mats: list[bytes] = []
    extra: list[bytes] = []
    for i in range(n):
        with r.field(f"bones[{i}]"):
            out.names.append(_cstr(r, "name"))
            parent, wide = read_boneid(r, "parent")
            out.parents.append(parent)
            out.parent_wide.append(wide)
            if not apet:
                mats.append(r.bytes(48, "matrix"))
                if version >= (1, 3):
                    extra.append(r.bytes(4, "extra"))
    if not apet:
        out.matrices = np.frombuffer(b"".join(mats), "<f4").reshape(n, 12).copy()
        if version >= (1, 3):
            out.extra = np.frombuffer(b"".join(extra), "<f4").copy()
    return out


def _bones_fast(r: Reader, n: int, tail: int, extra: bool, out: BoneSection) -> bool:
    """The ``n`` bone records (name, NUL, id, ``tail`` bytes) found at once: the next record
    after every offset of the section is computed for all offsets and the chain from the
    first followed (as for vertices). False (nothing read) when a record would not fit:
    the record-by-record reader then reports where."""
    if n == 0:
        return False
    if n <= _SMALL:
        if r.end - r.tell() <= _SCAN_BYTES:
            return _bones_scan(r, n, tail, extra, out)
        return _bones_small(r, n, tail, extra, out)
    s0 = r.tell()
    b = np.frombuffer(r._view, np.uint8)[s0:r.end]
    size = len(b)
    # The name's NUL for every offset (size: none): a running minimum from the end.
    nul = np.where(b == 0, np.arange(size, dtype=np.int32), np.int32(size))
    nul = np.minimum.accumulate(nul[::-1])[::-1]
    nxt = nul + np.int32(2 + tail) + 2 * (b[np.minimum(nul + 1, size - 1)] == 0xFE)
    jn = np.full(size + 2, size + 1, np.int32)
    ok = (nul < size) & (nxt <= size)
    jn[:size][ok] = nxt[ok]
    chain = _follow(jn, n + 1)
    if int(chain.max()) > size:
        return False
    st = chain[:-1]
    ends = nul[st]
    raw = bytes(b)
    out.names = [raw[i:j] for i, j in zip(st.tolist(), ends.tolist(), strict=True)]
    pb = b[ends + 1].astype(np.int32)
    wide = pb == 0xFE
    lo = b[np.minimum(ends + 2, size - 1)].astype(np.int32)
    hi = b[np.minimum(ends + 3, size - 1)].astype(np.int32)
    par = np.where(wide, ((hi << 8) | lo).astype(np.uint16).view(np.int16),
                   np.where(pb == 0xFF, -1, pb))
    out.parents = par.tolist()
    out.parent_wide = wide.tolist()
    if tail:
        rec = (ends + 2 + 2 * wide)[:, None] + np.arange(tail)
        body = b[rec]
        out.matrices = body[:, :48].copy().view("<f4").reshape(n, 12)
        if extra:
            out.extra = body[:, 48:52].copy().view("<f4").reshape(n)
    r.seek(s0 + int(chain[-1]))
    return True


def _bones_small(r: Reader, n: int, tail: int, extra: bool, out: BoneSection) -> bool:
    """:func:`_bones_fast` for a few hundred bones: the records walked one by one."""
    s0 = r.tell()
    raw = bytes(r._view[s0:r.end])
    size = len(raw)
    names: list[bytes] = []
    parents: list[int] = []
    wides: list[bool] = []
    bodies: list[int] = []
    p = 0
    for _ in range(n):
        k = raw.find(b"\0", p)
        if k < 0 or k + 1 >= size:
            return False
        wide = raw[k + 1] == 0xFE
        body = k + 4 if wide else k + 2
        if body + tail > size:
            return False
        names.append(raw[p:k])
        if wide:
            parents.append(int.from_bytes(raw[k + 2:k + 4], "little", signed=True))
        else:
            parents.append(-1 if raw[k + 1] == 0xFF else raw[k + 1])
        wides.append(wide)
        bodies.append(body)
        p = body + tail
    out.names, out.parents, out.parent_wide = names, parents, wides
    if tail:
        rec = np.array(bodies, np.int64)[:, None] + np.arange(tail)
        recs = np.frombuffer(raw, np.uint8)[rec]
        out.matrices = recs[:, :48].copy().view("<f4").reshape(n, 12)
        if extra:
            out.extra = recs[:, 48:52].copy().view("<f4").reshape(n)
    r.seek(s0 + p)
    return True


def _bones_scan(r: Reader, n: int, tail: int, extra: bool, out: BoneSection) -> bool:
    """:func:`_bones_small` by one regular-expression scan (:func:`_bone_records`)."""
    s0 = r.tell()
    used = _bone_records(bytes(r._view[s0:r.end]), n, tail, extra, out)
    if used is None:
        return False
    r.seek(s0 + used)
    return True


def _bone_records(raw: bytes, n: int, tail: int, extra: bool, out: BoneSection) -> int | None:
    """The ``n`` bone records at the start of ``raw`` into ``out``, by one regular-expression
    scan: each match a record (the name up to its NUL, the id byte or the 0xFE escape and its
    two bytes, the ``tail`` bytes). The bytes they use; None (``out`` untouched) unless the
    first ``n`` matches are the records one after the other from the start, which is what
    the record walk reads (names of more than ``_NAME_SCAN`` bytes are left to the walk
    too).

    The scan is linear: a name is at most ``_NAME_SCAN`` bytes, matched possessively, so a
    start that is no record costs a bounded number of steps, and only as many bytes as
    ``n`` such records can span are scanned (an unbounded name made a section without NULs
    cost steps quadratic in its length: 64 KiB took 20 s)."""
    recs = _bone_record(tail).findall(raw[:n * (_NAME_SCAN + 4 + tail)])
    if len(recs) < n:
        return None
    del recs[n:]
    wholes, names, wide_ids, ids, bodies = zip(*recs, strict=True) if n else ((),) * 5
    whole = b"".join(wholes)
    # Matches that tile the start of raw are the walk's records: a match at the start is
    # the walk's first record (one match per start), and so on from each end.
    if not raw.startswith(whole):
        return None
    out.names = list(names)
    one = b"".join(ids)
    if len(one) == n:
        # No escaped id (the usual file): the ids are those bytes, 0xFF none.
        out.parent_wide = [False] * n
        out.parents = list(one) if 0xFF not in one else [-1 if y == 0xFF else y for y in one]
    else:
        # Escaped ids (signed 16-bit) and one-byte ids apart, each kind's bytes read at once
        # and put back in record order.
        wide = np.fromiter(map(len, wide_ids), np.int64, n) == 2
        par = np.empty(n, np.int64)
        short = np.frombuffer(one, np.uint8).astype(np.int64)
        short[short == 0xFF] = -1
        par[~wide] = short
        par[wide] = np.frombuffer(b"".join(wide_ids), "<i2")
        out.parent_wide = wide.tolist()
        out.parents = par.tolist()
    if tail:
        recs_u8 = np.frombuffer(b"".join(bodies), np.uint8).reshape(n, tail)
        out.matrices = recs_u8[:, :48].copy().view("<f4").reshape(n, 12)
        if extra:
            out.extra = recs_u8[:, 48:52].copy().view("<f4").reshape(n)
    return len(whole)


def _bones_at(view: memoryview, start: int, end: int, version: tuple[int, int],
              apet: bool) -> BoneSection | None:
    """:func:`_read_section`'s BONE body when the layout of the file's kind reads it and uses
    it up exactly (as :func:`_with_retry` then keeps it) by :func:`_bone_records`, without a
    Reader; None for anything else (no bones, the other layout, a record that does not fit,
    a large section): the Reader's way then reads (and reports)."""
    if end - start < 3 or end - start > _SCAN_BYTES:
        return None
    out = BoneSection()
    n, pos = view[start], start + 1
    if n == 0:
        n, pos = _U16.unpack_from(view, pos)[0], pos + 2
        out.wide_count = True
    tail = 0 if apet else 48 + (4 if version >= (1, 3) else 0)
    if not 0 < n <= _SMALL or not n * (2 + tail) <= end - pos <= n * (_NAME_SCAN + 4 + tail):
        return None
    used = _bone_records(bytes(view[pos:end]), n, tail, version >= (1, 3) and not apet, out)
    return out if used == end - pos else None


# Up to this many bytes, a BONE section is scanned by :func:`_bones_scan` (its matches of
# bytes past the records stay a few thousand).
_SCAN_BYTES = 1 << 16
# The longest bone name the scan matches: a longer one is read by the walk (the same
# result, only slower). Bone names are short ("Bip01 L Forearm").
_NAME_SCAN = 64


def _bone_record(tail: int) -> re.Pattern[bytes]:
    """A bone record with ``tail`` bytes after its id: (record, name, escaped id, id, tail
    bytes)."""
    pattern = _BONE_RECORDS.get(tail)
    if pattern is None:
        pattern = _BONE_RECORDS[tail] = re.compile(
            rb"(([^\0]{0,%d}+)\0(?:\xfe(..)|([^\xfe]))(.{%d}))" % (_NAME_SCAN, tail),
            re.DOTALL)
    return pattern


_BONE_RECORDS: dict[int, re.Pattern[bytes]] = {}

_KEYS = (("pos", 16), ("rot", 20), ("scale", 16))


def _read_anim(r: Reader, version: tuple[int, int]) -> AnimSection:
    """§B.7: the all-versions layout ({t,xyz}, {t,xyzw}, scale list always, flags in 1.3)."""
    fast = _fast(r, _anim_flags_at if version >= (1, 3) else _anim_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    out = AnimSection(terminator=b"")
    i = 0
    while not r.at_end():
        at = r.tell()
        bone, wide = read_boneid(r, f"tracks[{i}].bone")
        if bone == -1:
            out.terminator = bytes(r.window(at, r.tell() - at).rest())
            break
        track = Track(bone=bone, wide=wide)
        with r.field(f"tracks[{i}]"):
            for name, size in _KEYS:
                n = r.count(r.u32(f"n{name}"), size, f"n{name}")
                setattr(track, name, r.array("<f4", n * size // 4, name).reshape(n, size // 4))
            if version >= (1, 3):
                n = r.count(r.u32("nflag"), 8, "nflag")
                track.flags = r.array("<f4", n * 2, "flags").reshape(n, 2)
        out.tracks.append(track)
        i += 1
    return out


def _read_fanm(r: Reader) -> FanmSection:
    n = r.count(r.u32("count"), FANM_DT.itemsize, "count")
    return FanmSection(entries=r.array(FANM_DT, n, "entries").copy())


def _read_fram(r: Reader) -> FramSection:
    fast = _fast(r, _fram_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    out = FramSection()
    n = r.count(r.u32("count"), 16, "count")
    for i in range(n):
        with r.field(f"frames[{i}]"):
            index = r.u32("index")
            chunks = (_lstr(r, "chunk0"), _lstr(r, "chunk1"), _lstr(r, "chunk2"))
            # #2/#3 omit `check` in short sections; read it only when 4 bytes remain (§B.10).
            check = r.u32("check") if r.remaining() >= 4 else None
            out.frames.append(Frame(index, chunks, check))
    return out


def _read_moti(r: Reader) -> MotiSection:
    fast = _fast(r, _moti_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    out = MotiSection()
    n = r.count(r.u32("count"), 28, "count")
    for i in range(n):
        with r.field(f"motions[{i}]"):
            out.motions.append(Motion(
                name=_lstr(r, "name"), frame_start=r.u32("frame_start"),
                frame_end=r.u32("frame_end"), next_move=_lstr(r, "next_move"),
                connection_method=_lstr(r, "connection_method"),
                connection_time=r.f32("connection_time"), root_bone=_lstr(r, "root_bone")))
    return out


def _read_coll(r: Reader) -> CollSection:
    fast = _fast(r, _coll_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    out = CollSection()
    n = r.count(r.u32("count"), 48, "count")
    for i in range(n):
        with r.field(f"boxes[{i}]"):
            shape, show = r.u32("shape"), r.u32("show")
            names = [_lstr(r, f) for f in ("box_name", "bone_name", "option1", "option2")]
            box = r.array("<f4", 6, "box").copy()
            out.boxes.append(CollBox(shape, show, names[0], names[1], names[2], names[3], box))
    return out


def _read_extr(r: Reader) -> ExtrSection:
    fast = _fast(r, _extr_at)
    if fast is not None:
        return fast  # type: ignore[no-any-return]
    out = ExtrSection()
    n = r.count(r.u32("count"), 1, "count")
    for i in range(n):
        bone, wide = read_boneid(r, f"bones[{i}]")
        out.bones.append(bone)
        out.wide.append(wide)
    return out


# -- small records, fast -------------------------------------------------------------------------
# The records above read through struct at a running offset: a few hundred small fields cost
# ~1 us each through the Reader's checked calls. Each reader checks what the Reader would
# and, when a record does not fit (or holds what only the Reader reports, such as an SMTL
# MATRIXARRAY), gives up: the Reader's walk then reads the section and reports the error.
_U32 = struct.Struct("<I")
_U16 = struct.Struct("<H")
_U32X2 = struct.Struct("<II")
_I16 = struct.Struct("<h")
_F32 = struct.Struct("<f")
_TEXT_REC = struct.Struct("<32sbB2sII")
_ParseAt = Callable[[memoryview, int, int], tuple[Any, int]]


class _Short(Exception):
    """A fast reader met a record that does not fit."""


def _fast(r: Reader, parse: _ParseAt) -> Any:
    """``parse(view, pos, end)``'s section body, the reader moved past it; None (the reader
    untouched) when a record does not fit."""
    try:
        body, pos = parse(r._view, r.pos, r.end)
    except _Short:
        return None
    r.seek(pos)
    return body


def _u32_at(view: memoryview, pos: int, end: int) -> int:
    if pos + 4 > end:
        raise _Short
    return int(_U32.unpack_from(view, pos)[0])


def _count_at(view: memoryview, pos: int, end: int, size: int) -> int:
    """A u32 count at ``pos`` whose ``size``-byte items fit after it."""
    n = _u32_at(view, pos, end)
    if n * size > end - pos - 4:
        raise _Short
    return n


def _lstr_at(view: memoryview, pos: int, end: int) -> tuple[bytes, int]:
    n = _u32_at(view, pos, end)
    pos += 4
    if n > end - pos:
        raise _Short
    return bytes(view[pos:pos + n]), pos + n


def _text_at(view: memoryview, pos: int, end: int) -> tuple[TextSection, int]:
    n = _count_at(view, pos, end, _TEXT_REC.size)
    pos += 4
    out = TextSection()
    for _ in range(n):
        name, flag, group, pad, diffuse, handle = _TEXT_REC.unpack_from(view, pos)
        out.textures.append(Texture(name, flag, group, pad, diffuse, handle))
        pos += _TEXT_REC.size
    return out, pos


def _smtl_at(view: memoryview, pos: int, end: int) -> tuple[SmtlSection, int]:
    n = _count_at(view, pos, end, 8)
    pos += 4
    out = SmtlSection()
    for _ in range(n):
        name, pos = _lstr_at(view, pos, end)
        mat = SmtlMaterial(name)
        nv = _count_at(view, pos, end, 12)
        pos += 4
        for _ in range(nv):
            vname, pos = _lstr_at(view, pos, end)
            kind = _u32_at(view, pos, end)
            pos += 4
            if kind == 8:
                value, pos = _lstr_at(view, pos, end)
            else:
                size = SMTL_SIZES.get(kind)
                if size is None or pos + size > end:
                    raise _Short  # MATRIXARRAY and unknown types: the Reader's walk says so
                value = bytes(view[pos:pos + size])
                pos += size
            mat.values.append(SmtlValue(vname, kind, value))
        out.materials.append(mat)
    return out, pos


def _boneid_at(view: memoryview, pos: int, end: int) -> tuple[int, bool, int]:
    """:func:`read_boneid` at ``pos``: (id, escaped, the offset after it)."""
    if pos >= end:
        raise _Short
    b = view[pos]
    if b == 0xFE:
        if pos + 3 > end:
            raise _Short
        return int(_I16.unpack_from(view, pos + 1)[0]), True, pos + 3
    return (-1 if b == 0xFF else b), False, pos + 1


def _anim_keys_at(view: memoryview, pos: int, end: int, sizes: tuple[int, ...]
                  ) -> tuple[AnimSection, int]:
    out = AnimSection(terminator=b"")
    tracks = out.tracks
    frombuffer, u32 = np.frombuffer, _U32.unpack_from
    # Each key kind's record as one item: frombuffer gives the (n, width) floats at once.
    kinds = [(size, _KEY_ROWS[size]) for size in sizes]
    while pos < end:
        at = pos
        bone, wide, pos = _boneid_at(view, pos, end)
        if bone == -1:
            out.terminator = bytes(view[at:pos])
            break
        keys: list[npt.NDArray[np.float32]] = []
        for size, row in kinds:
            # _count_at inline (a call per key list is a large share of a small file's).
            if pos + 4 > end:
                raise _Short
            n = u32(view, pos)[0]
            pos += 4
            if n * size > end - pos:
                raise _Short
            keys.append(frombuffer(view, row, n, pos))
            pos += n * size
        tracks.append(Track(bone, wide, *keys))
    return out, pos


# A key record of each size as a dtype of that many bytes of floats.
_KEY_ROWS = {size: np.dtype(("<f4", (size // 4,))) for size in (8, 16, 20)}


def _anim_at(view: memoryview, pos: int, end: int) -> tuple[AnimSection, int]:
    return _anim_keys_at(view, pos, end, (16, 20, 16))


def _anim_flags_at(view: memoryview, pos: int, end: int) -> tuple[AnimSection, int]:
    return _anim_keys_at(view, pos, end, (16, 20, 16, 8))


def _fram_at(view: memoryview, pos: int, end: int) -> tuple[FramSection, int]:
    n = _count_at(view, pos, end, 16)
    pos += 4
    out = FramSection()
    for _ in range(n):
        index = _u32_at(view, pos, end)
        c0, pos = _lstr_at(view, pos + 4, end)
        c1, pos = _lstr_at(view, pos, end)
        c2, pos = _lstr_at(view, pos, end)
        check = None
        if end - pos >= 4:  # #2/#3 omit it in short sections (§B.10)
            check = _u32_at(view, pos, end)
            pos += 4
        out.frames.append(Frame(index, (c0, c1, c2), check))
    return out, pos


def _moti_at(view: memoryview, pos: int, end: int) -> tuple[MotiSection, int]:
    n = _count_at(view, pos, end, 28)
    pos += 4
    out = MotiSection()
    for _ in range(n):
        name, pos = _lstr_at(view, pos, end)
        if pos + 8 > end:
            raise _Short
        start, stop = _U32X2.unpack_from(view, pos)
        nxt, pos = _lstr_at(view, pos + 8, end)
        method, pos = _lstr_at(view, pos, end)
        if pos + 4 > end:
            raise _Short
        time = float(_F32.unpack_from(view, pos)[0])
        root, pos = _lstr_at(view, pos + 4, end)
        out.motions.append(Motion(name, start, stop, nxt, method, time, root))
    return out, pos


def _coll_at(view: memoryview, pos: int, end: int) -> tuple[CollSection, int]:
    n = _count_at(view, pos, end, 48)
    pos += 4
    out = CollSection()
    for _ in range(n):
        if pos + 8 > end:
            raise _Short
        shape, show = _U32X2.unpack_from(view, pos)
        box_name, pos = _lstr_at(view, pos + 8, end)
        bone_name, pos = _lstr_at(view, pos, end)
        option1, pos = _lstr_at(view, pos, end)
        option2, pos = _lstr_at(view, pos, end)
        if pos + 24 > end:
            raise _Short
        box = np.frombuffer(view, "<f4", 6, pos).copy()
        pos += 24
        out.boxes.append(CollBox(shape, show, box_name, bone_name, option1, option2, box))
    return out, pos


def _extr_at(view: memoryview, pos: int, end: int) -> tuple[ExtrSection, int]:
    n = _count_at(view, pos, end, 1)
    pos += 4
    out = ExtrSection()
    for _ in range(n):
        bone, wide, pos = _boneid_at(view, pos, end)
        out.bones.append(bone)
        out.wide.append(wide)
    return out, pos


def _fanm_at(view: memoryview, pos: int, end: int) -> tuple[FanmSection, int]:
    """:func:`_read_fanm` straight from the bytes: the records copied out at once."""
    n = _count_at(view, pos, end, FANM_DT.itemsize)
    pos += 4
    entries = np.frombuffer(view, FANM_DT, n, pos).copy()
    return FanmSection(entries=entries), pos + n * FANM_DT.itemsize


# The sections :func:`read` parses straight from the bytes (by version: the ANIM layout).
_FAST_12: dict[bytes, _ParseAt] = {
    b"TEXT": _text_at, b"SMTL": _smtl_at, b"ANIM": _anim_at, b"FANM": _fanm_at,
    b"FRAM": _fram_at, b"MOTI": _moti_at, b"COLL": _coll_at, b"EXTR": _extr_at}
_FAST_13 = {**_FAST_12, b"ANIM": _anim_flags_at}

_READERS: dict[bytes, Callable[[Reader], Any]] = {
    b"TEXT": _read_text, b"FANM": _read_fanm, b"FRAM": _read_fram, b"MOTI": _read_moti,
    b"COLL": _read_coll, b"EXTR": _read_extr}


# -- MESH -----------------------------------------------------------------------------------------
def _read_mesh(r: Reader, version: tuple[int, int], mpet: bool) -> MeshSection:
    skins = None
    if mpet:
        ns = r.u8("nskin")
        skins = r.array(SKIN_DT, ns, "skins").copy()
    nvert = r.count(r.u32("nvert"), 16, "nvert")
    head = 16 if mpet else 12
    buf = np.frombuffer(r._view, np.uint8)
    with r.field("vertices"):
        small = (_vertices_small(r._view, buf, r.tell(), r.end, nvert, head)
                 if 0 < nvert <= _SMALL else None)
        if small is not None:
            starts, verts = small
        else:
            starts, verts = _vertices(r, buf, nvert, head)
    r.seek(int(starts[-1]))
    npoly = r.count(r.u32("npoly"), 3 * (17 if version >= (1, 2) else 24), "npoly")
    with r.field("polygons"):
        corners = _read_corners(r, buf, 3 * npoly, version >= (1, 2))
    texture = r.array("u1", npoly, "texture").copy()
    specular = r.array("u1", npoly, "specular").copy() if version >= (1, 2) else None
    return MeshSection(positions=verts["positions"], inf_count=verts["count"],
                       inf_weight=verts["weight"], inf_bone=verts["bone"],
                       inf_wide=verts["wide"], pad=verts["pad"],
                       corner_vertex=corners[0], corner_normal=corners[1],
                       corner_uv=corners[2], corner_nuv=corners[3], texture=texture,
                       specular=specular, skins=skins, global_weight=verts.get("global"))


def _vertex_next(buf: npt.NDArray[np.uint8], starts: npt.NDArray[Any], end: int,
                 head: int, max_pairs: int | None) -> npt.NDArray[np.int32]:
    """For each candidate start, where the next vertex would start: the pairs (u8 weight,
    bone id) are read until the weights reach 255, then 2 pad bytes follow a single pair.
    -1 = runs past the section; -2 = more than ``max_pairs`` pairs (decided by the slow path).
    Vectorized over all candidates; the loop is over the pair rank."""
    # int32 throughout: inputs are under 1 GiB and this runs over every even offset.
    n = len(starts)
    out = np.full(n, -1, np.int32)
    if n == 0:
        return out
    base = int(starts.min())
    # The section from the first start as 16-bit words (every record part is even sized, so
    # a walk stays on word boundaries): one gather reads a pair's weight and bone byte. The
    # padding words (weight 255) end any walk that runs past the section, so no step needs a
    # bounds check; such walks end beyond ``end`` and become -1. Every walk still active
    # at a rank has read the same number of pairs (rank + 1), so none is counted per walk.
    stop = end
    if max_pairs is not None:  # a walk reads at most head + 4 bytes a pair
        stop = min(end, int(starts.max()) + head + 4 * max_pairs + 4)
    body = buf[base:max(base, stop)]
    padded = np.full(len(body) + (len(body) & 1) + head + 8, 0xFF, np.uint8)
    padded[:len(body)] = body
    words = padded.view("<u2")
    idx = np.arange(n, dtype=np.int32)
    cur = ((starts.astype(np.int64) - base + head) >> 1).astype(np.int32)
    total = np.zeros(n, np.int32)
    rank = 0
    while len(idx):
        if max_pairs is not None and rank >= max_pairs:
            out[idx] = -2
            break
        wd = words[cur]
        total += wd & 0xFF
        cur += np.where((wd >> 8) == 0xFE, np.int32(2), np.int32(1))
        done = total >= 255
        # A single pair is followed by 2 pad bytes.
        fin = base + 2 * cur[done] + (2 if rank == 0 else 0)
        fin[fin > end] = -1
        out[idx[done]] = fin
        keep = ~done
        idx, cur, total = idx[keep], cur[keep], total[keep]
        rank += 1
    return out


def _vertices(r: Reader, buf: npt.NDArray[np.uint8], nvert: int,
              head: int) -> tuple[npt.NDArray[np.int64], dict[str, Any]]:
    """The starts and fields of a long vertex list. First found as if no id were escaped
    (0xFE read as a plain id: the search then skips a pass over all offsets): that chain is
    exact up to its first vertex with an escaped id, which the parse sees (``wide``), so
    only then (or when that chain does not fit) does the exact search decide."""
    starts = _vertex_starts(r, buf, nvert, head, escapes=False)
    if starts is not None:
        verts = _parse_plain(buf, starts, head)
        if verts is not None:
            return starts, verts
    exact = _vertex_starts(r, buf, nvert, head)
    assert exact is not None
    return exact, _parse_vertices(buf, exact, head)


def _next_of_offsets(buf: npt.NDArray[np.uint8], s0: int, lim: int, end: int,
                     head: int, escapes: bool = True) -> npt.NDArray[np.int32]:
    """:func:`_vertex_next` (with ``_FAST_PAIRS``) of every even offset ``s0 .. lim``, from
    prefix sums: over the 16-bit words from ``s0`` (pair = weight byte + bone byte), a walk
    from word ``p`` reads ``k`` pairs where ``k`` is the first count whose weights reach
    255, i.e. ``C[p + k] - C[p] >= 255`` for the running sum ``C``; with no 0xFE (escaped
    id) among those pairs this is exact. One contiguous pass per pair count (no gathers);
    walks that meet an escape are left to :func:`_vertex_next` (``escapes``; else they are
    walked as if the 0xFE were a plain id)."""
    m = (lim - s0) // 2 + 1
    h2 = head // 2
    # Words a walk of up to _FAST_PAIRS + 1 pairs from any candidate reads; 0xFFFF beyond
    # the section (weight 255: a walk that gets there ends past ``end``).
    nw = m + h2 + _FAST_PAIRS + 2
    stop = min(end, s0 + 2 * nw)
    words = np.full(nw + 2, 0xFFFF, np.uint16)
    words.view(np.uint8)[:stop - s0] = buf[s0:stop]
    csum: npt.NDArray[np.signedinteger[Any]] = np.zeros(nw + 3, np.int32 if nw < 2**23
                                                        else np.int64)
    np.cumsum(words & 0xFF, out=csum[1:])
    if escapes:
        fe = np.zeros(nw + 3, np.int32)
        np.cumsum((words >> 8) == 0xFE, out=fe[1:])
    # A walk goes on while the running sum stays below its start's sum + 255.
    k = _pair_counts(csum[h2:], m)
    # The word after the last pair (at most nw - 2: k <= _FAST_PAIRS + 1).
    stop_w = np.arange(h2, h2 + m, dtype=np.int32)
    stop_w += k
    out = stop_w * np.int32(2)
    out += np.int32(s0)
    np.add(out, np.int32(2), out=out, where=k == 1)  # the pad after a single pair
    out[out > end] = -1
    out[k > _FAST_PAIRS] = -2
    esc = (np.flatnonzero(fe.take(stop_w) - fe[h2:h2 + m] > 0) if escapes and fe[-1]
           else np.zeros(0, np.int64))
    if len(esc):
        out[esc] = _vertex_next(buf, s0 + 2 * esc.astype(np.int32), end, head, _FAST_PAIRS)
    return out


def _exact_links(buf: npt.NDArray[np.uint8], s0: int, lim: int, end: int,
                 head: int) -> npt.NDArray[np.int32]:
    """The links :func:`_vertex_starts` follows, from :func:`_next_of_offsets`: candidate j
    (offset s0 + 2j) -> the candidate of the next start; D (the candidate count) = runs past
    the section, D + 1 = more than ``_FAST_PAIRS`` pairs, D + 2 = beyond the window."""
    nxt = _next_of_offsets(buf, s0, lim, end, head)
    d = len(nxt)
    jn = np.empty(d + 3, np.int32)
    jn[:d] = (nxt - s0) >> 1
    jn[:d][jn[:d] >= d] = d + 2
    neg = np.flatnonzero(nxt < 0)
    jn[neg] = d - 1 - nxt[neg]  # -1 -> D, -2 -> D + 1
    jn[d:] = (d, d + 1, d + 2)
    return jn


# Candidates per chunk of :func:`_lazy_links`: the chunk's temporaries stay in the CPU cache.
_CHUNK = 1 << 18


def _lazy_links(buf: npt.NDArray[np.uint8], s0: int, lim: int, end: int,
                head: int) -> npt.NDArray[np.int32]:
    """:func:`_exact_links` as if no id were escaped (``_next_of_offsets(..., escapes=False)``),
    computed a chunk of candidates at a time straight as links: the same prefix sums, local to
    the chunk (only differences within a walk matter), so that a large vertex list's dozen
    passes run in the cache instead of streaming whole-list arrays through memory."""
    m = (lim - s0) // 2 + 1
    h2 = head // 2
    nw = m + h2 + _FAST_PAIRS + 2
    stop = min(end, s0 + 2 * nw)
    words = np.full(nw + 2, 0xFFFF, np.uint16)
    words.view(np.uint8)[:stop - s0] = buf[s0:stop]
    jn = np.empty(m + 3, np.int32)
    last = (end - s0) // 2  # links past it run past the section
    for c0 in range(0, m, _CHUNK):
        n = min(m, c0 + _CHUNK) - c0
        base = c0 + h2  # the chunk's first walk's first pair (a word index)
        csum = np.zeros(n + _FAST_PAIRS + 3, np.int32)
        np.cumsum(words[base:base + n + _FAST_PAIRS + 2] & 0xFF, out=csum[1:])
        out = jn[c0:c0 + n]
        link, over = _pair_links(csum, n, base, out)
        # The sentinels, on the few links that need one (past the window: past the section
        # too, or not; more than _FAST_PAIRS pairs).
        far = np.flatnonzero(link >= m)
        if len(far):
            out[far] = np.where(link.take(far) > last, m, m + 2)
        if len(over):
            out[over] = m + 1
    jn[m:] = (m, m + 1, m + 2)
    return jn


# The first pair rank whose walks :func:`_pair_links` counts (to stop its contiguous passes).
_COUNTED = 4


def _pair_links(csum: npt.NDArray[np.int32], n: int, base: int = 0,
                out: npt.NDArray[np.int32] | None = None
                ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.intp]]:
    """For the walks from words 0 .. n - 1 (``csum`` as for :func:`_pair_counts`): the word
    after each walk's pairs and pad (``base + i + k``, plus 1 for the pad after a single
    pair; written to ``out`` when given), and the walks with more than ``_FAST_PAIRS`` pairs
    (their words are not meaningful).

    ``k`` is 1 + the ranks r >= 1 whose running sum stays below 255, and a walk whose rank 1
    does not (k = 1) is the one with the pad: so the word is ``i + 2`` + the ranks r >= 2 that
    do (the running sum only grows), one pass fewer than counting ``k`` first. Contiguous
    passes (counted in int8: no widening per pass) run while many walks go on; the few long
    ones left (mostly offsets inside a record, reading floats as weights) are placed by a
    binary search of the running sum (it only grows, so the first rank that reaches the
    target is where ``searchsorted`` puts it)."""
    target = csum[:n] + 255
    more = np.zeros(n, np.int8)
    short = np.empty(n, np.bool_)
    rank = 2
    while True:
        np.less(csum[rank:rank + n], target, out=short)
        more += short.view(np.int8)
        # Most walks read more than a few pairs (offsets inside records read floats as
        # weights): the first ranks are not counted.
        going = int(np.count_nonzero(short)) if rank >= _COUNTED else n
        if not going or going * 32 < n or rank == _FAST_PAIRS:
            break
        rank += 1
    link = np.empty(n, np.int32) if out is None else out
    np.add(more, np.arange(base + 2, base + n + 2, dtype=np.int32), out=link)
    if not going:
        return link, np.zeros(0, np.intp)
    left = np.flatnonzero(short)
    # Each long walk's pair count, capped at _FAST_PAIRS + 1 (= too many).
    k = np.minimum(np.searchsorted(csum, target.take(left)) - left, _FAST_PAIRS + 1)
    link[left] = left + k + base
    return link, left[k > _FAST_PAIRS]


# Up to this many (walk, count) pairs, :func:`_pair_counts` checks the remaining counts at once.
_TAIL = 1 << 16


def _pair_counts(csum: npt.NDArray[np.int32], n: int) -> npt.NDArray[np.int8]:
    """For the walks from words 0 .. n - 1 (``csum``: the running sum of the weight bytes from
    word 0, with a leading 0): the pairs each reads, 1 + the counts whose sum stays below 255
    (up to ``_FAST_PAIRS`` + 1)."""
    target = csum[:n] + 255
    k = np.ones(n, np.int8)
    rank = 1
    while True:  # contiguous passes over all while many walks go on
        short = csum[rank:rank + n] < target
        k += short
        going = int(np.count_nonzero(short))
        if not going:
            return k
        rank += 1
        if going * 16 < n or rank > _FAST_PAIRS:
            break
    left = np.flatnonzero(short)
    for r in range(rank, _FAST_PAIRS + 1):  # the few left: gathers
        if not len(left):
            break
        if len(left) * (_FAST_PAIRS + 1 - r) <= _TAIL:
            # The last few: every remaining count at once (the running sum only grows, so
            # the counts still short of 255 are the first ones).
            at = left[:, None] + np.arange(r, _FAST_PAIRS + 1)
            k[left] += np.count_nonzero(csum.take(at) < target.take(left)[:, None], axis=1)
            break
        short = csum.take(left + r) < target.take(left)
        left = left[short]
        k[left] += 1
    return k


def _vertex_starts(r: Reader, buf: npt.NDArray[np.uint8], nvert: int, head: int,
                   escapes: bool = True) -> npt.NDArray[np.int64] | None:
    """Offsets of the ``nvert`` vertex records plus the offset after the last one.

    Vertices have variable size, so each start depends on the one before. Rather than walking
    them one by one, compute "the next start" for every even offset (all record parts are even
    sized) and follow that chain by pointer doubling (§ design: no Python loop per vertex).
    Without ``escapes`` (see :func:`_vertices`): None where the exact search must decide."""
    s0, end = r.tell(), r.end
    if nvert == 0:
        return np.array([s0], np.int64)
    # Only offsets the vertex list can reach matter: start with a window for ~4 pairs a
    # vertex and double it while the chain runs past it.
    est = nvert * (head + 10)
    while True:
        lim = min(end, s0 + est)
        # Candidate j <-> offset s0 + 2j; sentinels D = invalid, D+1 = slow path, D+2 = beyond.
        jn = (_exact_links if escapes else _lazy_links)(buf, s0, lim, end, head)
        d = len(jn) - 3
        chain = _follow(jn, nvert + 1).astype(np.int64)
        top = int(chain.max())  # below D (the usual case): no sentinel to look for
        if lim < end and top >= d and np.any(chain == d + 2):
            est *= 2
            continue
        break
    if top < d:
        return s0 + 2 * chain
    if not escapes:
        return None
    if np.any(chain == d + 1):
        return _vertex_starts_slow(r, buf, nvert, head)
    bad = np.flatnonzero(chain == d)
    if len(bad):
        v = int(bad[0]) - 1
        raise r.truncated(expected="influence weights that reach 255 within the section",
                          actual="the section ended first", field=f"[{v}].weights",
                          offset=int(s0 + 2 * chain[v]))
    return s0 + 2 * chain


def _vertices_small(view: Any, buf: npt.NDArray[np.uint8], s0: int, end: int, nvert: int,
                    head: int) -> tuple[npt.NDArray[np.int64], dict[str, Any]] | None:
    """:func:`_vertex_starts` and :func:`_parse_vertices` of a small vertex list (``_SMALL``
    records at most), walked record by record. None when a record runs past the section or
    has more than ``_FAST_PAIRS`` pairs: the general search then decides (and reports)."""
    # The bytes the walk can reach, as one bytes object (its items are the fastest to read;
    # an index past it is past the section or past the pairs allowed: both give None).
    data = bytes(view[s0:min(end, s0 + nvert * (head + 4 * _FAST_PAIRS + 2))])
    last = end - s0
    starts = [0]  # from s0
    counts: list[int] = []
    weights: list[int] = []
    bones: list[int] = []
    escaped: list[int] = []  # flat pair numbers of escaped (wide) ids
    pads: list[int] = []  # (vertex, pad byte 0, pad byte 1) of single-pair vertices
    cur = 0
    add_weight, add_bone = weights.append, bones.append
    try:
        for v in range(nvert):
            cur += head
            total = k = 0
            while total < 255:
                if k == _FAST_PAIRS:
                    return None
                w = data[cur]
                hb = data[cur + 1]
                total += w
                k += 1
                add_weight(w)
                if hb == 0xFE:
                    if cur + 4 > last:
                        return None
                    escaped.append(len(bones))
                    add_bone(int.from_bytes(data[cur + 2:cur + 4], "little", signed=True))
                    cur += 4
                else:
                    add_bone(hb if hb != 0xFF else -1)
                    cur += 2
            if k == 1:
                pads += (v, data[cur], data[cur + 1])
                cur += 2  # the pad after a single pair
            counts.append(k)
            starts.append(cur)
    except IndexError:
        return None
    if cur > last:
        return None
    st = np.array(starts, np.int64)
    st += s0
    out: dict[str, Any] = {
        "positions": buf[st[:-1, None] + _HEAD_BYTES[:12]].view("<f4")}
    if head == 16:
        out["global"] = buf[st[:-1, None] + _HEAD_BYTES[12:]].view("<f4").reshape(nvert)
    width = max(counts)
    count = np.array(counts, np.int32)
    wide_flat = np.zeros(len(bones), np.bool_)
    if escaped:
        wide_flat[escaped] = True
    if len(bones) == width * nvert:  # every vertex has as many pairs
        weight = np.array(weights, np.uint8).reshape(nvert, width)
        bone = np.array(bones, np.int32).reshape(nvert, width)
        wide = wide_flat.reshape(nvert, width)
    else:  # padded with (weight 0, bone -1, not wide), the pairs in row order
        has = np.arange(width) < count[:, None]
        weight = np.zeros((nvert, width), np.uint8)
        bone = np.full((nvert, width), -1, np.int32)
        wide = np.zeros((nvert, width), np.bool_)
        weight[has] = weights
        bone[has] = bones
        wide[has] = wide_flat
    pad = np.zeros((nvert, 2), np.uint8)
    if pads:
        at = np.array(pads, np.int64).reshape(-1, 3)
        pad[at[:, 0]] = at[:, 1:]
    out.update(count=count, weight=weight, bone=bone, wide=wide, pad=pad)
    return st, out


# Pair ranks as a column (a (P, 1) operand against (N,) vertices: slot-major results).
_RANK_COLUMN = np.arange(_FAST_PAIRS + 1)[:, None]

# The byte offsets of a vertex record's position (0-11) and global weight (12-15).
_HEAD_BYTES = np.arange(16)


def _vertex_starts_slow(r: Reader, buf: npt.NDArray[np.uint8], nvert: int,
                        head: int) -> npt.NDArray[np.int64]:
    """Vertices with more than 32 influence pairs: walked one at a time (bounded by the
    section; only hostile or very odd files get here)."""
    starts = np.empty(nvert + 1, np.int64)
    s = r.tell()
    for v in range(nvert):
        starts[v] = s
        n = int(_vertex_next(buf, np.array([s]), r.end, head, None)[0])
        if n < 0:
            raise r.truncated(expected="influence weights that reach 255 within the section",
                              actual="the section ended first", field=f"[{v}].weights",
                              offset=s)
        s = n
    starts[nvert] = s
    return starts


def _follow(jn: npt.NDArray[Any], count: int) -> npt.NDArray[Any]:
    """The first ``count`` elements of the chain 0 -> jn[0] -> ... : jump 2^m steps at a time
    along a coarse chain, then fill each block with 2^m gathers. Each doubling is a gather
    over all of ``jn`` and each coarse step a Python step (~0.05 us): m = 3 is about the
    cheapest for vertex lists (~10 candidates a vertex)."""
    m = min(3, max(0, math.ceil(math.log2(max(1.0, math.sqrt(count))))))
    block = 1 << m
    jump = jn
    for _ in range(m):
        jump = jump.take(jump)  # take: faster than fancy indexing for a 1-D gather
    blocks = -(-count // block)
    # ~count / 2^m Python steps, indexing a memoryview (~2x faster than ndarray.item).
    step = np.ascontiguousarray(jump).data
    j = 0
    coarse = [0, *(j := step[j] for _ in range(blocks - 1))]
    grid = np.empty((block, blocks), jn.dtype)
    grid[0] = coarse
    for k in range(1, block):
        jn.take(grid[k - 1], out=grid[k])
    return grid.T.reshape(-1)[:count]


def _parse_vertices(buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
                    head: int) -> dict[str, Any]:
    """The vertex records at ``starts`` (plus the end of the last), read as 16-bit words from
    the first start (every record part is even sized): one gather per field, then one pass
    per pair rank over the vertices that have that many pairs."""
    n = len(starts) - 1
    s0, e = int(starts[0]), int(starts[-1])
    words = np.full((e - s0) // 2 + 4, 0xFFFF, np.uint16)
    words.view(np.uint8)[:e - s0] = buf[s0:e]
    ws = (starts[:-1] - s0) >> 1
    # np.take: several times faster than fancy indexing for these gathers.
    pos = words.take(ws[:, None] + np.arange(6)).view("<f4")
    out: dict[str, Any] = {"positions": pos}
    if head == 16:
        out["global"] = words.take(ws[:, None] + np.arange(6, 8)).view("<f4").reshape(n)
    weights: list[npt.NDArray[np.uint8]] = []
    bones: list[npt.NDArray[np.int32]] = []
    wides: list[npt.NDArray[np.bool_]] = []
    count = np.zeros(n, np.int32)
    cur = ws + head // 2
    total = np.zeros(n, np.int32)
    active = np.arange(n)
    while len(active):
        every = len(active) == n  # rank 0 (and any rank all vertices reach)
        c = cur if every else cur.take(active)
        wd = words.take(c)
        lo = wd & 0xFF
        hi = (wd >> 8).astype(np.int32)
        wide = hi == 0xFE
        hi[hi == 0xFF] = -1
        if wide.any():
            hi[wide] = words.take(c[wide] + 1).view(np.int16)
        if every:
            rank_w, rank_b, rank_x = lo.astype(np.uint8), hi, wide
            count += 1
            cur = c + 1 + wide
            total += lo
            active = np.flatnonzero(total < 255)
        else:
            rank_w = np.zeros(n, np.uint8)
            rank_b = np.full(n, -1, np.int32)
            rank_x = np.zeros(n, np.bool_)
            rank_w[active], rank_b[active], rank_x[active] = lo, hi, wide
            count[active] += 1
            cur[active] = c + 1 + wide
            total[active] += lo
            active = active[total.take(active) < 255]
        weights.append(rank_w)
        bones.append(rank_b)
        wides.append(rank_x)
    pad = np.zeros((n, 2), np.uint8)
    single = np.flatnonzero(count == 1)
    pad[single] = words[cur[single]].view(np.uint8).reshape(-1, 2)
    out.update(count=count, weight=_stack(weights, n, np.uint8),
               bone=_stack(bones, n, np.int32), wide=_stack(wides, n, np.bool_), pad=pad)
    return out


def _parse_plain(buf: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
                 head: int) -> dict[str, Any] | None:
    """:func:`_parse_vertices` of records placed by the search without escapes: a record's
    pair count follows from its length (head, pairs, and the pad after a single pair, whose
    weight is then 255), so each pair rank is one gather over all vertices. The influence
    fields come slot-major (their (N, P) transposes: to_scene reads them slot by slot). None
    when a pair has an escaped id (that search was wrong from there on)."""
    n = len(starts) - 1
    if n == 0:
        return None
    s0, e = int(starts[0]), int(starts[-1])
    # Words past the end (0xFFFF) for the gathers of ranks a short record does not have.
    words = np.full((e - s0) // 2 + _FAST_PAIRS + 4, 0xFFFF, np.uint16)
    words.view(np.uint8)[:e - s0] = buf[s0:e]
    ws = (starts - s0) >> 1
    out: dict[str, Any] = {"positions": _records_at(words, ws[:-1], 12).view("<f4").reshape(n, 3)}
    if head == 16:
        out["global"] = _records_at(words, ws[:-1] + 6, 4).view("<f4")
    first = ws[:-1] + head // 2
    count = (np.diff(ws) - head // 2).astype(np.int32)
    w0 = words.take(first)
    single = np.flatnonzero((w0 & 0xFF) == 255)
    count[single] = 1
    p = int(count.max())
    # Every pair rank at once, slot-major ((P, N): row r = each vertex's pair r).
    wd = words.take(first + _RANK_COLUMN[:p])
    valid = count > _RANK_COLUMN[:p]
    hi = wd >> 8
    if ((hi == 0xFE) & valid).any():
        return None
    # Bone 0xFF is -1 (none); slots past a vertex's pairs are weight 0, bone -1.
    bone = np.where(valid & (hi != 0xFF), hi, np.int32(-1))
    weight = np.where(valid, wd, 0).astype(np.uint8)  # the low byte: the weight
    # The pad bytes as one word a vertex (a scatter of 2-byte rows goes byte by byte).
    pad = np.zeros(n, np.uint16)
    pad[single] = words.take(first[single] + 1)
    out.update(count=count, weight=weight.T, bone=bone.T, wide=np.zeros((n, p), np.bool_),
               pad=pad.view(np.uint8).reshape(n, 2))
    return out


def _records_at(words: npt.NDArray[np.uint16], at: npt.NDArray[Any],
                size: int) -> npt.NDArray[np.void]:
    """The ``size`` bytes from each word index ``at``, one item each: a view with an item
    starting at every word, indexed (one gather of whole items instead of one per word
    through an (N, size / 2) index array)."""
    items = np.ndarray((len(words) - size // 2 + 1,), np.dtype((np.void, size)), words,
                       strides=(2,))
    out: npt.NDArray[np.void] = items[at]
    return out


def _stack(cols: list[Any], n: int, dtype: Any) -> Any:
    if not cols:
        return np.zeros((n, 0), dtype)
    return np.stack(cols, axis=1).astype(dtype)


def _read_corners(r: Reader, buf: npt.NDArray[np.uint8], n: int,
                  with_count: bool) -> tuple[Any, Any, Any, Any]:
    if not with_count:
        recs = r.array(corner_dtype(1, False), n, "corners")
        return (recs["vertex"].copy(), recs["normal"].copy(), recs["uv"].copy(), None)
    if n == 0:
        return (np.zeros(0, np.uint32), np.zeros((0, 3), np.float32),
                np.zeros((0, 0, 2), np.float32), np.zeros(0, np.uint8))
    s0 = r.tell()
    r._need(17)
    nuv = int(buf[s0 + 16])
    size = 17 + 8 * nuv
    # Every corner's UV-set count, read through a strided view (no index array).
    if n * size <= r.remaining() and np.all(buf[s0 + 16:s0 + 16 + size * n:size] == nuv):
        # The usual case: every corner has the same number of UV sets. The fields stay
        # read-only views of the input (no copy: most of a PET file is its corners); the
        # one count is broadcast, so that users see it is one without a pass over them all.
        recs = r.array(corner_dtype(nuv, True), n, "corners")
        return recs["vertex"], recs["normal"], recs["uv"], np.broadcast_to(recs["nuv"][:1], (n,))
    return _read_corners_varying(r, buf, n)


def _read_corners_varying(r: Reader, buf: npt.NDArray[np.uint8],
                          n: int) -> tuple[Any, Any, Any, Any]:
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
        chain = _follow(jn, n + 1).astype(np.int64)
        if lim < end and np.any(chain == d + 1):
            est *= 2
            continue
        break
    bad = np.flatnonzero(chain >= d)
    if len(bad):
        raise r.truncated(expected=f"{n} corners", actual="the section ended first",
                          field=f"corners[{int(bad[0]) - 1}]")
    st = s0 + chain[:-1]
    vert = buf[st[:, None] + np.arange(4)].copy().view("<u4").reshape(n)
    normal = buf[st[:, None] + np.arange(4, 16)].copy().view("<f4").reshape(n, 3)
    nuv = buf[st + 16].copy()
    u = int(nuv.max())
    uv = np.zeros((n, u, 2), np.float32)
    for k in range(u):  # per UV set, not per corner
        has = nuv > k
        at = st[has, None] + 17 + 8 * k + np.arange(8)
        uv[has, k] = buf[at].copy().view("<f4").reshape(-1, 2)
    r.seek(int(s0 + chain[-1]))
    return vert, normal, uv, nuv


def check_corner_range(mesh: MeshSection, vertex: npt.NDArray[Any] | None = None) -> None:
    """Corner vertex indices (``vertex``: the same, already converted) must name a vertex
    (used by to_scene)."""
    cv = mesh.corner_vertex if vertex is None else vertex
    if len(cv) and int(cv.max()) >= mesh.vertex_count:
        bad = int(np.argmax(cv >= mesh.vertex_count))
        raise CorruptDataError(FMT, "corner vertex index out of range",
                               field=f"MESH.corners[{bad}].vertex",
                               expected=f"< {mesh.vertex_count}",
                               actual=int(mesh.corner_vertex[bad]))


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
