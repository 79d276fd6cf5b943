"""PET reading: every kind and version, the fields kept for the round trip, the layout and
version rules of §B.17, the MESH vertex and BONE records against plain record walks, and the
files around a model (a character's parts, its textures)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from tests.pet_fixtures import KINDS, VERSIONS, b18_expected, ctx, fixture

from gamemesh.errors import UnsupportedVersionError
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.document import corner_records
from gamemesh.formats.pet.info import info
from gamemesh.formats.pet.read import read, sniff
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import sniff as registry_sniff


@pytest.mark.parametrize(("kind", "version", "escape"),
                         list(itertools.product(KINDS, VERSIONS, (False, True))))
def test_every_kind_and_version_round_trips(kind: str, version: tuple[int, int],
                                            escape: bool) -> None:
    data = fixture(kind, version, escape)
    doc = read(data, ctx(f"m.{kind}"))
    assert doc.kind == kind and doc.version == version
    assert write(doc) == data
    facts = info(doc)
    assert facts["bones"] == (300 if escape else 5)
    assert facts["bone_layout"] == ("names only (apet)" if kind == "apet" else "matrices")
    if kind in ("pet", "mpet"):
        assert facts["vertices"] == 30 and facts["triangles"] == 48
        assert facts["max_influences"] == 5
        assert facts["uv_sets"] == (2 if version >= (1, 2) else 1)
        assert facts["mesh_layout"] == ("skin list (mpet)" if kind == "mpet" else "plain")
    if version == (1, 0):
        assert "VERS" not in facts["sections"]
    assert sniff(data[:64])
    assert registry_sniff(data[:64], f"x.{kind}") is SPEC


def test_escape_and_raw_fields_are_kept() -> None:
    data = fixture("pet", (1, 3), escape=True)
    doc = read(data, ctx("e.pet"))
    bones = doc.bones
    assert bones is not None and bones.wide_count  # 300 bones: 00 + u16
    assert bones.parents[299] == 298 and bones.parents[1] == 0 and bones.parent_wide[1]
    mesh = doc.mesh
    assert mesh is not None
    assert 299 in mesh.inf_bone and bool(mesh.inf_wide[mesh.inf_bone == 299].all())
    assert b"\xfe\x2b\x01" in data  # FE + i16 299
    anim = doc.anim
    assert anim is not None and anim.tracks[-1].bone == 299 and anim.tracks[-1].wide
    assert doc.textures[0].name == "item1_01.jpg"
    assert doc.textures[0].name_raw[12:17] == b"\0\xcc\xcc\x13\x37"  # garbage after the NUL
    assert doc.textures[2].name == "\ud55c\uae00.png"  # CP949


def test_varying_uv_set_counts_round_trip() -> None:
    doc = build("pet", (1, 2))
    mesh = doc.mesh
    assert mesh is not None
    nuv = np.full(len(mesh.corner_vertex), 2, np.uint8)
    nuv[::5] = 1
    mesh.corners = corner_records(mesh.corner_vertex, mesh.corner_normal, mesh.corner_uv, nuv)
    mesh.corner_uv[nuv == 1, 1] = 0
    data = write(doc)
    back = read(data, ctx("v.pet"))
    assert back.mesh is not None and np.array_equal(back.mesh.corner_nuv, nuv)
    assert np.array_equal(back.mesh.corner_uv, mesh.corner_uv)
    assert write(back) == data


def test_wrong_kind_is_detected_by_exact_consumption() -> None:
    data = fixture("apet", (1, 3))
    c = ctx("m.pet")
    doc = read(data, c)
    assert doc.bones is not None and doc.bones.matrices is None
    assert any(n.code == "pet.bone_layout" for n in c.notes)
    assert write(doc) == data
    mdata = fixture("mpet", (1, 2))
    c = ctx(None, kind="pet")
    mdoc = read(mdata, c)
    assert mdoc.mesh is not None and mdoc.mesh.skins is not None
    assert write(mdoc) == mdata


def test_unsupported_version_and_unknown_section() -> None:
    data = bytearray(b18_expected())
    data[9] = 2
    with pytest.raises(UnsupportedVersionError, match=r"2\.3"):
        read(bytes(data), ctx("x.pet"))
    extra = b18_expected() + b"ZZZZ" + (3).to_bytes(4, "little") + b"abc" + b"\x01\x02"
    c = ctx("x.pet")
    doc = read(extra, c)
    assert doc.sections[-1].fourcc == b"ZZZZ" and doc.tail == b"\x01\x02"
    assert write(doc) == extra
    with pytest.raises(UnsupportedVersionError):
        read(b18_expected(), ctx("x.pet", kind="qpet"))


def test_make_sample_is_readable_and_sized() -> None:
    assert SPEC.make_sample is not None
    data = SPEC.make_sample(400_000)
    assert 250_000 < len(data) < 600_000
    doc = read(data, ctx("s.pet"))
    assert write(doc) == data
    assert doc.mesh is not None and doc.mesh.vertex_count > 1000


def test_star_import_gives_the_public_names() -> None:
    """The package exports its SPEC (every name in ``__all__`` exists; the SPEC's functions
    load their modules on first use, so importing the package loads none of them)."""
    names: dict[str, object] = {}
    exec("from gamemesh.formats.pet import *", names)
    assert {"SPEC"} <= set(names)
    spec = names["SPEC"]
    assert spec.read.resolved is read  # type: ignore[attr-defined]
    assert spec.write.resolved is write  # type: ignore[attr-defined]


# -- MESH vertex records -------------------------------------------------------------------------
def _vertex_list(rng: np.random.Generator, nvert: int, head: int, longest: int = 40,
                 escaped: float = 0.15) -> bytes:
    """Records with 1 to ``longest`` pairs (weights summing to 255), plain, missing (0xFF) and
    escaped (0xFE + i16, a share ``escaped`` of them) ids, pads after single pairs; random
    bytes for positions."""
    out = bytearray()
    for _ in range(nvert):
        out += rng.integers(0, 256, head, dtype=np.uint8).tobytes()
        k = int(rng.choice([1, 2, 3, 4, 5, 8, longest], p=[.3, .2, .15, .1, .1, .1, .05]))
        w = rng.integers(0, 255 // k + 1, k - 1) if k > 1 else np.zeros(0, np.int64)
        for weight in [*w.tolist(), 255 - int(w.sum())]:
            kind = rng.random()
            if kind < escaped:
                bone = b"\xfe" + int(rng.integers(-300, 30000)).to_bytes(2, "little", signed=True)
            elif kind < escaped + 0.1:
                bone = b"\xff"
            else:
                bone = bytes([int(rng.integers(0, 254))])
            out += bytes([weight]) + bone
        if k == 1:
            out += rng.integers(0, 256, 2, dtype=np.uint8).tobytes()
    return bytes(out)


def _reference_vertices(data: bytes, nvert: int, head: int) -> tuple[object, ...]:
    """The list read record by record in plain Python (§B.8): the fields padded to the
    largest pair count (weight 0, bone -1), the bytes used; or the vertex that runs past the
    end and where it starts."""
    p, rows = 0, []
    for v in range(nvert):
        start, pairs, total = p, [], 0
        p += head
        while total < 255 and p + 2 <= len(data):
            wide = data[p + 1] == 0xFE
            bone = (int.from_bytes(data[p + 2:p + 4], "little", signed=True) if wide
                    else -1 if data[p + 1] == 0xFF else data[p + 1])
            pairs.append((data[p], bone, wide))
            total += data[p]
            p += 4 if wide else 2
        pad = data[p:p + 2] if len(pairs) == 1 else b"\0\0"
        p += 2 if len(pairs) == 1 else 0
        if total < 255 or p > len(data):
            return ("error", f"vertices[{v}].weights", start)
        rows.append((data[start:start + head], pairs, pad))
    width = max((len(r[1]) for r in rows), default=0)
    fill = [(0, -1, False)] * width
    table = [(r[1] + fill)[:width] for r in rows]
    return ([r[0] for r in rows], [len(r[1]) for r in rows], table, [r[2] for r in rows], p)


def _read_vertices(data: bytes, nvert: int, head: int) -> tuple[object, ...]:
    from gamemesh.binary import Reader
    from gamemesh.errors import TruncatedError
    from gamemesh.formats.pet.vertices import vertex_records

    r = Reader(data, "pet")
    try:
        with r.field("vertices"):
            got = vertex_records(r, nvert, head)
    except TruncatedError as e:
        return ("error", e.field, e.offset)
    pos = got["positions"].tobytes()
    if head == 16:
        pos = b"".join(a + b for a, b in zip(
            [pos[i:i + 12] for i in range(0, len(pos), 12)],
            [got["global"].tobytes()[i:i + 4] for i in range(0, 4 * nvert, 4)], strict=True))
    heads = [pos[i:i + head] for i in range(0, len(pos), head)]
    table = [list(zip(w, b, x, strict=True)) for w, b, x in zip(
        got["weight"].tolist(), got["bone"].tolist(), got["wide"].tolist(), strict=True)]
    return (heads, got["count"].tolist(), table, [bytes(p) for p in got["pad"]], r.tell())


@pytest.mark.parametrize("head", [12, 16])
def test_vertex_records_match_a_record_walk(head: int) -> None:
    """Lists of a few to thousands of records (more than 32 pairs, escaped ids, single pairs
    and pads), whole, with bytes after them, changed and cut: the walk's fields, bytes used and
    errors (which vertex, where it starts)."""
    rng = np.random.default_rng(61 + head)
    errors = walked = 0
    for trial in range(100):
        nvert = int(rng.choice([0, 1, 3, 30, 300, 1200]))
        data = _vertex_list(rng, nvert, head)
        if trial % 4 == 1:
            data += rng.integers(0, 256, int(rng.integers(1, 2000)), dtype=np.uint8).tobytes()
        elif trial % 4 == 2 and data:
            m = bytearray(data)
            for at in rng.integers(0, len(m), 3):
                m[at] = int(rng.choice([0, 1, 0xFE, 0xFF, 255]))
            data = bytes(m)
        elif trial % 4 == 3:
            data = data[:int(rng.integers(0, len(data) + 1))]
        want = _reference_vertices(data, nvert, head)
        assert _read_vertices(data, nvert, head) == want, trial
        errors += want[0] == "error"
        walked += want[0] != "error" and max(want[1], default=0) > 32  # type: ignore[arg-type]
    assert errors > 12 and walked > 3


def test_vertex_records_of_a_long_list_with_late_escapes() -> None:
    """A list over several chunks of the search, whose escaped ids start past the first chunk
    (the search reads an escape as weight 255 until the chain meets one), whole and cut inside
    its last record: the walk's fields and bytes used, and the walk's error."""
    rng = np.random.default_rng(71)
    data = (_vertex_list(rng, 26000, 12, longest=30, escaped=0.0)
            + _vertex_list(rng, 4000, 12, longest=30, escaped=0.05))
    want = _reference_vertices(data, 30000, 12)
    assert any(x for row in want[2][26000:] for _, _, x in row)  # type: ignore[index]
    assert _read_vertices(data, 30000, 12) == want
    cut = data[:-3]
    assert _read_vertices(cut, 30000, 12) == _reference_vertices(cut, 30000, 12)


def test_vertex_records_of_tiny_weights_and_escapes() -> None:
    """Lists whose records sit among zero weights and 0xFE bytes (walks from every offset are
    long and meet escapes): the walk's answer."""
    rng = np.random.default_rng(67)
    for trial in range(60):
        nvert = int(rng.integers(1, 60))
        body = bytearray()
        for _ in range(nvert):
            k = int(rng.integers(1, 36))
            body += bytes(12)
            for i in range(k):
                weight = 255 if i == k - 1 else int(rng.choice([0, 0, 1, 2]))
                body += bytes([weight]) + (b"\xfe\xfe\xfe" if rng.random() < 0.3 else b"\x00")
            body += b"\xfe\x00" if k == 1 else b""
        data = bytes(body)
        assert _read_vertices(data, nvert, 12) == _reference_vertices(data, nvert, 12), trial


# -- BONE records --------------------------------------------------------------------------------
def _bone_section(rng: np.random.Generator, n: int, tail: int) -> bytes:
    """A BONE payload: the count (u8, or 00 + u16), then ``n`` records with names of any
    bytes but NUL, ids plain, none (0xFF) or escaped (0xFE + i16), and ``tail`` random bytes."""
    out = bytearray([n] if 0 < n < 256 and rng.random() < 0.7 else [0, n & 255, n >> 8])
    for _ in range(n):
        out += bytes(rng.choice([0x41, 0x62, 0xFE, 0xFF, 0x80], int(rng.integers(0, 12))).astype(
            np.uint8)) + b"\0"
        kind = rng.random()
        if kind < 0.2:
            out += b"\xfe" + int(rng.integers(-400, 400)).to_bytes(2, "little", signed=True)
        else:
            out += b"\xff" if kind < 0.3 else bytes([int(rng.integers(0, 254))])
        out += rng.integers(0, 256, tail, dtype=np.uint8).tobytes()
    return bytes(out)


def _reference_bones(data: bytes, tail: int) -> tuple[object, ...]:
    n, p = data[0], 1
    if n == 0 and len(data) >= 3:
        n, p = int.from_bytes(data[1:3], "little"), 3
    if n * (2 + tail) > len(data) - p:
        return ("error", "BONE.count")
    names, parents, bodies = [], [], []
    for i in range(n):
        k = data.find(b"\0", p)
        if k < 0:
            return ("error", f"BONE.bones[{i}].name", p)
        names.append(data[p:k])
        if k + 2 > len(data):
            return ("error", f"BONE.bones[{i}].parent", k + 1)
        wide = data[k + 1] == 0xFE
        if wide and k + 4 > len(data):
            return ("error", f"BONE.bones[{i}].parent", k + 2)
        parents.append((int.from_bytes(data[k + 2:k + 4], "little", signed=True), True) if wide
                       else (-1 if data[k + 1] == 0xFF else data[k + 1], False))
        p = k + (4 if wide else 2)
        if p + tail > len(data):
            field = "matrix" if p + 48 > len(data) else "extra"
            return ("error", f"BONE.bones[{i}].{field}", p if field == "matrix" else p + 48)
        bodies.append(data[p:p + tail])
        p += tail
    return names, parents, b"".join(bodies), p


@pytest.mark.parametrize(("version", "tail"), [((1, 0), 0), ((1, 2), 48), ((1, 3), 52)])
def test_bone_records_match_a_record_walk(version: tuple[int, int], tail: int) -> None:
    """Names with 0xFE and 0xFF bytes, escaped, plain and missing parents, wide counts, bytes
    after the records, changed and cut sections: the walk's records and errors (field and
    offset)."""
    import importlib

    from gamemesh.binary import Reader
    from gamemesh.errors import FormatError

    read_mod = importlib.import_module("gamemesh.formats.pet.read")
    rng = np.random.default_rng(83 + tail)
    errors = 0
    for trial in range(400):
        data = _bone_section(rng, int(rng.choice([0, 1, 2, 5, 40, 300])), tail)
        if trial % 3 == 1:
            m = bytearray(data)
            for at in rng.integers(1, len(m), 3) if len(m) > 1 else []:
                m[at] = int(rng.choice([0, 0xFE, 0xFF, 7]))
            data = bytes(m)
        elif trial % 3 == 2:
            data = data[:int(rng.integers(1, len(data) + 1))]
        want = _reference_bones(data, tail)
        r = Reader(data, "pet")
        try:
            with r.field("BONE"):
                b = read_mod._read_bones(r, version, apet=tail == 0)
        except FormatError as e:
            errors += 1
            assert want[:2] == ("error", e.field) and want[2:] in ((), (e.offset,)), trial
            continue
        matrices = b"" if b.matrices is None else b.matrices.tobytes()
        extra = b"" if b.extra is None else b.extra.tobytes()
        bodies = b"".join(matrices[48 * i:48 * i + 48] + extra[4 * i:4 * i + 4]
                          for i in range(b.count))
        assert (b.names, list(zip(b.parents, b.parent_wide, strict=True)), bodies,
                r.tell()) == want, trial
    assert errors > 50


# -- the files around a model --------------------------------------------------------------------
def test_character_files_follow_a_path_listing(tmp_path: Path) -> None:
    """The name-prefix rule over one listing: case-insensitive prefix and extension, folders
    and broken or looping links left out, sorted as paths."""
    from gamemesh.formats.pet.files import character_files

    for name in ("Tube_a.MPET", "tube_b.apet", "tube_z.bpet", "tube_.mpet", "tube_d.txt",
                 "other_x.mpet", "tube_c.mpet.bak", "TUBE_e.Apet", "tube_00.mpet"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / "tube_dir.mpet").mkdir()
    (tmp_path / "tube_gone.apet").symlink_to(tmp_path / "missing")
    (tmp_path / "tube_loop.apet").symlink_to(tmp_path / "tube_loop.apet")
    (tmp_path / "tube_link.mpet").symlink_to(tmp_path / "tube_b.apet")
    for main in ("tube_z.bpet", "Tube_a.MPET", "notube.bpet", "x_y.txt"):
        path = tmp_path / main
        want = [] if "_" not in main.lower() or not main.lower().endswith(
            (".pet", ".apet", ".bpet", ".mpet")) else [
            p for p in sorted(tmp_path.iterdir()) if p.is_file()
            and p.name.lower().startswith(main.lower().split("_", 1)[0] + "_")
            and p.suffix.lower() in (".bpet", ".mpet", ".apet") and p.name != main]
        assert character_files(path) == want


def test_shared_texture_folders_up_the_tree_follow_changes(tmp_path: Path) -> None:
    """The shared folders in the model's folder and up to five above it, nearest first: any
    case, links to folders, not files or broken links with their names; a folder made since
    the last load is found by the next one (nothing is kept between loads)."""
    from gamemesh.formats.pet.files import TextureFinder

    top = tmp_path / "a"
    model = top / "b" / "c" / "d" / "e" / "m"  # the walk: m, e, d, c, b, a
    model.mkdir(parents=True)
    (top / "Z_Common").mkdir()
    (tmp_path / "misc").mkdir()  # a seventh folder up: not searched
    (model / "NPC").write_bytes(b"x")  # a file with a shared folder's name
    (model / "other").mkdir()
    (model / "skybox").symlink_to(model / "other")
    (model / "Ppl").symlink_to(model / "nowhere")
    assert list(TextureFinder(model)._shared_roots()) == [model / "skybox", top / "Z_Common"]
    (model.parent / "texture_dds").mkdir()
    (model.parent / "texture_dds" / "x.png").write_bytes(b"png")
    finder = TextureFinder(model)
    assert list(finder._shared_roots()) == [model / "skybox", model.parent / "texture_dds",
                                            top / "Z_Common"]
    assert finder.find("[X.PNG") == model.parent / "texture_dds" / "x.png"


def test_a_texture_added_between_loads_is_found(tmp_path: Path) -> None:
    from PIL import Image as PILImage

    import gamemesh

    model = tmp_path / "a.pet"
    model.write_bytes(write(build("pet", (1, 3))))
    first = gamemesh.load(model)
    assert any(n.code == "pet.texture_missing" and "item1_01" in n.message for n in first.notes)
    PILImage.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "item1_01.jpg")
    second = gamemesh.load(model)
    assert not any(n.code == "pet.texture_missing" and "item1_01" in n.message
                   for n in second.notes)
