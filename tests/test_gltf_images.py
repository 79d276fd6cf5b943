"""glTF images stay encoded on load (``pixels`` None, ``data`` the file's bytes) when they are a
whole PNG or JPEG; every writer that needs pixels decodes them then, to the same bytes as a
scene whose images were decoded on load."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.formats.image.codec import _quad_scene
from gamemesh.formats.ptx.read import read as read_ptx
from gamemesh.registry import Context, by_name
from gamemesh.scene import Image, Scene
from gamemesh.textures import decode_image

W, H = 53, 37


def _pixels() -> np.ndarray:
    px = np.random.default_rng(7).integers(0, 256, (H, W, 4), dtype=np.uint8)
    px[..., 3] = np.where(px[..., 3] < 128, 64, 255)  # some alpha: a 32 bpp PTX, a blend material
    return px


def _encoded(fmt: str) -> bytes:
    im = PILImage.fromarray(_pixels(), "RGBA")
    buf = io.BytesIO()
    (im.convert("RGB") if fmt == "JPEG" else im).save(buf, fmt)
    return buf.getvalue()


def _glb(data: bytes, mime: str) -> bytes:
    """A GLB of one textured quad embedding ``data`` as it is (the writer embeds the bytes)."""
    scene = _quad_scene(Image(name="tex", data=data, mime_type=mime), W, H, True)
    buf = io.BytesIO()
    gamemesh.save(scene, buf, format="glb", check_loss=False)
    return buf.getvalue()


def _decoded(scene: Scene) -> Scene:
    """The scene as the reader made it before: every image's pixels decoded on load."""
    back = gamemesh.load(_glb_of(scene), format="gltf")
    for im in back.images:
        assert im.data is not None
        im.pixels = decode_image(im.data, "gltf")
    return back


def _glb_of(scene: Scene) -> bytes:
    buf = io.BytesIO()
    gamemesh.save(scene, buf, format="glb", check_loss=False)
    return buf.getvalue()


def _save(scene: Scene, fmt: str, ext: str) -> tuple[dict[str, bytes], list[str]]:
    ctx = Context(Path("out" + ext), {})
    files = by_name(fmt).save_scene(scene, ctx)
    return files, [n.code for n in ctx.notes]


def test_embedded_png_stays_encoded_with_its_header_size() -> None:
    png = _encoded("PNG")
    scene = gamemesh.load(_glb(png, "image/png"), format="gltf")
    (img,) = scene.images
    assert img.pixels is None
    assert img.data == png
    assert img.mime_type == "image/png"
    assert img.size == (W, H)
    assert scene.notes == []
    # GLB -> GLB embeds the same bytes
    assert gamemesh.load(_glb_of(scene), format="gltf").images[0].data == png


def test_embedded_jpeg_stays_encoded() -> None:
    jpg = _encoded("JPEG")
    scene = gamemesh.load(_glb(jpg, "image/jpeg"), format="gltf")
    (img,) = scene.images
    assert img.pixels is None and img.data == jpg and img.size == (W, H)


@pytest.mark.parametrize("kind", ["PNG", "JPEG"])
@pytest.mark.parametrize(("fmt", "ext"), [("ptx", ".ptx"), ("papa", ".papa"), ("pet", ".pet"),
                                          ("splashpack", ".splashpack"), ("pba", ".pba"),
                                          ("image", ".png"), ("image", ".tga")])
def test_writers_decode_on_demand_to_the_same_bytes(kind: str, fmt: str, ext: str) -> None:
    data = _encoded(kind)
    scene = gamemesh.load(_glb(data, f"image/{kind.lower()}"), format="gltf")
    assert scene.images[0].pixels is None
    files, notes = _save(scene, fmt, ext)
    want_files, want_notes = _save(_decoded(scene), fmt, ext)
    assert scene.images[0].pixels is None  # writing did not decode into the scene
    assert files == want_files
    assert notes == want_notes
    assert files  # something was written


def test_ptx_from_an_encoded_glb_image_holds_its_pixels() -> None:
    scene = gamemesh.load(_glb(_encoded("PNG"), "image/png"), format="gltf")
    files, _ = _save(scene, "ptx", ".ptx")
    doc = read_ptx(files["out.ptx"], Context(Path("out.ptx"), {}))
    assert (doc.width, doc.height, doc.bpp) == (W, H, 32)
    np.testing.assert_array_equal(doc.pixels, _pixels()[..., [2, 1, 0, 3]])


@pytest.mark.parametrize("uri", ["skin.tga", "skin.jpeg", "skin.png"])
def test_pet_texture_of_an_encoded_image_named_otherwise(uri: str) -> None:
    """PET names a texture that has pixels ``.png`` whatever its source was called, and writes
    it as PNG: an encoded image counts as having pixels."""
    scene = gamemesh.load(_glb(_encoded("PNG"), "image/png"), format="gltf")
    scene.images[0].uri = uri
    decoded = _decoded(scene)
    decoded.images[0].uri = uri
    files, notes = _save(scene, "pet", ".pet")
    assert (files, notes) == _save(decoded, "pet", ".pet")
    (tex,) = (n for n in files if n != "out.pet")
    assert tex.endswith("out_skin.png")
    np.testing.assert_array_equal(decode_image(files[tex]), _pixels())


def test_png_with_a_bad_crc_is_decoded_on_load_and_noted() -> None:
    png = bytearray(_encoded("PNG"))
    png[-20] ^= 0xFF  # inside the IDAT body: its CRC no longer matches
    scene = gamemesh.load(_glb(bytes(png), "image/png"), format="gltf")
    (img,) = scene.images
    assert img.pixels is None and img.data == bytes(png)
    assert img.size is None
    (note,) = scene.notes
    assert note.code == "gltf.image_undecodable"
    assert "kept as bytes" in note.message


def test_png_declared_as_jpeg_is_decoded_on_load() -> None:
    scene = gamemesh.load(_glb(_encoded("PNG"), "image/jpeg"), format="gltf")
    (img,) = scene.images
    assert img.pixels is not None
    np.testing.assert_array_equal(img.pixels, _pixels())


def test_png_whose_stream_is_broken_under_right_crcs_fails_when_written() -> None:
    """What the cheap check cannot see (a deflate stream broken with its CRC recomputed) stays
    bytes on load; the writer that decodes it reports it, naming the image data."""
    png = _encoded("PNG")
    pos = png.index(b"IDAT") - 4
    (n,) = struct.unpack(">I", png[pos:pos + 4])
    body = bytearray(png[pos + 8:pos + 8 + n])
    body[2:12] = b"\xff" * 10
    bad = (png[:pos + 8] + bytes(body) + struct.pack(">I", zlib.crc32(b"IDAT" + bytes(body)))
           + png[pos + 12 + n:])
    scene = gamemesh.load(_glb(bad, "image/png"), format="gltf")
    assert scene.images[0].pixels is None and scene.notes == []
    with pytest.raises(FormatError, match="PNG could not be decoded") as e:
        _save(scene, "ptx", ".ptx")
    assert e.value.field == "PNG.data"


def test_external_png_stays_encoded(tmp_path: Path) -> None:
    scene = gamemesh.load(_glb(_encoded("PNG"), "image/png"), format="gltf")
    gamemesh.save(scene, tmp_path / "m.gltf", check_loss=False)
    back = gamemesh.load(tmp_path / "m.gltf")
    (img,) = back.images
    assert img.pixels is None and img.size == (W, H)
    assert img.uri is not None and (tmp_path / img.uri).read_bytes() == img.data


def test_image_over_the_pixel_limit_is_noted_on_load_as_before() -> None:
    scene = gamemesh.load(_glb(_encoded("PNG"), "image/png"), format="gltf",
                          max_image_pixels=W * H - 1)
    (img,) = scene.images
    assert img.pixels is None and img.data is not None
    (note,) = scene.notes
    assert note.code == "gltf.image_undecodable"
    assert "over the limit" in note.message
