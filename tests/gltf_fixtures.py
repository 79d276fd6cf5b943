"""Small glTF files built by hand, to exercise what gamemesh's own writer never produces:
sparse accessors, data URIs, interleaved (strided) views, normalized integer attributes, external
images, CUBICSPLINE and STEP samplers, morph targets with weight animations, several scenes and
KHR extensions."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

from gamemesh.textures import encode_png


class Doc:
    def __init__(self) -> None:
        self.buf = bytearray()
        self.js: dict[str, Any] = {"asset": {"version": "2.0", "generator": "hand-made"},
                                   "bufferViews": [], "accessors": []}

    def view(self, data: bytes, stride: int | None = None, target: int | None = None) -> int:
        self.buf += b"\0" * ((-len(self.buf)) % 4)
        v: dict[str, Any] = {"buffer": 0, "byteOffset": len(self.buf), "byteLength": len(data)}
        if stride:
            v["byteStride"] = stride
        if target:
            v["target"] = target
        self.buf += data
        self.js["bufferViews"].append(v)
        return len(self.js["bufferViews"]) - 1

    def acc(self, view: int | None, comp: int, count: int, typ: str, offset: int = 0,
            **extra: Any) -> int:
        a: dict[str, Any] = {"componentType": comp, "count": count, "type": typ, **extra}
        if view is not None:
            a["bufferView"] = view
            if offset:
                a["byteOffset"] = offset
        self.js["accessors"].append(a)
        return len(self.js["accessors"]) - 1

    def floats(self, arr: np.ndarray, typ: str, minmax: bool = False, target: int | None = None
               ) -> int:
        a = np.asarray(arr, dtype="<f4")
        extra = {"min": a.reshape(len(a), -1).min(0).tolist(),
                 "max": a.reshape(len(a), -1).max(0).tolist()} if minmax else {}
        return self.acc(self.view(a.tobytes(), target=target), 5126, len(a), typ, **extra)


QUAD = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float32)


def features_gltf(folder: Path, *, data_uri: bool = True) -> Path:
    """A .gltf with a data-URI buffer, an external PNG, an interleaved position/normal view,
    normalized u8 colours, a sparse morph target, CUBICSPLINE + STEP samplers, a weights
    animation, two scenes and KHR_texture_transform / emissive strength."""
    d = Doc()
    # Interleaved POSITION + NORMAL (stride 24).
    inter = np.zeros((4, 6), dtype="<f4")
    inter[:, :3] = QUAD
    inter[:, 5] = 1.0
    v = d.view(inter.tobytes(), stride=24, target=34962)
    pos = d.acc(v, 5126, 4, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    nrm = d.acc(v, 5126, 4, "VEC3", offset=12)
    col = d.acc(d.view(np.array([[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255],
                                 [255, 255, 255, 128]], dtype=np.uint8).tobytes()),
                5121, 4, "VEC4", normalized=True)
    uv = d.floats(np.array([[0, 1], [1, 1], [1, 0], [0, 0]]), "VEC2")
    idx = d.acc(d.view(np.array([0, 1, 2, 0, 2, 3], dtype="<u2").tobytes()), 5123, 6,
                "SCALAR")
    # Sparse morph target: vertex 2 moves +0.5 in z, everything else zero.
    sp_idx = d.view(np.array([2], dtype="<u2").tobytes() + b"\0\0")
    sp_val = d.view(np.array([[0, 0, 0.5]], dtype="<f4").tobytes())
    morph = d.acc(None, 5126, 4, "VEC3", min=[0, 0, 0], max=[0, 0, 0.5],
                  sparse={"count": 1, "indices": {"bufferView": sp_idx, "componentType": 5123},
                          "values": {"bufferView": sp_val}})
    t = d.floats(np.array([0.0, 0.5, 1.0]), "SCALAR", minmax=True)
    # CUBICSPLINE translation: (in, value, out) per key.
    cs = np.zeros((9, 3), dtype=np.float32)
    cs[1::3, 1] = [0.0, 1.0, 0.0]
    cubic = d.floats(cs, "VEC3")
    step = d.floats(np.array([[0, 0, 0, 1], [0, 0.7071068, 0, 0.7071068], [0, 0, 0, 1]]),
                    "VEC4")
    wts = d.floats(np.array([0.0, 1.0, 0.0]), "SCALAR")
    d.js.update({
        "scene": 1,
        "scenes": [{"name": "empty"}, {"name": "main", "nodes": [0]}],
        "nodes": [{"name": "root", "children": [1], "translation": [0, 0, 1]},
                  {"name": "quad", "mesh": 0, "rotation": [0, 0, 0, 1],
                   "extras": {"tag": "x"}}],
        "meshes": [{"name": "quad", "weights": [0.25], "extras": {"targetNames": ["lift"]},
                    "primitives": [{"attributes": {"POSITION": pos, "NORMAL": nrm,
                                                   "COLOR_0": col, "TEXCOORD_0": uv},
                                    "indices": idx, "material": 0,
                                    "targets": [{"POSITION": morph}]}]}],
        "materials": [{"name": "mat", "alphaMode": "BLEND", "emissiveFactor": [1, 0.5, 0],
                       "pbrMetallicRoughness": {
                           "baseColorTexture": {"index": 0, "extensions": {
                               "KHR_texture_transform": {"scale": [2, 2]}}},
                           "metallicFactor": 0.0},
                       "extensions": {"KHR_materials_emissive_strength":
                                      {"emissiveStrength": 3.0}}}],
        "textures": [{"source": 0, "sampler": 0}],
        "samplers": [{"magFilter": 9728, "minFilter": 9728, "wrapS": 33071, "wrapT": 33071}],
        "images": [{"uri": "tex%20ture.png"}],
        "animations": [{"name": "move", "channels": [
            {"sampler": 0, "target": {"node": 1, "path": "translation"}},
            {"sampler": 1, "target": {"node": 1, "path": "rotation"}},
            {"sampler": 2, "target": {"node": 1, "path": "weights"}}],
            "samplers": [{"input": t, "output": cubic, "interpolation": "CUBICSPLINE"},
                         {"input": t, "output": step, "interpolation": "STEP"},
                         {"input": t, "output": wts}]}],
        "extensionsUsed": ["KHR_texture_transform", "KHR_materials_emissive_strength"],
    })
    folder.mkdir(parents=True, exist_ok=True)
    px = np.zeros((4, 4, 4), dtype=np.uint8)
    px[..., 0] = 200
    px[..., 3] = 255
    (folder / "tex ture.png").write_bytes(encode_png(px))
    buf = bytes(d.buf)
    if data_uri:
        d.js["buffers"] = [{"byteLength": len(buf), "uri": "data:application/octet-stream;"
                            "base64," + base64.b64encode(buf).decode()}]
    else:
        (folder / "features.bin").write_bytes(buf)
        d.js["buffers"] = [{"byteLength": len(buf), "uri": "features.bin"}]
    out = folder / "features.gltf"
    out.write_text(json.dumps(d.js, indent=1))
    return out


def glb_bytes(js: dict[str, Any], binary: bytes = b"") -> bytes:
    j = json.dumps(js).encode()
    j += b" " * ((-len(j)) % 4)
    body = struct.pack("<II", len(j), 0x4E4F534A) + j
    if binary:
        binary += b"\0" * ((-len(binary)) % 4)
        body += struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body
