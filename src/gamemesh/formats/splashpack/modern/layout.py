"""Record tables of modern SPLASHPACK, versions 20..26 (``specs/splashpack-modern.md``).

The file is a header whose size depends only on the version (120, 128, 144, 148, 156), a cursor
region of fixed records walked in one order (§3), then data blocks reached by absolute offsets
(§4). The textures live in a ``.vram`` sidecar (§6). Field names follow the spec.
"""

from __future__ import annotations

import numpy as np

from ..layout import MAGIC as MAGIC

VERSIONS = (20, 21, 22, 23, 24, 25, 26)
# PS1Godot (BuffJesus) kept numbering its own layouts: 21..26 collide with upstream (told apart
# by layout, never by the number), 27..32 are only its own.
FORK_VERSIONS = range(27, 33)
# Which runtime or tool reads each version (spec-modern §0, §13): psxsplash main @ fd34188 reads
# 20 and 21 only (it takes the 128-byte header for anything newer, so a v22+ pack breaks it).
PUBLIC_RUNTIME = "psxsplash main (fd34188)"
RUNTIME_VERSIONS = (20, 21)
# New files: the newest version the public runtime loads (21 holds all of 20 plus the memcard
# table; SplashEdit 2cfa718, the last Unity writer, writes 21 too).
DEFAULT_VERSION = 21
# The oldest version of each feature a scene can author (spec-modern §2.2, §4.4, §13).
LIGHTS_VERSION = 24
AGENTS_VERSION = 22
READERS = {20: PUBLIC_RUNTIME, 21: PUBLIC_RUNTIME,
           22: "no public reader (psxsplash between 2cfa718 and c1df566)",
           23: "psxsplash c1df566 (not public) and splashedit-ng's tests/splashdiff.py",
           24: "psxsplash c1df566 (not public) and splashedit-ng's checkers",
           25: "splashedit-ng's writer and checkers (no public runtime)",
           26: "splashedit-ng's newest checkers (skincheck.py, lightcheck.py; no public runtime)"}

_COMMON = [
    ("magic", "S2"), ("version", "<u2"), ("lua_count", "<u2"), ("go_count", "<u2"),
    ("atlas_count", "<u2"), ("clut_count", "<u2"), ("collider_count", "<u2"),
    ("interactable_count", "<u2"), ("player_pos", "<i2", (3,)), ("player_rot", "<i2", (3,)),
    ("player_height", "<u2"), ("scene_lua", "<i2"), ("bvh_node_count", "<u2"),
    ("bvh_ref_count", "<u2"), ("scene_type", "<u2"), ("trigger_count", "<u2"),
    ("world_col_mesh_count", "<u2"), ("world_col_tri_count", "<u2"),
    ("nav_region_count", "<u2"), ("nav_portal_count", "<u2"), ("move_speed", "<u2"),
    ("sprint_speed", "<u2"), ("jump_velocity", "<u2"), ("gravity", "<u2"),
    ("player_radius", "<u2"), ("pad1", "<u2"), ("name_table_offset", "<u4"),
    ("audio_count", "<u2"), ("pad2", "<u2"), ("audio_table_offset", "<u4"),
    ("fog_enabled", "u1"), ("fog_rgb", "u1", (3,)), ("fog_density", "u1"), ("pad3", "u1"),
    ("room_count", "<u2"), ("portal_count", "<u2"), ("room_tri_ref_count", "<u2"),
    ("cutscene_count", "<u2"), ("room_cell_count", "<u2"), ("cutscene_table_offset", "<u4"),
    ("ui_canvas_count", "<u2"), ("ui_font_count", "u1"), ("ui_pad5", "u1"),
    ("ui_table_offset", "<u4"), ("pixel_data_offset", "<u4"), ("animation_count", "<u2"),
    ("room_portal_ref_count", "<u2"), ("animation_table_offset", "<u4"),
    ("skin_count", "<u2"), ("agent_count", "<u2"), ("skin_table_offset", "<u4"),
]
# v21: memcard table; the next slot is reserved (0) until v22 makes it the stream table.
_V21 = [("memcard_offset", "<u4"), ("stream_offset", "<u4")]
_V22 = [("sprite_table_offset", "<u4"), ("sprite_sheet_count", "<u2"),
        ("sprite_anim_count", "<u2"), ("scene_hash", "<u4"), ("tilemap_offset", "<u4")]
_V24 = [("light_table_offset", "<u4")]
# v25: the renderer's ordering-table buckets and bump-allocator bytes per frame (the runtime
# allocates two of each; splashedit-ng computes them when the scene sets 0).
_V25 = [("ordering_table_size", "<u4"), ("bump_allocator_size", "<u4")]
# What psxsplash's renderer.hh fixed before v25 made them fields (SplashEdit's memory report
# quotes them): 2048 * 3 ordering-table buckets and 8096 * 24 bytes.
DEFAULT_OT_SIZE = 2048 * 3
DEFAULT_BUMP_SIZE = 8096 * 24

HEADERS: dict[int, np.dtype[np.void]] = {
    20: np.dtype(_COMMON), 21: np.dtype(_COMMON + _V21), 22: np.dtype(_COMMON + _V21 + _V22),
    23: np.dtype(_COMMON + _V21 + _V22), 24: np.dtype(_COMMON + _V21 + _V22 + _V24),
    25: np.dtype(_COMMON + _V21 + _V22 + _V24 + _V25),
    26: np.dtype(_COMMON + _V21 + _V22 + _V24 + _V25),
}
# v26: after a skin's clips, align 2, then per bone its bind position (i16[3], the vertices'
# space) and then per bone its joint name (u8 length, bytes, NUL).
SKIN_TAIL_VERSION = 26
BIND_POS = np.dtype("<i2")

LUA_DESC = np.dtype([("offset", "<u4"), ("length", "<u4")])
# §3.2: world transform with the Y flip, world AABB (20.12, Y negated so min/max swap).
GO = np.dtype([("mesh_offset", "<u4"), ("pos", "<i4", (3,)), ("rot", "<i4", (9,)),
               ("poly_count", "<u2"), ("lua_index", "<i2"), ("flags", "<u4"),
               ("interactable_index", "<u2"), ("uv_offset", "u1", (2,)), ("event_mask", "<u4"),
               ("aabb", "<i4", (6,))])
COLLIDER = np.dtype([("aabb", "<i4", (6,)), ("collision_type", "u1"), ("layer_mask", "u1"),
                     ("go_index", "<u2"), ("pad", "<u4")])
TRIGGER = np.dtype([("aabb", "<i4", (6,)), ("lua_index", "<i2"), ("pad", "<u2"),
                    ("pad2", "<u4")])
BVH_NODE = np.dtype([("aabb", "<i4", (6,)), ("left", "<u2"), ("right", "<u2"),
                     ("first_tri", "<u2"), ("tri_count", "<u2")])
BVH_REF = np.dtype([("object", "<u2"), ("tri", "<u2")])
INTERACTABLE = np.dtype([("radius_sq", "<i4"), ("button", "u1"), ("flags", "u1"),
                         ("cooldown", "<u2"), ("current_cooldown", "<u2"), ("go_index", "<u2"),
                         ("prompt", "S16")])
AGENT = np.dtype([("go_index", "<u2"), ("flags", "u1"), ("waypoint_count", "u1"),
                  ("move_speed", "<u2"), ("stop_distance", "<u2"), ("vision_range", "<u2"),
                  ("vision_cos", "<i2"), ("hearing_range", "<u2"), ("alert_timeout", "<u2"),
                  ("state_anim_clip", "u1", (8,)), ("vision_region_depth", "u1"),
                  ("reserved", "u1", (3,))])
WAYPOINT = np.dtype([("v", "<i4", (3,))])
NAV_HEADER = np.dtype([("region_count", "<u2"), ("portal_count", "<u2"),
                       ("start_region", "<u2"), ("pad", "<u2")])
NAV_REGION = np.dtype([("verts_x", "<i4", (8,)), ("verts_z", "<i4", (8,)),
                       ("plane", "<i4", (3,)), ("portal_start", "<u2"), ("portal_count", "u1"),
                       ("vert_count", "u1"), ("surface_type", "u1"), ("room_index", "u1"),
                       ("flags", "u1"), ("walkoff_edge_mask", "u1")])
NAV_PORTAL = np.dtype([("a", "<i4", (2,)), ("b", "<i4", (2,)), ("neighbor", "<u2"),
                       ("height_delta", "<i2")])
# §3.9, as psxsplash fd34188's bvh.hh declares them (RoomData, PortalData, TriangleRef, RoomCell,
# RoomPortalRef): boxes and centres 20.12 world (Y negated), vectors 4.12. The last room is the
# catch-all (triangles in no room); a room's references are a range of the flat tri-ref array,
# and so are its cells'.
ROOM = np.dtype([("aabb", "<i4", (6,)), ("first_tri_ref", "<u2"), ("tri_ref_count", "<u2"),
                 ("first_cell", "<u2"), ("cell_count", "u1"), ("portal_ref_count", "u1"),
                 ("first_portal_ref", "<u2"), ("pad", "<u2")])
ROOM_PORTAL = np.dtype([("room_a", "<u2"), ("room_b", "<u2"), ("center", "<i4", (3,)),
                        ("half_w", "<i2"), ("half_h", "<i2"), ("normal", "<i2", (3,)),
                        ("pad", "<i2"), ("right", "<i2", (3,)), ("up", "<i2", (3,))])
ROOM_TRI_REF = np.dtype([("object", "<u2"), ("tri", "<u2")])
ROOM_CELL = np.dtype([("aabb", "<i4", (6,)), ("first_tri_ref", "<u2"), ("tri_ref_count", "<u2")])
ROOM_PORTAL_REF = np.dtype([("portal", "<u2"), ("other_room", "<u2")])
ATLAS_DESC = np.dtype([("offset", "<u4"), ("width", "<u2"), ("height", "<u2"), ("x", "<u2"),
                       ("y", "<u2")])
CLUT_DESC = np.dtype([("offset", "<u4"), ("clut_x", "<u2"), ("clut_y", "<u2"),
                      ("count", "<u2"), ("pad", "<u2")])
# §5: the seed's 52-byte triangle; the last word is now flags (bit 0: UV-scroll material).
TRI = np.dtype([("v", "<i2", (3, 3)), ("normal", "<i2", (3,)), ("color", "u1", (3, 4)),
                ("uv", "u1", (3, 2)), ("uv_pad", "<u2"), ("tpage", "<u2"), ("clut_x", "<u2"),
                ("clut_y", "<u2"), ("flags", "<u2")])
# §4.3
TABLE_ENTRY = np.dtype([("offset", "<u4"), ("name_len", "u1"), ("pad", "u1", (3,)),
                        ("name_offset", "<u4")])
ANIM_HEADER = np.dtype([("duration", "<u2"), ("track_count", "u1"), ("pad", "u1"),
                        ("tracks_offset", "<u4"), ("skin_event_count", "u1"),
                        ("pad2", "u1", (3,)), ("skin_events_offset", "<u4")])
CUTSCENE_HEADER = np.dtype([("duration", "<u2"), ("track_count", "u1"),
                            ("audio_event_count", "u1"), ("tracks_offset", "<u4"),
                            ("audio_events_offset", "<u4"), ("skin_event_count", "u1"),
                            ("pad2", "u1", (3,)), ("skin_events_offset", "<u4")])
TRACK = np.dtype([("type", "u1"), ("key_count", "u1"), ("target_len", "u1"),
                  ("light_index", "u1"), ("target_offset", "<u4"), ("keys_offset", "<u4")])
KEY = np.dtype([("frame", "<u2"), ("v", "<i2", (3,))])
AUDIO_EVENT = np.dtype([("frame", "<u2"), ("clip", "u1"), ("volume", "u1"), ("pan", "u1"),
                        ("pad", "u1", (3,))])
SKIN_EVENT = np.dtype([("frame", "<u2"), ("skin", "u1"), ("clip", "u1"), ("loop", "u1"),
                       ("pad", "u1", (3,))])
# §4.2: r row-major fp12 and t fp12 in GTE units, Y flip applied.
BONE_MATRIX = np.dtype([("r", "<i2", (9,)), ("t", "<i2", (3,))])
# §4.4
LIGHT = np.dtype([("pos", "<i4", (3,)), ("radius", "<i4"), ("intensity", "<u2"),
                  ("rgb", "u1", (3,)), ("flags", "u1"), ("pad", "<u2"), ("name_offset", "<u4")])

# §4 item 4 (D23 §2.14): the audio table, 16 B a clip, then the clips' names (NUL-terminated);
# from v20 the ADPCM is in the .spu and dataOffset is 0. Clips are numbered alike in both files
# (the runtime's SPU upload and its name list each count from 0) and cutscene audio events name
# a clip by that number.
AUDIO_CLIP = np.dtype([("data_offset", "<u4"), ("size", "<u4"), ("rate", "<u2"), ("loop", "u1"),
                       ("name_len", "u1"), ("name_offset", "<u4")])
# audiomanager.hh: the runtime loads clips 0..31 and rounds each to the SPU's 16-byte ADPCM
# blocks (it uploads (size + 15) & ~15 bytes, so a clip of another size reads past its data).
MAX_AUDIO_CLIPS = 32
SPU_BLOCK = 16

for _dt, _size in ((HEADERS[20], 120), (HEADERS[21], 128), (HEADERS[22], 144), (HEADERS[24], 148),
                   (HEADERS[25], 156),
                   (GO, 92), (COLLIDER, 32), (TRIGGER, 32), (BVH_NODE, 32), (INTERACTABLE, 28),
                   (AGENT, 28), (NAV_REGION, 84), (NAV_PORTAL, 20), (TRI, 52), (ANIM_HEADER, 16),
                   (CUTSCENE_HEADER, 20), (TRACK, 12), (KEY, 8), (BONE_MATRIX, 24),
                   (LIGHT, 28), (TABLE_ENTRY, 12), (AUDIO_CLIP, 16), (ROOM, 36),
                   (ROOM_PORTAL, 40), (ROOM_CELL, 28), (ROOM_PORTAL_REF, 4)):
    assert _dt.itemsize == _size, (_dt, _size)

# Runtime limits (§4.2-4.4): the reader caps these tables at 16 entries.
MAX_TABLE = 16
MAX_BONES = 64
MAX_CLIPS = 16
MAX_KEYS = 64
MAX_NAME = 24
NO_INDEX = 0xFFFF
GO_ACTIVE = 0x1
GO_SKINNED = 0x10
# Track types that drive a GameObject (§4.3; 4 = active flag, not converted).
TRACK_OBJ_POS = 2
TRACK_OBJ_ROT = 3
# A key's interpolation is its frame word's top 3 bits: 0 linear, 1 step, 2 ease in, 3 ease out,
# 4 ease in-out (only the first two have a glTF equivalent).
FPS = 30  # frames are the runtime's 30 Hz ticks

# §6: the .vram sidecar.
VRAM_MAGIC = b"VR"
VRAM_HEADER = np.dtype([("magic", "S2"), ("atlas_count", "<u2"), ("clut_count", "<u2"),
                        ("font_count", "u1"), ("pad", "u1")])
VRAM_ATLAS = np.dtype([("x", "<u2"), ("y", "<u2"), ("width", "<u2"), ("height", "<u2")])
VRAM_CLUT = np.dtype([("clut_x", "<u2"), ("clut_y", "<u2"), ("length", "<u2"), ("pad", "<u2")])
VRAM_FONT = np.dtype([("glyph_w", "u1"), ("glyph_h", "u1"), ("x", "<u2"), ("y", "<u2"),
                      ("texture_h", "<u2"), ("data_size", "<u4")])
SPU_MAGIC = b"SA"
SPU_CLIP = np.dtype([("size", "<u4"), ("rate", "<u2"), ("loop", "u1"), ("pad", "u1")])

# Header offset fields of data blocks kept as opaque bytes (they hold absolute offsets of their
# own, so they are written back at the offset they were read from, §8).
OPAQUE_FIELDS = ("ui_table_offset", "sprite_table_offset", "tilemap_offset", "stream_offset",
                 "memcard_offset")

