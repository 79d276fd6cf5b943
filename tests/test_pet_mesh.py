"""PET meshes to the scene: one glTF vertex per distinct corner record (the vertex search),
primitives per (texture, specular), normals and winding, skin weights, materials and textures."""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage
from tests.helpers import mean_winding_dot

import gamemesh
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.document import (
    TextSection,
)
from gamemesh.formats.pet.layout import corner_dtype
from gamemesh.formats.pet.read import read
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context
from gamemesh.scene import Scene
from helpers import corpus_files

mesh_mod = importlib.import_module("gamemesh.formats.pet.mesh")
dedup = importlib.import_module("gamemesh.formats.pet.dedup")
corner_mod = importlib.import_module("gamemesh.formats.pet.corners")
infl = importlib.import_module("gamemesh.formats.pet.influences")
skel = importlib.import_module("gamemesh.formats.pet.skeleton")
VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))


def ctx(path: str | Path | None = None, **opts: Any) -> Context:
    return Context(Path(path) if path else None, opts)


def fixture(kind: str, version: tuple[int, int], escape: bool = False) -> bytes:
    return write(build(kind, version, escape=escape))


def _converted_and_reference(data: bytes) -> tuple[Any, Any]:
    """The primitives of a written PET file's scene, and :func:`_reference_primitives`'s
    answer for the same file."""
    doc = SPEC.read(data, Context(None, {}))
    scene = SPEC.to_scene(doc, Context(None, {}))
    unit = skel.Unit(doc, None)
    builder = mesh_mod.MeshBuilder(Scene(), skel.make_skeleton(unit, Context(None, {})),
                              Context(None, {}))
    return scene.meshes[0].primitives, _reference_primitives(doc, builder, unit)


def _reference_primitives(scene_doc: Any, builder: Any, unit: Any) -> list[tuple[Any, ...]]:
    """The corner dedup as it was: every corner converted, then np.unique over the
    (vertex, normal, UV sets) rows of each primitive (-0.0 equal to 0.0)."""
    m = unit.doc.mesh
    bs = unit.doc.bones
    nb = bs.count if bs is not None else 0
    sk = builder.sk
    pos, _, _, main = builder._skin(m, nb, sk.world, np.arange(nb))
    nc = len(m.corner_vertex)
    normals, _ = builder._normals(unit, m, pos, sk.world, main, np.arange(nb), np.arange(nc),
                                  np.asarray(m.corner_normal))
    gnrm = corner_mod.finite32(normals * np.array([1.0, 1.0, -1.0]))
    cuv = np.asarray(m.corner_uv, np.float32)
    uv_all = corner_mod.finite32(cuv.reshape(nc, cuv.shape[1], 2))
    cv = np.asarray(m.corner_vertex, np.int64)
    tex = np.asarray(m.texture, np.int64)
    tex = np.where(tex < len(unit.doc.textures), tex, -1)
    spec = m.specular if m.specular is not None else np.full(len(tex), 0xFF, np.uint8)
    key = (tex + 1) * 256 + np.asarray(spec, np.int64)
    out = []
    for k in np.unique(key):
        faces = np.flatnonzero(key == k)
        corners = (faces[:, None] * 3 + np.array([0, 2, 1])[None, :]).reshape(-1)
        rec = np.concatenate([cv[corners, None], gnrm[corners] + np.float32(0.0),
                              uv_all[corners].reshape(len(corners), -1) + np.float32(0.0)],
                             axis=1).astype(np.float64)
        _, first, inverse = np.unique(rec, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first)  # np.unique sorts by value: renumber by first occurrence
        rank = np.empty(len(first), np.int64)
        rank[order] = np.arange(len(first))
        src = corners[first[order]]
        out.append((gnrm[src], uv_all[src], rank[inverse.reshape(-1)]))
    return out


@pytest.mark.parametrize("version", [(1, 0), (1, 2), (1, 3)])
@pytest.mark.parametrize("size", [(6, 7), (30, 20)])  # the generic and the records' way
def test_corner_dedup_gives_the_scene_np_unique_gave(version: tuple[int, int],
                                                     size: tuple[int, int]) -> None:
    """Distinct corner records converted once, merged per primitive by class: the same
    vertices, in the same order, with the same indices as the per-corner np.unique dedup,
    also with seams (a vertex whose corners differ), -0.0 normals and zero normals."""
    doc = build("pet", version, rings=size[0], sides=size[1], uv_sets=2)
    m = doc.mesh
    assert m is not None
    m.corners = m.corners.copy()  # its fields below are views of the copy
    m.corner_normal[5::11] *= -1.0  # hard edges: a vertex with two normals
    m.corner_normal[7::13, 1] = -0.0
    m.corner_normal[2::17] = 0.0  # "compute it": the face's normal, per corner
    m.corner_normal[m.corner_vertex % 7 == 3] = 0.0  # equal records with a zero normal
    m.corner_uv[3::7, 0, 0] += 0.5  # UV seams
    prims, want = _converted_and_reference(write(doc))
    assert len(prims) == len(want)
    for p, (nrm, uv, indices) in zip(prims, want, strict=True):
        assert np.array_equal(p.normals, nrm)
        for s, tc in enumerate(p.texcoords):
            assert np.array_equal(tc, uv[:, s])
        assert np.array_equal(p.indices, indices)


@pytest.mark.parametrize("ntex", [1, 3, 12])
def test_primitives_found_at_once_match_np_unique_per_primitive(ntex: int) -> None:
    """All primitives' vertices found in one pass over the corners (faces grouped by key by
    a stable sort) give the per-primitive np.unique dedup's vertices and indices."""
    rng = np.random.default_rng(ntex)
    for _ in range(3):
        doc = build("pet", (1, 3), rings=int(rng.integers(12, 25)),
                    sides=int(rng.integers(12, 25)), uv_sets=2)
        m = doc.mesh
        assert m is not None
        nf = len(m.texture)
        m.corners = m.corners.copy()
        m.corner_normal[int(rng.integers(0, 5))::9] *= -1.0
        m.corner_normal[2::29] = 0.0
        m.corner_uv[int(rng.integers(0, 5))::7, 0, 0] += 0.5
        m.texture = rng.integers(0, ntex, nf).astype(np.uint8)
        m.specular = rng.choice([0, 255], nf).astype(np.uint8)
        text = doc.get(b"TEXT")
        text.textures = [text.textures[k % len(text.textures)] for k in range(ntex)]
        data = write(doc)
        prims, want = _converted_and_reference(data)
        assert len(prims) == len(want) > 0
        for p, (nrm, uv, indices) in zip(prims, want, strict=True):
            assert np.array_equal(p.normals, nrm)
            for s, tc in enumerate(p.texcoords):
                assert np.array_equal(tc, uv[:, s])
            assert np.array_equal(p.indices, indices)


def _bits(a: Any) -> list[Any]:
    """Float rows as a block of their 32-bit words (the vertex search compares bits)."""
    return [np.ascontiguousarray(a, np.float32).view(np.uint32)]


def _check_equal_rows(idx: Any, columns: list[Any], records: list[Any], bound: int) -> None:
    """equal_rows numbers the rows as the records' first occurrences group them."""
    row, first = dedup.equal_rows(idx, columns, bound)
    seen: dict[Any, int] = {}
    want = [seen.setdefault(r, k) for k, r in enumerate(records)]
    assert first.take(row).tolist() == want  # each row's number starts at its first twin
    assert len(np.unique(row)) == len(seen)  # and equal rows share one number
    like_first = first.take(idx) == np.asarray(want)
    assert np.array_equal(row[like_first], idx[like_first])  # numbered by index where alike
    assert np.all(row[~like_first] >= bound)


@pytest.mark.parametrize("n", [3000, 200, 1])
def test_equal_rows_and_first_occurrences(n: int) -> None:
    rng = np.random.default_rng(9)
    idx = rng.integers(0, 200, n)
    cols = rng.integers(0, 3, (n, 3)).astype(np.float32)
    cols[::5] *= -0.0  # bitwise: -0.0 is not 0.0 here
    _check_equal_rows(idx, _bits(cols), [(int(i), c.tobytes()) for i, c in
                                         zip(idx, cols, strict=True)], 200)
    # Mostly one row per index (the few later rows alone are compared), NaN and -0.0 among
    # the bits, 32- and 64-bit words; indices below the bound that no row has.
    idx = rng.permutation(n) + 3
    idx[rng.integers(0, n, max(1, n // 20))] = idx[rng.integers(0, n, max(1, n // 20))]
    cols = rng.integers(0, 2, (n, 3)).astype(np.float32)
    cols[::7, 1] = np.nan
    cols[::3, 2] *= -0.0
    wide = rng.integers(0, 2, (n, 4)).astype(np.float32)
    wide64 = [np.ascontiguousarray(wide).view(np.uint64)]
    _check_equal_rows(idx, _bits(cols) + wide64,
                      [(int(i), c.tobytes() + u.tobytes()) for i, c, u in
                       zip(idx, cols, wide, strict=True)], n + 3)
    ids = rng.integers(0, 50, n)
    firsts, inverse = dedup.first_occurrences(ids, 50)
    _, f = np.unique(ids, return_index=True)
    assert firsts.tolist() == sorted(f.tolist())
    assert np.array_equal(ids[firsts][inverse], ids)
    assert firsts.dtype == inverse.dtype == np.int64


def test_unique_rows_match_np_unique_and_survive_collisions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The corner dedup finds exactly np.unique's distinct rows (-0.0 equal to 0.0), in
    first-occurrence order; when every hash collides it still never merges different rows."""

    rng = np.random.default_rng(7)
    n = 5000
    cv = rng.integers(0, 800, n)
    nrm = rng.integers(-1, 2, (n, 3)).astype(np.float32)
    nrm[::7] *= -0.0
    uv = rng.integers(0, 2, (n, 4)).astype(np.float32)
    rec = np.concatenate([cv[:, None], nrm, uv], axis=1).astype(np.float64)
    expect = len(np.unique(rec, axis=0))
    words = [cv.astype(np.uint32), *_bits(nrm + np.float32(0.0))[0].T, *_bits(uv)[0].T]
    for prime in (dedup._FNV_PRIME, np.uint64(0)):  # 0: every row hashes the same
        monkeypatch.setattr(dedup, "_FNV_PRIME", prime)
        first, inverse = dedup.unique_rows(words)
        assert len(first) == expect
        assert np.array_equal(rec[first][inverse], rec)
        assert np.all(np.diff(first) > 0) and first[0] == 0
    row, first = dedup.equal_rows(np.zeros(0, np.int64), [np.zeros((0, 3), np.uint32)], 4)
    assert len(row) == 0 and first.tolist() == [0, 0, 0, 0]


def test_corner_words_are_the_records_fields_exactly() -> None:
    """The word rows read from strided, unaligned records hold each field's bits."""
    rng = np.random.default_rng(7)
    for nuv, count in ((0, True), (1, True), (2, True), (3, True), (1, False)):
        dt = corner_dtype(nuv, count)
        raw = rng.integers(0, 256, 50 * dt.itemsize + 3, dtype=np.uint8).tobytes()
        recs = np.frombuffer(raw, dt, count=50, offset=3)
        m = build("pet", (1, 3)).mesh
        assert m is not None
        m.corners = recs
        head, sets = mesh_mod.corner_words(m)
        assert head.shape == (50, 2) and sets.shape == (50, nuv)
        assert head.flags.c_contiguous and sets.flags.c_contiguous
        h = head.astype("<u8").view(np.uint8)
        assert h[:, :4].tobytes() == np.ascontiguousarray(recs["vertex"]).tobytes()
        assert h[:, 4:].tobytes() == np.ascontiguousarray(recs["normal"]).tobytes()
        assert sets.astype("<u8").tobytes() == np.ascontiguousarray(recs["uv"]).tobytes()


def test_finite32_in_range_shortcut_matches_the_clip() -> None:
    rng = np.random.default_rng(29)
    for dtype in (np.float32, np.float64):
        for bad in (None, np.nan, np.inf, -np.inf, 2e30, -2e30, 1e30, -0.0):
            a = rng.normal(size=(1000, 3)).astype(dtype)
            if bad is not None:
                a[17, 1] = bad
            want = np.minimum(np.maximum(a.astype(np.float64), -1e30), 1e30)
            want[np.isnan(want)] = 0.0
            got = corner_mod.finite32(a)
            assert got.dtype == np.float32
            assert got.tobytes() == want.astype(np.float32).tobytes(), (dtype, bad)


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
        got = corner_mod.single_value(a)
        if want is None or got is None:
            assert got is want, (a, got, want)
        else:
            assert np.float64(got).tobytes() == np.float64(want).tobytes() or (
                got != got and want != want), (a, got, want)


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


def test_fake_body_bone_matches_the_set_of_main_bones() -> None:
    """The candidates checked against the main bones pick the set way's bone."""
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


# -- to the scene ------------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "version"), list(itertools.product(("pet", "mpet"), VERSIONS)))
def test_to_scene_geometry_skin_and_winding(kind: str, version: tuple[int, int]) -> None:
    scene = SPEC.to_scene(read(fixture(kind, version), ctx(f"t.{kind}")), ctx(f"t.{kind}"))
    scene.validate()
    assert mean_winding_dot(scene) > 0.8
    pos = np.concatenate([p.positions for p in scene.meshes[0].primitives])
    # The tube: a hexagon of radius 0.3 around +Y, 2 units tall (after the bones' transforms).
    half = 0.3 * np.sin(np.pi / 3)
    assert np.allclose(pos.min(axis=0), [-0.3, 0, -half], atol=1e-5)
    assert np.allclose(pos.max(axis=0), [0.3, 2, half], atol=1e-5)
    for p in scene.meshes[0].primitives:
        assert p.joints is not None and p.weights is not None
        assert p.joints.shape[1] == 8  # five influences -> JOINTS_0 + JOINTS_1
        assert np.allclose(p.weights.sum(axis=1), 1.0, atol=1e-6)
        assert np.all(p.joints[p.weights == 0] == 0)
        assert len(p.texcoords) == (2 if version >= (1, 2) else 1)
    assert scene.extras["pet_version"] == "{}.{}".format(*version)
    assert scene.extras["pet_kind"] == kind
    assert len(scene.skins) == 1 and len(scene.skins[0].joints) == 5


def test_max_influences_option() -> None:
    c = ctx("m.pet", max_influences=4)
    scene = SPEC.to_scene(read(fixture("pet", (1, 3)), c), c)
    for p in scene.meshes[0].primitives:
        assert p.joints is not None and p.weights is not None
        assert p.joints.shape[1] == 4
        assert np.allclose(p.weights.sum(axis=1), 1.0, atol=1e-6)
    assert any(n.code == "pet.influences_limited" for n in c.notes)


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
        assert layout.fixstr(raw) == want, raw


def test_textures_found_case_insensitively_with_mask(tmp_path: Path) -> None:
    model = tmp_path / "models" / "ball.pet"
    model.parent.mkdir()
    model.write_bytes(fixture("pet", (1, 3)))
    rgb = np.zeros((8, 8, 3), np.uint8)
    rgb[..., 0] = 200
    PILImage.fromarray(rgb).save(model.parent / "ITEM1_01.JPG", quality=95)
    mask = np.zeros((8, 8, 3), np.uint8)
    mask[:, 4:] = 255
    PILImage.fromarray(mask).save(model.parent / "item1_01_mask.png")
    shared = tmp_path / "z_common" / "sub"
    shared.mkdir(parents=True)
    PILImage.fromarray(np.full((4, 4, 4), 90, np.uint8)).save(shared / "]glass.png")
    scene = gamemesh.load(model)
    imgs = {i.uri: i for i in scene.images}
    item = imgs["item1_01.jpg"]
    assert item.pixels is not None and item.pixels.shape == (8, 8, 4)
    assert item.pixels[0, 0, 3] < 10 and item.pixels[0, 7, 3] > 245
    glass = imgs["]glass.png"]
    assert glass.data is not None and glass.mime_type == "image/png"
    assert not any(n.code == "pet.texture_missing" for n in scene.notes)
    gamemesh.save(scene, tmp_path / "ball.glb")
    (shared / "]glass.png").unlink()
    again = gamemesh.load(model)
    assert any(n.code == "pet.texture_missing" and "glass" in n.message for n in again.notes)
    placeholder = next(i for i in again.images if i.uri == "]glass.png")
    assert placeholder.pixels is None and placeholder.data is None


def test_texture_dir_tga_and_mpet_float(tmp_path: Path) -> None:
    model = tmp_path / "m" / "h_ha_01.mpet"
    model.parent.mkdir()
    model.write_bytes(fixture("mpet", (1, 3)))
    extra = tmp_path / "elsewhere"
    extra.mkdir()
    tga = np.zeros((2, 2, 4), np.uint8)
    tga[..., 1] = 255
    tga[..., 3] = 128
    PILImage.fromarray(tga).save(extra / "Item1_01.tga")
    # The TEXT name is item1_01.jpg: a .tga of that stem is not it; the name must match.
    scene = gamemesh.load(model, texture_dir=[extra])
    assert any(n.code == "pet.texture_missing" for n in scene.notes)
    PILImage.fromarray(tga).save(extra / "]GLASS.tga")
    doc = read(model.read_bytes(), ctx(model))
    text = doc.get(b"TEXT")
    assert isinstance(text, TextSection)
    text.textures[1].name_raw = b"]glass.tga".ljust(32, b"\0")
    model.write_bytes(write(doc))
    scene = gamemesh.load(model, texture_dir=[extra])
    glass = next(i for i in scene.images if i.uri == "]glass.tga")
    assert glass.pixels is not None and glass.pixels[0, 0].tolist() == [0, 255, 0, 128]
    mat = next(m for m in scene.materials if m.name == "]glass.tga")
    assert mat.alpha_mode == "BLEND"
    node = next(n for n in scene.nodes if n.mesh is not None)
    assert node.extras["pet_global_weight"] == 1.0
    out = tmp_path / "out" / "h_ha_01.mpet"
    notes = gamemesh.save(scene, out)
    back = read(out.read_bytes(), ctx(out))
    assert back.mesh is not None and back.mesh.global_weight is not None
    assert np.all(back.mesh.global_weight == 1.0)
    assert any(n.code == "pet.texture_not_written" and "glass.tga" in n.message for n in notes)


def test_mesh_without_triangles_converts(tmp_path: Path, gltf_validator: Any) -> None:
    src = tmp_path / "zero.pet"
    src.write_bytes((Path(__file__).parent / "crashes" / "pet" / "zero-polygons.bin").read_bytes())
    report = gamemesh.convert(src, tmp_path / "zero.glb")
    assert [n.code for n in report.notes] == ["pet.mesh_empty"]
    gltf_validator(tmp_path / "zero.glb")


def test_corpus_winding_check_b19() -> None:
    """§B.19 check 1 on real files (when someone supplies them): in file space the standard
    cross product of each stored triangle agrees with its stored normals (v >= 1.1)."""
    for p in corpus_files("pet"):
        doc = read(p.read_bytes(), ctx(p))
        mesh = doc.mesh
        if mesh is None or doc.version < (1, 1) or not mesh.poly_count:
            continue
        scene = SPEC.to_scene(doc, ctx(p))
        assert mean_winding_dot(scene) > 0, p.name
