"""Shared fixtures: the Khronos glTF-Validator in one Node process for the whole session."""

from __future__ import annotations

import hashlib
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
ALLOWED_WARNINGS: frozenset[str] = frozenset({
    # Blender (and so any glTF it exported that we re-export) parents a skinned mesh under its
    # armature; glTF ignores a skinned mesh node's parents, which is what the source meant.
    "NODE_SKINNED_MESH_NON_ROOT",
})


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


_SESSION: dict[str, Validator] = {}


def _validator() -> Validator:
    if shutil.which("node") is None or not (ROOT / "node_modules" / "gltf-validator").is_dir():
        pytest.fail("the glTF validator is not installed: run `npm ci` at the repository root "
                    "(the README's test command does)")
    if "v" not in _SESSION:
        _SESSION["v"] = Validator()
    return _SESSION["v"]


@pytest.fixture(scope="session")
def gltf_validator() -> Iterator[Callable[..., dict[str, Any]]]:
    yield _validator()


@pytest.fixture(scope="session", autouse=True)
def _every_written_gltf_is_valid() -> Iterator[None]:
    """Record every .glb/.gltf gamemesh writes in this process during the session, and at the
    end validate each distinct one: no test can forget to. (Tests that run the CLI in a
    subprocess validate their outputs themselves.)"""
    from gamemesh import api

    written: list[str] = []
    original = api.write_files

    def recording(folder: Path, files: dict[str, bytes]) -> list[str]:
        out = original(folder, files)
        written.extend(p for p in out if p.lower().endswith((".glb", ".gltf")))
        return out

    mp = pytest.MonkeyPatch()
    mp.setattr(api, "write_files", recording)
    yield
    mp.undo()
    seen: set[str] = set()
    failures: list[str] = []
    for path in written:
        p = Path(path)
        if not p.is_file():
            continue
        digest = hashlib.blake2b(p.read_bytes(), digest_size=16).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        try:
            _validator()(p)
        except AssertionError as e:
            failures.append(str(e).splitlines()[0])
    if "v" in _SESSION:
        _SESSION.pop("v").close()
    assert not failures, f"{len(failures)} written glTF file(s) fail validation:\n" + \
        "\n".join(failures[:20])
