"""Install the gamemesh extension zip with Blender's own installer, then run import/export steps.

Run with Blender's Python (PyPI ``bpy``), a fresh ``BLENDER_USER_RESOURCES`` and no
``PYTHONPATH`` (gamemesh must come from the zip's wheel)::

    python tests/blender/extension_check.py EXT.zip STEPS.json

STEPS.json is a list of ``{"do": "import" | "export" | "reset", "path": ..., "format": ...,
"options": {...}}``; an import may name ``files`` in ``path``'s folder (several at once) and
ask ``onto`` the scene's armature; ``rename_bone`` renames one, ``pose`` gives the bones' world
matrices at a frame of a clip, ``defaults`` the export dialog's starting values. Each step
prints one line ``GAMEMESH_RESULT {json}`` (Blender logs to stdout too): what the scene holds
after an import, or the error text when the operator failed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import bpy  # type: ignore[import-not-found]


def emit(result: dict[str, Any]) -> None:
    print("GAMEMESH_RESULT " + json.dumps(result, default=str), flush=True)


def install(zip_path: str) -> dict[str, Any]:
    bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                             enable_on_install=True)
    import PIL

    import gamemesh  # the wheel Blender installed, not the checkout

    rna = bpy.ops.import_scene.gamemesh.get_rna_type().properties
    erna = bpy.ops.export_scene.gamemesh.get_rna_type().properties
    return {"gamemesh_file": gamemesh.__file__, "pillow": PIL.__version__, "ui": draw_ui(),
            "import_props": list(rna.keys()), "export_props": list(erna.keys()),
            "subtypes": {k: rna[k].subtype for k in ("texture_dir", "anim", "team_primary")}
            | {"diffuse": erna["diffuse"].subtype},
            "labels": {"gte_scaling": rna["gte_scaling"].name, "ptx_bpp": erna["ptx_bpp"].name,
                       "team_preset": rna["team_preset"].name},
            "menus": [m for m in ("TOPBAR_MT_file_import_gamemesh",
                                  "TOPBAR_MT_file_export_gamemesh") if hasattr(bpy.types, m)]}


class FakeLayout:
    """Stands in for a UI layout (background Blender draws no dialogs): records what the
    operators' and menus' ``draw`` put in it, checking each property exists."""

    def __init__(self, log: list[Any], rna: Any = None) -> None:
        self.log, self.rna = log, rna
        self.use_property_split = self.use_property_decorate = False

    def prop(self, data: Any, name: str, **kw: Any) -> None:
        assert name in self.rna.properties, name
        self.log.append(name)

    def label(self, text: str) -> None:
        self.log.append(["label", text])

    def panel(self, idname: str, default_closed: bool = False) -> tuple[Any, Any]:
        self.log.append(["panel", idname, default_closed])
        body = None if default_closed else FakeLayout(self.log, self.rna)
        return FakeLayout(self.log, self.rna), body

    def operator(self, idname: str, text: str = "") -> Any:
        entry: dict[str, Any] = {"op": idname, "text": text}
        self.log.append(entry)

        class Props:
            def __setattr__(self, key: str, value: Any) -> None:
                entry[key] = value

        return Props()


# What each dialog is drawn for: (name, direction, file name, format, team preset).
DIALOGS = (("import", "import", "unit.papa", "AUTO", "NONE"),
           ("import_custom_team", "import", "unit.papa", "AUTO", "CUSTOM"),
           ("import_unknown", "import", "", "AUTO", "NONE"),
           ("import_pet", "import", "x.bpet", "AUTO", "NONE"),
           ("export", "export", "level.bin", "AUTO", "NONE"),
           ("export_papa", "export", "unit.papa", "AUTO", "NONE"),
           ("export_pet", "export", "x", "PET", "NONE"))


def draw_ui() -> dict[str, Any]:
    """What the import and export dialogs' side panels and the two menus show."""
    from types import SimpleNamespace

    out: dict[str, Any] = {}
    for name, kind, path, fmt, team in DIALOGS:
        op = getattr(bpy.types, f"{kind.upper()}_SCENE_OT_gamemesh")
        rna = getattr(bpy.ops, f"{kind}_scene").gamemesh.get_rna_type()
        log: list[Any] = []
        fake = SimpleNamespace(layout=FakeLayout(log, rna), format=fmt, filepath=path,
                               team_preset=team)
        op.draw(fake, bpy.context)
        out[name] = log
    for kind in ("import", "export"):
        menu_log: list[Any] = []
        getattr(bpy.types, f"TOPBAR_MT_file_{kind}_gamemesh").draw(
            SimpleNamespace(layout=FakeLayout(menu_log)), bpy.context)
        out[f"{kind}_menu"] = menu_log
    return out


def scene_state() -> dict[str, Any]:
    objs = list(bpy.context.scene.objects)
    meshes = [o for o in objs if o.type == "MESH"]
    arms = [o for o in objs if o.type == "ARMATURE"]
    roots = [o for o in objs if o.parent is None and "gamemesh" in o]
    corners = [v for o in meshes for v in (o.matrix_world @ c.co for c in o.data.vertices)]
    top = max((v.z for v in corners), default=0.0)  # Blender is Z-up
    return {
        "meshes": len(meshes),
        "polygons": sum(len(o.data.polygons) for o in meshes),
        "shape_keys": sum(len(o.data.shape_keys.key_blocks) - 1 for o in meshes
                          if o.data.shape_keys),
        "bones": sum(len(a.data.bones) for a in arms),
        "actions": sorted(a.name for a in bpy.data.actions),
        "action_frames": {a.name: round(a.frame_range[1] - a.frame_range[0]) + 1
                          for a in bpy.data.actions},
        "fps": bpy.context.scene.render.fps / bpy.context.scene.render.fps_base,
        "images": sorted(i.name for i in bpy.data.images if i.size[0] > 0),
        "packed": all(i.packed_file is not None for i in bpy.data.images if i.size[0] > 0),
        "materials": len(bpy.data.materials),
        "root_props": [o["gamemesh"].to_dict() for o in roots],
        "top": top,
    }


def armature() -> Any:
    return next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")


def pose(action: str, frame: int) -> dict[str, list[float]]:
    """Every bone's world matrix at ``frame`` of ``action`` (on the scene's armature)."""
    from gamemesh.blender.operators import assign_action

    arm = armature()
    assign_action(arm, bpy.data.actions[action])
    bpy.context.scene.frame_set(frame)
    return {b.name.lower(): [round(x, 5) for row in arm.matrix_world @ b.matrix for x in row]
            for b in arm.pose.bones}


def helpers() -> dict[str, Any]:
    layers = bpy.context.view_layer.layer_collection.children
    return {c.name: {"objects": sorted(o.name for o in c.objects),
                     "hidden": bool(layers[c.name].hide_viewport)}
            for c in bpy.data.collections}


def reset() -> dict[str, Any]:
    for coll in (bpy.data.objects, bpy.data.meshes, bpy.data.armatures, bpy.data.actions,
                 bpy.data.materials, bpy.data.images, bpy.data.collections):
        for item in list(coll):
            coll.remove(item)
    return {"do": "reset"}


def step(s: dict[str, Any]) -> dict[str, Any]:
    if s["do"] == "reset":
        return reset()
    if s["do"] == "rename_bone":
        armature().data.bones[s["bone"]].name = s["to"]
        return {"do": "rename_bone"}
    if s["do"] == "pose":
        return {"do": "pose", "pose": pose(s["action"], s["frame"])}
    if s["do"] == "defaults":
        from gamemesh.blender.operators import dialog_defaults

        bpy.context.view_layer.objects.active = None
        return {"do": "defaults", "defaults": dialog_defaults(bpy.context)}
    op = bpy.ops.import_scene.gamemesh if s["do"] == "import" else bpy.ops.export_scene.gamemesh
    result: dict[str, Any] = {"do": s["do"], "path": s["path"]}
    args = {"filepath": s["path"], "format": s.get("format", "AUTO"), **s.get("options", {})}
    if "files" in s:
        args.update(directory=s["path"], files=[{"name": n} for n in s["files"]])
    if s.get("onto"):
        bpy.context.view_layer.objects.active = armature()
        args["onto_armature"] = True
    try:
        result["status"] = sorted(op(**args))
    except RuntimeError as e:  # an operator that reported an error and was cancelled
        result["error"] = str(e)
    if s["do"] == "import":
        result.update(scene_state(), helpers=helpers())
    return result


if __name__ == "__main__":
    bpy.ops.wm.read_homefile(use_empty=True)
    emit({"do": "install", **install(sys.argv[1])})
    with open(sys.argv[2], encoding="utf-8") as f:
        steps = json.load(f)
    for s in steps:
        emit(step(s))
