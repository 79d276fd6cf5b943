"""Render the docs' Blender pictures headless: install the extension, import, render.

Run with Blender's Python (PyPI ``bpy==5.0.1``)::

    .venv-blender/bin/python tools/blender_screenshots.py gamemesh.zip docs/img CORPUS

It installs the zip with Blender's own installer into a throwaway user folder, imports a Papa
unit and a SPLASHPACK scene from the corpus and gamemesh's sample as a PET file through
File > Import > gamemesh, and renders each with Workbench (textures on, no GPU needed) to
``blender_<name>.png``.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path

# Blender reads its user folder once, when bpy is imported: a fresh one keeps the user's
# installed extensions out of it and this install out of theirs.
os.environ["BLENDER_USER_RESOURCES"] = tempfile.mkdtemp(prefix="gamemesh-blender-")

import bpy  # type: ignore[import-not-found]
from mathutils import Vector  # type: ignore[import-not-found]

SIZE = (480, 320)


def frame_camera(elevation: float, azimuth: float) -> None:
    """An orthographic camera that fits every mesh, seen from ``azimuth`` degrees around Z."""
    scene = bpy.context.scene
    depsgraph = bpy.context.evaluated_depsgraph_get()
    points = []
    for obj in scene.objects:
        if obj.type == "MESH":
            ev = obj.evaluated_get(depsgraph)
            points += [ev.matrix_world @ Vector(c) for c in ev.bound_box]
    lo = Vector([min(p[i] for p in points) for i in range(3)])
    hi = Vector([max(p[i] for p in points) for i in range(3)])
    center, extent = (lo + hi) / 2, (hi - lo).length
    cam = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(cam)
    cam.data.type = "ORTHO"
    # The scale spans the picture's width, the height shows SIZE[1] / SIZE[0] of it; no view
    # of the box is larger than its diagonal, so this always fits.
    cam.data.ortho_scale = extent * SIZE[0] / SIZE[1]
    cam.data.clip_end = extent * 10
    el, az = math.radians(elevation), math.radians(azimuth)
    direction = Vector((math.sin(az) * math.cos(el), -math.cos(az) * math.cos(el), math.sin(el)))
    cam.location = center + direction * extent * 2
    cam.rotation_euler = (center - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam


def render(out: Path, elevation: float = 15, azimuth: float = 30) -> None:
    scene = bpy.context.scene
    frame_camera(elevation, azimuth)
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.display.shading.light = "STUDIO"
    scene.display.shading.color_type = "TEXTURE"
    scene.display.shading.show_cavity = True
    scene.render.resolution_x, scene.render.resolution_y = SIZE
    scene.render.film_transparent = False
    scene.world = scene.world or bpy.data.worlds.new("world")
    scene.render.image_settings.color_mode = "RGB"
    scene.render.image_settings.compression = 100
    scene.render.filepath = str(out)
    bpy.ops.render.render(write_still=True)
    # Small files for the repository: 128 colours are plenty for a flat-lit render.
    from PIL import Image  # the extension's Pillow wheel

    with Image.open(out) as im:
        small = im.convert("RGB").quantize(colors=128)
    small.save(out, optimize=True)
    print(f"GAMEMESH_SHOT {out}", flush=True)


def pose(action_name: str, frame: int) -> None:
    """Show ``action_name`` at ``frame`` on the imported armature."""
    action = bpy.data.actions[action_name]
    for obj in bpy.context.scene.objects:
        if obj.type == "ARMATURE" and obj.animation_data:
            obj.animation_data.action = action
            if hasattr(obj.animation_data, "action_slot") and action.slots:
                obj.animation_data.action_slot = action.slots[0]
    bpy.context.scene.frame_set(frame)


def reset() -> None:
    bpy.ops.wm.read_homefile(use_empty=True)


def main(zip_path: str, out_dir: str, corpus: str) -> None:
    out, corpus_dir = Path(out_dir), Path(corpus)
    reset()
    bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                             enable_on_install=True)
    bot = corpus_dir / "papa/official_2014/pa/units/land_bots/assault_bot/assault_bot.papa"
    bpy.ops.import_scene.gamemesh(filepath=str(bot), team_color="3A7BD5")  # an option at work
    pose("run", 6)
    render(out / "blender_papa.png")

    reset()
    splash = corpus_dir / "splashpack/v1-H_60byte-gameobject-16bpp__psxsplash-55c1d2c.bin"
    bpy.ops.import_scene.gamemesh(filepath=str(splash))
    render(out / "blender_splashpack.png", elevation=35, azimuth=20)

    reset()
    import gamemesh  # the extension's wheel, installed above
    from gamemesh.sample import sample_scene

    with tempfile.TemporaryDirectory() as tmp:
        pet = Path(tmp) / "sample.pet"  # the sample character, written by gamemesh's PET writer
        gamemesh.save(sample_scene(), pet)
        bpy.ops.import_scene.gamemesh(filepath=str(pet))
        pose("bend", 12)
        render(out / "blender_pet.png", elevation=10, azimuth=40)


if __name__ == "__main__":
    main(*sys.argv[1:4])
