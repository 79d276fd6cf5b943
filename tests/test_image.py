"""The image format: a PNG or JPEG stays encoded (header read, structure checked, bytes kept
into the GLB and back), other images are decoded; transparency from the header; damaged files
are FormatErrors; the consumers that need pixels decode the kept bytes."""

from __future__ import annotations

import io
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

import gamemesh
from gamemesh.errors import CorruptDataError, FormatError, TruncatedError
from gamemesh.formats.image import SPEC
from gamemesh.formats.papa.read import read as read_papa
from gamemesh.formats.papa.textures import decode as decode_papa_texture
from gamemesh.formats.ptx.read import read as read_ptx
from gamemesh.registry import Context
from gamemesh.textures import decode_image
from gamemesh.textures.encoded import encoded_size, probe_encoded
from gamemesh.viewer import render_thumbnail
from gamemesh.viewer.server import _texture_entry
from helpers import assert_mutations_fail_cleanly, assert_truncations_fail_cleanly


def _picture(h: int = 24, w: int = 40) -> np.ndarray:
    """RGB with gradients and noise (so JPEG and PNG encoders have something to do)."""
    rng = np.random.default_rng(7)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // w, y * 255 // h, (x * y) % 256], -1)
    return np.clip(base + rng.integers(-20, 20, (h, w, 3)), 0, 255).astype(np.uint8)


def _encode(im: PILImage.Image, fmt: str = "PNG", **kw: Any) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def _chunk(tag: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", zlib.crc32(tag + body))


def _with_chunk(png: bytes, tag: bytes, body: bytes) -> bytes:
    """``png`` with one more chunk right after IHDR (8 + 25 bytes)."""
    return png[:33] + _chunk(tag, body) + png[33:]


RGB = _picture()
GREY = RGB[..., 0].copy()
RGBA = np.dstack([RGB, (np.arange(RGB.shape[1])[None, :] * 6).repeat(RGB.shape[0], 0)]
                 ).astype(np.uint8)
OPAQUE_RGBA = np.dstack([RGB, np.full(RGB.shape[:2], 255, np.uint8)])

# (name, file bytes, Pillow mode, declared alpha) for every PNG colour type, with and without
# tRNS, and the JPEG layouts glTF takes.
PNGS = {
    "grey": (_encode(PILImage.fromarray(GREY)), "L", False),
    "grey_trns": (_encode(PILImage.fromarray(GREY), transparency=7), "L", True),
    "grey16": (_encode(PILImage.fromarray(GREY.astype(np.uint16) * 257).convert("I;16")),
               "L", False),
    "rgb": (_encode(PILImage.fromarray(RGB)), "RGB", False),
    "rgb_trns": (_encode(PILImage.fromarray(RGB), transparency=(1, 2, 3)), "RGB", True),
    "palette": (_encode(PILImage.fromarray(RGB).quantize(16)), "P", False),
    "palette_trns": (_encode(PILImage.fromarray(RGB).quantize(16), transparency=0), "P", True),
    "grey_alpha": (_encode(PILImage.fromarray(np.dstack([GREY, GREY]), "LA")), "LA", True),
    "rgba": (_encode(PILImage.fromarray(RGBA)), "RGBA", True),
    # An alpha channel that happens to be all 255 still declares alpha: the header decides.
    "rgba_opaque": (_encode(PILImage.fromarray(OPAQUE_RGBA)), "RGBA", True),
}
JPEG = _encode(PILImage.fromarray(RGB), "JPEG", quality=90)
JPEGS = {
    "jpeg": (JPEG, "RGB"),
    "jpeg_progressive": (_encode(PILImage.fromarray(RGB), "JPEG", progressive=True), "RGB"),
    "jpeg_grey": (_encode(PILImage.fromarray(GREY), "JPEG"), "L"),
}


def _load(data: bytes, name: str = "pic") -> gamemesh.Scene:
    ctx = Context(Path(f"{name}.img"), {})
    return SPEC.to_scene(SPEC.read(data, ctx), ctx)  # type: ignore[misc]


def _glb_image(glb: bytes) -> tuple[dict[str, Any], bytes]:
    """The GLB's one image entry and the bytes its buffer view holds."""
    (json_len,) = struct.unpack_from("<I", glb, 12)
    doc = json.loads(glb[20:20 + json_len])
    binary = glb[20 + json_len + 8:]
    (image,) = doc["images"]
    view = doc["bufferViews"][image["bufferView"]]
    start = view.get("byteOffset", 0)
    return image, binary[start:start + view["byteLength"]]


# -- kept encoded ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", PNGS)
def test_png_kept_encoded_and_alpha_mode_from_header(name: str) -> None:
    data, mode, alpha = PNGS[name]
    head = probe_encoded(data)
    assert head is not None and head.passthrough
    assert (head.kind, head.width, head.height, head.mode, head.alpha) == ("PNG", 40, 24, mode,
                                                                          alpha)
    scene = _load(data)
    (img,) = scene.images
    assert img.pixels is None and img.data is data and img.mime_type == "image/png"
    assert scene.materials[0].alpha_mode == ("BLEND" if alpha else "OPAQUE")
    xs = scene.meshes[0].primitives[0].positions[:, 0]
    assert float(xs.max() - xs.min()) == pytest.approx(40 / 24)
    scene.validate()


@pytest.mark.parametrize("name", JPEGS)
def test_jpeg_kept_encoded_and_opaque(name: str) -> None:
    data, mode = JPEGS[name]
    head = probe_encoded(data)
    assert head is not None and head.passthrough and head.mode == mode and not head.alpha
    scene = _load(data)
    assert scene.images[0].pixels is None and scene.images[0].data is data
    assert scene.images[0].mime_type == "image/jpeg"
    assert scene.materials[0].alpha_mode == "OPAQUE"


def test_jpeg_is_kept_byte_for_byte_in_the_glb(tmp_path: Path, gltf_validator: Any) -> None:
    src = tmp_path / "photo.jpg"
    src.write_bytes(JPEG)
    gamemesh.convert(src, tmp_path / "photo.glb")
    glb = (tmp_path / "photo.glb").read_bytes()
    entry, embedded = _glb_image(glb)
    assert entry["mimeType"] == "image/jpeg" and embedded == JPEG
    gltf_validator(tmp_path / "photo.glb")
    # ... and back out of the GLB as the same file.
    gamemesh.convert(tmp_path / "photo.glb", tmp_path / "back.jpg")
    assert (tmp_path / "back.jpg").read_bytes() == JPEG


@pytest.mark.parametrize("name", ["rgba", "palette_trns", "grey16"])
def test_png_glb_png_round_trip_is_byte_identical(name: str, tmp_path: Path,
                                                  gltf_validator: Any) -> None:
    data = PNGS[name][0]
    (tmp_path / "a.png").write_bytes(data)
    gamemesh.convert(tmp_path / "a.png", tmp_path / "a.glb")
    entry, embedded = _glb_image((tmp_path / "a.glb").read_bytes())
    assert entry["mimeType"] == "image/png" and embedded == data
    gltf_validator(tmp_path / "a.glb")
    gamemesh.convert(tmp_path / "a.glb", tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes() == data
    gamemesh.convert(tmp_path / "a.png", tmp_path / "c.png")  # image scene -> .png
    assert (tmp_path / "c.png").read_bytes() == data


def test_other_targets_decode(tmp_path: Path) -> None:
    """PNG -> JPEG and JPEG -> PNG go through pixels, as before."""
    (tmp_path / "a.png").write_bytes(PNGS["rgba"][0])
    report = gamemesh.convert(tmp_path / "a.png", tmp_path / "a.jpg")
    assert [n.code for n in report.notes if n.code == "image.alpha_dropped"]
    with PILImage.open(tmp_path / "a.jpg") as im:
        assert im.format == "JPEG" and im.size == (40, 24)
    (tmp_path / "b.jpg").write_bytes(JPEG)
    gamemesh.convert(tmp_path / "b.jpg", tmp_path / "b.png")
    np.testing.assert_array_equal(decode_image((tmp_path / "b.png").read_bytes()),
                                  decode_image(JPEG))


# -- decoded as before ----------------------------------------------------------------------------
NOT_KEPT = {
    # features glTF says images should not have (the validator warns on each)
    "iccp": _encode(PILImage.fromarray(RGB), icc_profile=b"\0" * 128),
    "gamma_1.0": _with_chunk(PNGS["rgb"][0], b"gAMA", struct.pack(">I", 100000)),
    "wide_pixels": _with_chunk(PNGS["rgb"][0], b"pHYs", struct.pack(">IIB", 2, 1, 1)),
    "apng": _encode(PILImage.fromarray(RGB), save_all=True,
                    append_images=[PILImage.fromarray(RGB[::-1].copy())]),
    # CMYK: the validator refuses 4-component JPEGs
    "cmyk_jpeg": _encode(PILImage.fromarray(RGB).convert("CMYK"), "JPEG"),
    # no glTF image type at all
    "bmp": _encode(PILImage.fromarray(RGB), "BMP"),
    "tga": _encode(PILImage.fromarray(RGBA), "TGA"),
}


@pytest.mark.parametrize("name", NOT_KEPT)
def test_files_glb_should_not_embed_are_decoded(name: str, tmp_path: Path,
                                               gltf_validator: Any) -> None:
    data = NOT_KEPT[name]
    scene = _load(data)
    (img,) = scene.images
    assert img.data is None and img.pixels is not None and img.pixels.shape == (24, 40, 4)
    np.testing.assert_array_equal(img.pixels, decode_image(data))
    blend = bool((img.pixels[..., 3] < 255).any())  # decided from the pixels, as before
    assert scene.materials[0].alpha_mode == ("BLEND" if blend else "OPAQUE")
    assert blend == (name == "tga")
    gamemesh.save(scene, tmp_path / "x.glb")
    gltf_validator(tmp_path / "x.glb")  # no IMAGE_FEATURES_UNSUPPORTED warning


def test_srgb_colour_chunks_are_kept() -> None:
    """gAMA 1/2.2, cHRM of sRGB and an sRGB chunk say what glTF assumes anyway."""
    data = _with_chunk(PNGS["rgb"][0], b"gAMA", struct.pack(">I", 45455))
    data = _with_chunk(data, b"sRGB", b"\0")
    data = _with_chunk(data, b"cHRM", struct.pack(">8I", 31270, 32900, 64000, 33000, 30000,
                                                    60000, 15000, 6000))
    data = _with_chunk(data, b"pHYs", struct.pack(">IIB", 2835, 2835, 1))
    assert _load(data).images[0].data is data


# -- damaged files ---------------------------------------------------------------------------------
def _idat_offset(png: bytes) -> int:
    return png.index(b"IDAT") - 4


def test_png_with_a_damaged_body_is_refused() -> None:
    data = bytearray(PNGS["rgb"][0])
    at = _idat_offset(data)
    data[at + 8 + 20] ^= 0x10  # one bit inside the compressed pixels
    (length,) = struct.unpack_from(">I", data, at)
    with pytest.raises(CorruptDataError, match="PNG chunk 'IDAT' is damaged") as e:
        _load(bytes(data))
    assert e.value.field == "PNG.IDAT.crc" and e.value.offset == at + 8 + length


def test_truncated_png_names_the_chunk(tmp_path: Path) -> None:
    data = PNGS["rgb"][0]
    at = _idat_offset(data)
    with pytest.raises(TruncatedError, match="'IDAT' runs past the end") as e:
        _load(data[:at + 30])
    assert e.value.field == "PNG.IDAT.length" and e.value.offset == at
    with pytest.raises(TruncatedError, match="ends before its IEND") as e:
        _load(data[:-12])  # IEND cut off
    assert e.value.field == "PNG.chunk"
    # Through the API the file is named, and nothing is written.
    (tmp_path / "cut.png").write_bytes(data[:at + 30])
    with pytest.raises(FormatError) as e:
        gamemesh.convert(tmp_path / "cut.png", tmp_path / "cut.glb")
    assert e.value.path is not None and e.value.path.endswith("cut.png")
    assert not (tmp_path / "cut.glb").exists()


def test_png_header_values_are_checked() -> None:
    data = bytearray(PNGS["rgb"][0])
    data[8 + 8 + 9] = 7  # colour type 7 does not exist
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    with pytest.raises(CorruptDataError, match="no PNG has") as e:
        _load(bytes(data))
    assert e.value.field == "PNG.IHDR.color_type" and e.value.actual == 7


def test_truncated_jpeg_is_refused() -> None:
    sos = JPEG.index(b"\xff\xda")
    with pytest.raises(TruncatedError, match="end-of-image marker") as e:
        _load(JPEG[:sos + 40])  # cut inside the entropy-coded data
    assert e.value.field == "JPEG.EOI" and e.value.offset == sos + 40
    with pytest.raises(TruncatedError, match="segment 0xDA runs past") as e:
        _load(JPEG[:sos + 6])
    assert e.value.field == "JPEG.0xDA.length" and e.value.offset == sos + 2


def test_jpeg_segment_without_a_marker_is_refused() -> None:
    data = bytearray(JPEG)
    data[2 + 2 + struct.unpack_from(">H", data, 4)[0]] = 0x12  # the byte after APP0
    with pytest.raises(CorruptDataError, match="does not start with a marker") as e:
        _load(bytes(data))
    assert e.value.field == "JPEG.marker" and e.value.actual == "0x12"


@pytest.mark.parametrize("data", [PNGS["palette_trns"][0], JPEGS["jpeg_progressive"][0]],
                         ids=["png", "jpeg"])
def test_every_truncation_and_mutation_ends_cleanly(data: bytes) -> None:
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            _load(data[:cut])
    assert assert_truncations_fail_cleanly(SPEC, data) > 0
    assert_mutations_fail_cleanly(SPEC, data, count=600)


def test_cli_one_line_error_for_a_damaged_png(tmp_path: Path) -> None:
    from gamemesh.cli import main

    data = bytearray(PNGS["rgba"][0])
    data[_idat_offset(data) + 9] ^= 1
    (tmp_path / "bad.png").write_bytes(bytes(data))
    assert main(["convert", str(tmp_path / "bad.png"), str(tmp_path / "bad.glb")]) == 1
    assert not (tmp_path / "bad.glb").exists()


# -- what reads pixels decodes kept bytes ----------------------------------------------------------
def test_png_to_ptx_and_jpeg_to_ptx(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(PNGS["rgba"][0])
    gamemesh.convert(tmp_path / "a.png", tmp_path / "a.ptx")
    doc = read_ptx((tmp_path / "a.ptx").read_bytes(), Context(None, {}))
    assert doc.bpp == 32
    np.testing.assert_array_equal(doc.rgba(), RGBA)
    (tmp_path / "b.jpg").write_bytes(JPEG)
    gamemesh.convert(tmp_path / "b.jpg", tmp_path / "b.ptx")
    doc = read_ptx((tmp_path / "b.ptx").read_bytes(), Context(None, {}))
    assert doc.bpp == 24
    np.testing.assert_array_equal(doc.rgba(), decode_image(JPEG))


def test_png_to_papa_texture(tmp_path: Path) -> None:
    """A kept PNG becomes the same Papa texture as the same picture decoded on load."""
    (tmp_path / "a.png").write_bytes(PNGS["rgb"][0])
    report = gamemesh.convert(tmp_path / "a.png", tmp_path / "a.papa")
    assert sorted(Path(p).name for p in report.outputs) == ["a.papa", "a_diffuse.papa"]
    (tmp_path / "b.png").write_bytes(NOT_KEPT["iccp"])  # decoded on load
    gamemesh.convert(tmp_path / "b.png", tmp_path / "b.papa")
    (tex,), (same,) = (read_papa((tmp_path / f"{k}_diffuse.papa").read_bytes(),
                                 Context(None, {})).textures for k in "ab")
    px = decode_papa_texture(tex, "textures[0]")
    np.testing.assert_array_equal(px, decode_papa_texture(same, "textures[0]"))
    assert px.shape == (24, 40, 4) and np.all(px[..., 3] == 255)
    assert np.corrcoef(px[..., 0].ravel(), RGB[..., 0].ravel())[0, 1] > 0.9


def test_thumbnail_of_a_kept_png_shows_its_pixels() -> None:
    scene = _load(PNGS["rgb"][0])
    assert scene.images[0].pixels is None
    thumb = render_thumbnail(scene, 64, shading="unlit")
    decoded = _load(NOT_KEPT["iccp"])  # the same picture, decoded on load
    np.testing.assert_array_equal(thumb, render_thumbnail(decoded, 64, shading="unlit"))
    lit = thumb[..., 3] > 0
    assert lit.sum() > 64 * 20  # the quad covers the middle of the frame
    assert thumb[lit][:, :3].std() > 20  # ... with the picture on it, not a flat colour


def test_viewer_texture_entry_has_the_header_size() -> None:
    scene = _load(JPEG)
    entry = _texture_entry(0, scene.images[0])
    assert (entry["width"], entry["height"]) == (40, 24)
    assert encoded_size(JPEG[:100]) is None and encoded_size(b"BM....") is None


def test_info_reports_exact_alpha() -> None:
    """``info`` decodes: it tells an all-opaque alpha channel from a used one."""
    doc = SPEC.read(PNGS["rgba_opaque"][0], Context(None, {}))  # type: ignore[misc]
    assert SPEC.info(doc) == {"kind": "png", "width": 40, "height": 24,  # type: ignore[misc]
                              "alpha": False}
    doc = SPEC.read(PNGS["rgba"][0], Context(None, {}))  # type: ignore[misc]
    assert SPEC.info(doc)["alpha"] is True  # type: ignore[misc]


def test_png_over_the_pixel_limit_is_refused_without_decoding() -> None:
    data = bytearray(PNGS["rgb"][0])
    struct.pack_into(">II", data, 16, 30000, 30000)  # 900 Mpx claimed
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    with pytest.raises(FormatError, match="over the limit") as e:
        _load(bytes(data))
    assert e.value.field == "PNG.size"


def test_png_with_right_crcs_over_a_broken_stream_fails_where_it_is_decoded(
        tmp_path: Path) -> None:
    """What the cheap check cannot see (a file made to have valid CRCs over a broken deflate
    stream) loads as bytes; a target that needs its pixels then refuses it cleanly."""
    data = bytearray(PNGS["rgb"][0])
    at = _idat_offset(data)
    (length,) = struct.unpack_from(">I", data, at)
    data[at + 8:at + 8 + length] = b"\x78\x01" + b"\xff" * (length - 2)
    data[at + 8 + length:at + 12 + length] = struct.pack(
        ">I", zlib.crc32(bytes(data[at + 4:at + 8 + length])))
    (tmp_path / "odd.png").write_bytes(bytes(data))
    assert gamemesh.load(tmp_path / "odd.png").images[0].data == bytes(data)
    with pytest.raises(FormatError, match="PNG could not be decoded") as e:
        gamemesh.convert(tmp_path / "odd.png", tmp_path / "odd.ptx")
    assert e.value.field == "PNG.data"
    assert not (tmp_path / "odd.ptx").exists()


def test_save_decodes_kept_images_under_the_callers_pixel_limit() -> None:
    """A PNG kept encoded is decoded when a target needs its pixels, under the save's own
    ``max_image_pixels``, as a load would be: refused under a lower limit, written without."""
    scene = gamemesh.load(Path(__file__).parent / "fixtures" / "viewer" / "view_pmf.png")
    assert scene.images[0].pixels is None
    with pytest.raises(FormatError, match="over the limit") as err:
        gamemesh.save(scene, io.BytesIO(), format="ptx", max_image_pixels=1000)
    assert err.value.actual == 640 * 600
    out = io.BytesIO()
    gamemesh.save(scene, out, format="ptx")
    assert len(out.getvalue()) > 640 * 600 * 3


def test_an_image_only_a_raised_limit_admits_is_decoded_at_load(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A PNG over the default pixel limit, loaded under a raised one, is decoded then (a later
    save would decode it under the default); one within the default stays encoded."""
    import gamemesh.textures.encoded as encoded

    data = _encode(PILImage.fromarray(_picture()))  # 40 x 24 = 960 pixels
    kept = gamemesh.load(data, format="image", max_image_pixels=10_000)
    assert kept.images[0].pixels is None and kept.images[0].data == data
    monkeypatch.setattr(encoded, "MAX_IMAGE_PIXELS", 500)  # the default, lowered below 960
    decoded = gamemesh.load(data, format="image", max_image_pixels=10_000)
    assert decoded.images[0].pixels is not None and decoded.images[0].pixels.shape == (24, 40, 4)
