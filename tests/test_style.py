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
