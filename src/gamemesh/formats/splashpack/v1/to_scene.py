"""SplashpackDocument -> Scene (glTF conventions). The reverse is ``from_scene``.

Axes (spec §b.9): the file is Unity's left-handed frame with Y negated. glTF = s * (-X, -Y, Z)
with s = GTEScaling / 4096; C = diag(-1, -1, 1) is a proper rotation, so the rotation matrices
become C R C and, since the exporter's winding is opposite to its normals in PSX space, v1 and v2
swap to give counter-clockwise front faces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ....errors import add_new_notes
from ....registry import Context
from ....scene import Material, Mesh, Node, Primitive, Scene
from ..common import bright_note, keep_bright, lua_extras, lua_files, material_keys, primitive
from ..conventions import AXES, DEFAULT_GTE, SWAP, Quat, object_rotations
from ..vram import PageMaterials
from .document import SplashpackDocument
from .layout import TRI

FMT = "splashpack"

__all__ = ["to_scene", "tris52"]


def tris52(doc: SplashpackDocument, i: int) -> npt.NDArray[np.void]:
    """Object i's triangles as 52-byte records; layout B's tpage and CLUT come from the object."""
    tris = doc.meshes[i]
    if tris.dtype == TRI:
        return tris
    out = np.zeros(len(tris), TRI)
    for name in ("v", "normal", "uv", "uv_pad", "color"):
        out[name] = tris[name]
    obj = doc.objects[i]
    out["tpage"], out["clut_x"], out["clut_y"] = obj["tpage"], obj["clut_x"], obj["clut_y"]
    return out


def _object_node(doc: SplashpackDocument, i: int, s: float, tex: PageMaterials, scene: Scene,
                 ctx: Context, rotation: tuple[Quat, float]) -> int:
    """Adds object ``i``'s node; returns how many corner colours were clamped to 1.0."""
    obj = doc.objects[i]
    tris = tris52(doc, i)
    rot, err = rotation
    if err > 0.01:
        ctx.note("splashpack.rotation_not_orthonormal",
                 f"object {i}: the stored matrix is {err:.3f} off a rotation; its nearest "
                 "rotation is used", "warning")
    pos = obj["pos"].astype(np.float64) * AXES * s
    extras: dict[str, Any] = {"object": i, "rotation_raw": [int(x) for x in obj["rot"]],
                              "position_raw": [int(x) for x in obj["pos"]]}
    names = obj.dtype.names or ()
    for field in ("lua_index", "flags"):
        if field in names:
            extras[field] = int(obj[field])
    if not doc.spec_layout.has_lua and "lua_index" in extras:
        # Before layout G this field was "reserved"; keep it, but it names no Lua file.
        extras["reserved"] = extras.pop("lua_index")
    node = Node(name=f"object_{i}", translation=(float(pos[0]), float(pos[1]), float(pos[2])),
                rotation=rot, extras={FMT: extras})
    bright = 0
    if len(tris):
        mesh = Mesh(name=f"object_{i}")
        keys, inverse = material_keys(tris)
        for k, t in enumerate(keys):
            sel = tris if inverse is None else tris[inverse == k]
            prim, colors = primitive(sel, s)
            prim.material = tex.material(t, sel["uv"])
            mesh.primitives.append(prim)
            bright += keep_bright(mesh, k, colors)
        node.mesh = scene.add_mesh(mesh)
    scene.add_node(node)
    return bright


def _navmesh_nodes(doc: SplashpackDocument, s: float, scene: Scene) -> None:
    if not doc.navmeshes:
        return
    mat = scene.add_material(Material(name="navmesh", base_color_factor=(0.2, 0.8, 0.3, 1.0),
                                      unlit=True, double_sided=True,
                                      extras={FMT: {"navmesh": True}}))
    for k, tris in enumerate(doc.navmeshes):
        v = np.asarray(tris)[:, SWAP, :].astype(np.float64) * AXES * s
        mesh = Mesh(name=f"navmesh_{k}", primitives=[
            Primitive(positions=v.reshape(-1, 3).astype(np.float32), material=mat)]
            if len(v) else [])
        node = Node(name=f"navmesh_{k}", extras={FMT: {"navmesh": k}})
        if len(v):
            node.mesh = scene.add_mesh(mesh)
        scene.add_node(node)


def _player_node(doc: SplashpackDocument, s: float, scene: Scene) -> None:
    if not doc.spec_layout.has_player:
        return
    pos = np.asarray(doc.hfield("player_pos"), dtype=np.float64) * AXES * s
    height = int(doc.hfield("player_height"))
    info = {"player": True, "position_raw": [int(x) for x in doc.hfield("player_pos")],
            "rotation_raw": [int(x) for x in doc.hfield("player_rot")],
            "height_raw": height, "height": height * s}
    scene.add_node(Node(name="player_start",
                        translation=(float(pos[0]), float(pos[1]), float(pos[2])),
                        extras={FMT: info}))


def _extract(doc: SplashpackDocument, ctx: Context) -> None:
    folder = ctx.opt("extract")
    if not folder or not doc.lua:
        return
    ctx.extracted.append((Path(folder), lua_files(doc.lua)))
    ctx.note("splashpack.lua_extracted", f"{len(doc.lua)} Lua file(s) written to {folder}",
             "info")


def to_scene(doc: SplashpackDocument, ctx: Context) -> Scene:
    gte = float(ctx.opt("gte_scaling", DEFAULT_GTE))
    if not np.isfinite(gte) or gte <= 0:
        gte = DEFAULT_GTE
    s = gte / 4096.0
    scene = Scene(name=f"splashpack_v1_{doc.layout}")
    tex = PageMaterials(doc, scene)
    n = len(doc.meshes)
    rots, errs = object_rotations(doc.objects["rot"][:n]) if n else ([], [])
    bright = [(f"object_{i}", _object_node(doc, i, s, tex, scene, ctx, (rots[i], errs[i])))
              for i in range(n)]
    _navmesh_nodes(doc, s, scene)
    _player_node(doc, s, scene)
    info: dict[str, Any] = {"layout": doc.layout, "version": doc.version, "gte_scaling": gte,
                            "color_scale": 128, "lua": lua_extras(doc.lua)}
    if doc.layout == "H":
        info["scene_lua_index"] = int(doc.hfield("scene_lua"))
    scene.extras.update({"format": FMT, "version": doc.version, "variant": f"v1-{doc.layout}",
                         FMT: info})
    ctx.note("splashpack.gte_scaling", f"GTEScaling is not stored in the file; {gte:g} assumed "
             "(raw / 4096 x GTEScaling = units)", "info")
    bright_note(ctx, bright)
    if doc.meshes and any(len(m) for m in doc.meshes):
        ctx.note("splashpack.normals", "the file stores one normal per triangle (v0's); it is "
                 "used for all three corners", "info")
    _extract(doc, ctx)
    add_new_notes(scene.notes, ctx.notes)
    return scene
