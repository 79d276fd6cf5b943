"""PET characters: the parts of a character found beside the main file (or given) and
assembled into one scene with one skeleton."""

from __future__ import annotations

import importlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.helpers import mean_winding_dot

import gamemesh
from gamemesh.errors import FormatError
from gamemesh.formats.pet import SPEC
from gamemesh.formats.pet.files import character_files, siblings
from gamemesh.formats.pet.sample import build
from gamemesh.formats.pet.write import write
from gamemesh.registry import Context

ts = importlib.import_module("gamemesh.formats.pet.to_scene")
mesh_mod = importlib.import_module("gamemesh.formats.pet.mesh")


def fixture(kind: str, version: tuple[int, int], escape: bool = False) -> bytes:
    return write(build(kind, version, escape=escape))


# -- characters ----------------------------------------------------------------------------------
def _character(folder: Path) -> dict[str, Path]:
    files = {"bpet": folder / "h_def.bpet", "ha": folder / "h_ha_01.mpet",
             "ts": folder / "h_ts_01.mpet", "apet": folder / "h_def.apet",
             "other": folder / "k_def.bpet"}
    files["bpet"].write_bytes(fixture("bpet", (1, 3)))
    files["ha"].write_bytes(write(build("mpet", (1, 3), rings=3, sides=5)))
    files["ts"].write_bytes(write(build("mpet", (1, 2), rings=4, sides=8)))
    files["apet"].write_bytes(fixture("apet", (1, 3)))
    files["other"].write_bytes(fixture("bpet", (1, 1)))
    return files


def test_siblings_follow_the_prefix_rule(tmp_path: Path) -> None:
    f = _character(tmp_path)
    # A skeleton's load reads its character; parts alone read nothing else.
    assert siblings(f["bpet"]) == sorted([f["apet"], f["ha"], f["ts"]])
    assert siblings(f["ha"]) == [] and siblings(f["apet"]) == []
    assert character_files(f["ha"]) == sorted([f["apet"], f["bpet"], f["ts"]])
    assert SPEC.siblings.resolved is siblings  # type: ignore[union-attr]
    alone = gamemesh.load(f["bpet"], no_parts=True)
    assert not alone.meshes and not alone.animations
    part = gamemesh.load(f["ha"])
    assert [n.name for n in part.nodes if n.mesh is not None] == ["h_ha_01"]


@pytest.mark.parametrize("how", ["with", "character", "default"])
def test_character_assembles_into_one_glb(tmp_path: Path, gltf_validator: Any,
                                          how: str) -> None:
    f = _character(tmp_path)
    opts: dict[str, Any] = {"with": {"with": [f["ha"], f["ts"], f["apet"]]},
                            "character": {"character": True}, "default": {}}[how]
    # --character works from any file of the character; a .bpet reads its parts by default.
    main = f["ha"] if how == "character" else f["bpet"]
    scene = gamemesh.load(main, **opts)
    scene.validate()
    assert len(scene.skins) == 1 and len(scene.skins[0].joints) == 5
    skinned = [n for n in scene.nodes if n.mesh is not None]
    assert sorted(n.name for n in skinned) == ["h_ha_01", "h_ts_01"]
    assert all(n.skin == 0 for n in skinned)
    assert [a.name for a in scene.animations] == ["idle", "walk"]
    bone_nodes = set(scene.skins[0].joints)
    assert all(c.node in bone_nodes for a in scene.animations for c in a.channels)
    # The parts sit on the .bpet's bind pose: the same tube as the .pet gives.
    for n in skinned:
        pos = np.concatenate([p.positions for p in scene.meshes[n.mesh].primitives])  # type: ignore[index]
        assert np.allclose(pos[:, 1].min(), 0, atol=1e-4)
        assert np.allclose(pos[:, 1].max(), 2, atol=2e-2)
    assert mean_winding_dot(scene) > 0.8
    out = tmp_path / "h.glb"
    report = gamemesh.convert(main, out, **opts)
    assert report.outputs == [str(out)]
    gltf_validator(out)


def test_missing_part_is_a_format_error(tmp_path: Path) -> None:
    f = _character(tmp_path)
    with pytest.raises(FormatError, match="cannot read"):
        gamemesh.load(f["bpet"], **{"with": [tmp_path / "nope.mpet"]})


def test_parts_sharing_bones_share_their_skeleton_and_bind_transforms(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A character's parts with the same bones reuse one skeleton and bind transform; parts
    with other matrices, parents or names get their own: the GLB is the one made part by
    part."""

    (tmp_path / "h_def.bpet").write_bytes(write(build("bpet", (1, 3))))
    docs = {name: build("mpet", (1, 3), rings=rings, sides=5)
            for name, rings in (("a", 3), ("b", 4), ("c", 3), ("d", 5), ("e", 4))}
    bc, bd, be = docs["c"].bones, docs["d"].bones, docs["e"].bones
    assert bc is not None and bc.matrices is not None and bd is not None and be is not None
    bc.matrices[2, 9] += 0.25  # another bind pose
    bd.names[1] = b"Bip01 Other"  # a bone the skeleton lacks
    be.parents[3] = 0
    for name, doc in docs.items():
        (tmp_path / f"h_{name}_01.mpet").write_bytes(write(doc))

    def glb() -> bytes:
        buf = io.BytesIO()
        gamemesh.save(gamemesh.load(tmp_path / "h_def.bpet"), buf, format="glb")
        return buf.getvalue()

    shared = glb()
    calls: list[int] = []
    make = ts.make_skeleton
    for mod in (ts, mesh_mod):
        monkeypatch.setattr(mod, "make_skeleton", lambda *a: calls.append(1) or make(*a))
    assert glb() == shared and len(calls) == 1 + 4  # the skeleton, then a, c, d, e

    def uncached_rebind(self: Any, wm: Any, bone_map: Any) -> Any:
        return self.sk.world[bone_map] @ mesh_mod.safe_inverse(wm)

    monkeypatch.setattr(mesh_mod.MeshBuilder, "_own_skeleton",
                        lambda self, unit: make(unit, Context(None, {}, [])))
    monkeypatch.setattr(mesh_mod.MeshBuilder, "_rebind", uncached_rebind)
    assert glb() == shared
