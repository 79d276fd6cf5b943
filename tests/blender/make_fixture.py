"""Build a rigged, animated, textured model in Blender and export it as glTF.

Run with Blender's Python (PyPI ``bpy``): ``python tests/blender/make_fixture.py OUT.glb``.
The committed ``tests/fixtures/gltf/blender_rig.glb`` was made this way (bpy 5.0.1); gamemesh
must load what a real DCC exports (tests/test_blender.py).
"""

from __future__ import annotations

import sys

import bpy  # type: ignore[import-not-found]


def main(out: str) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    # A subdivided cylinder, 2 units tall, skinned to two bones.
    bpy.ops.mesh.primitive_cylinder_add(vertices=8, radius=0.3, depth=2.0, location=(0, 0, 1))
    body = bpy.context.active_object
    body.name = "Body"
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.subdivide(number_cuts=3)
    bpy.ops.mesh.uv_texture_add()
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.ops.object.shade_smooth()

    img = bpy.data.images.new("stripes", width=8, height=8, alpha=True)
    img.pixels = [c for i in range(64) for c in ((1, 0.5, 0, 1) if (i // 8) % 2 else
                                                 (0, 0.3, 1, 1))]
    img.file_format = "PNG"
    mat = bpy.data.materials.new("Stripes")
    mat.use_nodes = True
    tex = mat.node_tree.nodes.new("ShaderNodeTexImage")
    tex.image = img
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    mat.node_tree.links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    body.data.materials.append(mat)

    bpy.ops.object.armature_add(location=(0, 0, 0))
    rig = bpy.context.active_object
    rig.name = "Rig"
    bpy.ops.object.mode_set(mode="EDIT")
    lower = rig.data.edit_bones[0]
    lower.name = "Lower"
    lower.head, lower.tail = (0, 0, 0), (0, 0, 1)
    upper = rig.data.edit_bones.new("Upper")
    upper.head, upper.tail = (0, 0, 1), (0, 0, 2)
    upper.parent = lower
    bpy.ops.object.mode_set(mode="OBJECT")

    body.select_set(True)
    rig.select_set(True)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.parent_set(type="ARMATURE_AUTO")

    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 24
    bpy.ops.object.mode_set(mode="POSE")
    pb = rig.pose.bones["Upper"]
    pb.rotation_mode = "XYZ"
    for frame, angle in ((1, 0.0), (12, 0.8), (24, 0.0)):
        pb.rotation_euler = (angle, 0, 0)
        pb.keyframe_insert("rotation_euler", frame=frame)
    bpy.ops.object.mode_set(mode="OBJECT")
    rig.animation_data.action.name = "Bend"

    bpy.ops.export_scene.gltf(filepath=out, export_format="GLB", export_animations=True,
                              export_skins=True, export_image_format="AUTO")


if __name__ == "__main__":
    main(sys.argv[1])
