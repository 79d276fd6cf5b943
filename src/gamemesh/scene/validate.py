"""Scene invariants, each failure naming the object that breaks it."""

from __future__ import annotations

import math

import numpy as np

from .math import row_lengths
from .model import Node, Primitive, Scene

__all__ = ["InvalidSceneError", "problems", "validate"]

_WIDTH = {"translation": 3, "rotation": 4, "scale": 3}


class InvalidSceneError(ValueError):
    """A scene that breaks the model's invariants (a bug in a converter, not bad input)."""

    def __init__(self, found: list[str]) -> None:
        self.problems = found
        more = f" (+{len(found) - 5} more)" if len(found) > 5 else ""
        super().__init__("invalid scene: " + "; ".join(found[:5]) + more)


def validate(scene: Scene) -> None:
    found = problems(scene)
    if found:
        raise InvalidSceneError(found)


def problems(scene: Scene) -> list[str]:
    out: list[str] = []
    out += _graph_problems(scene)
    for mi, mesh in enumerate(scene.meshes):
        for pi, prim in enumerate(mesh.primitives):
            out += [f"meshes[{mi}].primitives[{pi}]: {p}" for p in _prim_problems(scene, prim)]
        n_targets = {len(p.targets) for p in mesh.primitives}
        if len(n_targets) > 1:
            out.append(f"meshes[{mi}] ({mesh.name!r}): primitives differ in morph target count")
        if mesh.weights and n_targets and len(mesh.weights) != max(n_targets):
            out.append(f"meshes[{mi}] ({mesh.name!r}): {len(mesh.weights)} weights for "
                       f"{max(n_targets)} targets")
    for ti, mat in enumerate(scene.materials):
        for ref in mat.textures():
            if not 0 <= ref.image < len(scene.images):
                out.append(f"materials[{ti}] ({mat.name!r}): image {ref.image} out of range")
    for ii, img in enumerate(scene.images):
        px = img.pixels
        if px is not None and (px.ndim != 3 or px.shape[2] != 4 or px.dtype != np.uint8):
            out.append(f"images[{ii}] ({img.name!r}): pixels must be (H, W, 4) uint8, "
                       f"got {px.shape} {px.dtype}")
    for si, skin in enumerate(scene.skins):
        out += [f"skins[{si}] ({skin.name!r}): {p}" for p in _skin_problems(scene, skin)]
    for ai, anim in enumerate(scene.animations):
        for ci, ch in enumerate(anim.channels):
            where = f"animations[{ai}] ({anim.name!r}).channels[{ci}]"
            out += [f"{where}: {p}" for p in _channel_problems(scene, ch)]
    return out


def _length(q: tuple[float, ...]) -> float:
    """np.linalg.norm of a short vector (sqrt of the sum of squares, summed in order, as its
    dot product does) without numpy's cost per call: this runs once per node."""
    total = 0.0
    for x in q:
        total += float(x) * float(x)
    return math.sqrt(total)


def _finite_transform(node: Node) -> bool:
    """Every number of the node's transform is finite (plain floats: once per node)."""
    if node.matrix is not None:
        return bool(np.isfinite(np.asarray(node.matrix, dtype=np.float64)).all())
    return all(map(math.isfinite, (*node.translation, *node.rotation, *node.scale)))


def _graph_problems(scene: Scene) -> list[str]:
    out: list[str] = []
    n = len(scene.nodes)
    parent_of: dict[int, int] = {}
    for i, node in enumerate(scene.nodes):
        for c in node.children:
            if not 0 <= c < n:
                out.append(f"nodes[{i}] ({node.name!r}): child {c} out of range")
            elif c in parent_of:
                out.append(f"nodes[{c}] ({scene.nodes[c].name!r}): has two parents")
            else:
                parent_of[c] = i
        if node.mesh is not None and not 0 <= node.mesh < len(scene.meshes):
            out.append(f"nodes[{i}] ({node.name!r}): mesh {node.mesh} out of range")
        if node.skin is not None and not 0 <= node.skin < len(scene.skins):
            out.append(f"nodes[{i}] ({node.name!r}): skin {node.skin} out of range")
        if node.light is not None and not 0 <= node.light < len(scene.lights):
            out.append(f"nodes[{i}] ({node.name!r}): light {node.light} out of range")
        if not _finite_transform(node):
            out.append(f"nodes[{i}] ({node.name!r}): transform holds NaN or infinity")
        elif node.matrix is None and abs(_length(node.rotation) - 1.0) > 1e-3:
            out.append(f"nodes[{i}] ({node.name!r}): rotation is not a unit quaternion")
    for r in scene.roots:
        if not 0 <= r < n:
            out.append(f"roots: {r} out of range")
        elif r in parent_of:
            out.append(f"nodes[{r}] ({scene.nodes[r].name!r}): a root that has a parent")
    walked = scene.walk() if not out else []
    if len(walked) != len(set(walked)):
        out.append("node graph has a cycle")
    return out


def _prim_problems(scene: Scene, p: Primitive) -> list[str]:
    out: list[str] = []
    pos = np.asarray(p.positions)
    if pos.ndim != 2 or pos.shape[1] != 3:
        return [f"positions must be (N, 3), got {pos.shape}"]
    n = len(pos)
    if not np.isfinite(pos).all():
        out.append("positions hold NaN or infinity")
    attrs = {"normals": p.normals, "tangents": p.tangents, "joints": p.joints,
             "weights": p.weights}
    attrs.update({f"texcoords[{i}]": a for i, a in enumerate(p.texcoords)})
    attrs.update({f"colors[{i}]": a for i, a in enumerate(p.colors)})
    for name, a in attrs.items():
        if a is not None and len(a) != n:
            out.append(f"{name} has {len(a)} rows for {n} positions")
    if (p.joints is None) != (p.weights is None):
        out.append("joints and weights must come together")
    elif p.joints is not None and p.weights is not None and (
            p.joints.shape != p.weights.shape or p.joints.shape[1] % 4):
        out.append(f"joints {p.joints.shape} and weights {p.weights.shape} must be (N, 4k)")
    if p.indices is not None and len(p.indices):
        hi = int(np.max(p.indices))
        if hi >= n:
            out.append(f"index {hi} out of range for {n} vertices")
    if p.material is not None and not 0 <= p.material < len(scene.materials):
        out.append(f"material {p.material} out of range")
    for ti, t in enumerate(p.targets):
        for name, a in (("positions", t.positions), ("normals", t.normals)):
            if a is not None and len(a) != n:
                out.append(f"targets[{ti}].{name} has {len(a)} rows for {n} vertices")
    return out


def _skin_problems(scene: Scene, skin: object) -> list[str]:
    from .model import Skin

    assert isinstance(skin, Skin)
    out: list[str] = []
    for j in skin.joints:
        if not 0 <= j < len(scene.nodes):
            out.append(f"joint {j} out of range")
    ibm = skin.inverse_bind_matrices
    if ibm is not None and np.asarray(ibm).shape != (len(skin.joints), 4, 4):
        out.append(f"inverse_bind_matrices shape {np.asarray(ibm).shape} for "
                   f"{len(skin.joints)} joints")
    elif ibm is not None and not np.isfinite(ibm).all():
        out.append("inverse_bind_matrices hold NaN or infinity")
    used = [i for i, n in enumerate(scene.nodes) if n.skin is not None and
            scene.skins[n.skin] is skin] if skin in scene.skins else []
    for ni in used:
        mi = scene.nodes[ni].mesh
        if mi is None or not 0 <= mi < len(scene.meshes):
            continue
        mesh = scene.meshes[mi]
        for prim in mesh.primitives:
            if prim.joints is not None and len(prim.joints):
                hi = int(np.max(prim.joints))
                if hi >= len(skin.joints):
                    out.append(f"mesh {mesh.name!r} uses joint {hi} of {len(skin.joints)}")
    return out


def _channel_problems(scene: Scene, ch: object) -> list[str]:
    from .model import Channel

    assert isinstance(ch, Channel)
    out: list[str] = []
    if not 0 <= ch.node < len(scene.nodes):
        return [f"node {ch.node} out of range"]
    t = np.asarray(ch.times)
    v = np.asarray(ch.values)
    k = 3 if ch.interpolation == "CUBICSPLINE" else 1
    if len(v) != len(t) * k:
        out.append(f"{len(v)} values for {len(t)} times ({ch.interpolation})")
    if v.dtype.kind == "f" and not (np.isfinite(t).all() and np.isfinite(v).all()):
        out.append("keys hold NaN or infinity")
    if len(t) == 0:
        out.append("no keys")
    elif (t[1:] <= t[:-1]).any():  # np.diff's test without its temporary
        out.append("times are not strictly increasing")
    if ch.path in _WIDTH and v.ndim == 2 and v.shape[1] != _WIDTH[ch.path]:
        out.append(f"{ch.path} values have width {v.shape[1]}")
    if ch.path == "rotation" and len(v):
        vals = v if k == 1 else v.reshape(-1, 3, 4)[:, 1]
        if vals.dtype.kind != "f":
            vals = vals.astype(np.float64)  # as norm() converts
        norms = row_lengths(vals)
        if (np.abs(norms - 1.0) > 1e-2).any():
            out.append("rotation keys are not unit quaternions")
    if ch.path == "weights":
        mi = scene.nodes[ch.node].mesh
        if mi is None:
            out.append("weights channel on a node without a mesh")
    return out
