"""PET documents -> Scene (spec §B.16), for one file or a character assembled from several.

Pangya is Direct3D: left-handed, +Y up. ``S = diag(1, 1, -1)`` takes it to glTF: positions and
normals get z negated, bone matrices become ``S L S``, animation quaternions ``(x, y, -z, w)``
(the mirror combined with pet-source_tools' conjugation) and every triangle is reversed.
Vertices are stored in their main (first) bone's rest space and normals per corner.
"""

from __future__ import annotations

import numpy as np

from ...errors import FormatError
from ...registry import Context
from ...safeio import read_regular
from ...scene import Node, Scene, Skin
from .animation import add_animations
from .document import CollSection, PetDocument
from .extras import doc_extras, text_value
from .files import part_paths
from .layout import FMT
from .mesh import MeshBuilder
from .read import read
from .skeleton import Skeleton, Unit, add_skeleton_nodes, inverse_binds32, make_skeleton


def to_scene(doc: PetDocument, ctx: Context) -> Scene:
    return build_scene(Unit(doc, ctx.path), [], ctx)


def build_scene(main: Unit, others: list[Unit], ctx: Context) -> Scene:
    """The scene of one file or of a character (skeleton, parts, motions)."""
    # Hostile numbers (NaN, 1e38 matrices) must not warn or overflow: results are sanitized.
    with np.errstate(all="ignore"):
        return _build_scene(main, others, ctx)


def _build_scene(main: Unit, others: list[Unit], ctx: Context) -> Scene:
    units = [main, *others]
    scene = Scene(name=main.stem)
    # The skeleton: the first .bpet's, else the first with rest matrices, else the first bones.
    ranks = [(u.doc.kind != "bpet", u.doc.bones.matrices is None, i)
             for i, u in enumerate(units) if u.doc.bones is not None]
    skel_unit = units[min(ranks)[2]] if ranks else None
    sk = make_skeleton(skel_unit, ctx) if skel_unit is not None else None
    if sk is not None:
        add_skeleton_nodes(scene, sk, ctx)
    builder = MeshBuilder(scene, sk, ctx)
    for u in units:
        if u.doc.mesh is not None:
            builder.add(u)
    if builder.used_skin and sk is not None:
        ibm = inverse_binds32(sk.world)
        scene.skins.append(Skin(joints=list(sk.nodes), inverse_bind_matrices=ibm,
                                name=f"{sk.unit.stem}_skin"))
        for ni in builder.mesh_nodes:
            scene.nodes[ni].skin = 0
    for u in units:
        if u.doc.anim is not None:
            add_animations(scene, u, sk, ctx)
    for u in units:
        coll = u.doc.get(b"COLL")
        if isinstance(coll, CollSection):
            _add_boxes(scene, coll, sk)
    scene.extras.update({"format": "pet", "pet_version": "{}.{}".format(*main.doc.version),
                         "pet_kind": main.doc.kind})
    scene.extras["pet"] = {u.path.name if u.path else f"<{u.doc.kind}>": doc_extras(u.doc)
                           for u in units}
    return scene


def _add_boxes(scene: Scene, coll: CollSection, sk: Skeleton | None) -> None:
    for i, b in enumerate(coll.boxes):
        box = np.nan_to_num(np.asarray(b.box, np.float64)).tolist()
        lo, hi = box[:3], box[3:]
        gl_lo = [lo[0], lo[1], -hi[2]]
        gl_hi = [hi[0], hi[1], -lo[2]]
        bone = b.bone_name.decode("cp949", "replace")
        parent = sk.find(bone) if sk is not None else None
        node = Node(name=b.box_name.decode("cp949", "replace") or f"coll{i}", extras={
            "pet_coll": {"shape": b.shape, "show": b.show, "box_name": text_value(b.box_name),
                         "bone_name": text_value(b.bone_name),
                         "option1": text_value(b.option1), "option2": text_value(b.option2),
                         "box_raw": np.asarray(b.box, "<f4").tobytes().hex(),
                         "min": [float(x) for x in gl_lo], "max": [float(x) for x in gl_hi]}})
        scene.add_node(node, sk.nodes[parent] if sk is not None and parent is not None else None)


def load(data: bytes, ctx: Context) -> Scene:
    """One file, or a character: the main file plus the parts given with ``with`` or found
    with ``character``."""
    doc = read(data, ctx)
    units: list[Unit] = []
    for p in part_paths(ctx):
        try:
            raw = read_regular(p)
        except OSError as e:
            msg = f"cannot read character part {p.name} ({e.strerror})"
            raise FormatError(FMT, msg, path=str(p)) from None
        try:
            units.append(Unit(read(raw, Context(p, {}, ctx.notes)), p))
        except FormatError as e:
            raise e.with_path(str(p)) from None
    return build_scene(Unit(doc, ctx.path), units, ctx)
