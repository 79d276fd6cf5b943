"""PTX textures: the header layout byte for byte, 24 and 32 bpp, kept trailing bytes, PTX -> PNG
(straight from the document) and PNG -> PTX (through the image format's scene), and bad input.
Run ``python tests/test_ptx.py`` to regenerate tests/fixtures/ptx/."""

from __future__ import annotations

import io
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.errors import LimitError, UnsupportedVersionError
from gamemesh.formats.ptx import SPEC
from gamemesh.formats.ptx.document import PtxDocument
from gamemesh.formats.ptx.read import read, sniff
from gamemesh.formats.ptx.write import write
from gamemesh.registry import Context
from gamemesh.scene import Image, Scene
from helpers import (
    assert_mutations_fail_cleanly,
    assert_truncations_fail_cleanly,
    corpus_files,
    replay_crashes,
)

FIXTURES = Path(__file__).parent / "fixtures" / "ptx"


def rgba(h: int = 3, w: int = 5, alpha: int | None = None) -> np.ndarray:
    px = np.zeros((h, w, 4), np.uint8)
    px[..., 0] = np.arange(w)[None, :] * 40 + 3
    px[..., 1] = np.arange(h)[:, None] * 70 + 5
    px[..., 2] = 200
    px[..., 3] = 255 if alpha is None else (np.arange(w)[None, :] * 50 + alpha) % 256
    return px


def doc_of(px: np.ndarray, bpp: int, trailing: bytes = b"") -> PtxDocument:
    order = [2, 1, 0, 3][: bpp // 8]
    return PtxDocument(px.shape[1], px.shape[0], bpp, np.ascontiguousarray(px[..., order]),
                  trailing=trailing)


BUILDERS = {
    "bgr24": lambda: doc_of(rgba(), 24),
    "bgra32": lambda: doc_of(rgba(alpha=7), 32),
    "trailing32": lambda: doc_of(rgba(4, 4, alpha=0), 32, trailing=b"\x01\x02\x03\x04mip"),
}
FILES = {name: write(make()) for name, make in BUILDERS.items()}


def ctx(**options: Any) -> Context:
    return Context(None, options)


def test_header_layout_exact_bytes() -> None:
    """Spec b.9: u16 id, u32 length (whole chunk), u32 width, height, bpp, then B, G, R rows."""
    px = rgba(1, 2)
    want = struct.pack("<HIIII", 7, 18 + 6, 2, 1, 24) + bytes(
        [200, 5, 3, 200, 5, 43])
    assert FILES["bgr24"][:18] == struct.pack("<HIIII", 7, 18 + 45, 5, 3, 24)
    assert write(doc_of(px, 24)) == want
    back = read(want, ctx())
    np.testing.assert_array_equal(back.rgba(), px)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_fixture_round_trip_and_files(name: str) -> None:
    data = FILES[name]
    doc = read(data, ctx())
    assert write(doc) == data
    assert sniff(data[:64])
    path = FIXTURES / f"{name}.ptx"
    assert path.read_bytes() == data, "run python tests/test_ptx.py"


def test_decoded_pixels() -> None:
    np.testing.assert_array_equal(read(FILES["bgra32"], ctx()).rgba(), rgba(alpha=7))
    opaque = read(FILES["bgr24"], ctx()).rgba()
    assert np.all(opaque[..., 3] == 255)
    np.testing.assert_array_equal(opaque[..., :3], rgba()[..., :3])


def test_trailing_bytes_and_odd_length_kept() -> None:
    doc = read(FILES["trailing32"], ctx())
    assert doc.trailing == b"\x01\x02\x03\x04mip"
    info = SPEC.info(doc)
    assert info["trailing_bytes"] == 7 and info["chunk_length_matches_file"] is True
    odd = bytearray(FILES["bgr24"])
    struct.pack_into("<I", odd, 2, 9999)
    c = ctx()
    doc = read(bytes(odd), c)
    assert doc.chunk_length == 9999 and write(doc) == bytes(odd)
    assert any(n.code == "ptx.chunk_length" for n in c.notes)
    assert SPEC.info(doc)["chunk_length_matches_file"] is False


def test_info() -> None:
    info = SPEC.info(read(FILES["bgra32"], ctx()))
    assert (info["width"], info["height"], info["bits_per_pixel"], info["layout"]) == (
        5, 3, 32, "BGRA")


def test_unsupported_bpp_and_sizes() -> None:
    bad = bytearray(FILES["bgr24"])
    struct.pack_into("<I", bad, 14, 16)
    with pytest.raises(UnsupportedVersionError, match="bits_per_pixel"):
        read(bytes(bad), ctx())
    assert not sniff(bytes(bad))
    struct.pack_into("<II", bad, 6, 0, 3)
    assert not sniff(bytes(bad))


def test_ptx_to_png_export(tmp_path: Path) -> None:
    for name, mode in (("bgr24", "RGB"), ("bgra32", "RGBA")):
        src = tmp_path / f"{name}.ptx"
        src.write_bytes(FILES[name])
        report = gamemesh.convert(src, tmp_path / f"{name}.png")
        assert report.target_format == "png"
        with PILImage.open(tmp_path / f"{name}.png") as im:
            assert im.mode == mode
            got = np.asarray(im.convert("RGBA"))
        want = read(FILES[name], ctx()).rgba()
        np.testing.assert_array_equal(got, want)


def _png(px: np.ndarray) -> bytes:
    buf = io.BytesIO()
    PILImage.fromarray(px, "RGBA").save(buf, "PNG")
    return buf.getvalue()


def test_png_to_ptx_picks_bpp_and_option_forces(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(_png(rgba(alpha=9)))
    gamemesh.convert(tmp_path / "a.png", tmp_path / "a.ptx")
    doc = read((tmp_path / "a.ptx").read_bytes(), ctx())
    assert doc.bpp == 32
    np.testing.assert_array_equal(doc.rgba(), rgba(alpha=9))
    (tmp_path / "b.png").write_bytes(_png(rgba()))
    gamemesh.convert(tmp_path / "b.png", tmp_path / "b.ptx")
    assert read((tmp_path / "b.ptx").read_bytes(), ctx()).bpp == 24
    gamemesh.convert(tmp_path / "b.png", tmp_path / "c.ptx", ptx_bpp=32)
    forced = read((tmp_path / "c.ptx").read_bytes(), ctx())
    assert forced.bpp == 32 and np.all(forced.pixels[..., 3] == 255)


def test_ptx_png_ptx_round_trip(tmp_path: Path) -> None:
    src = tmp_path / "t.ptx"
    src.write_bytes(FILES["bgra32"])
    gamemesh.convert(src, tmp_path / "t.png")
    gamemesh.convert(tmp_path / "t.png", tmp_path / "u.ptx")
    assert (tmp_path / "u.ptx").read_bytes() == FILES["bgra32"]


def test_to_scene_quad_and_glb(tmp_path: Path, gltf_validator: Any) -> None:
    scene = SPEC.to_scene(read(FILES["bgra32"], ctx()), ctx())
    scene.validate()
    assert len(scene.images) == 1 and scene.materials[0].alpha_mode == "BLEND"
    np.testing.assert_array_equal(scene.images[0].pixels, rgba(alpha=7))
    assert scene.meshes[0].primitives[0].vertex_count == 4
    src = tmp_path / "q.ptx"
    src.write_bytes(FILES["bgr24"])
    gamemesh.convert(src, tmp_path / "q.glb")
    gltf_validator(tmp_path / "q.glb")


def test_from_scene_first_image_with_pixels() -> None:
    scene = Scene(images=[Image(name="missing", uri="x.ptx"),
                          Image(name="a", pixels=rgba()), Image(name="b", pixels=rgba(2, 2))])
    c = ctx()
    doc = SPEC.from_scene(scene, c)
    assert (doc.width, doc.height, doc.bpp) == (5, 3, 24)
    assert any(n.code == "ptx.first_image_only" for n in c.notes)
    with pytest.raises(LimitError):
        SPEC.from_scene(Scene(images=[Image(name="none")]), ctx())


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_bad_input(name: str) -> None:
    assert assert_truncations_fail_cleanly(SPEC, FILES[name]) > 0
    assert_mutations_fail_cleanly(SPEC, FILES[name], count=700, seed=6)


def test_crash_inputs_replay_cleanly() -> None:
    replay_crashes(SPEC)


def test_corpus_round_trip() -> None:
    for f in corpus_files("ptx", "*.ptx"):
        assert write(read(f.read_bytes(), ctx())) == f.read_bytes()


def test_make_sample() -> None:
    data = SPEC.make_sample(1_000_000)
    assert 900_000 < len(data) <= 1_000_000
    assert write(read(data, ctx())) == data


if __name__ == "__main__":  # pragma: no cover
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for n, d in FILES.items():
        (FIXTURES / f"{n}.ptx").write_bytes(d)
