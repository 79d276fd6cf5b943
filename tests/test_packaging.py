"""Packaging: the license as an SPDX expression (the table form stops building after
2027-02-18), atheris in its own `fuzz` extra (no Windows wheel, no recent macOS one)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_an_spdx_string_and_atheris_is_the_fuzz_extra() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = meta["project"]
    assert project["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in meta["build-system"]["requires"])
    extras = project["optional-dependencies"]
    assert not any(r.startswith("atheris") for r in extras["test"])
    assert [r for r in extras["fuzz"] if r.startswith("atheris")]
    assert "'.[fuzz]'" in (ROOT / "scripts" / "test").read_text()


def test_fuzz_tests_skip_with_a_reason_without_atheris() -> None:
    text = (ROOT / "tests" / "test_fuzz.py").read_text()
    assert text.count('importorskip("atheris", reason=ATHERIS_MISSING)') == \
        text.count("importorskip(\"atheris\"")
    assert "import atheris" not in text.split("_LEAK_PROBE")[0]  # no import at module level
