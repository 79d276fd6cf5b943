"""Start-up: `gamemesh --version`, `--help` and the format list import no format module and no
numpy; a conversion imports only the formats it touches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code`` (stdout: their names)."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(ROOT / "src")}, cwd=ROOT)
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["convert", "--help"],
                                  ["formats"], ["formats", "pmf"]])
def test_version_help_and_format_list_import_no_numpy(argv: list[str]) -> None:
    code = ("import contextlib, io\nfrom gamemesh.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    try:\n        main({argv!r})\n    except SystemExit:\n        pass")
    mods = _modules_after(code)
    assert "numpy" not in mods
    assert "PIL" not in mods
    assert not {m for m in mods if m.startswith("gamemesh.formats.") and
                m.count(".") > 2 and not m.endswith(".options")}


def test_a_conversion_imports_only_its_formats(tmp_path: Path) -> None:
    from gamemesh.api import save
    from gamemesh.sample import sample_scene

    src = tmp_path / "s.pmf"
    save(sample_scene(), src)
    mods = _modules_after(f"import gamemesh\ngamemesh.convert({str(src)!r}, "
                          f"{str(tmp_path / 'o.glb')!r})")
    loaded = {m.split(".")[2] for m in mods if m.startswith("gamemesh.formats.") and
              m.count(".") > 2 and not m.endswith(".options")}
    assert loaded == {"gltf", "pmf"}


def test_lazy_spec_functions_are_the_modules_functions() -> None:
    from gamemesh.formats.papa import SPEC
    from gamemesh.formats.papa.document import PapaDocument
    from gamemesh.formats.papa.read import read
    from gamemesh.registry import Context, Lazy

    assert isinstance(SPEC.read, Lazy) and SPEC.read.resolved is read
    doc = SPEC.read(SPEC.make_sample(2000), Context())  # type: ignore[misc]
    assert isinstance(doc, PapaDocument)
    assert isinstance(doc, SPEC.document_type)  # type: ignore[arg-type]
    assert not isinstance(object(), SPEC.document_type)  # type: ignore[arg-type]
