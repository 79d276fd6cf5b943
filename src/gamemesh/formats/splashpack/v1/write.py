""":class:`SplashpackDocument` -> bytes, in the document's own layout.

Like the exporter: header, the descriptor tables back to back, then every data block aligned to 4
with zero padding, and no padding after the last block (spec §b.1). Counts, offsets and lengths
are computed here from the lists, so a document built in code cannot disagree with itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ....binary import Writer
from ....errors import LimitError
from .document import SplashpackDocument
from .layout import ATLAS_DESC, LUA_DESC, NAV_DESC, NAV_TRI

FMT = "splashpack"

__all__ = ["write"]


def _limit(field: str, n: int, most: int) -> None:
    if n > most:
        msg = "too many records for the format's counter"
        raise LimitError(FMT, msg, field=field, expected=f"<= {most}", actual=n)


def _records(a: npt.NDArray[Any], dt: np.dtype[Any], n: int, field: str) -> npt.NDArray[Any]:
    if len(a) != n:
        msg = "descriptor table and data lists disagree"
        raise LimitError(FMT, msg, field=field, expected=n, actual=len(a))
    return np.array(a, dtype=dt, copy=True)


def _set_counts(doc: SplashpackDocument) -> npt.NDArray[np.void]:
    hdr = np.array(doc.header, dtype=doc.spec_layout.header, copy=True).reshape(1)
    names = hdr.dtype.names or ()
    counts = {"lua_count": len(doc.lua), "go_count": len(doc.meshes),
              "nav_count": len(doc.navmeshes), "atlas_count": len(doc.atlas_pixels),
              "clut_count": len(doc.cluts)}
    for name, n in counts.items():
        if name in names:
            _limit(f"header.{name}", n, 0xFFFF)
            hdr[name] = n
        elif n and name != "clut_count":
            msg = f"layout {doc.layout} has no {name.removesuffix('_count')} table"
            raise LimitError(FMT, msg, field=f"header.{name}", expected=0, actual=n)
    return hdr


def _gap(doc: SplashpackDocument, w: Writer, block: int) -> None:
    """The kept bytes before this block if they still land on a multiple of 4, else zeros."""
    kept = doc.gaps.get(block)
    if kept is not None and (w.tell() + len(kept)) % 4 == 0:
        w.write(kept)
    else:
        w.align(4)


Tables = tuple[npt.NDArray[np.void], npt.NDArray[np.void], npt.NDArray[np.void],
               npt.NDArray[np.void], npt.NDArray[np.void] | None]


def _tables(doc: SplashpackDocument) -> Tables:
    """The descriptor tables (Lua, objects, navmeshes, atlases, CLUTs or None), their offsets
    and counts still to be filled in."""
    lay = doc.spec_layout
    # Lua and navmesh descriptors hold nothing but offsets, lengths and a pad: rebuilt when the
    # lists changed. Objects, atlases and CLUTs carry placement, so they must match their data.
    lua = _records(doc.lua_desc, LUA_DESC, len(doc.lua), "lua") if len(doc.lua_desc) == len(
        doc.lua) else np.zeros(len(doc.lua), LUA_DESC)
    objs = _records(doc.objects, lay.go, len(doc.meshes), "objects")
    nav = _records(doc.nav_desc, NAV_DESC, len(doc.navmeshes), "navmeshes") if len(
        doc.nav_desc) == len(doc.navmeshes) else np.zeros(len(doc.navmeshes), NAV_DESC)
    atl = _records(doc.atlases, ATLAS_DESC, len(doc.atlas_pixels), "atlases")
    cd = lay.clut_desc
    cluts = np.array(doc.cluts, dtype=cd, copy=True) if cd is not None else None
    if lay.clut == "data" and cluts is not None:
        cluts = _records(cluts, cd, len(doc.clut_words), "cluts")  # type: ignore[arg-type]
    return lua, objs, nav, atl, cluts


def write(doc: SplashpackDocument) -> bytes:
    hdr = _set_counts(doc)
    tables = _tables(doc)
    w = Writer()
    w.write(hdr.tobytes())
    at = w.tell()
    w.pad(sum(t.nbytes for t in tables if t is not None))
    _blocks(doc, w, tables)
    out = w.buf
    for table in tables:
        if table is None:
            continue
        raw = table.tobytes()
        out[at:at + len(raw)] = raw
        at += len(raw)
    return bytes(out)


def _blocks(doc: SplashpackDocument, w: Writer, tables: Tables) -> None:
    """Every data block after the tables, in file order, its offset and size put in its
    descriptor."""
    lay = doc.spec_layout
    lua, objs, nav, atl, cluts = tables
    block = 0
    for i, src in enumerate(doc.lua):
        _gap(doc, w, block)
        lua[i]["offset"], lua[i]["length"] = w.tell(), len(src)
        w.write(src)
        block += 1
    for i, tris in enumerate(doc.meshes):
        _gap(doc, w, block)
        limit = 0x7FFFFFFF if lay.name == "C" else 0xFFFF
        _limit(f"objects[{i}].tri_count", len(tris), limit)
        objs[i]["mesh_offset"], objs[i]["tri_count"] = w.tell(), len(tris)
        w.array(np.asarray(tris), lay.tri)
        block += 1
    for i, v in enumerate(doc.navmeshes):
        _gap(doc, w, block)
        _limit(f"navmeshes[{i}].tri_count", len(v), 0xFFFF)
        nav[i]["offset"], nav[i]["tri_count"] = w.tell(), len(v)
        recs = np.zeros(len(v), NAV_TRI)
        recs["v"] = np.asarray(v).reshape(-1, 3, 3)
        w.array(recs)
        block += 1
    for i, px in enumerate(doc.atlas_pixels):
        _gap(doc, w, block)
        atl[i]["offset"] = w.tell()
        atl[i]["height"], atl[i]["width"] = np.asarray(px).shape
        w.array(np.asarray(px), "<u2")
        block += 1
    if lay.clut == "data" and cluts is not None:
        for i, words in enumerate(doc.clut_words):
            _gap(doc, w, block)
            _limit(f"cluts[{i}].count", len(words), 0xFFFF)
            cluts[i]["offset"], cluts[i]["count"] = w.tell(), len(words)
            w.array(np.asarray(words), "<u2")
            block += 1
