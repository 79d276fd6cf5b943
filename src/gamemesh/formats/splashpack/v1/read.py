"""Bytes -> :class:`SplashpackDocument`, with the layout found by the file's own arithmetic.

Every layout writes the version as 1, so the layout is found the way spec §b.11 describes: for
each candidate, the descriptor tables must end where the first data block begins (rounded up to
4), every block must follow the previous one with only the padding to 4 in between (a Lua block
may be followed by the uncounted tail the exporter wrote), and the file must end with the last
block. The first layout (in DETECT_ORDER) that fits is the file's layout.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ....binary import Reader
from ....errors import FormatError, UnsupportedVersionError
from ..layout import MAGIC
from .document import SplashpackDocument
from .layout import (
    ATLAS_DESC,
    DETECT_ORDER,
    GO_A_SIZE,
    LAYOUTS,
    LUA_DESC,
    NAV_DESC,
    NAV_TRI,
    VERSION,
    Layout,
)

FMT = "splashpack"
_COUNT_NAMES = ("lua_count", "go_count", "nav_count", "atlas_count", "clut_count")

__all__ = ["detect_layout", "sniff"]


def _counts(lay: Layout, hdr: npt.NDArray[np.void]) -> dict[str, int]:
    names = hdr.dtype.names or ()
    return {n: int(hdr[n][0]) if n in names else 0 for n in _COUNT_NAMES}


def _desc_sizes(lay: Layout, c: dict[str, int]) -> list[tuple[str, int, int]]:
    """(table, count, record size) in file order."""
    out = [("lua", c["lua_count"], LUA_DESC.itemsize), ("go", c["go_count"], lay.go.itemsize),
           ("nav", c["nav_count"], NAV_DESC.itemsize),
           ("atlas", c["atlas_count"], ATLAS_DESC.itemsize)]
    cd = lay.clut_desc
    if cd is not None:
        out.append(("clut", c["clut_count"], cd.itemsize))
    return out


# -- sniffing (first 64 bytes only) ----------------------------------------------------------
def _first_offset_field(lay: Layout, c: dict[str, int]) -> tuple[int, int] | None:
    """(position of the first descriptor's data-offset field, expected value), or None when the
    tables are empty."""
    pos = lay.header.itemsize
    end = pos + sum(n * size for _, n, size in _desc_sizes(lay, c))
    for table, n, _ in _desc_sizes(lay, c):
        if n == 0:
            continue
        if table == "go":
            names = lay.go.names or ()
            rel = int(lay.go.fields["mesh_offset"][1]) if (  # type: ignore[index]
                "mesh_offset" in names) else 0
            return pos + rel, (end + 3) // 4 * 4
        if table == "clut" and lay.clut == "inline":
            return None
        return pos, (end + 3) // 4 * 4
    return None


def _sniff_layout(lay: Layout, prefix: bytes) -> bool:
    hsize = lay.header.itemsize
    if len(prefix) < hsize:
        return False
    hdr = np.frombuffer(prefix, lay.header, 1)
    c = _counts(lay, hdr)
    if not lay.has_nav and not lay.has_lua and lay.name != "B" and c["go_count"] == 0:
        return False
    first = _first_offset_field(lay, c)
    if first is None:
        return len(prefix) == hsize and not any(c.values())
    at, expected = first
    if at + 4 <= len(prefix):
        return int.from_bytes(prefix[at:at + 4], "little") == expected
    # Layout B's first offset sits 568 bytes into its object: check what the prefix does hold,
    # the rotation's range and the tpage bits the exporter always sets.
    if lay.name == "B" and len(prefix) >= 64:
        rot = np.frombuffer(prefix, "<i4", 9, 20)
        tpage = int.from_bytes(prefix[58:60], "little")
        return bool(np.all(np.abs(rot) <= 4096)) and (tpage & 0xFC00) == 0 and (
            tpage & 0x0200) != 0
    return False


def _plausible(lay: Layout, data: bytes) -> bool:
    """The first descriptor's data offset is where this layout's tables end (or it has none)."""
    if len(data) < lay.header.itemsize:
        return False
    c = _counts(lay, np.frombuffer(data, lay.header, 1))
    first = _first_offset_field(lay, c)
    if first is None:
        return True
    at, expected = first
    return at + 4 <= len(data) and int.from_bytes(data[at:at + 4], "little") == expected


def sniff(prefix: bytes) -> bool:
    """A version-1 file in one of the layouts B..H, told from its first bytes."""
    if len(prefix) < 8 or prefix[:2] != MAGIC:
        return False
    if int.from_bytes(prefix[2:4], "little") != VERSION:
        return False
    return any(_sniff_layout(LAYOUTS[name], prefix) for name in DETECT_ORDER)


# -- full read -------------------------------------------------------------------------------
class _Attempt:
    """One layout tried: its document, or how far it got and why it failed."""

    def __init__(self, lay: Layout) -> None:
        self.lay = lay
        self.progress = 0
        self.error: FormatError | None = None
        self.doc: SplashpackDocument | None = None


def _copy(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    return np.array(a, copy=True)


def _read_tables(r: Reader, lay: Layout, c: dict[str, int], doc: SplashpackDocument) -> None:
    with r.field("lua"):
        doc.lua_desc = _copy(r.array(LUA_DESC, c["lua_count"]))
    with r.field("objects"):
        doc.objects = _copy(r.array(lay.go, c["go_count"]))
    with r.field("navmeshes"):
        doc.nav_desc = _copy(r.array(NAV_DESC, c["nav_count"]))
    with r.field("atlases"):
        doc.atlases = _copy(r.array(ATLAS_DESC, c["atlas_count"]))
    cd = lay.clut_desc
    if cd is not None:
        with r.field("cluts"):
            doc.cluts = _copy(r.array(cd, c["clut_count"]))


def _blocks(lay: Layout, doc: SplashpackDocument) -> tuple[list[str], npt.NDArray[np.int64],
                                                      npt.NDArray[np.int64]]:
    """Names, offsets and byte sizes of every data block in file order."""
    names: list[str] = []
    offs: list[npt.NDArray[np.int64]] = []
    sizes: list[npt.NDArray[np.int64]] = []

    def add(kind: str, off: npt.NDArray[Any], size: npt.NDArray[Any]) -> None:
        names.extend(f"{kind}[{i}]" for i in range(len(off)))
        offs.append(np.asarray(off, dtype=np.int64))
        sizes.append(np.asarray(size, dtype=np.int64))

    add("lua", doc.lua_desc["offset"], doc.lua_desc["length"])
    tri = np.asarray(doc.objects["tri_count"], dtype=np.int64)
    add("objects", doc.objects["mesh_offset"], tri * lay.tri.itemsize)
    add("navmeshes", doc.nav_desc["offset"], doc.nav_desc["tri_count"].astype(np.int64) * 36)
    a = doc.atlases
    add("atlases", a["offset"], a["width"].astype(np.int64) * a["height"].astype(np.int64) * 2)
    if lay.clut == "data":
        add("cluts", doc.cluts["offset"], doc.cluts["count"].astype(np.int64) * 2)
    empty = np.zeros(0, dtype=np.int64)
    return names, np.concatenate([empty, *offs]), np.concatenate([empty, *sizes])


def _check_arithmetic(r: Reader, lay: Layout, doc: SplashpackDocument, att: _Attempt) -> None:
    """Spec §b.11: the blocks follow the tables and each other, and end the file."""
    names, offs, sizes = _blocks(lay, doc)
    n_lua = len(doc.lua_desc)
    if np.any(sizes < 0):
        k = int(np.argmax(sizes < 0))
        msg = "negative size"
        raise r.corrupt(msg, field=f"{names[k]}.tri_count", actual=int(sizes[k]))
    ends = offs + sizes
    starts_at = np.concatenate([[r.tell()], ends[:-1]]) if len(offs) else offs
    gap = offs - starts_at
    canonical = (-starts_at) % 4
    # Only a Lua block may be followed by more than the padding (its uncounted tail).
    may_grow = np.zeros(len(offs), dtype=bool)
    may_grow[1:n_lua + 1] = True
    may_grow = may_grow[: len(offs)]
    bad = (offs % 4 != 0) | (gap < 0) | ((gap != canonical) & ~may_grow)
    if np.any(bad):
        k = int(np.argmax(bad))
        att.progress = 1 + k
        msg = "data block is not where the layout puts it"
        raise r.corrupt(msg, field=f"{names[k]}.offset",
                        expected=int(starts_at[k] + canonical[k]), actual=int(offs[k]))
    att.progress = 1 + len(offs)
    end = int(ends[-1]) if len(ends) else r.tell()
    if end != r.end:
        what = "file ends before the last block" if end > r.end else "bytes after the last block"
        raise r.corrupt(what, field="eof", expected=end, actual=r.end, offset=min(end, r.end))
    att.progress += 1
    _read_blocks(r, lay, doc, names, offs, gap, canonical, starts_at)


def _read_blocks(r: Reader, lay: Layout, doc: SplashpackDocument, names: list[str],
                 offs: npt.NDArray[np.int64], gap: npt.NDArray[np.int64],
                 canonical: npt.NDArray[np.int64], starts_at: npt.NDArray[np.int64]) -> None:
    for g in np.flatnonzero(gap > 0):
        raw = r.window(int(starts_at[g]), int(gap[g])).rest()
        if gap[g] != canonical[g] or any(raw):
            doc.gaps[int(g)] = raw
    k = 0
    for d in doc.lua_desc:
        doc.lua.append(r.window(int(offs[k]), int(d["length"])).rest())
        k += 1
    for o in doc.objects:
        w = r.window(int(offs[k]))
        with w.field(names[k]):
            doc.meshes.append(w.array(lay.tri, int(o["tri_count"])))
        k += 1
    for d in doc.nav_desc:
        w = r.window(int(offs[k]))
        with w.field(names[k]):
            doc.navmeshes.append(w.array(NAV_TRI, int(d["tri_count"]))["v"])
        k += 1
    for d in doc.atlases:
        w = r.window(int(offs[k]))
        with w.field(names[k]):
            px = w.array("<u2", int(d["width"]) * int(d["height"]))
        doc.atlas_pixels.append(px.reshape(int(d["height"]), int(d["width"])))
        k += 1
    if lay.clut == "data":
        for d in doc.cluts:
            w = r.window(int(offs[k]))
            with w.field(names[k]):
                doc.clut_words.append(w.array("<u2", int(d["count"])))
            k += 1


def _try_layout(data: bytes, lay: Layout) -> _Attempt:
    att = _Attempt(lay)
    r = Reader(data, FMT)
    try:
        with r.field("header"):
            hdr = _copy(r.array(lay.header, 1))
        doc = SplashpackDocument(layout=lay.name, header=hdr)
        c = _counts(lay, hdr)
        with r.field("header"):
            for table, n, size in _desc_sizes(lay, c):
                r.count(n, size, field=f"{table}_count")
        _read_tables(r, lay, c, doc)
        att.progress = 1
        _check_arithmetic(r, lay, doc, att)
        att.doc = doc
    except FormatError as e:
        att.error = e
    return att


def _looks_like_layout_a(data: bytes) -> bool:
    if len(data) < 8 + GO_A_SIZE:
        return False
    go, atlas = int.from_bytes(data[4:6], "little"), int.from_bytes(data[6:8], "little")
    if go == 0:
        return False
    first = int.from_bytes(data[8 + 52:8 + 56], "little")
    return first == 8 + GO_A_SIZE * go + 12 * atlas


def detect_layout(data: bytes) -> SplashpackDocument:
    r = Reader(data, FMT)
    r.magic(MAGIC)
    version = r.u16("header.version")
    if version != VERSION:
        why = ("development versions of the 2026 rewrite (17..19) are not supported; 20..24 are"
               if version >= 17 else "no public exporter wrote this version")
        raise r.error(UnsupportedVersionError, f"version {version}: {why}", expected=VERSION,
                      actual=version, field="header.version", offset=2)
    # Only layouts whose first data offset is right can fit (a cheap necessary condition, so a
    # damaged file is not parsed seven times); with none, all are tried for the best message.
    names = [n for n in DETECT_ORDER if _plausible(LAYOUTS[n], data)] or list(DETECT_ORDER)
    attempts = [_try_layout(data, LAYOUTS[name]) for name in names]
    for att in attempts:
        if att.doc is not None:
            return att.doc
    if _looks_like_layout_a(data):
        msg = ("version-1 layout A (2025-03-22/23, 44-byte triangles, per-object tpage) is not "
               "supported: no public sample exists to check it against")
        raise UnsupportedVersionError(FMT, msg, offset=8, field="layout", expected="B..H",
                                      actual="A")
    best = max(attempts, key=lambda a: a.progress)
    assert best.error is not None
    if best.progress == 0:
        # No layout got past its tables: report against the seed layout G.
        best = next((a for a in attempts if a.lay.name == "G"), best)
    assert best.error is not None
    err = best.error
    detail = f"layout {best.lay.name}: {err.detail}" if err.detail else f"layout {best.lay.name}"
    raise type(err)(FMT, detail, offset=err.offset, field=err.field, expected=err.expected,
                    actual=err.actual) from None
