"""PMF native layer: the spec's worked files byte for byte, fixtures built by our writer, the
iterative piece tree, and bad input. Run ``python tests/test_pmf.py`` to regenerate the checked-in
fixtures in tests/fixtures/pmf/ (the test below fails when they drift from the builders)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import (
    BadMagicError,
    CorruptDataError,
    FormatError,
    TruncatedError,
    UnsupportedVersionError,
)
from gamemesh.formats.pmf import SPEC
from gamemesh.formats.pmf.document import Animation, Piece, PmfDocument
from gamemesh.formats.pmf.info import info
from gamemesh.formats.pmf.layout import make_frames, make_vertices, pack_name
from gamemesh.formats.pmf.sample import make_sample
from gamemesh.registry import Context
from helpers import (
    assert_mutations_fail_cleanly,
    assert_truncations_fail_cleanly,
    corpus_files,
    replay_crashes,
)

FIXTURES = Path(__file__).parent / "fixtures" / "pmf"


# -- fixture builders ------------------------------------------------------------------------
def tri_vertices() -> np.ndarray:
    """One counter-clockwise triangle in the XY plane facing +Z, normals +Z."""
    return make_vertices([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 0, 1]] * 3,
                         [[0, 0], [1, 0], [0, 1]])


def cube_vertices(size: float = 0.5, center: tuple[float, float, float] = (0, 0, 0)
                  ) -> np.ndarray:
    """12 counter-clockwise outward triangles with flat normals."""
    faces = []
    for axis in range(3):
        for sign in (-1.0, 1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.zeros(3)
            u[(axis + 1) % 3] = 1
            v = np.cross(n, u)
            c = n * size
            quad = [c - u * size - v * size, c + u * size - v * size,
                    c + u * size + v * size, c - u * size + v * size]
            for tri in ((0, 1, 2), (0, 2, 3)):
                faces.append([(quad[k] + np.asarray(center), n) for k in tri])
    pos = np.array([[p for p, _ in f] for f in faces]).reshape(-1, 3)
    nrm = np.array([[n for _, n in f] for f in faces]).reshape(-1, 3)
    uv = (pos[:, :2] / size + 1) / 2
    return make_vertices(pos, nrm, uv)


def build_minimal() -> bytes:
    """Spec b.5: root "root", no geometry, no children, no animations (60 bytes)."""
    root = Piece(pack_name("root"), np.zeros(3, "<f4"), make_vertices(np.zeros((0, 3))))
    doc = PmfDocument([root])
    return SPEC.write(doc, Context())


def build_triangle() -> bytes:
    """Spec b.5: one triangle piece plus one 2-frame animation (242 bytes)."""
    piece = Piece(pack_name("tri"), np.array([1, 2, 3], "<f4"), tri_vertices())
    frames = make_frames(1, [[[0, 0, 0]], [[90, 0, 0]]], [[0, 0, 0], [0, 1, 0]], [1, 3])
    doc = PmfDocument([piece], [Animation(pack_name("spin"), 1, 10, frames)])
    return SPEC.write(doc, Context())


FIGURE = [  # (name, parent, translation, geometry)
    ("body", -1, (0, 1, 0), "cube"), ("neck", 0, (0, 0.6, 0), None),
    ("head", 1, (0, 0.3, 0), "cube"), ("hat", 2, (0, 0.5, 0), "tri"),
    ("feather", 3, (0.1, 0.2, 0), "tri"), ("tip", 4, (0.0, 0.2, 0), None),
    ("arm_l", 0, (0.6, 0.4, 0), "cube"), ("hand_l", 6, (0.6, 0, 0), "cube"),
    ("arm_r", 0, (-0.6, 0.4, 0), "cube"), ("hand_r", 8, (-0.6, 0, 0), "tri"),
    ("legs", 0, (0, -0.6, 0), None),
]


def figure_doc() -> PmfDocument:
    """Depth 5, empty pieces, three clips (looping and not), keyframe subsets, event frames, a
    name whose tail holds leftovers of a longer earlier name (as Pascal leaves it)."""
    pieces: list[Piece] = []
    for i, (name, parent, t, geo) in enumerate(FIGURE):
        verts = (cube_vertices(0.2) if geo == "cube" else tri_vertices() if geo == "tri"
                 else make_vertices(np.zeros((0, 3))))
        raw = pack_name(name, tail=b"\x05leftover_of_a_longer_name" if name == "head" else b"")
        pieces.append(Piece(raw, np.asarray(t, "<f4"), verts, parent))
        if parent >= 0:
            pieces[parent].children.append(i)
    n = len(pieces)
    k = np.arange(12)[:, None]
    rot = np.zeros((12, n, 3))
    rot[:, :, 0] = 20 * np.sin(k / 12 * 2 * np.pi + np.arange(n))
    rot[:, :, 1] = -35 * np.cos(k / 12 * 2 * np.pi)
    rot[:, :, 2] = 10 * np.arange(n)[None, :] - 40
    root = np.column_stack([0.1 * np.arange(12), np.ones(12), np.zeros(12)])
    flags = np.zeros(12, np.uint8)
    flags[[0, 4, 8, 11]] = 1
    flags[[5, 9]] |= 2
    walk = Animation(pack_name("walk"), 1, 12, make_frames(n, rot, root, flags))
    wave = Animation(pack_name("wave"), 0, 24, make_frames(
        n, rot[:5] * 0.5, np.tile([0, 1, 0], (5, 1)), [1, 0, 2, 0, 1]))
    still = Animation(pack_name("pose"), 0, 1, make_frames(n, rot[:1], [[0, 1, 0]], [3]))
    return PmfDocument(pieces, [walk, wave, still])


def build_figure() -> bytes:
    return SPEC.write(figure_doc(), Context())


def build_odd() -> bytes:
    """The spec's edge cases a reader must keep: a name length byte above 31, an fps of 0, an
    empty clip, reserved flag bits set, and bytes after the last animation."""
    name = bytes([40]) + b"A" * 31
    piece = Piece(name, np.zeros(3, "<f4"), tri_vertices())
    zero_fps = Animation(pack_name("zero"), 0x81, 0, make_frames(1, [[[5, 0, 0]], [[6, 0, 0]]],
                                                                  None, [0xFD, 0]))
    empty = Animation(pack_name("empty"), 0, 30, make_frames(1, np.zeros((0, 1, 3))))
    doc = PmfDocument([piece], [zero_fps, empty], trailing=b"JUNK")
    return SPEC.write(doc, Context())


def build_deep() -> bytes:
    """A chain 300 pieces deep (every tenth with a triangle, names cut from a longer one in
    the same buffer, as Pascal leaves them) and a looping 4-frame clip with an event."""
    n = 300
    pieces = []
    for i in range(n):
        verts = tri_vertices() if i % 10 == 0 else make_vertices(np.zeros((0, 3)))
        name = pack_name(f"seg{i}", tail=b"\x0csegment_long")
        pieces.append(Piece(name, np.array([0, 0.1, 0], "<f4"), verts, i - 1,
                            [i + 1] if i + 1 < n else []))
    rot = np.zeros((4, n, 3))
    rot[:, :, 2] = np.array([0, 1, 2, 1])[:, None] * 2.5
    clip = Animation(pack_name("curl"), 1, 8, make_frames(n, rot, np.zeros((4, 3)),
                                                           [1, 0, 3, 1]))
    return SPEC.write(PmfDocument(pieces, [clip]), Context())


BUILDERS = {"minimal.pmf": build_minimal, "triangle_anim.pmf": build_triangle,
            "figure.pmf": build_figure, "odd.pmf": build_odd, "deep.pmf": build_deep}


def fixture_bytes() -> list[tuple[str, bytes]]:
    return [(n, (FIXTURES / n).read_bytes()) for n in BUILDERS]


def chain(depth: int, verts: bool = False) -> bytes:
    """``depth`` pieces each the only child of the one before (built as bytes directly)."""
    v = tri_vertices().tobytes() if verts else b""
    nv = 3 if verts else 0
    head = pack_name("p") + struct.pack("<3fi", 0, 1, 0, nv) + v
    return (b"PMF1" + (head + struct.pack("<i", 1)) * (depth - 1)
            + head + struct.pack("<i", 0) + struct.pack("<i", 0))


# -- the spec's worked files -----------------------------------------------------------------
def test_minimal_file_matches_spec_bytes() -> None:
    expected = bytes.fromhex("504D4631") + b"\x04root" + b"\0" * 27 + b"\0" * 12 + b"\0" * 12
    assert len(expected) == 60
    data = build_minimal()
    assert data == expected
    doc = SPEC.read(data, Context())
    assert [p.text for p in doc.pieces] == ["root"]
    assert doc.animations == [] and doc.trailing == b""


def test_triangle_file_matches_spec_bytes() -> None:
    # Hand-assembled from spec b.2/b.3, independent of the writer.
    tri = struct.pack("<8f", 0, 0, 0, 0, 0, 1, 0, 0) + struct.pack("<8f", 1, 0, 0, 0, 0, 1, 1, 0) \
        + struct.pack("<8f", 0, 1, 0, 0, 0, 1, 0, 1)
    piece = b"\x03tri" + b"\0" * 28 + struct.pack("<3f", 1, 2, 3) + struct.pack("<i", 3) + tri \
        + struct.pack("<i", 0)
    anim = b"\x04spin" + b"\0" * 27 + bytes([1, 10]) + struct.pack("<H", 2) \
        + b"\x01" + struct.pack("<3f", 0, 0, 0) + struct.pack("<3f", 0, 0, 0) \
        + b"\x03" + struct.pack("<3f", 0, 1, 0) + struct.pack("<3f", 90, 0, 0)
    expected = b"PMF1" + piece + struct.pack("<i", 1) + anim
    assert len(piece) == 148 and len(anim) == 86 and len(expected) == 242
    assert build_triangle() == expected
    doc = SPEC.read(expected, Context())
    a = doc.animations[0]
    assert (a.text, a.loop, a.fps, a.frame_count) == ("spin", True, 10, 2)
    assert a.frames["flags"].tolist() == [1, 3]
    assert a.frames["rot"][1, 0].tolist() == [90, 0, 0]
    assert a.frames["root"][1].tolist() == [0, 1, 0]
    assert doc.pieces[0].vertices["position"][1].tolist() == [1, 0, 0]
    assert doc.pieces[0].translation.tolist() == [1, 2, 3]


# -- fixtures ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(BUILDERS))
def test_checked_in_fixture_is_what_the_builder_makes(name: str) -> None:
    assert (FIXTURES / name).read_bytes() == BUILDERS[name]()


@pytest.mark.parametrize("name", list(BUILDERS))
def test_fixture_round_trips_byte_exact(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    assert SPEC.write(SPEC.read(data, Context()), Context()) == data


def test_figure_tree_and_names() -> None:
    doc = SPEC.read((FIXTURES / "figure.pmf").read_bytes(), Context())
    assert [p.text for p in doc.pieces] == [f[0] for f in FIGURE]
    assert [p.parent for p in doc.pieces] == [f[1] for f in FIGURE]
    assert doc.pieces[0].children == [1, 6, 8, 10]
    assert doc.pieces[2].name == b"\x04headover_of_a_longer_name" + b"\0" * 6
    assert [p.vertex_count for p in doc.pieces] == [36, 0, 36, 3, 3, 0, 36, 36, 36, 3, 0]
    assert [(a.text, a.loop, a.fps, a.frame_count) for a in doc.animations] == [
        ("walk", True, 12, 12), ("wave", False, 24, 5), ("pose", False, 1, 1)]
    assert doc.animations[0].frames["flags"].tolist() == [1, 0, 0, 0, 1, 2, 0, 0, 1, 2, 0, 1]


def test_odd_fixture_keeps_what_the_spec_leaves_open() -> None:
    ctx = Context()
    data = (FIXTURES / "odd.pmf").read_bytes()
    doc = SPEC.read(data, ctx)
    assert doc.pieces[0].text == "A" * 31  # length 40 clamped to 31
    assert doc.trailing == b"JUNK"
    assert doc.animations[0].flags == 0x81 and doc.animations[0].fps == 0
    assert doc.animations[1].frame_count == 0
    codes = [n.code for n in ctx.notes]
    assert "pmf.name_length" in codes and "pmf.trailing_bytes" in codes
    assert SPEC.write(doc, Context()) == data


def test_info_reports_version_layout_counts_and_conventions() -> None:
    doc = SPEC.read((FIXTURES / "figure.pmf").read_bytes(), Context())
    i = info(doc)
    assert i["version"] == "PMF1"
    assert (i["pieces"], i["empty_pieces"], i["max_depth"]) == (11, 3, 5)
    assert (i["vertices"], i["triangles"], i["frames"]) == (189, 63, 18)
    assert i["animations"][0] == {"name": "walk", "loop": True, "fps": 12, "frames": 12,
                                  "keyframes": 4, "events": 2}
    conv = i["conventions_assumed"]
    assert conv["angle_unit"].startswith("degrees (guessed: the largest angle is")
    assert conv["euler_order"].startswith("XYZ")
    assert conv["winding"].startswith("counter-clockwise")


def test_registry_sniffs_pmf_by_content() -> None:
    data = (FIXTURES / "minimal.pmf").read_bytes()
    assert gamemesh.sniff(data) == "pmf"
    assert not SPEC.sniff(b"PSMF0015" + b"\0" * 56)
    assert SPEC.sniff(b"PMF2" + b"\0" * 60)


# -- bad input ---------------------------------------------------------------------------------
def test_other_version_digit_is_unsupported() -> None:
    data = b"PMF2" + build_minimal()[4:]
    with pytest.raises(UnsupportedVersionError, match="unsupported PMF version 'PMF2'"):
        SPEC.read(data, Context())


def test_bad_magic() -> None:
    with pytest.raises(BadMagicError):
        SPEC.read(b"PSMF" + build_minimal()[4:], Context())


def _with_vertex_count(n: int) -> bytes:
    data = bytearray(build_triangle())
    struct.pack_into("<i", data, 4 + 44, n)
    return bytes(data)


def test_vertex_count_not_multiple_of_three_is_an_error_by_default() -> None:
    data = bytearray(build_triangle())
    # Two vertices instead of three: cut the third out and fix the count.
    cut = bytes(data[:48 + 4 + 64]) + bytes(data[48 + 4 + 96:])
    cut = bytearray(cut)
    struct.pack_into("<i", cut, 48, 2)
    with pytest.raises(CorruptDataError, match="multiple of 3") as e:
        SPEC.read(bytes(cut), Context())
    assert e.value.offset == 48 and e.value.actual == 2
    ctx = Context(options={"partial_triangles": "keep"})
    doc = SPEC.read(bytes(cut), ctx)
    assert doc.pieces[0].vertex_count == 2
    assert any(n.code == "pmf.partial_triangle" for n in ctx.notes)
    assert SPEC.write(doc, Context()) == bytes(cut)
    scene = SPEC.to_scene(doc, Context())
    assert scene.nodes[0].mesh is None  # no whole triangle left


def test_negative_counts_are_corrupt() -> None:
    with pytest.raises(CorruptDataError, match="numVertices"):
        SPEC.read(_with_vertex_count(-3), Context())
    data = bytearray(build_minimal())
    struct.pack_into("<i", data, 52, -1)  # numChildren
    with pytest.raises(CorruptDataError, match="numChildren"):
        SPEC.read(bytes(data), Context())
    data = bytearray(build_minimal())
    struct.pack_into("<i", data, 56, -7)  # numAnimations
    with pytest.raises(CorruptDataError, match="numAnimations"):
        SPEC.read(bytes(data), Context())


def test_huge_counts_fail_before_allocating() -> None:
    with pytest.raises(TruncatedError, match="numVertices"):
        SPEC.read(_with_vertex_count(0x7FFFFFFF - 1), Context())


def test_hundred_thousand_nested_pieces_read_without_recursion() -> None:
    data = chain(100_000)
    doc = SPEC.read(data, Context())
    assert len(doc.pieces) == 100_000
    assert doc.pieces[-1].parent == 99_998 and doc.pieces[99_998].children == [99_999]
    assert info(doc)["max_depth"] == 99_999
    assert SPEC.write(doc, Context()) == data
    scene = SPEC.to_scene(doc, Context())
    assert len(scene.nodes) == 100_000 and scene.nodes[5].children == [6]
    back = SPEC.from_scene(scene, Context())
    assert len(back.pieces) == 100_000 and back.pieces[-1].parent == 99_998


def test_deep_file_that_lies_about_its_children_is_rejected_cleanly() -> None:
    data = bytearray(chain(100_000))
    struct.pack_into("<i", data, len(data) - 8, 1)  # the deepest piece claims a child
    with pytest.raises(TruncatedError):
        SPEC.read(bytes(data), Context())


def test_trailing_bytes_are_kept_and_noted() -> None:
    ctx = Context()
    doc = SPEC.read(build_minimal() + b"\x01\x02", ctx)
    assert doc.trailing == b"\x01\x02"
    assert [n.code for n in ctx.notes] == ["pmf.trailing_bytes"]


@pytest.mark.parametrize("name", list(BUILDERS))
def test_truncations_fail_cleanly(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    assert assert_truncations_fail_cleanly(SPEC, data) > 0


def test_mutations_fail_cleanly() -> None:
    assert_mutations_fail_cleanly(SPEC, (FIXTURES / "figure.pmf").read_bytes(), count=2000)
    assert_mutations_fail_cleanly(SPEC, (FIXTURES / "odd.pmf").read_bytes(), count=500, seed=2)
    assert_mutations_fail_cleanly(SPEC, chain(40, verts=True), count=500, seed=3)
    assert_mutations_fail_cleanly(SPEC, (FIXTURES / "deep.pmf").read_bytes(), count=200, seed=4)


def test_deep_fixture() -> None:
    doc = SPEC.read((FIXTURES / "deep.pmf").read_bytes(), Context())
    assert info(doc)["max_depth"] == 299 and info(doc)["empty_pieces"] == 270
    assert doc.pieces[12].name == b"\x05seg12nt_long" + b"\0" * 19
    assert doc.animations[0].frames["rot"][2, 299].tolist() == [0, 0, 5]


def test_crash_inputs_replay_cleanly() -> None:
    replay_crashes(SPEC)


def test_corpus_round_trips() -> None:
    files = corpus_files("pmf", "*.pmf")
    for f in files:
        data = f.read_bytes()
        assert SPEC.write(SPEC.read(data, Context()), Context()) == data, f.name


# -- benchmark sample --------------------------------------------------------------------------
def test_make_sample_is_a_valid_file_of_about_the_size() -> None:
    data = make_sample(2_000_000)
    assert 1_900_000 < len(data) <= 2_000_000
    doc = SPEC.read(data, Context())
    assert len(doc.pieces) == 15 and len(doc.animations) == 2
    assert SPEC.write(doc, Context()) == data
    SPEC.to_scene(doc, Context()).validate()


def test_errors_are_format_errors() -> None:
    with pytest.raises(FormatError):
        gamemesh.load(b"PMF1\x03", format="pmf")


if __name__ == "__main__":  # regenerate the checked-in fixtures
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for fname, build in BUILDERS.items():
        (FIXTURES / fname).write_bytes(build())
        print(fname, len(build()))


def random_doc(rng: np.random.Generator, n: int) -> PmfDocument:
    """A random tree (each piece's parent drawn among the earlier ones, then put in pre-order),
    random geometry, names with random tails, and random clips with random flags."""
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    kids: list[list[int]] = [[] for _ in range(n)]
    for i in range(1, n):
        kids[parent[i]].append(i)
    order, stack = [], [0]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids[i]))
    new = {old: k for k, old in enumerate(order)}
    pieces = []
    for old in order:
        nv = 3 * int(rng.integers(0, 4))
        verts = np.frombuffer(rng.bytes(32 * nv), dtype=make_vertices(np.zeros((0, 3))).dtype)
        tail = rng.bytes(32)
        name = pack_name(f"piece{old}"[: int(rng.integers(0, 10))], tail=tail)
        pieces.append(Piece(name, np.frombuffer(rng.bytes(12), "<f4").copy(), verts,
                            new[parent[old]] if parent[old] >= 0 else -1,
                            [new[c] for c in kids[old]]))
    anims = []
    for a in range(int(rng.integers(0, 4))):
        f = int(rng.integers(0, 6))
        frames = np.frombuffer(rng.bytes((13 + 12 * n) * f),
                               dtype=make_frames(n, np.zeros((0, n, 3))).dtype)
        anims.append(Animation(pack_name(f"a{a}", rng.bytes(32)), int(rng.integers(0, 256)),
                               int(rng.integers(0, 256)), frames))
    return PmfDocument(pieces, anims, trailing=rng.bytes(int(rng.integers(0, 3))))


def test_random_documents_round_trip() -> None:
    rng = np.random.default_rng(5)
    for _ in range(60):
        doc = random_doc(rng, int(rng.integers(1, 40)))
        data = SPEC.write(doc, Context())
        back = SPEC.read(data, Context())
        assert [p.parent for p in back.pieces] == [p.parent for p in doc.pieces]
        assert [p.children for p in back.pieces] == [p.children for p in doc.pieces]
        assert [p.name for p in back.pieces] == [p.name for p in doc.pieces]
        assert [a.frames.tobytes() for a in back.animations] == \
            [a.frames.tobytes() for a in doc.animations]
        assert SPEC.write(back, Context()) == data


def test_writer_refuses_a_tree_that_is_not_in_pre_order() -> None:
    doc = figure_doc()
    doc.pieces[0].children = [6, 1, 8, 10]
    with pytest.raises(ValueError, match="pre-order"):
        SPEC.write(doc, Context())


def test_cli_info_says_which_conventions_are_assumed(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    import json

    from gamemesh.cli import main

    assert main(["info", "--json", str(FIXTURES / "odd.pmf")]) == 0
    out = json.loads(capsys.readouterr().out)
    native = out["native"]
    assert native["version"] == "PMF1" and native["trailing_bytes"] == 4
    assert "cannot be told" in native["conventions_assumed"]["angle_unit"]
    assert main(["info", str(FIXTURES / "odd.pmf").replace("odd", "missing")]) == 1


def test_read_native_and_write_native(tmp_path: Path) -> None:
    doc = gamemesh.read_native(FIXTURES / "figure.pmf")
    assert isinstance(doc, PmfDocument)
    gamemesh.write_native(doc, tmp_path / "copy.pmf")
    assert (tmp_path / "copy.pmf").read_bytes() == (FIXTURES / "figure.pmf").read_bytes()
    with pytest.raises(UnsupportedVersionError):
        gamemesh.load(b"PMF9" + b"\0" * 60)
