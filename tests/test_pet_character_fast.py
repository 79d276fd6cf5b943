"""PET skeleton, animation and character-assembly shortcuts against the general ways they
stand in for, bit for bit on random inputs (timing-independent)."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import numpy as np
import pytest
from tests.helpers import cut_pet_tracks

from gamemesh.formats.pet.document import BoneSection, PetDocument, Section, Track
from gamemesh.registry import Context
from gamemesh.scene import Node, Scene

anim = importlib.import_module("gamemesh.formats.pet.animation")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")


def test_mirror_z_is_the_matrix_products() -> None:
    """Elementwise signs (zeros +0.0) give S4 @ m @ S4's bits for finite stacks, signed zeros
    and subnormals included; other stacks go through the products."""
    rng = np.random.default_rng(61)
    for trial in range(2000):
        n = int(rng.integers(0, 30))
        m = rng.normal(size=(n, 4, 4)) * rng.choice([1.0, 1e30, 1e-300, 1e300, 1e-310, 5e-324],
                                                    (n, 1, 1))
        zero = rng.random((n, 4, 4)) < 0.4
        m[zero] = rng.choice([0.0, -0.0], int(zero.sum()))
        if trial % 4 == 0:
            odd = rng.random((n, 4, 4)) < 0.05
            m[odd] = rng.choice([np.nan, np.inf, -np.inf], int(odd.sum()))
        with np.errstate(all="ignore"):
            want = skel.S4 @ m @ skel.S4
            got = skel.mirror_z(m)
        assert got.tobytes() == want.tobytes()


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


@pytest.mark.parametrize("few", [16, -1])
def test_bone_nodes_match_the_keyword_built_nodes(few: int,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes made with positional fields and their children's lists made first: every field
    as the keyword-built nodes have it (so a reordered Node fails here), roots and the common
    root of several included."""
    monkeypatch.setattr(skel, "_FEW_BONES", few)
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


def _clean_tracks(rng: np.random.Generator, dtype: Any) -> list[Track]:
    """Tracks as files usually hold them (finite, times rising from zero up), with a few
    made dirty (a repeated, falling, negative or non-finite entry)."""
    tracks = []
    for bone in range(int(rng.integers(1, 7))):
        keys = []
        for width in (3, 4, 3):
            n = int(rng.integers(0, 12))
            t = np.cumsum(rng.integers(1, 6, n)) / 30.0 - (1 / 30.0 if rng.random() < 0.5 else 0)
            v = rng.normal(size=(n, width)) * rng.choice([1.0, 1e30, 1e-20, 1e-300], (n, 1))
            v[rng.random((n, width)) < 0.1] = rng.choice([0.0, -0.0])
            rows = np.concatenate([t[:, None], v], 1)
            if n > 1 and rng.random() < 0.15:
                rows[int(rng.integers(0, n)), int(rng.integers(0, width + 1))] = rng.choice(
                    [np.nan, np.inf, -1.0, rows[0, 0]])
            keys.append(rows.astype(dtype))
        tracks.append(Track(bone=bone, pos=keys[0], rot=keys[1], scale=keys[2]))
    return tracks



@pytest.mark.parametrize("small", [1 << 30, -1])
def test_clean_keys_shortcut_matches_the_cleaning_ways(small: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys that need no cleaning skip it: the same channels, clips and notes as the walk
    and the numpy way that clean them (and dirty keys are left to those)."""
    monkeypatch.setattr(anim, "_SMALL_KEYS", small)
    monkeypatch.setattr(anim, "_SMALL_CUT", small)
    rng = np.random.default_rng(71)
    cases = []
    for trial in range(300):
        tracks = _clean_tracks(rng, np.float64 if trial % 4 == 3 else np.float32)
        frames = rng.integers(0, 40, (int(rng.integers(1, 4)), 2))
        cases.append((tracks, [(f0 / 30.0, max(f0, f1) / 30.0) for f0, f1 in frames.tolist()]))

    def run() -> list[Any]:
        return cut_pet_tracks(cases)

    calls = {"clean": 0}
    real = anim._path_keys_clean

    def counted(*args: Any) -> Any:
        got = real(*args)
        calls["clean"] += got is not None
        return got

    monkeypatch.setattr(anim, "_path_keys_clean", counted)
    fast = run()
    assert calls["clean"] > 300  # most paths took the shortcut
    monkeypatch.setattr(anim, "_path_keys_clean", lambda *args: None)
    assert run() == fast
