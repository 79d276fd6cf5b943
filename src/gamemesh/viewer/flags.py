"""Which scene nodes are overlays rather than the model: navigation meshes.

The SPLASHPACK reader marks its navmesh nodes with ``extras = {"splashpack": {"navmesh": k}}``
(``k`` the navmesh's index, so 0 is a valid mark); a top-level ``"navmesh"`` key, or a
``kind``/``role``/``type`` of ``"navmesh"``, is accepted too so other formats can join. The page
draws flagged nodes (and what hangs below them) as a translucent overlay, hidden until its
toggle is ticked; thumbnails and camera framing leave them out.
The same rule is implemented in ``static/viewer.js`` (on glTF ``extras``, which three.js puts
in ``userData``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..scene import Scene

__all__ = ["is_navmesh", "navmesh_nodes"]

NAVMESH_KINDS = ("navmesh", "nav_mesh", "navigation_mesh")


def _marks(d: Mapping[str, Any]) -> bool:
    flag = d.get("navmesh", d.get("is_navmesh"))
    if flag is not None and flag is not False:
        return True
    return any(str(d.get(k, "")).lower() in NAVMESH_KINDS for k in ("kind", "role", "type"))


def is_navmesh(extras: Mapping[str, Any]) -> bool:
    """True when the extras, or a per-format dict inside them, mark a navmesh."""
    if _marks(extras):
        return True
    return any(isinstance(v, Mapping) and _marks(v) for v in extras.values())


def navmesh_nodes(scene: Scene) -> list[int]:
    """The flagged nodes and the nodes below them (a Papa helper model is flagged on its
    model node, its mesh hangs below), as the page's rule walks up the parents."""
    flagged = {i for i, n in enumerate(scene.nodes) if is_navmesh(n.extras)}
    parents = scene.parents()
    for i in scene.walk():  # parents come first
        if parents[i] in flagged:
            flagged.add(i)
    return sorted(flagged)
