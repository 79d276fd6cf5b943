"""Shared fixtures: the Khronos glTF-Validator in one Node process for the whole session."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "validate-gltf.mjs"

# Warnings our own output may draw, each with the reason it is acceptable. Everything else fails.
ALLOWED_WARNINGS: frozenset[str] = frozenset()


class Validator:
    """Feeds paths to one long-lived ``node tools/validate-gltf.mjs`` and reads its reports."""

    def __init__(self) -> None:
        self._proc = subprocess.Popen(
            ["node", str(SCRIPT)], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            text=True, bufsize=1)
        self._lock = threading.Lock()
        self.count = 0

    def report(self, path: Path) -> dict[str, Any]:
        with self._lock:
            assert self._proc.stdin and self._proc.stdout
            self._proc.stdin.write(f"{Path(path).resolve()}\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            msg = "the glTF validator process died"
            raise RuntimeError(msg)
        self.count += 1
        return json.loads(line)  # type: ignore[no-any-return]

    def __call__(self, path: Path | str, allow: frozenset[str] | set[str] = frozenset()
                 ) -> dict[str, Any]:
        """Validate ``path``: 0 errors and no warning outside the allow-list."""
        r = self.report(Path(path))
        allowed = ALLOWED_WARNINGS | set(allow)
        bad = [m for m in r["messages"] if m["severity"] == "error" or
               (m["severity"] == "warning" and m["code"] not in allowed)]
        assert not bad, f"{path}: validator: " + "; ".join(
            f"{m['severity']} {m['code']} at {m['pointer']}: {m['message']}" for m in bad[:8])
        return r

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait(timeout=30)


@pytest.fixture(scope="session")
def gltf_validator() -> Iterator[Callable[..., dict[str, Any]]]:
    if shutil.which("node") is None or not (ROOT / "node_modules" / "gltf-validator").is_dir():
        pytest.fail("the glTF validator is not installed: run `npm ci` at the repository root "
                    "(the README's test command does)")
    v = Validator()
    yield v
    v.close()
