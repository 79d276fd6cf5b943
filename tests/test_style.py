"""The package stays ruff- and mypy --strict-clean (design.md "Style")."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *cmd], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_clean() -> None:
    if shutil.which("ruff") is None and _run("ruff", "--version").returncode:
        pytest.fail("ruff is not installed (it is in the test extra)")
    r = _run("ruff", "check", "src", "tests")
    assert r.returncode == 0, r.stdout[-4000:]


def test_mypy_strict_clean() -> None:
    r = _run("mypy", "--no-error-summary")
    assert r.returncode == 0, r.stdout[-4000:]


# -- layers (design.md "The shape"): each layer imports only the layers below it -------------
# A module under the key may not import any module under the listed prefixes.
FORBIDDEN = {
    "gamemesh.formats": ("gamemesh.api", "gamemesh.cli", "gamemesh.batch", "gamemesh.viewer",
                         "gamemesh.bench", "gamemesh.blender"),
    "gamemesh.scene": ("gamemesh.formats", "gamemesh.registry", "gamemesh.api", "gamemesh.cli",
                       "gamemesh.batch", "gamemesh.viewer"),
    "gamemesh.textures": ("gamemesh.formats", "gamemesh.api", "gamemesh.cli", "gamemesh.batch",
                          "gamemesh.viewer"),
    "gamemesh.binary": ("gamemesh.formats", "gamemesh.api", "gamemesh.cli", "gamemesh.batch"),
    "gamemesh.errors": ("gamemesh.formats", "gamemesh.api", "gamemesh.cli", "gamemesh.batch"),
    "gamemesh.fileio": ("gamemesh.formats", "gamemesh.api", "gamemesh.cli", "gamemesh.batch"),
    "gamemesh.registry": ("gamemesh.api", "gamemesh.cli", "gamemesh.batch", "gamemesh.viewer"),
    "gamemesh.api": ("gamemesh.cli", "gamemesh.batch", "gamemesh.viewer"),
    "gamemesh.viewer": ("gamemesh.cli", "gamemesh.batch"),
    "gamemesh.batch": ("gamemesh.cli",),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT / "src").with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """Every import of the module (also those inside functions), as absolute module names
    with the names taken from them."""
    import ast

    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: list[tuple[str, list[str], int]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [a.name for a in node.names]
            # ``from . import api`` names a module, not an attribute.
            out.append((target, names, node.lineno))
            out += [(f"{target}.{n}", [], node.lineno) for n in names]
    return out


def _sources() -> list[Path]:
    return sorted((ROOT / "src" / "gamemesh").rglob("*.py"))


def test_layers_only_point_down() -> None:
    bad = []
    for path in _sources():
        mod = _module_name(path)
        rules = [v for k, v in FORBIDDEN.items() if mod == k or mod.startswith(k + ".")]
        for target, _, line in _imports(path):
            for prefixes in rules:
                hit = next((p for p in prefixes if target == p or target.startswith(p + ".")),
                           None)
                if hit:
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {mod} imports {target}")
    assert not bad, "\n".join(bad)


def test_no_private_names_across_packages() -> None:
    """A module takes another package's underscore names only through its public surface
    (``cli/info`` once reached into ``api._load``)."""
    bad = []
    for path in _sources():
        mod = _module_name(path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for target, names, line in _imports(path):
            if not target.startswith("gamemesh") or target.startswith(package + "."):
                continue
            if target == package:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {private} from {target}")
    assert not bad, "\n".join(bad)


def test_functions_are_small() -> None:
    """Cyclomatic complexity at most 15 everywhere (ruff C901, configured in pyproject)."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert conf["mccabe"]["max-complexity"] <= 15
    r = _run("ruff", "check", "--select", "C901", "src", "tests")
    assert r.returncode == 0, r.stdout[-4000:]


def test_every_format_package_has_one_shape() -> None:
    """The module shape of docs/adding-a-format.md: the same role has the same name."""
    required = {"__init__", "layout", "document", "read", "write", "to_scene", "from_scene",
                "sample", "info"}
    allowed = required | {"files", "textures", "conventions", "extras", "vram", "skeleton",
                          "texture_files",
                          # Papa's CSG models (terrain: format 10, linked textures) beside units
                          "csg",
                          # what the SPEC names (option choices), without numpy: the registry
                          # lists every format's options for `gamemesh --help`
                          "options",
                          # PET split along what it does (animation clips, corner fields,
                          # corner dedup, meshes, skin influences, the MESH vertex records)
                          "animation", "corners", "dedup", "mesh", "influences", "vertices",
                          # SPLASHPACK: what its two generations share
                          "common"}
    for name in ("papa", "pba", "ptx", "pet", "pmf", "splashpack"):
        folder = ROOT / "src" / "gamemesh" / "formats" / name
        have = {p.stem for p in folder.glob("*.py")}
        assert required <= have, (name, sorted(required - have))
        assert have <= allowed, (name, sorted(have - allowed))
        init = (folder / "__init__.py").read_text()
        assert "def " not in init and "class " not in init, f"{name}/__init__.py defines code"
        doc_class = {"papa": "PapaDocument", "pba": "PbaDocument", "ptx": "PtxDocument",
                     "pet": "PetDocument", "pmf": "PmfDocument",
                     "splashpack": "SplashpackDocument"}[name]
        if name == "splashpack":
            # One subpackage per generation, each with the roles' shape; the top-level
            # modules choose between them by version.
            generation = {"__init__", "layout", "document", "read", "write", "to_scene",
                          "from_scene", "info"}
            # modern/ also builds the derived sections the runtime walks (bvh, navbuild),
            # keeps the runtime's rules for the player, lights and parented tracks apart, and
            # carries what a scene cannot author (audio, rooms) back from its extras (carry).
            modern_extra = {"bvh", "navbuild", "player", "lights", "tracks", "carry"}
            for sub, cls, extra in (("v1", doc_class, set()), ("modern", "ModernDocument",
                                                                modern_extra)):
                assert {p.stem for p in (folder / sub).glob("*.py")} == generation | extra, sub
                assert f"class {cls}" in (folder / sub / "document.py").read_text(), sub
            continue
        assert f"class {doc_class}" in (folder / "document.py").read_text()


# -- the ratchet (design.md "One way per job") -------------------------------------------------
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60


def test_modules_and_functions_stay_small() -> None:
    """Every module at or under 800 lines and every function (decorators included) at or under
    60, so that growth is noticed when it happens and a second way of doing a job has to earn
    its lines."""
    import ast

    bad = []
    for path in _sources():
        text = path.read_text()
        rel = path.relative_to(ROOT)
        if (n := text.count("\n")) > MAX_MODULE_LINES:
            bad.append(f"{rel}: {n} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    bad.append(f"{rel}:{first}: {node.name} is {length} lines "
                               f"(at most {MAX_FUNCTION_LINES})")
    assert not bad, "\n".join(bad)
