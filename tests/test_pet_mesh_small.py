"""PET's small-mesh paths (every corner converted, the primitives' vertices found in one walk,
the skin weights as (N, P) arrays) against the general ones they stand in for: the same
primitives, notes, errors and GLB bytes, bit for bit, on many random small meshes
(timing-independent)."""

from __future__ import annotations

import importlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import assert_same_tree

import gamemesh
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context

ts = importlib.import_module("gamemesh.formats.pet.to_scene")
anim = importlib.import_module("gamemesh.formats.pet.animation")
corner_mod = importlib.import_module("gamemesh.formats.pet.corners")
infl = importlib.import_module("gamemesh.formats.pet.influences")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
FIXTURES = Path(__file__).parent / "fixtures" / "pet"



def _general(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ts, "_SMALL_FACES", -1)
    monkeypatch.setattr(infl, "_SMALL_VERTS", -1)


def _mutate(rng: np.random.Generator, doc: Any, weights: bool) -> None:
    """Seams, hard edges, -0.0, zero and non-finite normals, textures past the list,
    specular values, varying UV-set counts and (``weights``) hostile skin weights."""
    m = doc.mesh
    nc = len(m.corner_vertex)
    nf, nv = nc // 3, m.vertex_count
    m.corner_normal = np.array(m.corner_normal, np.float32)
    m.corner_uv = np.array(m.corner_uv, np.float32)
    for _ in range(int(rng.integers(0, 6))):
        at = rng.integers(0, nc, int(rng.integers(1, 4)))
        what = int(rng.integers(0, 7))
        if what == 0:
            m.corner_normal[at] *= -1.0
        elif what == 1:
            m.corner_normal[at, int(rng.integers(0, 3))] = -0.0
        elif what == 2:
            m.corner_normal[at] = 0.0  # "compute it": the face's normal
        elif what == 3:
            m.corner_normal[at, 0] = rng.choice([np.nan, np.inf, -np.inf, 1e38])
        elif what == 4:
            m.corner_uv[at, 0, 0] += 0.5
        elif what == 5:
            m.corner_uv[at, -1, 1] = rng.choice([-0.0, np.nan, 3e38])
        else:
            m.corner_vertex = np.array(m.corner_vertex, np.uint32)
            m.corner_vertex[at] = rng.integers(0, nv, len(at))
    m.texture = rng.integers(0, 5, nf).astype(np.uint8)  # 3 textures: 3 and 4 name none
    if m.specular is not None:
        m.specular = rng.choice([0, 7, 255], nf).astype(np.uint8)
    if m.corner_nuv is not None and rng.random() < 0.3:
        m.corner_nuv = rng.integers(1, m.corner_uv.shape[1] + 1, nc).astype(np.uint8)
    if weights and rng.random() < 0.8:
        p = int(rng.integers(1, 8))
        nb = doc.bones.count
        m.inf_bone = rng.integers(-2, nb + 2, (nv, p)).astype(np.int32)
        if rng.random() < 0.5:  # distinct bones: the (N, P) way takes them
            m.inf_bone = np.argsort(rng.random((nv, nb + 8)), axis=1)[:, :p].astype(np.int32) - 1
        m.inf_weight = rng.choice([0, 0, 1, 7, 85, 128, 200, 255], (nv, p)).astype(np.uint8)
        m.inf_count = rng.integers(0, p + 1, nv).astype(np.int32)


def _outcome(doc: Any, opts: dict[str, Any]) -> tuple[Any, ...]:
    ctx = Context(None, dict(opts), [])
    try:
        scene = SPEC.to_scene(doc, ctx)
    except gamemesh.FormatError as e:
        return ("error", str(e))
    buf = io.BytesIO()
    gamemesh.save(scene, buf, format="glb")
    return (scene.meshes, scene.materials, [(n.code, n.message) for n in ctx.notes],
            buf.getvalue())


def _compare(docs: list[tuple[Any, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[str] = []
    for name in ("_primitives_small", "_corner_rows"):
        orig = getattr(ts._MeshBuilder, name)
        monkeypatch.setattr(ts._MeshBuilder, name,
                            lambda *a, _o=orig, _n=name: taken.append(_n) or _o(*a))
    weights = infl._influences_small
    monkeypatch.setattr(infl, "_influences_small",
                        lambda *a: (lambda r: taken.append("w" if r else "-") or r)(weights(*a)))
    small = [_outcome(d, o) for d, o in docs]
    assert "_primitives_small" in taken and "_corner_rows" not in taken and "w" in taken
    taken.clear()
    _general(monkeypatch)
    for (d, o), got in zip(docs, small, strict=True):
        want = _outcome(d, o)
        if want[0] == "error":
            assert got == want
        else:
            assert_same_tree(got[:3], want[:3])
            assert got[3] == want[3]
    assert "_corner_rows" in taken and "_primitives_small" not in taken and "w" not in taken


@pytest.mark.parametrize("version", [(1, 0), (1, 2), (1, 3)])
@pytest.mark.parametrize("kind", ["pet", "mpet"])
def test_small_meshes_match_the_general_path(monkeypatch: pytest.MonkeyPatch,
                                             version: tuple[int, int], kind: str) -> None:
    """Random small meshes (seams, zero and non-finite normals, varying UV sets, textures past
    the list, repeated and invalid bones, unweighted vertices, ``max_influences``) give the
    general path's primitives, notes and GLB bytes."""
    rng = np.random.default_rng(sum(version) * 7 + len(kind))
    docs: list[tuple[Any, dict[str, Any]]] = []
    for trial in range(40):
        doc = build(kind, version, rings=int(rng.integers(2, 9)),
                    sides=int(rng.integers(3, 10)), uv_sets=int(rng.integers(1, 4)),
                    chain=int(rng.integers(1, 6)))
        _mutate(rng, doc, weights=trial % 2 == 0)
        if trial % 2:  # as read: the corner fields are views of the file's records
            try:
                doc = SPEC.read(write(doc), Context(None, {}))
            except gamemesh.FormatError:
                continue
        docs.append((doc, {"max_influences": 2} if trial % 4 == 0 else {}))
    assert any(len(d.mesh.texture) <= ts._SMALL_FACES for d, _ in docs)
    _compare(docs, monkeypatch)


def test_fixtures_and_damaged_copies_match_the_general_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The checked-in fixtures (characters included: the parts' rebind) and damaged copies
    of them load to the same scenes, or fail with the same errors, either way."""
    rng = np.random.default_rng(41)
    cases: list[tuple[bytes, Path]] = []
    for p in sorted(FIXTURES.glob("*pet")):
        data = p.read_bytes()
        cases.append((data, p))
        for _ in range(6):
            m = bytearray(data)
            for at in rng.integers(0, len(m), 3):
                m[at] = int(rng.integers(0, 256))
            cases.append((bytes(m), Path(p.name)))

    def outcome(data: bytes, p: Path) -> Any:
        try:
            scene = gamemesh.load(data if p.parent == Path() else p, format="pet")
        except gamemesh.FormatError as e:
            return str(e)
        buf = io.BytesIO()
        gamemesh.save(scene, buf, format="glb")
        return buf.getvalue()

    small = [outcome(d, p) for d, p in cases]
    _general(monkeypatch)
    assert [outcome(d, p) for d, p in cases] == small


def test_few_vertices_weights_match_the_column_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The (N, P) skin weights give the column way's bits and notes: invalid, repeated (then
    the column way runs) and unweighted slots, unsorted rows, every slot count."""
    rng = np.random.default_rng(43)
    for trial in range(300):
        n, p, nb = int(rng.integers(1, 60)), int(rng.integers(1, 8)), int(rng.integers(1, 9))
        bones = rng.integers(-2, nb + 2, (n, p)).astype(np.int32)
        if trial % 2:
            bones = np.argsort(rng.random((n, nb + 9)), axis=1)[:, :p].astype(np.int32) - 2
        weight = rng.choice([0, 0, 1, 7, 85, 128, 200, 255], (n, p)).astype(np.uint8)
        count = rng.integers(0, p + 1, n).astype(np.int32)
        main = np.where((bones[:, 0] >= 0) & (bones[:, 0] < nb) & (count > 0), bones[:, 0],
                        -1).astype(np.int64)
        opts = {"max_influences": int(rng.integers(1, 4))} if trial % 3 == 0 else {}
        got = []
        for small in (True, False):
            ctx = Context(None, dict(opts), [])
            inf = (infl._influences_small(bones, count, weight, nb, main, ctx) if small else
                   infl._influences_by_column(type("M", (), {"inf_bone": bones, "inf_count": count,
                                                           "inf_weight": weight}),
                                            nb, main, ctx))
            got.append((inf, [(x.code, x.message) for x in ctx.notes]))
        (a, na), (b, nb_) = got
        if a is None:  # a repeated bone: the column way decides
            assert infl._has_repeats(bones, (weight > 0) & (bones >= 0) & (bones < nb)
                                   & (count[:, None] > np.arange(p)))
            continue
        assert na == nb_, trial
        assert_same_tree(a, b)


def test_cross_matches_numpy() -> None:
    rng = np.random.default_rng(47)
    a, b = rng.normal(size=(500, 3)) * 1e3, rng.normal(size=(500, 3))
    a[:5, 1] = [np.nan, np.inf, -0.0, 1e308, -1e-310]
    b[3] = -0.0
    assert corner_mod._cross(a, b).tobytes() == np.cross(a, b).tobytes()


def test_single_value_matches_np_unique() -> None:
    rng = np.random.default_rng(53)
    for trial in range(400):
        n = int(rng.integers(1, 6))
        a = rng.choice([0.0, -0.0, 1.5, np.nan, np.inf, -2.0], n).astype(
            np.float32 if trial % 2 else np.float64)
        if trial % 3 == 0:
            a[:] = a[0]
        if trial % 5 == 0:
            a = a[::-1]  # strided
        vals = np.unique(a)
        want = float(vals[0]) if len(vals) == 1 else None
        got = corner_mod._single_value(a)
        if want is None or got is None:
            assert got is want, (a, got, want)
        else:
            assert np.float64(got).tobytes() == np.float64(want).tobytes() or (
                got != got and want != want), (a, got, want)


def test_norms_match_numpy() -> None:
    rng = np.random.default_rng(59)
    for k in (3, 4):
        a = rng.normal(size=(300, k)) * 10.0 ** rng.integers(-200, 200, (300, 1))
        a[:4, 0] = [np.nan, np.inf, -0.0, 1e308]
        for rows in (a, a[:5], a[:0]):
            with np.errstate(all="ignore"):  # as build_scene runs it (1e308 squared)
                assert corner_mod._norms(rows).tobytes() == np.linalg.norm(rows, axis=1).tobytes()


def test_texture_stems_and_names_match_pathlib_and_cp949() -> None:
    """The bare-name stem is Path's; ASCII names decode as CP949 decodes them."""
    textures = importlib.import_module("gamemesh.formats.pet.textures")
    layout = importlib.import_module("gamemesh.formats.pet.layout")
    rng = np.random.default_rng(61)
    alphabet = [*"ab.-_ \\/:~{]!", "\u00e9", "\ud55c", "\x00"]
    for _ in range(3000):
        name = "".join(rng.choice(alphabet, int(rng.integers(0, 8))))
        assert textures._stem(name) == Path(name).stem, repr(name)
    for _ in range(3000):
        raw = bytes(rng.choice([0, 0x41, 0x2E, 0x7F, 0x80, 0xB0, 0xA1, 0xFF],
                               int(rng.integers(0, 10))).astype(np.uint8))
        want = raw.split(b"\0", 1)[0].decode("cp949", errors="replace")
        assert layout.fixstr(raw) == want and layout.lstr_text(raw) == want, raw


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


def test_plain_float_quaternion_helpers_match_the_array_ones() -> None:
    from gamemesh.scene.math import (
        matrix_to_quat,
        matrix_to_quat_floats,
        quat_to_matrix,
        quat_to_matrix_floats,
    )

    rng = np.random.default_rng(71)
    for trial in range(500):
        q = rng.normal(size=4)
        m = quat_to_matrix(q) * rng.choice([1.0, -1.0, 1e-30])
        if trial % 10 == 0:
            q[int(rng.integers(0, 4))] = rng.choice([np.nan, np.inf])
            m[int(rng.integers(0, 3)), int(rng.integers(0, 3))] = rng.choice([np.nan, np.inf])
        with np.errstate(all="ignore"):
            assert (np.array(quat_to_matrix_floats(q.tolist())).tobytes()
                    == quat_to_matrix(q).tobytes())
            assert (np.array(matrix_to_quat_floats(m.tolist())).tobytes()
                    == matrix_to_quat(m).tobytes())


def test_nan_to_num_of_one_float_matches_numpy() -> None:
    for x in (0.0, -0.0, 1.5, -3e38, np.nan, -np.nan, np.inf, -np.inf, 5e-324, 1.7e308):
        got = ts._nan_to_num(float(x))
        assert type(got) is float
        assert np.float64(got).tobytes() == np.nan_to_num(np.float64(x)).tobytes(), x


def test_rows_array_and_unit_rotations_match_the_plain_numpy_way() -> None:
    rng = np.random.default_rng(73)
    for n in (0, 1, 7, 60):
        rows = (rng.normal(size=(n, 4)) * 10.0 ** rng.integers(-300, 300, (n, 4))).tolist()
        want = np.array(rows, np.float64).reshape(-1, 4)
        assert anim._rows_array(rows, 4).tobytes() == want.tobytes()
        v = want.copy()
        if n:
            v[0] = 0.0  # a zero quaternion: the unit one
        for arr in (want, v):
            with np.errstate(all="ignore"):
                length = np.linalg.norm(arr, axis=1, keepdims=True)
                ref = np.where(length > 1e-12, arr / np.where(length > 1e-12, length, 1.0),
                               anim._UNIT_Q)
                assert anim._unit_rotations(arr).tobytes() == ref.tobytes()


def _fake_body_reference(names_raw: list[bytes], parents: list[int], main: Any,
                         nb: int) -> Any:
    """v1.0's fake body bone as first written (a set of all main bones, a mask assignment)."""
    out = np.arange(nb)
    names = skel.decode_names(names_raw[:nb])
    mains = set(np.unique(main[main >= 0]).tolist()) if len(main) else set()
    has_child = {p for p in parents if 0 <= p < nb}
    skeletal = [any(k in n for k in ("Bip", "Bone", "Jaw")) for n in names]
    fake = [i for i in range(nb) if not skeletal[i] and i not in mains and i not in has_child]
    if fake:
        out[np.array(skeletal, bool)] = fake[0]
    return out


@pytest.mark.parametrize("few", [512, 0])  # main bones as one set of ints, or one by one
def test_fake_body_bone_matches_the_set_of_main_bones(monkeypatch: pytest.MonkeyPatch,
                                                      few: int) -> None:
    """The candidates checked against the main bones pick the set way's bone."""
    monkeypatch.setattr(infl, "_FEW_MAIN", few)
    rng = np.random.default_rng(61)
    words = [b"Bip01", b"Bone", b"Jaw", b"body", b"box", b"\xb8\xf6", b"Bi p", b""]
    for _ in range(400):
        nb = int(rng.integers(1, 9))
        names = [b"".join(rng.choice(words, int(rng.integers(1, 3))).tolist()) for _ in range(nb)]
        parents = [int(rng.integers(-1, i)) if i else -1 for i in range(nb)]
        main = rng.integers(-1, nb, int(rng.integers(0, 20))).astype(np.int64)
        got = infl.fake_body_substitute(names, parents, main, nb)
        want = _fake_body_reference(names, parents, main, nb)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_column_sums_by_running_sums_match_the_column_adds() -> None:
    """The running sums' last column has the bits of the column-by-column adds (signed
    zeros, NaN, infinities, overflow, subnormals; every width)."""
    rng = np.random.default_rng(67)
    vals = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, 1 / 3, 0.1,
                     1.0, 7 / 255])
    for trial in range(3000):
        n, p = int(rng.integers(0, 40)), int(rng.integers(1, 9))
        k = int(rng.integers(1, p + 1))
        if trial % 2:
            w = rng.choice(vals, (n, p))
        else:
            w = rng.random((n, p)) * rng.choice([1.0, 1e300, 1e-300])
        want = w[:, 0].copy()
        with np.errstate(all="ignore"):
            for c in range(1, k):
                want += w[:, c]
            got = infl._column_sum(w, k)
        assert got.tobytes() == want.tobytes(), (trial, k)
