"""The Blender side: File > Import / Export > gamemesh operators, menus and their dialogs.

Imported only by :func:`gamemesh.blender.register`, inside Blender. Import goes through
gamemesh's GLB into Blender's own glTF importer and export through Blender's glTF exporter into
gamemesh's writers, so armatures, actions, shape keys and materials are Blender's own work.
Every failure a user can cause ends as one line in the report area, never a traceback.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import bpy
from bpy.props import (
    BoolProperty,
    CollectionProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    StringProperty,
)
from bpy_extras.io_utils import ImportHelper

from ..errors import FormatError, Note
from ..registry import FormatSpec
from .bridge import (
    GlbImage,
    Imported,
    blender_rate,
    collapse_notes,
    export_defaults,
    export_glb,
    glb_images,
    id_property,
    import_glb,
    retarget_glb,
)
from .options import (
    TEAM_PRESETS,
    Direction,
    PropSpec,
    exportable,
    importable,
    prop_specs,
    spec_for_path,
    team_colors,
)

__all__ = ["assign_action", "dialog_defaults", "register", "unregister"]

# What a user's mistake or a bad file raises on the way (FormatError is a ValueError).
_USER_ERRORS = (ValueError, OSError, RuntimeError)


def _glob(specs: Iterable[FormatSpec]) -> str:
    return ";".join(f"*{e}" for s in specs for e in s.extensions)


def _format_items(specs: list[FormatSpec], auto: str) -> list[tuple[str, str, str]]:
    return [("AUTO", "Automatic", auto),
            *((s.name.upper(), s.title, f"{s.title} ({' '.join(s.extensions)})") for s in specs)]


def _bpy_prop(p: PropSpec) -> Any:
    common = {"name": p.label, "description": p.description}
    if p.kind == "bool":
        return BoolProperty(default=p.default, **common)
    if p.kind == "enum":
        return EnumProperty(items=p.items, default=p.default, **common)
    if p.kind == "int":
        return IntProperty(default=p.default, min=0, **common)
    if p.kind == "float":
        return FloatProperty(default=p.default, min=0.0, **common)
    return StringProperty(default=p.default, subtype=p.subtype, **common)


def _report_notes(op: Any, notes: list[Note]) -> None:
    for n, count in collapse_notes(notes):
        times = f" (x{count})" if count > 1 else ""
        op.report({"WARNING"} if n.level == "warning" else {"INFO"},
                  f"{n.code}: {n.message}{times}")


def _fail(op: Any, e: BaseException, name: str = "") -> set[str]:
    op.report({"ERROR"}, _one_line(e, name))
    return {"CANCELLED"}


def _one_line(e: BaseException, name: str = "") -> str:
    """One report line for a failure: the FormatError's file and text, or the last line of
    what Blender raised (its operators raise RuntimeError holding a whole traceback)."""
    where = getattr(e, "path", None)
    if isinstance(e, FormatError) and where:
        return f"{where}: {e}"
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = lines[-1] if lines else type(e).__name__
    return f"{name}: {text}" if name else text


def _draw_options(op: Any, layout: Any, specs: list[FormatSpec], current: str | None,
                  direction: Direction) -> None:
    """The options of the file's format that work in this direction, in one panel; when the
    format is not known yet, one collapsed panel per format."""
    props = {p.option.name: p for p in prop_specs(specs, direction)}
    shown = [s for s in specs if s.name == current] or specs
    for spec in shown:
        names = [o.name for o in spec.options if o.name in props]
        if not names:
            continue
        header, body = layout.panel(f"GAMEMESH_{spec.name}", default_closed=len(shown) > 1)
        header.label(text=f"{spec.title} options")
        if body is None:
            continue
        for name in names:
            if name == "team_color":
                _draw_team(op, body)
            else:
                body.prop(op, props[name].name)


def _draw_team(op: Any, layout: Any) -> None:
    layout.prop(op, "team_preset")
    if op.team_preset == "CUSTOM":
        layout.prop(op, "team_primary")
        layout.prop(op, "team_secondary")


def _current(op: Any, specs: list[FormatSpec]) -> str | None:
    if op.format != "AUTO":
        return str(op.format).lower()
    spec = spec_for_path(op.filepath, specs)
    return spec.name if spec else None


class IMPORT_SCENE_OT_gamemesh(bpy.types.Operator, ImportHelper):  # noqa: N801 (Blender's)
    """Import game models with gamemesh (Papa, PMF, SPLASHPACK, PBA/PTX, PET, ...)"""

    bl_idname = "import_scene.gamemesh"
    bl_label = "Import with gamemesh"
    bl_options = {"REGISTER", "UNDO", "PRESET"}
    # For type checkers only: _annotate() puts the Blender properties in their place.
    filepath: str
    directory: str
    files: Any
    format: str
    bone_heuristic: str
    onto_armature: bool
    team_preset: str
    team_primary: Any
    team_secondary: Any

    def draw(self, context: Any) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(self, "format")
        layout.prop(self, "bone_heuristic")
        layout.prop(self, "onto_armature")
        specs = importable()
        _draw_options(self, layout, specs, _current(self, specs), "import")

    def _paths(self) -> list[Path]:
        """Every file chosen in the browser (several with Shift/Ctrl), else ``filepath``."""
        names = [f.name for f in self.files if f.name] if self.files else []
        if names and self.directory:
            return [Path(self.directory) / n for n in names]
        return [Path(self.filepath)]

    def _values(self) -> tuple[dict[str, Any], str | None]:
        values = {p.name: getattr(self, p.name) for p in prop_specs(importable(), "import")
                  if p.name != "team_color"}
        team = team_colors(self.team_preset, self.team_primary, self.team_secondary)
        values["team_color"] = team[0] if team else ""
        return values, team[1] if team else None

    def execute(self, context: Any) -> set[str]:
        values, secondary = self._values()
        target = context.active_object
        if self.onto_armature and (target is None or target.type != "ARMATURE"):
            self.report({"ERROR"}, "Onto the selected armature: select an armature first")
            return {"CANCELLED"}
        done = 0
        for path in self._paths():
            try:
                if self.onto_armature:
                    imported = _import_onto(target, path, self.format.lower(), values,
                                            self.bone_heuristic)
                else:
                    imported = import_glb(path, self.format.lower(), values, secondary)
                    _into_blender(imported, self.bone_heuristic)
            except _USER_ERRORS as e:
                self.report({"ERROR"}, _one_line(e, path.name))
                continue
            done += 1
            _report_notes(self, imported.notes)
            s = imported.summary
            self.report({"INFO"}, f"gamemesh: {path.name} ({imported.format}): "
                        f"{s.get('meshes', 0)} meshes, {s.get('bones', 0)} bones, "
                        f"{len(s.get('animations', []))} animations")
        return {"FINISHED"} if done else {"CANCELLED"}


def _into_blender(imported: Imported, bone_heuristic: str) -> None:
    """Import the GLB and give its root objects the ``gamemesh`` properties."""
    objects = _import_into_blender(imported.glb, bone_heuristic,
                                   imported.properties.get("fps"))
    for obj in objects:
        if obj.parent is None or obj.parent not in objects:
            obj["gamemesh"] = imported.properties
    _hide_helpers(objects, Path(str(imported.properties["source_file"])).stem)


def _hide_helpers(objects: list[Any], stem: str) -> None:
    """A unit's navigation/build helper models (nodes gamemesh marks ``role: navmesh``) go
    into a collection of their own, hidden in the view layer: drawn over the unit they hide
    it, and they are still exported with it."""
    marked = [o for o in objects if o.get("role") == "navmesh"]
    helpers = [o for o in objects if o in marked or any(p in marked for p in _ancestors(o))]
    if not helpers:
        return
    coll = bpy.data.collections.new(f"{stem} helpers")
    bpy.context.scene.collection.children.link(coll)
    for obj in helpers:
        for old in list(obj.users_collection):
            old.objects.unlink(obj)
        coll.objects.link(obj)
    layer = bpy.context.view_layer.layer_collection.children.get(coll.name)
    if layer is not None:
        layer.hide_viewport = True


def _ancestors(obj: Any) -> list[Any]:
    out = []
    while obj.parent is not None:
        obj = obj.parent
        out.append(obj)
    return out


def _import_onto(target: Any, path: Path, chosen: str, values: dict[str, Any],
                 bone_heuristic: str) -> Imported:
    """The clips of ``path`` as actions of the ``target`` armature, tracks matched to its
    bones by name, loosely: Blender's glTF exporter writes the armature's rest pose, gamemesh
    moves it by the clips, and Blender's importer makes the actions on a copy of the rest
    pose, whose actions then go to the target and the copy away."""
    with tempfile.TemporaryDirectory(prefix="gamemesh-") as tmp:
        rig = Path(tmp) / "rig.glb"
        selected = list(bpy.context.selected_objects)
        for o in selected:
            o.select_set(False)
        target.select_set(True)
        try:
            bpy.ops.export_scene.gltf(filepath=str(rig), export_format="GLB",
                                      use_selection=True, export_animations=False,
                                      export_skins=True)
        finally:
            for o in selected:
                o.select_set(True)
        glb, imported, missed = retarget_glb(rig, path, chosen, values)
    before = set(bpy.data.actions)
    # The copy's bones are made as the target's were (the same Bone Dir), so its actions,
    # relative to each bone's rest, fit the target.
    objects = _import_into_blender(glb, bone_heuristic, imported.properties.get("fps"))
    actions = [a for a in bpy.data.actions if a not in before]
    for obj in objects:
        bpy.data.objects.remove(obj, do_unlink=True)
    for action in actions:
        action.use_fake_user = True  # every clip stays, one is assigned
    if actions:
        assign_action(target, actions[0])
    if missed:
        imported.notes.append(Note("gamemesh.tracks_unmatched", f"{len(missed)} animated bones "
                                   f"have no bone in {target.name!r}: {', '.join(missed[:8])}"))
    return imported


def _import_into_blender(glb: bytes, bone_heuristic: str, fps: float | None) -> list[Any]:
    """Blender's glTF importer needs a file: a temporary one, gone after the import (images
    are packed into the .blend, so nothing refers to it). The scene takes the clips' frame
    rate first: the importer puts keys on the scene's frames, and at 24 fps a 60 fps clip
    loses its last frame (and more) on the way back."""
    if fps is not None:
        _set_rate(bpy.context.scene, fps)
    before = set(bpy.data.objects)
    before_images, before_materials = set(bpy.data.images), set(bpy.data.materials)
    with tempfile.TemporaryDirectory(prefix="gamemesh-") as tmp:
        path = Path(tmp) / "import.glb"
        path.write_bytes(glb)
        bpy.ops.import_scene.gltf(filepath=str(path), import_pack_images=True,
                                  bone_heuristic=bone_heuristic, disable_bone_shape=True)
        taken = {im.name for im in bpy.data.images if im not in before_images}
        added = {}
        for image in glb_images(glb):
            if image.name not in taken:
                added[image.index] = _add_image(image, Path(tmp))
    _attach_images([m for m in bpy.data.materials if m not in before_materials], added)
    if fps is not None and bpy.data.actions:
        scene = bpy.context.scene
        scene.frame_end = max(scene.frame_end, *(round(a.frame_range[1])
                                                 for a in bpy.data.actions))
    return [o for o in bpy.data.objects if o not in before]


def _set_rate(scene: Any, fps: float) -> None:
    scene.render.fps, scene.render.fps_base = blender_rate(fps)


def _clip_rate(objects: Iterable[Any]) -> float | None:
    """The frame rate the clips of these objects were imported at (their root's
    ``gamemesh`` properties), the finest if several."""
    rates = [float(o["gamemesh"]["fps"]) for o in objects
             if "gamemesh" in o and "fps" in o["gamemesh"]]
    return max(rates) if rates else None


def _add_image(image: GlbImage, tmp: Path) -> Any:
    """A packed Blender image of a GLB image no material samples, its extras as properties."""
    path = tmp / f"image_{image.index}{image.suffix}"
    path.write_bytes(image.data)
    im = bpy.data.images.load(str(path))
    im.name = image.name
    im.pack()
    im.filepath = ""
    for key, value in id_property(image.extras).items():
        im[key] = value
    return im


def _attach_images(materials: list[Any], added: dict[int, Any]) -> None:
    """Materials name their extra maps by image index in extras (``mask_image``): give them an
    unconnected Image Texture node each, so the maps stay with the material for the user."""
    for mat in materials:
        if not mat.use_nodes:
            continue
        for key in list(mat.keys()):
            index = mat[key]
            if key.endswith("_image") and isinstance(index, int) and index in added:
                node = mat.node_tree.nodes.new("ShaderNodeTexImage")
                node.image = added[index]
                node.label = key.removesuffix("_image")


class EXPORT_SCENE_OT_gamemesh(bpy.types.Operator):  # noqa: N801 (Blender's naming)
    """Export the scene with gamemesh (Papa, PMF, SPLASHPACK, PBA/PTX, PET, ...)"""

    bl_idname = "export_scene.gamemesh"
    bl_label = "Export with gamemesh"
    bl_options = {"REGISTER", "PRESET"}
    filepath: str
    format: str
    use_selection: bool
    apply_modifiers: bool

    def _ext(self) -> str:
        specs = exportable()
        if self.format != "AUTO":
            return next(s.extensions[0] for s in specs if s.name == self.format.lower())
        return ""

    def invoke(self, context: Any, event: Any) -> set[str]:
        stem = self._take_defaults(context)
        if not self.filepath:
            stem = stem or (Path(bpy.data.filepath).stem if bpy.data.filepath else "untitled")
            self.filepath = stem + (self._ext() or ".papa")
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def _take_defaults(self, context: Any) -> str | None:
        defaults = dialog_defaults(context)
        props = self.bl_rna.properties
        for key, value in defaults.items():
            if key in props and key not in ("filepath", "stem"):
                try:
                    setattr(self, key, value)
                except (TypeError, ValueError):  # a value this Blender property refuses
                    continue
        stem = defaults.get("stem")
        return str(stem) if stem else None

    def check(self, context: Any) -> bool:
        """Keep the file name's extension that of the chosen format."""
        ext = self._ext()
        path = Path(self.filepath)
        if not ext or self.filepath.lower().endswith(ext):
            return False
        self.filepath = str(path.with_suffix(ext)) if path.suffix else self.filepath + ext
        return True

    def draw(self, context: Any) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(self, "format")
        layout.prop(self, "use_selection")
        layout.prop(self, "apply_modifiers")
        specs = exportable()
        _draw_options(self, layout, specs, _current(self, specs), "export")

    def execute(self, context: Any) -> set[str]:
        values = {p.name: getattr(self, p.name) for p in prop_specs(exportable(), "export")}
        scene = context.scene
        saved = (scene.render.fps, scene.render.fps_base)
        objects = context.selected_objects if self.use_selection else scene.objects
        fps = _clip_rate(objects)
        try:
            if fps is not None:  # Blender's exporter samples the clips at the scene's rate
                _set_rate(scene, fps)
            with tempfile.TemporaryDirectory(prefix="gamemesh-") as tmp:
                glb = Path(tmp) / "export.glb"
                bpy.ops.export_scene.gltf(
                    filepath=str(glb), export_format="GLB", export_extras=True,
                    use_selection=self.use_selection, export_apply=self.apply_modifiers,
                    export_animations=True, export_skins=True, export_morph=True)
                spec, notes, written = export_glb(glb, self.filepath, self.format.lower(),
                                                  values, _material_maps())
        except _USER_ERRORS as e:
            return _fail(self, e)
        finally:
            scene.render.fps, scene.render.fps_base = saved
        _report_notes(self, notes)
        _keep_choices(objects, spec.name, values)
        s = written.summary()
        self.report({"INFO"}, f"gamemesh: wrote {Path(self.filepath).name} ({spec.name}): "
                    f"{s['meshes']} meshes, {s['bones']} bones, "
                    f"{len(s['animations'])} animations")
        return {"FINISHED"}


def assign_action(obj: Any, action: Any) -> None:
    """Play ``action`` on ``obj``. Blender 4.4+ actions hold slots, one per animated object:
    the copy's slot becomes the target's (it names the same bones)."""
    if obj.animation_data is None:
        obj.animation_data_create()
    obj.animation_data.action = action
    slots = getattr(action, "slots", None)
    if slots and getattr(obj.animation_data, "action_slot", True) is None:
        obj.animation_data.action_slot = slots[0]


def dialog_defaults(context: Any) -> dict[str, Any]:
    """The export dialog's starting values: what the active object (or the scene's first
    imported object) came from, its format, version, layout and options (``gamemesh``
    properties; bridge.export_defaults)."""
    source = _gamemesh_root(context.active_object) or next(
        (o for o in context.scene.objects if "gamemesh" in o), None)
    return {} if source is None else export_defaults(_plain(source["gamemesh"]))


def _gamemesh_root(obj: Any) -> Any:
    while obj is not None and "gamemesh" not in obj:
        obj = obj.parent
    return obj


def _keep_choices(objects: Iterable[Any], fmt: str, values: dict[str, Any]) -> None:
    """The export's format and options on the exported roots' ``gamemesh`` properties, so
    the next export starts from them."""
    kept = {"format": fmt.upper(), **{k: v for k, v in values.items()
                                       if not isinstance(v, str) or v}}
    for obj in objects:
        if obj.parent is None:
            props = obj.get("gamemesh")
            if props is None:
                obj["gamemesh"] = {"export": kept}
            else:
                props["export"] = kept


def _material_maps() -> dict[str, dict[str, GlbImage]]:
    """The extra maps import attached (unconnected Image Texture nodes labelled as a
    ``<label>_image`` property of their material), by material name and role."""
    out: dict[str, dict[str, GlbImage]] = {}
    for mat in bpy.data.materials:
        if not mat.use_nodes or not mat.users:
            continue
        for node in mat.node_tree.nodes:
            if (node.type != "TEX_IMAGE" or node.image is None or not node.label
                    or f"{node.label}_image" not in mat
                    or any(o.is_linked for o in node.outputs)):
                continue
            image = _image_map(node.image)
            if image is not None:
                out.setdefault(mat.name, {})[node.label] = image
    return out


def _image_map(im: Any) -> GlbImage | None:
    if im.packed_file is not None:
        data = bytes(im.packed_file.data)
    elif im.filepath and Path(bpy.path.abspath(im.filepath)).is_file():
        data = Path(bpy.path.abspath(im.filepath)).read_bytes()
    else:
        return None
    extras = {k: _plain(im[k]) for k in im.keys()}  # noqa: SIM118 (ID properties)
    suffix = ".jpg" if data[:2] == b"\xff\xd8" else ".png"
    return GlbImage(-1, im.name, suffix, data, extras)


def _plain(value: Any) -> Any:
    """An ID property value as plain Python data."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value


def _annotate() -> None:
    """The operators' properties: fixed ones, then one per registry option (so a new format
    option appears in the dialogs with no change here)."""
    imp = IMPORT_SCENE_OT_gamemesh.__annotations__
    imp.clear()
    imp.update({
        "filter_glob": StringProperty(default=_glob(importable()), options={"HIDDEN"}),
        "files": CollectionProperty(type=bpy.types.OperatorFileListElement,
                                    options={"HIDDEN", "SKIP_SAVE"}),
        "directory": StringProperty(subtype="DIR_PATH", options={"HIDDEN", "SKIP_SAVE"}),
        "format": EnumProperty(name="Format", items=_format_items(
            importable(), "from the file's content, then its extension"), default="AUTO"),
        "bone_heuristic": EnumProperty(name="Bone Dir", items=(
            ("BLENDER", "Blender", "bone tips on their local +Y (best for export round trips)"),
            ("TEMPERANCE", "Temperance", "tip on the local axis closest to the child"),
            ("FORTUNE", "Fortune", "tip at the child's root")), default="BLENDER",
            description="how Blender's glTF importer places bone tails"),
        "onto_armature": BoolProperty(
            name="Onto the selected armature", default=False,
            description="import the files' animations as actions of the selected armature, "
            "bones matched by name, loosely (9 in 10 animated bones must match)"),
        **_team_props(),
        **{p.name: _bpy_prop(p) for p in prop_specs(importable(), "import")
           if p.name != "team_color"}})
    exp = EXPORT_SCENE_OT_gamemesh.__annotations__
    exp.clear()
    exp.update({
        "filepath": StringProperty(subtype="FILE_PATH", options={"SKIP_SAVE"}),
        "filter_glob": StringProperty(default=_glob(exportable()), options={"HIDDEN"}),
        "format": EnumProperty(name="Format", items=_format_items(
            exportable(), "from the file name's extension"), default="AUTO"),
        "use_selection": BoolProperty(name="Selected Only", default=False,
                                      description="export only the selected objects"),
        "apply_modifiers": BoolProperty(name="Apply Modifiers", default=False,
                                        description="export meshes with modifiers applied"),
        **{p.name: _bpy_prop(p) for p in prop_specs(exportable(), "export")}})


def _team_props() -> dict[str, Any]:
    """Team colour as PA shows it: a preset or two colour swatches (Papa units)."""
    mla = TEAM_PRESETS["MLA"]
    return {
        "team_preset": EnumProperty(name="Team colour", default="NONE", items=(
            ("NONE", "None", "the unit's own diffuse texture"),
            ("MLA", "MLA", "the MLA's blue and orange"),
            ("LEGION", "Legion", "the Legion's red and black"),
            ("CUSTOM", "Custom", "the two colours below")),
            description="tint the unit's diffuse texture by its team-colour mask (a preview: "
            "PA applies team colour in its shader)"),
        "team_primary": FloatVectorProperty(name="Primary", subtype="COLOR_GAMMA", size=3,
                                            min=0.0, max=1.0, default=mla[0],
                                            description="the mask's red channel"),
        "team_secondary": FloatVectorProperty(name="Secondary", subtype="COLOR_GAMMA", size=3,
                                              min=0.0, max=1.0, default=mla[1],
                                              description="the mask's green channel"),
    }


def _menu(kind: str, specs: Callable[[], list[FormatSpec]]) -> type:
    op_id = f"{kind}_scene.gamemesh"

    def draw(self: Any, context: Any) -> None:
        layout = self.layout
        layout.operator(op_id, text="Any gamemesh format").format = "AUTO"
        for spec in specs():
            op = layout.operator(op_id, text=f"{spec.title} ({' '.join(spec.extensions)})")
            op.format = spec.name.upper()
            op.filter_glob = _glob([spec])

    name = f"TOPBAR_MT_file_{kind}_gamemesh"
    return type(name, (bpy.types.Menu,), {"bl_idname": name, "bl_label": "gamemesh",
                                          "draw": draw})


_MENUS = [_menu("import", importable), _menu("export", exportable)]


def _menu_import(self: Any, context: Any) -> None:
    self.layout.menu(_MENUS[0].bl_idname)  # type: ignore[attr-defined]


def _menu_export(self: Any, context: Any) -> None:
    self.layout.menu(_MENUS[1].bl_idname)  # type: ignore[attr-defined]


_CLASSES = (IMPORT_SCENE_OT_gamemesh, EXPORT_SCENE_OT_gamemesh, *_MENUS)


def register() -> None:
    _annotate()
    for cls in _CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister() -> None:
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    for cls in reversed(_CLASSES):
        bpy.utils.unregister_class(cls)
