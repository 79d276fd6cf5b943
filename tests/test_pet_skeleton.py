"""PET skeletons to the scene: bone rest matrices, their world matrices and inverse binds,
the bone nodes (TRS or matrix), bone names and lookups, and the animation conventions."""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import numpy as np

from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.document import BoneSection, PetDocument, Section
from gamemesh.formats.pet.read import read
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context
from gamemesh.scene import Node, Scene

skel = importlib.import_module("gamemesh.formats.pet.skeleton")


def ctx(path: str | Path | None = None, **opts: Any) -> Context:
    return Context(Path(path) if path else None, opts)


def fixture(kind: str, version: tuple[int, int], escape: bool = False) -> bytes:
    return write(build(kind, version, escape=escape))


def _bone_section(rng: np.random.Generator, n: int) -> BoneSection:
    parents = [int(rng.integers(-1, i)) if i else -1 for i in range(n)]
    mats = rng.normal(size=(n, 12)).astype(np.float32)
    for i in range(n):
        if rng.random() < 0.7:  # a rotation with a scale (no shear), else as drawn (shear)
            q = rng.normal(size=4)
            q /= np.linalg.norm(q)
            x, y, z, w = q
            rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
            rot *= rng.choice([1.0, 2.0, -1.0], 3)[None, :]
            mats[i, :9] = rot.T.reshape(-1)
    return BoneSection(names=[f"b{i}".encode() for i in range(n)], parents=parents,
                       parent_wide=[False] * n, matrices=mats,
                       extra=rng.normal(size=n).astype(np.float32) if n % 2 else None)


def _reference_bone_nodes(scene: Scene, sk: Any) -> None:
    """The bone nodes as built before (keywords, children appended node by node)."""
    bs = sk.unit.doc.bones
    base = len(scene.nodes)
    sk.nodes = list(range(base, base + len(sk.names)))
    gl = skel.S4 @ np.asarray(sk.local, np.float64).reshape(-1, 4, 4) @ skel.S4
    tl, rl, sl, exact = skel._bone_trs(gl)
    nodes = scene.nodes
    extras = skel._bone_extras(bs)
    nodes += [Node(name=name, translation=ti, rotation=ri, scale=si, extras=ex) if ok
              else Node(name=name, matrix=gl[i].astype(np.float32), extras=ex)
              for i, (name, ok, ti, ri, si, ex) in enumerate(zip(sk.names, exact, tl, rl, sl,
                                                                 extras, strict=True))]
    roots = [i for i, p in enumerate(sk.parents) if p < 0]
    top = None
    if len(roots) > 1:
        top = len(scene.nodes)
        scene.nodes.append(Node(name=sk.unit.stem, extras={"pet_root": True}))
        scene.roots.append(top)
    under = scene.nodes[top].children if top is not None else scene.roots
    for i, p in enumerate(sk.parents, base):
        if p >= 0:
            nodes[base + p].children.append(i)
        else:
            under.append(i)


def _node_state(node: Node) -> list[Any]:
    out = []
    for f in dataclasses.fields(Node):
        v = getattr(node, f.name)
        out.append((f.name, (v.dtype, v.tobytes()) if isinstance(v, np.ndarray) else repr(v)))
    return out


def test_bone_nodes_match_the_keyword_built_nodes() -> None:
    """Nodes made with positional fields and their children's lists made first: every field
    as the keyword-built nodes have it (so a reordered Node fails here), roots and the common
    root of several included."""
    rng = np.random.default_rng(67)
    for _ in range(60):
        n = int(rng.integers(0, 40))
        bs = _bone_section(rng, n)
        doc = PetDocument(kind="pet", version=(1, 3), sections=[Section(b"BONE", bs)])
        sk = skel.Skeleton(skel.Unit(doc), [f"b{i}" for i in range(n)], bs.parents,
                           skel.bone_locals(bs), np.zeros((n, 4, 4)))
        got, want = Scene(), Scene()
        got.nodes.append(Node(name="before"))
        want.nodes.append(Node(name="before"))
        ctx = Context(None)
        skel.add_skeleton_nodes(got, sk, ctx)
        got_ids = list(sk.nodes)
        _reference_bone_nodes(want, sk)
        assert got_ids == sk.nodes
        sheared = sum(n.matrix is not None for n in want.nodes)
        assert [n.code for n in ctx.notes] == (["pet.bone_shear"] if sheared else [])
        assert got.roots == want.roots
        assert [_node_state(a) for a in got.nodes] == [_node_state(b) for b in want.nodes]


def _reference_bone_tree(parents: list[int], n: int) -> tuple[list[int], list[int], int]:
    """The bone order as it was first written (visited flags, cycles cut at their first
    bone)."""
    par = [p if 0 <= p < n and p != i else -1 for i, p in enumerate(parents)]
    children: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(par):
        if p >= 0:
            children[p].append(i)
    order: list[int] = []
    seen = [False] * n
    cut = sum(1 for i, p in enumerate(parents) if p >= 0 and par[i] < 0)
    roots = [i for i in range(n) if par[i] < 0]
    while True:
        stack = list(reversed(roots))
        while stack:
            i = stack.pop()
            if not seen[i]:
                seen[i] = True
                order.append(i)
                stack.extend(reversed(children[i]))
        rest = [i for i in range(n) if not seen[i]]
        if not rest:
            return order, par, cut
        par[rest[0]] = -1
        children = [[c for c in ch if c != rest[0]] for ch in children]
        roots = [rest[0]]
        cut += 1


def test_bone_order_and_world_matrices_match_the_bone_by_bone_way() -> None:
    """Trees, chains, cycles and bad links: the reference walk's order and cuts, and world
    matrices bit for bit those of np.matmul bone by bone."""
    rng = np.random.default_rng(23)
    for trial in range(300):
        n = int(rng.integers(0, 60))
        if trial % 3 == 0:
            parents = [i - 1 for i in range(n)]  # a chain
        else:
            parents = [int(rng.integers(-1, max(1, i + 1))) for i in range(n)]
        for _ in range(int(rng.integers(0, 4))):
            if n:
                parents[int(rng.integers(0, n))] = int(rng.integers(-3, n + 3))
        got = skel.bone_tree(parents, n)
        assert got == _reference_bone_tree(parents, n)
        order, par, _ = got
        place = {b: k for k, b in enumerate(order)}
        assert all(place[p] < place[i] for i, p in enumerate(par) if p >= 0)
        local = rng.normal(size=(n, 4, 4)) * 10.0 ** rng.integers(-3, 4, (n, 1, 1))
        want = local.copy()
        for i in order:
            if par[i] >= 0:
                want[i] = np.matmul(want[par[i]], local[i])
        assert skel.bone_worlds(local, par, order).tobytes() == want.tobytes()


def test_bone_names_decode_as_cp949() -> None:
    cases = [[], [b""], [b"Bip01", b"", b"a b"], ["\ud55c\uae00".encode("cp949"), b"x"],
             [b"\xff\xfe", b"ok"], [b"a\0b", b"c"], [bytes(range(128))]]
    for raw in cases:
        assert skel.decode_names(raw) == [b.decode("cp949", errors="replace") for b in raw]


def test_bone_lookup_by_name_matches_the_linear_search() -> None:
    """The first exact match, else the first match ignoring case (repeated names, names
    differing in case only, non-ASCII)."""
    rng = np.random.default_rng(37)
    pool = ["Bip01", "bip01", "BIP01", "Spine", "spine", "\ud55c\uae00", "Bone001", ""]
    for _ in range(300):
        names = [str(rng.choice(pool)) for _ in range(int(rng.integers(0, 8)))]
        sk = skel.Skeleton(None, names, [-1] * len(names), np.zeros((0, 4, 4)),
                         np.zeros((0, 4, 4)))
        for query in [*pool, "BONE001", "nope"]:
            want = next((i for i, n in enumerate(names) if n == query),
                        next((i for i, n in enumerate(names) if n.lower() == query.lower()),
                             None))
            assert sk.find(query) == want


def test_bone_locals_match_the_tiled_identity_way() -> None:
    from gamemesh.formats.pet.document import BoneSection

    rng = np.random.default_rng(41)
    for trial in range(200):
        n = int(rng.integers(0, 12))
        mats = (rng.normal(size=(n, 12)) * 10.0 ** rng.integers(-20, 20, (n, 1))).astype(
            np.float32)
        if n and trial % 3 == 0:
            mats[rng.integers(0, n), rng.integers(0, 12)] = rng.choice([np.nan, np.inf, -0.0])
        bs = BoneSection(names=[b"b"] * n, parents=[-1] * n,
                         matrices=None if trial % 10 == 0 else mats)
        want = np.tile(np.eye(4), (n, 1, 1))
        if bs.matrices is not None and n:
            rows = np.asarray(mats, np.float64).reshape(n, 4, 3)
            want[:, :3, :3] = np.transpose(rows[:, :3, :], (0, 2, 1))
            want[:, :3, 3] = rows[:, 3, :]
            want[~np.all(np.isfinite(want.reshape(n, 16)), axis=1)] = np.eye(4)
        got = skel.bone_locals(bs)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def test_world_matrices_of_identity_and_special_locals() -> None:
    """Chains and trees with bones whose local matrix is exactly the identity: the worlds
    bone by bone through np.matmul bit for bit, worlds with -0.0, NaN, infinities and
    subnormals among them."""
    rng = np.random.default_rng(97)
    for trial in range(600):
        n = int(rng.choice([1, 2, 5, 30, 40, 300]))
        parents = ([i - 1 for i in range(n)] if trial % 3 else
                   [int(rng.integers(-1, i)) if i else -1 for i in range(n)])
        local = rng.normal(size=(n, 4, 4)) * rng.choice([1.0, 1e-310, 1e300], (n, 1, 1),
                                                        p=[0.9, 0.05, 0.05])
        local[rng.random(n) < rng.choice([0.3, 0.9])] = np.eye(4)
        zero = rng.random((n, 4, 4)) < 0.2
        local[zero & (rng.random((n, 4, 4)) < 0.5)] = -0.0
        local[zero & (rng.random((n, 4, 4)) < 0.5)] = 0.0
        if trial % 7 == 0:
            local[int(rng.integers(0, n)), int(rng.integers(0, 4)), int(rng.integers(0, 4))] = \
                rng.choice([np.nan, np.inf, -np.inf])
        order, par, _ = skel.bone_tree(parents, n)
        want = local.copy()
        with np.errstate(all="ignore"):
            for i in order:
                if par[i] >= 0:
                    want[i] = np.matmul(want[par[i]], local[i])
            got = skel.bone_worlds(local, par, order)
        assert got.tobytes() == want.tobytes()


def test_trs_scales_match_the_norm_reduction() -> None:
    """matrices_to_trs' column lengths written out are np.linalg.norm's (axis 1) bits."""
    from gamemesh.scene.math import matrices_to_trs

    rng = np.random.default_rng(67)
    m = np.zeros((400, 4, 4))
    m[:, :3, :] = rng.normal(size=(400, 3, 4)) * 10.0 ** rng.integers(-160, 160, (400, 3, 4))
    m[rng.random((400, 4, 4)) < 0.03] = rng.choice([np.nan, np.inf, -0.0])
    with np.errstate(all="ignore"):
        s = matrices_to_trs(m)[2]
        want = np.linalg.norm(m[:, :3, :3], axis=1)
        neg = np.linalg.det(m[:, :3, :3]) < 0
    want[neg, 0] *= -1
    assert s.tobytes() == want.tobytes()


def test_sheared_bones_keep_their_matrices() -> None:
    """A bone with shear becomes a matrix node (the others TRS nodes), with a note."""
    doc = build("pet", (1, 3), rings=3, sides=4)
    bones = doc.bones
    bones.matrices = np.array(bones.matrices, np.float32)
    bones.matrices[1, 1] = 0.7  # x axis gains a y part: shear
    ctx = Context(None, {}, [])
    scene = SPEC.to_scene(doc, ctx)
    local = skel.bone_locals(bones)
    want = (skel.S4 @ local[1] @ skel.S4).astype(np.float32)
    assert scene.nodes[1].matrix is not None
    assert scene.nodes[1].matrix.tobytes() == want.tobytes()
    assert scene.nodes[1].extras == {"pet_bone": 1, "pet_bone_extra": -1.0}
    assert all(n.matrix is None for i, n in enumerate(scene.nodes[:bones.count]) if i != 1)
    assert [n.code for n in ctx.notes].count("pet.bone_shear") == 1


def test_skeleton_and_animation_conventions() -> None:
    scene = SPEC.to_scene(read(fixture("pet", (1, 3)), ctx("a.pet")), ctx("a.pet"))
    names = [n.name for n in scene.nodes]
    spine1 = scene.nodes[names.index("Bip01 Spine1")]
    # Half a unit above its parent, turned 20 degrees about Y: mirrored z turns the other way.
    assert np.allclose(spine1.translation, (0, 0.5, 0), atol=1e-6)
    assert np.allclose(spine1.rotation, (0, -np.sin(np.radians(10)), 0, np.cos(np.radians(10))),
                       atol=1e-6)
    spine2 = scene.nodes[names.index("Bip01 Spine3")]
    assert np.allclose(spine2.scale, (1.25, 1.25, 1.25), atol=1e-6)
    assert spine2.extras["pet_bone_extra"] == -1.0
    assert [a.name for a in scene.animations] == ["idle", "walk"]
    idle = scene.animations[0]
    assert idle.extras["pet_motion"]["next_move"] == "walk"
    assert idle.extras["pet_motion"]["connection_time"] == 0.25
    rot = next(c for c in idle.channels if c.path == "rotation")
    assert rot.times[0] == 0 and abs(rot.times[-1] - 0.5) < 1e-6
    assert np.allclose(np.linalg.norm(rot.values, axis=1), 1, atol=1e-6)
    # File quaternion about +z (x, y, z, w) -> glTF (x, y, -z, w).
    t = 20 / 30
    half = 0.3 * np.sin(t * 4) / 2
    walk_rot = next(c for c in scene.animations[1].channels if c.path == "rotation")
    k = int(np.argmin(np.abs(walk_rot.times - (t - 0.5))))
    assert np.allclose(walk_rot.values[k], (0, 0, -np.sin(half), np.cos(half)), atol=1e-5)
    box = next(n for n in scene.nodes if "pet_coll" in n.extras)
    assert box.name == "body" and box.extras["pet_coll"]["bone_name"] == "Bip01 Spine1"
    assert np.allclose(box.extras["pet_coll"]["min"], (-0.3, 0, -0.25))
    assert scene.nodes.index(box) in spine1.children
    mats = {m.name: m for m in scene.materials}
    assert mats["]glass.png"].alpha_mode == "BLEND"
    assert np.allclose(mats["]glass.png"].base_color_factor, (128 / 255, 128 / 255,
                                                              128 / 255, 1))
