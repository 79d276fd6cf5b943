"""A .gltf reads external files only from its own folder (issue 13, item 1) and its errors name
the JSON place (item 5); a few hundred bytes cannot ask for gigabytes, text and numbers Python
cannot carry are refused by place, and repeated nodes never reach an output (issue 33, 4-6)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tracemalloc
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


# -- issue 33, item 4: accessors without a bufferView are bounded by the file -------------------
def _glb(doc: dict[str, Any]) -> bytes:
    """A GLB of this JSON and no binary chunk (a few hundred bytes)."""
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    return (struct.pack("<III", 0x46546C67, 2, 20 + len(js))
            + struct.pack("<II", len(js), 0x4E4F534A) + js)


def _zeros(count: int, kind: str) -> dict[str, Any]:
    return {"componentType": 5126, "count": count, "type": kind}


_ASSET = {"version": "2.0"}
_HUGE = 1 << 28
# Each declares 2^28 elements of zeros in one accessor without a bufferView, used where a
# file would use it: a primitive's POSITION (3 GiB zeroed), a skin's inverse binds (16 GiB),
# an animation's input and output (1 + 3 GiB).
HUGE_ZEROS = {
    "position": {"asset": _ASSET, "accessors": [_zeros(_HUGE, "VEC3")],
                 "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
                 "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}]},
    "inverse_binds": {"asset": _ASSET, "accessors": [_zeros(_HUGE, "MAT4")],
                      "nodes": [{"name": "j"}], "scenes": [{"nodes": [0]}],
                      "skins": [{"joints": [0], "inverseBindMatrices": 0}]},
    "animation_input": {"asset": _ASSET,
                        "accessors": [_zeros(_HUGE, "SCALAR"), _zeros(_HUGE, "VEC3")],
                        "nodes": [{"name": "n"}], "scenes": [{"nodes": [0]}],
                        "animations": [{"samplers": [{"input": 0, "output": 1}],
                                        "channels": [{"sampler": 0, "target": {
                                            "node": 0, "path": "translation"}}]}]},
}


@pytest.mark.parametrize("name", sorted(HUGE_ZEROS))
def test_zero_filled_accessor_bounded_by_the_file(name: str) -> None:
    data = _glb(HUGE_ZEROS[name])
    assert len(data) < 500
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as e:
            gamemesh.load(data, "gltf")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"{peak / 2**20:.0f} MiB"  # (was 3-16 GiB)
    assert e.value.field == "/accessors/0/count"
    assert e.value.expected == "<= 65536" and e.value.actual == _HUGE


def test_cli_refuses_the_416_byte_file_in_one_line(tmp_path: Path) -> None:
    src = tmp_path / "acc_noview_2p28_vec3.glb"
    src.write_bytes(_glb(HUGE_ZEROS["position"]))
    for args in (["info", str(src)], ["convert", str(src), str(tmp_path / "o.glb")]):
        r = _cli(*args)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 1 and len(lines) == 1, r.stderr
        assert lines[0].startswith(f"gamemesh: error: {src}: gltf: (/accessors/0/count): "
                                   "accessor without a bufferView"), lines[0]
    assert not (tmp_path / "o.glb").exists()


def test_zero_filled_accessor_the_size_of_another_is_read(tmp_path: Path) -> None:
    """A sparse morph target on zeros (the usual use of an accessor without a bufferView) the
    size of its primitive's POSITION, which is larger than the floor: read as before."""
    n = 70_000
    pos = np.random.default_rng(1).random((n, 3), dtype=np.float32)
    blob = pos.tobytes() + np.array([5], np.uint32).tobytes() + np.ones(3, np.float32).tobytes()
    doc = {"asset": _ASSET, "buffers": [{"byteLength": len(blob)}],
           "bufferViews": [{"buffer": 0, "byteLength": n * 12},
                           {"buffer": 0, "byteOffset": n * 12, "byteLength": 4},
                           {"buffer": 0, "byteOffset": n * 12 + 4, "byteLength": 12}],
           "accessors": [{**_zeros(n, "VEC3"), "bufferView": 0,
                          "min": [0, 0, 0], "max": [1, 1, 1]},
                         {**_zeros(n, "VEC3"), "sparse": {
                             "count": 1, "indices": {"bufferView": 1, "componentType": 5125},
                             "values": {"bufferView": 2}}}],
           "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "mode": 0,
                                       "targets": [{"POSITION": 1}]}], "weights": [0.0]}],
           "nodes": [{"mesh": 0}], "scenes": [{"nodes": [0]}]}
    js = json.dumps(doc).encode()
    js += b" " * (-len(js) % 4)
    glb = (struct.pack("<III", 0x46546C67, 2, 28 + len(js) + len(blob))
           + struct.pack("<II", len(js), 0x4E4F534A) + js
           + struct.pack("<II", len(blob), 0x004E4942) + blob)
    target = gamemesh.load(glb, "gltf").meshes[0].primitives[0].targets[0].positions
    assert target is not None and target.shape == (n, 3)
    assert target[5].tolist() == [1.0, 1.0, 1.0] and not target[:5].any()


def test_memory_error_anywhere_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Outside the readers' guard (the scene's summary for info, a writer for convert), a
    MemoryError is still one line naming the input, exit 1."""
    from gamemesh.cli import main
    from gamemesh.registry import FormatSpec
    from gamemesh.scene import Scene

    src = tmp_path / "s.glb"
    src.write_bytes(_glb({"asset": _ASSET, "nodes": [{"name": "n"}], "scenes": [{"nodes": [0]}]}))

    def no_memory(*a: Any, **k: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(Scene, "summary", no_memory)
    monkeypatch.setattr(FormatSpec, "save_scene", no_memory)
    for args in (["info", str(src)], ["convert", str(src), str(tmp_path / "o.pmf")]):
        assert main(args) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"gamemesh: error: {src}: not enough memory to read or "
                       "convert this input"]


# -- issue 33, item 5: text no file can hold, numbers Python will not convert --------------------
def test_lone_surrogate_names_its_place(tmp_path: Path) -> None:
    text = json.dumps({"asset": _ASSET, "nodes": [{"name": "a"}, {"name": "b\ud800c"}],
                       "scenes": [{"nodes": [0, 1]}]})
    assert "\\ud800" in text  # valid JSON: an escape, not an encoded surrogate
    src = tmp_path / "surrogate.gltf"
    src.write_text(text)
    for args in (["info", str(src)], ["convert", str(src), str(tmp_path / "o.glb")]):
        r = _cli(*args)
        assert r.returncode == 1, r.stderr
        assert r.stderr.strip().splitlines() == [
            f"gamemesh: error: {src}: gltf: (/nodes/1/name): string holds a lone surrogate, "
            "which is not Unicode text, expected UTF-8 text, got a \\uD800-\\uDFFF escape"]


@pytest.mark.parametrize("text, place", [
    ('{"asset": {"version": "2.0"}, "extras": {"k\\udc00": 1}}', "/extras/k\\udc00"),
    ('{"asset": {"version": "2.0", "generator": "\\ud83d"}, "x": "\\ude00"}',
     "/asset/generator"),
])
def test_lone_surrogate_in_keys_and_halves_of_pairs(text: str, place: str) -> None:
    with pytest.raises(FormatError, match="lone surrogate") as e:
        gamemesh.load(text.encode(), "gltf")
    assert e.value.field == place


def test_surrogate_pair_and_escaped_backslash_are_text() -> None:
    scene = gamemesh.load(b'{"asset": {"version": "2.0"}, "nodes": [{"name": "\\ud83d\\ude00 '
                          b'\\\\ud800"}], "scenes": [{"nodes": [0]}]}', "gltf")
    assert scene.nodes[0].name == "\U0001F600 \\ud800"


def test_integer_too_long_names_its_place(tmp_path: Path) -> None:
    src = tmp_path / "long.gltf"
    src.write_text('{"asset": {"version": "2.0"}, "nodes": [{"name": "n", "extras": {"big": '
                   + "9" * 5000 + '}}], "scenes": [{"nodes": [0]}]}')
    for args in (["info", str(src)], ["convert", str(src), str(tmp_path / "o.glb")]):
        r = _cli(*args)
        assert r.returncode == 1, r.stderr
        assert r.stderr.strip().splitlines() == [
            f"gamemesh: error: {src}: gltf: (/nodes/0/extras/big): integer too long, "
            f"expected <= {sys.get_int_max_str_digits()} digits, got more"]


# -- issue 33, item 6: nothing the validator calls DUPLICATE_ELEMENTS is passed on ---------------
def test_scene_listing_a_node_twice_keeps_it_once(tmp_path: Path,
                                                  gltf_validator: Any) -> None:
    doc, path = _glb_json(tmp_path)
    first = doc["scenes"][0]["nodes"][0]
    doc["scenes"][0]["nodes"] = [first, *doc["scenes"][0]["nodes"], first]
    path.write_text(json.dumps(doc))
    report = gamemesh.convert(path, tmp_path / "out.glb")
    assert [n.message for n in report.notes if n.code == "gltf.duplicate_root"] == [
        f"scene 0 lists node(s) [{first}] more than once; each is kept once"]
    gltf_validator(tmp_path / "out.glb")
    assert gamemesh.load(tmp_path / "out.glb").roots == gamemesh.load(
        _gltf(tmp_path / "plain")).roots


def test_skin_listing_a_joint_twice_is_refused(tmp_path: Path) -> None:
    doc, path = _glb_json(tmp_path)
    joints = doc["skins"][0]["joints"]
    joints[-1] = joints[0]
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as e:
        gamemesh.convert(path, tmp_path / "out.glb")
    assert str(e.value) == (f"gltf: (/skins/0/joints): skin lists a joint twice, expected "
                            f"distinct nodes, got node {joints[0]} twice")
    assert not (tmp_path / "out.glb").exists()
