"""Import glTF files into Blender and print what it made, one JSON line per file.

Run with Blender's Python (PyPI ``bpy``): ``python tests/blender/import_check.py A.glb ...``.
Lines start with ``GAMEMESH_RESULT `` because Blender logs to stdout too.
"""

from __future__ import annotations

import json
import sys

import bpy  # type: ignore[import-not-found]


def check(path: str) -> dict[str, object]:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    result: dict[str, object] = {"path": path}
    try:
        bpy.ops.import_scene.gltf(filepath=path, disable_bone_shape=True)
    except Exception as e:  # Blender raises RuntimeError with its report text
        result["error"] = str(e)
        return result
    meshes = [o for o in bpy.data.objects if o.type == "MESH"]
    arms = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    result.update({
        "meshes": len(meshes),
        "vertices": sum(len(o.data.vertices) for o in meshes),
        "polygons": sum(len(o.data.polygons) for o in meshes),
        "vertex_groups": sum(len(o.vertex_groups) for o in meshes),
        "bones": sum(len(a.data.bones) for a in arms),
        "actions": sorted(a.name for a in bpy.data.actions),
        "images": len([i for i in bpy.data.images if i.size[0] > 0]),
        "materials": len(bpy.data.materials),
    })
    return result


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print("GAMEMESH_RESULT " + json.dumps(check(p)), flush=True)
