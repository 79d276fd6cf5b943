"""Scene -> SplashpackDocument (layout G, or H on request) that the v1 runtime accepts (spec §b.10).

Steps: every mesh node becomes one GameObject (rotation kept, node scale and shear baked into
the vertices); every base-colour texture is quantized to a 4 or 8 bpp palette (16 bpp on request
or when the image came from a 16 bpp page), packed into page-aligned 256-row atlases clear of both
framebuffers, and palettes become CLUTs of an even length placed first-fit like the exporter does
(both in the shared ``vram.py``); coordinates are fitted into +-4 GTE units by choosing
GTEScaling; a navmesh and a player start are always written. The axis change is the inverse
of ``to_scene``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ....errors import LimitError
from ....registry import Context
from ....scene import Scene
from ....scene.math import world_matrices
from ..common import (
    Part,
    choose_gte,
    color_scale,
    is_navmesh,
    part,
    part_records,
    scene_lua,
    uv_boxes,
)
from ..conventions import AXES, SWAP, stored_rotation
from ..layout import MAGIC
from ..vram import Tex, Textures, atlas_pixels, ext, merge_pages, place
from .document import SplashpackDocument
from .layout import ATLAS_DESC, CLUT_DESC, LAYOUTS, LUA_DESC, NAV_DESC, TRI, VERSION, Layout

Atlas = tuple[int, int, int]  # x, y, bpp

FMT = "splashpack"
RAW_MAX = 16383  # +-4 GTE units in 4.12 (the exporter clamps to [-16384, 16379])
FIT = 16000  # head-room kept when GTEScaling is chosen from the bounds
MAX_TRIS = 0xFFFF

__all__ = ["from_scene"]


@dataclass
class _Object:
    name: str
    rotation: npt.NDArray[np.int32]
    position: npt.NDArray[np.float64]  # glTF units
    parts: list[Part] = field(default_factory=list)
    lua_index: int = -1
    flags: int = 1


# What each splashpack.dropped note reports lost (scene.loss.PROPERTIES), by its first word.
_DROPPED_COVERS = {"skinning": ("skins", "joints"), "morph": ("targets",),
                   "points/lines": ("primitives",)}


def _gather(scene: Scene, ctx: Context, tex: Textures) -> tuple[list[_Object],
                                                                list[npt.NDArray[np.float64]]]:
    worlds = world_matrices(scene)
    objects: list[_Object] = []
    navs: list[tuple[int, npt.NDArray[np.float64]]] = []
    dropped: set[str] = set()
    for i in scene.walk():
        node = scene.nodes[i]
        if node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        mesh = scene.meshes[node.mesh]
        m = worlds[i]
        if is_navmesh(node):
            for prim in mesh.primitives:
                if prim.mode == 4 and len(prim.positions):
                    p = np.asarray(prim.positions, np.float64) @ m[:3, :3].T + m[:3, 3]
                    order = ext(node).get("navmesh")
                    navs.append((order if isinstance(order, int) else 1 << 30, p[prim.triangles()]))
            continue
        if node.skin is not None:
            dropped.add("skinning (the bind pose is written)")
        if any(p.targets for p in mesh.primitives):
            dropped.add("morph targets")
        rot, raw_rot = stored_rotation(ext(node).get("rotation_raw"), m[:3, :3])
        bake = rot.T @ m[:3, :3]
        info = ext(node)
        obj = _Object(name=node.name or f"node_{i}", rotation=raw_rot,
                      position=m[:3, 3].copy(),
                      lua_index=int(info.get("lua_index", -1)) if isinstance(
                          info.get("lua_index", -1), int) else -1,
                      flags=int(info.get("flags", 1)) if isinstance(info.get("flags", 1), int)
                      else 1)
        for pi, prim in enumerate(mesh.primitives):
            where = f"node {node.name!r} primitive {pi}"
            if prim.mode != 4:
                dropped.add("points/lines (only triangles exist)")
                continue
            mat = scene.materials[prim.material] if prim.material is not None and \
                0 <= prim.material < len(scene.materials) else None
            t, texcoord = tex.for_material(mat)
            got = part(prim, bake, mat, t, texcoord, color_scale(scene, mat), ctx, where,
                       (mesh, pi))
            if got is None:
                continue
            if not obj.parts:
                objects.append(obj)
            obj.parts.append(got)
    for what in sorted(dropped):
        ctx.note("splashpack.dropped", f"{what}: not in the format",
                 covers=_DROPPED_COVERS.get(what.split(" ")[0], ()))
    if scene.animations:
        ctx.note("splashpack.dropped", "animations: not in the format",
                 covers=("clips", "channels"))
    navs.sort(key=lambda n: n[0])
    return objects, [v for _, v in navs]


# -- fixed point ------------------------------------------------------------------------------
class _Fixed:
    """glTF units -> raw 4.12 GTE units; counts what had to be clamped."""

    def __init__(self, gte: float) -> None:
        self.gte = gte
        self.s = gte / 4096.0
        self.clamped = 0

    def raw(self, v: npt.NDArray[np.float64]) -> npt.NDArray[np.int32]:
        r = np.rint(np.asarray(v, np.float64) * AXES / self.s)
        r = np.nan_to_num(r, nan=0.0, posinf=RAW_MAX, neginf=-RAW_MAX)
        over = np.abs(r) > RAW_MAX
        self.clamped += int(over.sum())
        out: npt.NDArray[np.int32] = np.clip(r, -RAW_MAX, RAW_MAX).astype(np.int32)
        return out


def _extent(objects: list[_Object], navs: list[npt.NDArray[np.float64]],
            player: npt.NDArray[np.float64] | None) -> float:
    vals = [0.0]
    for o in objects:
        vals.append(float(np.abs(o.position).max()))
        vals += [float(np.abs(p.corners).max()) for p in o.parts]
    vals += [float(np.abs(v).max()) for v in navs if v.size]
    if player is not None:
        vals.append(float(np.abs(player).max()))
    finite = [v for v in vals if np.isfinite(v)]
    return max(finite) if finite else 0.0


# -- navmesh, player, Lua -----------------------------------------------------------------------
def _flat_quad(objects: list[_Object], ctx: Context) -> npt.NDArray[np.float64]:
    pts = [p.corners.reshape(-1, 3) @ _rot_f(o).T + o.position for o in objects for p in o.parts]
    allp = np.concatenate(pts) if pts else np.zeros((1, 3))
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    pad = 0.05 * max(float((hi - lo).max()), 1e-3)
    x0, x1, z0, z1, y = lo[0] - pad, hi[0] + pad, lo[2] - pad, hi[2] + pad, lo[1]
    quad = np.array([[[x0, y, z0], [x0, y, z1], [x1, y, z1]],
                     [[x0, y, z0], [x1, y, z1], [x1, y, z0]]])
    ctx.note("splashpack.navmesh_added", "no node is flagged as a navmesh; a flat quad under the "
             "scene is written (the v1 runtime needs one)")
    return quad


def _rot_f(o: _Object) -> npt.NDArray[np.float64]:
    r = o.rotation.reshape(3, 3).astype(np.float64) / 4096
    return np.asarray(AXES[:, None] * r * AXES[None, :])


def _player(scene: Scene, navs: list[npt.NDArray[np.float64]],
            ctx: Context) -> tuple[npt.NDArray[np.float64], list[int], float | None, int | None]:
    """(position, raw rotation, height in units or None, raw height or None)."""
    worlds = world_matrices(scene)
    for i, node in enumerate(scene.nodes):
        info = ext(node)
        if info.get("player"):
            rot = info.get("rotation_raw")
            rot = [int(x) for x in rot] if isinstance(rot, list) and len(rot) == 3 else [0, 0, 0]
            h_raw = info.get("height_raw")
            h = info.get("height")
            return (worlds[i][:3, 3].copy(), rot,
                    float(h) if isinstance(h, int | float) else None,
                    int(h_raw) if isinstance(h_raw, int) else None)
    tri = navs[0][0]
    # 1.7 units (an eye height in metres), less in a scene smaller than that.
    span = float(np.ptp(np.concatenate([v.reshape(-1, 3) for v in navs]), axis=0).max())
    height = min(1.7, max(span, 1e-3) / 4)
    ctx.note("splashpack.player_default", "no player_start node; the player starts over the "
             f"navmesh's first triangle with an eye height of {height} units")
    return tri.mean(axis=0) + np.array([0.0, height, 0.0]), [0, 0, 0], height, None


# -- the document -------------------------------------------------------------------------------
def _tri_records(obj: _Object, parts: list[Part], textures: list[Tex],
                 atlases: list[tuple[int, int, int]], fx: _Fixed) -> npt.NDArray[np.void]:
    recs = [part_records(p, textures, atlases, fx.raw, TRI) for p in parts]
    return np.concatenate(recs) if recs else np.zeros(0, TRI)


def _uv_note(objects: list[_Object], ctx: Context) -> None:
    outside = sum(int(((p.uvs < -1e-4) | (p.uvs > 1 + 1e-4)).any()) for o in objects
                  for p in o.parts)
    if outside:
        ctx.note("splashpack.uv_clamped", f"{outside} primitive(s) have UVs outside 0..1; the "
                 "PS1 texture window has no tiling here, so they are clamped")


# What a scene read from a modern file keeps in extras (modern/to_scene) that version 1 has no
# section for, as the warning names it.
_MODERN_ONLY = {"audio": "audio clips", "rooms": "rooms", "cutscenes": "cutscenes",
                "colliders": "colliders", "triggers": "trigger boxes",
                "interactables": "interactables", "agents": "AI agents"}


def _modern_only(scene: Scene, ctx: Context) -> None:
    native = ext(scene).get("native")
    held = [w for k, w in _MODERN_ONLY.items() if isinstance(native, dict) and native.get(k)]
    if held:
        ctx.note("splashpack.modern_dropped", f"version 1 has no {', '.join(held)}: what the "
                 "scene's modern file held of them is not written (--splash-version 21 keeps "
                 "them)")


def from_scene(scene: Scene, ctx: Context) -> SplashpackDocument:
    # G unless asked; a scene read from an H file goes back to H (its flags, scene Lua).
    layout = str(ctx.opt("layout") or ext(scene).get("layout") or "G").upper()
    if ctx.opt("layout") is None and layout not in ("G", "H"):
        layout = "G"
    if layout not in ("G", "H"):
        msg = "new files are written in layout G or H"
        raise LimitError(FMT, msg, field="layout", expected="G or H", actual=layout)
    lay = LAYOUTS[layout]
    tex = Textures(scene, ctx)
    objects, navs = _gather(scene, ctx, tex)
    _modern_only(scene, ctx)
    if not navs:
        navs = [_flat_quad(objects, ctx)]
    p_pos, p_rot, p_height, p_height_raw = _player(scene, navs, ctx)
    gte = choose_gte(scene, ctx, _extent(objects, navs, p_pos), RAW_MAX, FIT)
    fx = _Fixed(gte)
    merge_pages(tex.items, uv_boxes(p for o in objects for p in o.parts))
    atlases, textures = place(tex.items)
    _uv_note(objects, ctx)

    doc = SplashpackDocument(layout=layout, header=np.zeros(1, lay.header))
    doc.header["magic"], doc.header["version"] = MAGIC, VERSION
    doc.header["player_pos"] = fx.raw(p_pos)
    doc.header["player_rot"] = np.asarray(p_rot, dtype=np.int16)
    h_raw = p_height_raw if p_height_raw is not None else int(
        np.clip(np.rint((p_height or 0.0) / fx.s), 0, 0xFFFF))
    doc.header["player_height"] = min(max(h_raw, 0), 0xFFFF)
    lua, lua_index = scene_lua(scene, ctx)
    doc.lua = lua
    doc.lua_desc = np.zeros(len(lua), LUA_DESC)
    if layout == "H":
        doc.header["scene_lua"] = lua_index if -1 <= lua_index < len(lua) else -1

    doc.objects, doc.meshes = _object_records(objects, textures, atlases, fx, lay, len(lua),
                                              ctx)
    doc.navmeshes = [fx.raw(v[:, SWAP, :]).astype(np.int32) for v in navs]
    doc.nav_desc = np.zeros(len(navs), NAV_DESC)
    _vram_records(doc, atlases, textures)
    if fx.clamped:
        ctx.note("splashpack.clamped", f"{fx.clamped} coordinate(s) were outside +-4 GTE units "
                 f"at GTEScaling {gte:g} and were clamped")
    scene_gte = ext(scene).get("gte_scaling")
    if scene_gte != gte:
        ctx.note("splashpack.gte_scaling", f"written with GTEScaling {gte:g}", "info")
    return doc


def _object_records(objects: list[_Object], textures: list[Tex], atlases: list[Atlas],
                    fx: _Fixed, lay: Layout,
                    n_lua: int, ctx: Context
                    ) -> tuple[npt.NDArray[np.void], list[npt.NDArray[np.void]]]:
    """GameObject records and their triangle lists; objects over MAX_TRIS split in several."""
    recs: list[npt.NDArray[np.void]] = []
    owners: list[_Object] = []
    split = 0
    for o in objects:
        tris = _tri_records(o, o.parts, textures, atlases, fx)
        chunks = [tris[k:k + MAX_TRIS] for k in range(0, len(tris), MAX_TRIS)] or [tris]
        split += len(chunks) - 1
        recs += chunks
        owners += [o] * len(chunks)
    if split:
        ctx.note("splashpack.object_split", f"objects over {MAX_TRIS} triangles were split into "
                 f"{split} extra GameObject(s)")
    objs = np.zeros(len(recs), lay.go)
    for k, o in enumerate(owners):
        objs[k]["pos"] = fx.raw(o.position)
        objs[k]["rot"] = o.rotation
        lua_i = o.lua_index if -1 <= o.lua_index < n_lua else -1
        if lua_i != o.lua_index:
            ctx.note("splashpack.lua_index", f"{o.name!r}: Lua index {o.lua_index} does not "
                     "exist; none is attached")
        objs[k]["lua_index"] = lua_i
        if "flags" in (objs.dtype.names or ()):
            objs[k]["flags"] = o.flags & 0xFFFFFFFF
    return objs, recs


def _vram_records(doc: SplashpackDocument, atlases: list[Atlas], textures: list[Tex]) -> None:
    """Atlas descriptors and pixels, and one CLUT per distinct palette position."""
    doc.atlases = np.zeros(len(atlases), ATLAS_DESC)
    for k, (x, y, _) in enumerate(atlases):
        doc.atlases[k]["x"], doc.atlases[k]["y"] = x, y
    doc.atlas_pixels = atlas_pixels(atlases, textures)
    cluts: dict[tuple[int, int], npt.NDArray[np.uint16]] = {}
    for t in textures:
        if t.palette is not None:
            cluts.setdefault(t.clut, t.palette)
    doc.cluts = np.zeros(len(cluts), CLUT_DESC)
    for k, (x, y) in enumerate(cluts):
        doc.cluts[k]["clut_x"], doc.cluts[k]["clut_y"] = x // 16, y
    doc.clut_words = list(cluts.values())
