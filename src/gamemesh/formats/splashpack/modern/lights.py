"""Runtime point lights (v24 light table, spec-modern §4.4) and the GameObject flags that let
them light anything (§3.2: bit 16 dynamicLit, bit 17 dynamicLitSmooth).

The rules are splashedit-ng's (``core/splashpack.cpp`` @3da06d8, checked by its
``tests/lightcheck.py``):

- only point lights run on the console; a directional light is baked into vertex colours and a
  runtime directional light is refused. gamemesh bakes nothing, so a directional or spot light
  is left out with a warning naming it;
- the table holds 16 (``MAX_SCENE_LIGHTS``): the first 16 in scene order are kept and the rest
  named in a warning;
- a mesh is runtime-lit ("auto", the default) when a light reaches it: the light's range is
  above 0 and the nearest point of the object's world AABB to the light is closer than the
  range ("the same test the engine runs", ``lightReaches``). gamemesh runs it on the stored
  integers (the GameObject's AABB and the light's position and radius, all 20.12 GTE units
  with Y negated), which is what the runtime compares;
- skinned meshes are never runtime-lit (the engine does not light them);
- the bits are written only when the file has runtime lights.

A scene read from a file with runtime lights keeps each object's flags as read (that file's
author chose "off", "on" or "smooth"); "smooth" (0x30000) is kept, never invented.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from ....registry import Context
from ....scene import Scene
from ....scene.math import world_matrices
from ..conventions import DEFAULT_GTE
from ..vram import ext
from . import layout as ml
from .document import ModernDocument, PointLight

__all__ = ["DYNAMIC_LIT", "DYNAMIC_SMOOTH", "runtime_lights"]

DYNAMIC_LIT = 0x10000  # GameObject flag bit 16: lit by runtime point lights
DYNAMIC_SMOOTH = 0x20000  # bit 17: per vertex rather than per triangle (set with bit 16)

Namer = Callable[[str, Context, str], bytes]


def _records(doc: ModernDocument, scene: Scene, s: float, raw: Any, name: Namer,
             ctx: Context) -> None:
    worlds = world_matrices(scene)
    for i in scene.walk():
        node = scene.nodes[i]
        if node.light is None or not 0 <= node.light < len(scene.lights):
            continue
        lt = scene.lights[node.light]
        label = lt.name or node.name or f"light_{i}"
        if lt.type != "point":
            ctx.note("splashpack.light_not_runtime", f"light {label!r}: {lt.type} lights do "
                     "not run on the console (only point lights do; SplashEdit bakes the "
                     "others into vertex colours, which gamemesh does not): not written")
            continue
        rec = np.zeros(1, ml.LIGHT)
        rec["pos"] = raw(worlds[i][:3, 3], 0x7FFFFFFF)
        gte = s * 4096.0
        rng = lt.range if lt.range is not None else 10.0 * gte / DEFAULT_GTE
        rec["radius"] = int(np.clip(np.rint(rng / s), 0, 0x7FFFFFFF))
        rec["intensity"] = int(np.clip(np.rint(lt.intensity * 4096), 0, 0xFFFF))
        rec["rgb"] = np.clip(np.rint(np.asarray(lt.color) * 255), 0, 255)
        rec["flags"] = int(ext(lt).get("flags", 1)) & 0xFF
        doc.lights.append(PointLight(rec, name(label, ctx, "light name")))


def _reached(aabb: npt.NDArray[np.int32], lights: list[PointLight]) -> bool:
    lo = aabb[:3].astype(np.float64)
    hi = aabb[3:].astype(np.float64)
    for lt in lights:
        r = float(lt.record["radius"][0])
        if r <= 0:
            continue
        p = lt.record["pos"][0].astype(np.float64)
        d = np.clip(p, lo, hi) - p
        if float(d @ d) < r * r:
            return True
    return False


def runtime_lights(doc: ModernDocument, scene: Scene, kept_flags: list[bool], s: float,
                   raw: Any, name: Namer, ctx: Context) -> None:
    """Write the light table and set the runtime-lit flag on the objects a light reaches.
    ``kept_flags[k]``: object k's flags came from the file the scene was read from."""
    _records(doc, scene, s, raw, name, ctx)
    if len(doc.lights) > ml.MAX_TABLE:
        left = [lt.name.decode("utf-8", "replace") for lt in doc.lights[ml.MAX_TABLE:]]
        ctx.note("splashpack.lights_cut", f"the scene has {len(doc.lights)} runtime point "
                 f"lights and the runtime holds {ml.MAX_TABLE} (the first in scene order); "
                 f"left out: {', '.join(left)}")
        del doc.lights[ml.MAX_TABLE:]
    from_file = any(isinstance(ext(lt).get("light"), int) for lt in scene.lights)
    lit = 0
    for k, rec in enumerate(doc.objects):
        if from_file and kept_flags[k]:
            continue
        flags = int(rec["flags"]) & ~(DYNAMIC_LIT | DYNAMIC_SMOOTH)
        if doc.lights and not flags & ml.GO_SKINNED and len(doc.meshes[k]) and \
                _reached(rec["aabb"], doc.lights):
            flags |= DYNAMIC_LIT
            lit += 1
        rec["flags"] = flags
    if lit:
        ctx.note("splashpack.dynamic_lit", f"{lit} object(s) reached by a runtime light are "
                 "marked runtime-lit (flag 0x10000, SplashEdit's 'auto')", "info")
