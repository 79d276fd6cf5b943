"""CSG Papa (PA terrain features and brushes) from a scene: what differs from a unit.

A CSG model is static: vertex format 10 (position, normal, tangent, binormal and two UV sets,
the second for the baked shadow map), materials with one of the ``textured*`` shaders, and
textures *linked* by media path (``/pa/terrain/.../rock_diffuse.papa``: no pixels in the file,
the game loads the named texture file). This is the layout Blender-PAPA-IO exports for CSG
(spec section "Linked textures", the shaders and their ``DiffuseTexture``/``NormalTexture``/
``MaterialTexture`` parameters); a scene read from a CSG file gives its paths back from the
material's ``texture_params`` extras.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt

from ...registry import Context
from ...scene import Scene
from . import layout as lay
from .document import Material, PapaDocument, Texture
from .options import CSG_SHADERS, DEFAULT_TEXTURE_DIR

__all__ = ["CSG_SHADERS", "DEFAULT_TEXTURE_DIR", "csg_material", "tangent_frames"]

F64 = npt.NDArray[np.float64]
# The shader's texture parameters in order (each shader takes the first 1, 2 or 3) and the
# role gamemesh gives the image behind each.
_PARAMS = (("DiffuseTexture", "diffuse"), ("NormalTexture", "normal"),
           ("MaterialTexture", "material"))


def csg_material(doc: PapaDocument, src: Any, scene: Scene, ctx: Context,
                 linked: dict[str, int]) -> Material:
    """A ``textured*`` material whose texture parameters name linked textures (one texture
    entry per distinct path, shared through ``linked``)."""
    shader = str(ctx.opt("csg"))
    params = _PARAMS[:CSG_SHADERS.index(shader) + 1]
    kept = src.extras.get("texture_params") if src is not None else None
    tp = np.zeros(len(params), dtype=lay.TEXTURE_PARAM)
    for k, (pname, role) in enumerate(params):
        path = kept.get(pname) if isinstance(kept, dict) else None
        if not isinstance(path, str) or not path:
            path = _texture_path(src, role, scene, ctx)
        if path not in linked:
            linked[path] = len(doc.textures)
            doc.textures.append(Texture(doc.add_string(path), 0, 0, 0, 0, False, None))
        tp[k] = (doc.add_string(pname), linked[path])
    return Material(doc.add_string(shader), np.zeros(0, dtype=lay.VECTOR_PARAM), tp)


def _texture_path(src: Any, role: str, scene: Scene, ctx: Context) -> str:
    """The media path of a material's ``role`` texture: the image's name in the texture
    folder (``--csg-texture-dir``), or the material's name and role when it has no image."""
    folder = str(ctx.opt("csg_texture_dir") or DEFAULT_TEXTURE_DIR).rstrip("/")
    name = None
    if src is not None:
        ref = {"diffuse": src.base_color_texture, "normal": src.normal_texture}.get(role)
        index = ref.image if ref is not None else src.extras.get(f"{role}_image")
        if isinstance(index, int) and 0 <= index < len(scene.images):
            name = scene.images[index].name
    if not name:
        name = f"{src.name if src is not None and src.name else 'material'}_{role}"
        ctx.note("papa.csg_texture_unnamed", f"CSG {role} texture of material "
                 f"{src.name if src is not None else '(none)'!r}: no image, linked as "
                 f"{folder}/{name}.papa")
    stem = re.sub(r"\.(papa|png|jpe?g|tga|dds)$", "", name.rsplit("/", 1)[-1], flags=re.I)
    return f"{folder}/{stem}.papa"


def tangent_frames(positions: F64, normals: F64, uv: F64,
                   tris: npt.NDArray[np.int64]) -> tuple[F64, F64]:
    """Per-vertex tangent and binormal (unit, orthogonal to the normal) from the UV layout:
    each triangle's UV gradient summed at its corners. Triangles with no UV area add
    nothing; a vertex with no tangent gets any direction perpendicular to its normal."""
    n = len(positions)
    t_sum, b_sum = np.zeros((n, 3)), np.zeros((n, 3))
    if len(tris):
        p0, p1, p2 = (positions[tris[:, k]] for k in range(3))
        w0, w1, w2 = (uv[tris[:, k]] for k in range(3))
        e1, e2, d1, d2 = p1 - p0, p2 - p0, w1 - w0, w2 - w0
        det = d1[:, 0] * d2[:, 1] - d2[:, 0] * d1[:, 1]
        ok = np.abs(det) > 1e-20
        r = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)[:, None]
        t = (e1 * d2[:, 1:2] - e2 * d1[:, 1:2]) * r
        b = (e2 * d1[:, 0:1] - e1 * d2[:, 0:1]) * r
        for k in range(3):
            np.add.at(t_sum, tris[:, k], t)
            np.add.at(b_sum, tris[:, k], b)
    t = t_sum - normals * np.einsum("ij,ij->i", normals, t_sum)[:, None]
    length = np.linalg.norm(t, axis=1)
    # Any perpendicular where the UVs gave none: the normal crossed with its least axis.
    axis = np.eye(3)[np.argmin(np.abs(normals), axis=1)]
    fallback = np.cross(normals, axis)
    fallback /= np.maximum(np.linalg.norm(fallback, axis=1), 1e-12)[:, None]
    t = np.where((length > 1e-12)[:, None], t / np.maximum(length, 1e-12)[:, None], fallback)
    binormal = np.cross(normals, t)
    flip = np.einsum("ij,ij->i", binormal, b_sum) < 0.0
    binormal[flip] *= -1.0
    return t, binormal
