"""What a source holds of nav regions, colliders, triggers, interactables and cutscenes reaches
the sections of a modern pack the runtime parses (issue 28 item 8). Each pack is decoded here
with struct by the runtime's own rules (psxsplash main @ fd34188: ``src/splashpack.cpp`` walks the
cursor region header -> Lua 8 B -> GameObjects 92 B -> colliders 32 B -> triggers 32 B -> BVH
32 B nodes + 4 B refs -> interactables 28 B -> nav (8 B header, 84 B regions, 20 B portals) ->
rooms -> atlas and CLUT descriptors 12 B each; ``src/navregion.cpp``: a point is in a region when
every edge's (bx - ax)(pz - az) - (bz - az)(px - ax) >= 0, and the floor is
(A·X >> 12) + (B·Z >> 12) + D), not by gamemesh's record types."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

import gamemesh
from gamemesh.formats.splashpack.modern.write import write_modern, write_vram
from splashpack_modern_fixtures import rich_document, scene


def _walk(data: bytes) -> dict[str, Any]:
    """The cursor region as fd34188 walks it (v20: 120-byte header, else 128: it reads 20/21)."""
    version = struct.unpack_from("<H", data, 2)[0]
    assert version in (20, 21)
    lua, gos, atlases, cluts, colliders, inter = struct.unpack_from("<6H", data, 4)
    nodes, refs, _stype, triggers = struct.unpack_from("<4H", data, 32)
    regions, portals = struct.unpack_from("<2H", data, 44)
    pos = 120 if version == 20 else 128
    out: dict[str, Any] = {"gos": [], "colliders": [], "triggers": [], "regions": [],
                           "portals": []}
    out["lua"] = [struct.unpack_from("<II", data, pos + 8 * k) for k in range(lua)]
    pos += 8 * lua
    for _ in range(gos):
        out["gos"].append(struct.unpack_from("<I3i9iHhIHBBI6i", data, pos))
        pos += 92
    for _ in range(colliders):
        out["colliders"].append(struct.unpack_from("<6iBBHI", data, pos))
        pos += 32
    for _ in range(triggers):
        out["triggers"].append(struct.unpack_from("<6ihHI", data, pos))
        pos += 32
    if nodes:
        pos += 32 * nodes + 4 * refs
    out["interactables"] = [struct.unpack_from("<iBBHHH16s", data, pos + 28 * k)
                            for k in range(inter)]
    pos += 28 * inter
    if regions:
        pos = (pos + 3) & ~3
        out["nav_header"] = struct.unpack_from("<4H", data, pos)
        pos += 8
        for _ in range(regions):
            r = struct.unpack_from("<8i8i3iHBBBBBB", data, pos)
            out["regions"].append({"x": r[0:8], "z": r[8:16], "plane": r[16:19],
                                   "portal_start": r[19], "portal_count": r[20],
                                   "vert_count": r[21], "room": r[23]})
            pos += 84
        for _ in range(portals):
            out["portals"].append(struct.unpack_from("<4iHh", data, pos))
            pos += 20
    out["atlas_desc"] = [struct.unpack_from("<IHHHH", data, pos + 12 * k) for k in range(atlases)]
    pos += 12 * (atlases + cluts)
    out["cursor_end"] = pos
    out["counts"] = (regions, portals)
    return out


def _floor(plane: tuple[int, int, int], x: int, z: int) -> int:
    a, b, d = plane
    return ((a * x) >> 12) + ((b * z) >> 12) + d


def _inside(reg: dict[str, Any], x: int, z: int) -> bool:
    n = reg["vert_count"]
    for i in range(n):
        ax, az, bx, bz = reg["x"][i], reg["z"][i], reg["x"][(i + 1) % n], reg["z"][(i + 1) % n]
        if (bx - ax) * (z - az) - (bz - az) * (x - ax) < 0:
            return False
    return n >= 3


def test_v1_navmesh_becomes_nav_regions_the_runtime_walks(tmp_path: Path) -> None:
    gamemesh.save(scene(lights=False), tmp_path / "v1.bin", layout="H")
    v1 = gamemesh.read_native(tmp_path / "v1.bin")
    (nav,) = v1.navmeshes
    corners = np.asarray(nav).reshape(-1, 3).tolist()  # the v1 navmesh's PSX-frame corners
    report = gamemesh.convert(tmp_path / "v1.bin", tmp_path / "m.splashpack", splash_version=21)
    data = (tmp_path / "m.splashpack").read_bytes()
    w = _walk(data)
    assert w["counts"] == (len(nav), 2) == (2, 2)  # the quad's two triangles, one shared edge
    assert w["nav_header"][:2] == (2, 2) and w["nav_header"][2] < 2
    # The cursor ends where the first object's triangles start: the runtime lands on them.
    assert w["gos"][0][0] == w["cursor_end"]
    for k, reg in enumerate(w["regions"]):
        assert reg["vert_count"] == 3 and reg["room"] == 0xFF and reg["portal_count"] == 1
        xs, zs = reg["x"][:3], reg["z"][:3]
        assert reg["x"][3:] == (0,) * 5
        cx, cz = sum(xs) // 3, sum(zs) // 3
        assert _inside(reg, cx, cz)  # wound the way pointInConvexPoly wants
        for x, z in zip(xs, zs, strict=True):
            y = next(c[1] for c in corners if (c[0], c[2]) == (x, z))
            assert _floor(reg["plane"], x, z) == y  # the floor passes through the corners
        (ax, az, bx, bz, neighbor, dh) = w["portals"][reg["portal_start"]]
        assert neighbor == 1 - k and dh == 0
        assert {(ax, az), (bx, bz)} <= set(zip(xs, zs, strict=True))
    assert "splashpack.navmesh_dropped" not in {n.code for n in report.notes}
    assert "navigation" not in next((n.message for n in report.notes
                                     if n.code == "splashpack.not_built"), "")


def test_kept_sections_reach_a_v21_pack_from_gltf(tmp_path: Path) -> None:
    """A modern pack's colliders, triggers, interactables, nav regions and cutscene, read to
    glTF and written as v21, are where the runtime's cursor reads them."""
    doc = rich_document()
    assert doc.vram is not None
    (tmp_path / "rich.splashpack").write_bytes(write_modern(doc))
    (tmp_path / "rich.vram").write_bytes(write_vram(doc.vram))
    gamemesh.convert(tmp_path / "rich.splashpack", tmp_path / "rich.glb")
    rep = gamemesh.convert(tmp_path / "rich.glb", tmp_path / "out.splashpack", splash_version=21)
    data = (tmp_path / "out.splashpack").read_bytes()
    w = _walk(data)
    assert w["lua"][0][0] == w["cursor_end"]  # the first data block (Lua) follows the cursor
    assert w["colliders"] == [(-10, -10, -10, 10, 10, 10, 1, 0xFF, 1, 0)]
    assert w["triggers"] == [(0, 0, 0, 50, 50, 50, 0, 0, 0)]
    assert [(i[5], i[6].rstrip(b"\0")) for i in w["interactables"]] == [(1, b"Open")]
    (reg,) = w["regions"]
    assert reg["vert_count"] == 4 and reg["x"][:4] == (-8192, 8192, 8192, -8192)
    assert w["counts"] == (1, 1)
    (count, table) = struct.unpack_from("<H", data, 84)[0], struct.unpack_from("<I", data, 88)[0]
    assert count == 1 and table % 4 == 0
    entry = struct.unpack_from("<IBBBBI", data, table)
    assert data[entry[5]:entry[5] + 6] == b"intro\0"
    # Agents need v22: a warning names what was dropped and the option that keeps it.
    lost = next(n for n in rep.notes if n.code == "splashpack.agents_dropped")
    assert "1 AI agent" in lost.message and "--splash-version 22" in lost.message
