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
from gamemesh.blender.options import (
    DIRECTIONS,
    exportable,
    importable,
    options_for,
    prop_specs,
    team_colors,
)
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
    # Exclusive: every Blender the manifest admits embeds Python 3.11, the bundled Pillow's.
    assert manifest["blender_version_max"] == "5.1.0"
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
    # Each option has a direction, so a new one never lands in the wrong dialog.
    assert set(DIRECTIONS) == every
    assert props["with"].name == "with_"  # a Python keyword Blender refuses
    assert (props["gte_scaling"].kind, props["gte_scaling"].default) == ("float", 0.0)
    assert props["euler_order"].kind == "enum" and props["euler_order"].default == "XYZ"
    assert props["bpp"].items[0][0] == "DEFAULT" and props["team_color"].kind == "str"
    assert props["texture_dir"].kind == "str" and "separate with ;" in \
        props["texture_dir"].description
    assert (props["texture_dir"].subtype, props["diffuse"].subtype) == ("DIR_PATH", "FILE_PATH")
    assert props["team_color"].subtype == "NONE"


def test_dialogs_show_the_options_of_their_direction() -> None:
    """Issue 30 item 3: Import shows what reading takes, Export what writing takes."""
    imp = {p.name for p in prop_specs(importable(), "import")}
    exp = {p.name for p in prop_specs(exportable(), "export")}
    assert {"no_textures", "pet_version", "lua", "csg", "ptx_bpp", "bpp"}.isdisjoint(imp)
    assert {"team_color", "with_", "no_siblings", "texture_dir", "extract"}.isdisjoint(exp)
    assert {"gte_scaling", "euler_order", "flip_v"} <= imp & exp  # both ways
    papa_exp = [p.name for p in prop_specs([by_name("papa")], "export")]
    assert papa_exp == ["no_textures", "no_animations", "diffuse", "mask", "material",
                        "texture_format", "csg", "csg_texture_dir"]
    labels = {p.name: p.label for p in prop_specs()}
    assert (labels["gte_scaling"], labels["ptx_bpp"], labels["pet_version"]) == (
        "GTE scaling", "PTX bits per pixel", "PET version")
    assert (labels["with_"], labels["lua"], labels["texture_dir"]) == (
        "Other character files", "Lua scripts", "Texture folders")


def test_team_colour_presets() -> None:
    assert team_colors("NONE", (1, 1, 1), (0, 0, 0)) is None
    assert team_colors("MLA", (1, 1, 1), (0, 0, 0)) == ("007CFF", "FF6400")
    assert team_colors("LEGION", (1, 1, 1), (1, 1, 1)) == ("FF0000", "000000")
    assert team_colors("CUSTOM", (0.2, 0.4, 1.5), (0, 0, 0)) == ("3366FF", "000000")


def test_secondary_team_colour_tints_the_masks_green() -> None:
    path = _assault_bot()
    plain = bridge.import_glb(path, "AUTO", {"team_color": "FF0000"})
    both = bridge.import_glb(path, "AUTO", {"team_color": "FF0000"}, secondary="000000")
    a, b = (bridge.glb_images(x.glb)[0] for x in (plain, both))
    pa, pb = (gamemesh.textures.decode_image(x.data) for x in (a, b))
    mask = gamemesh.load(path.with_name("assault_bot_mask.papa")).images[0].pixels
    assert mask is not None
    green = mask[..., 1] > 128
    assert green.any() and pb[green][:, :3].mean() < pa[green][:, :3].mean() * 0.6
    np.testing.assert_array_equal(pa[mask[..., 1] == 0], pb[mask[..., 1] == 0])
    assert b.extras["team_secondary"] == "000000"


def test_export_defaults_come_from_the_import() -> None:
    splash = bridge.import_glb(_splashpack(), "AUTO", {"gte_scaling": 200.0})
    got = bridge.export_defaults(splash.properties)
    assert got == {"format": "SPLASHPACK", "stem": _splashpack().name.split(".")[0],
                   "splash_version": "1", "layout": "H", "gte_scaling": 200.0}
    bot = bridge.import_glb(_assault_bot(), "AUTO", {})
    assert bridge.export_defaults(bot.properties) == {"format": "PAPA", "stem": "assault_bot"}
    # The last export's choices win over the import's.
    kept = {**splash.properties, "export": {"format": "PBA", "ptx_bpp": "24"}}
    assert bridge.export_defaults(kept)["format"] == "PBA"
    assert bridge.export_defaults(kept)["ptx_bpp"] == "24"
    pet = bridge.export_defaults({"format": "pet", "extras": {"pet_version": "1.2"}})
    assert pet == {"format": "PET", "pet_version": "1.2"}


def test_bones_match_by_name_loosely() -> None:
    bones = ["bone_root", "Bone_Pelvis.001", "bone-head", "other"]
    tracks = ["bone_root", "bone_pelvis", "BONE_HEAD", "bone_tail"]
    assert bridge.match_bones(tracks, bones) == {
        "bone_root": "bone_root", "bone_pelvis": "Bone_Pelvis.001", "BONE_HEAD": "bone-head"}


def test_a_hierarchy_too_deep_for_blender_is_one_error(tmp_path: Path) -> None:
    """Issue 33 item 11: a 2,000-deep chain ends in one line, before Blender's importer."""
    scene = gamemesh.Scene()
    parent = None
    for k in range(2000):
        parent = scene.add_node(gamemesh.scene.Node(name=f"n{k}"), parent)
    gamemesh.save(scene, tmp_path / "deep.glb")
    with pytest.raises(gamemesh.FormatError) as err:
        bridge.import_glb(tmp_path / "deep.glb", "gltf", {})
    text = str(err.value)
    assert "\n" not in text and f"at most {bridge.MAX_DEPTH}" in text
    assert f"'n{bridge.MAX_DEPTH}'" in text  # the first node too deep


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


def _check_dialogs(installed: dict[str, Any]) -> None:
    """Issue 30 item 3: each dialog has and draws only the options of its direction and of
    the file's format; team colour is a preset or two swatches; paths have a browse button."""
    imp, exp = set(installed["import_props"]), set(installed["export_props"])
    assert {"format", "files", "directory", "onto_armature", "team_preset", "team_primary",
            "team_secondary", "gte_scaling", "euler_order", "with_", "no_siblings"} <= imp
    assert {"team_color", "pet_version", "lua", "no_textures", "csg", "ptx_bpp"}.isdisjoint(imp)
    assert {"format", "use_selection", "csg", "csg_texture_dir", "pet_version", "lua",
            "ptx_bpp", "gte_scaling"} <= exp
    assert {"team_preset", "with_", "no_siblings", "kind", "extract"}.isdisjoint(exp)
    ui = installed["ui"]

    def drawn(name: str) -> tuple[list[str], list[Any]]:
        return ([e for e in ui[name] if isinstance(e, str)],
                [e[1:] for e in ui[name] if isinstance(e, list) and e[0] == "panel"])

    fixed_import = ["format", "bone_heuristic", "onto_armature"]
    assert drawn("import") == (
        [*fixed_import, "no_siblings", "anim", "texture_root", "team_preset"],
        [["GAMEMESH_papa", False]])
    assert drawn("import_custom_team")[0][-3:] == ["team_preset", "team_primary",
                                                   "team_secondary"]
    assert drawn("import_pet") == ([*fixed_import, "kind", "texture_dir", "max_influences",
                                    "with_", "character", "no_parts"], [["GAMEMESH_pet", False]])
    # No file yet: every format's panel, closed (a closed panel draws nothing).
    props, panels = drawn("import_unknown")
    assert props == fixed_import and all(closed for _, closed in panels)
    assert [p for p, _ in panels] == [f"GAMEMESH_{n}" for n in ("papa", "pba", "pet", "pmf",
                                                                "splashpack")]
    fixed_export = ["format", "use_selection", "apply_modifiers"]
    assert drawn("export") == ([*fixed_export, "gte_scaling", "splash_version", "layout", "bpp",
                                "lua", "move_speed", "sprint_speed", "jump_height", "gravity",
                                "player_radius", "player_height"],
                               [["GAMEMESH_splashpack", False]])
    assert drawn("export_papa")[0] == [*fixed_export, "no_textures", "no_animations", "diffuse",
                                       "mask", "material", "texture_format", "csg",
                                       "csg_texture_dir"]
    assert drawn("export_pet")[0] == [*fixed_export, "pet_version", "max_influences"]
    assert installed["subtypes"] == {"texture_dir": "DIR_PATH", "anim": "FILE_PATH",
                                     "team_primary": "COLOR_GAMMA", "diffuse": "FILE_PATH"}
    assert installed["labels"] == {"gte_scaling": "GTE scaling",
                                   "ptx_bpp": "PTX bits per pixel", "team_preset": "Team colour"}


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
        # Issue 33 item 11: deeper than Blender's importer takes, refused in one line.
        {"do": "reset"}, {"do": "import", "path": str(_deep_pmf(tmp_path / "deep.pmf"))},
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
    _check_dialogs(installed)
    ui = installed["ui"]
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
    # Every frame (issue 30): the scene runs at the clips' 60 fps, so 200 and 28 frames stay.
    assert papa["fps"] == 60.0 and papa["action_frames"] == {"idle": 200, "run": 28}
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
    for clip, frames in (("idle", 200), ("run", 28)):
        anim = gamemesh.read_native(out / f"bot_anim_{clip}.papa").animations[0]
        assert (len(anim.transforms), anim.fps_num) == (frames, 60), clip
    # The mask and material maps went Papa -> Blender (unconnected nodes) -> Papa, unchanged.
    for role in ("mask", "material"):
        a = gamemesh.load(bot.with_name(f"assault_bot_{role}.papa")).images[0].pixels
        b = gamemesh.load(out / f"bot_{role}.papa").images[0].pixels
        assert a is not None and b is not None and a.shape == b.shape == (128, 128, 4), role
        assert np.abs(a.astype(int) - b.astype(int)).mean() < 4.0, role  # DXT1 again
    assert "Warning: pba.skin_baked" in log  # notes reach Blender's report
    # One note per clip with STEP keys, naming its nodes (not one per channel): bot.pet has
    # two such clips, tube.pet one.
    assert log.count("Warning: pet.anim_step") == 3

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
    # Written back in the pack's own version and layout (v1: issue 28 item 7), so every object
    # and the navmesh come back.
    s = gamemesh.load(out / "level.splashpack").summary()
    assert gamemesh.read_native(out / "level.splashpack").version == 1
    assert (s["meshes"], s["triangles"]) == (7, want["triangles"])
    deep = results[26]
    assert "deep.pmf" in deep["error"] and "at most 500" in deep["error"], deep
    assert len(deep["error"].strip().splitlines()) == 1 and deep["meshes"] == 0


def _deep_pmf(path: Path) -> Path:
    """A PMF of 2,000 pieces each the child of the last (the CLI converts it)."""
    scene = gamemesh.Scene()
    tri = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    mesh = scene.add_mesh(gamemesh.scene.Mesh(name="t", primitives=[gamemesh.scene.Primitive(
        positions=tri, indices=np.array([0, 1, 2], np.uint32))]))
    parent = None
    for k in range(2000):
        parent = scene.add_node(gamemesh.scene.Node(name=f"p{k}", mesh=mesh,
                                                    translation=(0.0, 0.01, 0.0)), parent)
    gamemesh.save(scene, path)
    return path


def test_clip_rate_is_the_clips_own() -> None:
    """Blender puts glTF seconds on the scene's frames: import sets the scene to this rate."""
    bot = gamemesh.load(_assault_bot())
    assert bridge.clip_fps(bot) == 60.0  # papa clips declare [60, 1]
    sample = sample_scene()
    for anim in sample.animations:
        anim.extras.clear()
    keys = {1 / float(d) for a in sample.animations for c in a.channels
            for d in np.diff(c.times)[:1]}
    assert bridge.clip_fps(sample) == pytest.approx(max(keys))  # from the key spacing
    for c in sample.animations[0].channels:  # keys at 60 fps in float32 seconds
        c.times = (np.arange(len(c.times)) / 60.0).astype(np.float32)
    assert bridge.clip_fps(sample) == 60.0
    assert bridge.clip_fps(gamemesh.Scene()) is None
    assert bridge.blender_rate(60.0) == (60, 1.0)
    fps, base = bridge.blender_rate(29.97)
    assert fps == 30 and fps / base == pytest.approx(29.97)


# -- the modder's round trip: Papa -> Blender -> Papa -> Blender-PAPA-IO ----------------------

def _oracle() -> Path:
    """../shared/tools/oracle_papa.py (Blender-PAPA-IO, the community's importer), beside
    the corpus; skipped, saying so, when absent."""
    base = Path(os.environ.get("GAMEMESH_CORPUS", HERE.parent.parent / "shared" / "corpus"))
    path = Path(os.environ.get("GAMEMESH_PAPA_ORACLE", base.parent / "tools" / "oracle_papa.py"))
    if not path.is_file():
        pytest.skip(f"no Blender-PAPA-IO oracle at {path}")
    return path


def _oracle_import(exe: str, files: list[Path]) -> dict[str, dict[str, Any]]:
    """What Blender-PAPA-IO's importer builds from each file (an animation file on its
    unit's model, found by name), by file name."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([exe, str(_oracle()), "--import", *map(str, files)], env=env,
                       capture_output=True, text=True, timeout=900)
    if "Blender-PAPA-IO there first" in r.stderr:
        pytest.skip("the oracle has no copy of Blender-PAPA-IO: " + r.stderr.strip()[-300:])
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(recs) == len(files), r.stdout[-2000:] + r.stderr[-3000:]
    return {Path(rec["file"]).name: rec for rec in recs}


def _three_clip_unit(folder: Path) -> Path:
    """assault_bot with its two clips and a third, death01, of 5 frames (as bot_bomb's),
    made by our writer from the run clip's first frames."""
    src = _assault_bot()
    folder.mkdir()
    for f in src.parent.glob("assault_bot*.papa"):
        shutil.copy(f, folder / f.name)
    clip = gamemesh.load(src.with_name("assault_bot_anim_run.papa"))
    for c in clip.animations[0].channels:
        c.times, c.values = c.times[:5], c.values[:5]
    gamemesh.save(clip, folder / "assault_bot_anim_death01.papa")
    return folder / "assault_bot.papa"


def _csg_media(root: Path) -> Path:
    """A CSG rock written by gamemesh under a ``pa`` media folder, with its linked textures
    where the game (and Blender-PAPA-IO) look for them."""
    from test_papa_csg import csg_scene

    scene = csg_scene()
    (root / "pa" / "terrain" / "textures").mkdir(parents=True)
    gamemesh.save(scene, root / "pa" / "terrain" / "rock.papa", csg="textured_normal")
    for image in scene.images:
        one = gamemesh.Scene(images=[image])
        stem = image.name.split(".")[0]
        gamemesh.save(one, root / "pa" / "terrain" / "textures" / f"{stem}.papa")
    return root / "pa" / "terrain" / "rock.papa"


def test_papa_round_trip_through_blender_and_blender_papa_io(tmp_path: Path,
                                                             extension_zip: Path) -> None:
    """Issue 30: units through the extension and back to Papa keep every bone, frame, mesh
    and texture in Blender-PAPA-IO; several files import at once; clips go onto a selected
    armature by loosely matched bone names; a CSG model exports with its shader and paths."""
    exe = _blender_python()
    oracle = _oracle()
    assert oracle.is_file()
    bot = _assault_bot()
    factory = bot.parents[2] / "air" / "air_factory" / "air_factory.papa"
    if not factory.is_file():
        pytest.skip(f"{factory.name} is not in the corpus")
    three = _three_clip_unit(tmp_path / "three")
    rock = _csg_media(tmp_path / "media")
    out = tmp_path / "out"
    steps: list[dict[str, Any]] = [
        {"do": "import", "path": str(bot), "options": {"team_preset": "MLA"}},
        {"do": "defaults"},
        {"do": "export", "path": str(out / "bot" / "bot.papa")},
        {"do": "reset"}, {"do": "import", "path": str(factory)},
        {"do": "export", "path": str(out / "af" / "af.papa")},
        {"do": "reset"}, {"do": "import", "path": str(three)},
        {"do": "pose", "action": "run", "frame": 10},
        {"do": "export", "path": str(out / "three" / "three.papa")},
        # Several files at once: two units side by side.
        {"do": "reset"}, {"do": "reset"}, {"do": "import", "path": str(factory.parent),
                          "files": ["air_factory.papa", "../bomb/bomb.papa"]},
        # Clips onto the selected armature, one bone renamed: matched loosely.
        {"do": "reset"}, {"do": "import", "path": str(three), "options": {"no_siblings": True}},
        {"do": "rename_bone", "bone": "bone_pelvis", "to": "Bone_Pelvis"},
        {"do": "import", "path": str(three.parent), "onto": True,
         "files": ["assault_bot_anim_run.papa", "assault_bot_anim_idle.papa"]},
        {"do": "pose", "action": "run", "frame": 10},
        {"do": "import", "path": str(factory.with_name("air_factory_anim_build.papa")),
         "onto": True},
        # CSG: read, and written again from Blender.
        {"do": "reset"}, {"do": "import", "path": str(rock)},
        {"do": "export", "path": str(rock.with_name("rock_again.papa")),
         "options": {"csg": "textured_normal"}},
    ]
    results, log = _run_blender(exe, extension_zip, steps, tmp_path)
    r = dict(enumerate(results[1:]))
    bot_in, defaults, af_in, three_in = r[0], r[1]["defaults"], r[4], r[7]
    assert bot_in["action_frames"] == {"idle": 200, "run": 28} and bot_in["fps"] == 60.0
    assert bot_in["root_props"][0]["options"] == {"team_color": "007CFF"}  # MLA's primary
    assert defaults == {"format": "PAPA", "stem": "assault_bot"}
    # air_factory: its nav helper in a hidden collection of its own; build keeps 180 frames.
    assert af_in["helpers"] == {"air_factory helpers": {
        "objects": ["air_factory_nav", "air_factory_nav.001"], "hidden": True}}
    assert af_in["action_frames"] == {"build": 180}
    assert three_in["action_frames"] == {"death01": 5, "idle": 200, "run": 28}
    assert all(r[k]["status"] == ["FINISHED"] for k in (2, 5, 9)), [r[k] for k in (2, 5, 9)]
    pair = r[12]
    bomb = gamemesh.load(factory.parents[1] / "bomb" / "bomb.papa").summary()
    assert pair["status"] == ["FINISHED"] and pair["meshes"] == af_in["meshes"] + bomb["meshes"]
    assert {p["source_file"] for p in pair["root_props"]} == {"air_factory.papa", "bomb.papa"}
    onto, onto_pose, wrong = r[16], r[17]["pose"], r[18]
    assert onto["status"] == ["FINISHED"] and onto["action_frames"] == {"idle": 200, "run": 28}
    assert onto["meshes"] == 1 and onto["bones"] == 21  # no second armature left behind
    direct = r[8]["pose"]
    assert set(onto_pose) == set(direct)
    np.testing.assert_allclose(np.array([onto_pose[k] for k in sorted(direct)]),
                               np.array([direct[k] for k in sorted(direct)]), atol=1e-4)
    assert "1 of the 4 animated bones" in wrong["error"] and "\n" not in wrong["error"].strip()
    csg_in, csg_out = r[20], r[21]
    assert csg_in["status"] == csg_out["status"] == ["FINISHED"], (csg_in, csg_out)
    assert "Traceback" not in log
    again = gamemesh.read_native(rock.with_name("rock_again.papa"))
    assert sorted(again.string(t.name) for t in again.textures) == [
        "/pa/terrain/textures/rock_diffuse.papa", "/pa/terrain/textures/rock_normal.papa"]

    seen = _oracle_import(exe, [out / "bot" / "bot.papa", out / "bot" / "bot_anim_idle.papa",
                                out / "bot" / "bot_anim_run.papa", out / "af" / "af.papa",
                                out / "af" / "af_anim_build.papa",
                                out / "three" / "three_anim_death01.papa",
                                rock.with_name("rock_again.papa")])
    _check_oracle(seen, factory, af_in)


def _check_oracle(seen: dict[str, dict[str, Any]], factory: Path, af_in: dict[str, Any]
                  ) -> None:
    """What Blender-PAPA-IO made of the files exported from Blender."""
    unit = seen["bot.papa"]["import"]
    assert [m["triangles"] for m in unit["meshes"]] == [682]
    assert [a["bones"] for a in unit["armatures"]] == [21]
    assert len(unit["images"]) == 3  # diffuse, mask, material
    for name, frames in (("bot_anim_idle.papa", 200), ("bot_anim_run.papa", 28),
                         ("af_anim_build.papa", 180), ("three_anim_death01.papa", 5)):
        anim = seen[name]
        assert [a["frames"] for a in anim["animations"]] == [frames], name
        got = anim["import"]["actions"]
        assert [a["frame_range"] for a in got] == [[0.0, frames - 1.0]], name
    af = seen["af.papa"]
    want = gamemesh.read_native(factory)
    assert [m["name"] for m in af["models"]] == [want.string(m.name) for m in want.models]
    assert sum(m["triangles"] for m in af["import"]["meshes"]) == af_in["polygons"]
    rock = seen["rock_again.papa"]
    assert [(m["shader"], m["texture"]) for m in rock["materials"]] == [("textured_normal", 2)]
    assert [v["format"] for v in rock["vertex_buffers"]] == [10]
    # Both linked textures found under the media root (a missing one reads as found: False),
    # and loaded by its importer from the texture files the paths name.
    assert [t.get("found", True) for t in rock["textures"]] == [True, True]
    images = sorted((i["name"].split(".")[0], i["size"]) for i in rock["import"]["images"])
    assert [(n[:12], size) for n, size in images] == [("rock_diffuse", [4, 4]),
                                                      ("rock_normal_", [4, 4])]
    assert [m["uv_layers"] for m in rock["import"]["meshes"]] == [2]  # texture + shadow map


def test_a_units_helper_model_is_flagged_and_left_out_of_thumbnails() -> None:
    """Issue 30 item 6: stock air_factory_nav (a box around the factory) is flagged where the
    scene is made, so the viewer, thumbnails and Blender keep it out of sight."""
    from gamemesh.viewer.flags import navmesh_nodes
    from gamemesh.viewer.thumbnail import render_thumbnail

    path = _assault_bot().parents[2] / "air" / "air_factory" / "air_factory.papa"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in the corpus")
    scene = gamemesh.load(path)
    # The model node and its mesh binding below it.
    nav, binding = navmesh_nodes(scene)
    assert [scene.nodes[i].name for i in (nav, binding)] == ["air_factory_nav"] * 2
    assert scene.nodes[nav].extras["role"] == "navmesh" and scene.nodes[binding].mesh == 1
    flagged = render_thumbnail(scene, 64, supersample=1)
    scene.nodes[nav].extras.pop("role")
    drawn = render_thumbnail(scene, 64, supersample=1)
    scene.nodes[binding].mesh = None
    gone = render_thumbnail(scene, 64, supersample=1)
    np.testing.assert_array_equal(flagged, gone)  # the flag leaves the helper out
    assert not np.array_equal(flagged, drawn)  # which is drawn when not flagged
