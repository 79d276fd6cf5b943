"""Build the small models of the Blender matrix (tests/test_blender_matrix.py) in real Blender
and export each with Blender's own glTF exporter, as modders make them.

Run once with Blender's Python (PyPI ``bpy``): ``python tests/blender/make_matrix.py OUT_DIR``.
The committed ``tests/fixtures/gltf/matrix_*.glb`` were made this way (bpy 5.0.1):

* ``matrix_colors.glb``: a textured cube with two colour layers (an all-white one first, then
  the user's), exported as COLOR_0 and COLOR_1.
* ``matrix_rig.glb``: a 3-bone rig skinning a column, two actions ("Bend", "Twist").
* ``matrix_rigid.glb``: two parented objects with object (not bone) animation.
* ``matrix_scale_keys.glb``: a rig whose action keys scale at 1 (Blender writes every bone's
  translation, rotation and scale, so the scale keys hold the rest value).
"""

from __future__ import annotations

import sys
from pathlib import Path

import bpy  # type: ignore[import-not-found]


def _fresh() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)


def _export(out: Path, **extra: object) -> None:
    bpy.ops.export_scene.gltf(filepath=str(out), export_format="GLB", export_animations=True,
                              export_skins=True, export_image_format="AUTO", **extra)


def _textured(obj: object) -> None:
    img = bpy.data.images.new("checks", width=8, height=8, alpha=True)
    img.pixels = [c for i in range(64) for c in ((0.9, 0.6, 0.1, 1) if (i + i // 8) % 2 else
                                                 (0.1, 0.3, 0.9, 1))]
    mat = bpy.data.materials.new("Checks")
    mat.use_nodes = True
    tex = mat.node_tree.nodes.new("ShaderNodeTexImage")
    tex.image = img
    mat.node_tree.links.new(tex.outputs["Color"],
                            mat.node_tree.nodes["Principled BSDF"].inputs["Base Color"])
    obj.data.materials.append(mat)  # type: ignore[attr-defined]


def colors(out: Path) -> None:
    _fresh()
    bpy.ops.mesh.primitive_cube_add(size=1.0)
    cube = bpy.context.active_object
    cube.name = "Painted"
    _textured(cube)
    mesh = cube.data
    white = mesh.color_attributes.new("White", "BYTE_COLOR", "CORNER")
    paint = mesh.color_attributes.new("Paint", "BYTE_COLOR", "CORNER")
    for k in range(len(white.data)):
        white.data[k].color = (1.0, 1.0, 1.0, 1.0)
        paint.data[k].color = ((k % 4) / 3, (k % 3) / 2, 0.25, 1.0)
    mesh.color_attributes.active_color = paint
    _export(out, export_vertex_color="ACTIVE", export_all_vertex_colors=True)


def _rig(bones: int) -> object:
    bpy.ops.mesh.primitive_cylinder_add(vertices=8, radius=0.25, depth=3.0, location=(0, 0, 1.5))
    body = bpy.context.active_object
    body.name = "Column"
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.subdivide(number_cuts=5)
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.armature_add(location=(0, 0, 0))
    rig = bpy.context.active_object
    rig.name = "Rig"
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    for b in range(bones):
        eb = rig.data.edit_bones[0] if b == 0 else rig.data.edit_bones.new(f"Bone{b}")
        eb.name = f"Bone{b}"
        eb.head, eb.tail = (0, 0, b), (0, 0, b + 1)
        eb.parent = parent
        parent = eb
    bpy.ops.object.mode_set(mode="OBJECT")
    body.select_set(True)
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")
    return rig


def _action(rig: object, name: str, axis: int, scale: bool = False) -> None:
    rig.animation_data_create()  # type: ignore[attr-defined]
    rig.animation_data.action = None  # type: ignore[attr-defined]
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="POSE")
    for pb in rig.pose.bones:  # type: ignore[attr-defined]
        pb.rotation_mode = "XYZ"
        for frame, angle in ((1, 0.0), (12, 0.6), (24, 0.0)):
            e = [0.0, 0.0, 0.0]
            e[axis] = angle
            pb.rotation_euler = e
            pb.keyframe_insert("rotation_euler", frame=frame)
            if scale:
                pb.scale = (1.0, 1.0, 1.0)
                pb.keyframe_insert("scale", frame=frame)
    bpy.ops.object.mode_set(mode="OBJECT")
    action = rig.animation_data.action  # type: ignore[attr-defined]
    action.name = name
    action.use_fake_user = True
    track = rig.animation_data.nla_tracks.new()  # type: ignore[attr-defined]
    track.name = name
    track.strips.new(name, 1, action)
    rig.animation_data.action = None  # type: ignore[attr-defined]


def rig(out: Path) -> None:
    _fresh()
    r = _rig(3)
    _action(r, "Bend", 0)
    _action(r, "Twist", 1)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 24
    _export(out, export_animation_mode="NLA_TRACKS")


def scale_keys(out: Path) -> None:
    _fresh()
    r = _rig(2)
    _action(r, "Idle", 0, scale=True)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 24
    _export(out, export_animation_mode="NLA_TRACKS")


def rigid(out: Path) -> None:
    _fresh()
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0, 0, 0))
    base = bpy.context.active_object
    base.name = "Base"
    _textured(base)
    bpy.ops.mesh.primitive_cube_add(size=0.5, location=(0, 0, 1.5))
    arm = bpy.context.active_object
    arm.name = "Arm"
    arm.parent = base
    for frame, z, turn in ((1, 0.0, 0.0), (12, 1.0, 1.2), (24, 0.0, 0.0)):
        base.location = (0, 0, z)
        base.keyframe_insert("location", frame=frame)
        arm.rotation_euler = (0, 0, turn)
        arm.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 24
    _export(out)


def main(folder: str) -> None:
    out = Path(folder)
    colors(out / "matrix_colors.glb")
    rig(out / "matrix_rig.glb")
    rigid(out / "matrix_rigid.glb")
    scale_keys(out / "matrix_scale_keys.glb")


if __name__ == "__main__":
    main(sys.argv[1])
