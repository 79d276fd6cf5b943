"""Odd inputs (issue 13, items 2-4): devices, FIFOs and sockets are refused without being read,
every input is capped, images are bounded before they decode, and the errors are one line."""

from __future__ import annotations

import io
import os
import socket
import struct
import subprocess
import sys
import time
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import gamemesh
from gamemesh import safeio
from gamemesh.errors import FormatError
from gamemesh.sample import sample_scene
from gamemesh.textures import MAX_IMAGE_PIXELS, decode_image, encode_png, image_pixel_limit


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gamemesh", *args], capture_output=True,
                          text=True, timeout=timeout)


def _one_line_exit_1(r: subprocess.CompletedProcess[str], *words: str) -> None:
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gamemesh: error: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


# -- non-regular inputs -------------------------------------------------------------------------
def test_char_device_refused_api() -> None:
    t0 = time.perf_counter()
    with pytest.raises(FormatError, match="a character device, not a regular file"):
        gamemesh.read_native("/dev/zero", "papa")
    assert time.perf_counter() - t0 < 1


def test_fifo_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "in.papa"
    os.mkfifo(fifo)
    with pytest.raises(FormatError, match="FIFO"):  # would block forever if it were opened
        gamemesh.load(fifo)
    with pytest.raises(FormatError, match="FIFO"):
        gamemesh.sniff(fifo)


def test_socket_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.glb"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(FormatError, match="a socket"):
            gamemesh.load(path)


def test_directory_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="a directory"):
        gamemesh.load(tmp_path, "gltf")


def test_cli_dev_zero_one_line(tmp_path: Path) -> None:
    out = tmp_path / "never-written.glb"
    r = _cli("convert", "/dev/zero", str(out), "--from", "papa", timeout=30)
    _one_line_exit_1(r, "/dev/zero", "character device")
    assert not out.exists()


def test_cli_fifo_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "in.glb"
    os.mkfifo(fifo)
    r = _cli("convert", str(fifo), str(tmp_path / "out.glb"), timeout=30)
    _one_line_exit_1(r, str(fifo), "FIFO")
    r = _cli("info", str(fifo), timeout=30)
    _one_line_exit_1(r, "FIFO")


# -- size cap -----------------------------------------------------------------------------------
@pytest.fixture
def glb(tmp_path: Path) -> Path:
    path = tmp_path / "s.glb"
    gamemesh.save(sample_scene(), path)
    return path


def test_max_input_size_api(glb: Path) -> None:
    size = glb.stat().st_size
    with pytest.raises(FormatError, match="too large") as e:
        gamemesh.load(glb, max_input_size=size - 1)
    assert e.value.expected == f"<= {size - 1} bytes"
    assert gamemesh.load(glb, max_input_size=size).summary()["vertices"] == 20
    with pytest.raises(FormatError, match="too large"):
        gamemesh.load(glb.read_bytes(), max_input_size=100)


def test_default_cap_is_4_gib() -> None:
    assert safeio.MAX_INPUT_BYTES == 4 << 30


def test_size_from_stat_is_not_trusted(glb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that grew after stat looked (stat says 10 bytes): the read asks for the size said
    plus one, finds more, and stops at limit + 1."""
    real_stat, real_fstat = os.stat, os.fstat

    class Small:
        def __init__(self, st: os.stat_result) -> None:
            self.st = st
            self.st_size = 10

        def __getattr__(self, name: str) -> Any:
            return getattr(self.st, name)

    monkeypatch.setattr(safeio.os, "stat", lambda p, *a, **k: Small(real_stat(p, *a, **k)))
    monkeypatch.setattr(safeio.os, "fstat", lambda fd: Small(real_fstat(fd)))
    reads: list[int] = []
    real_read = os.read

    def spy(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(safeio.os, "read", spy)
    with pytest.raises(FormatError, match="more than 100"):
        safeio.read_regular(glb, 100)
    assert reads == [11, 90]  # 10 + 1 asked for; then up to limit + 1 = 101 in all


def test_short_reads_are_continued(glb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read may come back short (FUSE, network file systems): the rest is read, not lost."""
    real_read = os.read
    monkeypatch.setattr(safeio.os, "read", lambda fd, n: real_read(fd, min(n, 7)))
    assert safeio.read_regular(glb) == glb.read_bytes()
    assert safeio.read_regular(glb, take=20) == glb.read_bytes()[:20]


def test_cli_max_input_size(glb: Path, tmp_path: Path) -> None:
    r = _cli("convert", str(glb), str(tmp_path / "o.glb"), "--max-input-size", "1K")
    _one_line_exit_1(r, "too large", "<= 1024 bytes")
    r = _cli("convert", str(glb), str(tmp_path / "o.glb"), "--max-input-size", "lots")
    assert r.returncode == 2 and "--max-input-size" in r.stderr
    r = _cli("convert", str(glb), str(tmp_path / "o.glb"), "--max-input-size", "1M")
    assert r.returncode == 0, r.stderr


# -- images: bombs and corrupt files ------------------------------------------------------------
def _jpeg(w: int = 16, h: int = 16) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((h, w, 3), 128, np.uint8)).save(buf, "JPEG")
    return buf.getvalue()


def _claim(jpeg: bytes, width: int, height: int) -> bytes:
    """The JPEG with its frame header claiming another size (the data stays 16 x 16)."""
    d = bytearray(jpeg)
    sof = d.find(b"\xff\xc0")
    struct.pack_into(">HH", d, sof + 5, height, width)
    return bytes(d)


def test_jpeg_bomb_over_the_pixel_limit() -> None:
    bomb = _claim(_jpeg(), 1200, 65535)
    assert len(bomb) < 1000
    # Pillow's own DecompressionBombWarning stays inside: the error is the one line.
    with warnings.catch_warnings(), pytest.raises(FormatError, match="over the limit") as e:
        warnings.simplefilter("error")
        decode_image(bomb, "image")
    assert e.value.field == "JPEG.size" and e.value.actual == 1200 * 65535
    assert MAX_IMAGE_PIXELS == 64 << 20


def test_jpeg_claiming_more_than_its_bytes_hold() -> None:
    bomb = _claim(_jpeg(), 2000, 2000)  # 4 Mpx, under the limit, from ~600 bytes
    with pytest.raises(FormatError, match=r"more than its \d+ bytes can hold") as e:
        gamemesh.load(bomb, "image")
    assert "JPEG" in str(e.value)


def test_pixel_limit_is_configurable() -> None:
    img = _jpeg(64, 64)
    assert decode_image(img).shape == (64, 64, 4)
    with image_pixel_limit(64 * 63), pytest.raises(FormatError, match="over the limit"):
        decode_image(img)
    with pytest.raises(FormatError, match="over the limit"):
        gamemesh.load(img, "image", max_image_pixels=1000)


def test_cli_max_image_pixels(tmp_path: Path) -> None:
    src = tmp_path / "a.jpg"
    src.write_bytes(_jpeg(64, 64))
    r = _cli("convert", str(src), str(tmp_path / "a.glb"), "--max-image-pixels", "4000")
    _one_line_exit_1(r, "JPEG", "over the limit")
    assert _cli("convert", str(src), str(tmp_path / "a.glb")).returncode == 0


def test_corrupt_dds_is_a_format_error() -> None:
    buf = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 4), np.uint8)).save(buf, "DDS")
    d = bytearray(buf.getvalue())
    d[80:84] = struct.pack("<I", 4)  # pixel format flags: none Pillow implements
    with pytest.raises(FormatError, match="NotImplementedError") as e:
        gamemesh.load(bytes(d), "image")
    assert e.value.field is not None and e.value.field.endswith(".data")


# -- thumbnail ----------------------------------------------------------------------------------
def test_thumbnail_time_nan_is_a_usage_error(glb: Path, tmp_path: Path) -> None:
    for bad in ("nan", "inf", "-inf"):
        r = _cli("thumbnail", str(glb), str(tmp_path / "t.png"), f"--time={bad}")
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip().splitlines() == [
            f"gamemesh: usage error: --time must be a finite number of seconds, got "
            f"{float(bad)}"]
    assert not (tmp_path / "t.png").exists()


def test_thumbnail_cost_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """--size 4096 rasterizes at most MAX_RENDER_PIXELS and scales up."""
    from gamemesh.viewer import thumbnail

    sizes: list[int] = []
    real = thumbnail.rasterize
    monkeypatch.setattr(thumbnail, "rasterize",
                        lambda p, t, vp, w, h: sizes.append(w * h) or real(p, t, vp, w, h))
    img = thumbnail.render_thumbnail(sample_scene(), 4096)
    assert img.shape == (4096, 4096, 4) and img[..., 3].any()
    assert sizes == [thumbnail.MAX_RENDER_PIXELS]
    sizes.clear()
    thumbnail.render_thumbnail(sample_scene(), 1500)  # supersampling backs off
    assert sizes == [1500 * 1500]
    sizes.clear()
    thumbnail.render_thumbnail(sample_scene(), 64)
    assert sizes == [128 * 128]  # the default 2 x 2 where it is cheap


@pytest.mark.parametrize(("fmt", "model", "sibling"), [
    ("papa", "unit.papa", "unit_diffuse.papa"),   # a unit's texture
    ("pba", "model.pba", "model_checker.ptx"),    # a PBA's PTX
    ("pet", "item.pet", "item_checker.png"),      # a PET's texture
])
def test_a_fifo_posing_as_a_sibling_is_skipped(tmp_path: Path, fmt: str, model: str,
                                               sibling: str) -> None:
    """Sibling files are read like inputs: a FIFO named as a unit's texture is refused (a note),
    never opened (which would block the load forever)."""
    gamemesh.save(sample_scene(), tmp_path / model)
    target = tmp_path / sibling
    if target.exists():
        target.unlink()
    os.mkfifo(target)
    r = _cli("info", str(tmp_path / model), "--json", timeout=60)
    assert r.returncode == 0, r.stderr
    assert sibling in r.stdout  # named in a note: skipped, not read


# -- PNG text chunks: bounded where the encoded-image check walks them (issue 33, item 7) -----
def _png_with(chunk_type: bytes, body: bytes) -> bytes:
    """A small PNG (encode_png) with one more chunk before its IEND."""
    png = encode_png(np.full((8, 8, 4), 200, np.uint8))
    chunk = (struct.pack(">I", len(body)) + chunk_type + body
             + struct.pack(">I", zlib.crc32(body, zlib.crc32(chunk_type))))
    return png[:-12] + chunk + png[-12:]


def _ztxt_bomb(megabytes: int) -> bytes:
    """A zTXt chunk's body that inflates to ``megabytes`` MiB of zeros (about 100 KB of it
    for 100 MiB), compressed a MiB at a time."""
    z = zlib.compressobj(9)
    stream = b"".join(z.compress(bytes(1 << 20)) for _ in range(megabytes)) + z.flush()
    return b"Comment\0\0" + stream


def test_ztxt_bomb_refused_alike_by_every_path(tmp_path: Path) -> None:
    src = tmp_path / "bomb.png"
    src.write_bytes(_png_with(b"zTXt", _ztxt_bomb(100)))
    assert src.stat().st_size < 200_000
    lines = set()
    for args in (["info", str(src)], ["convert", str(src), str(tmp_path / "o.glb")],
                 ["convert", str(src), str(tmp_path / "o.tga")]):
        r = _cli(*args)
        _one_line_exit_1(r, str(src), "(PNG.zTXt)")
        lines.add(r.stderr.strip())
    at = src.read_bytes().find(b"zTXt") - 4
    assert lines == {f"gamemesh: error: {src}: image: at 0x{at:X} (PNG.zTXt): PNG zTXt chunk "
                     "inflates to more text than a decoder takes, expected <= 1048576 bytes, "
                     "got more"}
    assert not list(tmp_path.glob("o.*"))


def test_text_chunks_within_pillows_bounds_stay_encoded(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from PIL import PngImagePlugin

    z = zlib.compress(b"x" * 1000)
    for chunk_type, body in ((b"zTXt", b"Comment\0\0" + z), (b"tEXt", b"Comment\0" + b"y" * 300),
                             (b"iTXt", b"Comment\0\1\0en\0Comment\0" + z)):
        png = _png_with(chunk_type, body)
        assert gamemesh.load(png, "image").images[0].data == png  # kept as it is
        # Pillow's limits are read when the check runs: with a smaller one, the same text
        # is refused, by the probe and by Pillow alike.
        monkeypatch.setattr(PngImagePlugin, "MAX_TEXT_MEMORY", 200)
        with pytest.raises(FormatError, match="more text than a decoder takes") as e:
            gamemesh.load(png, "image")
        assert e.value.field == f"PNG.{chunk_type.decode()}"
        with pytest.raises(FormatError, match="Too much memory used in text chunks"):
            decode_image(png)
        monkeypatch.undo()


def test_undecodable_image_to_tga_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scene whose only image does not decode: the image's own error, not 'no image with
    pixels'."""
    scene = gamemesh.load(_png_with(b"tEXt", b"a\0b"), "image")
    scene.images[0].data = scene.images[0].data[:50]  # damaged (its IDAT cut) after the probe
    with pytest.raises(FormatError, match="PNG") as e:
        gamemesh.save(scene, io.BytesIO(), "image")
    assert "no image with pixels" not in str(e.value)


def test_negative_offsets_print_with_the_sign() -> None:
    from gamemesh.binary import Reader

    assert str(FormatError("papa", "x", offset=-8)) == "papa: at -0x8: x"
    assert str(FormatError("papa", "x", offset=0x1A4)) == "papa: at 0x1A4: x"
    with pytest.raises(FormatError) as e:
        Reader(b"0123456789abcdef", "t").window(-8, 4)
    assert "-0x8..-0x4" in str(e.value) and "0x-" not in str(e.value)


def test_papa_string_before_the_file_start(tmp_path: Path) -> None:
    from gamemesh.formats.papa import layout

    gamemesh.save(sample_scene(), tmp_path / "s.papa")
    data = bytearray((tmp_path / "s.papa").read_bytes())
    header = layout.HEADER.unpack_from(data)
    table = header[13 + layout.S_STRING]
    struct.pack_into("<q", data, table + 8, -8)  # strings[0].offset
    with pytest.raises(FormatError) as e:
        gamemesh.read_native(bytes(data), "papa")
    assert str(e.value).startswith("papa: at -0x8 (strings[0]): string data outside the file")
    assert "got -0x8+" in str(e.value) and "0x-" not in str(e.value)


# -- PMF --texture: the bounded reader (issue 33, item 10) ---------------------------------------
def test_pmf_texture_from_a_device_is_refused(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "s.pmf")
    r = _cli("convert", str(tmp_path / "s.pmf"), str(tmp_path / "o.glb"), "--texture",
             "/dev/zero", timeout=30)
    _one_line_exit_1(r, "--texture /dev/zero: the texture is a character device")
    assert not (tmp_path / "o.glb").exists()


def test_pmf_texture_obeys_the_input_limit(tmp_path: Path) -> None:
    gamemesh.save(sample_scene(), tmp_path / "s.pmf")
    size = (tmp_path / "s.pmf").stat().st_size
    big = tmp_path / "big.png"
    big.write_bytes(encode_png(np.zeros((64, 64, 4), np.uint8)) + bytes(size))
    with pytest.raises(FormatError, match="the texture is too large") as e:
        gamemesh.load(tmp_path / "s.pmf", texture=str(big), max_input_size=size)
    assert e.value.field == "--texture"
    scene = gamemesh.load(tmp_path / "s.pmf", texture="big.png")  # relative to the PMF
    assert scene.images[0].name == "big"
