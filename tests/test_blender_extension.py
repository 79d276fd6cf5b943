"""The Blender extension: its zip, its gamemesh half, and the real thing in real Blender.

The last test installs the zip with Blender's own extension installer (``bpy==5.0.1`` from the
package index, named by ``GAMEMESH_BLENDER_PYTHON``; skipped, saying so, without it), imports a
corpus Papa unit, a corpus SPLASHPACK scene, a PBA and a PET character made by our writers,
exports to .papa, .pba and .pet, and reads those back with gamemesh.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gamemesh
from gamemesh.blender import bridge
from gamemesh.blender.extension import PLATFORMS, gamemesh_wheel
from gamemesh.blender.options import importable, options_for, prop_specs
from gamemesh.cli import main
from gamemesh.registry import by_name
from gamemesh.sample import sample_scene
from helpers import corpus_dir

HERE = Path(__file__).resolve().parent
PET_FIXTURES = HERE / "fixtures" / "pet"


def _assault_bot() -> Path:
    path = corpus_dir("papa") / "official_2014/pa/units/land_bots/assault_bot/assault_bot.papa"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in the corpus")
    return path


def _splashpack() -> Path:
    return corpus_dir("splashpack") / "v1-H_60byte-gameobject-16bpp__psxsplash-55c1d2c.bin"


@pytest.fixture(scope="module")
def extension_zip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The zip the CLI builds; Pillow's wheel comes from the package index (skip offline)."""
    out = tmp_path_factory.mktemp("ext") / "gamemesh.zip"
    r = subprocess.run([sys.executable, "-m", "gamemesh", "blender-extension", str(out),
                        "--platform", "linux-x64"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "pip could not download" in r.stderr:
        pytest.skip(f"no Pillow wheel from the package index: {r.stderr.strip()}")
    assert r.returncode == 0, r.stderr
    assert "linux-x64" in r.stdout and "pillow-" in r.stdout
    return out


# -- the zip --------------------------------------------------------------------------------

def test_extension_zip_has_manifest_addon_and_wheels(extension_zip: Path) -> None:
    with zipfile.ZipFile(extension_zip) as z:
        names = set(z.namelist())
        manifest = tomllib.loads(z.read("blender_manifest.toml").decode())
        addon = z.read("__init__.py").decode()
    assert manifest["schema_version"] == "1.0.0"
    assert (manifest["id"], manifest["type"]) == ("gamemesh", "add-on")
    assert manifest["version"] == gamemesh.__version__
    assert manifest["blender_version_min"] == "4.2.0"
    assert manifest["platforms"] == ["linux-x64"]
    wheels = [w.removeprefix("./") for w in manifest["wheels"]]
    assert set(wheels) <= names and len(wheels) == 2
    assert wheels[0] == f"wheels/gamemesh-{gamemesh.__version__}-py3-none-any.whl"
    pillow = wheels[1].split("/")[1].split("-")
    assert pillow[0] == "pillow" and pillow[2] == "cp311" and "manylinux" in pillow[-1]
    assert not any("numpy" in n for n in names)  # Blender ships numpy
    assert "from gamemesh.blender import register, unregister" in addon
    compile(addon, "__init__.py", "exec")


def test_gamemesh_wheel_is_complete_and_its_record_true() -> None:
    name, data = gamemesh_wheel()
    assert name == f"gamemesh-{gamemesh.__version__}-py3-none-any.whl"
    src = Path(gamemesh.__file__).resolve().parent
    wanted = {p.relative_to(src.parent).as_posix() for p in src.rglob("*")
              if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    with zipfile.ZipFile(__import__("io").BytesIO(data)) as z:
        names = set(z.namelist())
        dist = f"gamemesh-{gamemesh.__version__}.dist-info"
        assert wanted <= names
        assert {"gamemesh/blender/operators.py", "gamemesh/py.typed"} <= names
        meta = z.read(f"{dist}/METADATA").decode()
        assert "Name: gamemesh" in meta and "Requires-Dist: numpy" in meta
        assert "Root-Is-Purelib: true" in z.read(f"{dist}/WHEEL").decode()
        rows = [r.split(",") for r in z.read(f"{dist}/RECORD").decode().splitlines()]
        assert {r[0] for r in rows} == names
        for path, digest, size in rows:
            if path.endswith("RECORD"):
                continue
            body = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=")
            assert (digest, int(size)) == ("sha256=" + want.decode(), len(body)), path
    assert gamemesh_wheel()[1] == data  # reproducible


def test_offline_build_without_a_pillow_wheel_is_one_error_line(tmp_path: Path,
                                                                capsys: Any) -> None:
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "pillow-12.0.0-cp312-cp312-win_amd64.whl").write_bytes(b"x")
    code = main(["blender-extension", str(tmp_path / "ext.zip"), "--wheels",
                 str(tmp_path / "wheels"), "--platform", "windows-x64"])
    err = capsys.readouterr().err
    assert code == 1 and "no Pillow wheel for Python 3.11 on windows-x64" in err
    assert not (tmp_path / "ext.zip").exists()


def test_offline_build_from_a_wheel_folder(tmp_path: Path, extension_zip: Path) -> None:
    with zipfile.ZipFile(extension_zip) as z:
        pillow = next(n for n in z.namelist() if n.startswith("wheels/pillow-"))
        (tmp_path / Path(pillow).name).write_bytes(z.read(pillow))
    out = tmp_path / "out" / "ext.zip"
    assert main(["blender-extension", str(out), "--wheels", str(tmp_path)]) == 0
    with zipfile.ZipFile(out) as z:
        assert pillow in z.namelist()


def test_every_blender_platform_has_a_pip_tag() -> None:
    # The names Blender's manifest accepts.
    assert set(PLATFORMS) == {"linux-x64", "windows-x64", "windows-arm64", "macos-arm64",
                              "macos-x64"}


# -- the gamemesh half, without Blender -----------------------------------------------------

def test_package_imports_without_bpy() -> None:
    code = ("import sys, gamemesh.blender as b; import gamemesh.blender.bridge; "
            "assert 'bpy' not in sys.modules; print(callable(b.register))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(HERE.parent / "src")})
    assert r.returncode == 0 and r.stdout.strip() == "True", r.stderr


def test_every_format_option_is_a_property() -> None:
    props = {p.option.name: p for p in prop_specs()}
    every = {o.name for s in gamemesh.formats() for o in s.options}
    assert set(props) == every
    assert props["with"].name == "with_"  # a Python keyword Blender refuses
    assert (props["gte_scaling"].kind, props["gte_scaling"].default) == ("float", 0.0)
    assert props["euler_order"].kind == "enum" and props["euler_order"].default == "XYZ"
    assert props["bpp"].items[0][0] == "DEFAULT" and props["team_color"].kind == "str"
    assert props["texture_dir"].kind == "str" and "separate with ;" in \
        props["texture_dir"].description


def test_property_values_become_the_formats_options() -> None:
    sp, pet, pmf = by_name("splashpack"), by_name("pet"), by_name("pmf")
    assert options_for(sp, {"gte_scaling": 0.0, "bpp": "DEFAULT", "layout": "DEFAULT",
                            "splash_version": "DEFAULT"}) == {}
    # The written version is an enum of ints; choosing layout G asks for version 1.
    assert options_for(sp, {"splash_version": "24", "layout": "G"}) == {
        "splash_version": 24, "layout": "G"}
    assert options_for(sp, {"gte_scaling": 200.0, "bpp": "8", "lua": " a.lua; b.lua;"}) == {
        "gte_scaling": 200.0, "bpp": 8, "lua": ["a.lua", "b.lua"]}
    assert options_for(pet, {"texture_dir": "", "with_": "x.mpet", "character": True,
                             "gte_scaling": 5.0}) == {"with": ["x.mpet"], "character": True}
    assert options_for(pmf, {"euler_order": "ZYX", "fps": 0, "default_fps": 10}) == {
        "euler_order": "ZYX"}
    for spec in importable():
        spec.check_options(options_for(spec, {p.name: p.default for p in prop_specs()}))


def test_bridge_import_gives_glb_images_and_properties() -> None:
    path = _assault_bot()
    imported = bridge.import_glb(path, "AUTO", {"gte_scaling": 3.0})
    assert imported.format == "papa" and imported.glb[:4] == b"glTF"
    assert imported.properties["source_file"] == "assault_bot.papa"
    assert imported.properties["options"] == {}  # splashpack's option stays out of a Papa load
    assert imported.properties["extras"]["kind"] == "model"
    images = bridge.glb_images(imported.glb)
    assert [(i.name, i.extras.get("role")) for i in images] == [
        ("assault_bot_diffuse", "diffuse"), ("assault_bot_mask", "mask"),
        ("assault_bot_material", "material")]
    assert all(i.data[:8] == b"\x89PNG\r\n\x1a\n" for i in images)
    scene = gamemesh.load(imported.glb, "gltf")
    assert scene.summary()["bones"] == 21 and len(scene.animations) == 2


def test_bridge_export_errors_are_format_errors(tmp_path: Path) -> None:
    glb = tmp_path / "s.glb"
    gamemesh.save(sample_scene(), glb)
    with pytest.raises(gamemesh.FormatError, match="cannot tell the format"):
        bridge.export_glb(glb, tmp_path / "out.xyz", "AUTO", {})
    spec, notes, scene = bridge.export_glb(glb, tmp_path / "out.bin", "PBA", {})
    assert spec.name == "pba" and (tmp_path / "out.bin").is_file()
    # the writer's own note, then the save path's loss check (material names: issue 12 item 10)
    assert [n.code for n in notes] == ["pba.skin_baked", "pba.lost.names"]
    assert "source_file" not in scene.extras


def test_extra_maps_replace_stale_indices(tmp_path: Path) -> None:
    scene = sample_scene()
    scene.materials[0].extras.update({"mask_image": 7, "material_image": 0, "other": 1})
    png = bridge.glb_images(bridge.import_glb(_pba_sample(tmp_path), "AUTO", {}).glb)[0]
    n = len(scene.images)
    bridge.attach_maps(scene, {scene.materials[0].name: {"mask": png}})
    assert scene.materials[0].extras == {"mask_image": n, "other": 1}
    assert scene.images[n].data == png.data and scene.images[n].mime_type == "image/png"
    files = by_name("papa").save_scene(scene, gamemesh.registry.Context(tmp_path / "u.papa"))
    assert sorted(files) == ["u.papa", "u_anim_bend.papa", "u_anim_twist.papa",
                             "u_diffuse.papa", "u_mask.papa"]


def _pba_sample(tmp_path: Path) -> Path:
    gamemesh.save(sample_scene(), tmp_path / "char.pba")
    return tmp_path / "char.pba"


def test_id_properties_are_what_blender_stores() -> None:
    got = bridge.id_property({"a": None, 1: True, "big": 1 << 40, "mix": [1, "x"],
                              "arr": np.float32(2.5), "nested": {"l": [1.0, 2.0]}})
    assert got == {"1": 1, "big": str(1 << 40), "mix": '[1, "x"]', "arr": "2.5",
                   "nested": {"l": [1.0, 2.0]}}
    notes = [gamemesh.Note("a", "x"), gamemesh.Note("b", "y"), gamemesh.Note("a", "x")]
    assert [(n.code, c) for n, c in bridge.collapse_notes(notes)] == [("a", 2), ("b", 1)]


# -- in real Blender ------------------------------------------------------------------------

def _blender_python() -> str:
    exe = os.environ.get("GAMEMESH_BLENDER_PYTHON")
    if not exe:
        pytest.skip("GAMEMESH_BLENDER_PYTHON is not set (a Python 3.11 with `bpy` installed; "
                    "scripts/test makes one where python3.11 exists)")
    return exe


def _run_blender(exe: str, zip_path: Path, steps: list[dict[str, Any]],
                 home: Path) -> tuple[list[dict[str, Any]], str]:
    script = HERE / "blender" / "extension_check.py"
    (home / "steps.json").write_text(json.dumps(steps))
    # A user folder of its own (Blender installs extensions there), and no PYTHONPATH: gamemesh
    # must come from the zip's wheel, not from this checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["BLENDER_USER_RESOURCES"] = str(home / "blender")
    r = subprocess.run([exe, str(script), str(zip_path), str(home / "steps.json")], env=env,
                       capture_output=True, text=True, timeout=600)
    results = [json.loads(line.split(" ", 1)[1]) for line in r.stdout.splitlines()
               if line.startswith("GAMEMESH_RESULT ")]
    assert len(results) == len(steps) + 1, r.stdout[-3000:] + r.stderr[-3000:]
    return results, r.stdout


def test_blenders_own_validator_accepts_the_zip(extension_zip: Path) -> None:
    """``blender --command extension validate``: the checks of Blender's extension platform
    (field lengths, wheel paths), stricter than Install from Disk."""
    exe = _blender_python()
    cli = sorted((Path(exe).parent.parent / "lib").glob(
        "python3*/site-packages/bpy/*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    assert cli, f"no blender_ext.py in the bpy install of {exe}"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([exe, str(cli[-1]), "validate", str(extension_zip)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "Success" in r.stdout, r.stdout + r.stderr


def test_extension_in_real_blender(tmp_path: Path, extension_zip: Path) -> None:
    exe = _blender_python()
    bot, splash = _assault_bot(), _splashpack()
    bot_scene = gamemesh.load(bot)
    (tmp_path / "pba").mkdir()
    gamemesh.save(sample_scene(), tmp_path / "pba" / "char.pba")  # + its PTX texture
    (tmp_path / "pet").mkdir()
    for part in PET_FIXTURES.glob("tube_13.*"):  # .pet .bpet .mpet .apet, our writer's
        shutil.copy(part, tmp_path / "pet")
    (tmp_path / "bad.papa").write_bytes(b"papa" + b"\xff" * 60)
    gamemesh.save(sample_scene(), tmp_path / "sample.pmf")
    out = tmp_path / "out"
    steps: list[dict[str, Any]] = [
        {"do": "import", "path": str(bot)},
        {"do": "export", "path": str(out / "bot.papa")},
        {"do": "export", "path": str(out / "bot.pba")},
        {"do": "export", "path": str(out / "bot.pet")},
        {"do": "reset"}, {"do": "import", "path": str(splash)},
        {"do": "reset"}, {"do": "import", "path": str(splash), "format": "SPLASHPACK",
                          "options": {"gte_scaling": 200.0}},
        {"do": "reset"}, {"do": "import", "path": str(tmp_path / "pba" / "char.pba")},
        {"do": "reset"}, {"do": "import", "path": str(tmp_path / "pet" / "tube_13.bpet")},
        {"do": "export", "path": str(out / "tube.pet")},
        {"do": "reset"}, {"do": "import", "path": str(tmp_path / "bad.papa")},
        {"do": "export", "path": str(out / "nothing.xyz")},
        # The other formats both ways: PMF, a PTX texture alone, SPLASHPACK.
        {"do": "reset"}, {"do": "import", "path": str(tmp_path / "sample.pmf")},
        {"do": "export", "path": str(out / "again.pmf")},
        {"do": "reset"}, {"do": "import", "path": str(tmp_path / "pba" / "char_checker.ptx")},
        {"do": "reset"}, {"do": "import", "path": str(splash)},
        {"do": "export", "path": str(out / "level.splashpack")},
    ]
    results, log = _run_blender(exe, extension_zip, steps, tmp_path)
    installed, papa, *exports = results[:5]
    splash1, splash2, pba, pet, pet_out = results[6], results[8], results[10], results[12], \
        results[13]
    bad_in, bad_out = results[15], results[16]

    # Installed by Blender's installer: gamemesh and Pillow are the zip's wheels.
    assert "/extensions/" in installed["gamemesh_file"].replace(os.sep, "/")
    assert str(HERE.parent) not in installed["gamemesh_file"]
    assert installed["pillow"]
    assert {"format", "gte_scaling", "euler_order", "team_color", "with_"} <= set(
        installed["import_props"])
    assert {"format", "use_selection", "kind", "ptx_bpp"} <= set(installed["export_props"])
    assert len(installed["menus"]) == 2
    # The dialogs' side panels: the registry's options, one panel per format, the file's open.
    ui = installed["ui"]
    panels = {p[1]: p[2] for p in ui["import"] if isinstance(p, list) and p[0] == "panel"}
    assert panels["GAMEMESH_papa"] is False and panels["GAMEMESH_splashpack"] is True
    drawn = {e for e in ui["import"] if isinstance(e, str)}
    assert {"format", "team_color", "no_siblings"} <= drawn
    assert "gte_scaling" not in drawn  # a closed panel draws nothing
    export_panels = {p[1]: p[2] for p in ui["export"] if isinstance(p, list) and
                     p[0] == "panel"}
    assert export_panels["GAMEMESH_splashpack"] is False and "gte_scaling" in ui["export"]
    # One menu entry per format, each preset to it.
    menu = {e["text"]: e.get("format") for e in ui["import_menu"]}
    assert menu["Any gamemesh format"] == "AUTO"
    assert {f.upper() for f in menu.values()} == {"AUTO"} | {s.name.upper()
                                                             for s in importable()}
    assert "PBA" in {e.get("format") for e in ui["export_menu"]}

    # The Papa unit, whole: one mesh, 21 bones, both animations, all three textures.
    assert papa["status"] == ["FINISHED"], papa
    assert (papa["meshes"], papa["bones"]) == (1, 21)
    assert papa["actions"] == sorted(a.name for a in bot_scene.animations) == ["idle", "run"]
    assert papa["images"] == ["assault_bot_diffuse", "assault_bot_mask", "assault_bot_material"]
    assert papa["packed"]
    # Blender drops the unit's 3 degenerate triangles (two corners at one position).
    assert papa["polygons"] == bot_scene.summary()["triangles"] - 3
    assert papa["top"] == pytest.approx(bot_scene.summary()["bounds"]["max"][1], abs=1e-4)
    props = papa["root_props"][0]
    assert (props["format"], props["source_file"]) == ("papa", "assault_bot.papa")
    assert props["extras"]["version"] == "3.0"

    # Exports, read back by gamemesh.
    assert all(e["status"] == ["FINISHED"] for e in exports), exports
    for name, bones, maps in (("bot.papa", 21, 3), ("bot.pba", 0, 1), ("bot.pet", 21, 1)):
        s = gamemesh.load(out / name).summary()
        assert (s["meshes"], s["triangles"], s["bones"]) == (1, 682, bones), name
        assert [a["name"] for a in s["animations"]] == ["idle", "run"], name
        assert s["textures"] - s["textures_missing"] == maps, name
        np.testing.assert_allclose(s["bounds"]["max"], bot_scene.summary()["bounds"]["max"],
                                   atol=1e-3, err_msg=name)
    assert (out / "bot_anim_idle.papa").is_file() and (out / "bot_diffuse.papa").is_file()
    # The mask and material maps went Papa -> Blender (unconnected nodes) -> Papa, unchanged.
    for role in ("mask", "material"):
        a = gamemesh.load(bot.with_name(f"assault_bot_{role}.papa")).images[0].pixels
        b = gamemesh.load(out / f"bot_{role}.papa").images[0].pixels
        assert a is not None and b is not None and a.shape == b.shape == (128, 128, 4), role
        assert np.abs(a.astype(int) - b.astype(int)).mean() < 4.0, role  # DXT1 again
    assert "Warning: pba.skin_baked" in log  # notes reach Blender's report
    assert log.count("Warning: pet.anim_step") == 2  # once per export, with its count

    # SPLASHPACK: every object, its texture page, and the GTE scaling option at work.
    want = gamemesh.load(splash).summary()
    assert splash1["meshes"] == want["meshes"] == 7
    assert splash1["polygons"] == want["triangles"]
    assert len(splash1["images"]) == want["textures"] - want["textures_missing"]
    assert splash1["root_props"][0]["extras"]["splashpack"]["gte_scaling"] == 100.0
    assert splash2["top"] == pytest.approx(2 * splash1["top"], rel=1e-5)
    assert splash2["root_props"][0]["options"] == {"gte_scaling": 200.0}

    # PBA with its PTX; the PET character from its parts.
    assert (pba["meshes"], pba["polygons"], pba["images"]) == (1, 36, ["char_checker"])
    assert pba["actions"] == ["bend", "twist"]
    assert (pet["meshes"], pet["bones"], pet["actions"]) == (1, 5, ["idle", "walk"])
    assert pet["root_props"][0]["extras"]["pet_kind"] == "bpet"
    assert pet_out["status"] == ["FINISHED"]
    s = gamemesh.load(out / "tube.pet").summary()
    assert (s["bones"], s["triangles"]) == (5, pet["polygons"])
    assert [a["name"] for a in s["animations"]] == ["idle", "walk"]

    # Errors: one clear line in Blender's report, no traceback, nothing written.
    assert "papa: at 0x0 (magic)" in bad_in["error"] and bad_in["meshes"] == 0
    assert "cannot tell the format" in bad_out["error"]
    assert "Traceback" not in log
    assert not (out / "nothing.xyz").exists()

    pmf, pmf_out, ptx, splash3, splash_out = (results[i] for i in (18, 19, 21, 23, 24))
    assert (pmf["meshes"], pmf["polygons"], pmf["actions"]) == (3, 36, ["bend", "twist"])
    assert pmf_out["status"] == ["FINISHED"]
    s = gamemesh.load(out / "again.pmf").summary()
    assert (s["meshes"], s["triangles"]) == (3, 36)
    assert [a["name"] for a in s["animations"]] == ["bend", "twist"]
    assert (ptx["meshes"], ptx["polygons"], ptx["images"]) == (1, 2, ["char_checker"])
    assert splash3["meshes"] == 7 and splash_out["status"] == ["FINISHED"], splash_out
    # Written as version 23 (the default): every object comes back; the v1 navmesh does not
    # (v23 holds nav regions, which gamemesh does not build; a warning says so).
    s = gamemesh.load(out / "level.splashpack").summary()
    nav = sum(len(n) for n in gamemesh.read_native(splash).navmeshes)
    assert (s["meshes"], s["triangles"]) == (6, want["triangles"] - nav)
