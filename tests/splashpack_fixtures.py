"""Builders for small SPLASHPACK documents in every version-1 layout (B..H), made with our own
writer, plus the checks of spec §b.10 that the other splashpack tests share. No tests here."""

from __future__ import annotations

from typing import Any

import numpy as np

from gamemesh.formats.splashpack.layout import FRAMEBUFFERS
from gamemesh.formats.splashpack.v1.document import SplashpackDocument
from gamemesh.formats.splashpack.v1.layout import (
    ATLAS_DESC,
    CLUT_DESC,
    CLUT_DESC_C,
    LAYOUTS,
    LUA_DESC,
    NAV_DESC,
)
from gamemesh.textures import psx

LUA0 = b"function onCreate(self)\r\n  print('hi')\r\nend\r\n"
LUA1 = b"-- scene script\nlocal x = 1\n"
PLAYER_POS = (-585, 64, -722)
PLAYER_ROT = (0, 100, -3)
PLAYER_HEIGHT = 243
ROT_90_Y = (0, 0, 4096, 0, 4096, 0, -4096, 0, 0)
IDENTITY = (4096, 0, 0, 0, 4096, 0, 0, 0, 4096)
TPAGE_8 = 0x0285  # 8 bpp, page x = 320, y = 0, dithered
TPAGE_4 = 0x020F  # 4 bpp, page x = 960
CLUT8_XY = (0, 240)  # words
CLUT4_XY = (0, 241)


def atlas8() -> np.ndarray:
    """128 words x 4 rows: index = (row * 7 + column) % 6 (texel pairs)."""
    idx = (np.arange(4)[:, None] * 7 + np.arange(256)[None, :]) % 6
    return psx.pack_indices(idx, 8)


def atlas4() -> np.ndarray:
    idx = (np.arange(4)[:, None] + np.arange(256)[None, :]) % 16
    return psx.pack_indices(idx, 4)


def clut8() -> np.ndarray:
    # 6 entries; entry 0 transparent, entry 5 black with STP (opaque).
    return np.array([0x0000, 0x001F, 0x03E0, 0x7C00, 0x7FFF, 0x8000], dtype=np.uint16)


def clut4() -> np.ndarray:
    return (np.arange(16, dtype=np.uint16) * 0x0421 + 1).astype(np.uint16)


def tris(lay_name: str, n: int, base: int, tpage: int, clut: tuple[int, int]) -> np.ndarray:
    lay = LAYOUTS[lay_name]
    t = np.zeros(n, lay.tri)
    k = np.arange(n)[:, None]
    # A right triangle per record whose PSX winding is opposite to its normal (-Y up in PSX).
    t["v"][:, 0] = np.hstack([base + k * 10, np.zeros((n, 1)), np.zeros((n, 1))])
    t["v"][:, 1] = np.hstack([base + k * 10, np.zeros((n, 1)), np.full((n, 1), 100)])
    t["v"][:, 2] = np.hstack([base + k * 10 + 100, np.zeros((n, 1)), np.zeros((n, 1))])
    t["normal"] = (0, -4096, 0)
    t["color"][:, :, :3] = [[128, 64, 32], [204, 100, 0], [1, 2, 3]]
    t["uv"] = [[0, 0], [3, 1], [1, 3]]
    if lay.tri.names and "tpage" in lay.tri.names:
        t["tpage"], t["clut_x"], t["clut_y"] = tpage, clut[0] // 16, clut[1]
    return t


def build_doc(lay_name: str) -> SplashpackDocument:
    """Two objects (an 8 bpp and a 4 bpp textured one), with every section the layout has."""
    lay = LAYOUTS[lay_name]
    doc = SplashpackDocument(layout=lay_name, header=np.zeros(1, lay.header))
    doc.header["magic"], doc.header["version"] = b"SP", 1
    if lay.has_player:
        doc.header["player_pos"] = PLAYER_POS
        doc.header["player_rot"] = PLAYER_ROT
        doc.header["player_height"] = PLAYER_HEIGHT
    if lay_name == "H":
        doc.header["scene_lua"] = 1
    if lay.has_lua:
        doc.lua = [LUA0, LUA1]
        doc.lua_desc = np.zeros(2, LUA_DESC)
    objs = np.zeros(2, lay.go)
    objs["pos"] = [(100, -200, 300), (-50, 0, 4000)]
    objs["rot"] = [IDENTITY, ROT_90_Y]
    names = lay.go.names or ()
    if "lua_index" in names and lay.has_lua:
        objs["lua_index"] = [0, -1]
    if "flags" in names:
        objs["flags"] = [1, 0]
    doc.objects = objs
    if lay_name == "B":
        # Per-object tpage and inline CLUT; both objects use the 8 bpp page with their own CLUT.
        objs["tpage"], objs["clut_x"], objs["clut_y"] = TPAGE_8, 0, [240, 241]
        pal = np.zeros(256, np.uint16)
        pal[:6] = clut8()
        objs["clut"][0] = pal
        objs["clut"][1] = pal[::-1]
        doc.meshes = [tris("B", 2, 0, 0, (0, 0)), tris("B", 3, 500, 0, (0, 0))]
    else:
        doc.meshes = [tris(lay_name, 2, 0, TPAGE_8, CLUT8_XY),
                      tris(lay_name, 3, 500, TPAGE_4, CLUT4_XY)]
    if lay.has_nav:
        nav = np.array([[[-1000, 50, -1000], [1000, 50, -1000], [-1000, 50, 1000]],
                        [[1000, 50, -1000], [1000, 50, 1000], [-1000, 50, 1000]]],
                       dtype=np.int32)
        doc.navmeshes = [nav]
        doc.nav_desc = np.zeros(1, NAV_DESC)
    if lay_name == "B":
        doc.atlas_pixels = [atlas8()]
        doc.atlases = np.zeros(1, ATLAS_DESC)
        doc.atlases["x"] = 320
        return doc
    doc.atlas_pixels = [atlas8(), atlas4()]
    doc.atlases = np.zeros(2, ATLAS_DESC)
    doc.atlases["x"] = [320, 960]
    if lay.clut == "inline":
        doc.cluts = np.zeros(2, CLUT_DESC_C)
        doc.cluts["palette"][0, :6] = clut8()
        doc.cluts["palette"][1, :16] = clut4()
        doc.cluts["count"] = [6, 16]
    else:
        doc.cluts = np.zeros(2, CLUT_DESC)
        doc.clut_words = [clut8(), clut4()]
    doc.cluts["clut_x"] = [CLUT8_XY[0] // 16, CLUT4_XY[0] // 16]
    doc.cluts["clut_y"] = [CLUT8_XY[1], CLUT4_XY[1]]
    return doc


# -- spec §b.10 ----------------------------------------------------------------------------------
def _overlaps(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def runtime_problems(doc: SplashpackDocument) -> list[str]:
    """Every way ``doc`` breaks what the v1 runtime needs (spec §b.10); empty when it is fine."""
    out: list[str] = []
    if doc.layout not in ("G", "H") or doc.version != 1:
        out.append(f"layout {doc.layout} version {doc.version}")
    atlases = [(int(a["x"]), int(a["y"]), int(a["width"]), int(a["height"])) for a in doc.atlases]
    for r in atlases:
        if r[0] % 64 or r[1] not in (0, 256):
            out.append(f"atlas {r} not page aligned")
        out += [f"atlas {r} overlaps framebuffer" for fb in FRAMEBUFFERS if _overlaps(r, fb)]
    cluts = {(int(c["clut_x"]), int(c["clut_y"])): int(c["count"]) for c in doc.cluts}
    for (cx, cy), n in cluts.items():
        r = (cx * 16, cy, n, 1)
        if n % 2:
            out.append(f"CLUT {r} has an odd entry count")
        out += [f"CLUT {r} overlaps {o}" for o in (*FRAMEBUFFERS, *atlases) if _overlaps(r, o)]
    if not doc.navmeshes or not len(doc.navmeshes[0]):
        out.append("no navmesh")
    for i, t in enumerate(doc.meshes):
        out += _tri_problems(i, t, atlases, cluts, doc)
    return out


def _tri_problems(i: int, t: np.ndarray, atlases: list[tuple[int, int, int, int]],
                  cluts: dict[tuple[int, int], int], doc: SplashpackDocument) -> list[str]:
    out: list[str] = []
    if len(t) == 0:
        return out
    if (t["color"][:, :, 3] != 0).any() or (t["uv_pad"] != 0).any() or (t["pad"] != 0).any():
        out.append(f"object {i}: non-zero pad bytes")
    if np.abs(t["v"].astype(np.int64)).max() > 16384:
        out.append(f"object {i}: a vertex is outside +-4 GTE units")
    vram = np.zeros((512, 1024), np.uint16)
    for d, px in zip(doc.atlases, doc.atlas_pixels, strict=True):
        psx.blit(vram, int(d["x"]), int(d["y"]), px)
    for tpage, cx, cy in {(int(a), int(b), int(c)) for a, b, c in
                          zip(t["tpage"], t["clut_x"], t["clut_y"], strict=True)}:
        sel = t[(t["tpage"] == tpage) & (t["clut_x"] == cx) & (t["clut_y"] == cy)]
        bpp = psx.tpage_depth(tpage)
        px0, py0 = psx.page_origin(tpage)
        wx = px0 + sel["uv"][:, :, 0].astype(np.int64) * bpp // 16
        wy = py0 + sel["uv"][:, :, 1].astype(np.int64)
        inside = np.zeros(wx.shape, bool)
        for ax, ay, aw, ah in atlases:
            inside |= (wx >= ax) & (wx < ax + aw) & (wy >= ay) & (wy < ay + ah)
        if not inside.all():
            out.append(f"object {i}: tpage {tpage:#x} texels outside every atlas")
        if bpp == 16:
            continue
        if (cx, cy) not in cluts:
            out.append(f"object {i}: CLUT ({cx}, {cy}) is never uploaded")
            continue
        words = vram[wy, wx]
        idx = (words >> ((sel["uv"][:, :, 0] % (16 // bpp)) * bpp)) & ((1 << bpp) - 1)
        if (idx >= cluts[(cx, cy)]).any():
            out.append(f"object {i}: a texel indexes past CLUT ({cx}, {cy})")
    return out


def corner_texels(doc: SplashpackDocument, i: int) -> dict[bytes, bytes]:
    """Object i's triangles (vertex bytes) -> the RGBA the GPU samples at their three UVs."""
    from gamemesh.formats.splashpack.v1.to_scene import tris52
    from gamemesh.formats.splashpack.vram import build_vram

    vram = build_vram(doc)
    counts = {(x // 16, y): len(w) for x, y, w in doc.clut_entries()}
    t = tris52(doc, i)
    out: dict[bytes, bytes] = {}
    pages: dict[tuple[int, int, int], Any] = {}
    for k in range(len(t)):
        key = (int(t["tpage"][k]), int(t["clut_x"][k]), int(t["clut_y"][k]))
        if key not in pages:
            bpp = psx.tpage_depth(key[0])
            pages[key] = psx.decode_page(vram, key[0], key[1] * 16, key[2],
                                         counts.get((key[1], key[2])) if bpp < 16 else None)
        uv = t["uv"][k].astype(np.int64)
        out[t["v"][k].tobytes()] = pages[key][uv[:, 1], uv[:, 0]].tobytes()
    return out
