"""What a conversion lost: the scene that went into a writer against the scene its files give
back.

``compare(before, after)`` is pure (two scenes in, a list of :class:`Loss` out) and works on
summaries, never per vertex in Python: counts, which attribute sets exist, which names, which
texture slots, which animated paths. Formats rename, split and add nodes (a synthetic root, a
navmesh), so the comparison only reports what is *missing* from ``after``, never what was added,
and it matches meshes and clips by name where it can, else it compares against the whole scene.

The save path (``gamemesh.api``) turns each loss that no writer note already ``covers`` into a
warning ``<format>.lost.<property>``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from .model import Channel, Material, Mesh, Scene

__all__ = ["PLACEHOLDER", "PROPERTIES", "Loss", "at_rest", "compare"]

# The property names a loss (and a Note's ``covers``) can name.
PROPERTIES = ("nodes", "hierarchy", "meshes", "primitives", "colors", "texcoords", "normals",
              "tangents", "materials", "textures", "skins", "joints", "clips", "channels",
              "targets", "names")

_LIST = 4  # names listed in one message before "+N more"
# A material's extras key marking it made up by a reader for a format without materials.
PLACEHOLDER = "gamemesh_placeholder"


@dataclass(frozen=True)
class Loss:
    """One property the written file no longer holds: ``prop`` (one of :data:`PROPERTIES`),
    and a message naming what and where."""

    prop: str
    message: str


def compare(before: Scene, after: Scene) -> list[Loss]:
    """Everything ``before`` has that ``after`` lacks, at summary level."""
    checks: tuple[Callable[[Scene, Scene], list[Loss]], ...] = (
        _nodes, _hierarchy, _meshes, _materials, _textures, _skins, _clips)
    return [loss for check in checks for loss in check(before, after)]


def _listed(names: Iterable[str]) -> str:
    items = sorted(set(names))
    shown = ", ".join(repr(n) for n in items[:_LIST])
    return shown + (f" (+{len(items) - _LIST} more)" if len(items) > _LIST else "")


def _missing_names(kind: str, before: Iterable[str], after: Iterable[str]) -> list[Loss]:
    gone = {n for n in before if n} - set(after)
    return [Loss("names", f"{kind} names {_listed(gone)}")] if gone else []


# -- nodes and hierarchy -------------------------------------------------------------------

def _nodes(before: Scene, after: Scene) -> list[Loss]:
    out = []
    if len(after.nodes) < len(before.nodes):
        out.append(Loss("nodes", f"{len(before.nodes) - len(after.nodes)} of "
                                 f"{len(before.nodes)} nodes"))
    return out + _missing_names("node", (n.name for n in before.nodes),
                                (n.name for n in after.nodes))


def _unique_names(scene: Scene) -> dict[str, int]:
    seen: dict[str, int] = {}
    dup: set[str] = set()
    for i, n in enumerate(scene.nodes):
        if n.name in seen:
            dup.add(n.name)
        seen[n.name] = i
    return {k: v for k, v in seen.items() if k and k not in dup}


def _ancestors(parents: list[int | None], i: int) -> list[int]:
    out: list[int] = []
    p = parents[i]
    while p is not None and p not in out:
        out.append(p)
        p = parents[p]
    return out


def _hierarchy(before: Scene, after: Scene) -> list[Loss]:
    """A node whose parent (by name) is no longer among its ancestors lost its place. A format
    may add nodes in between (a model root), so only the ancestor chain counts."""
    b_names, a_names = _unique_names(before), _unique_names(after)
    b_par, a_par = before.parents(), after.parents()
    moved = []
    for name, i in b_names.items():
        p = b_par[i]
        if p is None or name not in a_names or before.nodes[p].name not in a_names:
            continue
        if a_names[before.nodes[p].name] not in _ancestors(a_par, a_names[name]):
            moved.append(name)
    if not moved:
        return []
    return [Loss("hierarchy", f"the parents of nodes {_listed(moved)}")]


# -- meshes and their attribute sets --------------------------------------------------------

@dataclass
class _Facts:
    triangles: int = 0
    other_modes: int = 0
    # Per colour set (COLOR_k) that is not all white: its RGBA bounding box (min, max).
    colors: dict[int, np.ndarray] = field(default_factory=dict)
    uv_sets: int = 0
    normals: bool = False
    tangents: bool = False
    skinned: bool = False
    targets: int = 0
    target_names: bool = False


# How far a colour set's bounds may move and still be the same set: a writer quantises
# (8 bits, or 5 as the PS1 does), half a 5-bit step.
_COLOR_TOLERANCE = 1.0 / 64


def _color_boxes(colors: list[np.ndarray], boxes: dict[int, np.ndarray]) -> None:
    """Widen ``boxes`` by each of a primitive's colour sets: (2, 4) RGBA min and max. A set is
    recognised by its bounds, which survive reordering, splitting and merging vertices, so a
    writer that keeps COLOR_1 as its only set (COLOR_0) has kept it."""
    for k, c in enumerate(colors):
        a = np.asarray(c, dtype=np.float64)
        if not len(a):
            continue
        rgba = np.ones((2, 4))
        rgba[0, :a.shape[1]], rgba[1, :a.shape[1]] = a[:, :4].min(axis=0), a[:, :4].max(axis=0)
        old = boxes.get(k)
        boxes[k] = rgba if old is None else np.stack([np.minimum(old[0], rgba[0]),
                                                      np.maximum(old[1], rgba[1])])


def _lost_color_sets(b: dict[int, np.ndarray], a: dict[int, np.ndarray]) -> list[int]:
    """The sets of ``b`` that hold more than white (which changes nothing on screen, so
    dropping it loses nothing) and match no set of ``a`` by their bounds."""
    white = np.ones((2, 4))
    return [k for k, box in sorted(b.items()) if not np.array_equal(box, white) and not any(
        np.abs(box - other).max() <= _COLOR_TOLERANCE for other in a.values())]


def _facts(meshes: Iterable[Mesh]) -> _Facts:
    f = _Facts()
    for m in meshes:
        f.target_names = f.target_names or bool(m.target_names)
        for p in m.primitives:
            f.triangles += p.triangle_count
            f.other_modes += p.mode != 4
            _color_boxes(p.colors, f.colors)
            f.uv_sets = max(f.uv_sets, len(p.texcoords))
            f.normals = f.normals or p.normals is not None
            f.tangents = f.tangents or p.tangents is not None
            f.skinned = f.skinned or p.joints is not None
            f.targets = max(f.targets, len(p.targets))
    return f


def _attribute_losses(where: str, b: _Facts, a: _Facts) -> list[Loss]:
    out = []
    lost = _lost_color_sets(b.colors, a.colors)
    if lost:
        out.append(Loss("colors", f"{where}: vertex colours "
                                  f"({', '.join(f'COLOR_{k}' for k in lost)})"))
    if b.uv_sets > a.uv_sets:
        sets = ", ".join(f"TEXCOORD_{k}" for k in range(a.uv_sets, b.uv_sets))
        out.append(Loss("texcoords", f"{where}: UV sets {sets}"))
    if b.normals and not a.normals:
        out.append(Loss("normals", f"{where}: normals"))
    if b.tangents and not a.tangents:
        out.append(Loss("tangents", f"{where}: tangents"))
    if b.skinned and not a.skinned:
        out.append(Loss("skins", f"{where}: skinning (joints and weights)"))
    if b.targets and not a.targets:
        out.append(Loss("targets", f"{where}: {b.targets} morph targets"))
    if b.target_names and not a.target_names and a.targets:
        out.append(Loss("names", f"{where}: morph target names"))
    return out


def _by_name(meshes: list[Mesh]) -> dict[str, list[Mesh]]:
    out: dict[str, list[Mesh]] = {}
    for m in meshes:
        out.setdefault(m.name, []).append(m)
    return out


def _meshes(before: Scene, after: Scene) -> list[Loss]:
    out = []
    whole_b, whole_a = _facts(before.meshes), _facts(after.meshes)
    # Fewer meshes holding every triangle were merged (PET holds one mesh): nothing is lost
    # but their names, checked below.
    merged = (whole_a.triangles >= whole_b.triangles
              and whole_a.other_modes >= whole_b.other_modes)
    if len(after.meshes) < len(before.meshes) and not merged:
        out.append(Loss("meshes", f"{len(before.meshes) - len(after.meshes)} of "
                                  f"{len(before.meshes)} meshes"))
    if whole_a.triangles < whole_b.triangles:
        out.append(Loss("primitives", f"{whole_b.triangles - whole_a.triangles} of "
                                      f"{whole_b.triangles} triangles"))
    if whole_a.other_modes < whole_b.other_modes:
        out.append(Loss("primitives", f"{whole_b.other_modes - whole_a.other_modes} "
                                      "point/line primitives"))
    b_named, a_named = _by_name(before.meshes), _by_name(after.meshes)
    for name, group in b_named.items():
        # A mesh the output renamed or split is held against the whole output scene.
        mine = a_named.get(name) if name else None
        where = f"mesh {name!r}" if name else "unnamed meshes"
        out += _attribute_losses(where, _facts(group), _facts(mine) if mine else whole_a)
    return out + _missing_names("mesh", b_named, a_named)


# -- materials and textures -----------------------------------------------------------------

def _used_materials(scene: Scene) -> list[Material]:
    """The materials primitives use, leaving out placeholders a reader made up because its
    format has none (extras ``PLACEHOLDER``)."""
    used = sorted({p.material for m in scene.meshes for p in m.primitives
                   if p.material is not None and 0 <= p.material < len(scene.materials)})
    return [scene.materials[i] for i in used if not scene.materials[i].extras.get(PLACEHOLDER)]


def _looks(mats: list[Material]) -> dict[str, bool]:
    return {
        "base colour factors": any(m.base_color_factor != (1.0, 1.0, 1.0, 1.0) for m in mats),
        "emission": any(m.emissive_factor != (0.0, 0.0, 0.0) for m in mats),
        "unlit shading": any(m.unlit for m in mats),
        "alpha blending": any(m.alpha_mode == "BLEND" for m in mats),
        "alpha masking": any(m.alpha_mode == "MASK" for m in mats),
    }


def _materials(before: Scene, after: Scene) -> list[Loss]:
    b, a = _used_materials(before), _used_materials(after)
    out = []
    if len(a) < len(b):
        what = "every material" if not a else f"{len(b) - len(a)} of {len(b)} materials"
        out.append(Loss("materials", f"{what} ({_listed(m.name or '?' for m in b)})"))
    lb, la = _looks(b), _looks(a)
    gone = [k for k, v in lb.items() if v and not la[k]]
    if gone:
        out.append(Loss("materials", "material " + ", ".join(gone)))
    return out + _missing_names("material", (m.name for m in b), (m.name for m in a))


_SLOTS = ("base_color_texture", "metallic_roughness_texture", "normal_texture",
          "occlusion_texture", "emissive_texture")


def _slot_images(scene: Scene) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {s: set() for s in _SLOTS}
    for m in _used_materials(scene):
        for s in _SLOTS:
            ref = getattr(m, s)
            if ref is not None and 0 <= ref.image < len(scene.images):
                out[s].add(ref.image)
    return out


def _textures(before: Scene, after: Scene) -> list[Loss]:
    b, a = _slot_images(before), _slot_images(after)
    out = []
    for slot in _SLOTS:
        label = slot.replace("_texture", "").replace("_", " ")
        if b[slot] and not a[slot]:
            out.append(Loss("textures", f"{label} textures ({len(b[slot])})"))
        elif len(a[slot]) < len(b[slot]):
            out.append(Loss("textures", f"{len(b[slot]) - len(a[slot])} of {len(b[slot])} "
                                        f"{label} textures"))
    return out


# -- skins and animation --------------------------------------------------------------------

def _skins(before: Scene, after: Scene) -> list[Loss]:
    out = []
    if len(after.skins) < len(before.skins):
        out.append(Loss("skins", f"{len(before.skins) - len(after.skins)} of "
                                 f"{len(before.skins)} skins"))
    jb = {j for s in before.skins for j in s.joints}
    ja = {j for s in after.skins for j in s.joints}
    if after.skins and len(ja) < len(jb):
        out.append(Loss("joints", f"{len(jb) - len(ja)} of {len(jb)} joints"))
    return out


# A key this close to the node's rest value is the rest value (exporters write float noise:
# Blender's scale keys are 1 +- 5e-7).
_REST_TOLERANCE = 1e-5


def at_rest(scene: Scene, c: Channel) -> bool:
    """Whether every key of ``c`` holds its node's rest value: such a channel moves nothing,
    and a file without it loses nothing."""
    node = scene.nodes[c.node]
    if c.path not in ("translation", "rotation", "scale") or node.matrix is not None:
        return False
    rest = np.asarray(getattr(node, c.path), dtype=np.float64)
    v = np.asarray(c.values, dtype=np.float64)
    if c.interpolation == "CUBICSPLINE":
        v = v.reshape(-1, 3, len(rest))[:, 1]
    if v.ndim != 2 or v.shape[1] != len(rest):
        return False
    if c.path == "rotation":  # q and -q are the same rotation
        return bool((np.abs(np.abs(v @ rest) - 1.0) <= _REST_TOLERANCE).all())
    return bool((np.abs(v - rest) <= _REST_TOLERANCE).all())


def _animated(scene: Scene, index: int) -> dict[str, set[str]]:
    """Per path, the names (or indices) of the nodes a clip moves (channels holding the rest
    value move nothing and are left out)."""
    out: dict[str, set[str]] = {}
    for c in scene.animations[index].channels:
        if not 0 <= c.node < len(scene.nodes) or at_rest(scene, c):
            continue
        out.setdefault(c.path, set()).add(scene.nodes[c.node].name or f"#{c.node}")
    return out


def _clip_losses(label: str, b: dict[str, set[str]], a: dict[str, set[str]]) -> list[Loss]:
    """One loss per clip naming every channel kind it lost."""
    parts = []
    for path, nodes in sorted(b.items()):
        got = a.get(path, set())
        if not got:
            parts.append(f"{path} channels ({len(nodes)} nodes)")
        elif len(got) < len(nodes):
            parts.append(f"{path} channels of {len(nodes) - len(got)} of {len(nodes)} nodes")
    return [Loss("channels", f"clip {label}: {', '.join(parts)}")] if parts else []


def _clips(before: Scene, after: Scene) -> list[Loss]:
    nb, na = len(before.animations), len(after.animations)
    if not nb:
        return []
    if not na:
        return [Loss("clips", f"every clip ({_listed(a.name or '?' for a in before.animations)})")]
    out = []
    if na < nb:
        out.append(Loss("clips", f"{nb - na} of {nb} clips"))
    names_a = {a.name: i for i, a in enumerate(after.animations)}
    for i, clip in enumerate(before.animations):
        j = names_a.get(clip.name, i if i < na else None)
        if j is not None:
            out += _clip_losses(repr(clip.name or i), _animated(before, i), _animated(after, j))
    return out + _missing_names("clip", (a.name for a in before.animations), names_a)
