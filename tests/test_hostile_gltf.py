"""A .gltf reads external files only from its own folder (issue 13, item 1) and its errors name
the JSON place (item 5)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.formats.gltf import write_gltf
from gamemesh.formats.gltf.read import MAX_JSON_DEPTH, pointer
from gamemesh.sample import sample_scene


def _gltf(folder: Path, name: str = "model.gltf") -> Path:
    """The sample as .gltf + .bin (+ textures) in ``folder``. Written here, not through
    gamemesh.save: the session's validator checks every file save writes, and these tests
    then turn them hostile (one names /dev/zero, which the validator would read forever)."""
    folder.mkdir(parents=True, exist_ok=True)
    for rel, data in write_gltf(sample_scene(), name, []).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder / name


def _edit(path: Path, fn: Any) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))


def _buffer_uri(path: Path, uri: str) -> None:
    _edit(path, lambda d: d["buffers"][0].__setitem__("uri", uri))


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gamemesh", *args], capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return _gltf(tmp_path / "inside")


def test_inside_buffer_reads(model: Path) -> None:
    scene = gamemesh.load(model)
    assert scene.summary()["vertices"] == 20


@pytest.mark.parametrize("uri", ["../outside.bin", "sub/../../outside.bin", "..%2Foutside.bin",
                                 "%2E%2E/outside.bin", "..\\outside.bin"])
def test_dotdot_refused(model: Path, uri: str) -> None:
    outside = model.parent.parent / "outside.bin"
    shutil.copy(model.with_suffix(".bin"), outside)  # a real file: refused for where it is
    _buffer_uri(model, uri)
    with pytest.raises(FormatError) as e:
        gamemesh.load(model)
    assert e.value.field == "/buffers/0/uri"
    assert repr(uri) in str(e.value) and "refused" in str(e.value)


@pytest.mark.parametrize("uri", ["/etc/passwd", "%2Fetc%2Fpasswd", "C:/Windows/win.ini",
                                 "\\\\server\\share\\x.bin", "/dev/zero"])
def test_absolute_refused(model: Path, uri: str) -> None:
    _buffer_uri(model, uri)
    with pytest.raises(FormatError, match="absolute path") as e:
        gamemesh.load(model)
    assert e.value.field == "/buffers/0/uri"


@pytest.mark.parametrize("uri", ["http://example.com/x.bin", "file:///etc/passwd",
                                 "FILE:model.bin"])
def test_schemes_refused(model: Path, uri: str) -> None:
    _buffer_uri(model, uri)
    with pytest.raises(FormatError, match="no URI schemes"):
        gamemesh.load(model)


def test_symlink_leaving_the_folder_refused(model: Path) -> None:
    secret = model.parent.parent / "secret.bin"
    shutil.copy(model.with_suffix(".bin"), secret)
    (model.parent / "link.bin").symlink_to(secret)
    _buffer_uri(model, "link.bin")
    with pytest.raises(FormatError, match="outside the glTF's folder") as e:
        gamemesh.load(model)
    assert e.value.field == "/buffers/0/uri"
    # A symlink that stays inside is fine.
    (model.parent / "inner.bin").symlink_to(model.with_suffix(".bin"))
    _buffer_uri(model, "inner.bin")
    assert gamemesh.load(model).summary()["vertices"] == 20


def test_image_uri_outside_is_an_error_not_a_warning(model: Path) -> None:
    """An image naming /etc/passwd must not put that file's bytes into the scene."""
    _edit(model, lambda d: d["images"][0].__setitem__("uri", "/etc/passwd"))
    with pytest.raises(FormatError) as e:
        gamemesh.load(model)
    assert e.value.field == "/images/0/uri"


def test_missing_image_inside_stays_a_warning(model: Path) -> None:
    _edit(model, lambda d: d["images"][0].__setitem__("uri", "nothere.png"))
    scene = gamemesh.load(model)
    assert any(n.code == "gltf.image_missing" for n in scene.notes)


def test_fifo_and_socket_inside_refused(model: Path) -> None:
    fifo = model.parent / "pipe.bin"
    os.mkfifo(fifo)
    _buffer_uri(model, "pipe.bin")
    with pytest.raises(FormatError, match="FIFO") as e:  # and does not block
        gamemesh.load(model)
    assert e.value.field == "/buffers/0/uri"
    sock_path = model.parent / "s.bin"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(sock_path))
        _buffer_uri(model, "s.bin")
        with pytest.raises(FormatError, match="socket"):
            gamemesh.load(model)


def test_allow_outside_widens(tmp_path: Path) -> None:
    model = _gltf(tmp_path / "m")
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.move(model.with_suffix(".bin"), shared / "model.bin")
    _buffer_uri(model, "../shared/model.bin")
    with pytest.raises(FormatError):
        gamemesh.load(model)
    scene = gamemesh.load(model, allow_outside=[str(shared)])
    assert scene.summary()["vertices"] == 20
    # Allowing one folder allows nothing else.
    _buffer_uri(model, "/etc/passwd")
    with pytest.raises(FormatError):
        gamemesh.load(model, allow_outside=[str(shared)])


def test_cli_allow_outside(tmp_path: Path) -> None:
    model = _gltf(tmp_path / "m")
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.move(model.with_suffix(".bin"), shared / "model.bin")
    _buffer_uri(model, "../shared/model.bin")
    out = tmp_path / "out.glb"
    r = _cli("convert", str(model), str(out))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
    assert "/buffers/0/uri" in r.stderr and "../shared/model.bin" in r.stderr
    assert not out.exists()
    r = _cli("convert", str(model), str(out), "--allow-outside", str(shared))
    assert r.returncode == 0, r.stderr
    assert gamemesh.load(out).summary()["vertices"] == 20


def test_buffer_reads_only_its_byte_length(model: Path) -> None:
    """A buffer file larger than byteLength is read up to byteLength, not whole."""
    binf = model.with_suffix(".bin")
    size = binf.stat().st_size
    with binf.open("ab") as f:
        f.write(b"\0" * 100_000)
    doc = gamemesh.read_native(model)
    assert len(doc.buffers[0]) == size


def test_siblings_skip_refused_uris(model: Path) -> None:
    from gamemesh.formats.gltf import SPEC

    assert [p.name for p in SPEC.siblings(model)] == ["model.bin", *[
        p.name for p in sorted(model.parent.glob("*.png"))]] or SPEC.siblings(model)
    _buffer_uri(model, "../../../../etc/passwd")
    assert all(p.is_relative_to(model.parent.resolve()) for p in SPEC.siblings(model))


# -- messages carry the JSON place --------------------------------------------------------------
def test_pointer() -> None:
    assert pointer("accessors[3].count") == "/accessors/3/count"
    assert pointer("meshes[0].primitives[1].attributes.POSITION") == \
        "/meshes/0/primitives/1/attributes/POSITION"
    assert pointer("header.version") == "header.version"


def _glb_json(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    path = _gltf(tmp_path, "s.gltf")
    return json.loads(path.read_text()), path


def test_accessor_count_past_view_names_the_count(tmp_path: Path) -> None:
    doc, path = _glb_json(tmp_path)
    acc = doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
    view = doc["bufferViews"][doc["accessors"][acc]["bufferView"]]
    doc["accessors"][acc]["count"] = 5000
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as e:
        gamemesh.load(path)
    stride = view.get("byteStride", 12)
    room = (view["byteLength"] - doc["accessors"][acc].get("byteOffset", 0) - 12) // stride + 1
    assert str(e.value) == (f"gltf: (/accessors/{acc}/count): accessor runs past its view, "
                            f"expected <= {room} by the view's {view['byteLength']} bytes, "
                            "got 5000")


@pytest.mark.parametrize("edit, place", [
    (lambda d: d["nodes"][0].__setitem__("rotation", "x"), "/nodes/0"),
    (lambda d: d["materials"][0].__setitem__("pbrMetallicRoughness", [1]), "/materials/0"),
    (lambda d: d["accessors"].__setitem__(0, 7), "/meshes/0"),
    (lambda d: d["animations"][0]["samplers"][0].__setitem__("interpolation", {}),
     "/animations/0"),
    (lambda d: d["meshes"][0]["primitives"][0].__setitem__("attributes", {"POSITION": "a"}),
     "/meshes/0/primitives/0/attributes/POSITION"),
])
def test_malformed_values_name_their_place(tmp_path: Path, edit: Any, place: str) -> None:
    doc, path = _glb_json(tmp_path)
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as e:
        gamemesh.load(path)
    assert e.value.field is not None and e.value.field.startswith(place), str(e.value)


def test_deep_json_is_a_format_error() -> None:
    deep = b'{"asset": {"version": "2.0"}, "extras": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(FormatError, match="nested too deeply"):
        gamemesh.load(deep, "gltf")
    ok = (b'{"asset": {"version": "2.0"}, "extras": ' + b"[" * (MAX_JSON_DEPTH - 3)
          + b"]" * (MAX_JSON_DEPTH - 3) + b"}")
    gamemesh.load(ok, "gltf")


# -- invalid numbers ----------------------------------------------------------------------------
def _with_positions(tmp_path: Path, value: float) -> Path:
    doc, path = _glb_json(tmp_path)
    acc = doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
    binf = tmp_path / doc["buffers"][0]["uri"]
    a = doc["accessors"][acc]
    v = doc["bufferViews"][a["bufferView"]]
    raw = bytearray(binf.read_bytes())
    off = v.get("byteOffset", 0) + a.get("byteOffset", 0) + 12 * 3 + 4
    raw[off:off + 4] = np.float32(value).tobytes()
    binf.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nonfinite_positions_name_the_accessor(tmp_path: Path, value: float) -> None:
    path = _with_positions(tmp_path, value)
    doc = json.loads(path.read_text())
    acc = doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
    with pytest.raises(FormatError, match="POSITION values hold NaN or infinity") as e:
        gamemesh.convert(path, tmp_path / "out.glb")
    assert e.value.field == f"/accessors/{acc}"
    assert "row 3" in str(e.value)
    assert not (tmp_path / "out.glb").exists()


def test_non_unit_rotation_normalized_with_a_note(tmp_path: Path) -> None:
    doc, path = _glb_json(tmp_path)
    doc["nodes"][0]["rotation"] = [0.0, 0.0, 0.0, 2.0]
    path.write_text(json.dumps(doc))
    report = gamemesh.convert(path, tmp_path / "out.glb")
    assert any(n.code == "gltf.rotation_normalized" and "/nodes/0/rotation" in n.message
               for n in report.notes)
    assert gamemesh.load(tmp_path / "out.glb").nodes[0].rotation == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("rotation, match", [([0, 0, 0, 0], "zero quaternion"),
                                             ([0, 0, 0, 1e400], "NaN or infinity")])
def test_unusable_rotation_is_a_format_error(tmp_path: Path, rotation: list[float],
                                             match: str) -> None:
    doc, path = _glb_json(tmp_path)
    text = json.dumps(doc).replace('"nodes": [{', '"nodes": [{"rotation": '
                                   + json.dumps(rotation) + ", ", 1)
    path.write_text(text)
    with pytest.raises(FormatError, match=match) as e:
        gamemesh.convert(path, tmp_path / "out.glb")
    assert e.value.field == "/nodes/0/rotation"


def test_animation_keys_going_back_is_a_format_error(tmp_path: Path) -> None:
    doc, path = _glb_json(tmp_path)
    a = doc["animations"][0]["samplers"][0]["input"]
    acc = doc["accessors"][a]
    binf = tmp_path / doc["buffers"][0]["uri"]
    v = doc["bufferViews"][acc["bufferView"]]
    raw = bytearray(binf.read_bytes())
    off = v.get("byteOffset", 0) + acc.get("byteOffset", 0)
    raw[off:off + 8] = np.array([1.0, 0.5], dtype=np.float32).tobytes()
    binf.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="not strictly increasing") as e:
        gamemesh.convert(path, tmp_path / "out.glb")
    assert e.value.field == "/animations/0"
