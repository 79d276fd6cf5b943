""":class:`PetDocument` -> PET bytes: the exact inverse of ``read`` (spec §B), so an unedited
document writes back byte for byte; new documents follow the writer rules of §E."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt

from ...binary import Writer
from ...errors import LimitError
from ...registry import Context
from .document import (
    AnimSection,
    BoneSection,
    CollSection,
    ExtrSection,
    FanmSection,
    FramSection,
    MeshSection,
    MotiSection,
    Payload,
    PetDocument,
    RawSection,
    SmtlSection,
    TextSection,
    Vers,
)
from .layout import FANM_DT, FMT, SKIN_DT, TEXT_DT, corner_dtype

_HEADER = struct.Struct("<4sI")


def write(doc: PetDocument, ctx: Context | None = None) -> bytes:
    w = Writer()
    for sec in doc.sections:
        payload = section_bytes(sec.body, doc.version)
        w.pack(_HEADER, sec.fourcc, len(payload))
        w.write(payload)
    w.write(doc.tail)
    return w.getvalue()


def section_bytes(body: Payload, version: tuple[int, int]) -> bytes:
    w = Writer()
    if isinstance(body, RawSection):
        return body.data
    if isinstance(body, Vers):
        return body.raw
    if isinstance(body, TextSection):
        _text(w, body)
    elif isinstance(body, SmtlSection):
        _smtl(w, body)
    elif isinstance(body, BoneSection):
        _bones(w, body, version)
    elif isinstance(body, AnimSection):
        _anim(w, body, version)
    elif isinstance(body, MeshSection):
        _mesh(w, body, version)
    elif isinstance(body, FanmSection):
        w.u32(len(body.entries))
        w.write(np.asarray(body.entries, FANM_DT).tobytes())
    elif isinstance(body, FramSection):
        _fram(w, body)
    elif isinstance(body, MotiSection):
        _moti(w, body)
    elif isinstance(body, CollSection):
        _coll(w, body)
    elif isinstance(body, ExtrSection):
        w.u32(len(body.bones))
        for b, wide in zip(body.bones, body.wide, strict=True):
            boneid(w, b, wide)
    w.write(body.trailing)
    return w.getvalue()


def boneid(w: Writer, bone: int, wide: bool = False) -> None:
    """§B.0: -1 = 0xFF; ids above 0xFD (or ids read escaped) as FE + i16."""
    if bone > 0x7FFF or bone < -0x8000:
        raise LimitError(FMT, "bone id too large for the 0xFE escape", field="bone",
                         expected="<= 32767", actual=bone)
    if wide or bone > 0xFD:
        w.u8(0xFE)
        w.i16(bone)
    elif bone < 0:
        w.u8(0xFF)
    else:
        w.u8(bone)


def _lstr(w: Writer, raw: bytes) -> None:
    w.u32(len(raw))
    w.write(raw)


def _text(w: Writer, body: TextSection) -> None:
    w.u32(len(body.textures))
    recs = np.zeros(len(body.textures), TEXT_DT)
    for i, t in enumerate(body.textures):
        name = t.name_raw
        if len(name) > 32:
            raise LimitError(FMT, "texture name too long", field=f"TEXT[{i}].name",
                             expected="<= 31 bytes", actual=len(name))
        recs[i] = (name.ljust(32, b"\0"), t.flag, t.group, t.pad.ljust(2, b"\0")[:2],
                   t.diffuse & 0xFFFFFFFF, t.handle & 0xFFFFFFFF)
    w.write(recs.tobytes())


def _smtl(w: Writer, body: SmtlSection) -> None:
    w.u32(len(body.materials))
    for m in body.materials:
        _lstr(w, m.name)
        w.u32(len(m.values))
        for v in m.values:
            _lstr(w, v.name)
            w.u32(v.type)
            if v.type == 8:
                _lstr(w, v.value)
            else:
                w.write(v.value)


def _bones(w: Writer, body: BoneSection, version: tuple[int, int]) -> None:
    n = body.count
    if n > 0xFFFF:
        raise LimitError(FMT, "too many bones", field="BONE.count", expected="<= 65535",
                         actual=n)
    if body.wide_count or n > 255:
        w.u8(0)
        w.u16(n)
    else:
        w.u8(n)
    mats = None if body.matrices is None else np.asarray(body.matrices, "<f4").reshape(n, 12)
    extra = body.extra
    if mats is not None and version >= (1, 3) and extra is None:
        extra = np.full(n, -1.0, np.float32)  # the value every file seen has (§B.6)
    for i in range(n):
        if b"\0" in body.names[i]:
            raise LimitError(FMT, "bone name holds a NUL", field=f"BONE[{i}].name",
                             expected="no NUL byte", actual=body.names[i])
        w.write(body.names[i] + b"\0")
        boneid(w, body.parents[i], body.parent_wide[i])
        if mats is not None:
            w.write(mats[i].tobytes())
            if version >= (1, 3) and extra is not None:
                w.write(np.asarray(extra[i], "<f4").tobytes())


def _anim(w: Writer, body: AnimSection, version: tuple[int, int]) -> None:
    for t in body.tracks:
        boneid(w, t.bone, t.wide)
        for arr, width in ((t.pos, 4), (t.rot, 5), (t.scale, 4)):
            a = np.asarray(arr, "<f4").reshape(-1, width)
            w.u32(len(a))
            w.write(a.tobytes())
        if version >= (1, 3):
            f = np.zeros((0, 2), "<f4") if t.flags is None else np.asarray(t.flags, "<f4")
            w.u32(len(f))
            w.write(f.reshape(-1, 2).tobytes())
    w.write(body.terminator)


def _fram(w: Writer, body: FramSection) -> None:
    w.u32(len(body.frames))
    for f in body.frames:
        w.u32(f.index)
        for c in f.chunks:
            _lstr(w, c)
        if f.check is not None:
            w.u32(f.check & 0xFFFFFFFF)


def _moti(w: Writer, body: MotiSection) -> None:
    w.u32(len(body.motions))
    for m in body.motions:
        _lstr(w, m.name)
        w.u32(m.frame_start)
        w.u32(m.frame_end)
        _lstr(w, m.next_move)
        _lstr(w, m.connection_method)
        w.f32(m.connection_time)
        _lstr(w, m.root_bone)


def _coll(w: Writer, body: CollSection) -> None:
    w.u32(len(body.boxes))
    for b in body.boxes:
        w.u32(b.shape)
        w.u32(b.show)
        for s in (b.box_name, b.bone_name, b.option1, b.option2):
            _lstr(w, s)
        w.write(np.asarray(b.box, "<f4").reshape(6).tobytes())


# -- MESH -----------------------------------------------------------------------------------------
def _mesh(w: Writer, m: MeshSection, version: tuple[int, int]) -> None:
    if m.skins is not None:
        if len(m.skins) > 255:
            raise LimitError(FMT, "too many skin-list entries", field="MESH.nskin",
                             expected="<= 255", actual=len(m.skins))
        w.u8(len(m.skins))
        w.write(np.asarray(m.skins, SKIN_DT).tobytes())
    w.u32(m.vertex_count)
    w.write(vertex_bytes(m))
    w.u32(m.poly_count)
    w.write(corner_bytes(m, version))
    w.write(np.asarray(m.texture, np.uint8).tobytes())
    if version >= (1, 2):
        spec = m.specular if m.specular is not None else np.full(m.poly_count, 0xFF, np.uint8)
        w.write(np.asarray(spec, np.uint8).tobytes())


def vertex_bytes(m: MeshSection) -> bytes:
    """All vertex records at once: sizes from the influence counts and escapes, then every
    field scattered to its offset (vectorized; the loop is over the influence rank)."""
    n = m.vertex_count
    head = 16 if m.skins is not None else 12
    count = np.asarray(m.inf_count, np.int64)
    bones = np.asarray(m.inf_bone, np.int64)
    if bones.size and (bones.max() > 0x7FFF or bones.min() < -0x8000):
        raise LimitError(FMT, "bone id too large for the 0xFE escape", field="MESH.bone",
                         expected="<= 32767", actual=int(bones.max()))
    # Ids above 0xFD can only be written escaped.
    wide = np.asarray(m.inf_wide, bool) | (bones > 0xFD)
    p = wide.shape[1] if wide.ndim == 2 else 0
    rank = np.arange(p)[None, :]
    used = rank < count[:, None]
    pair_size = np.where(wide, 4, 2) * used
    sizes = head + pair_size.sum(axis=1) + np.where(count == 1, 2, 0)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    out = np.zeros(int(starts[-1]), np.uint8)
    s = starts[:-1]
    pos = np.ascontiguousarray(m.positions, "<f4").reshape(n, 3).view(np.uint8).reshape(n, 12)
    out[s[:, None] + np.arange(12)] = pos
    if head == 16:
        gw = np.zeros(n, "<f4") if m.global_weight is None else m.global_weight
        out[s[:, None] + np.arange(12, 16)] = np.ascontiguousarray(gw, "<f4").view(
            np.uint8).reshape(n, 4)
    cur = s + head
    weights = np.asarray(m.inf_weight, np.uint8)
    for k in range(p):
        on = used[:, k]
        at = cur[on]
        out[at] = weights[on, k]
        b = bones[on, k]
        wk = wide[on, k]
        out[at + 1] = np.where(wk, 0xFE, np.where(b < 0, 0xFF, b & 0xFF))
        esc = b[wk].astype("<i2").view(np.uint8).reshape(-1, 2)
        out[at[wk, None] + np.arange(2, 4)] = esc
        cur[on] += pair_size[on, k]
    single = count == 1
    out[cur[single, None] + np.arange(2)] = np.asarray(m.pad, np.uint8)[single]
    return out.tobytes()


def corner_bytes(m: MeshSection, version: tuple[int, int]) -> bytes:
    n = len(m.corner_vertex)
    uv = np.asarray(m.corner_uv, "<f4").reshape(n, -1, 2)
    if version < (1, 2):
        recs = np.zeros(n, corner_dtype(1, False))
        recs["vertex"], recs["normal"] = m.corner_vertex, m.corner_normal
        recs["uv"] = uv[:, :1] if uv.shape[1] else 0
        return recs.tobytes()
    nuv = (np.full(n, uv.shape[1], np.uint8) if m.corner_nuv is None
           else np.asarray(m.corner_nuv, np.uint8))
    if n == 0 or np.all(nuv == nuv[0]):
        k = int(nuv[0]) if n else 0
        recs = np.zeros(n, corner_dtype(k, True))
        recs["vertex"], recs["normal"], recs["nuv"] = m.corner_vertex, m.corner_normal, nuv
        recs["uv"] = uv[:, :k]
        return recs.tobytes()
    return _corners_varying(m, uv, nuv)


def _corners_varying(m: MeshSection, uv: npt.NDArray[Any], nuv: npt.NDArray[Any]) -> bytes:
    sizes = 17 + 8 * nuv.astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    out = np.zeros(int(starts[-1]), np.uint8)
    s = starts[:-1]
    n = len(s)
    out[s[:, None] + np.arange(4)] = np.ascontiguousarray(
        m.corner_vertex, "<u4").view(np.uint8).reshape(n, 4)
    out[s[:, None] + np.arange(4, 16)] = np.ascontiguousarray(
        m.corner_normal, "<f4").view(np.uint8).reshape(n, 12)
    out[s + 16] = nuv
    for k in range(uv.shape[1]):
        has = nuv > k
        out[s[has, None] + 17 + 8 * k + np.arange(8)] = np.ascontiguousarray(
            uv[has, k], "<f4").view(np.uint8).reshape(-1, 8)
    return out.tobytes()
