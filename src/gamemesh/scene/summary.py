"""A plain-data summary of a scene: what ``gamemesh info`` prints and what tests compare."""

from __future__ import annotations

from typing import Any

import numpy as np

from .model import Scene


def summarize(scene: Scene) -> dict[str, Any]:
    from .math import column_bounds, transform_points, world_matrices

    worlds = world_matrices(scene)
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for i, node in enumerate(scene.nodes):
        if node.mesh is None or not 0 <= node.mesh < len(scene.meshes):
            continue
        for prim in scene.meshes[node.mesh].primitives:
            if len(prim.positions):
                # Skinned meshes are placed by their joints; the bind pose is the mesh's own space.
                m = np.eye(4) if node.skin is not None else worlds[i]
                plo, phi = column_bounds(transform_points(m, prim.positions))
                lo = np.minimum(lo, plo)
                hi = np.maximum(hi, phi)
    prims = [p for m in scene.meshes for p in m.primitives]
    bounds = None if not np.all(np.isfinite(lo)) else {
        "min": [round(float(x), 6) for x in lo], "max": [round(float(x), 6) for x in hi]}
    return {
        "nodes": len(scene.nodes),
        "meshes": len(scene.meshes),
        "primitives": len(prims),
        # Primitives sharing one vertex array (groups of one Papa vertex buffer, glTF
        # primitives sharing accessors) count its vertices once.
        "vertices": sum({id(p.positions): p.vertex_count for p in prims}.values()),
        "triangles": sum(p.triangle_count for p in prims),
        "materials": len(scene.materials),
        "textures": len(scene.images),
        "textures_missing": sum(1 for im in scene.images if im.pixels is None and im.data is None),
        "skins": len(scene.skins),
        "bones": len({j for s in scene.skins for j in s.joints}),
        "morph_targets": sum(max((len(p.targets) for p in m.primitives), default=0)
                             for m in scene.meshes),
        "animations": [
            {"name": a.name, "channels": len(a.channels), "keys": a.key_count,
             "duration": round(a.duration, 6)}
            for a in scene.animations
        ],
        "bounds": bounds,
    }
