"""The sections the scene model has no place for (SMTL, FANM, FRAM, EXTR, the .mpet skin list)
as JSON-able extras, and back, so PET -> glTF -> PET keeps them (spec §B.16)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .document import (
    ExtrSection,
    FanmSection,
    Frame,
    FramSection,
    PetDocument,
    SmtlMaterial,
    SmtlSection,
    SmtlValue,
    Texture,
)
from .layout import ENCODING, FANM_DT, SKIN_DT


def text_value(raw: bytes) -> str | dict[str, str]:
    """CP949 text when it decodes and encodes back to the same bytes, else the bytes as hex."""
    if raw.isascii():  # CP949 keeps ASCII as is, both ways
        return raw.decode("ascii")
    try:
        s = raw.decode(ENCODING)
        if s.encode(ENCODING) == raw:
            return s
    except UnicodeError:
        pass
    return {"hex": raw.hex()}


def value_bytes(v: Any) -> bytes:
    """Inverse of :func:`text_value`; anything unusable becomes empty bytes."""
    if isinstance(v, dict) and isinstance(v.get("hex"), str):
        try:
            return bytes.fromhex(v["hex"])
        except ValueError:
            return b""
    if isinstance(v, str):
        return v.encode(ENCODING, errors="replace")
    return b""


def doc_extras(doc: PetDocument) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": doc.kind, "version": "{}.{}".format(*doc.version),
                           "sections": [s.fourcc.decode("latin-1") for s in doc.sections]}
    out["text"] = [texture_record(t) for t in doc.textures]
    smtl = doc.get(b"SMTL")
    if isinstance(smtl, SmtlSection):
        out["smtl"] = [{"name": text_value(m.name),
                        "values": [{"name": text_value(v.name), "type": v.type,
                                    "value": v.value.hex()} for v in m.values]}
                       for m in smtl.materials]
    fanm = doc.get(b"FANM")
    if isinstance(fanm, FanmSection):
        # The records' bytes sliced (a numpy record's fields cost ~1 us each).
        raw, size = np.asarray(fanm.entries, FANM_DT).tobytes(), FANM_DT.itemsize
        out["fanm"] = [{"group": raw[at], "name": raw[at + 1:at + 33].hex(),
                        "material": raw[at + 33:at + 65].hex()}
                       for at in range(0, len(raw), size)]
    fram = doc.get(b"FRAM")
    if isinstance(fram, FramSection):
        out["fram"] = [{"index": f.index, "chunks": [text_value(c) for c in f.chunks],
                        "check": f.check} for f in fram.frames]
    extr = doc.get(b"EXTR")
    if isinstance(extr, ExtrSection):
        out["extr"] = list(extr.bones)
    mesh = doc.mesh
    if mesh is not None and mesh.skins is not None:
        # The records as tuples in one call.
        out["skins"] = [[b, vs, vc, ps, pc] for b, _, vs, vc, ps, pc
                        in np.asarray(mesh.skins, SKIN_DT).tolist()]
    return out


def texture_record(t: Texture) -> dict[str, Any]:
    return {"name": text_value(t.name_raw.split(b"\0", 1)[0]), "name_raw": t.name_raw.hex(),
            "flag": t.flag, "group": t.group, "pad": t.pad.hex(), "diffuse": t.diffuse,
            "handle": t.handle}


def texture_from(rec: Any) -> Texture | None:
    """Inverse of :func:`texture_record` (None when the record is unusable)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("name_raw"), str):
        return None
    try:
        return Texture(bytes.fromhex(rec["name_raw"])[:32].ljust(32, b"\0"),
                       max(-128, min(127, int(rec.get("flag", 0)))),
                       int(rec.get("group", 0)) & 255,
                       bytes.fromhex(str(rec.get("pad", "0000")))[:2].ljust(2, b"\0"),
                       int(rec.get("diffuse", 0xFFFFFFFF)) & 0xFFFFFFFF,
                       int(rec.get("handle", 0)) & 0xFFFFFFFF)
    except (ValueError, TypeError):
        return None


def smtl_from(extras: Any) -> SmtlSection | None:
    if not isinstance(extras, list):
        return None
    out = SmtlSection()
    for m in extras:
        if not isinstance(m, dict):
            continue
        mat = SmtlMaterial(value_bytes(m.get("name")))
        for v in m.get("values", []) or []:
            try:
                mat.values.append(SmtlValue(value_bytes(v.get("name")), int(v["type"]),
                                            bytes.fromhex(str(v["value"]))))
            except (KeyError, ValueError, TypeError, AttributeError):
                continue
        out.materials.append(mat)
    return out


def fanm_from(extras: Any) -> FanmSection | None:
    if not isinstance(extras, list):
        return None
    recs = np.zeros(len(extras), FANM_DT)
    for i, e in enumerate(extras):
        try:
            recs[i] = (int(e["group"]) & 255, bytes.fromhex(e["name"]).ljust(32, b"\0")[:32],
                       bytes.fromhex(e["material"]).ljust(32, b"\0")[:32])
        except (KeyError, ValueError, TypeError):
            continue
    return FanmSection(entries=recs)


def fram_from(extras: Any) -> FramSection | None:
    if not isinstance(extras, list):
        return None
    out = FramSection()
    for f in extras:
        try:
            chunks = [value_bytes(c) for c in f["chunks"]][:3]
            chunks += [b""] * (3 - len(chunks))
            check = f.get("check")
            out.frames.append(Frame(int(f["index"]), (chunks[0], chunks[1], chunks[2]),
                                    None if check is None else int(check)))
        except (KeyError, ValueError, TypeError):
            continue
    return out


def skins_from(extras: Any) -> npt.NDArray[Any] | None:
    if not isinstance(extras, list):
        return None
    recs = np.zeros(len(extras), SKIN_DT)
    for i, e in enumerate(extras):
        try:
            recs[i]["bone"], recs[i]["vtx_start"], recs[i]["vtx_count"] = e[0], e[1], e[2]
            recs[i]["poly_start"], recs[i]["poly_count"] = e[3], e[4]
        except (IndexError, ValueError, TypeError):
            continue
    return recs
