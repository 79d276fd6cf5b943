"""What a source holds of nav regions, colliders, triggers, interactables, cutscenes, rooms and
audio reaches the sections of a modern pack the runtime parses (issue 28 item 8). Each pack is
decoded here with struct by the runtime's own rules (psxsplash main @ fd34188), not by
gamemesh's record types:

- ``src/splashpack.cpp`` walks the cursor region: header -> Lua 8 B -> GameObjects 92 B ->
  colliders 32 B -> triggers 32 B -> BVH 32 B nodes + 4 B refs -> interactables 28 B -> nav
  (8 B header, 84 B regions, 20 B portals) -> rooms (align 4; RoomData 36 B, PortalData 40 B,
  TriangleRef 4 B, RoomCell 28 B, RoomPortalRef 4 B, cells and portal refs only when counted) ->
  atlas and CLUT descriptors 12 B each; then the audio table at its offset (16 B a clip, the
  name at its own offset).
- ``src/navregion.cpp``: a point is in a region when every edge's
  (bx - ax)(pz - az) - (bz - az)(px - ax) >= 0, and the floor is (A·X >> 12) + (B·Z >> 12) + D.
- ``Renderer::RenderWithRooms`` draws a reference as ``objects[o]->polygons[t]`` when o is below
  the object count and t below its polyCount.
- SceneManager's ``uploadSpuData`` walks the ``.spu``: 'SA', count, per clip size u32, rate u16,
  loop u8, pad, the ADPCM, align 4; ``AudioManager::loadClip`` uploads (size + 15) & ~15 bytes
  of clips 0..31.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

import gamemesh
from gamemesh.formats.splashpack.modern import layout as ml
from gamemesh.formats.splashpack.modern.carry import in_scene_order
from gamemesh.formats.splashpack.modern.write import write_modern, write_vram
from splashpack_modern_fixtures import ADPCM, interior_document, rich_document, scene


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
        out["bvh_refs_at"] = pos + 32 * nodes
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
    pos = _walk_rooms(data, pos, out)
    out["atlas_desc"] = [struct.unpack_from("<IHHHH", data, pos + 12 * k) for k in range(atlases)]
    pos += 12 * (atlases + cluts)
    out["cursor_end"] = pos
    out["counts"] = (regions, portals)
    return out


def _walk_rooms(data: bytes, pos: int, out: dict[str, Any]) -> int:
    rooms, portals, refs, _, cells = struct.unpack_from("<5H", data, 78)
    portal_refs = struct.unpack_from("<H", data, 106)[0]
    if not rooms:
        return pos
    pos = (pos + 3) & ~3
    for key, fmt, n in (("rooms", "<6iHHHBBHH", rooms), ("room_portals", "<HH3ihh3hh3h3h", portals),
                        ("tri_refs", "<HH", refs), ("cells", "<6iHH", cells),
                        ("portal_refs", "<HH", portal_refs)):
        size = struct.calcsize(fmt)
        out[key] = [struct.unpack_from(fmt, data, pos + size * k) for k in range(n)]
        pos += size * n
    return pos


def _triangle(data: bytes, gos: list[tuple[Any, ...]], obj: int, tri: int) -> tuple[int, ...]:
    """The 9 vertex words of ``objects[obj]->polygons[tri]`` (the runtime's bounds first)."""
    assert obj < len(gos) and tri < gos[obj][13]  # objectIndex < objects.size(), < polyCount
    return struct.unpack_from("<9h", data, gos[obj][0] + 52 * tri)


def _audio(data: bytes) -> list[tuple[int, int, int, bytes]]:
    """The audio clips as ``splashpack.cpp`` reads them: (size, rate, loop, name)."""
    count, _, table = struct.unpack_from("<HHI", data, 64)
    if not (count and table):
        return []
    out = []
    for k in range(count):
        off, size, rate, loop, name_len, name_at = struct.unpack_from("<IIHBBI", data,
                                                                      table + 16 * k)
        assert off == 0 and name_len and name_at  # v20+: the ADPCM is in the .spu
        name = data[name_at:data.index(b"\0", name_at)]
        assert len(name) == name_len
        out.append((size, rate, loop, name))
    return out


def _spu(data: bytes) -> list[tuple[int, int, bytes]]:
    """The ``.spu`` as ``uploadSpuData`` walks it: (rate, loop, ADPCM) per clip."""
    assert data[:2] == b"SA"
    pos, out = 4, []
    for _ in range(struct.unpack_from("<H", data, 2)[0]):
        size, rate, loop, _pad = struct.unpack_from("<IHBB", data, pos)
        out.append((rate, loop, data[pos + 8:pos + 8 + size]))
        pos = (pos + 8 + size + 3) & ~3
    assert pos == len(data)
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


def _write(doc: Any, path: Path) -> Path:
    assert doc.vram is not None
    path.write_bytes(write_modern(doc))
    path.with_suffix(".vram").write_bytes(write_vram(doc.vram))
    if doc.spu is not None:
        path.with_suffix(".spu").write_bytes(doc.spu)
    return path


def test_rooms_reach_a_v21_pack_from_gltf_naming_the_same_triangles(tmp_path: Path) -> None:
    """An interior pack's rooms, portals, cells and portal refs come back from glTF where the
    runtime reads them, and every triangle reference names the triangle it named in the source,
    though the glTF holds the floor's two triangles in the other order (one textured, one not)."""
    src = _write(interior_document(21), tmp_path / "in.splashpack")
    gamemesh.convert(src, tmp_path / "in.glb")
    rep = gamemesh.convert(tmp_path / "in.glb", tmp_path / "out.splashpack")
    a, b = src.read_bytes(), (tmp_path / "out.splashpack").read_bytes()
    wa, wb = _walk(a), _walk(b)
    assert struct.unpack_from("<H", b, 36)[0] == 1  # sceneType: interior
    assert (len(wb["rooms"]), len(wb["room_portals"]), len(wb["tri_refs"]), len(wb["cells"]),
            len(wb["portal_refs"])) == (3, 1, 4, 2, 2)
    assert wb["gos"][0][0] == wb["cursor_end"]  # the cursor lands on the first triangles
    assert wb["rooms"] == wa["rooms"] and wb["room_portals"] == wa["room_portals"]
    assert wb["cells"] == wa["cells"] and wb["portal_refs"] == [(0, 1), (0, 0)]
    # The floor's triangles were swapped (the textured one first), and so were its references.
    assert wa["tri_refs"] == [(0, 0), (0, 1), (1, 1), (1, 0)]
    assert wb["tri_refs"] == [(0, 1), (0, 0), (1, 1), (1, 0)]
    assert struct.unpack_from("<H", a, wa["gos"][0][0] + 44)[0] == 0xFFFF
    assert struct.unpack_from("<H", b, wb["gos"][0][0] + 52 + 44)[0] == 0xFFFF
    for room in wb["rooms"]:  # each room's range and its cells' ranges lie in the array
        first, count, first_cell, cells = room[6], room[7], room[8], room[9]
        assert first + count <= 4 and first_cell + cells <= 2
        for c in wb["cells"][first_cell:first_cell + cells]:
            assert first <= c[6] and c[6] + c[7] <= first + count
    for ra, rb in zip(wa["tri_refs"], wb["tri_refs"], strict=True):
        assert _triangle(b, wb["gos"], *rb) == _triangle(a, wa["gos"], *ra)
    assert not {"splashpack.rooms_dropped", "splashpack.derived_dropped"} & \
        {n.code for n in rep.notes}
    # A pack written from the scene rewrites byte for byte, and reads back to the same pack.
    assert gamemesh.formats.splashpack.SPEC.write(gamemesh.read_native(tmp_path / "out.splashpack"),
                                                  gamemesh.registry.Context()) == b
    gamemesh.convert(tmp_path / "out.splashpack", tmp_path / "again.glb")
    gamemesh.convert(tmp_path / "again.glb", tmp_path / "again.splashpack")
    assert (tmp_path / "again.splashpack").read_bytes() == b


def test_rooms_are_left_out_with_a_warning_when_their_meshes_change(tmp_path: Path) -> None:
    src = _write(interior_document(21), tmp_path / "in.splashpack")
    gamemesh.convert(src, tmp_path / "in.glb")
    s = gamemesh.load(tmp_path / "in.glb")
    crate = next(n for n in s.nodes if n.name == "Crate")
    prim = s.meshes[crate.mesh].primitives[0]  # type: ignore[index]
    prim.positions = prim.positions + np.float32([0.0, 0.25, 0.0])
    notes = gamemesh.save(s, tmp_path / "moved.splashpack")
    msg = next(n.message for n in notes if n.code == "splashpack.rooms_dropped")
    assert "2 room(s) and the catch-all, 1 portal(s), 4 triangle reference(s)" in msg
    assert "'Crate', referenced by rooms [1], changed" in msg and "'Floor'" not in msg
    out = (tmp_path / "moved.splashpack").read_bytes()
    assert struct.unpack_from("<5H", out, 78)[0] == 0 and _walk(out).get("rooms") is None
    # A new static object: no room would draw it, so the rooms are left out and it is named.
    s = gamemesh.load(tmp_path / "in.glb")
    s.add_node(gamemesh.scene.Node(name="Extra", mesh=crate.mesh))
    notes = gamemesh.save(s, tmp_path / "extra.splashpack")
    msg = next(n.message for n in notes if n.code == "splashpack.rooms_dropped")
    assert "'Extra' is new" in msg


def test_audio_clips_reach_a_v21_pack_and_its_spu_from_gltf(tmp_path: Path) -> None:
    """A v24 pack's audio table and .spu, read to glTF and written as v21: the runtime's loader
    finds both clips by name, the SPU upload finds their ADPCM (16-byte blocks), and the cutscene's
    audio event plays the clip it played in the source."""
    src = _write(rich_document(), tmp_path / "rich.splashpack")
    gamemesh.convert(src, tmp_path / "rich.glb")
    rep = gamemesh.convert(tmp_path / "rich.glb", tmp_path / "out.splashpack", splash_version=21)
    data = (tmp_path / "out.splashpack").read_bytes()
    clips = _audio(data)
    assert clips == [(64, 22050, 0, b"step"), (48, 11025, 1, b"door_loop")]
    table = struct.unpack_from("<I", data, 68)[0]
    names_end = struct.unpack_from("<I", data, 60)[0]
    assert table % 4 == 0 and table > names_end  # after the object names, 4-aligned
    spu = _spu((tmp_path / "out.spu").read_bytes())
    assert spu == [(22050, 0, ADPCM[:64]), (11025, 1, ADPCM[64:112])]
    assert len(spu) <= 32 and all(len(d) % 16 == 0 for _, _, d in spu)
    assert [(len(d), r, lp) for r, lp, d in spu] == [c[:3] for c in clips]
    # The cutscene (header at its table entry's offset) plays clip 1, "door_loop", at frame 30.
    entry = struct.unpack_from("<IBBBBI", data, struct.unpack_from("<I", data, 88)[0])
    _, _, events, _, at = struct.unpack_from("<HBBII", data, entry[0])
    assert events == 1
    frame, clip, volume, pan = struct.unpack_from("<HBBB", data, at)
    assert (frame, clips[clip][3], volume, pan) == (30, b"door_loop", 100, 64)
    assert "splashpack.opaque_dropped" in {n.code for n in rep.notes}  # the memory card only
    dropped = next(n.message for n in rep.notes if n.code == "splashpack.opaque_dropped")
    assert "audio" not in dropped
    # Our own pack rewrites byte for byte, with its .spu.
    back = gamemesh.read_native(tmp_path / "out.splashpack")
    gamemesh.write_native(back, tmp_path / "copy.splashpack")
    assert (tmp_path / "copy.splashpack").read_bytes() == data
    assert (tmp_path / "copy.spu").read_bytes() == (tmp_path / "out.spu").read_bytes()


def test_audio_events_naming_no_clip_are_left_out_with_a_warning(tmp_path: Path) -> None:
    src = _write(rich_document(), tmp_path / "rich.splashpack")
    gamemesh.convert(src, tmp_path / "rich.glb")
    s = gamemesh.load(tmp_path / "rich.glb")
    del s.extras["splashpack"]["native"]["audio"]
    notes = gamemesh.save(s, tmp_path / "out.splashpack", splash_version=21)
    msg = next(n.message for n in notes if n.code == "splashpack.audio_events_dropped")
    assert "'intro': 1 audio event(s) name clips [1]" in msg and "holds 0" in msg
    data = (tmp_path / "out.splashpack").read_bytes()
    assert _audio(data) == []
    entry = struct.unpack_from("<IBBBBI", data, struct.unpack_from("<I", data, 88)[0])
    assert struct.unpack_from("<HBB", data, entry[0])[2] == 0  # no audio event left


def test_a_kept_bvh_names_the_same_triangles_after_gltf_reorders_them(tmp_path: Path) -> None:
    """The kept BVH's references follow the triangles to_scene regroups by material (they
    named the other floor triangle before, though every object kept its triangle count)."""
    doc = interior_document(21)
    doc.header["scene_type"] = 0
    doc.rooms = doc.rooms[:0]
    doc.room_portals, doc.room_tri_refs = doc.room_portals[:0], doc.room_tri_refs[:0]
    doc.room_cells, doc.room_portal_refs = doc.room_cells[:0], doc.room_portal_refs[:0]
    doc.bvh_nodes = np.zeros(1, ml.BVH_NODE)
    doc.bvh_nodes[0] = ([-8192, -8192, -8192, 8192, 8192, 8192], 0xFFFF, 0xFFFF, 0, 4)
    doc.bvh_refs = np.zeros(4, ml.BVH_REF)
    doc.bvh_refs[["object", "tri"]] = [(0, 0), (0, 1), (1, 0), (1, 1)]
    src = _write(doc, tmp_path / "in.splashpack")
    gamemesh.convert(src, tmp_path / "in.glb")
    gamemesh.convert(tmp_path / "in.glb", tmp_path / "out.splashpack")
    a, b = src.read_bytes(), (tmp_path / "out.splashpack").read_bytes()
    wa, wb = _walk(a), _walk(b)
    refs_a = [struct.unpack_from("<HH", a, wa["bvh_refs_at"] + 4 * k) for k in range(4)]
    refs_b = [struct.unpack_from("<HH", b, wb["bvh_refs_at"] + 4 * k) for k in range(4)]
    assert refs_b == [(0, 1), (0, 0), (1, 0), (1, 1)]
    for ra, rb in zip(refs_a, refs_b, strict=True):
        assert _triangle(b, wb["gos"], *rb) == _triangle(a, wa["gos"], *ra)


def test_a_modern_scene_written_as_v1_names_what_v1_cannot_hold(tmp_path: Path) -> None:
    src = _write(rich_document(), tmp_path / "rich.splashpack")
    gamemesh.convert(src, tmp_path / "rich.glb")
    notes = gamemesh.save(gamemesh.load(tmp_path / "rich.glb"), tmp_path / "v1.bin",
                          layout="H")
    msg = next(n.message for n in notes if n.code == "splashpack.modern_dropped")
    assert msg.startswith("version 1 has no audio clips, cutscenes, colliders, trigger boxes, "
                          "interactables, AI agents:")
    # A v1 scene has none of them: no note.
    gamemesh.save(scene(lights=False), tmp_path / "plain.bin", layout="H")
    gamemesh.convert(tmp_path / "plain.bin", tmp_path / "plain.glb")
    notes = gamemesh.save(gamemesh.load(tmp_path / "plain.glb"), tmp_path / "again.bin")
    assert "splashpack.modern_dropped" not in {n.code for n in notes}


def test_references_follow_their_triangles_into_scene_order() -> None:
    """Each reference lands where its triangle went; past an object's count, or an object past
    the table, it is left as it was (the runtime skips those)."""
    orders = {1: np.array([2, 0, 1]), 3: np.array([1, 0])}
    refs = np.zeros(7, ml.BVH_REF)
    refs[["object", "tri"]] = [(0, 1), (1, 0), (1, 1), (1, 2), (3, 0), (1, 9), (7, 0)]
    out = in_scene_order(refs, orders, [2, 3, 0, 2])
    assert out[["object", "tri"]].tolist() == [(0, 1), (1, 1), (1, 2), (1, 0), (3, 1), (1, 9),
                                               (7, 0)]


def test_a_reference_to_no_object_stays_one_and_unverifiable_rooms_are_left_out(
        tmp_path: Path) -> None:
    doc = interior_document(21)
    doc.room_tri_refs = np.concatenate([doc.room_tri_refs, np.zeros(1, ml.ROOM_TRI_REF)])
    doc.room_tri_refs[4] = (9, 0)  # the catch-all names object 9 of 3: the runtime skips it
    doc.rooms[2]["tri_ref_count"] = 1
    src = _write(doc, tmp_path / "in.splashpack")
    gamemesh.convert(src, tmp_path / "in.glb")
    gamemesh.convert(tmp_path / "in.glb", tmp_path / "out.splashpack")
    w = _walk((tmp_path / "out.splashpack").read_bytes())
    assert w["tri_refs"] == [(0, 1), (0, 0), (1, 1), (1, 0), (0xFFFF, 0)]
    s = gamemesh.load(tmp_path / "in.glb")
    del s.extras["splashpack"]["native"]["room_objects"]
    notes = gamemesh.save(s, tmp_path / "old.splashpack")
    msg = next(n.message for n in notes if n.code == "splashpack.rooms_dropped")
    assert "keeps no digest" in msg
