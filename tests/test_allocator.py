"""The command line's malloc tuning: on where glibc is, off on request, and a conversion under it
gives the same bytes."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_PROBE = "from gamemesh import allocator; print(allocator.tune(), allocator.tuned())"


def _probe(**env: str) -> str:
    r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **env}, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
                    reason="malloc tuning is for glibc")
def test_tunes_glibc() -> None:
    assert _probe() == "True True"


def test_opt_out() -> None:
    assert _probe(GAMEMESH_MALLOC="default") == "False False"


def test_same_bytes_tuned_or_not(tmp_path: Path) -> None:
    """The CLI tunes malloc; what it writes cannot depend on it."""
    from gamemesh.registry import by_name

    src = tmp_path / "m.papa"
    src.write_bytes(by_name("papa").make_sample(300_000))  # type: ignore[misc]
    outs = []
    for mode in ("tuned", "default"):
        out = tmp_path / f"{mode}.glb"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"),
               "GAMEMESH_MALLOC": "" if mode == "tuned" else "default"}
        r = subprocess.run([sys.executable, "-m", "gamemesh", "convert", str(src), str(out)],
                           capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and len(outs[0]) > 100_000
